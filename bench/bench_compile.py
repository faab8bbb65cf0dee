"""Compile-stage timings: cold (NVRTC), cached on disk in a fresh process, cached in process.

    python bench/bench_compile.py [FILE ...] [--runs 3] [--expr 'Name<args>' ...]

Defaults to the vendored cuda-samples files in tests/data (vectorAdd: no cooperative groups;
simpleCooperativeGroups: cooperative groups). Each figure is the median of --runs runs. "cold" uses a fresh empty
cache folder per run; "disk" runs a new Python process per run against a filled cache and reports the time of the
compile_cuda call itself and of the whole process (interpreter start + imports + call).
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
DEFAULT_FILES = [ROOT / "validation/kernels/cuda-samples/Samples/0_Introduction/vectorAdd/vectorAdd.cu",
                 ROOT / "validation/kernels/cuda-samples/Samples/0_Introduction/simpleCooperativeGroups/simpleCooperativeGroups.cu"]

CHILD = """
import json, sys, time
t0 = time.perf_counter()
from perfmodel.compile import compile_cuda
t1 = time.perf_counter()
mod = compile_cuda(sys.argv[1], name_expressions=json.loads(sys.argv[2]))
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "call_s": t2 - t1, "kernels": len(mod.kernels)}))
"""


def child(path: Path, exprs: list[str], cache: str) -> dict:
    env = dict(os.environ, PERFMODEL_CACHE_DIR=cache)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), json.dumps(exprs)], env=env, check=True,
                         capture_output=True, text=True).stdout
    data = json.loads(out.strip().splitlines()[-1])
    data["process_s"] = time.perf_counter() - t0
    return data


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--expr", action="append", default=[])
    args = ap.parse_args(argv)
    files = args.files or DEFAULT_FILES
    print("| file | cold compile s | disk-cached call ms | disk-cached process ms | in-process ms |")
    print("|---|---:|---:|---:|---:|")
    for path in files:
        cold, disk_call, disk_proc, mem = [], [], [], []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as cache:
                cold.append(child(path, args.expr, cache)["call_s"])
                hit = child(path, args.expr, cache)
                disk_call.append(hit["call_s"])
                disk_proc.append(hit["process_s"])
        with tempfile.TemporaryDirectory() as cache:
            os.environ["PERFMODEL_CACHE_DIR"] = cache
            from perfmodel.compile import compile_cuda

            compile_cuda(path, name_expressions=args.expr)
            for _ in range(args.runs):
                t0 = time.perf_counter()
                compile_cuda(path, name_expressions=args.expr)
                mem.append(time.perf_counter() - t0)
        print(f"| `{path.name}` | {statistics.median(cold):.2f} | {1000 * statistics.median(disk_call):.1f} | "
              f"{1000 * statistics.median(disk_proc):.0f} | {1000 * statistics.median(mem):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
