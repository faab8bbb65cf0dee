"""What-if analyses: ``sweep`` one kernel over parameter values on one or more devices, ``compare`` it across
devices (optionally over ``--vary`` values too). Points run serially, in parallel processes or on a Dask cluster
(``perfmodel.parallel``), and unchanged points come from the on-disk cache (``perfmodel.cache``).

The best point is marked per device and per problem size: tunables (params that are ``#define``\\ s of the
source, such as ``TILE_WIDTH``) compete, problem sizes (``Width``) and devices do not.

A point that cannot run (a block of 1,024 threads on G80, a tile that overflows shared memory, a size the
kernel rejects) is a row with ``valid: false`` and the reason - never a crash. The simulation of a parameter
point is shared by every device (``perfmodel.analysis.simulate_launch`` caches it).
"""
from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from perfmodel.errors import PerfmodelError
from perfmodel.model.traffic import L2_STATES

_RANGE = re.compile(r"^\s*(?P<start>[-+0-9.eE]+)\s*:\s*(?P<stop>[-+0-9.eE]+)\s*(?::\s*(?P<step>[x*+]?)\s*"
                    r"(?P<by>[-+0-9.eE]+))?\s*$")
_LOG_RANGE = re.compile(r"^\s*(?P<start>[-+0-9.eE]+)\s*[:-]\s*(?P<stop>[-+0-9.eE]+)\s*:\s*(?P<count>[0-9]+)\s*log\s*$")


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
    """``NAME=v1,v2,...``, ``NAME=start:stop[:step]`` (``:x2`` multiplies, ``:+16`` or ``:16`` adds; ``stop`` is
    included when the steps reach it exactly) or ``NAME=start:stop:Nlog`` (N values evenly spaced on a log scale
    from start to stop, rounded to integers when both ends are integers, as Kerncraft's ``-D N 100-10000:10log``)."""
    name, sep, spec = item.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier() or not spec.strip():
        raise PerfmodelError(f"--vary {item!r}: expected NAME=v1,v2,... or NAME=start:stop[:x2|:+step], "
                             "e.g. --vary TILE_WIDTH=4,8,16,32 or --vary Width=256:4096:x2")
    log = _LOG_RANGE.match(spec)
    if log:
        return name, _log_values(item, _number(log["start"]), _number(log["stop"]), int(log["count"]))
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


def _log_values(item: str, start, stop, count: int) -> list[int | float]:
    if start <= 0 or stop <= start:
        raise PerfmodelError(f"--vary {item!r}: a log range needs 0 < start < stop")
    if not 2 <= count <= 1000:
        raise PerfmodelError(f"--vary {item!r}: a log range needs 2 to 1,000 values")
    ratio = (stop / start) ** (1 / (count - 1))
    values = [start * ratio ** i for i in range(count)]
    values[-1] = stop
    if isinstance(start, int) and isinstance(stop, int):
        values = list(dict.fromkeys(int(round(v)) for v in values))
    return values


@dataclass
class Point:
    params: dict                      # the varied params of this point
    valid: bool
    reason: str = ""
    doc: dict | None = None           # the analysis document (Analysis.to_json()) when valid
    device: str = ""
    best: bool = False                # the best point of its device and problem size
    cached: bool = False

    def row(self) -> dict:
        """The flat row of the sweep table / CSV / JSON."""
        row = {**self.params, "device": self.device, "valid": self.valid, "reason": self.reason,
               "best": self.best}
        if self.doc is None:
            return row
        doc = self.doc
        occ = doc["occupancy"]
        row.update({
            "threads_per_block": doc["launch"]["threads_per_block"],
            "total_blocks": doc["launch"]["total_blocks"],
            "shared_memory_per_block": doc["shared_memory_per_block"],
            "registers_per_thread": doc["registers_per_thread"],
            "registers_source": doc["registers_source"],
            "blocks_per_sm": occ["blocks_per_sm"],
            "warps_per_sm": occ["warps_per_sm"],
            "occupancy": occ["occupancy"],
            "limiter": ",".join(occ["limiters"]),
            "flops": doc["counts"].get("flops", 0),
            "cgma": doc["cgma"],
            "achievable_gflops": doc["achievable_gflops"],
            "predicted_gflops": doc["predicted_gflops"],
            "predicted_time_s": doc["predicted_time_s"],
            "bound": doc["bound"],
            "correct": doc["correct"],
            "sampled": doc["sampled"],
        })
        return row

    def to_json(self) -> dict:
        return self.row()


