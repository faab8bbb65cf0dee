"""Run a budget: analyze every entry on every device, apply its thresholds, compare with the baseline.

Outcome of an entry x device ("case") when the analysis itself fails:

- ``OccupancyError`` (the launch does not fit the device: 1,024 threads per block on G80, a tile whose shared
  memory exceeds the device's) and ``SimulationError`` (the kernel faults for these params: out-of-bounds
  access, barrier divergence) are *check failures*: the case fails with the reason and the exit code is 1.
  They are what a kernel change in a pull request can break, so CI must report them, not stop.
- Any other ``PerfmodelError`` (unknown kernel or device, malformed spec or device profile, source that does not
  compile, unknown param) means the *input* is invalid: ``CheckInputError`` is raised, exit code 2.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from perfmodel.check.baseline import Baseline, BaselineEntry
from perfmodel.check.budget import (
    Budget,
    CheckInputError,
    Entry,
    Tolerance,
    as_number,
    format_value,
    lookup,
)
from perfmodel.errors import OccupancyError, PerfmodelError, SimulationError
from perfmodel.report.jsonout import to_jsonable

Status = Literal["fail", "improved", "new", "pass"]
Kind = Literal["launch", "threshold", "baseline"]

#: Order of statuses in reports: failures first.
STATUS_ORDER: dict[str, int] = {"fail": 0, "improved": 1, "new": 2, "pass": 3}

#: ``analyze(kernel, device, params=..., regs=..., sample=..., l2=...)`` returning an ``Analysis`` (with
#: ``to_json()``) or directly its JSON dict.
AnalyzeFn = Callable[..., Any]


@dataclass
class CheckItem:
    """One comparison: a threshold, a baseline metric, or the launch itself."""

    metric: str
    kind: Kind
    status: Status
    value: Any
    expected: str  # the limit (">= 300") or the baseline ("345.6 (higher is better, tolerance 2%)")
    message: str
    baseline: Any = None
    change: float | None = None  # value - baseline
    change_relative: float | None = None  # (value - baseline) / |baseline|

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "kind": self.kind, "status": self.status, "value": self.value,
                "expected": self.expected, "baseline": self.baseline, "change": self.change,
                "change_relative": self.change_relative, "message": self.message}


@dataclass
class CaseResult:
    """One entry on one device."""

    entry: str
    kernel: str
    device: str
    params: dict[str, Any]
    l2: str = "cold"  # the L2 state at launch it was analysed in
    items: list[CheckItem] = field(default_factory=list)
    #: The tracked metrics (what ``--update-baseline`` records); empty when the analysis failed.
    metrics: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def failures(self) -> list[CheckItem]:
        return [item for item in self.items if item.status == "fail"]

    @property
    def name(self) -> str:
        return f"{self.entry} on {self.device}"

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry, "kernel": self.kernel, "device": self.device, "params": self.params,
                "l2": self.l2, "passed": self.passed, "error": self.error, "notes": self.notes, "seconds": self.seconds,
                "checks": [item.to_json() for item in self.items], "metrics": self.metrics}


@dataclass
class CheckResult:
    budget: str
    cases: list[CaseResult]
    baseline: str | None = None  # the baseline file compared against or written
    baseline_compared: bool = False
    baseline_written: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(case.passed for case in self.cases)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    @property
    def failed_cases(self) -> list[CaseResult]:
        return [case for case in self.cases if not case.passed]

    def rows(self) -> list[tuple[CaseResult, CheckItem]]:
        """Every (case, item), failures first, then improvements and new metrics, then passes;
        within a status in budget order."""
        rows = [(case, item) for case in self.cases for item in case.items]
        return sorted(rows, key=lambda row: STATUS_ORDER[row[1].status])  # stable: budget order kept

    def summary(self) -> dict[str, int]:
        items = [item for case in self.cases for item in case.items]
        return {"cases": len(self.cases), "failed_cases": len(self.failed_cases),
                "checks": len(items), "failed_checks": sum(item.status == "fail" for item in items),
                "improved": sum(item.status == "improved" for item in items),
                "new": sum(item.status == "new" for item in items)}

    def to_json(self) -> dict[str, Any]:
        return {"budget": self.budget, "passed": self.passed, "exit_code": self.exit_code,
                "baseline": self.baseline, "baseline_compared": self.baseline_compared,
                "baseline_written": self.baseline_written, "summary": self.summary(), "notes": self.notes,
                "cases": [case.to_json() for case in self.cases]}


# ---------------------------------------------------------------------------------------------------------


def _default_analyze() -> AnalyzeFn:
    from perfmodel.analysis import analyze

    return analyze


def spec_params(kernel: str) -> set[str]:
    """Names of the params a kernel spec declares (for ``-D`` overrides)."""
    from perfmodel.spec import load_spec

    return set(load_spec(kernel).params)


def apply_overrides(budget: Budget, overrides: Mapping[str, int | float],
                    known_params: Callable[[str], set[str]] | None = None) -> Budget:
    """``-D NAME=VALUE`` for a whole budget: set the param in every entry whose kernel declares it.

    A name that no entry's kernel declares is an input error (exit 2): it would silently check nothing."""
    if not overrides:
        return budget
    known_params = known_params or spec_params
    entries, used = [], set()
    for entry in budget.entries:
        try:
            known = known_params(budget.resolve(entry.kernel))
        except PerfmodelError as err:
            raise CheckInputError(f"{budget.label}: entry '{entry.id}': {err}") from err
        mine = {name: value for name, value in overrides.items() if name in known}
        used.update(mine)
        entries.append(entry.model_copy(update={"params": {**entry.params, **mine}}) if mine else entry)
    unused = sorted(set(overrides) - used)
    if unused:
        raise CheckInputError(f"-D {', '.join(unused)}: no entry of {budget.label} has a kernel with "
                              f"{'this param' if len(unused) == 1 else 'these params'}")
    return budget.model_copy(update={"entries": entries})


