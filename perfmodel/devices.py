"""Device profiles: the pydantic ``Device`` schema, YAML loading with human units, and the search path.

A profile is a YAML file whose keys are the ``Device`` attribute names. Any value may be written plainly
(``sm_count: 16``, ``shared_memory_per_sm: 16 KiB``) or with its provenance::

    sm_count: {value: 16, source: TH-G80, note: "8 TPCs x 2 SMs"}

``source`` names one or more keys (comma-separated) of the file's ``sources:`` map, or one of the pseudo-keys
``computed`` (arithmetic on sourced inputs; the note shows the formula), ``estimate`` (a model value; the note
gives the reasoning) and ``default`` (filled in by perfmodel, see :data:`THROUGHPUT_DEFAULTS`). Every value of
a shipped profile carries a source (``tests/test_devices.py`` checks it); a user's own profile may omit them.

Units follow :mod:`perfmodel.units`: memory sizes are binary (16 KB = 16 KiB = 16384 B), rates decimal.

The occupancy rules are data here, never ``if cc == ...`` in code: ``register_allocation`` (per ``block`` on
CC 1.x, per ``warp`` after), ``register_allocation_unit`` (+ per-count overrides, Fermi),
``warp_allocation_granularity``, ``register_sub_partitions``, ``shared_memory_allocation_unit``,
``shared_memory_carveouts`` and ``shared_memory_carveout_fallback``, ``reserved_shared_memory_per_block``.
``occupancy_rules`` says which NVIDIA source the profile's rules follow.
"""
from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from perfmodel.errors import DeviceError
from perfmodel.paths import search_path, yaml_files
from perfmodel.units import Kind, UnitError, parse_quantity

DEVICE_PATH_ENV = "PERFMODEL_DEVICE_PATH"
PSEUDO_SOURCES = ("computed", "estimate", "default")

# Keys whose values are not wrapped in {value, source} and carry no provenance of their own.
_META_KEYS = {"sources", "notes", "measured", "id", "format_version"}


# ---------------------------------------------------------------------------------------------------------
# Unit-aware field types. Each raises a ValueError whose text is the whole "expected ..., got ..." message.

def _quantity(kind: Kind, *, integer: bool, minimum: float, what: str):
    def parse(value: object) -> object:
        try:
            number = parse_quantity(value, kind)
        except UnitError:
            raise ValueError(f"expected {what}, got {value!r}") from None
        if integer:
            if number != int(number):
                raise ValueError(f"expected {what}, got {value!r}")
            number = int(number)
        if number < minimum:
            raise ValueError(f"expected {what}, got {value!r}")
        return number

    return BeforeValidator(parse)


PositiveInt = Annotated[int, _quantity("count", integer=True, minimum=1, what="a positive integer")]
NonNegativeInt = Annotated[int, _quantity("count", integer=True, minimum=0, what="a non-negative integer")]
PositiveBytes = Annotated[int, _quantity("bytes", integer=True, minimum=1,
                                         what='a positive size such as "16 KiB" or 16384')]
Bytes = Annotated[int, _quantity("bytes", integer=True, minimum=0, what='a size such as "16 KiB", 16384 or 0')]
Bandwidth = Annotated[float, _quantity("bandwidth", integer=False, minimum=0,
                                       what='a bandwidth such as "86.4 GB/s"')]
Frequency = Annotated[float, _quantity("frequency", integer=False, minimum=1,
                                       what='a clock such as "1.35 GHz"')]
Flops = Annotated[float, _quantity("flops", integer=False, minimum=0, what='a rate such as "346.5 GFLOPS"')]
PositiveFloat = Annotated[float, _quantity("count", integer=False, minimum=1e-12, what="a positive number")]


def _dims(value: object) -> object:
    if isinstance(value, (list, tuple)) and len(value) == 3:
        return tuple(parse_quantity(v, "count") if isinstance(v, str) else v for v in value)
    raise ValueError(f"expected three integers [x, y, z], got {value!r}")


Dim3 = Annotated[tuple[PositiveInt, PositiveInt, PositiveInt], BeforeValidator(_dims)]


