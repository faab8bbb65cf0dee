#!/usr/bin/env python3
"""The README's test command (``python -m pytest``) timed in the three states a checkout meets it in.

* ``cold``: a fresh clone and an empty compile cache (``PERFMODEL_CACHE_DIR`` a new folder) - a new machine, or CI:
  every kernel the tests use is compiled by NVRTC and disassembled by nvdisasm;
* ``clone``: another fresh clone of the same commit, with the cache the cold run filled - a second checkout on a
  machine that has run perfmodel (the compile key leaves the kernel's folder out, docs/compile.md);
* ``warm``: the same clone again.

Each state runs ``--repeats`` times (a new cache folder and two new clones per repeat); printed: the median wall
time of each state, the largest peak resident memory of one process (``ru_maxrss`` over the test processes),
and the worst wall time. The clones are of HEAD (``git clone`` of this repository: committed files only), run with
this interpreter and the clone first on ``PYTHONPATH``, so the clone's perfmodel is the one tested.

    python bench/bench_suite.py [--repeats 3] [--pytest-args ...]
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _clone(into: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(ROOT), str(into)], check=True)
    return into


def _pytest(clone: Path, cache: Path, extra: list[str]) -> float:
    env = dict(os.environ, PERFMODEL_CACHE_DIR=str(cache), PYTHONPATH=str(clone))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *extra], cwd=clone, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"pytest failed in {clone} ({proc.returncode}):\n{proc.stdout[-3000:]}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pytest-args", nargs=argparse.REMAINDER, default=[],
                    help="further pytest arguments (everything after this flag)")
    args = ap.parse_args()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    times: dict[str, list[float]] = {"cold": [], "clone": [], "warm": []}
    for i in range(args.repeats):
        work = Path(tempfile.mkdtemp(prefix="perfmodel-bench-suite-"))
        try:
            cache = work / "cache"
            first, second = _clone(work / "a"), _clone(work / "b")
            for state, clone in (("cold", first), ("clone", second), ("warm", second)):
                times[state].append(_pytest(clone, cache, args.pytest_args))
                print(f"  run {i + 1}: {state:<5} {times[state][-1]:6.1f} s", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    print(f"README test command at {head}, {os.cpu_count()} CPUs, medians of {args.repeats} runs:")
    for state, values in times.items():
        print(f"  {state:<5} {statistics.median(values):6.1f} s  (worst {max(values):.1f} s)")
    print(f"  peak resident memory of one test process: {peak:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