def apply_l2(budget: Budget, l2: str | None) -> Budget:
    """``--l2 cold|warm`` for a whole budget: every entry is analysed in that L2 state, whatever its own ``l2:``
    says (as ``-D`` overrides params). ``None`` (the option not given) leaves each entry's ``l2:`` (default
    cold)."""
    if l2 is None:
        return budget
    if l2 not in ("cold", "warm"):
        raise CheckInputError(f"--l2 {l2!r}: expected 'cold' or 'warm'")
    entries = [entry.model_copy(update={"l2": l2}) for entry in budget.entries]
    return budget.model_copy(update={"entries": entries})


def validate_references(budget: Budget) -> None:
    """Load every kernel spec and device profile the budget names, before any analysis runs, so that an
    invalid one stops the check at once (exit 2) with every problem listed."""
    from perfmodel.devices import load_device
    from perfmodel.spec import load_spec

    problems: list[str] = []
    for entry in budget.entries:
        try:
            load_spec(budget.resolve(entry.kernel))
        except PerfmodelError as err:
            problems.append(f"entry '{entry.id}': kernel '{entry.kernel}': {err}")
        for target in entry.targets():
            try:
                load_device(budget.resolve(target.device))
            except PerfmodelError as err:
                problems.append(f"entry '{entry.id}': device '{target.device}': {err}")
    if problems:
        unique = list(dict.fromkeys(problems))
        raise CheckInputError(f"{budget.label}: " + "; ".join(unique))