class FieldSource(BaseModel):
    """Where one profile value comes from."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    source: str | None = None
    note: str | None = None

    def keys(self) -> list[str]:
        return [k.strip() for k in re.split(r"[,;]", self.source or "") if k.strip()]


class Throughput(BaseModel):
    """Per-SM (unless said) rates and latencies for the bottleneck model. Every field is optional in a file;
    missing ones are derived as described in :data:`THROUGHPUT_DEFAULTS`."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    shared_bandwidth_bytes_per_clock: PositiveFloat | None = None
    l2_bandwidth_bytes_per_s: Bandwidth | None = None  # device total
    global_latency_cycles: PositiveFloat | None = None
    l2_latency_cycles: PositiveFloat | None = None
    shared_latency_cycles: PositiveFloat | None = None
    l1_hit_latency_cycles: PositiveFloat | None = None
    lsu_requests_per_clock: PositiveFloat | None = None  # warp-level memory instructions per clock per SM
    warp_instructions_per_clock: PositiveFloat | None = None  # warp instructions issued per clock per SM
    # The analyzer's bottleneck model (perfmodel/model/calibration.py says how each default was measured)
    dependent_issue_latency_cycles: PositiveFloat | None = None  # a lone warp's cycles per dependent step
    independent_issue_cycles: PositiveFloat | None = None  # a lone warp's cycles per instruction without dependences
    l1_lines_per_clock: PositiveFloat | None = None  # L1 tag lookups (128-byte lines) per clock per SM
    block_launch_cycles: PositiveFloat | None = None  # cycles between two block launches on one SM
    launch_overhead_s: PositiveFloat | None = None  # launch-to-completion floor of a kernel (CUDA events)
    overlap_exponent: PositiveFloat | None = None  # p of the model's (sum t^p)^(1/p) resource combination
    max_loads_in_flight_per_warp: PositiveFloat | None = None


# field -> (formula text, function of (device fields, throughput fields so far)). Used when a profile leaves the
# field out; the loader records ``source: default`` with the formula as the note.
THROUGHPUT_DEFAULTS: dict[str, tuple[str, Any]] = {
    "shared_bandwidth_bytes_per_clock": (
        "shared_memory_banks x shared_memory_bank_width_bytes",
        lambda d, t: d["shared_memory_banks"] * d["shared_memory_bank_width_bytes"]),
    "l2_bandwidth_bytes_per_s": (
        "2 x dram_bandwidth_bytes_per_s (dram_bandwidth_bytes_per_s where there is no L2); a rough estimate",
        lambda d, t: d["dram_bandwidth_bytes_per_s"] * (2 if d["l2_cache_bytes"] > 0 else 1)),
    "global_latency_cycles": ("400 cycles (PG3.2 section 5.2.3 gives 400-800; LAT-2023 models 400)",
                              lambda d, t: 400.0),
    "l2_latency_cycles": ("200 cycles (LAT-2023 model value)", lambda d, t: 200.0),
    "shared_latency_cycles": ("20 cycles (LAT-2023 model value)", lambda d, t: 20.0),
    "l1_hit_latency_cycles": ("shared_latency_cycles (L1 and shared memory are the same SRAM on 2.x+)",
                              lambda d, t: t["shared_latency_cycles"]),
    "lsu_requests_per_clock": ("lsu_per_sm / warp_size", lambda d, t: d["lsu_per_sm"] / d["warp_size"]),
    "warp_instructions_per_clock": (
        "min(warp_schedulers_per_sm, fp32_lanes_per_sm / warp_size)",
        lambda d, t: min(d["warp_schedulers_per_sm"], d["fp32_lanes_per_sm"] / d["warp_size"])),
}
# The bottleneck model's calibrated constants: the H100 calibration (perfmodel/model/calibration.py), assumed
# where a profile has no measurement of its own.
_CALIBRATED = {
    "dependent_issue_latency_cycles": "DEPENDENT_ISSUE_LATENCY_CYCLES",
    "independent_issue_cycles": "INDEPENDENT_ISSUE_CYCLES",
    "l1_lines_per_clock": "L1_LINES_PER_CLOCK",
    "block_launch_cycles": "BLOCK_LAUNCH_CYCLES",
    "launch_overhead_s": "LAUNCH_OVERHEAD_S",
    "overlap_exponent": "OVERLAP_EXPONENT",
    "max_loads_in_flight_per_warp": "MAX_LOADS_IN_FLIGHT_PER_WARP",
}


