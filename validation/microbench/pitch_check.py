#!/usr/bin/env python3
"""Are the transposes slower at power-of-two sizes? (docs/model.md 2.8: transpose_shared at 4096^2 and 8192^2 and
picture_scale at 8192^2 run 1.4-1.6x slower than the model says, picture_scale at 8191 x 8190 does not.)

Times validation/kernels/transpose.cu's transpose_shared and transpose_read_scattered, and a plain copy of the same
bytes, at square sizes just below, at and just above 4096 and 8192, cold (L2 flushed by writing 256 MiB before each
launch) with CUDA events; prints one JSON document with the medians and the effective bandwidth (2 x n^2 x 4 bytes
over the time). Needs CuPy and a GPU.

    python validation/microbench/pitch_check.py > out.json
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import cupy as cp

SRC = (Path(__file__).resolve().parent.parent / "kernels" / "transpose.cu").read_text()
COPY = r"""
extern "C" __global__ void copy2d(const float* in, float* out, int rows, int cols)
{
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    if (x < cols && y < rows)
        out[y * cols + x] = in[y * cols + x];
}
"""


def main() -> None:
    module = cp.RawModule(code='extern "C" {\n' + SRC + "\n}\n" + COPY, options=("-std=c++17",))
    flush = cp.empty(256 << 20, dtype=cp.uint8)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    out = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "cases": []}
    for n in (4064, 4096, 4128, 8160, 8192, 8224):
        a = cp.random.random((n, n), dtype=cp.float32)
        b = cp.empty_like(a)
        grid = ((n + 31) // 32, (n + 31) // 32)
        for name in ("transpose_shared", "transpose_read_scattered", "copy2d"):
            k = module.get_function(name)
            times = []
            for rep in range(23):
                flush.fill(rep & 0xFF)
                start.record()
                k(grid, (32, 32), (a, b, cp.int32(n), cp.int32(n)))
                stop.record()
                stop.synchronize()
                if rep >= 3:
                    times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
            t = statistics.median(times)
            out["cases"].append({"kernel": name, "n": n, "cold_median_s": t, "gb_per_s": 2 * n * n * 4 / t / 1e9})
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