def compare_with_baseline(metric: str, value: Any, base: Any, rule: Tolerance) -> CheckItem:
    """Compare one metric with its baseline value under ``rule``."""
    expected = f"{format_value(base)} ({rule.describe()})"
    if base is None:
        return CheckItem(metric, "baseline", "new", value, "no baseline",
                         f"{metric} = {format_value(value)}: no baseline value yet")
    if value is None:
        return CheckItem(metric, "baseline", "fail", value, expected,
                         f"{metric} was {format_value(base)} in the baseline and now has no value", baseline=base)
    current, reference = as_number(value), as_number(base)
    if current is None or reference is None:
        raise TypeError(f"'{metric}' is not numeric ({format_value(value)}), so it has no better direction; "
                        "use a threshold to require a value")
    change = current - reference
    relative = change / abs(reference) if reference != 0 else None
    worse = -change if rule.better == "higher" else change
    allowed = rule.allowance(reference)
    slack = 1e-12 * max(abs(reference), 1.0)  # float noise is not a move
    moved = (f"from {format_value(base)} to {format_value(value)} "
             f"({_signed(change)}{f', {relative * 100:+.1f}%' if relative is not None else ''})")
    direction = "fell" if change < 0 else "rose"
    if worse > allowed + slack:
        status: Status = "fail"
        message = f"{metric} {direction} {moved}: worse than the baseline by more than allowed ({rule.describe()})"
    elif -worse > allowed + slack:
        status = "improved"
        message = f"{metric} {direction} {moved}: better than the baseline; update the baseline to keep the gain"
    else:
        status = "pass"
        message = (f"{metric} = {format_value(value)}, baseline {format_value(base)}"
                   + (f" ({_signed(change)})" if change else ""))
    return CheckItem(metric, "baseline", status, value, expected, message, baseline=base, change=change,
                     change_relative=relative)


def _signed(change: float) -> str:
    return ("+" if change > 0 else "-" if change < 0 else "") + format_value(abs(change))


