"""Latency and launch microbenchmarks (validation/microbench/latency.cu): global-memory load latency per cache
level (pointer chase), kernel launch overhead and block-scheduling rate. Writes one JSON document.

    python validation/microbench/run_latency.py OUT.json
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
from run_microbench import timed  # noqa: E402


def chase(cp, module, footprint_bytes: int, hops: int, seed: int = 0) -> dict:
    """Cycles per hop, cold (L2 flushed before the run, a fresh part of the chain each time: the footprint's own
    level, DRAM for a footprint over the L2 size) and warm (the same hops again: the L1 or L2 they now sit in)."""
    n = footprint_bytes // 4
    # one element per 128-byte line, so every hop is a new line
    per_line = 32
    lines = max(2, n // per_line)
    rng = np.random.default_rng(seed)
    order = rng.permutation(lines).astype(np.uint64) * per_line
    chain = np.zeros(lines * per_line, dtype=np.uint32)
    chain[order] = np.roll(order, -1).astype(np.uint32)
    d_chain = cp.asarray(chain)
    cycles = cp.zeros(1, dtype=cp.int64)
    sink = cp.zeros(1, dtype=cp.uint32)
    flush = cp.empty(128 << 20, dtype=cp.uint8)
    kernel = module.get_function("pointer_chase")

    def run(start) -> float:
        kernel((1,), (1,), (d_chain, np.int32(hops), np.uint32(start), cycles, sink))
        cp.cuda.runtime.deviceSynchronize()
        return int(cycles.get()[0]) / hops

    cold, warm = [], []
    for k in range(5):
        start = order[(k * (hops + 64) * 7919) % lines]  # a different stretch of the cycle each time
        flush.data.memset(k + 1, flush.nbytes)
        cp.cuda.runtime.deviceSynchronize()
        cold.append(run(start))
        warm.append(run(start))
    del d_chain, flush
    return {"footprint_bytes": footprint_bytes, "hops": hops, "cycles_per_hop_cold_median": statistics.median(cold),
            "cycles_per_hop_warm_median": statistics.median(warm), "cold": cold, "warm": warm}


def main(argv):
    from perfmodel.gpu.env import require_cupy

    cp = require_cupy()
    out = Path(argv[0])
    module = cp.RawModule(code=(HERE / "latency.cu").read_text(), options=("-std=c++17",))
    result = {"pointer_chase": [chase(cp, module, size, hops) for size, hops in
                                ((16 << 10, 20000), (4 << 20, 20000), (32 << 20, 20000), (1 << 30, 10000))]}
    empty = module.get_function("empty")
    out_buf = cp.zeros(1, dtype=cp.int32)
    launch = timed(cp, lambda: empty((1,), (32,), (out_buf,)), repeats=200, warmup=20)
    result["empty_launch_1_block"] = {"median_s": statistics.median(launch), "min_s": min(launch)}
    # back-to-back empty launches between one event pair: the per-launch cost when launches queue up
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(1000):
        empty((1,), (32,), (out_buf,))
    stop.record()
    stop.synchronize()
    result["empty_launch_back_to_back_s"] = cp.cuda.get_elapsed_time(start, stop) * 1e-3 / 1000
    rates = {}
    for threads in (32, 64, 256, 1024):
        for blocks in (132 * 64, 132 * 1024):
            samples = timed(cp, lambda: empty((blocks,), (threads,), (out_buf,)), repeats=20)
            med = statistics.median(samples)
            rates[f"{blocks}x{threads}"] = {"blocks": blocks, "threads": threads, "median_s": med,
                                            "blocks_per_s": blocks / med, "ns_per_block_per_sm": med / blocks * 132 * 1e9}
    result["empty_grid"] = rates
    out.write_text(json.dumps(result, indent=1))
    for c in result["pointer_chase"]:
        print(f"chase {c['footprint_bytes']:>12,} B: cold {c['cycles_per_hop_cold_median']:.1f}, warm "
              f"{c['cycles_per_hop_warm_median']:.1f} cycles/hop")
    print("empty launch", result["empty_launch_1_block"], "back-to-back", result["empty_launch_back_to_back_s"])
    for k, v in rates.items():
        print(f"empty grid {k}: {v['median_s'] * 1e6:.1f} us, {v['ns_per_block_per_sm']:.1f} ns per block per SM")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
