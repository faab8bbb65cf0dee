"""The `perfmodel check` budget file: schema, loading, and the metric rules it declares.

A budget is YAML validated with pydantic::

    version: 1
    baseline: baseline.json            # optional; relative to this file (default: <stem>.baseline.json)
    tolerances:                        # optional; per-metric baseline rules for every entry
      predicted_gflops: {better: higher, relative: 0.05}
      cgma: false                      # do not compare this metric with the baseline
    entries:
      - name: tiled16                  # optional; defaults to the kernel; identifies the entry in the baseline
        kernel: matmul_tiled           # a shipped kernel name, or a spec path relative to this file
        devices: [g80, {device: h100, thresholds: {predicted_gflops: {min: 1000}}}]
        params: {TILE_WIDTH: 16, Width: 64}
        l2: warm                       # optional; L2 state at launch: cold (default) or warm, as analyze --l2
        thresholds:                    # dotted paths into `perfmodel analyze --json`
          predicted_gflops: {min: 300}
          occupancy.occupancy: {min: 0.5}
          correct: true                # a bare value means "equals"
        tolerances: {counts.shared.load_wavefronts: {better: lower, absolute: 0}}

Correctness: an entry whose outputs are wrong (``correct: false`` in the analysis) always fails, whatever its
thresholds say (a wrong answer is never a performance "improvement"); a ``correct`` threshold on an entry whose
kernel names no reference (``correct: null``, "not checked") is invalid input (exit 2), and such an entry's
``correct`` is not tracked in the baseline.

Every error names the budget file, the field (``entries[2].thresholds.cgma.min``) and, where the YAML parser
knows it, the line.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, ValidationError, field_validator, model_validator

from perfmodel.errors import BudgetError

Scalar = bool | int | float | str


class InvalidBudgetError(BudgetError):
    """The budget file is missing, is not YAML, or does not follow the schema."""


class CheckInputError(BudgetError):
    """An entry of a valid budget names a kernel, device, parameter or metric that does not work out."""


# ---------------------------------------------------------------------------------------------------------
# Dotted paths into the analyze JSON


_MISSING = object()


def lookup(document: Any, path: str) -> Any:
    """Value at a dotted ``path`` (``counts.global.load_sectors``) of a JSON document.

    Raises ``KeyError`` with a message naming the first missing component and what exists at that level."""
    node = document
    walked: list[str] = []
    for part in path.split("."):
        value: Any = _MISSING
        if isinstance(node, dict):
            value = node.get(part, _MISSING)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            value = node[int(part)]
        if value is _MISSING:
            where = ".".join(walked) or "the top level"
            if isinstance(node, dict):
                known = ", ".join(sorted(map(str, node))) or "nothing"
                raise KeyError(f"'{part}' is not a field of {where} (it has: {known})")
            raise KeyError(f"'{part}' cannot be looked up in {where}, which is a {type(node).__name__}")
        node = value
        walked.append(part)
    return node


def display_path(path: Path | str) -> str:
    """``path`` relative to the working folder when it is inside it (short, and the same on every CI runner)."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _check_path(path: str) -> str:
    if not path or any(not part for part in path.split(".")):
        raise ValueError(f"'{path}' is not a dotted metric path like 'occupancy.occupancy'")
    return path


# ---------------------------------------------------------------------------------------------------------
# Thresholds


def as_number(value: Any) -> float | None:
    """A metric value as a float (true/false count as 1/0), or None when it is not a number."""
    return float(value) if isinstance(value, (bool, int, float)) else None


