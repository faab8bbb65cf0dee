"""Exact occupancy: how many blocks of a kernel fit on one SM, and which resource stops more from fitting.

The rules are NVIDIA's ``cuda_occupancy.h`` (CUDA 7.0's for CC 1.x/2.x, CUDA 13's for 3.x+; ``docs/devices.md``
names the sources), with every architectural property read from the device profile, never from
``if cc == ...``:

- warps per block ``W = ceil(T / warp_size)``, allocated as ``Wa = ceil(W, warp_allocation_granularity)``
  (2 on CC 1.x, 1 after); the warp-slot limit is ``floor(max_warps_per_sm / Wa)``.
- registers, ``register_allocation: block`` (CC 1.x): ``ceil(Wa * warp_size * R, unit)`` per block, limit
  ``floor(registers_per_sm / that)``.
- registers, ``register_allocation: warp`` (2.x+): ``rpw = ceil(R * warp_size, unit(R))`` per warp; the SM's
  registers are split into ``register_sub_partitions`` and a warp's registers live in one sub-partition:
  limit ``floor(floor(registers_per_sm / P / rpw) * P / Wa)``. A block must also fit the per-block register
  file with its warps rounded up to ``P`` (NVIDIA's "hardware check").
- shared memory: ``alloc = ceil(S + reserved_shared_memory_per_block, shared_memory_allocation_unit)``; the
  SM's shared memory is the chosen carveout, or when that is too small for one block, the smallest carveout
  that fits (``shared_memory_carveout_fallback: smallest``, Volta+) or the largest (``max``, before Volta).
- blocks: ``max_blocks_per_sm``.

A resource the kernel does not use (0 registers, 0 bytes of shared memory) allows ``max_blocks_per_sm`` blocks
and is never named a limiter. Impossible launches raise :class:`~perfmodel.errors.OccupancyError`.
"""
from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field

from perfmodel.devices import Device, load_device
from perfmodel.errors import OccupancyError
from perfmodel.units import UnitError, format_bytes, parse_int_quantity

LIMIT_KEYS = ("warps", "registers", "shared_memory", "blocks")


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


@dataclass(frozen=True)
class Waves:
    """How a grid of ``grid_blocks`` fills the GPU: ``blocks_per_wave = blocks_per_sm x sm_count``."""

    grid_blocks: int
    blocks_per_wave: int
    waves: float  # grid_blocks / blocks_per_wave
    full_waves: int
    tail_blocks: int  # blocks in the last, partial wave (0 if the grid is a whole number of waves)
    wave_count: int  # ceil(waves): waves the hardware actually runs
    tail_fraction: float  # tail_blocks / blocks_per_wave
    efficiency: float  # waves / wave_count: share of the SM-slots used over the whole grid

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Occupancy:
    device_id: str
    threads_per_block: int
    registers_per_thread: int
    shared_memory_per_block: int  # as given (static + dynamic; on CC 1.x the analyzer adds params + 16 B)
    warps_per_block: int
    warps_allocated_per_block: int
    registers_per_block: int  # allocated
    shared_memory_per_block_allocated: int  # incl. the reserved bytes, rounded to the allocation unit
    shared_memory_per_sm: int  # the carveout used
    requires_shared_memory_optin: bool
    limits: dict[str, int]
    blocks_per_sm: int
    limiters: list[str]
    warps_per_sm: int
    threads_per_sm: int
    max_warps_per_sm: int
    occupancy: float
    sm_count: int
    waves: Waves | None = None
    carveout_requested: int | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "device": self.device_id,
            "threads_per_block": self.threads_per_block,
            "registers_per_thread": self.registers_per_thread,
            "shared_memory_per_block": self.shared_memory_per_block,
            "warps_per_block": self.warps_per_block,
            "warps_allocated_per_block": self.warps_allocated_per_block,
            "registers_per_block": self.registers_per_block,
            "shared_memory_per_block_allocated": self.shared_memory_per_block_allocated,
            "shared_memory_per_sm": self.shared_memory_per_sm,
            "requires_shared_memory_optin": self.requires_shared_memory_optin,
            "blocks_per_sm": self.blocks_per_sm,
            "warps_per_sm": self.warps_per_sm,
            "threads_per_sm": self.threads_per_sm,
            "max_warps_per_sm": self.max_warps_per_sm,
            "occupancy": self.occupancy,
            "limiters": list(self.limiters),
            "limits": dict(self.limits),
            "waves": self.waves.to_json() if self.waves else None,
            "notes": list(self.notes),
        }


