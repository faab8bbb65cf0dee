"""The latency resource of the bottleneck model: each warp's critical path, once per wave (docs/model.md 2.4).

A warp's non-load instructions cost the dependent-step latency shared by the instructions that can issue together
(:func:`instruction_cycles`), its global loads the L1 latency, and each round of loads in flight that misses L1 the
measured L2 or DRAM latency (:func:`miss_latency_cycles`), the DRAM share grown by the bytes the SMs keep in flight
(:func:`dram_queue_cycles`), and the L2 hits of a cold one-wave launch at the DRAM latency (:func:`fetch_wait_share`).
Every wave of resident blocks runs the chain once (:func:`latency_chain_time`): Little's law with the resident warps
as the work in flight.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from perfmodel.model.traffic import SECTOR_BYTES, Traffic

if TYPE_CHECKING:
    from perfmodel.model.bottleneck import DeviceRates


def dram_queue_cycles(bytes_in_flight_per_sm: float, threads_per_block: int, rates: DeviceRates) -> float:
    """Cycles a round of DRAM loads waits beyond the idle latency when the SMs keep ``bytes_in_flight_per_sm`` in
    flight (the device's measured latency under load, docs/model.md 2.4): the measured block size nearest to
    ``threads_per_block`` (in powers of two; a tie takes the smaller), interpolated linearly in log(bytes) and held
    at the end points; 0 on a device without the measurement."""
    if not rates.dram_queue or bytes_in_flight_per_sm <= 0:
        return 0.0
    threads = max(1, threads_per_block)
    _, xs, cycles = min(rates.dram_queue, key=lambda s: (abs(math.log2(threads / s[0])), s[0]))
    x = bytes_in_flight_per_sm
    if x <= xs[0]:
        return cycles[0]
    if x >= xs[-1]:
        return cycles[-1]
    for i in range(1, len(xs)):
        if x <= xs[i]:
            f = (math.log(x) - math.log(xs[i - 1])) / (math.log(xs[i]) - math.log(xs[i - 1]))
            return cycles[i - 1] + f * (cycles[i] - cycles[i - 1])
    return cycles[-1]


def fetch_wait_share(l2_state: str, waves: float) -> float:
    """Share of the model's L2 hits that wait for a DRAM fetch still in flight (docs/model.md 2.4, "Concurrent
    first touches"). The model's L2 hits are rereads by other blocks (L1 keeps a block's own). In a cold launch of
    one wave every block starts at once, so those rereads reach a line while the first reader's miss is still being
    served, and they wait for that fetch: measured on the H100 and H200, 640-700 cycles an iteration when 16-132
    blocks read the same fresh lines together, against 311-349 for an L2 hit
    (validation/microbench/hot_lines.py). Warm, the lines are resident: 0. Beyond one wave, later blocks start as
    earlier ones finish, and how far apart they then run is not measured: 0."""
    return 1.0 if l2_state == "cold" and 0.0 < waves <= 1.0 + 1e-9 else 0.0


def _l2_hit_latency(rates: DeviceRates, fetch_wait: float) -> float:
    """An L2 hit's latency when a share ``fetch_wait`` of the hits waits for a fetch in flight. Such a hit waits
    the idle DRAM round trip: the queueing under load is the fetching load's, and the readers that wait on it
    measured 640-700 cycles, the idle latency or a little less."""
    w = min(1.0, max(0.0, fetch_wait))
    return (1.0 - w) * rates.l2_latency_cycles + w * rates.global_latency_cycles


def average_load_latency_cycles(traffic: Traffic, rates: DeviceRates, fetch_wait: float = 0.0) -> float:
    """Latency of a global load, weighted by where its sectors are served from (``fetch_wait``:
    :func:`fetch_wait_share`)."""
    l1 = traffic.l1_hit_rate
    l2 = (1.0 - l1) * traffic.l2_hit_rate
    dram = max(0.0, 1.0 - l1 - l2)
    return l1 * rates.l1_latency_cycles + l2 * _l2_hit_latency(rates, fetch_wait) + dram * rates.global_latency_cycles


def loads_in_flight_per_warp(load_requests_per_warp: float, barrier_intervals_per_warp: float,
                             rates: DeviceRates, compiled: float | None = None) -> float:
    """Memory-level parallelism of one warp: the loads of one basic block of the compiled code that do not wait on
    each other (``compiled``, perfmodel.model.mlp: a warp stops at the first use of a load, so loads of later loop
    iterations wait unless the compiler unrolled the loop), and no more than its loads between two barriers, at
    most ``max_loads_in_flight_per_warp``, at least 1. Without the compiled figure (hand-written counts): the
    loads between two barriers."""
    per_interval = load_requests_per_warp / max(1.0, barrier_intervals_per_warp)
    if compiled is not None and compiled > 0:
        per_interval = min(per_interval, compiled)
    return max(1.0, min(rates.max_loads_in_flight_per_warp, per_interval))


def miss_latency_cycles(traffic: Traffic, rates: DeviceRates, queue_cycles: float = 0.0,
                        fetch_wait: float = 0.0) -> float:
    """Load-to-use latency of a round of loads that misses L1: the L2-hit latency for the share L2 serves, the
    DRAM latency for the rest (both the device's measured pointer-chase figures where it has them), plus, for the
    DRAM share, ``queue_cycles``: what the latency grows under the kernel's load (:func:`dram_queue_cycles`).
    ``fetch_wait`` (:func:`fetch_wait_share`): the share of the L2 hits that wait the DRAM round trip instead."""
    l2 = min(1.0, max(0.0, traffic.l2_hit_rate)) if rates.l2_bytes > 0 else 0.0
    return l2 * _l2_hit_latency(rates, fetch_wait) + (1.0 - l2) * (rates.global_latency_cycles + queue_cycles)


def instruction_cycles(ilp: list | None, rates: DeviceRates) -> float:
    """A non-load instruction's average cycles on a warp's critical path: a dependent step costs
    ``dependent_issue_latency_cycles``, shared by the ``ILP`` instructions that can issue together (its basic block's
    instructions over its longest dependence chain, perfmodel.model.mlp.ilp_by_line), and no instruction issues
    faster than ``independent_issue_cycles``. ``ilp``: [(share of the executed warp instructions, ILP)] per source
    line; without it (hand-written counts) every instruction is a dependent step."""
    latency = rates.dependent_issue_latency_cycles
    if not ilp:
        return latency
    floor = min(latency, rates.independent_issue_cycles)
    return sum(share * max(floor, latency / max(1.0, x)) for share, x in ilp) / max(1e-12, sum(s for s, _ in ilp))


ROUNDS_TOLERANCE = 0.01


def chain_cycles_per_warp(sass_per_warp: float, global_loads_per_warp: float, loads_in_flight: float,
                          traffic: Traffic, rates: DeviceRates, queue_cycles: float = 0.0,
                          cycles_per_instruction: float | None = None, round_miss_factor: float | None = None,
                          fetch_wait: float = 0.0) -> float:
    """Cycles of one warp's critical path when it has the SM to itself, by instruction class (issue 13 items 3
    and 5): a global load instruction waits the L1 load-to-use latency (``l1_latency_cycles``, measured) where the
    device caches global loads in L1, every other compiled instruction ``cycles_per_instruction``
    (:func:`instruction_cycles`; without it ``dependent_issue_latency_cycles``, every instruction a dependent
    step), and each round of
    ``loads_in_flight`` loads that miss L1 waits :func:`miss_latency_cycles` on top (the measured L2-hit or DRAM
    latency, by where L2 says the sectors come from). ``round_miss_factor`` (perfmodel.model.mlp.round_miss_factor):
    a round waits for its slowest load, so its loads' L1 miss share is raised to that of the line missing most among
    those it issues with. ``fetch_wait``: :func:`fetch_wait_share`."""
    l1 = min(1.0, max(0.0, traffic.l1_hit_rate))
    misses = global_loads_per_warp * min(1.0, (1.0 - l1) * max(1.0, round_miss_factor or 1.0))
    # whole rounds, a ratio of averages within 1% (at most a tenth of a round) over a whole number taken as it:
    # sampled counts' noise (2.003 rounds) tipped CloverLeaf's ideal_gas into one more DRAM round than its exact
    # run (186 against 105 us)
    x = misses / max(1.0, loads_in_flight)
    rounds = math.ceil(x - min(ROUNDS_TOLERANCE * x, 0.1) - 1e-9) if misses > 0 else 0
    load_cycles = rates.l1_latency_cycles if rates.l1_bytes > 0 else rates.dependent_issue_latency_cycles
    others = max(0.0, sass_per_warp - global_loads_per_warp)
    per_instruction = rates.dependent_issue_latency_cycles if cycles_per_instruction is None else cycles_per_instruction
    return (others * per_instruction + global_loads_per_warp * load_cycles
            + rounds * miss_latency_cycles(traffic, rates, queue_cycles, fetch_wait))


def bytes_in_flight_per_sm(g: dict, loads_in_flight: float, resident_warps_per_sm: float, traffic: Traffic) -> float:
    """Bytes one SM keeps in flight past L1: its resident warps (the occupancy, or the grid's warps per busy SM when
    fewer) x each warp's loads in flight x the sectors of a load request that miss L1."""
    requests = float(g.get("load_requests", 0) or 0)
    if requests <= 0:
        return 0.0
    sectors_per_request = float(g.get("load_sectors", 0) or 0) / requests
    miss = 1.0 - min(1.0, max(0.0, traffic.l1_hit_rate))
    return resident_warps_per_sm * loads_in_flight * sectors_per_request * SECTOR_BYTES * miss


def latency_chain_time(chain_cycles: float, waves: float, rates: DeviceRates) -> float:
    """A warp's own critical path (:func:`chain_cycles_per_warp`), once per wave: a partial last wave costs a whole
    wave (its warps run the same chain)."""
    return chain_cycles * max(1, math.ceil(waves - 1e-9)) / rates.clock_hz


def _barriers_per_warp(counts: dict, warps: float, total_blocks: int) -> float:
    """``__syncthreads()`` each warp passes: the simulator's ``barrier_warps`` (warp-level barrier instructions)
    per warp, or its per-block ``barriers`` count per block."""
    if counts.get("barrier_warps"):
        return float(counts["barrier_warps"]) / warps
    barriers = float(counts.get("barriers", 0) or 0)
    if barriers <= 0 or total_blocks <= 0:
        return 0.0
    return barriers / total_blocks
