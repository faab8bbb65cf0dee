#!/usr/bin/env python3
"""The PTX engine against the previous engine (the pycparser C frontend), measured in the same run.

Cases (each run in a fresh subprocess, medians of --repeats runs):

1. ``headline``: the seed slides' headline - tiled matmul, Width=1024, TILE_WIDTH=16, 4,096 blocks, exact - as
   the whole command ``perfmodel analyze matmul_tiled --device g80 -D Width=1024 --sample 0``.
2. ``rowwise``: ``matmul_rowwise`` with ha = wa = wb = W (one thread per row, a serial loop per thread), exact,
   through ``perfmodel.spec.run`` (compile + simulate + check).
3. ``vec_add``: ``perfmodel analyze vec_add --device h100``, whole command (start-up dominated).

The previous engine is the last commit that had it (``--baseline-ref``, default ``f81a33a``), extracted with
``git archive`` into a temporary folder and run with the same Python; it needs ``pycparser`` (the ``bench``
extra). Without git history, ``--no-baseline`` measures the current engine alone.

    python bench/bench_engine.py [--repeats 3] [--rowwise-width 1024] [--no-baseline] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ROWWISE = ("import sys, time\nfrom perfmodel.spec import run\nw = int(sys.argv[1])\nt = time.perf_counter()\n"
           "r = run('matmul_rowwise', {'ha': w, 'wa': w, 'wb': w})\n"
           "assert r.check.correct, r.check.message\nprint(time.perf_counter() - t)\n")


def _timed(cmd: list[str], env: dict, cwd: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def _env(pythonpath: Path | None) -> dict:
    env = dict(os.environ)
    env["COLUMNS"] = "120"
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def measure(label: str, tree: Path | None, repeats: int, rowwise_width: int) -> dict:
    """Medians for one engine: ``tree`` None = the installed package, else a source tree put first on the path."""
    env = _env(tree)
    cwd = tree or ROOT
    cli = [sys.executable, "-m", "perfmodel.cli.main"] if tree is not None else [sys.executable, "-m",
                                                                                    "perfmodel.cli.main"]
    out: dict = {"engine": label}
    runs = [_timed(cli + ["analyze", "matmul_tiled", "--device", "g80", "-D", "Width=1024", "--sample", "0",
                          "--json"], env, cwd)[0] for _ in range(repeats)]
    out["headline_s"] = statistics.median(runs)
    runs = [_timed(cli + ["analyze", "vec_add", "--device", "h100", "--json"], env, cwd)[0] for _ in range(repeats)]
    out["vec_add_s"] = statistics.median(runs)
    if rowwise_width:
        runs = [float(_timed([sys.executable, "-c", ROWWISE, str(rowwise_width)], env, cwd)[1].strip())
                for _ in range(repeats)]
        out["rowwise_s"] = statistics.median(runs)
        out["rowwise_width"] = rowwise_width
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rowwise-width", type=int, default=1024, help="0 skips the rowwise case")
    ap.add_argument("--baseline-ref", default="f81a33a")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    results = [measure("ptx (current)", None, args.repeats, args.rowwise_width)]
    if not args.no_baseline:
        with tempfile.TemporaryDirectory(prefix="perfmodel-old-") as tmp:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline_ref], capture_output=True)
            if archive.returncode != 0:
                raise SystemExit(f"git archive {args.baseline_ref} failed: {archive.stderr.decode()[-500:]}")
            subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
            # the old tree's shipped data lives at its top level (devices/, kernels_spec/): run from there
            results.append(measure(f"source-level ({args.baseline_ref})", Path(tmp), args.repeats,
                                   args.rowwise_width))
    print(f"medians of {args.repeats} runs (seconds)")
    keys = [k for k in ("headline_s", "vec_add_s", "rowwise_s") if k in results[0]]
    print("engine".ljust(28) + "".join(k.ljust(14) for k in keys))
    for r in results:
        print(r["engine"].ljust(28) + "".join(f"{r[k]:<14.3f}" for k in keys))
    if len(results) > 1:
        print("ratio new/old".ljust(28) + "".join(f"{results[0][k] / results[1][k]:<14.2f}" for k in keys))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
