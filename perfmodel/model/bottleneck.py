"""The bottleneck model: per-resource time bounds, a per-warp latency chain, wave quantisation, and an
overlap-aware combination of them.

Each unit of the GPU has a time bound: the time it needs for the kernel's work at its peak rate (``work /
rate``). Units that are views of one pipeline are grouped (max inside a group), and the groups are combined as

    t_kernel = (sum_g t_g^p)^(1/p)        (p = ``overlap_exponent``; p = inf is the pure max)
    t_predicted = t_kernel + launch_overhead

The groups and their resources (rates from the device profile's ``throughput`` section):

* ``issue``: ``fp32`` (FP32 lane operations at ``peak_fp32_flops / 2``), ``tensor`` (``wmma.mma`` flops at the
  profile's measured tensor-core rate per operand type), ``sfu`` (special functions, division)
  and ``issue`` (compiled warp instructions at ``warp_instructions_per_clock``: the executor's executed PTX
  weighted into SASS instructions with the compiled cubin's line table, ``counts.warp_instructions``).
* ``l1tex``: ``lsu`` (warp-level memory instructions at ``lsu_requests_per_clock``), ``shared`` (the L1/shared
  data stage: shared-memory wavefronts of 128 bytes at ``shared_bandwidth_bytes_per_clock`` plus the global
  requests' lines, one SRAM) and ``l1`` (L1 tag lookups: the 128-byte lines each global request touches, at
  ``l1_lines_per_clock``).
* ``l2``: sectors that miss L1, and every store sector, at ``l2_bandwidth_bytes_per_s``.
* ``dram``: the estimated DRAM bytes (``perfmodel.model.traffic``) at the achievable DRAM bandwidth (the
  profile's measured streaming-copy figure where there is one, else the datasheet).
* ``blocks``: the block scheduler, one launch per ``block_launch_cycles`` on each SM.
* ``latency`` (:mod:`perfmodel.model.chain`): the warps' own critical path. A warp's non-load instruction costs
  ``dependent_issue_latency_cycles`` per dependent step, shared by the instructions that can issue together (no
  less than ``independent_issue_cycles``); its global loads wait the L1 latency and, per round of loads in flight
  that misses L1, the L2 or DRAM latency; over the warps of the blocks that did any work (blocks whose threads all
  did nothing are left out of the chain, the SMs at work and the waves). Every wave of resident blocks runs that
  chain once; a partial last wave costs a whole wave. This is Little's law: the resident warps are the work in
  flight.

SM-local resources are scaled by the busiest SM's share of the blocks (``sm_imbalance``, wave quantisation
of a throughput-bound kernel). Each resource's "speed of light" is ``t_r / t_predicted``, the fraction of the
run the unit is busy at its peak, as in Nsight Compute's SOL section; the largest is ``bound``.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from perfmodel.model import calibration
from perfmodel.model.chain import (_barriers_per_warp, average_load_latency_cycles, bytes_in_flight_per_sm,  # noqa: F401
                                   chain_cycles_per_warp, dram_queue_cycles, fetch_wait_share,
                                   instruction_cycles, latency_chain_time, loads_in_flight_per_warp,
                                   miss_latency_cycles)
from perfmodel.model.traffic import SECTOR_BYTES, Traffic, cc1_traffic

# Fallback for a rate a profile cannot give (the calibrated ones are calibration.py's constants)
DEFAULT_L1_BYTES_PER_CLOCK = 128.0             # one 128-byte wavefront per clock per SM (4 sectors)


def _measured(device: Any, *keys: str) -> float | None:
    measured = getattr(device, "measured", None) or {}
    for key in keys:
        value = measured.get(key)
        if isinstance(value, dict):
            value = value.get("value")
        if isinstance(value, (int, float)) and value > 0:
            return float(value)
    return None


def _throughput(device: Any, name: str, default: float | None) -> float | None:
    section = getattr(device, "throughput", None)
    value = getattr(section, name, None) if section is not None else None
    return default if value is None else float(value)


@dataclass(frozen=True)
class DeviceRates:
    """Every device figure the bottleneck model reads, resolved (profile value, measured value or default)."""

    sm_count: int
    clock_hz: float
    warp_size: int
    fp32_lane_ops_per_s: float          # peak_fp32_flops / 2 (an FMA is 2 flops in one lane op)
    fp64_lane_ops_per_s: float          # fp64_lanes_per_sm x SMs x clock (0: no double precision)
    sfu_ops_per_s: float
    warp_instructions_per_clock: float  # per SM
    dependent_issue_latency_cycles: float
    independent_issue_cycles: float
    lsu_requests_per_clock: float       # per SM
    shared_bytes_per_clock: float       # per SM
    l1_bytes_per_clock: float           # per SM
    l1_bytes: float                     # L1 available to cache global loads, per SM
    l2_bytes: float
    l2_bandwidth_bytes_per_s: float
    dram_bandwidth_bytes_per_s: float   # achievable (measured where known)
    dram_bandwidth_source: str
    l1_latency_cycles: float
    l2_latency_cycles: float
    global_latency_cycles: float
    max_loads_in_flight_per_warp: float
    launch_overhead_s: float
    launch_overhead_warm_s: float        # the same floor when launches are timed back to back (--l2 warm)
    block_launch_cycles: float           # cycles between two block launches on one SM
    overlap_exponent: float              # p of the resource combination (inf = pure max)
    l1_lines_per_clock: float            # L1 tag-stage throughput, 128-byte lines per clock per SM
    global_memory_rule: str = "sectors"  # the device's coalescing rule (perfmodel/sim/coalesce.py)
    # DRAM latency under load (measured where known): ((threads per block, bytes in flight per SM, extra cycles), ...)
    dram_queue: tuple = ()
    # tensor cores: ((A/B operand type, wmma.mma flops per clock per SM), ...) where measured; () without
    tensor_flops_per_clock: tuple = ()
    fp16x2_lane_slots: float = 2.0      # FP32 lane slots of one packed-half instruction lane (device profile)

    def to_json(self) -> dict:
        return asdict(self)


def device_rates(device: Any, shared_memory_per_sm_used: float = 0.0) -> DeviceRates:
    """Resolve the rates of ``device`` (a ``perfmodel.devices.Device`` or a stand-in with the same attributes).

    ``shared_memory_per_sm_used`` is the shared memory the resident blocks take; on devices where L1 and shared
    memory are one SRAM (``l1_cache_bytes`` is then the combined size) only the rest caches global loads."""
    clock = float(device.clock_hz)
    sm_count = int(device.sm_count)
    warp = int(getattr(device, "warp_size", 32))
    shared_latency = _throughput(device, "shared_latency_cycles", 20.0)
    measured_dram = _measured(device, "dram_bandwidth_bytes_per_s", "dram_copy_bandwidth_bytes_per_s")
    l1_bytes = l1_bytes_for_global(device, shared_memory_per_sm_used)
    sfu = float(getattr(device, "sfu_per_sm", 0) or 0)
    return DeviceRates(
        sm_count=sm_count,
        clock_hz=clock,
        warp_size=warp,
        fp32_lane_ops_per_s=float(device.peak_fp32_flops) / 2.0,
        fp64_lane_ops_per_s=float(getattr(device, "fp64_lanes_per_sm", 0) or 0) * sm_count * clock,
        fp16x2_lane_slots=float(getattr(device, "fp16x2_lane_slots", 2.0) or 2.0),
        sfu_ops_per_s=(sfu if sfu > 0 else 1.0) * sm_count * clock,
        warp_instructions_per_clock=_throughput(
            device, "warp_instructions_per_clock", min(device.warp_schedulers_per_sm, device.fp32_lanes_per_sm / warp)),
        dependent_issue_latency_cycles=_throughput(device, "dependent_issue_latency_cycles",
                                                   calibration.DEPENDENT_ISSUE_LATENCY_CYCLES),
        independent_issue_cycles=_throughput(device, "independent_issue_cycles",
                                             calibration.INDEPENDENT_ISSUE_CYCLES),
        lsu_requests_per_clock=_throughput(device, "lsu_requests_per_clock", device.lsu_per_sm / warp),
        shared_bytes_per_clock=_throughput(
            device, "shared_bandwidth_bytes_per_clock",
            getattr(device, "shared_memory_banks", 32) * getattr(device, "shared_memory_bank_width_bytes", 4)),
        l1_bytes_per_clock=_throughput(device, "l1_bandwidth_bytes_per_clock", DEFAULT_L1_BYTES_PER_CLOCK),
        l1_bytes=l1_bytes,
        l2_bytes=float(getattr(device, "l2_cache_bytes", 0) or 0),
        l2_bandwidth_bytes_per_s=_measured(device, "l2_bandwidth_bytes_per_s") or _throughput(
            device, "l2_bandwidth_bytes_per_s", 2.0 * device.dram_bandwidth_bytes_per_s),
        dram_bandwidth_bytes_per_s=measured_dram or float(device.dram_bandwidth_bytes_per_s),
        dram_bandwidth_source="measured" if measured_dram else "datasheet",
        l1_latency_cycles=_measured(device, "l1_hit_latency_cycles") or _throughput(
            device, "l1_hit_latency_cycles", shared_latency),
        l2_latency_cycles=_measured(device, "l2_hit_latency_cycles") or _throughput(device, "l2_latency_cycles", 200.0),
        global_latency_cycles=_measured(device, "dram_latency_cycles") or _throughput(
            device, "global_latency_cycles", 400.0),
        max_loads_in_flight_per_warp=_throughput(device, "max_loads_in_flight_per_warp",
                                                 calibration.MAX_LOADS_IN_FLIGHT_PER_WARP),
        launch_overhead_s=_measured(device, "launch_overhead_s") or _throughput(
            device, "launch_overhead_s", calibration.LAUNCH_OVERHEAD_S),
        launch_overhead_warm_s=_measured(device, "launch_overhead_warm_s") or calibration.LAUNCH_OVERHEAD_WARM_S,
        l1_lines_per_clock=_throughput(device, "l1_lines_per_clock", calibration.L1_LINES_PER_CLOCK),
        block_launch_cycles=_throughput(device, "block_launch_cycles", calibration.BLOCK_LAUNCH_CYCLES),
        overlap_exponent=_throughput(device, "overlap_exponent", calibration.OVERLAP_EXPONENT),
        global_memory_rule=str(getattr(device, "global_memory_rule", "sectors") or "sectors"),
        dram_queue=_dram_queue(device, clock),
        tensor_flops_per_clock=_tensor_rates(device),
    )


def _tensor_rates(device: Any) -> tuple:
    """The profile's ``measured.tensor_flops_per_clock_per_sm`` (operand type -> wmma.mma flops per clock per SM,
    validation/microbench/tensor_rate.py) as sorted pairs; () without one."""
    entry = (getattr(device, "measured", None) or {}).get("tensor_flops_per_clock_per_sm")
    table = entry.get("value") if isinstance(entry, dict) else None
    if not isinstance(table, dict):
        return ()
    return tuple(sorted((str(k), float(v)) for k, v in table.items() if isinstance(v, (int, float)) and v > 0))


def _dram_queue(device: Any, clock_hz: float) -> tuple:
    """The profile's measured ``dram_latency_under_load`` as (threads per block, bytes in flight per SM, cycles the
    latency grows over the lightest case of the smallest block size) per measured block size; () without one."""
    table = (getattr(device, "measured", None) or {}).get("dram_latency_under_load")
    if not isinstance(table, dict):
        return ()
    xs = list(table.get("bytes_in_flight_per_sm") or [])
    series = {int(k): v for k, v in (table.get("latency_ns") or {}).items()}
    if not xs or not series:
        return ()
    smallest = series[min(series)]
    base = next(v for v in smallest if v is not None)
    out = []
    for threads, values in sorted(series.items()):
        points = [(float(x), max(0.0, float(v) - base) * 1e-9 * clock_hz) for x, v in zip(xs, values) if v is not None]
        out.append((threads, tuple(x for x, _ in points), tuple(c for _, c in points)))
    return tuple(out)


def l1_bytes_for_global(device: Any, shared_memory_per_sm_used: float) -> float:
    """L1 bytes per SM left to cache global loads.

    Where L1 and shared memory are one SRAM split by a carveout (more than one ``shared_memory_carveouts``
    entry), the SRAM is ``l1_cache_bytes`` (the L1 beside the largest carveout) + ``shared_memory_per_sm``.
    Devices whose ``shared_memory_carveout_fallback`` is ``smallest`` (Volta and later: the driver sizes the
    carveout per kernel) keep the smallest carveout that holds the resident blocks' shared memory and give the
    rest to L1; the others (Fermi, Kepler) keep their default, largest, carveout."""
    l1 = float(getattr(device, "l1_cache_bytes", 0) or 0)
    carveouts = list(getattr(device, "shared_memory_carveouts", ()) or ())
    if len(carveouts) <= 1 or getattr(device, "shared_memory_carveout_fallback", "max") != "smallest":
        return l1
    sram = l1 + float(device.shared_memory_per_sm)
    chosen = next((c for c in carveouts if c >= shared_memory_per_sm_used), carveouts[-1])
    return max(l1, sram - float(chosen))


# ---------------------------------------------------------------------------------------------------------
# One small function per resource: work -> seconds at the peak rate.

def _active_share(rates: DeviceRates, active_sms: int | None) -> float:
    """The share of the device's SMs that have a block: the per-SM pipes of the others stay idle."""
    if active_sms is None or active_sms <= 0:
        return 1.0
    return min(1.0, active_sms / rates.sm_count)