@dataclass
class SweepResult:
    kernel: str
    devices: list[str]
    varied: list[str]
    points: list[Point] = field(default_factory=list)
    params: dict = field(default_factory=dict)
    problem_params: list[str] = field(default_factory=list)   # varied params that are not tunable #defines
    cache_hits: int = 0
    l2: str = "cold"                  # the L2 state at launch of every point (--l2)

    @property
    def device(self) -> str | list[str]:
        return self.devices[0] if len(self.devices) == 1 else list(self.devices)

    @property
    def best_points(self) -> list[Point]:
        return [p for p in self.points if p.best]

    @property
    def best(self) -> Point | None:
        """The best point when there is one group (one device, one problem size); else the first best."""
        best = self.best_points
        return best[0] if best else None

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "device": self.device, "devices": list(self.devices), "varied": self.varied,
                "problem_params": self.problem_params, "params": self.params, "l2": self.l2,
                "best_per": best_groups(self.varied, self.problem_params),
                "points": [p.row() for p in self.points],
                "best": [p.row() for p in self.best_points]}


def best_groups(varied: list[str], problem_params: list[str]) -> list[str]:
    """What the best point is chosen within: each device and problem size when a tunable varies (tiles
    compete, devices and problem sizes do not); each problem size when nothing tunable varies (``compare``:
    the devices compete)."""
    tunables = [v for v in varied if v not in problem_params]
    return (["device"] if tunables else []) + list(problem_params)


def mark_best(points: list[Point], varied: list[str], problem_params: list[str]) -> None:
    """Mark the best valid point of each group (:func:`best_groups`): the highest predicted GFLOPS, or the
    shortest predicted time for a kernel without flops."""
    groups: dict[tuple, list[Point]] = {}
    by = best_groups(varied, problem_params)
    for p in points:
        p.best = False
        if p.valid and p.doc is not None:
            key = tuple(p.device if n == "device" else p.params.get(n) for n in by)
            groups.setdefault(key, []).append(p)
    for group in groups.values():
        if any(float(p.doc["counts"].get("flops", 0) or 0) > 0 for p in group):
            best = max(group, key=lambda p: p.doc["predicted_gflops"])
        else:
            best = min(group, key=lambda p: p.doc["predicted_time_s"])
        best.best = True


def _load_devices(devices) -> list[tuple[str, object | None, str]]:
    """(id, Device or None, reason) for each device: an unknown one becomes invalid rows, not an exception."""
    from perfmodel.devices import Device, load_device

    out = []
    for device in devices:
        if isinstance(device, Device):
            out.append((device.id, device, ""))
            continue
        try:
            dev = load_device(device)
            out.append((str(device) if str(device) == dev.id else dev.id, dev, ""))
        except PerfmodelError as err:
            out.append((str(device), None, str(err)))
    return out


def _combos(vary: dict[str, list]) -> list[dict]:
    names = list(vary)
    return [dict(zip(names, combo)) for combo in itertools.product(*(vary[n] for n in names))]


def _parse_varies(vary: dict[str, list] | list[str]) -> dict[str, list]:
    if isinstance(vary, list):
        parsed = [parse_vary(v) for v in vary]
        names = [name for name, _ in parsed]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise PerfmodelError(f"--vary {', '.join(repeated)}: given more than once; list all the values in "
                                 "one --vary NAME=v1,v2,...")
        vary = dict(parsed)
    return dict(vary)