def _params_moved(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> str | None:
    if old is None or dict(old) == dict(new):
        return None
    keys = sorted(set(old) | set(new))
    moves = [f"{k} {format_value(old.get(k, 'default'))} -> {format_value(new.get(k, 'default'))}"
             for k in keys if old.get(k) != new.get(k)]
    return "params differ from the baseline's: " + ", ".join(moves)


def _run_case(budget: Budget, entry: Entry, device: str, thresholds: Mapping[str, Any], analyze: AnalyzeFn,
              baseline: Baseline | None) -> CaseResult:
    case = CaseResult(entry=entry.id, kernel=entry.kernel, device=device, params=dict(entry.params),
                      l2=entry.l2_state)
    where = f"{budget.label}: entry '{entry.id}' on device '{device}'"
    started = time.perf_counter()
    try:
        # l2 is passed only for a warm entry: cold is every analyze's default, and a stand-in analyze written
        # before --l2 existed (no l2 keyword) keeps working for cold budgets
        state = {"l2": entry.l2_state} if entry.l2_state != "cold" else {}
        analysis = to_jsonable(analyze(budget.resolve(entry.kernel), budget.resolve(device),
                                       params=dict(entry.params) or None, regs=entry.regs, sample=entry.sample,
                                       **state))
    except (OccupancyError, SimulationError) as err:
        reason = "does not fit the device" if isinstance(err, OccupancyError) else "fails to run"
        case.error = f"{entry.kernel} {reason}: {err}"
        case.items.append(CheckItem("launch", "launch", "fail", None, "runs on the device", case.error))
        return case
    except PerfmodelError as err:
        raise CheckInputError(f"{where}: {err}") from err
    finally:
        case.seconds = round(time.perf_counter() - started, 3)
    if not isinstance(analysis, dict):
        raise TypeError(f"analyze returned {type(analysis).__name__}, expected an Analysis or its JSON dict")

    unchecked = not analysis.get("checked_outputs", [True]) and analysis.get("correct") is None
    for metric, threshold in thresholds.items():
        if metric == "correct" and unchecked:
            raise CheckInputError(
                f"{where}: threshold 'correct': the kernel names no reference, so its outputs are not checked "
                "(correct is null) and the threshold could never mean anything; give its spec 'outputs:' with a "
                "reference (a named one, module:function or a .npy file), or drop the threshold")
        try:
            value = lookup(analysis, metric)
            passed, message = threshold.evaluate(metric, value)
        except (KeyError, TypeError) as err:
            raise CheckInputError(f"{where}: threshold '{metric}': {err.args[0]}") from None
        case.items.append(CheckItem(metric, "threshold", "pass" if passed else "fail", value,
                                    threshold.describe(), message))

    if analysis.get("correct") is False and not any(
            item.metric == "correct" and item.status == "fail" for item in case.items):
        # a wrong answer fails the check whatever the budget says: it is never a performance "improvement"
        case.items.append(CheckItem("correct", "threshold", "fail", False, "== true (outputs are always checked)",
                                    f"the outputs are wrong: {analysis.get('correct_detail', '')}"))

    rules = budget.tolerances_for(entry)
    declared = budget.declared_metrics(entry)
    for metric in rules:
        if metric == "correct" and unchecked:
            continue   # nothing was checked: there is no correctness to track against the baseline
        try:
            case.metrics[metric] = lookup(analysis, metric)
        except KeyError as err:
            if metric in declared:
                raise CheckInputError(f"{where}: tolerance '{metric}': {err.args[0]}") from None
            # a built-in default the analysis does not report: nothing to track

    if baseline is not None:
        recorded = baseline.metrics(entry.id, device)
        if recorded is None:
            case.notes.append(f"'{entry.id}' on '{device}' is not in the baseline; "
                              "run with --update-baseline to record it")
        else:
            moved = _params_moved(baseline.params(entry.id), case.params)
            if moved:
                case.notes.append(moved)
            recorded_l2 = baseline.l2(entry.id)
            if recorded_l2 is not None and recorded_l2 != case.l2:
                case.notes.append(f"L2 state differs from the baseline's: {recorded_l2} -> {case.l2}")
            for metric, value in case.metrics.items():
                try:
                    item = compare_with_baseline(metric, value, recorded.get(metric), rules[metric])
                except TypeError as err:
                    raise CheckInputError(f"{where}: tolerance '{metric}': {err.args[0]}") from None
                case.items.append(item)
    return case


def run_check(budget: Budget, *, baseline: Baseline | None = None, analyze: AnalyzeFn | None = None,
              progress: Callable[[str], None] | None = None) -> CheckResult:
    """Analyze each entry on each of its devices, in budget order, and evaluate thresholds and (when a
    baseline is given) baseline tolerances. ``analyze`` defaults to ``perfmodel.analysis.analyze``."""
    analyze_fn = analyze or _default_analyze()
    cases = []
    for entry in budget.entries:
        for target in entry.targets():
            if progress is not None:
                progress(f"{entry.id} on {target.device}")
            cases.append(_run_case(budget, entry, target.device, target.thresholds, analyze_fn, baseline))
    result = CheckResult(budget=budget.label, cases=cases,
                         baseline_compared=baseline is not None)
    if baseline is not None:
        checked = {(case.entry, case.device) for case in cases}
        stale = sorted(f"{entry} on {device}" for entry, record in baseline.entries.items()
                       for device in record.devices if (entry, device) not in checked)
        if stale:
            result.notes.append(f"the baseline also records {', '.join(stale)}, which the budget no longer "
                                "checks; --update-baseline drops them")
    return result


def baseline_from(result: CheckResult, budget: Budget) -> Baseline:
    """The baseline that records ``result``'s metrics. A case whose analysis failed (a launch that does not
    fit) has no metrics and is left out; its failure keeps the exit code at 1."""
    from perfmodel import __version__

    entries: dict[str, BaselineEntry] = {}
    for case in result.cases:
        record = entries.setdefault(case.entry, BaselineEntry(kernel=case.kernel, params=case.params,
                                                              l2=None if case.l2 == "cold" else case.l2))
        if case.error is None:
            record.devices[case.device] = dict(case.metrics)
    budget_name = budget.path.name if budget.path is not None else None
    return Baseline(perfmodel_version=__version__, budget=budget_name, entries=entries)
