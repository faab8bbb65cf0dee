#!/usr/bin/env python3
"""L2 hits on lines that many SMs read at once (docs/model.md 2.4, "Hot lines"): cycles per loop iteration of
a warp whose every iteration waits for one global load, as the number of warps that read the same lines at the
same time grows.

Each thread of B blocks (one per SM) of W warps runs ``iters`` iterations of ``s = fmaf(s, c, a[i]); i += stride``
(``#pragma unroll 1``: one load in flight, the next issued only after the FMA that waits for this one), the pattern
of cuda-samples' ``fp16ScalarProduct``. The iteration k reads ``a[k * stride + block * shift + thread]``:

* ``same``   (shift 0): every block reads the same 128-byte lines, 4 sectors per warp request;
* ``shift1`` (shift 1 element): the blocks' windows are one element apart (fp16ScalarProduct's
  ``threadIdx.x + blockDim.x + blockIdx.x``), 5 sectors per request;
* ``spread`` (shift = the block's own window): no two blocks read a line.

Each case runs warm (the data left in L2 by the launch before; the footprint is at most 17 MB) and cold (256 MB
written before each launch, so that every line's first read goes to DRAM). Each warp's lane 0 records
``clock64()`` around the loop; a case's figure is the median over its warps and 5 launches of cycles per
iteration, with the quartiles. Prints one JSON document.

    python validation/microbench/hot_lines.py > out.json      # needs CuPy and a GPU
"""
from __future__ import annotations

import json

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void hot(const float* __restrict__ a, float* __restrict__ out, long long* __restrict__ cycles,
                               int iters, long long shift, long long stride)
{
    const float* p = a + blockIdx.x * shift + threadIdx.x;
    float s = 0.0f;
    long long t0 = clock64();
#pragma unroll 1
    for (int k = 0; k < iters; ++k) {
        s = fmaf(s, 0.999f, *p);
        p += stride;
    }
    long long t1 = clock64();
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    if ((threadIdx.x & 31) == 0)
        cycles[blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)] = t1 - t0;
}
"""
ITERS = 32


def main() -> None:
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms = props["multiProcessorCount"]
    kernel = cp.RawModule(code=SRC, options=("-std=c++17",)).get_function("hot")
    out = {"device": props["name"].decode(), "sms": sms, "clock_khz": props["clockRate"], "iters": ITERS,
           "cases": []}
    flush = cp.empty(256 << 20, dtype=cp.uint8)
    blocks_list = sorted({1, 2, 4, 8, 16, 32, 64, 128, sms})
    for warps in (1, 4, 8, 16, 32):
        threads = warps * 32
        for mode in ("same", "shift1", "spread"):
            for blocks in blocks_list:
                if mode == "spread":
                    shift = threads
                    stride = blocks * threads
                else:
                    shift = 0 if mode == "same" else 1
                    stride = ((blocks + threads + 31) // 32) * 32 + 32    # a fresh set of lines each iteration
                n = stride * ITERS + blocks * shift + threads + 32
                a = cp.asarray(np.random.default_rng(0).random(n, dtype=np.float32))
                res = cp.zeros(blocks * threads, cp.float32)
                cyc = cp.zeros(blocks * warps, cp.int64)
                args = (a, res, cyc, np.int32(ITERS), np.int64(shift), np.int64(stride))
                case = {"mode": mode, "blocks": blocks, "warps_per_block": warps,
                        "blocks_per_line": 1 if mode == "spread" else blocks, "footprint_bytes": int(n * 4)}
                for state in ("warm", "cold"):
                    kernel((blocks,), (threads,), args)        # leaves the lines in L2 (and L1)
                    per = []
                    for rep in range(5):
                        if state == "cold":
                            flush.fill(rep + 1)                # evicts them: every line's first read is DRAM's
                        kernel((blocks,), (threads,), args)
                        cp.cuda.runtime.deviceSynchronize()
                        per.append(cyc.get() / ITERS)
                    v = np.concatenate(per)
                    q1, med, q3 = (float(x) for x in np.percentile(v, [25, 50, 75]))
                    case[state] = {"cycles_per_iter_median": med, "q1": q1, "q3": q3, "max": float(v.max())}
                out["cases"].append(case)
                del a
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