def kernel_shared_memory_bytes(device: Device, static_bytes: int, dynamic_bytes: int = 0,
                               param_bytes: int = 0) -> int:
    """Shared memory one block of a kernel takes, as the occupancy calculator wants it.

    On devices that pass kernel arguments in shared memory (CC 1.x: PG3.2 section 5.2.3 and B.1.4.1) that is
    static + parameters + the system area (16 B) + dynamic, ptxas' ``N+16 bytes smem`` plus the dynamic bytes
    (the g80 profile's NVF-16KB and NVF-16B sources); elsewhere static + dynamic."""
    total = static_bytes + dynamic_bytes
    if device.kernel_params_in_shared_memory:
        total += param_bytes + device.shared_memory_system_bytes
    return total


def _carveout_bytes(device: Device, carveout: int | str | None) -> int | None:
    """The requested shared-memory carveout in bytes (``None`` = the default, the largest), aligned up to one
    of the device's carveouts. ``carveout`` may be bytes or a percentage string such as ``"50%"``."""
    if carveout is None:
        return None
    if isinstance(carveout, str):
        text = carveout.strip()
        if text.endswith("%"):
            try:
                percent = float(text[:-1])
            except ValueError:
                raise OccupancyError(f"carveout {carveout!r}: expected a percentage such as '50%'") from None
            if not 0 <= percent <= 100:
                raise OccupancyError(f"carveout {carveout!r}: expected a percentage from 0% to 100%")
            wanted = int(percent * device.shared_memory_per_sm) // 100
        else:
            try:
                wanted = parse_int_quantity(text, "bytes")
            except UnitError as err:
                raise OccupancyError(f"carveout: {err}") from None
    else:
        wanted = int(carveout)
    for size in device.shared_memory_carveouts:
        if size >= wanted:
            return size
    raise OccupancyError(
        f"carveout {format_bytes(wanted)} is more than {device.id}'s {format_bytes(device.shared_memory_per_sm)} "
        f"of shared memory per SM (carveouts: {', '.join(format_bytes(c) for c in device.shared_memory_carveouts)})")


