"""Global atomics on a few bins (validation/kernels/histogram_global.cu with NBINS 2 .. 64): how a warp request's
lanes on several addresses of one 32-byte sector are served. Cold (L2 flushed by writing 256 MB before each launch)
CUDA-event medians of 30 launches, n = 4 Mi, 256 threads a block, uniform random bins (numpy, seed 1):

    python validation/microbench/atomic_bins.py validation/atomic_bins_h200.json      # on the GPU machine (CuPy)
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def main(out: str) -> int:
    import cupy as cp

    src = (ROOT / "validation" / "kernels" / "histogram_global.cu").read_text()
    n = 1 << 22
    flush = cp.zeros(256 << 18, cp.float32)          # 256 MB
    results = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "n": n, "block": 256, "cases": []}
    for nbins in (1, 2, 4, 8, 16, 32, 64, 256):
        mod = cp.RawModule(code=src.replace("#define NBINS 256", f"#define NBINS {nbins}"), options=("-std=c++17",),
                           name_expressions=["hist_global_u32", "hist_global_f32"])
        data = cp.asarray(np.random.default_rng(1).integers(0, nbins, n).astype(np.int32))
        for kernel, dt in (("hist_global_u32", cp.uint32), ("hist_global_f32", cp.float32)):
            f = mod.get_function(kernel)
            bins = cp.zeros(nbins, dt)
            times = []
            for rep in range(31):
                flush.fill(rep)
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                f((n // 256,), (256,), (data, bins, np.int32(n)))
                stop.record()
                stop.synchronize()
                if rep:
                    times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
            results["cases"].append({"kernel": kernel, "NBINS": nbins, "median_s": statistics.median(times),
                                     "min_s": min(times)})
            print(f"{kernel} NBINS={nbins:4d}: {statistics.median(times) * 1e6:9.1f} us")
    Path(out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "atomic_bins.json"))
