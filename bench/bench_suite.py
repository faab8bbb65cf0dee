#!/usr/bin/env python3
"""The README's test command (``python -m pytest``) timed in the states a checkout meets it in.

* ``unseeded``: a fresh clone and an empty compile cache (``PERFMODEL_CACHE_DIR`` a new folder), the compile seed
  turned off (``PERFMODEL_TEST_SEED=0``): every kernel the tests use is compiled by NVRTC and disassembled by
  nvdisasm - a new machine whose NVIDIA wheels are not the ones the seed was made with (tests/seed/make_seed.py);
* ``cold``: a fresh clone and an empty compile cache - a new machine, or CI: the tests start by copying the compile
  seed into the cache, and compile what it lacks;
* ``clone``: another fresh clone of the same commit, with the cache the cold run filled - a second checkout on a
  machine that has run perfmodel (the compile key leaves the kernel's folder out, docs/compile.md);
* ``warm``: the same clone again.

``--readme`` instead times the README's test command line as written there (read from README.md: a new ``.venv``,
``pip install``, ``python -m pytest``) in fresh clones with an empty compile cache, the whole command with its
installation: what issue 15's 60 s figure is about.

Each state runs ``--repeats`` times (two new cache folders and three new clones per repeat); printed: the median wall
time of each state, the largest peak resident memory of one process (``ru_maxrss`` over the test processes),
and the worst wall time. The clones are of HEAD (``git clone`` of this repository: committed files only), run with
this interpreter and the clone first on ``PYTHONPATH``, so the clone's perfmodel is the one tested.

    python bench/bench_suite.py [--repeats 3] [--pytest-args ...]
    python bench/bench_suite.py --readme [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import re
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


def _pytest(clone: Path, cache: Path, extra: list[str], seed: bool = True) -> float:
    env = dict(os.environ, PERFMODEL_CACHE_DIR=str(cache), PYTHONPATH=str(clone), PERFMODEL_TEST_SEED=str(int(seed)))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *extra], cwd=clone, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"pytest failed in {clone} ({proc.returncode}):\n{proc.stdout[-3000:]}")
    return elapsed


def readme_test_command() -> str:
    """The README's test command: the line of its Quickstart's code blocks that runs pytest."""
    text = (ROOT / "README.md").read_text()
    lines = [line for block in re.findall(r"```bash\n(.*?)```", text, re.S) for line in block.splitlines()
             if "pytest" in line]
    if len(lines) != 1:
        raise SystemExit(f"README.md: expected one command line running pytest in its bash blocks, found {lines}")
    return lines[0]


def _readme(repeats: int, head: str) -> int:
    command = readme_test_command()
    walls = []
    for i in range(repeats):
        work = Path(tempfile.mkdtemp(prefix="perfmodel-bench-readme-"))
        try:
            clone = _clone(work / "clone")
            # this environment otherwise (PYTHONDONTWRITEBYTECODE included: CI's machine sets it, as this one)
            env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
            venv = os.environ.get("VIRTUAL_ENV")         # this interpreter's venv: off PATH
            env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                          if not (venv and p.startswith(venv)))
            env["PERFMODEL_CACHE_DIR"] = str(work / "cache")
            t0 = time.perf_counter()
            proc = subprocess.run(["bash", "-c", command], cwd=clone, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            walls.append(time.perf_counter() - t0)
            if proc.returncode != 0:
                raise SystemExit(f"the README test command failed ({proc.returncode}):\n{proc.stdout[-3000:]}")
            summary = [line for line in proc.stdout.splitlines() if " passed" in line][-1:]
            print(f"  run {i + 1}: {walls[-1]:6.1f} s  {summary[0].strip('= ') if summary else ''}", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    print(f"README test command at {head}, {os.cpu_count()} CPUs, fresh clone, new .venv, empty compile cache, "
          f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')}:")
    print(f"  {command}")
    print(f"  median {statistics.median(walls):.1f} s of {repeats} runs (worst {max(walls):.1f} s); peak resident "
          f"memory of one process {peak:.0f} MiB")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--readme", action="store_true",
                    help="time the README's whole test command (new .venv, pip install, pytest) instead")
    ap.add_argument("--pytest-args", nargs=argparse.REMAINDER, default=[],
                    help="further pytest arguments (everything after this flag)")
    args = ap.parse_args()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    if args.readme:
        return _readme(args.repeats, head)
    times: dict[str, list[float]] = {"unseeded": [], "cold": [], "clone": [], "warm": []}
    for i in range(args.repeats):
        work = Path(tempfile.mkdtemp(prefix="perfmodel-bench-suite-"))
        try:
            first, second, third = _clone(work / "a"), _clone(work / "b"), _clone(work / "c")
            times["unseeded"].append(_pytest(first, work / "cache-unseeded", args.pytest_args, seed=False))
            print(f"  run {i + 1}: unseeded {times['unseeded'][-1]:6.1f} s", flush=True)
            for state, clone in (("cold", second), ("clone", third), ("warm", third)):
                times[state].append(_pytest(clone, work / "cache", args.pytest_args))
                print(f"  run {i + 1}: {state:<8} {times[state][-1]:6.1f} s", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    print(f"README test command at {head}, {os.cpu_count()} CPUs, medians of {args.repeats} runs:")
    for state, values in times.items():
        print(f"  {state:<8} {statistics.median(values):6.1f} s  (worst {max(values):.1f} s)  "
              f"{statistics.median(values) / statistics.median(times['unseeded']):.2f}x of unseeded")
    print(f"  peak resident memory of one test process: {peak:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
