"""The bottleneck model: per-resource time bounds, latency hiding by Little's law, wave quantisation.

Each resource of the GPU has a time bound: the time it would need to do the kernel's work at its peak rate
(``work / rate``). The kernel cannot run faster than its busiest resource, and it cannot run faster than the
latency of its memory requests allows given how many requests the resident warps keep in flight. So

    t_kernel = max( max_r t_r x sm_imbalance , t_latency ) + launch_overhead

where ``r`` runs over the throughput resources below, ``sm_imbalance`` is the busiest SM's share of the blocks
relative to the average (wave quantisation of a throughput-bound kernel), and ``t_latency`` counts whole waves
(the tail of a last partial wave of latency-bound blocks takes as long as a full one). Each resource's
"speed of light" is ``t_r / t_kernel``: the fraction of the run that unit is busy at its peak rate, as in
Nsight Compute's SOL section. The resource with the largest bound is ``bound``.

Resources (every rate from the device profile's ``throughput`` section or its documented default):

* ``fp32``: FP32 lane operations (add, mul, fma = 1 each, div = 4, special functions on the SFU) over
  ``peak_fp32_flops / 2`` lane-ops per second.
* ``issue``: warp instructions over ``warp_instructions_per_clock x sm_count x clock``, and no faster than the
  resident warps can issue when each waits ``dependent_issue_latency_cycles`` between dependent instructions.
* ``lsu``: warp-level memory instructions (global, shared, constant, local) over ``lsu_requests_per_clock``.
* ``shared``: shared-memory wavefronts, each ``32 x 4 B / shared_bandwidth_bytes_per_clock`` clocks.
* ``l1``: global-load data wavefronts through L1 (a request moves at most ``l1 bytes per clock`` a clock).
* ``l2``: the sectors that miss L1 (and every store sector) over ``l2_bandwidth_bytes_per_s``.
* ``dram``: the estimated DRAM bytes (``perfmodel.model.traffic``) over the achievable DRAM bandwidth (the
  profile's measured streaming-copy figure where there is one, else the datasheet figure).
* ``latency`` (an adjustment, reported beside the resources): each warp keeps ``mlp`` global loads in flight
  (its loads between two barriers, at most ``max_loads_in_flight_per_warp``) and waits the average latency of
  where they are served from (L1 hit, L2 hit, DRAM); a wave of resident blocks therefore takes
  ``loads_per_warp / mlp x latency``. That is Little's law: requests in flight per SM
  (``warps_per_sm x mlp``) = throughput x latency.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from perfmodel.model.traffic import SECTOR_BYTES, Traffic

# Fallbacks for rates a profile cannot give (each documented in docs/model.md)
DEFAULT_DEPENDENT_ISSUE_LATENCY_CYCLES = 4.0   # Volta+ FFMA latency; older profiles set their own
DEFAULT_MAX_LOADS_IN_FLIGHT_PER_WARP = 8.0     # nvcc unrolls loops 4x by default: 2 loads x 4 iterations
DEFAULT_LAUNCH_OVERHEAD_S = 3e-6               # launch-to-completion floor of an empty kernel (estimate)
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
    sfu_ops_per_s: float
    warp_instructions_per_clock: float  # per SM
    dependent_issue_latency_cycles: float
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
        sfu_ops_per_s=(sfu if sfu > 0 else 1.0) * sm_count * clock,
        warp_instructions_per_clock=_throughput(
            device, "warp_instructions_per_clock", min(device.warp_schedulers_per_sm, device.fp32_lanes_per_sm / warp)),
        dependent_issue_latency_cycles=_throughput(device, "dependent_issue_latency_cycles",
                                                   DEFAULT_DEPENDENT_ISSUE_LATENCY_CYCLES),
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
        l1_latency_cycles=_throughput(device, "l1_hit_latency_cycles", shared_latency),
        l2_latency_cycles=_throughput(device, "l2_latency_cycles", 200.0),
        global_latency_cycles=_throughput(device, "global_latency_cycles", 400.0),
        max_loads_in_flight_per_warp=_throughput(device, "max_loads_in_flight_per_warp",
                                                 DEFAULT_MAX_LOADS_IN_FLIGHT_PER_WARP),
        launch_overhead_s=_measured(device, "launch_overhead_s") or _throughput(
            device, "launch_overhead_s", DEFAULT_LAUNCH_OVERHEAD_S),
    )


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

def fp32_time(fp_ops: dict, rates: DeviceRates) -> float:
    """FP32 lane operations at peak. Division is ~4 lane ops (reciprocal + Newton step); special functions run
    on the SFUs and are counted by :func:`sfu_time`."""
    lane_ops = (fp_ops.get("add", 0) + fp_ops.get("mul", 0) + fp_ops.get("fma", 0) + 4 * fp_ops.get("div", 0))
    return lane_ops / rates.fp32_lane_ops_per_s


def sfu_time(fp_ops: dict, rates: DeviceRates) -> float:
    return (fp_ops.get("special", 0) + fp_ops.get("div", 0)) / rates.sfu_ops_per_s


def issue_time(warp_instructions: float, warps_per_sm: float, active_sms: int, rates: DeviceRates) -> float:
    """Instruction issue: the schedulers' peak, or what the resident warps sustain when each must wait the
    dependent-issue latency between instructions (no ILP assumed) - whichever is lower."""
    per_clock = rates.warp_instructions_per_clock
    if warps_per_sm > 0:
        per_clock = min(per_clock, warps_per_sm / rates.dependent_issue_latency_cycles)
    return warp_instructions / (per_clock * active_sms * rates.clock_hz)


def lsu_time(memory_requests: float, active_sms: int, rates: DeviceRates) -> float:
    return memory_requests / (rates.lsu_requests_per_clock * active_sms * rates.clock_hz)


def shared_time(wavefronts: float, active_sms: int, rates: DeviceRates) -> float:
    """A wavefront moves one 32 x 4-byte bank row; the SM moves ``shared_bytes_per_clock`` a clock."""
    clocks_per_wavefront = 128.0 / rates.shared_bytes_per_clock
    return wavefronts * clocks_per_wavefront / (active_sms * rates.clock_hz)


def l1_wavefronts(load_requests: float, load_sectors: float, rates: DeviceRates) -> float:
    """Data-stage wavefronts of global loads: a request takes at least one, and one per
    ``l1_bytes_per_clock`` of sectors it moves."""
    sectors_per_wavefront = max(1.0, rates.l1_bytes_per_clock / SECTOR_BYTES)
    return max(load_requests, load_sectors / sectors_per_wavefront)


def l1_time(load_requests: float, load_sectors: float, active_sms: int, rates: DeviceRates) -> float:
    return l1_wavefronts(load_requests, load_sectors, rates) / (active_sms * rates.clock_hz)


def l2_time(traffic: Traffic, rates: DeviceRates) -> float:
    return traffic.l2_bytes / rates.l2_bandwidth_bytes_per_s


def dram_time(traffic: Traffic, rates: DeviceRates) -> float:
    return traffic.dram_bytes / rates.dram_bandwidth_bytes_per_s


def average_load_latency_cycles(traffic: Traffic, rates: DeviceRates) -> float:
    """Latency of a global load, weighted by where its sectors are served from."""
    l1 = traffic.l1_hit_rate
    l2 = (1.0 - l1) * traffic.l2_hit_rate
    dram = max(0.0, 1.0 - l1 - l2)
    return l1 * rates.l1_latency_cycles + l2 * rates.l2_latency_cycles + dram * rates.global_latency_cycles


def loads_in_flight_per_warp(load_requests_per_warp: float, barrier_intervals_per_warp: float,
                             rates: DeviceRates) -> float:
    """Memory-level parallelism of one warp: its loads between two barriers (they can all be issued before the
    first result is needed), at most ``max_loads_in_flight_per_warp``, at least 1."""
    per_interval = load_requests_per_warp / max(1.0, barrier_intervals_per_warp)
    return max(1.0, min(rates.max_loads_in_flight_per_warp, per_interval))


def latency_time(load_requests_per_warp: float, mlp: float, latency_cycles: float, waves: float,
                 rates: DeviceRates) -> float:
    """Little's law per wave: each warp waits ``latency`` once per ``mlp`` loads; a partial last wave costs a
    whole wave."""
    if load_requests_per_warp <= 0:
        return 0.0
    per_wave = load_requests_per_warp / mlp * latency_cycles / rates.clock_hz
    return per_wave * max(1, math.ceil(waves - 1e-9))


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
            "traffic": self.traffic.to_json(),
            "rates": self.rates.to_json(),
            "notes": list(self.notes),
        }


RESOURCE_LABELS = {
    "fp32": "FP32 pipe",
    "sfu": "SFU (special functions)",
    "issue": "instruction issue",
    "lsu": "load/store unit requests",
    "shared": "shared-memory wavefronts",
    "l1": "L1 data wavefronts",
    "l2": "L2 bandwidth",
    "dram": "DRAM bandwidth",
    "latency": "memory latency (Little's law)",
}


def bottleneck_model(counts: dict, *, rates: DeviceRates, traffic: Traffic, total_blocks: int,
                     warps_per_sm: float, blocks_per_sm: int, warps_per_block: int) -> BottleneckResult:
    """Predict the kernel time from the simulator's counts (``Counts.to_json()`` layout)."""
    g = counts.get("global", {})
    s = counts.get("shared", {})
    c = counts.get("constant", {})
    local = counts.get("local", {})
    fp_ops = counts.get("fp_ops", {})
    warps = max(1.0, float(counts.get("warps", 0) or total_blocks * warps_per_block))

    active_sms = max(1, min(rates.sm_count, total_blocks))
    imbalance = sm_imbalance(total_blocks, rates.sm_count)
    slots = max(1, blocks_per_sm) * rates.sm_count
    waves = total_blocks / slots if slots else 0.0

    memory_requests = (g.get("load_requests", 0) + g.get("store_requests", 0) + g.get("atomics", 0)
                       + s.get("load_requests", 0) + s.get("store_requests", 0)
                       + c.get("load_requests", 0) + (local.get("loads", 0) + local.get("stores", 0)) / 32.0)
    times = {
        "fp32": (fp32_time(fp_ops, rates), float(counts.get("flops", 0)), "flop"),
        "sfu": (sfu_time(fp_ops, rates), float(fp_ops.get("special", 0) + fp_ops.get("div", 0)), "op"),
        "issue": (issue_time(counts.get("warp_instructions", 0), warps_per_sm, active_sms, rates),
                  float(counts.get("warp_instructions", 0)), "warp instr"),
        "lsu": (lsu_time(memory_requests, active_sms, rates), float(memory_requests), "request"),
        "shared": (shared_time(s.get("load_wavefronts", 0) + s.get("store_wavefronts", 0), active_sms, rates),
                   float(s.get("load_wavefronts", 0) + s.get("store_wavefronts", 0)), "wavefront"),
        "l1": (l1_time(g.get("load_requests", 0), g.get("load_sectors", 0), active_sms, rates),
               l1_wavefronts(g.get("load_requests", 0), g.get("load_sectors", 0), rates), "wavefront"),
        "l2": (l2_time(traffic, rates), traffic.l2_bytes, "B"),
        "dram": (dram_time(traffic, rates), traffic.dram_bytes, "B"),
    }
    sm_local = {"fp32", "sfu", "issue", "lsu", "shared", "l1"}
    bounded = {name: (t * imbalance if name in sm_local else t) for name, (t, _, _) in times.items()}

    load_requests = float(g.get("load_requests", 0))
    requests_per_warp = load_requests / warps
    barriers_per_warp = _barriers_per_warp(counts, warps, total_blocks, warps_per_block)
    mlp = loads_in_flight_per_warp(requests_per_warp, barriers_per_warp + 1.0, rates)
    latency_cycles = average_load_latency_cycles(traffic, rates)
    t_latency = latency_time(requests_per_warp, mlp, latency_cycles, waves, rates)
    bounded["latency"] = t_latency

    kernel_time = max(bounded.values()) if bounded else 0.0
    bound = max(bounded, key=bounded.get) if kernel_time > 0 else "launch overhead"
    predicted = kernel_time + rates.launch_overhead_s
    resources = []
    for name, t in bounded.items():
        work, unit = (times[name][1], times[name][2]) if name in times else (requests_per_warp, "loads/warp")
        resources.append(Resource(name=name, label=RESOURCE_LABELS[name], time_s=t, work=work, unit=unit,
                                  share_of_peak=(t / predicted) if predicted > 0 else 0.0))
    notes = []
    if active_sms < rates.sm_count:
        notes.append(f"only {active_sms} of {rates.sm_count} SMs have a block")
    if rates.launch_overhead_s > kernel_time:
        notes.append("the launch overhead dominates: the kernel does too little work to measure its resources")
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
        launch_overhead_s=rates.launch_overhead_s,
        traffic=traffic,
        rates=rates,
        notes=notes,
    )


def _barriers_per_warp(counts: dict, warps: float, total_blocks: int, warps_per_block: int) -> float:
    """``__syncthreads()`` each warp passes. The simulator counts barriers per block (one per block per
    barrier executed); convert to per warp-lifetime intervals."""
    barriers = float(counts.get("barriers", 0) or 0)
    if barriers <= 0 or total_blocks <= 0:
        return 0.0
    scope = counts.get("barrier_scope", "block")
    if scope == "warp":
        return barriers / warps
    return barriers / total_blocks