def _calibrated(name: str):
    def derive(d, t):
        from perfmodel.model import calibration

        return getattr(calibration, name)
    return derive


for _field, _constant in _CALIBRATED.items():
    THROUGHPUT_DEFAULTS[_field] = (f"the H100 calibration (perfmodel/model/calibration.py {_constant}); "
                                   "not measured on this device", _calibrated(_constant))


class Device(BaseModel):
    """One GPU. Attribute names are a contract: analyzer, simulator and check code read them directly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format_version: Literal[1] = 1
    id: str
    name: str
    architecture: str
    compute_capability: str = Field(pattern=r"^\d+\.\d+$")
    occupancy_rules: str = ""  # which NVIDIA source the allocation rules follow, e.g. "OCC13"
    sources: dict[str, str] = Field(default_factory=dict)
    notes: str = ""

    sm_count: PositiveInt
    fp32_lanes_per_sm: PositiveInt
    fp64_lanes_per_sm: NonNegativeInt = 0
    # FP32 lane slots one lane of a packed-half instruction (HFMA2, HADD2, HMUL2: two results) takes: 2 (each half
    # an FP32 lane operation) unless measured (1 on the H100 / H200: HFMA2 issues at the FFMA rate)
    fp16x2_lane_slots: float = Field(default=2.0, gt=0)
    sfu_per_sm: NonNegativeInt
    lsu_per_sm: PositiveInt
    warp_schedulers_per_sm: PositiveInt
    base_clock_hz: Frequency
    boost_clock_hz: Frequency | None = None
    warp_size: PositiveInt = 32

    max_threads_per_block: PositiveInt
    max_block_dim: Dim3
    max_grid_dim: Dim3
    max_threads_per_sm: PositiveInt
    max_warps_per_sm: PositiveInt
    max_blocks_per_sm: PositiveInt

    registers_per_sm: PositiveInt
    max_registers_per_block: PositiveInt
    max_registers_per_thread: PositiveInt
    register_allocation: Literal["block", "warp"]
    register_allocation_unit: PositiveInt
    register_allocation_unit_overrides: dict[PositiveInt, PositiveInt] = Field(default_factory=dict)
    warp_allocation_granularity: PositiveInt = 1
    register_sub_partitions: PositiveInt = 1

    shared_memory_per_sm: PositiveBytes
    shared_memory_carveouts: tuple[Bytes, ...]
    shared_memory_carveout_fallback: Literal["max", "smallest"] = "smallest"
    shared_memory_per_block: PositiveBytes
    shared_memory_per_block_optin: PositiveBytes
    shared_memory_allocation_unit: PositiveBytes
    reserved_shared_memory_per_block: Bytes = 0
    shared_memory_system_bytes: Bytes = 0
    kernel_params_in_shared_memory: bool = False
    shared_memory_banks: PositiveInt
    shared_memory_bank_width_bytes: PositiveBytes = 4

    constant_memory_bytes: Bytes
    constant_cache_bytes: Bytes
    l1_cache_bytes: Bytes
    l2_cache_bytes: Bytes
    # How a warp's global accesses become memory transactions (perfmodel/sim/coalesce.py, docs/model.md):
    # cc1.0 (CC 1.0/1.1 half-warps), cc1.2 (CC 1.2/1.3 segments), fermi (128-byte L1 lines), kepler (L2-only
    # 32-byte segments), sectors (Maxwell and later: 32-byte sectors, the default).
    global_memory_rule: Literal["cc1.0", "cc1.2", "fermi", "kepler", "sectors"] = "sectors"

    dram_bandwidth_bytes_per_s: Bandwidth
    # The memory interface, where known: cudaDeviceProp.memoryClockRate (the clock the driver reports; the data
    # rate per pin is twice it) and memoryBusWidth. ``devices validate`` checks the DRAM bandwidth against
    # 2 x memory_clock_hz x memory_bus_width_bits / 8.
    memory_clock_hz: Frequency | None = None
    memory_bus_width_bits: PositiveInt | None = None
    peak_fp32_flops: Flops
    peak_fp64_flops: Flops = 0.0

    throughput: Throughput = Field(default_factory=Throughput)
    measured: dict[str, Any] = Field(default_factory=dict)

    # Filled in by the loader, not written in the file.
    provenance: dict[str, FieldSource] = Field(default_factory=dict)
    source_file: str | None = None

    # ---- derived -----------------------------------------------------------------------------------------
    @property
    def cc(self) -> tuple[int, int]:
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)

    @property
    def clock_hz(self) -> float:
        """The clock that peak FLOP/s uses: boost if given, else base (G80: the 1.35 GHz shader clock)."""
        return self.boost_clock_hz if self.boost_clock_hz is not None else self.base_clock_hz

    def __hash__(self) -> int:
        return hash((self.id, self.name, self.source_file))

    def source_of(self, field: str) -> FieldSource:
        """Provenance of ``field`` (``"sm_count"`` or ``"throughput.l2_latency_cycles"``)."""
        return self.provenance.get(field, FieldSource())

    # ---- validation --------------------------------------------------------------------------------------
    @model_validator(mode="before")
    @classmethod
    def _fill_derived(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "max_warps_per_sm" not in data and "max_threads_per_sm" in data:
            try:
                data["max_warps_per_sm"] = int(parse_quantity(data["max_threads_per_sm"], "count")) // int(
                    parse_quantity(data.get("warp_size", 32), "count"))
            except (UnitError, ValueError, ZeroDivisionError):
                pass
        for key, fallback in (("max_registers_per_block", "registers_per_sm"),
                              ("shared_memory_per_block_optin", "shared_memory_per_block")):
            if key not in data and fallback in data:
                data[key] = data[fallback]
        if "shared_memory_carveouts" not in data and "shared_memory_per_sm" in data:
            data["shared_memory_carveouts"] = [data["shared_memory_per_sm"]]
        if isinstance(data.get("notes"), list):
            data["notes"] = "\n".join(str(n) for n in data["notes"])
        return data

    @model_validator(mode="after")
    def _check_consistency(self) -> Device:
        problems: list[tuple[str, str]] = []
        if self.max_warps_per_sm * self.warp_size != self.max_threads_per_sm:
            problems.append(("max_warps_per_sm", f"max_warps_per_sm x warp_size = max_threads_per_sm "
                             f"({self.max_warps_per_sm} x {self.warp_size} != {self.max_threads_per_sm})"))
        if self.max_threads_per_block > self.max_threads_per_sm:
            problems.append(("max_threads_per_block", "at most max_threads_per_sm"))
        if self.max_registers_per_block > self.registers_per_sm:
            problems.append(("max_registers_per_block", "at most registers_per_sm"))
        carveouts = self.shared_memory_carveouts
        if list(carveouts) != sorted(set(carveouts)) or not carveouts:
            problems.append(("shared_memory_carveouts", "a non-empty list of distinct sizes in increasing order"))
        elif carveouts[-1] != self.shared_memory_per_sm:
            problems.append(("shared_memory_carveouts", f"its largest entry to equal shared_memory_per_sm "
                             f"({self.shared_memory_per_sm}), got {carveouts[-1]}"))
        if self.shared_memory_per_block > self.shared_memory_per_block_optin:
            problems.append(("shared_memory_per_block_optin", "at least shared_memory_per_block"))
        if self.shared_memory_per_block_optin + self.reserved_shared_memory_per_block > self.shared_memory_per_sm:
            problems.append(("shared_memory_per_block_optin", "shared_memory_per_block_optin + "
                             "reserved_shared_memory_per_block <= shared_memory_per_sm"))
        problem = _latency_under_load_problem(self.measured.get("dram_latency_under_load"))
        if problem:
            problems.append(("measured.dram_latency_under_load", problem))
        for key in self.provenance:
            for source_key in self.provenance[key].keys():
                if source_key not in self.sources and source_key not in PSEUDO_SOURCES:
                    problems.append((key, f"source {source_key!r} to be a key of 'sources:' "
                                     f"({', '.join(sorted(self.sources)) or 'none defined'}) or one of "
                                     f"{', '.join(PSEUDO_SOURCES)}"))
        if problems:
            field, expected = problems[0]
            raise ValueError(f"@{field}@expected {expected}")
        return self


def _latency_under_load_problem(table: Any) -> str | None:
    """What is wrong with a ``measured.dram_latency_under_load`` table (perfmodel/model/bottleneck.py reads it), or
    None: ``bytes_in_flight_per_sm`` increasing positive numbers, ``latency_ns`` a list of as many positive
    nanoseconds (or null where not measured) per block size, with the smallest block size's first entry given."""
    if table is None:
        return None
    expected = ("a mapping of bytes_in_flight_per_sm (increasing positive numbers) and latency_ns (block size -> "
                "as many positive nanoseconds or null)")
    if not isinstance(table, dict):
        return expected
    xs, series = table.get("bytes_in_flight_per_sm"), table.get("latency_ns")

    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0

    if not isinstance(xs, list) or not xs or not all(number(x) for x in xs) or list(xs) != sorted(set(xs)):
        return expected + f"; got bytes_in_flight_per_sm {xs!r}"
    if not isinstance(series, dict) or not series:
        return expected + f"; got latency_ns {series!r}"
    for block, values in series.items():
        if isinstance(block, bool) or not isinstance(block, int) or block <= 0:
            return expected + f"; got block size {block!r}"
        if (not isinstance(values, list) or len(values) != len(xs)
                or not all(v is None or number(v) for v in values) or all(v is None for v in values)):
            return expected + f"; got {block}: {values!r}"
    if series[min(series)][0] is None:
        return expected + f"; the smallest block size ({min(series)}) needs its first entry"
    return None