def fp32_time(fp_ops: dict, rates: DeviceRates, fp64_ops: float = 0.0, active_sms: int | None = None) -> float:
    """FP32 lane operations at peak on the SMs that have a block (``active_sms``, default all). Division is ~4
    lane ops (reciprocal + Newton step); special functions run on the SFUs and are counted by :func:`sfu_time`;
    double-precision operations (``fp64_ops``, part of ``fp_ops``) run on the FP64 units, :func:`fp64_time`. A
    packed-half lane (``fp_ops["packed"]``: HFMA2, two of the kinds' results) takes ``fp16x2_lane_slots`` lane
    slots, not the two its results count (1 on the H100/H200, measured; 2 by default)."""
    lane_ops = (fp_ops.get("add", 0) + fp_ops.get("mul", 0) + fp_ops.get("fma", 0) + 4 * fp_ops.get("div", 0))
    lane_ops -= float(fp_ops.get("packed", 0) or 0) * (2.0 - rates.fp16x2_lane_slots)
    return max(0.0, lane_ops - fp64_ops) / (rates.fp32_lane_ops_per_s * _active_share(rates, active_sms))


def fp64_time(fp64_ops: float, rates: DeviceRates, active_sms: int | None = None) -> float:
    """Double-precision lane operations (add, mul, fma, div each one) on the FP64 units of the SMs that have a
    block: ``fp64_lanes_per_sm`` results per clock per SM, NVIDIA's arithmetic-throughput table (64 on the H100 and
    A100, 2 on the GeForce and L4 parts: 1/64 of FP32). A device without FP64 units gets the FP32 rate / 64."""
    if fp64_ops <= 0:
        return 0.0
    rate = rates.fp64_lane_ops_per_s if rates.fp64_lane_ops_per_s > 0 else rates.fp32_lane_ops_per_s / 64.0
    return fp64_ops / (rate * _active_share(rates, active_sms))