def run_points(kernel, devices: list, vary: dict[str, list] | list[str] | None = None, params: dict | None = None,
               regs=None, sample: int | None = None, exact_budget: float | None = None, *, jobs: int = 1,
               scheduler: str | None = None, cache=None,
               progress: Callable[[int, int], None] | None = None, l2: str = "cold") -> SweepResult:
    """Analyse every (combination of ``vary``) x ``devices`` point: the engine of ``sweep`` and ``compare``.

    ``jobs`` > 1 runs combinations in parallel processes; ``scheduler`` (a Dask scheduler address) sends them to
    a Dask cluster; ``cache`` (a :class:`perfmodel.cache.ResultCache`) serves unchanged points from disk;
    ``progress(done, total)`` is called as points finish; ``l2`` is the L2 state at launch of every point,
    ``cold`` (default: nothing resident) or ``warm`` (a previous identical launch left what fits in L2)."""
    from perfmodel.analysis import _spec
    from perfmodel.cache import is_entry, point_key
    from perfmodel.parallel import Task, run_tasks

    if l2 not in L2_STATES:
        raise PerfmodelError(f"--l2 {l2!r}: expected 'cold' or 'warm'")
    vary = _parse_varies(vary or {})
    spec = _spec(kernel)
    known = set(spec.params)
    for name in vary:
        if name not in known:
            raise PerfmodelError(f"--vary {name}: {spec.name} has no param {name!r} "
                                 f"(params: {', '.join(spec.params)})")
        if params and name in params:
            raise PerfmodelError(f"--vary {name} and -D {name}: give the param once")
    if not devices:
        raise PerfmodelError("give at least one device, e.g. --devices g80,h100")
    names = list(vary)
    loaded = _load_devices(devices)
    combos = _combos(vary) if vary else [{}]
    defines = set(getattr(spec, "source_defines", ()))
    result = SweepResult(kernel=spec.name, devices=[d for d, _, _ in loaded], varied=names,
                         params=dict(params or {}), problem_params=[n for n in names if n not in defines], l2=l2)
    total = len(combos) * len(loaded)
    grid: list[list[Point]] = []
    tasks: list[Task] = []
    where: list[tuple[int, list[int], list[str]]] = []   # task -> (combo index, device columns, cache keys)
    kernel_ref = str(spec.path) if (jobs > 1 or scheduler) and spec.path and Path(spec.path).is_file() else spec
    done = 0
    for ci, combo in enumerate(combos):
        full = {**(params or {}), **combo}
        row: list[Point] = []
        missing, keys = [], []
        for di, (dev_id, dev, reason) in enumerate(loaded):
            point = Point(params=dict(combo), device=dev_id, valid=False, reason=reason)
            row.append(point)
            if dev is None:
                done += 1
                continue
            key = point_key(spec, dev, full, regs, sample, exact_budget, l2) if cache is not None else ""
            cached = cache.get(key) if cache is not None else None
            if is_entry(cached):
                point.valid, point.reason, point.doc, point.cached = cached["valid"], cached["reason"], \
                    cached["doc"], True
                result.cache_hits += 1
                done += 1
                continue
            missing.append(di)
            keys.append(key)
        grid.append(row)
        if missing:
            tasks.append(Task(kernel=kernel_ref, params=full, devices=[loaded[di][1] for di in missing], regs=regs,
                              sample=sample, exact_budget=exact_budget, l2=l2))
            where.append((ci, missing, keys))
    if progress is not None:
        progress(done, total)

    def finished(index: int, outcomes) -> None:
        nonlocal done
        ci, columns, keys = where[index]
        for di, key, outcome in zip(columns, keys, outcomes):
            point = grid[ci][di]
            point.valid, point.reason, point.doc = outcome.valid, outcome.reason, outcome.doc
            if cache is not None and outcome.cacheable:
                cache.put(key, {"valid": outcome.valid, "reason": outcome.reason, "doc": outcome.doc})
        done += len(columns)
        if progress is not None:
            progress(done, total)

    run_tasks(tasks, jobs=jobs, scheduler=scheduler, on_done=finished)
    # rows: device-major (each device's sweep together), combinations in --vary order within a device
    for di in range(len(loaded)):
        for ci in range(len(combos)):
            result.points.append(grid[ci][di])
    mark_best(result.points, result.varied, result.problem_params)
    return result


def sweep(kernel, device, vary: dict[str, list] | list[str], params: dict | None = None, regs=None,
          sample: int | None = None, exact_budget: float | None = None, **options) -> SweepResult:
    """Analyse every point of the Cartesian product of ``vary`` (name -> values, or ``NAME=...`` strings) on
    ``device`` (one device, or a list of devices)."""
    if not _parse_varies(vary):
        raise PerfmodelError("sweep: give at least one --vary NAME=values")
    devices = list(device) if isinstance(device, (list, tuple)) else [device]
    return run_points(kernel, devices, vary, params, regs, sample, exact_budget, **options)


def compare(kernel, devices: list, params: dict | None = None, regs=None, sample: int | None = None,
            exact_budget: float | None = None, vary: dict[str, list] | list[str] | None = None,
            **options) -> SweepResult:
    """The same launch (or each ``vary`` combination) on each device, side by side."""
    if not devices:
        raise PerfmodelError("compare: give at least one device, e.g. --devices g80,h100")
    return run_points(kernel, list(devices), vary, params, regs, sample, exact_budget, **options)
