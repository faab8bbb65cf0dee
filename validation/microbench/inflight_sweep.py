#!/usr/bin/env python3
"""DRAM bandwidth against the bytes a kernel keeps in flight per SM (Little's law), for the latency-under-load term
the model lacks (docs/model.md 2.8).

Each thread issues K independent 4-byte loads (a grid-stride pattern: coalesced), adds them and stores one float.
Resident blocks per SM are set with dynamic shared memory (R blocks of B threads), so the bytes in flight per SM
are R x B x K x 4. Each case streams about 512 MiB, cold (L2 flushed by writing 256 MiB before each launch), timed
with CUDA events, median of 10 after 2 warm-ups. Prints one JSON document: per case the bytes in flight per SM,
the achieved read bandwidth and the latency Little's law implies (bytes in flight on the GPU over bandwidth).

    python validation/microbench/inflight_sweep.py > out.json      # needs CuPy and a GPU
"""
from __future__ import annotations

import json
import statistics

import cupy as cp

SRC = r"""
template <int K>
__global__ void stream(const float* __restrict__ in, float* __restrict__ out)
{
    extern __shared__ float pad[];
    long tid = blockIdx.x * (long)blockDim.x + threadIdx.x;
    long stride = (long)gridDim.x * blockDim.x;
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k)
        s += in[tid + k * stride];
    if (s == -12345.0f) pad[threadIdx.x] = s;      // keeps the dynamic shared memory allocated
    out[tid] = s;
}
"""
KS = (1, 2, 4, 8)


def main() -> None:
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms = props["multiProcessorCount"]
    smem_sm = props["sharedMemPerMultiprocessor"]
    module = cp.RawModule(code=SRC, options=("-std=c++17",), name_expressions=[f"stream<{k}>" for k in KS])
    floats = 128 << 20                                   # 512 MiB read per case
    src = cp.random.random(floats, dtype=cp.float32)
    dst = cp.empty(floats, dtype=cp.float32)
    flush = cp.empty(256 << 20, dtype=cp.uint8)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    out = {"device": props["name"].decode(), "sms": sms, "cases": []}
    for block in (256, 1024):
        for resident in ((1, 2, 4, 8) if block == 256 else (1, 2)):
            # dynamic shared memory that leaves room for `resident` blocks per SM (1 KiB reserved per block)
            smem = min(smem_sm // resident - 1024, 227 * 1024)
            for k in KS:
                kernel = module.get_function(f"stream<{k}>")
                kernel.max_dynamic_shared_size_bytes = smem
                threads = floats // k
                grid = threads // block
                times = []
                for rep in range(12):
                    flush.fill(rep & 0xFF)
                    start.record()
                    kernel((grid,), (block,), (src, dst), shared_mem=smem)
                    stop.record()
                    stop.synchronize()
                    if rep >= 2:
                        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
                t = statistics.median(times)
                read_bw = floats * 4 / t
                inflight_sm = resident * block * k * 4
                out["cases"].append({
                    "block": block, "resident_blocks_per_sm": resident, "dynamic_shared_bytes": smem,
                    "loads_per_thread": k, "bytes_in_flight_per_sm": inflight_sm, "time_s": t,
                    "read_gb_per_s": read_bw / 1e9, "total_gb_per_s": (floats * 4 + threads * 4) / t / 1e9,
                    "little_latency_ns": inflight_sm * sms / read_bw * 1e9})
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