def format_value(value: Any) -> str:
    """Short human form of a metric value: 4 significant digits, ints with separators, true/false/null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if value.is_integer() and abs(value) < 1e15 or 1e3 <= abs(value) < 1e15:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    return str(value)


class Threshold(BaseModel):
    """A limit on one metric: ``{min: X}``, ``{max: Y}``, both, or a bare value meaning ``{equals: V}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min: FiniteFloat | None = None      # NaN or infinity would make every comparison pass or fail silently
    max: FiniteFloat | None = None
    equals: bool | int | FiniteFloat | str | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_value_means_equals(cls, data: Any) -> Any:
        if isinstance(data, (bool, int, float, str)):
            return {"equals": data}
        if data is None:
            raise ValueError("a threshold needs min, max or a value to equal (got null)")
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Threshold:
        if self.min is None and self.max is None and self.equals is None:
            raise ValueError("a threshold needs 'min', 'max' or 'equals'")
        if self.equals is not None and (self.min is not None or self.max is not None):
            raise ValueError("'equals' cannot be combined with 'min' or 'max'")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is greater than max {self.max}")
        return self

    def describe(self) -> str:
        """The limit as a short string: ``>= 300``, ``<= 0.001``, ``0.5 .. 1``, ``== true``."""
        if self.equals is not None:
            return f"== {format_value(self.equals)}"
        if self.min is not None and self.max is not None:
            return f"{format_value(self.min)} .. {format_value(self.max)}"
        if self.min is not None:
            return f">= {format_value(self.min)}"
        return f"<= {format_value(self.max)}"

    def evaluate(self, metric: str, value: Any) -> tuple[bool, str]:
        """(passed, message). The message says what the value is and by how much it misses the limit.

        Raises ``TypeError`` when a min/max limit meets a value that is not a number (a budget mistake)."""
        if self.equals is not None:
            ok = _equal(value, self.equals)
            if ok:
                return True, f"{metric} = {format_value(value)}"
            return False, f"{metric} is {format_value(value)}, expected {format_value(self.equals)}"
        if value is None:
            return False, f"{metric} is null (the analysis gave no value), limit {self.describe()}"
        number = as_number(value)
        if number is None or isinstance(value, bool):
            raise TypeError(f"'{metric}' is {format_value(value)} ({type(value).__name__}), not a number, "
                            f"so it cannot have a min/max limit; use a bare value to require equality")
        if self.min is not None and number < self.min:
            return False, (f"{metric} = {format_value(value)} is below the minimum {format_value(self.min)} "
                           f"(short by {format_value(self.min - number)}, {_percent(number, self.min)})")
        if self.max is not None and number > self.max:
            return False, (f"{metric} = {format_value(value)} is above the maximum {format_value(self.max)} "
                           f"(over by {format_value(number - self.max)}, {_percent(number, self.max)})")
        return True, f"{metric} = {format_value(value)} within {self.describe()}"


