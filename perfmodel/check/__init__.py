"""`perfmodel check`: guard modelled performance in CI with a budget (thresholds) and a baseline.

- ``budget``: the YAML schema (``load_budget``), thresholds, tolerances, dotted metric paths;
- ``baseline``: the committed JSON of accepted metrics (``load_baseline``, ``write_baseline``);
- ``runner``: ``run_check`` (analyze every entry x device, evaluate), ``baseline_from``, ``apply_overrides``.
Renderers live in ``perfmodel.report`` (``check_view``, ``junit``, ``markdown``).
"""
from __future__ import annotations

from perfmodel.check.baseline import Baseline, InvalidBaselineError, load_baseline, write_baseline
from perfmodel.check.budget import (
    DEFAULT_TOLERANCES,
    Budget,
    CheckInputError,
    Entry,
    InvalidBudgetError,
    Threshold,
    Tolerance,
    budget_from_dict,
    load_budget,
    lookup,
)
from perfmodel.check.runner import (
    CaseResult,
    CheckItem,
    CheckResult,
    apply_l2,
    apply_overrides,
    baseline_from,
    run_check,
    validate_references,
)

__all__ = [
    "DEFAULT_TOLERANCES", "Baseline", "Budget", "CaseResult", "CheckInputError", "CheckItem", "CheckResult",
    "Entry", "InvalidBaselineError", "InvalidBudgetError", "Threshold", "Tolerance", "apply_l2", "apply_overrides",
    "baseline_from", "budget_from_dict", "load_baseline", "load_budget", "lookup", "run_check",
    "validate_references", "write_baseline",
]
