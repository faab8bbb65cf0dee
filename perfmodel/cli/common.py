"""Shared CLI plumbing: consoles, error printing, ``-D NAME=VALUE`` parsing, the ``--json`` switch."""
from __future__ import annotations

import math
import re
from typing import Annotated

import typer

from perfmodel.errors import PerfmodelError

def _make_console(**kwargs):
    """A rich console whose size follows $COLUMNS / $LINES when it prints, not when it was made (rich reads them
    once, in ``__init__``; a caller - a test runner's ``env=``, a notebook - may set them later)."""
    from rich.console import Console

    real = Console(**kwargs)
    if kwargs.get("width") is None:
        real._width = None
    if kwargs.get("height") is None:
        real._height = None
    return real


class _LazyConsole:
    """Stands for a rich ``Console`` made on first use: ``perfmodel --help`` and commands that print nothing
    never import rich's console machinery."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._real = None

    def _console(self):
        if self._real is None:
            self._real = _make_console(**self._kwargs)
        return self._real

    def __getattr__(self, name):
        return getattr(self._console(), name)

    def __enter__(self):            # rich's Live and Progress print under `with console:`
        return self._console().__enter__()

    def __exit__(self, *exc):
        return self._console().__exit__(*exc)


console = _LazyConsole()
err_console = _LazyConsole(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document on stdout.")]
DefineOption = Annotated[
    list[str] | None,
    typer.Option("-D", "--define", help="Override a spec param or #define: -D NAME=VALUE (repeatable); VALUE is a "
                                        "number or an expression over the -D names before it; for a CUDA file, also a type "
                                        "(-D SCALAR=double), text for the compiler."),
]


def print_error(message: str) -> None:
    from rich.markup import escape

    err_console.print(f"[bold red]error:[/bold red] {escape(message)}", markup=True, highlight=False, soft_wrap=True)


_FILE_LINE = re.compile(r"^(?P<file>[^\s:][^:\n]*?\.(?:ya?ml|json|cuh?|c|h|xml|md|csv))(?::(?P<line>\d+))?(?::|$)")


def error_document(kind: str, message: str, *, file: str | None = None, line: int | None = None,
                   thread=None, block=None) -> dict:
    """The ``--json`` error document: ``{"error": {"kind", "message", "file", "line"}}`` (plus ``thread`` and
    ``block`` for an error inside a simulated kernel). Without a location, the file and line are read from
    the start of the message (``budget.yaml:12: ...``) when it has them."""
    if file is None:
        match = _FILE_LINE.match(message)
        if match:
            file = match["file"]
            line = int(match["line"]) if match["line"] and line is None else line
    error: dict = {"kind": kind, "message": message, "file": file, "line": line}
    if thread is not None:
        error["thread"] = list(thread)
    if block is not None:
        error["block"] = list(block)
    return {"error": error}


def print_json_error(kind: str, message: str, **where) -> None:
    """Write the ``--json`` error document to stdout (one JSON document, one line)."""
    import json
    import sys

    sys.stdout.write(json.dumps(error_document(kind, message, **where)) + "\n")
    sys.stdout.flush()


def _output_error(where: str, message: str) -> PerfmodelError:
    from perfmodel.errors import Location, OutputError

    return OutputError(message, location=Location(file=where))


def check_output_path(path, option: str, *, create_parents: bool = False):
    """Refuse, before any work starts, an output file that cannot be written: a folder, a FIFO, a path under
    a regular file, a missing folder (unless ``create_parents``), a read-only place, a name too long.

    Returns ``path`` (a ``Path``) unchanged; ``None`` passes through."""
    import os
    import stat as stat_mod
    from pathlib import Path

    from perfmodel.safeload import os_problem, shown

    if path is None:
        return None
    path = Path(path)
    where = shown(path)
    label = f"{option} {where}"
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except (OSError, ValueError) as err:
        reason = os_problem(err, "output file") if isinstance(err, OSError) else "the path contains a NUL byte"
        raise _output_error(where, f"{label}: cannot write there: {reason}") from None
    if info is not None:
        if stat_mod.S_ISDIR(info.st_mode):
            raise _output_error(where, f"{label}: is a folder; give a file name (e.g. {shown(path / 'report')})")
        if not (stat_mod.S_ISREG(info.st_mode) or stat_mod.S_ISCHR(info.st_mode)):
            raise _output_error(where, f"{label}: is not a regular file (a FIFO, socket or block device); give a file name")
        if not os.access(path, os.W_OK):
            raise _output_error(where, f"{label}: the file is not writable (permission denied)")
        return path
    # the file does not exist yet: its nearest existing ancestor must be a writable folder
    parent = path.absolute().parent
    missing = []
    while True:
        try:
            pinfo = os.stat(parent)
            break
        except FileNotFoundError:
            missing.append(parent)
            if parent.parent == parent:
                raise _output_error(where, f"{label}: cannot write there: no such folder") from None
            parent = parent.parent
        except OSError as err:
            raise _output_error(where, f"{label}: cannot write there: {os_problem(err, 'output file')}") from None
    if not stat_mod.S_ISDIR(pinfo.st_mode):
        raise _output_error(where, f"{label}: cannot write there: {shown(parent)} is a file, not a folder")
    if missing and not create_parents:
        raise _output_error(where, f"{label}: cannot write there: the folder {shown(missing[-1])} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise _output_error(where, f"{label}: cannot write there: the folder {shown(parent)} is not writable "
                          "(permission denied)")
    if len(path.name.encode()) > 255:
        raise _output_error(where, f"{label}: the file name is too long for the file system (over 255 bytes)")
    return path


def parse_defines(items: list[str] | None, texts: dict[str, str] | None = None) -> dict[str, int | float]:
    """Parse ``-D NAME=VALUE`` (or ``-D NAME``: 1) items into numbers. A VALUE is a number, or an arithmetic expression over the
    ``-D`` names given before it (``-D N=1024 -D NZ='(N-2)*3+4'``), evaluated by the spec's safe evaluator
    (perfmodel.expr: an allow-list of operators and functions, never ``eval``). With ``texts`` (a CUDA file's
    compile), a VALUE that is a type or a name and names no -D (``-D SCALAR=double``, ``-D T='unsigned int'``) goes
    there, as text for the preprocessor."""
    from perfmodel import expr as _expr
    from perfmodel.errors import SpecError
    from perfmodel.spec.schema import MACRO_TEXT

    given = {item.partition("=")[0].strip() for item in items or []}
    result: dict[str, int | float] = {}
    for item in items or []:
        name, sep, raw = item.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep and name.isidentifier():
            raw = "1"           # -D NAME, as a compiler takes it (a Makefile's -DMILC_COMPLEX): NAME=1
        if not name.isidentifier() or not raw:
            raise PerfmodelError(f"-D {item!r}: expected NAME, or NAME=VALUE with a numeric VALUE, e.g. "
                                 "-D TILE_WIDTH=16")
        try:
            value: int | float = int(raw, 0)
        except ValueError:
            try:
                value = float(raw)
            except ValueError:
                words = set(re.findall(r"[A-Za-z_]\w*", raw))
                if texts is not None and MACRO_TEXT.match(raw) and not words & given:
                    texts[name] = raw
                    continue
                unknown = sorted(_expr.names_in(raw) - set(result)) if _valid_expression(raw) else []
                if unknown:
                    raise PerfmodelError(f"-D {item!r}: VALUE {raw!r} uses {', '.join(unknown)}, which no -D before "
                                         "it defines (an expression can use the -D names given before it)") from None
                try:
                    value = _expr.evaluate(raw, result, field=f"-D {name}")
                except SpecError as err:
                    raise PerfmodelError(f"-D {item!r}: VALUE {raw!r} is not a number or an expression over the -D "
                                         f"names before it ({err})") from None
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise PerfmodelError(f"-D {item!r}: VALUE {raw!r} is not a number") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise PerfmodelError(f"-D {item!r}: VALUE must be a finite number, got {raw!r}")
        result[name] = value
    return result


def _valid_expression(text: str) -> bool:
    from perfmodel import expr as _expr
    from perfmodel.errors import SpecError

    try:
        _expr.check_syntax(text)
    except SpecError:
        return False
    return True


def require_devices(names) -> list:
    """Load every device named (a profile name or a .yaml path) before any work: an unknown or invalid
    device is an error (exit 2), never a row of a table that exits 0."""
    from perfmodel.devices import load_device

    return [load_device(name) for name in names]
