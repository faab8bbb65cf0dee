"""Is a device profile plausible? Ranges, derived figures and the generation's norms.

:func:`check_device` returns ``(errors, warnings)`` for a :class:`~perfmodel.devices.Device` that passed the
schema:

- **errors** (the profile is rejected at load time and by ``perfmodel devices validate``, exit 2): a value that is
  not finite, is zero where only a positive value makes sense, or is outside the range any GPU could have
  (:data:`RANGES`: a 10-PFLOPS FP32 peak, a million SMs); derived figures that disagree by more than a factor of
  two - the peak FP32 rate against ``sm_count x fp32_lanes_per_sm x 2 x clock`` and, where the profile gives the
  memory interface, the DRAM bandwidth against ``2 x memory_clock_hz x memory_bus_width_bits / 8``.
- **warnings** (reported by ``devices validate``, never fatal): derived figures that disagree by more than 5%,
  and values that differ from the norm of the profile's compute capability (:mod:`perfmodel.generations`), which
  is either a cut-down product or a typo worth a second look.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from perfmodel import generations

if TYPE_CHECKING:
    from perfmodel.devices import Device

KiB, MiB, GiB = 1024, 1024**2, 1024**3

# field -> (smallest, largest, unit text). The bounds are far outside every GPU made so far (G80 to Blackwell)
# and catch unit slips (MHz written as Hz, KB as MB) and typos, not unusual products.
RANGES: dict[str, tuple[float, float, str]] = {
    "sm_count": (1, 4096, "SMs"),
    "fp32_lanes_per_sm": (1, 1024, "lanes"),
    "fp64_lanes_per_sm": (0, 1024, "lanes"),
    "sfu_per_sm": (0, 1024, "units"),
    "lsu_per_sm": (1, 1024, "units"),
    "warp_schedulers_per_sm": (1, 64, "schedulers"),
    "base_clock_hz": (50e6, 10e9, "Hz"),
    "boost_clock_hz": (50e6, 10e9, "Hz"),
    "warp_size": (1, 128, "threads"),
    "max_threads_per_block": (1, 16384, "threads"),
    "max_threads_per_sm": (1, 65536, "threads"),
    "max_warps_per_sm": (1, 2048, "warps"),
    "max_blocks_per_sm": (1, 1024, "blocks"),
    "registers_per_sm": (1, 16 * 1024 * 1024, "registers"),
    "max_registers_per_block": (1, 16 * 1024 * 1024, "registers"),
    "max_registers_per_thread": (1, 4096, "registers"),
    "register_allocation_unit": (1, 65536, "registers"),
    "warp_allocation_granularity": (1, 64, "warps"),
    "register_sub_partitions": (1, 64, "partitions"),
    "shared_memory_per_sm": (1, 64 * MiB, "B"),
    "shared_memory_per_block": (1, 64 * MiB, "B"),
    "shared_memory_per_block_optin": (1, 64 * MiB, "B"),
    "shared_memory_allocation_unit": (1, 1 * MiB, "B"),
    "reserved_shared_memory_per_block": (0, 1 * MiB, "B"),
    "shared_memory_system_bytes": (0, 1 * MiB, "B"),
    "shared_memory_banks": (1, 1024, "banks"),
    "shared_memory_bank_width_bytes": (1, 1024, "B"),
    "constant_memory_bytes": (0, 1 * GiB, "B"),
    "constant_cache_bytes": (0, 1 * GiB, "B"),
    "l1_cache_bytes": (0, 1 * GiB, "B"),
    "l2_cache_bytes": (0, 64 * GiB, "B"),
    "dram_bandwidth_bytes_per_s": (1e9, 1e15, "B/s"),  # 1 GB/s .. 1 PB/s; zero is no GPU memory at all
    "peak_fp32_flops": (1e9, 1e16, "FLOP/s"),  # 1 GFLOPS .. 10 PFLOPS of plain (non-tensor) FP32
    "peak_fp64_flops": (0, 1e16, "FLOP/s"),
    "memory_clock_hz": (10e6, 100e9, "Hz"),
    "memory_bus_width_bits": (8, 65536, "bits"),
    "throughput.shared_bandwidth_bytes_per_clock": (1e-3, 1e5, "B/clock"),
    "throughput.l2_bandwidth_bytes_per_s": (1e9, 1e16, "B/s"),
    "throughput.global_latency_cycles": (1, 1e5, "cycles"),
    "throughput.l2_latency_cycles": (1, 1e5, "cycles"),
    "throughput.shared_latency_cycles": (1, 1e4, "cycles"),
    "throughput.l1_hit_latency_cycles": (1, 1e4, "cycles"),
    "throughput.lsu_requests_per_clock": (1e-3, 1e3, "per clock"),
    "throughput.warp_instructions_per_clock": (1e-3, 1e3, "per clock"),
    "throughput.launch_overhead_s": (1e-9, 1.0, "s"),
}

ERROR_FACTOR = 2.0  # derived figures further apart than this are an error
WARN_FRACTION = 0.05  # ... further apart than this a warning


def _get(device: Device, field: str) -> Any:
    if field.startswith("throughput."):
        return getattr(device.throughput, field.split(".", 1)[1], None)
    return getattr(device, field, None)


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _compare(field: str, stated: float, derived: float, formula: str, errors: list[str],
             warnings: list[str]) -> None:
    if derived <= 0 or stated <= 0:
        return
    ratio = stated / derived
    text = f"field {field!r}: {_fmt(stated)} is {ratio:.3g} x {formula} = {_fmt(derived)}"
    if ratio > ERROR_FACTOR or ratio < 1 / ERROR_FACTOR:
        errors.append(f"{text}; expected them to agree (within a factor of {ERROR_FACTOR:g}: a unit slip or a "
                      "typo?)")
    elif abs(ratio - 1) > WARN_FRACTION:
        warnings.append(f"{text} ({abs(ratio - 1):.0%} apart)")


def check_device(device: Device) -> tuple[list[str], list[str]]:
    """``(errors, warnings)``, each a message that names the field (the caller adds the file)."""
    errors: list[str] = []
    warnings: list[str] = []
    for field, (low, high, unit) in RANGES.items():
        value = _get(device, field)
        if value is None or isinstance(value, bool):
            continue
        number = float(value)
        if not math.isfinite(number):
            errors.append(f"field {field!r}: expected a finite number, got {value!r}")
        elif number < low or number > high:
            what = "positive" if low > 0 else "non-negative"
            errors.append(f"field {field!r}: expected a {what} value from {_fmt(low)} to {_fmt(high)} {unit}, got "
                          f"{_fmt(number)} (a unit slip or a typo?)")
    for dims in ("max_block_dim", "max_grid_dim"):
        if any(v > 2**31 - 1 for v in getattr(device, dims)):
            errors.append(f"field {dims!r}: expected each dimension at most 2147483647, got "
                          f"{list(getattr(device, dims))}")
    if errors:  # derived figures from out-of-range inputs only repeat the problem
        return errors, warnings

    _compare("peak_fp32_flops", device.peak_fp32_flops,
             device.sm_count * device.fp32_lanes_per_sm * 2 * device.clock_hz,
             "sm_count x fp32_lanes_per_sm x 2 x clock", errors, warnings)
    if device.fp64_lanes_per_sm and device.peak_fp64_flops:
        computed = device.sm_count * device.fp64_lanes_per_sm * 2 * device.clock_hz
        ratio = device.peak_fp64_flops / computed
        if abs(ratio - 1) > WARN_FRACTION:  # never an error: FP64 tensor-core figures are quoted as "FP64"
            warnings.append(f"field 'peak_fp64_flops': {_fmt(device.peak_fp64_flops)} is {ratio:.3g} x sm_count x "
                            f"fp64_lanes_per_sm x 2 x clock = {_fmt(computed)}")
    if device.memory_clock_hz and device.memory_bus_width_bits:
        _compare("dram_bandwidth_bytes_per_s", device.dram_bandwidth_bytes_per_s,
                 2 * device.memory_clock_hz * device.memory_bus_width_bits / 8,
                 "2 x memory_clock_hz x memory_bus_width_bits / 8", errors, warnings)
    if device.boost_clock_hz is not None and device.boost_clock_hz < device.base_clock_hz:
        warnings.append(f"field 'boost_clock_hz': {_fmt(device.boost_clock_hz)} Hz is below base_clock_hz "
                        f"{_fmt(device.base_clock_hz)} Hz")

    row = generations.generation(device.compute_capability)
    if row is not None:
        for field in generations.NORM_FIELDS:
            if field not in row:
                continue
            norm, source = row[field]
            actual = getattr(device, field)
            if isinstance(actual, tuple):
                actual = list(actual)
            if actual != norm:
                warnings.append(f"field {field!r}: {actual!r} differs from the compute capability "
                                f"{device.compute_capability} norm {norm!r} ({source}; perfmodel/generations.py)")
    return errors, warnings
