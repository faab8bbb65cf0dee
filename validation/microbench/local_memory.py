"""Local memory against its footprint (validation/microbench/local_memory.cu): S floats a thread, written once and
read ITERS = 256 times at a warp-uniform run-time index, 1,056 blocks of 256 threads (8 a SM on 132 SMs), S = 8 ..
2,048 (the resident threads' arrays 64 KB to 16 MB a SM). Timed cold (L2 flushed by writing 256 MB before each
launch) and warm (back to back), CUDA-event medians of 20 launches; then, with --ncu, one launch each for Nsight
Compute:

    python3 validation/microbench/local_memory.py validation/local_memory_h200.json
    ncu --metrics gpu__time_duration.sum,l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum,\\
l1tex__t_requests_pipe_lsu_mem_local_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,\\
l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_hit.sum,\\
lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,dram__bytes_read.sum,\\
dram__bytes_write.sum,smsp__inst_executed.sum --csv python3 validation/microbench/local_memory.py --ncu
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np

SIZES = (8, 32, 128, 512, 2048)
BLOCKS, THREADS, ITERS = 1056, 256, 256


def main(argv: list[str]) -> int:
    import cupy as cp

    src = (Path(__file__).resolve().parent / "local_memory.cu").read_text()
    names = [f"local_array<{s}>" for s in SIZES]
    mod = cp.RawModule(code=src, options=("-std=c++17",), name_expressions=names)
    n = BLOCKS * THREADS
    seed = cp.asarray(np.random.default_rng(1).integers(0, 1 << 20, n).astype(np.int32))
    out = cp.zeros(n, cp.float32)
    if "--ncu" in argv:
        for name in names:
            mod.get_function(name)((BLOCKS,), (THREADS,), (seed, out, np.int32(ITERS)))
        cp.cuda.runtime.deviceSynchronize()
        return 0
    flush = cp.zeros(256 << 18, cp.float32)
    results = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "blocks": BLOCKS,
               "threads": THREADS, "iters": ITERS, "cases": []}
    for s, name in zip(SIZES, names):
        f = mod.get_function(name)
        row = {"S": s, "kernel": name}
        for state in ("cold", "warm"):
            times = []
            for rep in range(21):
                if state == "cold":
                    flush.fill(rep)
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                f((BLOCKS,), (THREADS,), (seed, out, np.int32(ITERS)))
                stop.record()
                stop.synchronize()
                if rep:
                    times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
            row[f"{state}_median_s"] = statistics.median(times)
        results["cases"].append(row)
        print(f"S={s:5d}: cold {row['cold_median_s'] * 1e6:9.1f} us, warm {row['warm_median_s'] * 1e6:9.1f} us")
    Path(argv[0]).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["local_memory.json"]))