def sfu_time(fp_ops: dict, rates: DeviceRates, active_sms: int | None = None) -> float:
    return (fp_ops.get("special", 0) + fp_ops.get("div", 0)) / (rates.sfu_ops_per_s * _active_share(rates, active_sms))


def tensor_time(tensor_flops: dict, rates: DeviceRates, active_sms: int | None = None) -> tuple[float, list[str]]:
    """wmma.mma flops on the tensor cores of the SMs that have a block: each operand type's flops at its measured
    rate (the device profile's ``measured.tensor_flops_per_clock_per_sm``, what ``wmma.mma`` sustains per SM and
    clock). Returns the time and the operand types the profile has no rate for (their work is not bounded)."""
    rate = dict(rates.tensor_flops_per_clock)
    seconds, missing = 0.0, []
    for t, flops in sorted((tensor_flops or {}).items()):
        if not flops:
            continue
        r = rate.get(t)
        if r is None:
            missing.append(t)
            continue
        seconds += float(flops) / (r * rates.sm_count * rates.clock_hz * _active_share(rates, active_sms))
    return seconds, missing


def issue_time(warp_instructions: float, active_sms: int, rates: DeviceRates) -> float:
    """Instruction issue at the schedulers' peak (``warp_instructions_per_clock`` per SM). What a warp's own
    dependence chain allows is the ``latency`` bound (:func:`latency_chain_time`)."""
    return warp_instructions / (rates.warp_instructions_per_clock * active_sms * rates.clock_hz)


