#!/usr/bin/env python3
"""Whole-command speed and peak memory of perfmodel, against a previous engine measured in the same run.

Each case is one command in a fresh subprocess (start-up, compile cache, simulation, model, report); the figure
is the median wall time of ``--repeats`` runs and the largest peak resident memory (the child's ``ru_maxrss``).
Each case first runs once untimed, so that the compile cache and Python's bytecode cache are warm, as on a user's
machine after the first use; the children run with Python's default bytecode caching even where the parent's
environment turns it off (``PYTHONDONTWRITEBYTECODE``).
The baseline is another commit of this repository (``--baseline-ref``; default the engine before block
replication), extracted with ``git archive`` and run with the same Python; cases marked ``old`` run there too.

    python bench/bench_speed.py [--repeats 3] [--baseline-ref 50fa99c] [--no-baseline] [--no-rowwise] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cli(tree: Path | None) -> list[str]:
    """The console script's module: perfmodel.cli.entry, or perfmodel.cli.main in a baseline tree from before it."""
    entry = "entry" if ((tree or ROOT) / "perfmodel" / "cli" / "entry.py").exists() else "main"
    return [sys.executable, "-m", f"perfmodel.cli.{entry}"]


# matmul_rowwise with ha = wa = wb = W, exact, on h100 (engines before perfmodel.analysis named it perfmodel.analyze)
ROWWISE = ("import sys\nfrom perfmodel.analysis import analyze\nw = int(sys.argv[1])\n"
           "a = analyze('matmul_rowwise', 'h100', {'ha': w, 'wa': w, 'wb': w}, sample=0)\n"
           "assert a.sim.correct is not False, a.sim.correct_detail\n")
ROWWISE_OLD = ROWWISE.replace("perfmodel.analysis", "perfmodel.analyze")

# name, argv (after the interpreter / CLI), run on the baseline too
CASES = [
    ("help", ["--help"], True),
    ("vec_add", ["analyze", "vec_add", "--device", "h100"], True),
    ("headline_1024", ["analyze", "matmul_tiled", "--device", "g80", "-D", "Width=1024", "--sample", "0"], True),
    ("headline_2048", ["analyze", "matmul_tiled", "--device", "g80", "-D", "Width=2048", "--sample", "0"], False),
    ("headline_4096", ["analyze", "matmul_tiled", "--device", "g80", "-D", "Width=4096", "--sample", "0"], False),
    ("sgemm_4096", ["analyze", "bench/kernels/sgemm_blocktiled.yaml", "--device", "h100", "-D", "S=4096"], False),
    ("rowwise_512", 512, True),
    ("rowwise_1024", 1024, False),
]


def _run(argv: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{err[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024.0


def measure(tree: Path | None, repeats: int, only: set, rowwise: bool, baseline: bool) -> dict:
    env = dict(os.environ, COLUMNS="120")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    cwd = tree or ROOT
    out = {}
    for name, argv, on_old in CASES:
        if (only and name not in only) or (baseline and not on_old):
            continue
        if name.startswith("rowwise"):
            if not rowwise:
                continue
            old_module = not ((tree or ROOT) / "perfmodel" / "analysis.py").exists()
            cmd = [sys.executable, "-c", ROWWISE_OLD if old_module else ROWWISE, str(argv)]
        else:
            cmd = _cli(tree) + argv
        _run(cmd, env, cwd)          # warm-up: compile cache, bytecode
        runs = [_run(cmd, env, cwd) for _ in range(repeats)]
        out[name] = (statistics.median(r[0] for r in runs), max(r[1] for r in runs))
        print(f"  {'old' if baseline else 'new'} {name:<14} {out[name][0]:8.3f} s  {out[name][1]:7.0f} MiB",
              flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline-ref", default="50fa99c")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--no-rowwise", action="store_true", help="skip matmul_rowwise at 512 and 1024 (the slow "
                                                            "baseline: ~20 s a run)")
    ap.add_argument("--only", nargs="*", default=[])
    args = ap.parse_args()
    only = set(args.only)
    print(f"medians of {args.repeats} runs; peak resident memory over the runs")
    new = measure(None, args.repeats, only, not args.no_rowwise, False)
    old = {}
    if not args.no_baseline:
        with tempfile.TemporaryDirectory(prefix="perfmodel-old-") as tmp:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline_ref], capture_output=True)
            if archive.returncode != 0:
                raise SystemExit(f"git archive {args.baseline_ref} failed: {archive.stderr.decode()[-500:]}")
            subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
            old = measure(Path(tmp), args.repeats, only, not args.no_rowwise, True)
    print()
    print(f"{'case':<16}{'new s':>10}{'new MiB':>10}{'old s':>10}{'old/new':>10}")
    for name, (t, mem) in new.items():
        o = old.get(name)
        print(f"{name:<16}{t:>10.3f}{mem:>10.0f}" + (f"{o[0]:>10.3f}{o[0] / t:>10.1f}x" if o else ""))
    print("(rowwise_W: python -c \"analyze('matmul_rowwise', 'h100', ha = wa = wb = W, sample=0)\", the whole process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