# ---------------------------------------------------------------------------------------------------------
# Loading

def _unwrap(raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, FieldSource], list[str]]:
    """Split ``{value, source, note}`` wrappers into plain values and provenance. Returns problems as text."""
    values: dict[str, Any] = {}
    provenance: dict[str, FieldSource] = {}
    problems: list[str] = []

    def split(key: str, value: Any) -> Any:
        if isinstance(value, dict) and "value" in value:
            extra = set(value) - {"value", "source", "note"}
            if extra:
                problems.append(f"field {key!r}: expected only value, source and note, got also "
                                f"{', '.join(sorted(map(str, extra)))}")
            source, note = value.get("source"), value.get("note")
            if source is not None and not isinstance(source, str):
                problems.append(f"field {key!r}: expected source to be text naming a key of 'sources:', "
                                f"got {source!r}")
                source = str(source)
            provenance[key] = FieldSource(source=source, note=None if note is None else str(note))
            return value["value"]
        provenance[key] = FieldSource()
        return value

    for key, value in raw.items():
        key = str(key)
        if key in _META_KEYS:
            values[key] = value
        elif key == "throughput" and isinstance(value, dict):
            values[key] = {str(k): split(f"throughput.{k}", v) for k, v in value.items()}
        else:
            values[key] = split(key, value)
    return values, provenance, problems