def lsu_time(memory_requests: float, active_sms: int, rates: DeviceRates) -> float:
    return memory_requests / (rates.lsu_requests_per_clock * active_sms * rates.clock_hz)


def shared_time(wavefronts: float, active_sms: int, rates: DeviceRates) -> float:
    """A wavefront moves one 32 x 4-byte bank row; the SM moves ``shared_bytes_per_clock`` a clock."""
    clocks_per_wavefront = 128.0 / rates.shared_bytes_per_clock
    return wavefronts * clocks_per_wavefront / (active_sms * rates.clock_hz)


def data_stage(shared_wavefronts: float, lines: float, active_sms: int, rates: DeviceRates) -> tuple:
    """The L1TEX data stage, which shared memory and the L1 cache share (one SRAM, one wavefront a clock): a
    kernel's shared-memory wavefronts queue with the 128-byte lines of its global requests, so their times add.
    (time, work, unit); nothing for a kernel without shared-memory accesses, whose lines are the ``l1`` resource,
    and the shared wavefronts alone on a device whose global loads bypass L1.
    Fitted on the data (docs/model.md 2.3): with the shared-load counts as the cubin issues them, the sum gives the
    latency fit part's sum of squared log errors 0.776 against 1.109 for the two taken apart (max)."""
    if shared_wavefronts <= 0:
        return 0.0, 0.0, "wavefront"
    if rates.l1_bytes <= 0:
        lines = 0.0         # global loads do not go through an L1 (G80's CC 1.x, Kepler's L2-only loads)
    return (shared_time(shared_wavefronts, active_sms, rates) + l1_time(lines, active_sms, rates),
            shared_wavefronts + lines, "wavefront")


