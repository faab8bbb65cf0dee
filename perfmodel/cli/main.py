"""The ``perfmodel`` console script.

Each command-group module exposes ``register(app)``. Errors from the library (``PerfmodelError``) are caught
here, once: the message is printed as one paragraph on stderr and the exit code is 2. Exit code 1 is reserved
for a failed check (``perfmodel check``); commands signal it with ``typer.Exit(1)``. A bug in perfmodel is
exit code 3, still one paragraph and no traceback (``PERFMODEL_DEBUG=1`` shows it).

With ``--json`` on the command line every error is also one JSON document on stdout::

    {"error": {"kind": "spec", "message": "...", "file": "my.yaml", "line": 3}}

``kind`` is the error's family (``device``, ``spec``, ``budget``, ``occupancy``, ``simulation``, ``compile``,
``gpu``, ``input``, ``usage`` for a bad command line, ``io`` for a file-system error, ``internal`` for a bug).
"""
from __future__ import annotations

import errno
import os
import sys

import typer

from perfmodel.errors import PerfmodelError

app = typer.Typer(
    name="perfmodel",
    help="Predict how fast a CUDA kernel runs on a GPU, what limits it, and which tile size to pick - "
         "from the kernel's CUDA C source, with no GPU.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,   # --install-completion / --show-completion for bash, zsh, fish and PowerShell
    # plain help and usage errors (click's formatter): typer's rich help imports rich's markdown, traceback and
    # syntax modules, about a third of `perfmodel --help`; rich still renders every report
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from perfmodel import __version__

        typer.echo(f"perfmodel {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print perfmodel's version and exit.")) -> None:
    """Predict how fast a CUDA kernel runs on a GPU, what limits it, and which tile size to pick - from the
    kernel's CUDA C source, with no GPU. Colour follows NO_COLOR / FORCE_COLOR (no-color.org)."""


def _register_all() -> None:
    from perfmodel.cli import analyze, check, devices, gpu, kernels, occupancy, sweep

    for module in (devices, occupancy, kernels, analyze, sweep, check, gpu):
        module.register(app)


_register_all()

_COMMAND = None


def _command():
    """The click command typer builds from ``app``, built once per process: building it reads every command's
    signature and evaluates its annotations (about 12 ms on the 2-core machine), which a process that runs several
    command lines in turn (the tests run about a thousand) would otherwise pay on each. Typer's own ``app()``
    builds it on every call and otherwise only installs its exception hook, which shows nothing here: every
    exception is handled in :func:`main`, and ``pretty_exceptions_enable`` is off."""
    global _COMMAND
    if _COMMAND is None:
        _COMMAND = typer.main.get_command(app)
    return _COMMAND


def _wants_json(argv: list[str]) -> bool:
    """``--json`` among the options (not after a ``--`` that ends them)."""
    for arg in argv:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def _fail(json_mode: bool, code: int, kind: str, message: str, **where) -> None:
    from perfmodel.cli.common import print_error, print_json_error

    if json_mode:
        print_json_error(kind, message, **where)
    print_error(message)
    sys.exit(code)


def _run(json_mode: bool) -> None:
    if not json_mode:
        _command()(standalone_mode=True)
        return
    # --json: handle the command-line (usage) errors here too, so that they also become a JSON document
    try:  # typer >= 0.20 vendors click as typer._click
        from typer._click import exceptions as click_exceptions
    except ImportError:  # pragma: no cover - older typer on click
        from click import exceptions as click_exceptions
    no_args = getattr(click_exceptions, "NoArgsIsHelpError", ())
    try:
        code = _command()(standalone_mode=False)
    except no_args:
        _command()(standalone_mode=True)  # prints the help as usual
        return
    except (click_exceptions.ClickException, getattr(click_exceptions, "UsageError", ())) as err:
        _fail(True, getattr(err, "exit_code", 2) or 2, "usage", err.format_message())
    except (typer.Abort, getattr(click_exceptions, "Abort", typer.Abort)):
        _fail(True, 1, "aborted", "aborted")
    sys.exit(code if isinstance(code, int) else 0)


def main() -> None:
    json_mode = _wants_json(sys.argv[1:])
    try:
        _run(json_mode)
    except PerfmodelError as err:
        loc = err.location
        _fail(json_mode, err.exit_code, getattr(err, "kind", "input"), str(err),
              file=loc.file if loc is not None else None, line=loc.line if loc is not None else None,
              thread=err.thread, block=err.block)
    except KeyboardInterrupt:
        sys.exit(130)
    except SystemExit:
        raise
    except OSError as err:
        if os.environ.get("PERFMODEL_DEBUG"):
            raise
        # the file system refused something (a name too long, a full disk, no permission): not a bug in
        # perfmodel, and not a traceback either
        from perfmodel.safeload import os_problem, shown

        name = err.filename if err.filename is not None else None
        reason = os_problem(err, "file") if err.errno in (errno.ENAMETOOLONG, errno.ENOTDIR, errno.ELOOP) \
            else (err.strerror or str(err))
        message = f"{shown(name)}: {reason}" if name is not None else reason
        _fail(json_mode, 2, "io", message, file=shown(name) if name is not None else None)
    except Exception as err:  # a bug in perfmodel, not the user's input: still one paragraph, no traceback
        if os.environ.get("PERFMODEL_DEBUG"):
            raise
        text = str(err)
        if len(text) > 500:
            text = text[:500] + "..."
        _fail(json_mode, 3, "internal", f"internal error ({type(err).__name__}): {text}. This is a bug in "
                                        "perfmodel; set PERFMODEL_DEBUG=1 to see the traceback.")


if __name__ == "__main__":
    main()