def occupancy(device: Device | str, threads_per_block: int, registers_per_thread: int,
              shared_memory_per_block: int, grid_blocks: int | None = None,
              carveout: int | str | None = None) -> Occupancy:
    """Blocks of ``threads_per_block`` threads using ``registers_per_thread`` registers and
    ``shared_memory_per_block`` bytes (static + dynamic) that one SM of ``device`` holds at once."""
    device = load_device(device)
    T, R, S = int(threads_per_block), int(registers_per_thread), int(shared_memory_per_block)
    if T <= 0:
        raise OccupancyError(f"threads per block must be positive, got {T}")
    if R < 0:
        raise OccupancyError(f"registers per thread must be 0 or more, got {R}")
    if S < 0:
        raise OccupancyError(f"shared memory per block must be 0 or more, got {S}")
    if T > device.max_threads_per_block:
        raise OccupancyError(f"{T} threads per block is more than {device.id}'s maximum of "
                             f"{device.max_threads_per_block} threads per block")
    if R > device.max_registers_per_thread:
        raise OccupancyError(f"{R} registers per thread is more than {device.id}'s maximum of "
                             f"{device.max_registers_per_thread} registers per thread")

    cap = device.max_blocks_per_sm
    warp_size = device.warp_size
    warps = -(-T // warp_size)
    warps_allocated = _round_up(warps, device.warp_allocation_granularity)
    notes: list[str] = []

    # ---- warps ----
    limit_warps = device.max_warps_per_sm // warps_allocated

    # ---- registers ----
    if device.register_allocation == "block":
        registers_allocated = _round_up(warps_allocated * warp_size * R, device.register_allocation_unit)
        registers_checked = registers_allocated
        limit_registers = device.registers_per_sm // registers_allocated if registers_allocated else cap
    else:
        unit = device.register_allocation_unit_overrides.get(R, device.register_allocation_unit)
        per_warp = _round_up(R * warp_size, unit)
        partitions = device.register_sub_partitions
        registers_allocated = per_warp * warps_allocated
        registers_checked = max(registers_allocated, per_warp * _round_up(warps_allocated, partitions))
        if per_warp:
            warps_per_partition = (device.registers_per_sm // partitions) // per_warp
            limit_registers = warps_per_partition * partitions // warps_allocated
        else:
            limit_registers = cap
    if registers_checked > device.max_registers_per_block:
        detail = "" if registers_checked == registers_allocated else (
            f" (its {warps_allocated} warps are allocated as {_round_up(warps_allocated, device.register_sub_partitions)}"
            f" across {device.register_sub_partitions} register sub-partitions)")
        raise OccupancyError(
            f"{T} threads x {R} registers needs {registers_checked} registers per block{detail}, more than "
            f"{device.id}'s maximum of {device.max_registers_per_block} registers per block; use fewer threads "
            "per block or fewer registers per thread")

    # ---- shared memory ----
    reserved = device.reserved_shared_memory_per_block
    smem_allocated = _round_up(S + reserved, device.shared_memory_allocation_unit)
    per_block_limit = device.shared_memory_per_block_optin
    if S > per_block_limit or smem_allocated > per_block_limit + reserved:
        raise OccupancyError(
            f"{format_bytes(S)} ({S} B) of shared memory per block is more than {device.id}'s maximum of "
            f"{format_bytes(per_block_limit)} ({per_block_limit} B) per block"
            + ("" if per_block_limit == device.shared_memory_per_block else " (with the opt-in)"))
    requires_optin = S > device.shared_memory_per_block
    if requires_optin:
        notes.append(f"more than the default {format_bytes(device.shared_memory_per_block)} per block: the kernel "
                     "must opt in (cudaFuncAttributeMaxDynamicSharedMemorySize)")
    requested = _carveout_bytes(device, carveout)
    smem_per_sm = device.shared_memory_per_sm if requested is None else requested
    if smem_per_sm < smem_allocated:
        if device.shared_memory_carveout_fallback == "smallest":
            smem_per_sm = next(c for c in device.shared_memory_carveouts if c >= smem_allocated)
        else:
            smem_per_sm = device.shared_memory_per_sm
        if requested is not None:
            notes.append(f"carveout {format_bytes(requested)} is too small for one block; the driver uses "
                         f"{format_bytes(smem_per_sm)}")
    limit_smem = smem_per_sm // smem_allocated if smem_allocated else cap

    limits = {"warps": limit_warps, "registers": limit_registers, "shared_memory": limit_smem, "blocks": cap}
    used = {"warps": True, "registers": registers_allocated > 0, "shared_memory": smem_allocated > 0,
            "blocks": True}
    limits = {k: (v if used[k] else cap) for k, v in limits.items()}
    blocks = min(limits.values())
    if blocks <= 0:  # the checks above should make this unreachable; never report "0 blocks"
        zero = ", ".join(k for k, v in limits.items() if v <= 0)
        raise OccupancyError(f"{T} threads, {R} registers, {S} B shared memory: no block fits on a {device.id} SM "
                             f"(limited by {zero})")
    limiters = [k for k in LIMIT_KEYS if used[k] and limits[k] == blocks]

    warps_per_sm = blocks * warps
    waves = None
    if grid_blocks is not None:
        waves = compute_waves(int(grid_blocks), blocks * device.sm_count)
    return Occupancy(
        device_id=device.id, threads_per_block=T, registers_per_thread=R, shared_memory_per_block=S,
        warps_per_block=warps, warps_allocated_per_block=warps_allocated, registers_per_block=registers_allocated,
        shared_memory_per_block_allocated=smem_allocated, shared_memory_per_sm=smem_per_sm,
        requires_shared_memory_optin=requires_optin, limits=limits, blocks_per_sm=blocks, limiters=limiters,
        warps_per_sm=warps_per_sm, threads_per_sm=blocks * T, max_warps_per_sm=device.max_warps_per_sm,
        occupancy=warps_per_sm / device.max_warps_per_sm, sm_count=device.sm_count, waves=waves,
        carveout_requested=requested, notes=notes)


def compute_waves(grid_blocks: int, blocks_per_wave: int) -> Waves:
    if grid_blocks <= 0:
        raise OccupancyError(f"grid blocks must be positive, got {grid_blocks}")
    full, tail = divmod(grid_blocks, blocks_per_wave)
    count = full + (1 if tail else 0)
    waves = grid_blocks / blocks_per_wave
    return Waves(grid_blocks=grid_blocks, blocks_per_wave=blocks_per_wave, waves=waves, full_waves=full,
                 tail_blocks=tail, wave_count=count, tail_fraction=tail / blocks_per_wave,
                 efficiency=waves / count)


# ---------------------------------------------------------------------------------------------------------
# "Impact of varying": the three charts of NVIDIA's occupancy calculator, as data.

@dataclass(frozen=True)
class SweepPoint:
    x: int
    blocks_per_sm: int  # 0 where the launch is impossible (then ``error`` says why)
    warps_per_sm: int
    occupancy: float
    error: str | None = None

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _point(x: int, device: Device, T: int, R: int, S: int, carveout) -> SweepPoint:
    try:
        occ = occupancy(device, T, R, S, carveout=carveout)
    except OccupancyError as err:
        return SweepPoint(x, 0, 0, 0.0, str(err))
    return SweepPoint(x, occ.blocks_per_sm, occ.warps_per_sm, occ.occupancy)


def _xs(start: int, stop: int, step: int, include: int | None) -> list[int]:
    xs = set(range(start, stop + 1, step))
    if include is not None:
        xs.add(int(include))
    return sorted(xs)


def sweep_threads(device: Device | str, registers_per_thread: int, shared_memory_per_block: int,
                  step: int | None = None, carveout=None, include: int | None = None) -> list[SweepPoint]:
    """Block size from one warp to the device maximum in steps of a warp (plus ``include``, the current x)."""
    device = load_device(device)
    step = step or device.warp_size
    return [_point(t, device, t, registers_per_thread, shared_memory_per_block, carveout)
            for t in _xs(step, device.max_threads_per_block, step, include)]


def sweep_registers(device: Device | str, threads_per_block: int, shared_memory_per_block: int,
                    step: int = 1, carveout=None, include: int | None = None) -> list[SweepPoint]:
    """Registers per thread from 1 to the device maximum."""
    device = load_device(device)
    return [_point(r, device, threads_per_block, r, shared_memory_per_block, carveout)
            for r in _xs(1, device.max_registers_per_thread, step, include)]


def sweep_shared_memory(device: Device | str, threads_per_block: int, registers_per_thread: int,
                        step: int | None = None, carveout=None, include: int | None = None) -> list[SweepPoint]:
    """Shared memory per block from 0 to the per-block (opt-in) maximum in allocation-unit steps."""
    device = load_device(device)
    step = step or device.shared_memory_allocation_unit
    return [_point(s, device, threads_per_block, registers_per_thread, s, carveout)
            for s in _xs(0, device.shared_memory_per_block_optin, step, include)]




@dataclass(frozen=True)
class SweepRun:
    """Consecutive sweep points with the same result: ``x`` from ``start`` to ``end`` (inclusive)."""

    start: int
    end: int
    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float
    error: str | None = None

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def sweep_runs(points: list[SweepPoint]) -> list[SweepRun]:
    """Collapse a sweep into runs of equal (blocks, warps, possible or not): the compact form of a chart."""
    runs: list[SweepRun] = []
    for p in points:
        last = runs[-1] if runs else None
        if last and (last.blocks_per_sm, last.warps_per_sm, last.error is None) == (
                p.blocks_per_sm, p.warps_per_sm, p.error is None):
            runs[-1] = SweepRun(last.start, p.x, last.blocks_per_sm, last.warps_per_sm, last.occupancy, last.error)
        else:
            runs.append(SweepRun(p.x, p.x, p.blocks_per_sm, p.warps_per_sm, p.occupancy, p.error))
    return runs


# ``perfmodel.occupancy(...)`` is public API, but importing this module makes ``perfmodel.occupancy`` the module
# itself (the import system sets the package attribute), hiding the lazy function export in
# ``perfmodel/__init__.py``. Calling the module calls :func:`occupancy`, so both spellings keep working whatever
# was imported first.
class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs) -> Occupancy:
        return occupancy(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
