"""Launch validation/microbench/subroutines.cu's kernels once each (n = 2^20, blocks of 256) for Nsight Compute
(validation/subroutines_h200_ncu.csv, read by tests/test_kernel_counts.py):

    ncu --metrics smsp__inst_executed.sum --csv python3 validation/microbench/subroutines.py
"""
from pathlib import Path

import cupy as cp
import numpy as np

N, W, W64 = 1 << 20, 1000, 1000003
src = (Path(__file__).resolve().parent / "subroutines.cu").read_text()
m = cp.RawModule(code=src, backend="nvcc", options=("-O3",))
grid = ((N + 255) // 256,)
x = cp.asarray(np.random.default_rng(1).random(N // W + 1, dtype=np.float32))
m.get_function("div64_small")(grid, (256,), (np.uint64(N), x, np.int32(W), cp.zeros(N, cp.float32)))
m.get_function("div64_large")(grid, (256,), (np.uint64(N), np.uint64(W64), cp.zeros(N, cp.uint64)))
xd = cp.asarray(np.random.default_rng(2).uniform(0.5, 2.0, N))
m.get_function("pow_double")(grid, (256,), (xd, cp.zeros(N, cp.float64), np.int32(N)))
cp.cuda.runtime.deviceSynchronize()
