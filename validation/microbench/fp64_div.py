"""Launch validation/microbench/fp64_div.cu once per kernel (132 blocks of 256 threads, 200 iterations) for Nsight
Compute (validation/fp64_div_h200_ncu.csv, read by tests/test_fp64_pipe.py):

    ncu --metrics smsp__inst_executed.sum,smsp__inst_executed_pipe_fp64.sum,\\
smsp__sass_thread_inst_executed_op_dfma_pred_on.sum,smsp__sass_thread_inst_executed_op_dadd_pred_on.sum,\\
smsp__sass_thread_inst_executed_op_dmul_pred_on.sum --csv python3 validation/microbench/fp64_div.py
"""
from pathlib import Path

import cupy as cp
import numpy as np

src = (Path(__file__).resolve().parent / "fp64_div.cu").read_text()
m = cp.RawModule(code=src, backend="nvcc", options=("-std=c++17",))
x64 = cp.asarray(np.random.default_rng(1).uniform(0.5, 1.5, 132 * 256))
x32 = x64.astype(cp.float32)
m.get_function("div_f64")((132,), (256,), (x64, np.int32(200)))
m.get_function("div_f32")((132,), (256,), (x32, np.int32(200)))
cp.cuda.runtime.deviceSynchronize()