def _fill_throughput(provenance: dict[str, FieldSource], device: Device) -> Device:
    """Derive the throughput fields the profile left out (recording ``source: default`` and the formula)."""
    filled = device.throughput.model_dump()
    if all(v is not None for v in filled.values()):
        return device
    basis = device.model_dump()
    new_provenance = dict(provenance)
    for key, (formula, derive) in THROUGHPUT_DEFAULTS.items():  # in order: l1_hit uses shared_latency
        if filled[key] is None:
            filled[key] = derive(basis, filled)
            new_provenance[f"throughput.{key}"] = FieldSource(source="default", note=formula)
    return device.model_copy(update={"throughput": Throughput(**filled), "provenance": new_provenance})


def _describe(error: dict[str, Any]) -> tuple[str, str]:
    loc = ".".join(str(p) for p in error.get("loc", ()) if not str(p).startswith("function-"))
    message = error.get("msg", "invalid")
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    if message.startswith("@"):  # our cross-field check: "@field@expected ..."
        _, loc, message = message.split("@", 2)
        return loc, message
    if error.get("type") == "missing":
        return loc, "expected a value (this field is required)"
    if error.get("type") == "extra_forbidden":
        return loc, "no such field (check the spelling; see `perfmodel devices show g80` for the field names)"
    if message.startswith("Input should be "):
        message = "expected " + message[len("Input should be "):] + f", got {error.get('input')!r}"
    elif message.startswith("String should match pattern"):
        message = f"expected a version such as \"9.0\", got {error.get('input')!r}"
    return loc, message


