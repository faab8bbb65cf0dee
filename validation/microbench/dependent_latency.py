"""Dependent-issue latency per instruction class on the GPU (validation/microbench/dependent_latency.cu): cycles
from an instruction's issue to the issue of the next one that reads its result, for one warp alone on its SM.
Writes one JSON document; the model's per-class latencies (perfmodel/model/calibration.py) are read off it.

    python validation/microbench/dependent_latency.py OUT.json
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
UNROLL = 64
TRIPS = 256
# kernel -> (argument kind, PTX steps per chain step)
KERNELS = {"lat_fp32": ("f32", 1), "lat_alu": ("s32", 1), "lat_alu_add": ("s32", 2), "lat_fp64": ("f64", 1),
           "lat_sfu": ("f32", 1), "lat_fp_div": ("f32", 1), "lat_int_div": ("s32", 1), "lat_cvt": ("f32", 2),
           "lat_shared_load": ("s32", 1), "lat_const_load": ("s32", 1), "lat_warp": ("s32", 1),
           "lat_setp": ("s32", 2), "lat_barrier": ("s32", 1)}


def main(argv) -> int:
    from perfmodel.gpu.env import require_cupy

    cp = require_cupy()
    out = Path(argv[0])
    module = cp.RawModule(code=(HERE / "dependent_latency.cu").read_text(), options=("-std=c++17",))
    table = (4 * ((np.arange(256) + 1) % 256)).astype(np.uint32)
    ptr, size = module.get_global("ctable").ptr, table.nbytes
    cp.cuda.runtime.memcpy(ptr, table.ctypes.data, size, cp.cuda.runtime.memcpyHostToDevice)
    cycles = cp.zeros(1, dtype=cp.int64)
    result = {"unroll": UNROLL, "trips": TRIPS, "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
              "classes": {}}
    for name, (kind, steps) in KERNELS.items():
        fn = module.get_function(name)
        if kind == "f32":
            a, b, sink = np.float32(0.999), np.float32(1e-3), cp.zeros(1024, dtype=cp.float32)
        elif kind == "f64":
            a, b, sink = np.float64(0.999), np.float64(1e-3), cp.zeros(1024, dtype=cp.float64)
        else:
            a, b, sink = np.int32(3), np.int32(5), cp.zeros(1024, dtype=cp.int32)
        for threads in ((32, 256) if name == "lat_barrier" else (32,)):
            samples = []
            for _ in range(7):
                fn((1,), (threads,), (np.int32(TRIPS), a, b, cycles, sink))
                cp.cuda.runtime.deviceSynchronize()
                samples.append(int(cycles.get()[0]) / (TRIPS * UNROLL * steps))
            key = name[4:] + ("" if threads == 32 else f"_{threads // 32}_warps")
            result["classes"][key] = {"cycles_per_step_median": statistics.median(samples), "samples": samples,
                                      "ptx_steps_per_chain_step": steps, "threads": threads}
            print(f"{key:22s} {statistics.median(samples):7.2f} cycles per step")
    out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent.parent))
    sys.exit(main(sys.argv[1:]))
