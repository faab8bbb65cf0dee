"""The ``perfmodel`` console script's entry point: :mod:`perfmodel.cli.main` with the garbage collector held off
while the command line's modules load.

Importing the CLI (typer, rich, pydantic's device and spec models, numpy, the PTX engine) allocates a few hundred
thousand objects that live as long as the process; with the collector's default thresholds they trigger about a
hundred collections that find nothing to free, which cost 40-55 ms of a 0.35 s ``perfmodel analyze vec_add``
(measured with ``gc.callbacks`` on the 2-core machine). So the collector is off during the
imports, the objects they made are frozen (moved to the permanent generation, never scanned again), and the
collector is back on, with a larger first-generation threshold, before the command runs: a long sweep or a large
simulation still has its cyclic garbage collected. Tests import :mod:`perfmodel.cli.main` directly and keep the
interpreter's defaults.
"""
from __future__ import annotations

import gc

# first-generation threshold while the command runs (CPython's default is 700): the simulator allocates and frees
# arrays at a high rate, almost none of them in cycles
_GEN0_THRESHOLD = 10_000


def main() -> None:
    enabled = gc.isenabled()
    gc.disable()
    try:
        from perfmodel.cli.main import main as run
    finally:
        if enabled:
            gc.freeze()
            gc.set_threshold(_GEN0_THRESHOLD, *gc.get_threshold()[1:])
            gc.enable()
    try:
        run()
        code = 0
    except SystemExit as exc:
        code = exc.code
    _exit(code)


def _exit(code) -> None:
    """End the process as ``sys.exit(code)`` would, without the interpreter's teardown when nothing needs it.

    Tearing the interpreter down - freeing every object and module one by one - takes 60-90 ms after a short
    command (measured: the process ends that long after the command's last line). When no other thread and no
    child process is alive, the atexit handlers run, stdout and stderr are flushed, and the process ends with
    ``os._exit``; otherwise Python's normal exit joins the threads and children first."""
    import atexit
    import os
    import sys
    import threading

    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:                                   # sys.exit("message"): printed on stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    mp = sys.modules.get("multiprocessing")
    if threading.active_count() > 1 or (mp is not None and mp.active_children()):
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):       # a closed pipe (perfmodel ... | head): nothing more to write
            pass
    os._exit(status & 0xFF)


if __name__ == "__main__":
    main()