def _equal(value: Any, expected: Scalar) -> bool:
    if isinstance(expected, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(expected, bool) and value == expected
    if isinstance(expected, str) or isinstance(value, str):
        return value == expected
    number = as_number(value)
    return number is not None and math.isclose(number, float(expected), rel_tol=1e-9, abs_tol=1e-12)


def _percent(value: float, reference: float) -> str:
    if reference == 0:
        return "n/a"
    return f"{(value - reference) / abs(reference) * 100:+.1f}%"


# ---------------------------------------------------------------------------------------------------------
# Baseline tolerances


class Tolerance(BaseModel):
    """How far a metric may move the wrong way from its baseline value, and which way is better.

    ``relative`` is a fraction of the baseline value (0.02 = 2%), ``absolute`` is in the metric's unit; with
    both, the larger allowance wins; with neither, any move the wrong way fails. A partial rule in a budget
    (e.g. only ``relative``) inherits the rest from the level below (built-in defaults < budget < entry)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    better: Literal["higher", "lower"] | None = None
    relative: FiniteFloat | None = Field(default=None, ge=0)
    absolute: FiniteFloat | None = Field(default=None, ge=0)

    def over(self, base: Tolerance | None) -> Tolerance:
        """This rule with the fields it leaves out taken from ``base``."""
        if base is None:
            return self
        amounts_given = self.relative is not None or self.absolute is not None
        return Tolerance(
            better=self.better or base.better,
            relative=self.relative if amounts_given else base.relative,
            absolute=self.absolute if amounts_given else base.absolute,
        )

    def allowance(self, baseline: float) -> float:
        return max((self.relative or 0.0) * abs(baseline), self.absolute or 0.0)

    def describe(self) -> str:
        parts = []
        if self.relative:
            parts.append(f"{self.relative * 100:g}%")
        if self.absolute:
            parts.append(f"{format_value(self.absolute)}")
        if not parts:
            return f"{self.better} is better, exact"
        return f"{self.better} is better, tolerance {' or '.join(parts)}"


#: Baseline rules for well-known metrics of the analyze JSON. A budget overrides any of them per metric
#: (``tolerances:``), adds others, or switches one off (``metric: false``). Counts come from the simulator
#: and are deterministic, so 1% only absorbs sampled-extrapolation wobble; a doubling of bank conflicts fails.
DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "predicted_gflops": Tolerance(better="higher", relative=0.02),
    "predicted_time_s": Tolerance(better="lower", relative=0.02),
    "achievable_gflops": Tolerance(better="higher", relative=0.02),
    "cgma": Tolerance(better="higher", relative=0.01),
    "occupancy.occupancy": Tolerance(better="higher", absolute=0.0),
    "occupancy.blocks_per_sm": Tolerance(better="higher", absolute=0.0),
    "counts.global.load_sectors": Tolerance(better="lower", relative=0.01),
    "counts.global.store_sectors": Tolerance(better="lower", relative=0.01),
    "counts.shared.load_wavefronts": Tolerance(better="lower", relative=0.01),
    "counts.shared.store_wavefronts": Tolerance(better="lower", relative=0.01),
    "counts.local.loads": Tolerance(better="lower", absolute=0.0),
    "correct": Tolerance(better="higher", absolute=0.0),
}

ToleranceRules = dict[str, Tolerance | Literal[False]]


def _validate_rules(rules: dict[str, Any]) -> dict[str, Any]:
    for path in rules:
        _check_path(path)
    return rules


# ---------------------------------------------------------------------------------------------------------
# Entries and the budget


class DeviceTarget(BaseModel):
    """One device of an entry, optionally with thresholds of its own (merged over the entry's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    device: str = Field(min_length=1)
    thresholds: dict[str, Threshold] = Field(default_factory=dict)

    _paths = field_validator("thresholds")(_validate_rules)


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(default=None, min_length=1)
    kernel: str = Field(min_length=1)
    device: str | None = Field(default=None, min_length=1)
    devices: list[str | DeviceTarget] | None = None
    params: dict[str, int | FiniteFloat] = Field(default_factory=dict)
    regs: Annotated[int, Field(ge=1)] | Literal["auto"] | None = None
    sample: int | None = Field(default=None, ge=1)
    #: the L2 state at launch (``perfmodel analyze --l2``); None means the default, cold
    l2: Literal["cold", "warm"] | None = None
    thresholds: dict[str, Threshold] = Field(default_factory=dict)
    tolerances: ToleranceRules = Field(default_factory=dict)

    _paths = field_validator("thresholds", "tolerances")(_validate_rules)

    @property
    def l2_state(self) -> str:
        """The L2 state the entry is analysed in: its ``l2``, else ``cold``."""
        return self.l2 or "cold"

    @model_validator(mode="after")
    def _one_device_field(self) -> Entry:
        if (self.device is None) == (self.devices is None):
            raise ValueError("give either 'device' (one name) or 'devices' (a list), not both or neither")
        if self.devices is not None:
            if not self.devices:
                raise ValueError("'devices' is empty")
            names = [d if isinstance(d, str) else d.device for d in self.devices]
            duplicates = sorted({n for n in names if names.count(n) > 1})
            if duplicates:
                raise ValueError(f"'devices' lists {', '.join(duplicates)} more than once")
        return self

    @property
    def id(self) -> str:
        """The entry's name in the baseline and in reports."""
        return self.name or self.kernel

    def targets(self) -> list[DeviceTarget]:
        """Each device with its thresholds (the entry's, overridden per metric by the device's own)."""
        items = [self.device] if self.device is not None else list(self.devices or [])
        result = []
        for item in items:
            target = DeviceTarget(device=item) if isinstance(item, str) else item
            result.append(DeviceTarget(device=target.device, thresholds={**self.thresholds, **target.thresholds}))
        return result


class Budget(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    baseline: str | None = Field(default=None, min_length=1)
    tolerances: ToleranceRules = Field(default_factory=dict)
    entries: list[Entry] = Field(min_length=1)

    #: Where the budget was read from (set by ``load_budget``); kernel/device/baseline paths are relative to it.
    path: Path | None = Field(default=None, exclude=True)

    _paths = field_validator("tolerances")(_validate_rules)

    @model_validator(mode="after")
    def _unique_entry_ids(self) -> Budget:
        ids = [entry.id for entry in self.entries]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"entry name(s) {', '.join(duplicates)} used more than once: entries of the same "
                             "kernel need distinct 'name's (the name identifies the entry in the baseline)")
        return self

    @property
    def label(self) -> str:
        """The budget file as messages and reports name it: relative to the working folder when inside it."""
        return display_path(self.path) if self.path is not None else "budget"

    @property
    def folder(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()

    def resolve(self, reference: str) -> str:
        """A kernel or device reference as ``analyze`` takes it: names stay names; a path (it ends in
        .yaml/.yml or contains a slash) is made absolute relative to the budget file."""
        if reference.endswith((".yaml", ".yml")) or "/" in reference or "\\" in reference:
            path = Path(reference).expanduser()
            return str(path if path.is_absolute() else (self.folder / path).resolve())
        return reference

    def default_baseline_path(self) -> Path:
        if self.baseline is not None:
            path = Path(self.baseline).expanduser()
            return path if path.is_absolute() else self.folder / path
        stem = self.path.stem if self.path is not None else "budget"
        return self.folder / f"{stem}.baseline.json"

    def tolerances_for(self, entry: Entry) -> dict[str, Tolerance]:
        """The baseline rules in force for ``entry``: defaults < budget ``tolerances`` < entry ``tolerances``.

        Raises ``CheckInputError`` when a rule ends up without a ``better`` direction."""
        rules: dict[str, Tolerance] = dict(DEFAULT_TOLERANCES)
        for layer in (self.tolerances, entry.tolerances):
            for metric, rule in layer.items():
                if rule is False:
                    rules.pop(metric, None)
                else:
                    rules[metric] = rule.over(rules.get(metric))
        for metric, rule in rules.items():
            if rule.better is None:
                raise CheckInputError(f"{self.label}: tolerance for '{metric}' "
                                      f"(entry '{entry.id}') must declare 'better: higher' or 'better: lower'")
        return rules

    def declared_metrics(self, entry: Entry) -> set[str]:
        """Metrics the budget names itself for ``entry`` (not only the built-in defaults): these must exist."""
        return {m for layer in (self.tolerances, entry.tolerances) for m, r in layer.items() if r is not False}


# ---------------------------------------------------------------------------------------------------------
# Loading


def _yaml_line(root: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the YAML node at pydantic's error location, as deep as the location can be followed."""
    node, line = root, None
    for part in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if getattr(k, "value", None) == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            node = None
    if node is not None:
        line = node.start_mark.line + 1
    return line


def _field_name(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in ("str", "int", "float", "bool", "finite-float", "constrained-int", "DeviceTarget", "Tolerance",
                      "literal[False]", "literal['cold','warm']",
                      "literal['auto']") or str(part).startswith("function-"):
            continue  # pydantic's union-branch markers say which alternative failed, not where
        else:
            text += ("." if text else "") + str(part)
    return text or "(top level)"


def budget_from_dict(data: Any, path: Path | str | None = None, *, yaml_root: yaml.Node | None = None) -> Budget:
    """Validate an already-parsed budget document (``path`` is only used for messages and relative paths)."""
    name = str(path) if path is not None else "budget"
    if not isinstance(data, dict):
        raise InvalidBudgetError(f"{name}: expected a mapping with an 'entries' list at the top level, "
                                 f"got {type(data).__name__}")
    try:
        budget = Budget.model_validate(data)
    except ValidationError as err:
        problems = []
        seen = set()
        for item in err.errors():
            field = _field_name(item["loc"])
            if (field, item["msg"]) in seen:
                continue
            seen.add((field, item["msg"]))
            line = _yaml_line(yaml_root, item["loc"])
            where = f"{name}:{line}" if line else name
            got = item.get("input")
            got_text = "" if isinstance(got, dict) or item["type"] == "missing" else f" (got {got!r})"
            problems.append(f"{where}: field '{field}': {item['msg']}{got_text}")
        raise InvalidBudgetError("; ".join(problems)) from None
    return budget.model_copy(update={"path": Path(path).resolve() if path is not None else None})


def load_budget(path: Path | str) -> Budget:
    """Read and validate a budget YAML file. Errors name the file, the field and the line."""
    from perfmodel import safeload

    path = Path(path)
    text = safeload.read_text(path, error=InvalidBudgetError, what="budget file",
                              not_found="budget file not found")
    data, root = safeload.parse_yaml(text, str(path), error=InvalidBudgetError, with_node=True)
    return budget_from_dict(data, path, yaml_root=root)
