"""FFMA against HFMA2 throughput (validation/microbench/half2_rate.cu): 8 independent chains a thread, 4,096
iterations, 1,056 blocks of 256 threads; CUDA-event medians of 10 launches, and Nsight Compute's executed
instructions of each (--ncu: one launch each):

    python3 validation/microbench/half2_rate.py validation/half2_rate_h200.json
    ncu --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,\\
smsp__sass_thread_inst_executed_op_hfma_pred_on.sum --csv python3 validation/microbench/half2_rate.py --ncu
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np

BLOCKS, THREADS, ITERS = 1056, 256, 4096


def main(argv: list[str]) -> int:
    import cupy as cp

    src = (Path(__file__).resolve().parent / "half2_rate.cu").read_text()
    mod = cp.RawModule(code=src, options=("-std=c++17",))
    n = BLOCKS * THREADS
    out32 = cp.zeros(n, cp.float32)
    out16 = cp.zeros(n, cp.uint32)
    h2 = np.frombuffer(np.array([0.999, 0.999], np.float16).tobytes(), np.uint32)[0]
    h2b = np.frombuffer(np.array([0.001, 0.001], np.float16).tobytes(), np.uint32)[0]
    launches = {
        "ffma_chains": lambda: mod.get_function("ffma_chains")((BLOCKS,), (THREADS,),
                                                               (out32, np.float32(0.999), np.float32(0.001),
                                                                np.int32(ITERS))),
        "hfma2_chains": lambda: mod.get_function("hfma2_chains")((BLOCKS,), (THREADS,),
                                                                 (out16, np.uint32(h2), np.uint32(h2b),
                                                                  np.int32(ITERS))),
    }
    if "--ncu" in argv:
        for go in launches.values():
            go()
        cp.cuda.runtime.deviceSynchronize()
        return 0
    results = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "blocks": BLOCKS,
               "threads": THREADS, "iters": ITERS, "cases": []}
    for name, go in launches.items():
        times = []
        for rep in range(11):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            go()
            stop.record()
            stop.synchronize()
            if rep:
                times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
        results["cases"].append({"kernel": name, "median_s": statistics.median(times)})
        print(f"{name}: {statistics.median(times) * 1e6:9.1f} us")
    Path(argv[0]).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["half2_rate.json"]))
