"""Measure the two roofs of the model on the GPU at hand: DRAM bandwidth (streaming copy) and FP32 peak (FMA
chain). CUDA events, median of repeats after warm-up. Writes one JSON document.

    python validation/microbench/run_microbench.py OUT.json [--device-index 0]
"""
from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))


def timed(cp, fn, repeats: int, warmup: int = 3) -> list[float]:
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(warmup):
        fn()
    cp.cuda.runtime.deviceSynchronize()
    samples = []
    for _ in range(repeats):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
    return samples


class ClockSampler:
    """Samples nvidia-smi's SM clock while a benchmark runs (informative; never changes any setting)."""

    def __init__(self, device_index: int):
        self.device_index, self.samples, self._stop = device_index, [], threading.Event()

    def __enter__(self):
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self):
        import subprocess

        while not self._stop.is_set():
            try:
                out = subprocess.run(["nvidia-smi", f"--id={self.device_index}", "--query-gpu=clocks.sm,clocks.mem",
                                      "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=5)
                sm, mem = (float(v) for v in out.stdout.strip().split(","))
                self.samples.append((sm, mem))
            except Exception:  # noqa: BLE001 - sampling is best-effort
                pass
            self._stop.wait(0.2)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)

    def summary(self):
        if not self.samples:
            return None
        sm = [s[0] for s in self.samples]
        mem = [s[1] for s in self.samples]
        return {"sm_mhz_median": statistics.median(sm), "sm_mhz_min": min(sm), "sm_mhz_max": max(sm),
                "mem_mhz_median": statistics.median(mem), "samples": len(sm)}


def stream(cp, device_index: int, sm_count: int) -> dict:
    module = cp.RawModule(code=(HERE / "stream_copy.cu").read_text(), options=("-std=c++17",))
    n_bytes = 1 << 30  # 1 GiB per buffer
    n = n_bytes // 4
    src = cp.random.random(n, dtype=cp.float32)
    dst = cp.empty_like(src)
    sink = cp.zeros(1, dtype=cp.float32)
    results = {}
    configs = [
        ("copy_float4", (sm_count * 8,), (256,), (src, dst, np.int64(n // 4)), 2 * n_bytes),
        ("copy_float4", (sm_count * 32,), (256,), (src, dst, np.int64(n // 4)), 2 * n_bytes),
        ("copy_float", (sm_count * 8,), (256,), (src, dst, np.int64(n)), 2 * n_bytes),
        ("copy_float", (sm_count * 32,), (256,), (src, dst, np.int64(n)), 2 * n_bytes),
        ("copy_float_1x", ((n + 255) // 256,), (256,), (src, dst, np.int64(n)), 2 * n_bytes),
        ("read_float4", (sm_count * 32,), (256,), (src, sink, np.int64(n // 4)), n_bytes),
    ]
    for name, grid, block, args, moved in configs:
        kernel = module.get_function(name)
        samples = timed(cp, lambda: kernel(grid, block, args), repeats=30)
        med = statistics.median(samples)
        key = f"{name}_g{grid[0]}_b{block[0]}"
        results[key] = {"kernel": name, "grid": grid[0], "block": block[0], "bytes_moved": moved,
                        "median_s": med, "min_s": min(samples), "max_s": max(samples), "repeats": len(samples),
                        "gb_per_s_median": moved / med / 1e9, "gb_per_s_best": moved / min(samples) / 1e9}
    assert bool(cp.all(dst == src)), "copy kernels wrote wrong data"
    del src, dst
    return results


def fma(cp, sm_count: int) -> dict:
    module = cp.RawModule(code=(HERE / "fma_chain.cu").read_text(), options=("-std=c++17", "-DCHAINS=8"))
    kernel = module.get_function("fma_chain")
    threads, blocks_per_sm, waves, iterations, chains = 256, 8, 4, 4096, 8
    blocks = sm_count * blocks_per_sm * waves
    out = cp.empty(blocks * threads, dtype=cp.float32)
    clock_out = cp.zeros(2, dtype=cp.int64)
    args = (out, np.float32(0.999), np.float32(0.001), np.int32(iterations), clock_out)
    samples = timed(cp, lambda: kernel((blocks,), (threads,), args), repeats=30)
    flops = blocks * threads * iterations * chains * 2
    cycles, ns = (int(v) for v in cp.asnumpy(clock_out))
    med = statistics.median(samples)
    return {"kernel": "fma_chain", "chains": chains, "iterations": iterations, "grid": blocks, "block": threads,
            "flops": flops, "median_s": med, "min_s": min(samples), "repeats": len(samples),
            "gflops_median": flops / med / 1e9, "gflops_best": flops / min(samples) / 1e9,
            "thread0_cycles": cycles, "thread0_ns": ns,
            "sm_clock_hz_from_clock64": cycles / ns * 1e9 if ns else None,
            "registers": module.get_function("fma_chain").attributes.get("num_regs")}


def main(argv: list[str]) -> int:
    out_path = Path(argv[0])
    device_index = int(argv[argv.index("--device-index") + 1]) if "--device-index" in argv else 0
    from perfmodel.gpu.env import clocks, device_properties, require_cupy, versions

    cp = require_cupy()
    with cp.cuda.Device(device_index):
        props = device_properties(cp, device_index)
        sm_count = int(props["multiProcessorCount"])
        result = {"device": props, "versions": versions(cp), "clocks_before": clocks(device_index),
                  "measured_at_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        with ClockSampler(device_index) as sampler:
            result["stream"] = stream(cp, device_index, sm_count)
        result["stream_clocks"] = sampler.summary()
        with ClockSampler(device_index) as sampler:
            result["fma"] = fma(cp, sm_count)
        result["fma_clocks"] = sampler.summary()
        result["clocks_after"] = clocks(device_index)
        copies = [v for v in result["stream"].values() if v["kernel"].startswith("copy_float4")]
        best = max(copies, key=lambda v: v["gb_per_s_median"])
        result["summary"] = {
            "dram_copy_gb_per_s": best["gb_per_s_median"], "dram_copy_config": f"{best['kernel']} grid "
            f"{best['grid']}x{best['block']}",
            "fp32_gflops": result["fma"]["gflops_median"],
            "sm_clock_hz_during_fma": result["fma"]["sm_clock_hz_from_clock64"],
        }
    out_path.write_text(json.dumps(result, indent=1))
    print(json.dumps(result["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