def l1_wavefronts(load_requests: float, load_sectors: float, rates: DeviceRates) -> float:
    """Data-stage wavefronts of global loads: a request takes at least one, and one per
    ``l1_bytes_per_clock`` of sectors it moves."""
    sectors_per_wavefront = max(1.0, rates.l1_bytes_per_clock / SECTOR_BYTES)
    return max(load_requests, load_sectors / sectors_per_wavefront)


def l1_lines(g: dict, rates: DeviceRates) -> float:
    """128-byte lines the global requests look up in L1: the simulator's exact count (distinct lines per warp
    request, ``load_lines`` + ``store_lines``). Counts without line figures (hand-written, or from an older
    simulator) get the lower bound :func:`l1_wavefronts` (a request touches at least one line, and at least a line
    per 128 bytes of sectors)."""
    if "load_lines" in g or "store_lines" in g:
        return float(g.get("load_lines", 0) or 0) + float(g.get("store_lines", 0) or 0)
    return l1_wavefronts(g.get("load_requests", 0) + g.get("store_requests", 0),
                         g.get("load_sectors", 0) + g.get("store_sectors", 0), rates)


def l1_time(lines: float, active_sms: int, rates: DeviceRates) -> float:
    """The L1 tag stage: one 128-byte line of a global request per clock (``l1_lines_per_clock``)."""
    return lines / (rates.l1_lines_per_clock * active_sms * rates.clock_hz)


def l2_time(traffic: Traffic, rates: DeviceRates) -> float:
    """L2 traffic at the L2 bandwidth; 0 on a device without an L2 for global memory (G80), where the same
    bytes are the DRAM traffic and counted there."""
    if rates.l2_bytes <= 0:
        return 0.0
    return traffic.l2_bytes / rates.l2_bandwidth_bytes_per_s


def partial_store_time(g: dict, rates: DeviceRates) -> float:
    """Extra L2 time of stores that fill only part of their 32-byte sectors (a scattered store: 4 of 32 bytes):
    each such sector costs ``PARTIAL_STORE_SECTOR_COST`` more sector transfers at the L2 bandwidth, in proportion
    to the unwritten share of the store sectors (``1 - store_bytes / (32 x store_sectors)``)."""
    sectors = float(g.get("store_sectors", 0) or 0)
    if rates.l2_bytes <= 0 or sectors <= 0:
        return 0.0
    unused = min(1.0, max(0.0, 1.0 - float(g.get("store_bytes", 0) or 0) / (SECTOR_BYTES * sectors)))
    return sectors * unused * calibration.PARTIAL_STORE_SECTOR_COST * SECTOR_BYTES / rates.l2_bandwidth_bytes_per_s


def dram_time(traffic: Traffic, rates: DeviceRates) -> float:
    return traffic.dram_bytes / rates.dram_bandwidth_bytes_per_s


def sm_imbalance(total_blocks: int, sm_count: int) -> float:
    """The busiest SM's blocks over the average (blocks are uniform): ceil(B / N) / (B / N), and with fewer
    blocks than SMs the idle SMs are accounted for by ``active_sms`` instead."""
    if total_blocks <= 0:
        return 1.0
    if total_blocks < sm_count:
        return 1.0
    return math.ceil(total_blocks / sm_count) / (total_blocks / sm_count)


@dataclass(frozen=True)
class Resource:
    name: str
    label: str
    time_s: float
    work: float
    unit: str
    share_of_peak: float = 0.0        # t_r / t_kernel (speed of light)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class BottleneckResult:
    predicted_time_s: float
    kernel_time_s: float              # without the launch overhead
    bound: str
    resources: list[Resource]
    latency_time_s: float
    average_latency_cycles: float
    loads_in_flight_per_warp: float
    waves: float
    active_sms: int
    sm_imbalance: float
    launch_overhead_s: float
    traffic: Traffic
    rates: DeviceRates
    notes: list[str] = field(default_factory=list)
    bytes_in_flight_per_sm: float = 0.0    # past L1, by the resident warps' loads in flight
    dram_queue_cycles: float = 0.0         # what a DRAM round waits beyond the idle latency at that load
    instruction_cycles: float = 0.0        # a non-load instruction's cycles on the chain (its ILP credited)
    round_miss_factor: float = 1.0         # a load round's L1 misses over its loads' own (mlp.round_miss_factor)
    fetch_wait_share: float = 0.0          # L2 hits that wait for a DRAM fetch in flight (chain.fetch_wait_share)

    def resource(self, name: str) -> Resource:
        return next(r for r in self.resources if r.name == name)

    def to_json(self) -> dict:
        return {
            "predicted_time_s": self.predicted_time_s,
            "kernel_time_s": self.kernel_time_s,
            "bound": self.bound,
            "resources": {r.name: r.to_json() for r in self.resources},
            "latency_time_s": self.latency_time_s,
            "average_latency_cycles": self.average_latency_cycles,
            "loads_in_flight_per_warp": self.loads_in_flight_per_warp,
            "waves": self.waves,
            "active_sms": self.active_sms,
            "sm_imbalance": self.sm_imbalance,
            "launch_overhead_s": self.launch_overhead_s,
            "bytes_in_flight_per_sm": self.bytes_in_flight_per_sm,
            "dram_queue_cycles": self.dram_queue_cycles,
            "instruction_cycles": self.instruction_cycles,
            "round_miss_factor": self.round_miss_factor,
            "fetch_wait_share": self.fetch_wait_share,
            "traffic": self.traffic.to_json(),
            "rates": self.rates.to_json(),
            "notes": list(self.notes),
        }