def _validation_problems(label: str, err: ValidationError) -> list[str]:
    lines = []
    for error in err.errors():
        loc, message = _describe(error)
        lines.append(f"{label}: field {loc!r}: {message}")
    return lines


def _display_path(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def check_device_file(path: str | Path) -> tuple[Device | None, list[str]]:
    """Load and validate one profile; returns (device or None, every problem found as a message)."""
    path = Path(path)
    label = _display_path(path)
    from perfmodel import safeload

    try:
        raw = safeload.parse_yaml(safeload.read_text(path, error=DeviceError, what="device profile"), label,
                                  error=DeviceError)
    except DeviceError as err:
        return None, [str(err)]
    if not isinstance(raw, dict):
        return None, [f"{label}: expected a mapping of field: value at the top level, got {type(raw).__name__}"]
    values, provenance, problems = _unwrap(raw)
    values.setdefault("id", path.stem)
    problems = [f"{label}: {p}" for p in problems]
    try:
        device = Device(**values, provenance=provenance, source_file=str(path))
    except ValidationError as err:
        return None, problems + _validation_problems(label, err)
    if problems:
        return None, problems
    device = _fill_throughput(provenance, device)
    from perfmodel.plausibility import check_device

    implausible, _warnings = check_device(device)
    if implausible:
        return None, [f"{label}: {p}" for p in implausible]
    return device, []


def plausibility_warnings(device: Device) -> list[str]:
    """Values far from the generation's norm or derived figures a little apart (see :mod:`perfmodel.plausibility`);
    never fatal."""
    from perfmodel.plausibility import check_device

    return check_device(device)[1]


def unsourced_fields(device: Device) -> list[str]:
    """Fields the profile file gives without a ``source`` (the standard for shipped profiles is none)."""
    return sorted(key for key, where in device.provenance.items() if not where.keys())


@lru_cache(maxsize=64)
def _load_file_cached(path: str, mtime_ns: int, size: int) -> Device:
    device, problems = check_device_file(path)
    if device is None:
        if len(problems) == 1:
            raise DeviceError(problems[0])
        raise DeviceError(f"{len(problems)} problems in device profile:\n  " + "\n  ".join(problems))
    return device


def load_device_file(path: str | Path) -> Device:
    path = Path(path)
    try:
        stat = path.stat()
    except OSError:
        raise DeviceError(f"{_display_path(path)}: no such device profile file") from None
    return _load_file_cached(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


def search_dirs() -> list[Path]:
    """Folders searched for ``--device NAME``: ``PERFMODEL_DEVICE_PATH`` entries first, then the shipped ones."""
    return search_path(DEVICE_PATH_ENV, "devices")


def device_files() -> dict[str, Path]:
    """Profile name (file stem) -> file, earlier search folders winning."""
    return yaml_files(search_dirs())


def load_device(name_or_path: str | Path | Device) -> Device:
    """A ``Device`` from a profile name (``"g80"``) or a file path (``"my/gpu.yaml"``)."""
    if isinstance(name_or_path, Device):
        return name_or_path
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or text.endswith((".yaml", ".yml")) or os.sep in text \
            or Path(text).is_file():
        return load_device_file(text)
    files = device_files()
    if text in files:
        return load_device_file(files[text])
    names = ", ".join(sorted(files)) or "none"
    raise DeviceError(f"unknown device {text!r}; available: {names} (or give a path to a .yaml profile; "
                      f"{DEVICE_PATH_ENV} adds search folders)")


def list_devices() -> list[Device]:
    """Every profile on the search path, ordered by compute capability then name."""
    devices = [load_device_file(path) for path in device_files().values()]
    return sorted(devices, key=lambda d: (d.cc, d.id))
