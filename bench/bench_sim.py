#!/usr/bin/env python3
"""Simulator speed benchmark (issue 3, "Speed"): not a timed test, a script that prints figures.

1. The seeds' headline case: tiled matmul, Width=1024, TILE_WIDTH=16, the full 4096-block grid, exact counts.
   Prints the median wall time of ``simulate`` and the peak resident memory of the process that ran it.
2. The same kernel at Width=64 on numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1) and on ours; prints the ratio.

Each case runs in its own subprocess so that its peak memory is its own. Targets (2-core machine): headline
<= 10 s and <= 2 GB; ours >= 300x faster than numba's simulator at Width=64.

    python bench/bench_sim.py [--repeats 3] [--numba-repeats 3] [--width 1024] [--small-width 64] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

TILE = 16

def _peak_rss_bytes() -> int:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024      # Linux: KiB


def case_ours(width: int, repeats: int) -> dict:
    import numpy as np

    from perfmodel.kernel import load_kernel as compile_kernel
    from perfmodel.sim import simulate
    from perfmodel.paths import shipped_dir

    # the shipped kernel (the one `perfmodel analyze matmul_tiled` runs), read directly rather than through
    # perfmodel.spec, whose imports (pydantic, yaml) would add ~15 MB to the peak memory this case reports
    path = shipped_dir("kernels_spec") / "matmul_tiled.cu"
    source = path.read_text()
    t0 = time.perf_counter()
    program = compile_kernel(source=source, path=str(path), defines={"TILE_WIDTH": TILE})
    compile_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    M = rng.random((width, width), dtype=np.float32)
    N = rng.random((width, width), dtype=np.float32)
    times, result, P = [], None, None
    for _ in range(repeats):
        P = np.zeros((width, width), np.float32)
        t0 = time.perf_counter()
        result = simulate(program, (width // TILE, width // TILE), (TILE, TILE), [M, N, P, width])
        times.append(time.perf_counter() - t0)
    c = result.counts
    ref = M.astype(np.float64) @ N.astype(np.float64)
    exact_loads = 2 * width * width * (width // TILE)
    return {
        "width": width, "blocks": result.blocks_simulated, "repeats": repeats, "times_s": times,
        "median_s": statistics.median(times), "compile_s": compile_s, "peak_rss_bytes": _peak_rss_bytes(),
        "max_rel_error": float(np.max(np.abs(P - ref) / np.maximum(np.abs(ref), 1e-30))),
        "global_loads": c.global_["loads"], "global_loads_closed_form": exact_loads,
        "flops": c.flops, "flops_closed_form": 2 * width ** 3,
    }


NUMBA_KERNEL = """
from numba import cuda, float32
TILE = 16

@cuda.jit
def matmul_tiled(d_M, d_N, d_P, Width):
    Mds = cuda.shared.array((TILE, TILE), float32)
    Nds = cuda.shared.array((TILE, TILE), float32)
    bx = cuda.blockIdx.x
    by = cuda.blockIdx.y
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = by * TILE + ty
    Col = bx * TILE + tx
    Pvalue = float32(0.0)
    for m in range(Width // TILE):
        Mds[ty, tx] = d_M[Row * Width + m * TILE + tx]
        Nds[ty, tx] = d_N[(m * TILE + ty) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    d_P[Row * Width + Col] = Pvalue
"""


def case_numba(width: int, repeats: int) -> dict:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    import numpy as np
    namespace: dict = {}
    exec(compile(NUMBA_KERNEL, "numba_tiled.py", "exec"), namespace)   # noqa: S102 - our own fixed source
    kernel = namespace["matmul_tiled"]
    rng = np.random.default_rng(0)
    M = rng.random(width * width, dtype=np.float32)
    N = rng.random(width * width, dtype=np.float32)
    times = []
    P = None
    for _ in range(repeats):
        P = np.zeros(width * width, np.float32)
        t0 = time.perf_counter()
        kernel[(width // TILE, width // TILE), (TILE, TILE)](M, N, P, width)
        times.append(time.perf_counter() - t0)
    ref = (M.reshape(width, width).astype(np.float64) @ N.reshape(width, width).astype(np.float64)).reshape(-1)
    return {"width": width, "repeats": repeats, "times_s": times, "median_s": statistics.median(times),
            "max_rel_error": float(np.max(np.abs(P - ref) / np.abs(ref)))}


def _subprocess(case: str, width: int, repeats: int) -> dict:
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--case", case, "--width", str(width),
                          "--repeats", str(repeats)], capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"case {case} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--numba-repeats", type=int, default=3)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--small-width", type=int, default=64)
    ap.add_argument("--small-repeats", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--case", choices=["ours", "numba"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.case == "ours":
        print(json.dumps(case_ours(args.width, args.repeats)))
        return 0
    if args.case == "numba":
        print(json.dumps(case_numba(args.width, args.repeats)))
        return 0

    headline = _subprocess("ours", args.width, args.repeats)
    small_ours = _subprocess("ours", args.small_width, args.small_repeats)
    small_numba = _subprocess("numba", args.small_width, args.numba_repeats)
    ratio = small_numba["median_s"] / small_ours["median_s"]
    report = {"cpu_count": os.cpu_count(), "headline": headline, "small_ours": small_ours,
              "small_numba": small_numba, "speedup_vs_numba": ratio}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    gib = headline["peak_rss_bytes"] / 2 ** 30
    print(f"machine: {os.cpu_count()} CPU cores")
    print(f"headline: tiled matmul Width={args.width} TILE_WIDTH={TILE}, {headline['blocks']} blocks, exact")
    print(f"  simulate: median {headline['median_s']:.2f} s over {args.repeats} runs "
          f"({', '.join(f'{t:.2f}' for t in headline['times_s'])}); compile {headline['compile_s'] * 1e3:.0f} ms")
    print(f"  peak memory (process RSS): {gib:.2f} GiB")
    print(f"  counts: global loads {headline['global_loads']} (closed form {headline['global_loads_closed_form']}),"
          f" flops {headline['flops']} (closed form {headline['flops_closed_form']}); "
          f"max rel error vs float64 matmul {headline['max_rel_error']:.1e}")
    print(f"  targets: <= 10 s -> {'met' if headline['median_s'] <= 10 else 'MISSED'}; "
          f"<= 2 GB -> {'met' if headline['peak_rss_bytes'] <= 2e9 else 'MISSED'}")
    print(f"Width={args.small_width}: ours median {small_ours['median_s'] * 1e3:.1f} ms over {args.small_repeats} "
          f"runs; numba CUDA simulator median {small_numba['median_s']:.2f} s over {args.numba_repeats} runs")
    print(f"  speed-up vs numba's simulator: {ratio:.0f}x (target >= 300x -> {'met' if ratio >= 300 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
