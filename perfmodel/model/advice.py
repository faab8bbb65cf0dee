"""Short rule-based advice, in the manner of Nsight Compute's rules: what limits the kernel and what to try.

Each rule reads the analysis' figures and returns at most one sentence; the rules never print.
"""
from __future__ import annotations

import math


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def advise(analysis) -> list[str]:
    a = analysis
    counts = a.counts
    g = counts.get("global", {})
    s = counts.get("shared", {})
    occ = a.occupancy
    model = a.model
    dev = a.device
    tips: list[str] = []

    bound = model.bound
    bound_share = model.resource(bound).share_of_peak
    if bound in ("dram", "l2"):
        cgma = a.seed.cgma
        if cgma and cgma < 0.95 * a.seed.required_cgma:     # (a copy or a transpose does no flops to reuse data for)
            tips.append(f"Memory-bound ({model.resource(bound).label}, {_pct(bound_share)} of its peak): CGMA "
                        f"{cgma:.3g} is below the {a.seed.required_cgma:.3g} this device needs to reach its "
                        f"{a.seed.peak_basis} peak - reuse data from shared memory (tiling) or registers to raise it.")
        else:
            tips.append(f"Memory-bound ({model.resource(bound).label}, {_pct(bound_share)} of its peak).")
    elif bound in ("lsu", "l1"):
        fp = counts.get("fp_ops", {})
        fp_instructions = (fp.get("fma", 0) + fp.get("add", 0) + fp.get("mul", 0)) / 32
        requests = float(g.get("load_requests", 0) + g.get("store_requests", 0)
                         + s.get("load_requests", 0) + s.get("store_requests", 0))
        per = (f"; {requests / fp_instructions:.2g} memory instructions per floating-point instruction"
               if fp_instructions else "")
        tips.append(f"Load/store-pipeline bound ({model.resource(bound).label}, {_pct(bound_share)} of its peak"
                    f"{per}): fewer, wider memory instructions - each thread computing several outputs from "
                    "values held in registers (register tiling), vector loads (float4), coalesced rows.")
    elif bound == "shared":
        # one data stage serves shared memory and the L1 lines of global requests (model/bottleneck.data_stage):
        # say which of the two fills it (llama2.cu's attention: 93,330 of 96,435 units were global loads' lines)
        from perfmodel.model.bottleneck import l1_lines

        wavefronts = float(s.get("load_wavefronts", 0) or 0) + float(s.get("store_wavefronts", 0) or 0)
        lines = l1_lines(g, model.rates) if model.rates.l1_bytes > 0 else 0.0
        if lines > wavefronts:
            per = float(g.get("load_lines", 0) or 0) / max(1.0, float(g.get("load_requests", 0) or 0))
            tips.append(f"L1 data-stage bound ({_pct(bound_share)} of its bandwidth), mostly by the 128-byte lines "
                        f"of global requests ({lines:,.0f} lines against {wavefronts:,.0f} shared-memory "
                        f"wavefronts; {per:.1f} lines per load request): make consecutive threads (threadIdx.x) read "
                        "consecutive words, or stage strided reads through shared memory.")
        else:
            tips.append(f"Shared-memory bound ({_pct(bound_share)} of its bandwidth): compute more outputs per "
                        "thread from each shared value (register tiling) or use wider loads.")
    elif bound == "latency":
        rates = model.rates
        chain = (f"Latency-bound: each warp's own chain of dependent instructions (~"
                 f"{model.instruction_cycles or rates.dependent_issue_latency_cycles:.1f} cycles an instruction "
                 "with the independent ones overlapped, plus DRAM round trips of "
                 f"~{rates.global_latency_cycles:.0f} cycles) sets the time")
        # the warps an SM holds: the occupancy's, or fewer when the grid does not fill one wave
        warps_per_block = math.ceil(a.launch.threads_per_block / dev.warp_size)
        per_sm = math.ceil(a.launch.total_blocks / dev.sm_count)
        resident = min(occ.warps_per_sm, per_sm * warps_per_block)
        if resident < occ.warps_per_sm:
            tips.append(f"{chain}, with {resident} warps on a busy SM ({per_sm} block(s) of {warps_per_block} "
                        f"warps: the grid's {a.launch.total_blocks:,} block{'s' if a.launch.total_blocks != 1 else ''}"
                        f" over {dev.sm_count} SMs; the occupancy "
                        f"would allow {occ.warps_per_sm}) - more blocks, or more independent work per thread "
                        "(ILP), would overlap those waits.")
        else:
            tips.append(f"{chain}, {math.ceil(model.waves - 1e-9)} wave(s) of {occ.warps_per_sm} warps/SM - more "
                        f"warps per SM (occupancy is limited by {', '.join(occ.limiters)}), more blocks, or more "
                        "independent work per thread (ILP) would overlap those waits.")
    elif bound == "atomics":
        tips.append(f"Atomics-bound ({_pct(bound_share)}): the L2 serialises the operations on one line, one "
                    "address after another - spread them over more addresses and lines, or combine them first "
                    "(a per-block histogram in shared memory, a warp's sum with __shfl_xor_sync or "
                    "__reduce_add_sync, then one global atomic).")
    elif bound == "blocks":
        tips.append(f"Block-launch-bound: {a.launch.total_blocks:,} blocks of {a.launch.threads_per_block} "
                    "threads finish faster than the scheduler starts them - give each block more threads or "
                    "each thread more elements.")
    elif bound in ("fp32", "fp64", "issue", "sfu"):
        tips.append(f"Compute-bound ({model.resource(bound).label}, {_pct(bound_share)}): the arithmetic itself "
                    "is the limit; fewer instructions per flop (FMA, unrolling) are what is left.")
    elif bound == "launch":
        tip = "The kernel is too small to keep the GPU busy: its time is the launch overhead."
        if getattr(model.traffic, "l2_state", "cold") == "warm":
            from perfmodel.model.bottleneck import device_rates

            cold = device_rates(dev).launch_overhead_s
            tip += (f" Warm, that floor is {model.launch_overhead_s * 1e6:.3g} us, measured with an event pair around "
                    f"one launch from an idle GPU (the launch latency falls inside the events); --l2 cold, timed "
                    f"right after an L2 flush, gives {cold * 1e6:.3g} us (docs/model.md 2.11).")
        tips.append(tip)

    for kind, verb in (("load", "read"), ("store", "write")):
        requests = float(g.get(f"{kind}_requests", 0))
        sectors = float(g.get(f"{kind}_sectors", 0))
        accesses = float(g.get(f"{kind}s", 0))
        if requests > 0 and accesses > 0:
            per_request = sectors / requests
            # the bytes the active lanes ask for, packed: 4 sectors for 32 floats, 16 for 32 float4s (a 16-byte
            # access per lane is coalesced at 16 sectors)
            nbytes = float(g.get(f"{kind}_bytes", 0) or 0) or accesses * 4
            ideal = max(1.0, nbytes / requests / 32)
            if per_request > 2 * ideal and per_request > 4:
                tips.append(f"Uncoalesced global {kind}s: {per_request:.1f} sectors per request where "
                            f"{ideal:.1f} would do - make consecutive threads (threadIdx.x) {verb} consecutive "
                            "words.")
    # a wavefront serves 128 bytes (32 banks x 4 B): a warp's 64-bit accesses need 2, its 128-bit ones 4, with no
    # conflict at all (CUDA C++ Programming Guide, compute capability 5.x+ shared memory: 32 banks, 32 bits each a
    # clock); loads and stores apart, so that conflict-free stores do not hide conflicting loads
    worst = None
    for kind in ("load", "store"):
        requests = float(s.get(f"{kind}_requests", 0) or 0)
        if requests <= 0:
            continue
        per_request = float(s.get(f"{kind}_wavefronts", 0) or 0) / requests
        ideal = max(1.0, float(s.get(f"{kind}_bytes", 0) or 0) / requests / 128)
        if per_request > 1.5 * ideal and (worst is None or per_request / ideal > worst[1] / worst[2]):
            worst = (kind, per_request, ideal)
    if worst is not None:
        kind, per_request, ideal = worst
        tips.append(f"Shared-memory bank conflicts: {per_request:.1f} wavefronts per {kind} request where "
                    f"{ideal:.2g} would do{'' if ideal <= 1 else ' (a wavefront serves 128 B)'} - "
                    "pad the array or change the index so a warp's lanes hit distinct banks.")

    if occ.occupancy < 0.5 and bound in ("latency", "dram", "l2"):
        kind = "latency-bound" if bound == "latency" else "memory-bound"
        tips.append(f"Occupancy {_pct(occ.occupancy)} ({occ.blocks_per_sm} blocks/SM, limited by "
                    f"{', '.join(occ.limiters)}) is low for a {kind} kernel.")
    waves = model.waves
    if 0 < waves < 1 and model.active_sms < dev.sm_count:
        idle = round(float((a.sim.per_block_idle or {}).get("fully_idle_blocks", 0) or 0))
        if 0 < idle < a.launch.total_blocks:
            # (the launch's waves count every block; these, the ones that work: "waves 0.32" above, 0.02 here)
            tips.append(f"{a.launch.total_blocks - idle:,} of the grid's {a.launch.total_blocks:,} blocks do work "
                        f"(the others are idle): they fill {model.active_sms} of {dev.sm_count} SMs ({waves:.2g} "
                        "waves) - spread the work over the blocks the launch makes, or launch fewer, larger ones "
                        "no more than the work needs.")
        else:
            tips.append(f"The grid fills {model.active_sms} of {dev.sm_count} SMs ({waves:.2f} waves): launch more "
                        "blocks (smaller blocks or more work items) to use the whole GPU.")
    elif waves > 1 and waves < 4 and (waves - math.floor(waves)) > 0 and waves / math.ceil(waves) < 0.8:
        tips.append(f"Tail effect: {waves:.2f} waves - the last wave runs {_pct(waves - math.floor(waves))} full.")

    idle = counts.get("idle_threads", 0) or 0
    threads = counts.get("threads", 0) or 0
    if threads and idle / threads > 0.05:
        tips.append(f"{_pct(idle / threads)} of the threads do no work (bounds-check losers): size the grid to "
                    "the data or give each thread more elements.")
    simt = counts.get("simt_efficiency")
    if simt is not None and 0 < simt < 0.8:
        # lanes a block leaves empty in its last warp (a block of 16 threads: half of every warp) are no divergence
        tpb = a.launch.threads_per_block if hasattr(a, "launch") else 0
        fill = tpb / (math.ceil(tpb / dev.warp_size) * dev.warp_size) if tpb else 1.0
        if fill < 1.0 and simt >= 0.95 * fill:
            tips.append(f"SIMT efficiency {_pct(simt)}: blocks of {tpb} threads leave "
                        f"{math.ceil(tpb / dev.warp_size) * dev.warp_size - tpb} lanes of their last warp empty (no "
                        f"branch diverges); a multiple of {dev.warp_size} threads per block fills them.")
        elif fill < 1.0:
            tips.append(f"SIMT efficiency {_pct(simt)}: divergent branches leave lanes idle, and blocks of {tpb} "
                        f"threads fill at most {_pct(fill)} of their warps' lanes.")
        else:
            tips.append(f"SIMT efficiency {_pct(simt)}: divergent branches leave lanes idle.")
    if a.registers.source == "estimate":
        tips.append("Registers per thread are an estimate: pass --regs N (ptxas -v) or --regs auto for the "
                    "real figure; occupancy depends on it.")
    return tips
