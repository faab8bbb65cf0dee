"""Tensor-core (wmma.mma) throughput per SM and clock on the GPU (validation/microbench/tensor_rate.cu), per input
type, with one block of 1-16 warps per SM (the block's cycles, between two barriers, are the SM's) and, for a check
against the event timer, 4 blocks of 8 warps per SM. Writes one JSON document; the device profiles'
``measured.tensor_flops_per_clock_per_sm`` are the largest one-block rate over the warp counts.

    python validation/microbench/tensor_rate.py OUT.json
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ACC = 8
ITERS = 2048
# kernel -> (operand numpy dtype, output dtype, M, N, K)
KERNELS = {"tc_f16_f32": ("float16", "float32", 16, 16, 16), "tc_f16_f16": ("float16", "float16", 16, 16, 16),
           "tc_bf16_f32": ("uint16", "float32", 16, 16, 16), "tc_tf32_f32": ("float32", "float32", 16, 16, 8),
           "tc_f64_f64": ("float64", "float64", 8, 8, 4), "tc_s8_s32": ("int8", "int32", 16, 16, 16),
           "lat_f16_f32": ("float16", "float32", 16, 16, 16), "lat_f64_f64": ("float64", "float64", 8, 8, 4)}


def _crt_include() -> list[str]:
    """CuPy's headers (the nvidia-cuda-runtime wheel's) have mma.h but not the crt/mma.h it includes: point NVRTC
    at the toolkit's crt/ folder alone (a folder holding only a link to it), where the toolkit has one."""
    import os
    import tempfile

    toolkit = Path(os.environ.get("CUDA_HOME") or "/usr/local/cuda") / "include"
    if not (toolkit / "crt" / "mma.h").is_file():
        return []
    folder = Path(tempfile.mkdtemp(prefix="crt_"))
    (folder / "crt").symlink_to(toolkit / "crt")
    return [f"-I{folder}"]


def main(argv) -> int:
    from perfmodel.gpu.env import require_cupy

    cp = require_cupy()
    out = Path(argv[0])
    module = cp.RawModule(code=(HERE / "tensor_rate.cu").read_text(), options=("-std=c++17", *_crt_include()))
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms = int(props["multiProcessorCount"])
    result = { "iters": ITERS, "device": props["name"].decode(), "sm_count": sms,
              "clock_khz": int(props["clockRate"]), "kernels": {}}
    for name, (dt, odt, m, n, k) in KERNELS.items():
        fn = module.get_function(name)
        a = cp.ones(m * k, dtype=dt) if dt != "uint16" else cp.full(m * k, 0x3F80, dtype=cp.uint16)
        b = cp.ones(k * n, dtype=dt) if dt != "uint16" else cp.full(k * n, 0x3F80, dtype=cp.uint16)
        rows = {}
        acc = 1 if name.startswith("lat_") else ACC
        configs = ((1, 1),) if acc == 1 else ((1, 1), (2, 1), (4, 1), (8, 1), (16, 1), (8, 4))
        for warps_per_block, blocks_per_sm in configs:
            blocks = sms * blocks_per_sm
            o = cp.zeros(blocks * warps_per_block * m * n, dtype=odt)
            cyc = cp.zeros(blocks, dtype=cp.int64)
            samples, times = [], []
            for rep in range(6):
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                fn((blocks,), (32 * warps_per_block,), (a, b, o, np.int32(ITERS), cyc))
                stop.record()
                stop.synchronize()
                if rep == 0:
                    continue                                   # warm-up
                times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
                samples.append(float(cp.median(cyc.astype(cp.float64)).get()))
            flops_per_block = warps_per_block * acc * ITERS * 2 * m * n * k
            cycles = statistics.median(samples)
            per_clock = blocks_per_sm * flops_per_block / cycles
            key = f"{warps_per_block * blocks_per_sm}_warps_per_sm_{warps_per_block}_per_block"
            rows[key] = {"blocks_per_sm": blocks_per_sm, "flops_per_clock_per_sm": per_clock,
                         "cycles_per_mma_per_warp": cycles / (acc * ITERS), "block_cycles_median": cycles,
                         "kernel_seconds_median": statistics.median(times),
                         "tflops": blocks * flops_per_block / statistics.median(times) / 1e12}
            print(f"{name:12s} {key:32s} {per_clock:8.1f} flops/clk/SM  {rows[key]['tflops']:7.1f} TFLOPS  "
                  f"{cycles / (acc * ITERS):6.2f} cycles per mma per warp")
        result["kernels"][name] = {"m": m, "n": n, "k": k, "accumulators_per_warp": acc, "runs": rows,
                                   "best_flops_per_clock_per_sm": max(r["flops_per_clock_per_sm"]
                                                                      for r in rows.values() if r["blocks_per_sm"] == 1)}
    out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
