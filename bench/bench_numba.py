#!/usr/bin/env python3
"""perfmodel's executor against numba's CUDA simulator, kernel against kernel, on the seed's tiled matmul.

Both run the same algorithm (the slides' MatrixMulKernel: TILE_WIDTH x TILE_WIDTH tiles staged in shared memory,
two barriers per phase) at Width=W on the CPU, with no GPU: numba with ``NUMBA_ENABLE_CUDASIM=1`` (one Python
thread per CUDA thread), perfmodel's ``simulate`` on the kernel compiled by NVRTC (compiled before the clock
starts; numba's simulator compiles nothing). Both results are checked against numpy. Medians of --repeats runs.

    pip install numba   # not a perfmodel dependency
    python bench/bench_numba.py [--width 64] [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"       # before numba is imported

import numpy as np  # noqa: E402

try:
    from numba import cuda, float32  # noqa: E402  (module level: the simulator swaps these names in)
except ImportError:  # pragma: no cover
    raise SystemExit("bench_numba needs numba: pip install numba") from None

TILE = 16


def numba_kernel():
    @cuda.jit
    def matmul_tiled(d_M, d_N, d_P, width):
        Mds = cuda.shared.array((TILE, TILE), float32)
        Nds = cuda.shared.array((TILE, TILE), float32)
        bx, by = cuda.blockIdx.x, cuda.blockIdx.y
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row = by * TILE + ty
        col = bx * TILE + tx
        pvalue = float32(0.0)
        for m in range(width // TILE):
            Mds[ty, tx] = d_M[row * width + m * TILE + tx]
            Nds[ty, tx] = d_N[(m * TILE + ty) * width + col]
            cuda.syncthreads()
            for k in range(TILE):
                pvalue += Mds[ty, k] * Nds[k, tx]
            cuda.syncthreads()
        d_P[row * width + col] = pvalue
    return matmul_tiled


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    w = args.width
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, w * w).astype(np.float32)
    b = rng.uniform(-1, 1, w * w).astype(np.float32)
    ref = (a.reshape(w, w).astype(np.float64) @ b.reshape(w, w)).reshape(-1)
    grid, block = (w // TILE, w // TILE), (TILE, TILE)

    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate
    from perfmodel.spec import load_spec

    spec = load_spec("matmul_tiled")
    program = load_kernel(spec.source_path, entry=spec.entry, defines={"TILE_WIDTH": TILE})
    ours = []
    for _ in range(args.repeats):
        out = np.zeros(w * w, np.float32)
        t = time.perf_counter()
        simulate(program, grid, block, [a, b, out, w])
        ours.append(time.perf_counter() - t)
        assert np.allclose(out, ref, rtol=1e-4, atol=1e-4)

    kernel = numba_kernel()
    theirs = []
    for _ in range(args.repeats):
        out = np.zeros(w * w, np.float32)
        t = time.perf_counter()
        kernel[grid, block](a, b, out, np.int32(w))
        theirs.append(time.perf_counter() - t)
        assert np.allclose(out, ref, rtol=1e-4, atol=1e-4)

    import numba

    t_ours, t_theirs = statistics.median(ours), statistics.median(theirs)
    print(f"tiled matmul W={w}, {grid[0] * grid[1]} blocks of {TILE * TILE} threads, medians of {args.repeats} runs")
    print(f"  perfmodel simulate       {t_ours * 1e3:10.2f} ms   (counts every instruction and access)")
    print(f"  numba {numba.__version__} CUDA simulator {t_theirs * 1e3:10.2f} ms   (executes only)")
    print(f"  ratio                    {t_theirs / t_ours:10.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
