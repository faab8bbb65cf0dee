"""What-if analyses: ``sweep`` one kernel over parameter values on one device, ``compare`` it across devices.

A point that cannot run (a block of 1,024 threads on G80, a tile that overflows shared memory, a size the
kernel rejects) is a row with ``valid: false`` and the reason - never a crash. The simulation of a parameter
point is shared by every device (``perfmodel.analysis.simulate_launch`` caches it).
"""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field

from perfmodel.errors import PerfmodelError

_RANGE = re.compile(r"^\s*(?P<start>[-+0-9.eE]+)\s*:\s*(?P<stop>[-+0-9.eE]+)\s*(?::\s*(?P<step>[x*+]?)\s*"
                    r"(?P<by>[-+0-9.eE]+))?\s*$")


def _number(text: str) -> int | float:
    """A finite int or float literal of a --vary value."""
    text = text.strip()
    try:
        return int(text, 0)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise PerfmodelError(f"--vary: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise PerfmodelError(f"--vary: {text!r} is not a finite number")
    return value


def parse_vary(item: str) -> tuple[str, list[int | float]]:
    """``NAME=v1,v2,...`` or ``NAME=start:stop[:step]`` (``:x2`` multiplies, ``:+16`` or ``:16`` adds);
    ``stop`` is included when the steps reach it exactly."""
    name, sep, spec = item.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier() or not spec.strip():
        raise PerfmodelError(f"--vary {item!r}: expected NAME=v1,v2,... or NAME=start:stop[:x2|:+step], "
                             "e.g. --vary TILE_WIDTH=4,8,16,32 or --vary Width=256:4096:x2")
    match = _RANGE.match(spec)
    if match:
        start, stop = _number(match["start"]), _number(match["stop"])
        op, by = match["step"] or "+", _number(match["by"]) if match["by"] else 1
        values: list[int | float] = []
        value = start
        if op in "x*":
            if by <= 1 or start <= 0:
                raise PerfmodelError(f"--vary {item!r}: a geometric range needs start > 0 and a factor > 1")
        elif by <= 0:
            raise PerfmodelError(f"--vary {item!r}: the step must be positive")
        if start > stop:
            raise PerfmodelError(f"--vary {item!r}: the range is empty (start {start} is greater than stop "
                                 f"{stop}); write the smaller value first")
        while value <= stop + 1e-9 * abs(stop):
            values.append(value)
            value = value * by if op in "x*" else value + by
            if len(values) > 1000:
                raise PerfmodelError(f"--vary {item!r}: more than 1,000 values")
        return name, values
    values = [_number(v) for v in spec.split(",") if v.strip()]
    if not values:
        raise PerfmodelError(f"--vary {item!r}: no values")
    duplicates = sorted({v for v in values if values.count(v) > 1})
    if duplicates:
        raise PerfmodelError(f"--vary {item!r}: {', '.join(map(str, duplicates))} given more than once")
    return name, values


@dataclass
class Point:
    params: dict                      # the varied params of this point (plus the device for compare)
    valid: bool
    reason: str = ""
    analysis: object | None = None     # perfmodel.analysis.Analysis when valid
    device: str = ""
    best: bool = False

    def row(self) -> dict:
        """The flat row of the sweep table / CSV."""
        row = {**self.params}
        if self.device:
            row["device"] = self.device
        row.update({"valid": self.valid, "reason": self.reason, "best": self.best})
        if self.analysis is None:
            return row
        doc = self.analysis
        occ = doc.occupancy
        row.update({
            "threads_per_block": doc.launch.threads_per_block,
            "shared_memory_per_block": doc.shared_memory_per_block,
            "registers_per_thread": doc.registers.per_thread,
            "registers_source": doc.registers.source,
            "blocks_per_sm": occ.blocks_per_sm,
            "warps_per_sm": occ.warps_per_sm,
            "occupancy": occ.occupancy,
            "limiter": ",".join(occ.limiters),
            "cgma": doc.cgma,
            "achievable_gflops": doc.achievable_gflops,
            "predicted_gflops": doc.predicted_gflops,
            "predicted_time_s": doc.predicted_time_s,
            "bound": doc.bound,
            "correct": doc.sim.correct,
            "sampled": doc.sim.sampled,
        })
        return row

    def to_json(self) -> dict:
        return self.row()


@dataclass
class SweepResult:
    kernel: str
    device: str | list[str]
    varied: list[str]
    points: list[Point] = field(default_factory=list)
    params: dict = field(default_factory=dict)

    @property
    def best(self) -> Point | None:
        return next((p for p in self.points if p.best), None)

    def to_json(self) -> dict:
        best = self.best
        return {"kernel": self.kernel, "device": self.device, "varied": self.varied, "params": self.params,
                "points": [p.row() for p in self.points],
                "best": None if best is None else best.row()}


def _mark_best(points: list[Point]) -> None:
    valid = [p for p in points if p.valid and p.analysis is not None]
    if not valid:
        return
    if any(p.analysis.flops > 0 for p in valid):
        best = max(valid, key=lambda p: p.analysis.predicted_gflops)
    else:
        best = min(valid, key=lambda p: p.analysis.predicted_time_s)
    best.best = True


def _analyze_point(kernel, device, params, regs, sample, exact_budget) -> Point:
    from perfmodel.analysis import EXACT_BUDGET_WARP_INSTRUCTIONS, analyze

    budget = EXACT_BUDGET_WARP_INSTRUCTIONS if exact_budget is None else exact_budget
    try:
        analysis = analyze(kernel, device, params, regs=regs, sample=sample, exact_budget=budget)
    except PerfmodelError as err:
        return Point(params={}, valid=False, reason=str(err))
    return Point(params={}, valid=True, analysis=analysis)


def sweep(kernel, device, vary: dict[str, list] | list[str], params: dict | None = None, regs=None,
          sample: int | None = None, exact_budget: float | None = None) -> SweepResult:
    """Analyse every point of the Cartesian product of ``vary`` (name -> values, or ``NAME=...`` strings)."""
    from perfmodel.analysis import _spec

    if isinstance(vary, list):
        parsed = [parse_vary(v) for v in vary]
        names = [name for name, _ in parsed]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise PerfmodelError(f"--vary {', '.join(repeated)}: given more than once; list all the values in "
                                 "one --vary NAME=v1,v2,...")
        vary = dict(parsed)
    if not vary:
        raise PerfmodelError("sweep: give at least one --vary NAME=values")
    spec = _spec(kernel)
    known = set(spec.params)
    for name in vary:
        if name not in known:
            raise PerfmodelError(f"--vary {name}: {spec.name} has no param {name!r} "
                                 f"(params: {', '.join(spec.params)})")
    names = list(vary)
    device_id = getattr(device, "id", device)
    result = SweepResult(kernel=spec.name, device=str(device_id), varied=names, params=dict(params or {}))
    for combo in itertools.product(*(vary[n] for n in names)):
        point_params = {**(params or {}), **dict(zip(names, combo))}
        point = _analyze_point(spec, device, point_params, regs, sample, exact_budget)
        point.params = dict(zip(names, combo))
        result.points.append(point)
    _mark_best(result.points)
    return result


def compare(kernel, devices: list, params: dict | None = None, regs=None, sample: int | None = None,
            exact_budget: float | None = None) -> SweepResult:
    """The same launch on each device, side by side (one simulation, one model per device)."""
    from perfmodel.analysis import _spec

    spec = _spec(kernel)
    if not devices:
        raise PerfmodelError("compare: give at least one device, e.g. --devices g80,h100")
    result = SweepResult(kernel=spec.name, device=[str(getattr(d, "id", d)) for d in devices], varied=["device"],
                         params=dict(params or {}))
    for device in devices:
        point = _analyze_point(spec, device, dict(params or {}), regs, sample, exact_budget)
        point.device = str(getattr(device, "id", device))
        result.points.append(point)
    _mark_best(result.points)
    return result
