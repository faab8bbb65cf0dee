"""Wall time of one multi-device sweep: serial, ``--jobs N``, a re-run from the result cache, and a Dask
``LocalCluster`` of N workers; and whether every run gives identical points.

    python bench/sweep_timing.py [--repeats 3] [--jobs 2] [--sample N] [--out timings.json] [-- SWEEP ARGS...]

Default sweep: ``matmul_tiled`` TILE_WIDTH 4,8,16,32 x Width 256..4096 (x2) on g80, fermi, kepler_gk110, a100 and
h100 (100 points). Each timed run is the ``perfmodel sweep ... --json`` console script in a fresh process with a
fresh cache folder (the cached re-run reuses the folder its serial run filled). Medians of ``--repeats`` runs.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT = ["matmul_tiled", "--devices", "g80,fermi,kepler_gk110,a100,h100", "--vary", "TILE_WIDTH=4,8,16,32",
           "--vary", "Width=256:4096:x2"]


def run(args: list[str], cache: Path) -> tuple[float, dict]:
    script = Path(sys.executable).with_name("perfmodel")
    started = time.perf_counter()
    done = subprocess.run([str(script), "sweep", *args, "--json"], capture_output=True, text=True,
                          env={**os.environ, "PERFMODEL_CACHE_DIR": str(cache)})
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"perfmodel sweep {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds, json.loads(done.stdout)


def points(doc: dict) -> str:
    return json.dumps(doc["points"], sort_keys=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sample", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("sweep", nargs="*", default=None)
    options = parser.parse_args()
    args = list(options.sweep or DEFAULT)
    if options.sample is not None:
        args += ["--sample", str(options.sample)]
    work = Path(tempfile.mkdtemp(prefix="sweep-timing-"))
    times: dict[str, list[float]] = {"serial": [], "jobs": [], "cached": [], "dask": []}
    reference = None
    identical = True
    cluster = None
    try:
        if not options.no_dask:
            from distributed import LocalCluster

            cluster = LocalCluster(n_workers=options.jobs, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
        for i in range(options.repeats):
            cache = work / f"serial{i}"
            seconds, doc = run(args, cache)
            times["serial"].append(seconds)
            reference = reference or points(doc)
            identical &= points(doc) == reference
            seconds, doc = run(args, cache)   # the same sweep again: every point from the cache
            times["cached"].append(seconds)
            identical &= points(doc) == reference and doc["cache"]["hits"] == len(doc["points"])
            seconds, doc = run(args + ["--jobs", str(options.jobs)], work / f"jobs{i}")
            times["jobs"].append(seconds)
            identical &= points(doc) == reference
            if cluster is not None:
                seconds, doc = run(args + ["--scheduler", cluster.scheduler_address], work / f"dask{i}")
                times["dask"].append(seconds)
                identical &= points(doc) == reference
            print(f"repeat {i + 1}: " + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in times.items() if v),
                  file=sys.stderr, flush=True)
    finally:
        if cluster is not None:
            cluster.close()
        shutil.rmtree(work, ignore_errors=True)
    ref = json.loads(reference)
    best = {f"{r['device']} Width={r['Width']}": f"TILE_WIDTH={r['TILE_WIDTH']} {r['predicted_gflops']:.1f} GFLOPS"
            for r in ref if r["best"]}
    summary = {"command": "perfmodel sweep " + " ".join(args), "points": len(ref),
               "valid": sum(r["valid"] for r in ref), "jobs": options.jobs, "repeats": options.repeats,
               "median_s": {k: round(statistics.median(v), 2) for k, v in times.items() if v},
               "runs_s": {k: [round(x, 2) for x in v] for k, v in times.items() if v},
               "identical": identical, "cpus": os.cpu_count(), "load_average": os.getloadavg(), "best": best}
    text = json.dumps(summary, indent=2)
    print(text)
    if options.out:
        options.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
