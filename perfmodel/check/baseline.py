"""The baseline file: every entry's metrics as last accepted, committed beside the budget.

JSON, written with sorted keys and no timestamp so that a model or kernel change shows up as a small,
reviewable diff::

    {"format": "perfmodel-baseline", "version": 1, "perfmodel_version": "0.1.0", "budget": "budget.yaml",
     "entries": {"tiled16": {"kernel": "matmul_tiled", "params": {"TILE_WIDTH": 16, "Width": 64},
                             "devices": {"g80": {"predicted_gflops": 345.6, "occupancy.occupancy": 1.0}}}}}
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from perfmodel.errors import BudgetError

FORMAT = "perfmodel-baseline"


class InvalidBaselineError(BudgetError):
    """The baseline file is missing, is not JSON, or does not follow the baseline format."""


class BaselineEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kernel: str
    params: dict[str, Any] = Field(default_factory=dict)
    #: the L2 state the metrics were taken in; absent (None) for the default, cold
    l2: Literal["cold", "warm"] | None = None
    #: device (as the budget names it) -> metric path -> value
    devices: dict[str, dict[str, Any]] = Field(default_factory=dict)


class Baseline(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: Literal["perfmodel-baseline"] = FORMAT
    version: Literal[1] = 1
    perfmodel_version: str | None = None
    budget: str | None = None
    entries: dict[str, BaselineEntry] = Field(default_factory=dict)

    def metrics(self, entry: str, device: str) -> dict[str, Any] | None:
        """The recorded metrics of one entry on one device, or None when the baseline has none."""
        record = self.entries.get(entry)
        return None if record is None else record.devices.get(device)

    def params(self, entry: str) -> dict[str, Any] | None:
        record = self.entries.get(entry)
        return None if record is None else record.params

    def l2(self, entry: str) -> str | None:
        """The L2 state an entry was recorded in (``cold`` when the record does not say), None when absent."""
        record = self.entries.get(entry)
        return None if record is None else record.l2 or "cold"


def load_baseline(path: Path | str) -> Baseline:
    from perfmodel import safeload

    path = Path(path)
    data = safeload.parse_json(
        safeload.read_text(path, error=InvalidBaselineError, what="baseline file",
                           not_found="baseline file not found; create it with "
                                     "`perfmodel check BUDGET --update-baseline`"),
        str(path), error=InvalidBaselineError)
    try:
        return Baseline.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(f"field '{'.'.join(map(str, e['loc'])) or '(top level)'}': {e['msg']}"
                             for e in err.errors())
        raise InvalidBaselineError(f"{path}: not a perfmodel baseline: {problems}") from None


def write_baseline(baseline: Baseline, path: Path | str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = baseline.model_dump(mode="json")
    for record in data["entries"].values():
        if record.get("l2") is None:
            record.pop("l2", None)   # cold, the default: baselines recorded before --l2 existed stay as they are
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
