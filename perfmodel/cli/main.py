"""The ``perfmodel`` console script.

Each command-group module exposes ``register(app)``. Errors from the library (``PerfmodelError``) are caught
here, once: the message is printed as one paragraph on stderr and the exit code is 2. Exit code 1 is reserved
for a failed check (``perfmodel check``); commands signal it with ``typer.Exit(1)``.
"""
from __future__ import annotations

import sys

import typer

from perfmodel.errors import PerfmodelError

app = typer.Typer(
    name="perfmodel",
    help="Predict how fast a CUDA kernel runs on a GPU, what limits it, and which tile size to pick - "
         "from the kernel's CUDA C source, with no GPU.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _register_all() -> None:
    from perfmodel.cli import analyze, check, devices, gpu, kernels, occupancy, sweep

    for module in (devices, occupancy, kernels, analyze, sweep, check, gpu):
        module.register(app)


_register_all()


def main() -> None:
    try:
        app(standalone_mode=True)
    except PerfmodelError as err:
        from perfmodel.cli.common import print_error

        print_error(str(err))
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as err:  # a bug in perfmodel, not the user's input: still one paragraph, no traceback
        from perfmodel.cli.common import print_error

        print_error(f"internal error ({type(err).__name__}): {err}. This is a bug in perfmodel; "
                    "set PERFMODEL_DEBUG=1 to see the traceback.")
        import os

        if os.environ.get("PERFMODEL_DEBUG"):
            raise
        sys.exit(3)


if __name__ == "__main__":
    main()