RESOURCE_LABELS = {
    "fp32": "FP32 pipe",
    "fp64": "FP64 pipe",
    "sfu": "SFU (special functions)",
    "issue": "instruction issue",
    "lsu": "load/store unit requests",
    "shared": "L1/shared data stage (wavefronts + lines)",
    "l1": "L1 tag lookups (lines)",
    "l2": "L2 bandwidth",
    "dram": "DRAM bandwidth",
    "blocks": "block launch rate",
    "latency": "latency chain (per-warp critical path)",
    "launch": "launch overhead",
    "atomics": "atomics (same-line serialisation, atomic rate)",
    "tensor": "tensor cores (wmma.mma, mma.sync)",
}


def combine(times: dict[str, float], overlap_exponent: float) -> float:
    """Combine per-resource times into one kernel time.

    ``overlap_exponent`` p: (sum t_r^p)^(1/p) over the resource groups. p = infinity is the pure bottleneck
    (max) model, in which every other unit's work hides under the busiest one; a finite p charges part of the
    other units' work as not overlapped (warps that wait on one unit cannot feed another at that moment). The
    value is a calibrated constant of the device profile (see docs/model.md)."""
    values = [t for t in times.values() if t > 0]
    if not values:
        return 0.0
    top = max(values)
    if not math.isfinite(overlap_exponent):
        return top
    return top * sum((t / top) ** overlap_exponent for t in values) ** (1.0 / overlap_exponent)


# Resources that are different views of one unit are combined by max before the overlap combination: the LSU
# instruction queue, shared-memory wavefronts and L1 tag lookups all go through the SM's L1/shared-memory
# pipeline; FP32, SFU and issue are the SM's instruction issue.
RESOURCE_GROUPS = {"fp32": "issue", "fp64": "issue", "sfu": "issue", "issue": "issue", "tensor": "issue",
                   "lsu": "l1tex", "shared": "l1tex",
                   "l1": "l1tex", "l2": "l2", "dram": "dram", "blocks": "blocks", "latency": "latency",
                   "atomics": "atomics"}


def atomics_time(g: dict, s: dict, active_sms: int, rates: DeviceRates) -> float:
    """Atomics beyond their requests (perfmodel/sim/atomic_count.py): the busiest 128-byte line's L2 transactions
    one after another, or every global atomic operation at the device's atomic rate, whichever is longer; plus the
    busiest SM's same-address shared-memory atomics. On the busy line, each distinct sector of a warp request is
    one transaction and each further operation on one address in the request another pass; a line whose every
    operation is on one address turns them over at the same-address rate of the operation's type (integer or
    floating point), a line of several addresses pays the address-switching sector cost. Constants: calibration.py
    (measured on an H100)."""
    def n(key: str) -> float:
        return float(g.get(key, 0) or 0)

    hot = (n("atomic_hot_line_sectors") * calibration.GLOBAL_ATOMIC_SECTOR_S
           + (n("atomic_hot_line_repeats_int") + n("atomic_hot_line_one_address_int"))
           * calibration.GLOBAL_ATOMIC_SAME_INT_S
           + (n("atomic_hot_line_repeats_float") + n("atomic_hot_line_one_address_float"))
           * calibration.GLOBAL_ATOMIC_SAME_FLOAT_S)
    spread = float(g.get("atomic_ops", 0) or 0) / calibration.GLOBAL_ATOMIC_OPS_PER_S
    same = min(float(s.get("atomic_same_address", 0) or 0), float(s.get("atomic_ops", 0) or 0))
    shared = same / max(1, active_sms) * calibration.SHARED_ATOMIC_CYCLES / rates.clock_hz
    return max(hot, spread) + shared


def launch_overhead(traffic: Traffic, rates: DeviceRates) -> float:
    """The launch-to-completion floor as CUDA events see it. Cold (the L2 flush just before the launch keeps the
    GPU busy, so the start event and the queued launch follow it at once): ``launch_overhead_s``. Warm (back-to-back
    launches, each timed from an idle GPU): the launch latency is inside the events, ``launch_overhead_warm_s``."""
    return rates.launch_overhead_warm_s if getattr(traffic, "l2_state", "cold") == "warm" else rates.launch_overhead_s


def block_launch_time(total_blocks: int, rates: DeviceRates) -> float:
    """The block scheduler starts one block per ``block_launch_cycles`` on each SM."""
    return math.ceil(total_blocks / rates.sm_count) * rates.block_launch_cycles / rates.clock_hz


def bottleneck_model(counts: dict, *, rates: DeviceRates, traffic: Traffic, total_blocks: int,
                     warps_per_sm: float, blocks_per_sm: int, warps_per_block: int,
                     loads_in_flight: float | None = None, idle_blocks: float = 0.0,
                     ilp: list | None = None, round_miss_factor: float | None = None,
                     idle_warps: float | None = None) -> BottleneckResult:
    """Predict the kernel time from the simulator's counts (``Counts.to_json()`` layout). ``loads_in_flight``: a
    warp's independent loads per basic block of the compiled code (perfmodel.model.mlp), where known.
    ``idle_blocks``: blocks whose threads all did no work (no flop, no memory access: a persistent kernel's blocks
    left without a tile); they do not dilute the warps' critical path nor count as SMs at work."""
    g = counts.get("global", {})
    traffic = cc1_traffic(traffic, g, rates.global_memory_rule)
    s = counts.get("shared", {})
    c = counts.get("constant", {})
    local = counts.get("local", {})
    fp_ops = counts.get("fp_ops", {})
    fp64 = float(counts.get("fp64_ops", 0) or 0)
    # the FP64 pipe's own instructions: a double division's Newton steps each take a slot (perfmodel.kernel
    # ._fp64_expansion); fp64_ops, one per PTX instruction, is what leaves the FP32 lanes' count
    fp64_pipe = max(fp64, float(counts.get("fp64_pipe_ops", 0) or 0))
    warps = max(1.0, float(counts.get("warps", 0) or total_blocks * warps_per_block))
    # the blocks that did work, and their warps (all of them unless whole blocks were idle); when no block did any
    # (no flop, no memory access: a kernel whose threads only test a condition), every block runs its few
    # instructions, spread over the GPU like any other launch
    idle = max(0.0, float(idle_blocks or 0.0))
    if idle >= total_blocks:
        idle = 0.0
    working_blocks = max(1.0, float(total_blocks) - idle)
    all_warps = warps
    warps = max(1.0, warps * working_blocks / max(1, total_blocks))
    if idle_warps is not None and 0 < float(idle_warps) < all_warps:
        # warps none of whose threads worked (the idle blocks' among them) leave the critical path to the others:
        # a block whose first warp alone loops waits for that warp, whatever its size
        warps = max(1.0, min(warps, all_warps - float(idle_warps)))
    blocks = min(total_blocks, math.ceil(working_blocks))

    active_sms = max(1, min(rates.sm_count, blocks))
    imbalance = sm_imbalance(blocks, rates.sm_count)
    slots = max(1, blocks_per_sm) * rates.sm_count
    waves = blocks / slots if slots else 0.0

    # warp-level instructions, an atomic's as well (an ATOM / RED is one request whatever its lanes; they were
    # counted per lane, so a counter every thread bumps looked bound by the load/store unit)
    memory_requests = (g.get("load_requests", 0) + g.get("store_requests", 0) + g.get("atomic_requests", 0)
                       + s.get("load_requests", 0) + s.get("store_requests", 0)
                       + c.get("load_requests", 0) + (local.get("loads", 0) + local.get("stores", 0)) / 32.0)
    # local memory's lines too: a warp's access of a word each is one 128-byte line (interleaved across lanes)
    l1_work = l1_lines(g, rates) + (float(local.get("load_bytes", 0) or 0) + float(local.get("store_bytes", 0) or 0)) / 128.0
    issued = float(counts.get("warp_instructions", 0))   # SASS-level (perfmodel.kernel._sass_weights)
    times = {
        "fp32": (fp32_time(fp_ops, rates, fp64, active_sms), float(counts.get("flops", 0)), "flop"),
        "fp64": (fp64_time(fp64_pipe, rates, active_sms), fp64_pipe, "op"),
        "sfu": (sfu_time(fp_ops, rates, active_sms), float(fp_ops.get("special", 0) + fp_ops.get("div", 0)), "op"),
        "issue": (issue_time(issued, active_sms, rates), issued, "warp instr"),
        "lsu": (lsu_time(memory_requests, active_sms, rates), float(memory_requests), "request"),
        "shared": data_stage(float(s.get("load_wavefronts", 0) + s.get("store_wavefronts", 0)), l1_work,
                             active_sms, rates),
        "l1": (l1_time(l1_work, active_sms, rates), l1_work, "line"),
        "l2": (l2_time(traffic, rates) + partial_store_time(g, rates), traffic.l2_bytes, "B"),
        "dram": (dram_time(traffic, rates), traffic.dram_bytes, "B"),
        "blocks": (block_launch_time(total_blocks, rates), float(total_blocks), "block"),
        "atomics": (atomics_time(g, s, active_sms, rates),
                    float(g.get("atomic_ops", 0) or 0) + float(s.get("atomic_ops", 0) or 0), "op"),
    }
    tensor_flops = (counts.get("tensor") or {}).get("flops") or {}
    untimed_tensor: list[str] = []
    if any(tensor_flops.values()):
        t_tensor, untimed_tensor = tensor_time(tensor_flops, rates, active_sms)
        tensor_total = float(sum(tensor_flops.values()))
        times["tensor"] = (t_tensor, tensor_total, "flop")
        times["fp32"] = (times["fp32"][0], times["fp32"][1] - tensor_total, "flop")
    sm_local = {"fp32", "fp64", "sfu", "issue", "lsu", "shared", "l1", "tensor"}
    bounded = {name: (t * imbalance if name in sm_local else t) for name, (t, _, _) in times.items()}

    # the latency chain: compiled instructions per warp x dependent-issue latency, plus DRAM round trips
    load_requests = float(g.get("load_requests", 0))
    requests_per_warp = load_requests / warps
    barriers_per_warp = _barriers_per_warp(counts, warps, blocks)
    mlp = loads_in_flight_per_warp(requests_per_warp, barriers_per_warp + 1.0, rates, loads_in_flight)
    in_flight = bytes_in_flight_per_sm(g, mlp, min(float(warps_per_sm), warps / active_sms), traffic)
    # the block size of the measured latency-under-load curve: the warps of a block that work
    queue = dram_queue_cycles(in_flight, min(float(warps_per_block), warps / blocks) * rates.warp_size, rates)
    per_instruction = instruction_cycles(ilp, rates)
    fetch_wait = fetch_wait_share(traffic.l2_state, waves)
    chain = chain_cycles_per_warp(issued / warps, requests_per_warp, mlp, traffic, rates, queue, per_instruction,
                                  round_miss_factor, fetch_wait)
    t_latency = latency_chain_time(chain, waves, rates)
    bounded["latency"] = t_latency
    latency_cycles = average_load_latency_cycles(traffic, rates, fetch_wait)

    groups: dict[str, float] = {}
    for name, t in bounded.items():
        group = RESOURCE_GROUPS[name]
        groups[group] = max(groups.get(group, 0.0), t)
    kernel_time = combine(groups, rates.overlap_exponent)
    launch = launch_overhead(traffic, rates)
    predicted = kernel_time + launch
    # the launch overhead is added, not combined; it is the bound of a kernel too small to load any unit more
    bounded["launch"] = launch
    bound = max(bounded, key=bounded.get)
    resources = []
    for name, t in bounded.items():
        if name in times:
            work, unit = times[name][1], times[name][2]
        elif name == "latency":
            work, unit = issued / warps, "instr/warp"
        else:
            work, unit = 1.0, "launch"
        resources.append(Resource(name=name, label=RESOURCE_LABELS[name], time_s=t, work=work, unit=unit,
                                  share_of_peak=(t / predicted) if predicted > 0 else 0.0))
    notes = []
    if active_sms < rates.sm_count:
        if blocks < total_blocks:
            notes.append(f"only {active_sms} of {rates.sm_count} SMs have a block with work ({total_blocks - blocks:,} "
                         f"of the {total_blocks:,} blocks do none)")
        else:
            notes.append(f"only {active_sms} of {rates.sm_count} SMs have a block")
    if launch > kernel_time:
        notes.append("the launch overhead dominates: the kernel does too little work to measure its resources")
    if untimed_tensor:
        notes.append(f"tensor-core work on {', '.join(untimed_tensor)} operands is not bounded: the device profile "
                     "has no measured wmma rate for them (measured.tensor_flops_per_clock_per_sm)")
    return BottleneckResult(
        predicted_time_s=predicted,
        kernel_time_s=kernel_time,
        bound=bound,
        resources=resources,
        latency_time_s=t_latency,
        average_latency_cycles=latency_cycles,
        loads_in_flight_per_warp=mlp,
        waves=waves,
        active_sms=active_sms,
        sm_imbalance=imbalance,
        launch_overhead_s=launch,
        traffic=traffic,
        rates=rates,
        notes=notes,
        bytes_in_flight_per_sm=in_flight,
        dram_queue_cycles=queue,
        fetch_wait_share=fetch_wait,
        instruction_cycles=per_instruction,
        round_miss_factor=max(1.0, round_miss_factor or 1.0),
    )

