"""Kernel specs: ``kernels_spec/NAME.yaml`` beside ``NAME.cu`` - what to launch, with which inputs, checked how.

A spec names the CUDA C source and its entry kernel, the params (problem sizes and tunable ``#define``\\ s) with
defaults, the launch geometry as expressions over the params, the kernel's args in order with their
initialisers, the initial values of ``__constant__`` symbols, and the outputs to check against a named numpy
reference. Example (``kernels_spec/vec_add.yaml``)::

    name: vec_add                           # = the file stem; what users type
    description: "C = A + B, ..."           # one line
    source: vec_add.cu                      # relative to the yaml
    entry: VecAdd                           # the __global__ function
    params:                                 # name -> default, in order
      N: {default: 10000, help: "vector length"}
      BLOCK_SIZE: 256                       # a plain default is fine too
    grid: ["cdiv(N, BLOCK_SIZE)"]           # 1-3 expressions; quote those with a comma in a [..] list
    block: [BLOCK_SIZE]
    args:                                   # the kernel's parameters, in order
      - {name: A, dtype: float32, length: N, init: {random: {seed: 1, low: -1, high: 1}}}
      - {name: C, dtype: float32, length: N, init: zeros}
      - {name: N, dtype: int32, value: N}   # a scalar: an expression
    outputs:
      - {arg: C, reference: vec_add, rtol: 1e-6, atol: 1e-6}

All fields (unknown ones are errors; every error names the file and the field):

- ``params``: ``NAME: DEFAULT`` or ``NAME: {default: DEFAULT, help: TEXT}``. A default may be an expression over
  *earlier* params (``TILE_SIZE: BLOCK_SIZE``): overriding ``BLOCK_SIZE`` then moves ``TILE_SIZE`` with it. A
  param whose name matches a ``#define`` of the source overrides that define (``Launch.defines``, passed to the
  compiler), so ``-D TILE_WIDTH=32`` really rebuilds the kernel. A source ``#define`` that is not declared as a
  param can be overridden too.
- ``constraints``: ``[{expr: "Width % TILE_WIDTH == 0", message: "..."}]`` - checked at instantiation.
- ``grid``, ``block``: lists of 1-3 expressions giving positive integers (padded with 1s).
- ``dynamic_shared_memory``: optional expression, bytes.
- ``args``: arrays ``{name, dtype, length: EXPR | shape: [EXPR, ..], init}``, scalars ``{name, dtype, value: EXPR}``.
  dtypes: float32/float, float64/double, int32/int, uint32/unsigned, int64, int16, int8, uint8, bool.
- ``init``: ``zeros`` (default) | ``arange`` | ``{arange: {start, step}}`` | ``{random: {seed, low, high}}``
  (uniform floats, or ints in [low, high)) | ``{constant: EXPR}`` | ``{values: [..]}`` |
  ``{generator: {name: NAME, field: F, ...args}}`` - a named generator of :mod:`perfmodel.generators`; its
  numeric args are expressions over the params, ``field`` picks one array of a multi-array generator (CSR).
  ``length`` may be left out for ``values`` and ``generator``.
- ``constants``: ``NAME: {dtype, length | shape, init}`` - the initial value of a ``__constant__`` symbol, what
  the host's ``cudaMemcpyToSymbol`` would copy.
- ``outputs``: ``{arg, reference: NAME | {name: NAME, ...options}, rtol, atol}`` - a named numpy reference of
  :mod:`perfmodel.references`, compared with ``numpy.allclose``; ``rtol``/``atol`` may be expressions over the
  params (float32 rounding of a long sum grows with its length).
- ``registers``: optional ``{"9.0": 32, ...}`` registers per thread per compute capability (measured).
- ``tags``, ``notes``: free text.

Expressions (:mod:`perfmodel.expr`): numbers, params, ``+ - * / // % **``, comparisons, ``and/or/not``,
``a if c else b``, ``ceil cdiv floor min max int abs``; never ``eval``.

Specs are found by name in ``$PERFMODEL_KERNEL_PATH`` (os.pathsep-separated folders), then in the shipped
``kernels_spec/``; anything ending in ``.yaml``/``.yml`` or naming a file is loaded as a path.

Usage::

    spec = load_spec("matmul_tiled")                   # shipped name, or a path to a .yaml
    launch = spec.instantiate({"TILE_WIDTH": 32, "Width": 256})
    args = launch.arg_values()                         # fresh copies; the simulator mutates the arrays
    ... simulate(program, launch.grid, launch.block, args, launch.constant_values()) ...
    check = launch.check_outputs(args)                 # OutputCheck(correct, outputs, message)

    outcome = run("matmul_tiled", {"Width": 256})      # all of the above: (launch, program, result, check, args)
"""
from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError, field_validator, \
    model_validator

from perfmodel import expr as _expr
from perfmodel import generators as _generators
from perfmodel import references as _references
from perfmodel.errors import SpecError
from perfmodel.paths import search_path, yaml_files

__all__ = [
    "KernelSpec", "Launch", "ArgValue", "OutputSpec", "OutputResult", "OutputCheck", "RunResult",
    "load_spec", "list_specs", "spec_search_path", "evaluate", "run", "check_outputs", "DTYPES",
]

evaluate = _expr.evaluate

SPEC_PATH_ENV = "PERFMODEL_KERNEL_PATH"

# dtype spellings accepted in specs (numpy names and the C names the kernels use)
DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32), "float": np.dtype(np.float32), "f32": np.dtype(np.float32),
    "float64": np.dtype(np.float64), "double": np.dtype(np.float64), "f64": np.dtype(np.float64),
    "int32": np.dtype(np.int32), "int": np.dtype(np.int32), "i32": np.dtype(np.int32),
    "uint32": np.dtype(np.uint32), "unsigned": np.dtype(np.uint32), "unsigned int": np.dtype(np.uint32),
    "u32": np.dtype(np.uint32),
    "int64": np.dtype(np.int64), "long long": np.dtype(np.int64),
    "uint64": np.dtype(np.uint64),
    "int16": np.dtype(np.int16), "short": np.dtype(np.int16),
    "int8": np.dtype(np.int8), "char": np.dtype(np.int8), "uint8": np.dtype(np.uint8),
    "bool": np.dtype(np.bool_),
    "float16": np.dtype(np.float16), "half": np.dtype(np.float16), "uint16": np.dtype(np.uint16),
    "unsigned short": np.dtype(np.uint16),
}

Expr = StrictInt | StrictFloat | str
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_][A-Za-z0-9_]*)(?![(A-Za-z0-9_])", re.MULTILINE)
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(ifdef|ifndef|if|elif)\b(.*)$", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z_]\w*")


def macro_names(source: str) -> tuple[str, ...]:
    """Object-like macros a source lets the compiler's ``-D`` set, in order of appearance: ``#define N``, and
    the names tested by ``#ifdef N``, ``#ifndef N``, ``#if N > 4``, ``#elif defined(N)``."""
    found = {m.start(): [m.group(1)] for m in _DEFINE.finditer(source)}
    for m in _DIRECTIVE.finditer(source):
        words = _WORD.findall(m.group(2))
        found[m.start()] = words[:1] if m.group(1) in ("ifdef", "ifndef") else [w for w in words if w != "defined" and not w.startswith("__")]
    return tuple(dict.fromkeys(name for _, names in sorted(found.items()) for name in names))


# ==============================================================================================================
# The file schema (pydantic). Field names are the YAML keys.

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ParamSpec(_Strict):
    default: Expr
    help: str | None = None


class ConstraintSpec(_Strict):
    expr: str
    message: str | None = None


class InitSpec(_Strict):
    """One initialiser. YAML forms: ``zeros``, ``arange``, ``{arange: {start, step}}``,
    ``{random: {seed, low, high}}``, ``{constant: EXPR}``, ``{values: [..]}``,
    ``{generator: {name: NAME, field: F, ...kwargs}}``."""

    kind: Literal["zeros", "ones", "arange", "random", "constant", "values", "generator", "file"]
    seed: StrictInt = 0
    low: Expr = 0
    high: Expr = 1
    start: Expr = 0
    step: Expr = 1
    value: Expr = 0
    values: list[StrictInt | StrictFloat] = Field(default_factory=list)
    generator: str | None = None
    field: str | None = None
    kwargs: dict[str, Any] = Field(default_factory=dict)
    path: str | None = None          # file: a .npy file (relative to the spec file)

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, data: Any) -> Any:
        forms = "zeros | ones | arange | random | {arange: {start, step}} | {random: {seed, low, high}} | " \
                "{constant: EXPR} | {values: [...]} | {file: PATH.npy} | {generator: {name, field, ...}}"
        if isinstance(data, InitSpec):
            return data
        if isinstance(data, str):
            if data in ("zeros", "ones", "arange", "random"):
                return {"kind": data}
            raise ValueError(f"unknown initialiser {data!r}; expected {forms}")
        if isinstance(data, dict) and "kind" in data:
            return data
        if not isinstance(data, dict) or len(data) != 1:
            raise ValueError(f"expected one initialiser, {forms}; got {data!r}")
        (kind, options), = data.items()
        if kind in ("zeros", "ones"):
            if options not in (None, {}):
                raise ValueError(f"{kind} takes no options")
            return {"kind": kind}
        if kind == "file":
            if not isinstance(options, str) or not options.strip():
                raise ValueError("file: expected the path of a .npy file")
            return {"kind": "file", "path": options}
        if kind in ("arange", "random"):
            options = options or {}
            if not isinstance(options, dict):
                raise ValueError(f"{kind}: expected a mapping of options, got {options!r}")
            allowed = {"arange": {"start", "step"}, "random": {"seed", "low", "high"}}[kind]
            unknown = set(options) - allowed
            if unknown:
                raise ValueError(f"{kind}: unknown option(s) {', '.join(sorted(unknown))} "
                                 f"(allowed: {', '.join(sorted(allowed))})")
            return {"kind": kind, **options}
        if kind == "constant":
            return {"kind": "constant", "value": options}
        if kind == "values":
            return {"kind": "values", "values": options}
        if kind == "generator":
            if not isinstance(options, dict) or "name" not in options:
                raise ValueError("generator: expected {name: NAME, ...arguments}")
            options = dict(options)
            name = options.pop("name")
            field_name = options.pop("field", None)
            return {"kind": "generator", "generator": name, "field": field_name, "kwargs": options}
        raise ValueError(f"unknown initialiser {kind!r}; expected {forms}")


class ArgSpec(_Strict):
    """A kernel argument: an array (``length`` or ``shape``, ``init``) or a scalar (``value``)."""

    name: str
    dtype: str
    kind: Literal["array", "scalar"] | None = None
    length: Expr | None = None
    shape: list[Expr] | None = None
    init: InitSpec | None = None
    value: Expr | None = None

    @field_validator("name")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not _IDENT.match(value):
            raise ValueError(f"expected a C identifier, got {value!r}")
        return value

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, value: str) -> str:
        if value not in DTYPES:
            raise ValueError(f"unknown dtype {value!r} (known: {', '.join(DTYPES)})")
        return value

    @model_validator(mode="after")
    def _shape_of_arg(self) -> ArgSpec:
        is_scalar = self.value is not None
        kind = self.kind or ("scalar" if is_scalar else "array")
        if kind == "scalar":
            if not is_scalar:
                raise ValueError("a scalar arg needs value: EXPR")
            if self.length is not None or self.shape is not None or self.init is not None:
                raise ValueError("a scalar arg takes value only (no length, shape or init)")
        else:
            if is_scalar:
                raise ValueError("an array arg takes length/shape and init, not value")
            if self.length is not None and self.shape is not None:
                raise ValueError("give length or shape, not both")
            init_kind = self.init.kind if self.init else "zeros"
            if self.length is None and self.shape is None and init_kind not in ("values", "generator", "file"):
                raise ValueError("an array arg needs length: EXPR (or shape: [..])")
        object.__setattr__(self, "kind", kind)
        return self


class ConstantSpec(_Strict):
    """Initial value of a ``__constant__`` symbol (what the host's ``cudaMemcpyToSymbol`` would copy)."""

    dtype: str = "float32"
    length: Expr | None = None
    shape: list[Expr] | None = None
    init: InitSpec

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, value: str) -> str:
        return ArgSpec._dtype(value)

    @model_validator(mode="after")
    def _size(self) -> ConstantSpec:
        if self.length is not None and self.shape is not None:
            raise ValueError("give length or shape, not both")
        if self.length is None and self.shape is None and self.init.kind not in ("values", "generator", "file"):
            raise ValueError("a constant needs length: EXPR (or shape: [..])")
        return self


class OutputSpec(_Strict):
    """An output arg checked with ``numpy.allclose(rtol, atol)`` against a reference: a named numpy reference of
    :mod:`perfmodel.references`, a Python callable (``module:function`` or ``path/to/file.py:function``) or
    the expected values in a ``.npy`` file (see :func:`perfmodel.references.resolve_reference`)."""

    arg: str
    reference: str
    options: dict[str, Any] = Field(default_factory=dict)
    # numbers or expressions over the params (a float32 sum of Width products needs an atol growing with Width)
    rtol: Expr = 1e-5
    atol: Expr = 1e-6

    @model_validator(mode="before")
    @classmethod
    def _reference_form(cls, data: Any) -> Any:
        # reference: NAME  or  reference: {name: NAME, option: value, ...}
        if isinstance(data, dict) and isinstance(data.get("reference"), dict):
            data = dict(data)
            options = dict(data["reference"])
            if "name" not in options:
                raise ValueError("reference: expected NAME or {name: NAME, ...options}")
            data["reference"] = options.pop("name")
            data["options"] = {**options, **data.get("options", {})}
        return data


class SpecModel(_Strict):
    name: str
    description: str | None = None
    source: str
    entry: str
    params: dict[str, Expr | ParamSpec] = Field(default_factory=dict)
    constraints: list[ConstraintSpec] = Field(default_factory=list)
    grid: list[Expr] = Field(min_length=1, max_length=3)
    block: list[Expr] = Field(min_length=1, max_length=3)
    dynamic_shared_memory: Expr | None = None
    args: list[ArgSpec] = Field(default_factory=list)
    constants: dict[str, ConstantSpec] = Field(default_factory=dict)
    outputs: list[OutputSpec] = Field(default_factory=list)
    registers: dict[str, StrictInt] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    notes: str | None = None
    include_dirs: list[str] = Field(default_factory=list)   # -I folders, relative to the spec file

    @field_validator("name")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not _IDENT.match(value):
            raise ValueError(f"expected an identifier, got {value!r}")
        return value

    @field_validator("entry")
    @classmethod
    def _entry(cls, value: str) -> str:
        # a kernel name, or a C++ template name expression as the host code launches it: reduce6<int, 256, true>
        base = value.split("<", 1)[0].strip()
        if not all(_IDENT.match(part) for part in base.split("::")) or value.count("<") != value.count(">"):
            raise ValueError(f"expected a kernel name or a template name expression, got {value!r}")
        return value

    @field_validator("description")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not value or "\n" in value:
            raise ValueError("expected one non-empty line")
        return value

    @field_validator("params")
    @classmethod
    def _param_names(cls, value: dict) -> dict:
        for name in value:
            if not _IDENT.match(name):
                raise ValueError(f"param name {name!r} is not an identifier")
            if name in _expr.FUNCTIONS:
                raise ValueError(f"param name {name!r} clashes with the expression function {name}()")
        return value

    @field_validator("registers")
    @classmethod
    def _registers(cls, value: dict) -> dict:
        for cc, count in value.items():
            if not re.match(r"^\d+\.\d+$", str(cc)):
                raise ValueError(f"expected compute capabilities like '9.0' as keys, got {cc!r}")
            if not 1 <= count <= 255:
                raise ValueError(f"registers per thread for {cc} must be in 1..255, got {count}")
        return value


# ==============================================================================================================
# Launch: one instantiation of a spec

@dataclass(frozen=True)
class ArgValue:
    name: str
    kind: str                  # "array" | "scalar"
    dtype: np.dtype
    value: Any                 # np.ndarray (initial contents) or a Python int/float

    def to_json(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "dtype": str(self.dtype)}
        if self.kind == "array":
            out["length"] = int(self.value.size)
        else:
            out["value"] = self.value
        return out


class OutputResult(NamedTuple):
    name: str
    max_abs_error: float
    max_rel_error: float
    ok: bool
    reference: str = ""
    checked_elements: int = 0

    def to_json(self) -> dict:
        return self._asdict()


#: The message of a launch that names no reference: its outputs are not checked (``correct`` is None, never True).
NOT_CHECKED = ("not checked: no reference given (name one with --check OUTPUT=REFERENCE, or 'outputs:' in a "
               "spec: a Python function module:function or the expected values in a .npy file)")


@dataclass(frozen=True)
class OutputCheck:
    correct: bool | None           # None: no reference, nothing was checked
    outputs: list[OutputResult]
    message: str

    def to_json(self) -> dict:
        return {"correct": self.correct, "outputs": [o.to_json() for o in self.outputs], "message": self.message}


@dataclass(frozen=True, eq=False)
class Launch:
    spec: KernelSpec
    params: dict[str, int | float]
    defines: dict[str, int | float]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int
    args: list[ArgValue]
    constants: dict[str, np.ndarray]
    outputs: list[OutputSpec]
    registers: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def source_path(self) -> Path:
        return self.spec.source_path

    @property
    def entry(self) -> str:
        return self.spec.entry

    @property
    def total_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def total_threads(self) -> int:
        return self.total_blocks * self.threads_per_block

    def arg(self, name: str) -> ArgValue:
        for arg in self.args:
            if arg.name == name:
                return arg
        raise SpecError(f"{self.spec.path}: no arg named {name!r} (args: {', '.join(a.name for a in self.args)})")

    def arg_values(self) -> list[Any]:
        """The args for the simulator, in order: fresh array copies (the run mutates them) and Python scalars."""
        return [arg.value.copy() if arg.kind == "array" else arg.value for arg in self.args]

    def constant_values(self) -> dict[str, np.ndarray]:
        """Fresh copies of the ``__constant__`` initial values."""
        return {name: value.copy() for name, value in self.constants.items()}

    def registers_for(self, compute_capability: str) -> int | None:
        return self.registers.get(compute_capability)

    @cached_property
    def _context(self) -> dict[str, Any]:
        args = {}
        for arg in self.args:
            if arg.kind == "array":
                view = arg.value.view()
                view.flags.writeable = False
                args[arg.name] = view
            else:
                args[arg.name] = arg.value
        return args

    def expected(self, output: str) -> np.ndarray:
        """The reference values of output arg ``output`` (flattened, float64 or int64), computed once."""
        cache = self.__dict__.setdefault("_expected_cache", {})
        if output not in cache:
            spec_output = next((o for o in self.outputs if o.arg == output), None)
            if spec_output is None:
                raise SpecError(f"{self.spec.path}: {output!r} is not a checked output "
                                f"(outputs: {', '.join(o.arg for o in self.outputs)})")
            ref = self.spec.reference_for(spec_output)
            context = _references.ReferenceContext(self._context, self.constants, self.params, output)
            try:
                values = ref.function(context, **spec_output.options)
            except SpecError as err:
                raise SpecError(f"{self.spec.path}: field 'outputs' ({output}): {err.message}") from None
            except TypeError as err:
                raise SpecError(f"{self.spec.path}: field 'outputs' ({output}): reference "
                                f"{spec_output.reference!r} rejected its options: {err}") from None
            if isinstance(values, Mapping):   # a user function may return every output by name
                if output not in values:
                    raise SpecError(f"{self.spec.path}: field 'outputs' ({output}): reference "
                                    f"{spec_output.reference!r} returned a dict without {output!r} "
                                    f"(keys: {', '.join(map(str, values))})")
                values = values[output]
            try:
                cache[output] = np.asarray(values, dtype=None if np.asarray(values).dtype != object else float
                                           ).reshape(-1)
            except (TypeError, ValueError) as err:
                raise SpecError(f"{self.spec.path}: field 'outputs' ({output}): reference "
                                f"{spec_output.reference!r} did not return an array of numbers ({err})") from None
        return cache[output]

    def check_outputs(self, args_after_run: Sequence[Any] | Mapping[str, Any],
                      elements: Mapping[str, Any] | None = None) -> OutputCheck:
        """Compare the output args after a run with the references.

        ``args_after_run``: the list given to the simulator (in arg order) or a dict name -> array.
        ``elements`` (optional): output name -> index array or boolean mask of the elements to check (e.g. the
        elements written by the sampled blocks of a sampled run); others are ignored."""
        if isinstance(args_after_run, Mapping):
            by_name = dict(args_after_run)
        else:
            if len(args_after_run) != len(self.args):
                raise SpecError(f"{self.spec.path}: check_outputs got {len(args_after_run)} args, "
                                f"the kernel takes {len(self.args)}")
            by_name = {arg.name: value for arg, value in zip(self.args, args_after_run)}
        if not self.outputs:
            return OutputCheck(None, [], NOT_CHECKED)
        results: list[OutputResult] = []
        problems: list[str] = []
        for output in self.outputs:
            if output.arg not in by_name:
                raise SpecError(f"{self.spec.path}: check_outputs is missing output {output.arg!r}")
            actual = np.asarray(by_name[output.arg]).reshape(-1)
            expected = self.expected(output.arg)
            if actual.size != expected.size:
                problems.append(f"{output.arg}: {actual.size} elements, reference has {expected.size}")
                results.append(OutputResult(output.arg, math.inf, math.inf, False, output.reference, 0))
                continue
            if elements is not None and output.arg in elements:
                selector = np.asarray(elements[output.arg])
                actual, expected = actual[selector], expected[selector]
            actual64 = actual.astype(np.float64)
            expected64 = expected.astype(np.float64)
            diff = np.abs(actual64 - expected64)
            finite = bool(np.all(np.isfinite(actual64)))
            max_abs = float(diff.max()) if diff.size else 0.0
            nonzero = np.abs(expected64) > 0
            max_rel = float((diff[nonzero] / np.abs(expected64[nonzero])).max()) if nonzero.any() else (
                0.0 if max_abs == 0 else math.inf)
            ok = finite and bool(np.allclose(actual64, expected64, rtol=output.rtol, atol=output.atol))
            if not ok:
                bad = ~np.isclose(actual64, expected64, rtol=output.rtol, atol=output.atol)
                first = int(np.flatnonzero(bad)[0]) if bad.any() else 0
                problems.append(
                    f"{output.arg}: {int(bad.sum())} of {actual.size} elements differ from reference "
                    f"{output.reference!r} (max abs error {max_abs:.3g}, max rel error {max_rel:.3g}; first at "
                    f"[{first}]: got {actual64[first]:.7g}, expected {expected64[first]:.7g}; "
                    f"rtol={output.rtol:g}, atol={output.atol:g})")
            results.append(OutputResult(output.arg, max_abs, max_rel, ok, output.reference, int(actual.size)))
        correct = not problems
        if correct:
            message = "outputs match the reference" + ("s" if len(results) != 1 else "") + ": " + ", ".join(
                f"{r.name} (max abs error {r.max_abs_error:.3g})" for r in results)
        else:
            message = "; ".join(problems)
        return OutputCheck(correct, results, message)

    def to_json(self) -> dict:
        return {
            "kernel": self.spec.name,
            "entry": self.spec.entry,
            "source": str(self.spec.source_path),
            "params": dict(self.params),
            "defines": dict(self.defines),
            "grid": list(self.grid),
            "block": list(self.block),
            "total_blocks": self.total_blocks,
            "threads_per_block": self.threads_per_block,
            "dynamic_shared_bytes": self.dynamic_shared_bytes,
            "args": [a.to_json() for a in self.args],
            "constants": {name: {"dtype": str(v.dtype), "length": int(v.size)} for name, v in self.constants.items()},
            "registers": dict(self.registers),
        }


def check_outputs(launch: Launch, args_after_run: Sequence[Any] | Mapping[str, Any]) -> OutputCheck:
    """Function form of :meth:`Launch.check_outputs`."""
    return launch.check_outputs(args_after_run)


# ==============================================================================================================
# KernelSpec: a validated spec file

class KernelSpec:
    """A loaded, validated kernel spec. ``instantiate(overrides)`` makes a :class:`Launch`."""

    def __init__(self, model: SpecModel, path: Path):
        self.model = model
        self.path = path
        self.source_path = (path.parent / model.source).resolve()
        self._param_exprs: dict[str, Expr] = {}
        self.param_help: dict[str, str] = {}
        for name, value in model.params.items():
            if isinstance(value, ParamSpec):
                self._param_exprs[name] = value.default
                if value.help:
                    self.param_help[name] = value.help
            else:
                self._param_exprs[name] = value
        self.source_defines: tuple[str, ...] = macro_names(self.source_text)
        self._check()
        self.params: dict[str, int | float] = self._resolve({})

    # --- simple attributes -------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.model.name

    @property
    def description(self) -> str:
        return self.model.description or ""

    @property
    def label(self) -> str:
        """How reports name the kernel: the spec's name (a command-line launch shows its entry expression)."""
        return self.__dict__.get("_label") or self.model.name

    @property
    def include_dirs(self) -> tuple[str, ...]:
        """``-I`` folders for the compiler, made absolute relative to the spec file."""
        return tuple(str((self.path.parent / d).resolve()) for d in self.model.include_dirs)

    @cached_property
    def fingerprint(self) -> str:
        """A hash of the validated spec: two specs with the same file path but different contents (two command
        lines on one .cu file) never share a cached simulation."""
        import hashlib

        return hashlib.sha256(self.model.model_dump_json().encode()).hexdigest()[:16]

    def input_files_state(self) -> tuple:
        """(path, mtime, size) of the files the launch reads besides the source: ``.npy`` initialisers and
        references, ``file.py:function`` references (a cached simulation is reused only while they are unchanged)."""
        paths = [arg.init.path for arg in self.model.args if arg.init is not None and arg.init.kind == "file"]
        for output in self.model.outputs:
            ref = output.reference
            if ref.endswith(".npy"):
                paths.append(ref)
            elif ".py:" in ref:
                paths.append(ref.rpartition(":")[0])
        state = []
        for text in paths:
            path = (self.path.parent / Path(text).expanduser()).resolve()
            state.append((str(path), _stat_key(path)))
        return tuple(state)

    def reference_for(self, output: OutputSpec) -> _references.Reference:
        """The reference function an output is checked against (named, a Python callable or a .npy file)."""
        inline = self.__dict__.get("inline_references") or {}
        if output.reference in inline:
            return inline[output.reference]
        return _references.resolve_reference(output.reference, base_dir=self.path.parent)

    @property
    def entry(self) -> str:
        return self.model.entry

    @property
    def tags(self) -> list[str]:
        return list(self.model.tags)

    @property
    def notes(self) -> str | None:
        return self.model.notes

    @property
    def registers(self) -> dict[str, int]:
        return dict(self.model.registers)

    @property
    def outputs(self) -> list[OutputSpec]:
        return list(self.model.outputs)

    @cached_property
    def source_text(self) -> str:
        from perfmodel import safeload

        try:
            return safeload.read_text(self.source_path, error=SpecError, what="CUDA source")
        except SpecError as err:
            raise SpecError(f"{self.path}: field 'source': {err}", location=err.location) from None

    def __repr__(self) -> str:
        return f"KernelSpec({self.name!r}, path={str(self.path)!r})"

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "path": str(self.path),
            "source": str(self.source_path),
            "entry": self.entry,
            "params": dict(self.params),
            "param_help": dict(self.param_help),
            "defines": [name for name in self._param_exprs if name in self.source_defines],
            "grid": list(self.model.grid),
            "block": list(self.model.block),
            "tags": self.tags,
            "registers": self.registers,
            "notes": self.notes,
        }

    # --- load-time checks --------------------------------------------------------------------------------------
    def _check(self) -> None:
        file = str(self.path)
        model = self.model
        # the entry kernel must be in the source
        base_name = model.entry.split("<", 1)[0].strip().split("::")[-1]   # a template name expression
        if not re.search(rf"\b{re.escape(base_name)}\s*[(<]", self.source_text):
            raise SpecError(f"{file}: field 'entry': no function {model.entry!r} in {self.source_path.name}")
        # params: each default may use only earlier params
        seen: set[str] = set()
        for name, value in self._param_exprs.items():
            field_name = f"params.{name}"
            _expr.check_syntax(value, file=file, field=field_name)
            self._check_names(value, seen, field_name, "earlier params")
            seen.add(name)
        known = set(self._param_exprs) | set(self.source_defines)
        for i, constraint in enumerate(model.constraints):
            field_name = f"constraints[{i}].expr"
            _expr.check_syntax(constraint.expr, file=file, field=field_name)
            self._check_names(constraint.expr, known, field_name)
        for axis, exprs in (("grid", model.grid), ("block", model.block)):
            for i, value in enumerate(exprs):
                _expr.check_syntax(value, file=file, field=f"{axis}[{i}]")
                self._check_names(value, known, f"{axis}[{i}]")
        if model.dynamic_shared_memory is not None:
            _expr.check_syntax(model.dynamic_shared_memory, file=file, field="dynamic_shared_memory")
            self._check_names(model.dynamic_shared_memory, known, "dynamic_shared_memory")
        names = [arg.name for arg in model.args]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise SpecError(f"{file}: field 'args': duplicate arg name(s) {', '.join(sorted(duplicates))}")
        for i, arg in enumerate(model.args):
            base = f"args[{i}]"
            self._check_sized(arg.length, arg.shape, arg.init, base, known)
            if arg.value is not None:
                _expr.check_syntax(arg.value, file=file, field=f"{base}.value")
                self._check_names(arg.value, known, f"{base}.value")
        for name, constant in model.constants.items():
            if not _IDENT.match(name):
                raise SpecError(f"{file}: field 'constants': {name!r} is not an identifier")
            self._check_sized(constant.length, constant.shape, constant.init, f"constants.{name}", known)
        arrays = {arg.name for arg in model.args if arg.kind == "array"}
        for i, output in enumerate(model.outputs):
            if output.arg not in arrays:
                raise SpecError(f"{file}: field 'outputs[{i}].arg': {output.arg!r} is not an array arg "
                                f"(array args: {', '.join(sorted(arrays)) or 'none'})")
            try:
                ref = self.reference_for(output)
            except SpecError as err:
                raise SpecError(f"{file}: field 'outputs[{i}].reference': {err.message}") from None
            for key in ("rtol", "atol"):
                value = getattr(output, key)
                _expr.check_syntax(value, file=file, field=f"outputs[{i}].{key}")
                self._check_names(value, known, f"outputs[{i}].{key}")
            unknown = set(output.options) - set(ref.options)
            if unknown and ref.options != ("*",):
                raise SpecError(f"{file}: field 'outputs[{i}].reference': reference {ref.name!r} has no option(s) "
                                f"{', '.join(sorted(unknown))} (options: {', '.join(ref.options) or 'none'})")

    def _check_names(self, value: Expr | None, known: set[str], field_name: str, what: str = "params") -> None:
        unknown = _expr.names_in(value) - known if isinstance(value, str) else set()
        if unknown:
            raise SpecError(f"{self.path}: field '{field_name}': unknown name(s) {', '.join(sorted(unknown))} in "
                            f"expression {value!r} (known {what}: {', '.join(sorted(known)) or 'none'})")

    def _check_sized(self, length, shape, init: InitSpec | None, base: str, known: set[str]) -> None:
        file = str(self.path)
        if length is not None:
            _expr.check_syntax(length, file=file, field=f"{base}.length")
            self._check_names(length, known, f"{base}.length")
        for j, value in enumerate(shape or []):
            _expr.check_syntax(value, file=file, field=f"{base}.shape[{j}]")
            self._check_names(value, known, f"{base}.shape[{j}]")
        if init is None:
            return
        for key in ("low", "high", "start", "step", "value"):
            value = getattr(init, key)
            _expr.check_syntax(value, file=file, field=f"{base}.init.{key}")
            self._check_names(value, known, f"{base}.init.{key}")
        if init.kind == "file":
            self._npy_path(init.path or "", f"{base}.init.file")
        if init.kind == "generator":
            try:
                gen = _generators.get_generator(init.generator or "")
            except SpecError as err:
                raise SpecError(f"{file}: field '{base}.init.generator': {err.message}") from None
            unknown = set(init.kwargs) - set(gen.kinds)
            if unknown:
                raise SpecError(f"{file}: field '{base}.init.generator': generator {gen.name!r} has no argument(s) "
                                f"{', '.join(sorted(unknown))} (it takes: {', '.join(gen.kinds) or 'none'})")
            missing = gen.required - set(init.kwargs)
            if missing:
                raise SpecError(f"{file}: field '{base}.init.generator': generator {gen.name!r} needs "
                                f"argument(s) {', '.join(sorted(missing))}")
            if gen.fields and init.field not in gen.fields:
                raise SpecError(f"{file}: field '{base}.init.generator.field': generator {gen.name!r} makes "
                                f"several arrays; pick one with field: {' | '.join(gen.fields)}")
            if not gen.fields and init.field is not None:
                raise SpecError(f"{file}: field '{base}.init.generator.field': generator {gen.name!r} makes one "
                                "array; remove field")
            for key, value in init.kwargs.items():
                if gen.kinds[key] == "expr":
                    _expr.check_syntax(value, file=file, field=f"{base}.init.generator.{key}")
                    self._check_names(value, known, f"{base}.init.generator.{key}")

    def _npy_path(self, text: str, field_name: str) -> Path:
        path = (self.path.parent / Path(text).expanduser()).resolve()
        if not path.is_file():
            raise SpecError(f"{self.path}: field '{field_name}': no such .npy file {text!r} (looked at {path})")
        return path

    # --- instantiation -----------------------------------------------------------------------------------------
    @property
    def known_names(self) -> list[str]:
        return list(self._param_exprs) + [d for d in self.source_defines if d not in self._param_exprs]

    def _resolve(self, overrides: Mapping[str, Any]) -> dict[str, int | float]:
        file = str(self.path)
        known = self.known_names
        unknown = [name for name in overrides if name not in known]
        if unknown:
            raise SpecError(f"{file}: unknown param(s) {', '.join(unknown)} for kernel {self.name!r} "
                            f"(known: {', '.join(known) or 'none'})")
        resolved: dict[str, int | float] = {}
        for name, value in self._param_exprs.items():
            if name in overrides:
                resolved[name] = self._override_value(name, overrides[name])
            else:
                result = _expr.evaluate(value, resolved, file=file, field=f"params.{name}")
                resolved[name] = _normalise_number(result, file, f"params.{name}")
        for name in overrides:
            if name not in resolved:  # a source #define the spec does not declare as a param
                resolved[name] = self._override_value(name, overrides[name])
        return resolved

    def _override_value(self, name: str, value: Any) -> int | float:
        """An override keeps the kind of the param's default: an integral float for an int param becomes int."""
        file = str(self.path)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise SpecError(f"{file}: param {name}: expected a number, got {value!r}")
        value = value.item() if isinstance(value, np.generic) else value
        # (self.params, the defaults, exists once __init__ has resolved them; it resolves without overrides)
        default_is_int = isinstance(self.params.get(name), int)
        if isinstance(value, float) and value.is_integer() and default_is_int:
            value = int(value)
        if isinstance(value, float) and default_is_int:
            raise SpecError(f"{file}: param {name}: expected an integer, got {value!r}")
        return value

    def instantiate(self, overrides: Mapping[str, Any] | None = None) -> Launch:
        """Resolve the params (defaults + ``overrides``), check the constraints, evaluate the launch geometry and
        build the initial args and constants. Unknown param names raise a SpecError listing the known ones."""
        file = str(self.path)
        model = self.model
        params = self._resolve(dict(overrides or {}))
        for i, constraint in enumerate(model.constraints):
            ok = _expr.evaluate(constraint.expr, params, file=file, field=f"constraints[{i}].expr")
            if not ok:
                used = sorted(_expr.names_in(constraint.expr))
                values = ", ".join(f"{n}={params[n]}" for n in used if n in params)
                message = f" ({constraint.message})" if constraint.message else ""
                raise SpecError(f"{file}: constraint {constraint.expr!r} does not hold for {values}{message}")
        defines = {name: params[name] for name in params if name in self.source_defines}
        grid = self._dims(model.grid, params, "grid")
        block = self._dims(model.block, params, "block")
        dynamic = 0
        if model.dynamic_shared_memory is not None:
            dynamic = _expr.evaluate_int(model.dynamic_shared_memory, params, file=file,
                                         field="dynamic_shared_memory", minimum=0)
        cache: dict = {}
        args: list[ArgValue] = []
        for i, arg in enumerate(model.args):
            dtype = DTYPES[arg.dtype]
            if arg.kind == "scalar":
                value = _expr.evaluate(arg.value, params, file=file, field=f"args[{i}].value")
                args.append(ArgValue(arg.name, "scalar", dtype, _scalar(value, dtype, file, f"args[{i}].value")))
            else:
                array = self._array(arg.length, arg.shape, arg.init, dtype, params, f"args[{i}]", cache)
                args.append(ArgValue(arg.name, "array", dtype, array))
        constants = {}
        for name, constant in model.constants.items():
            constants[name] = self._array(constant.length, constant.shape, constant.init, DTYPES[constant.dtype],
                                          params, f"constants.{name}", cache)
        outputs = []
        for i, output in enumerate(model.outputs):
            tolerances = {}
            for key in ("rtol", "atol"):
                value = _expr.evaluate(getattr(output, key), params, file=file, field=f"outputs[{i}].{key}")
                if isinstance(value, bool) or not value >= 0:
                    raise SpecError(f"{file}: field 'outputs[{i}].{key}': expected a number >= 0, got {value!r}")
                tolerances[key] = float(value)
            outputs.append(output.model_copy(update=tolerances))
        return Launch(self, params, defines, grid, block, dynamic, args, constants, outputs, dict(model.registers))

    def _dims(self, exprs: list[Expr], params: Mapping[str, Any], axis: str) -> tuple[int, int, int]:
        dims = [_expr.evaluate_int(value, params, file=str(self.path), field=f"{axis}[{i}]", minimum=1)
                for i, value in enumerate(exprs)]
        return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]

    def _array(self, length, shape, init: InitSpec | None, dtype: np.dtype, params: Mapping[str, Any],
               base: str, cache: dict) -> np.ndarray:
        file = str(self.path)
        size: int | None = None
        if length is not None:
            size = _expr.evaluate_int(length, params, file=file, field=f"{base}.length", minimum=0)
        elif shape is not None:
            size = 1
            for j, value in enumerate(shape):
                size *= _expr.evaluate_int(value, params, file=file, field=f"{base}.shape[{j}]", minimum=0)
        init = init or InitSpec(kind="zeros")
        where = f"{file}: field '{base}.init'"
        if size is not None:
            _reserve(cache, size * dtype.itemsize, f"{file}: field '{base}'", size)
        if init.kind == "zeros":
            return np.zeros(size, dtype=dtype)
        if init.kind == "ones":
            return np.ones(size, dtype=dtype)
        if init.kind == "file":
            array = _references.load_npy(self._npy_path(init.path or "", f"{base}.init.file"), where)
            if size is not None and array.size != size:
                raise SpecError(f"{where}: {init.path} holds {array.size:,} elements but the length is {size:,}")
            return array.reshape(-1).astype(dtype)
        if init.kind == "arange":
            start = _expr.evaluate(init.start, params, file=file, field=f"{base}.init.start")
            step = _expr.evaluate(init.step, params, file=file, field=f"{base}.init.step")
            return (start + step * np.arange(size)).astype(dtype)
        if init.kind == "constant":
            value = _expr.evaluate(init.value, params, file=file, field=f"{base}.init.constant")
            return np.full(size, value, dtype=dtype)
        if init.kind == "random":
            low = _expr.evaluate(init.low, params, file=file, field=f"{base}.init.low")
            high = _expr.evaluate(init.high, params, file=file, field=f"{base}.init.high")
            if not high > low:
                raise SpecError(f"{where}: random needs high > low, got low={low}, high={high}")
            rng = np.random.default_rng(init.seed)
            if dtype.kind in "iu":
                return rng.integers(int(low), int(high), size=size).astype(dtype)
            if dtype.kind == "b":
                return rng.random(size) < 0.5
            return rng.uniform(low, high, size=size).astype(dtype)
        if init.kind == "values":
            array = np.asarray(init.values, dtype=dtype)
            if size is not None and array.size != size:
                raise SpecError(f"{where}: values has {array.size} elements but the length is {size}")
            return array
        # generator
        kwargs = {}
        gen = _generators.get_generator(init.generator or "")
        for key, value in init.kwargs.items():
            if gen.kinds.get(key) == "expr":
                kwargs[key] = _expr.evaluate(value, params, file=file, field=f"{base}.init.generator.{key}")
            else:
                kwargs[key] = value
        array = _generators.call(gen.name, kwargs, length=size, field_name=init.field, cache=cache, where=where)
        return array.astype(dtype)


def _normalise_number(value: Any, file: str, field_name: str) -> int | float:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    raise SpecError(f"{file}: field '{field_name}': expected a number, got {value!r}")


def _scalar(value: Any, dtype: np.dtype, file: str, field_name: str) -> int | float:
    if dtype.kind in "iu":
        if isinstance(value, float):
            if not value.is_integer():
                raise SpecError(f"{file}: field '{field_name}': {dtype} scalar got non-integer {value!r}")
            value = int(value)
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise SpecError(f"{file}: field '{field_name}': {value} does not fit in {dtype}")
        return int(value)
    if dtype.kind == "b":
        return bool(value)
    return float(value)


# ==============================================================================================================
# Loading

# (yaml path, mtime, size) -> (spec, (source mtime, size)): a spec is reloaded when its yaml or its .cu changes
# (the .cu's #defines decide which params are passed to the compiler as defines).
_CACHE: dict[tuple[str, int, int], tuple[KernelSpec, tuple[int, int] | None]] = {}


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def spec_search_path() -> list[Path]:
    """Folders searched for a spec name: ``$PERFMODEL_KERNEL_PATH`` (os.pathsep-separated), then the shipped
    ``kernels_spec/``."""
    return search_path(SPEC_PATH_ENV, "kernels_spec")


def _format_loc(loc: tuple) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif text:
            text += f".{part}"
        else:
            text = str(part)
    return text


_SCALAR_TYPE_ERRORS = {"int_type", "float_type", "string_type", "int_parsing", "float_parsing", "int_from_float"}
_MAPPING_TYPE_ERRORS = {"model_type", "dict_type", "model_attributes_type"}


def _validation_error(path: Path, err: ValidationError) -> SpecError:
    """One message naming the file and each offending field. A union field (number | expression |
    {default, help}) reports one problem per alternative in pydantic; they are folded into one line."""
    by_loc: dict[str, list[dict]] = {}
    for item in err.errors():
        loc = tuple(p for p in item["loc"] if not (isinstance(p, str) and (
            p.startswith("function-") or p in ("int", "float", "str", "ParamSpec"))))
        by_loc.setdefault(_format_loc(loc), []).append(item)
    # a mapping given where a number | expression | mapping is allowed: the mapping branch's problems (deeper
    # fields) say what is wrong, the "not a number" ones do not
    for loc in list(by_loc):
        if any(other.startswith(loc + ".") for other in by_loc):
            kept = [item for item in by_loc[loc] if item["type"] not in _SCALAR_TYPE_ERRORS]
            if kept:
                by_loc[loc] = kept
            else:
                del by_loc[loc]
    problems = []
    for loc, items in by_loc.items():
        given = items[0].get("input")
        if isinstance(given, dict):  # the mapping branch's own problems are the useful ones
            items = [item for item in items if item["type"] not in _SCALAR_TYPE_ERRORS] or items
        types = {item["type"] for item in items}
        if len(items) > 1 and types <= _SCALAR_TYPE_ERRORS | _MAPPING_TYPE_ERRORS:
            what = "a number or an expression" + (" or {default, help}" if types & _MAPPING_TYPE_ERRORS else "")
            problems.append(f"field '{loc}': expected {what}, got {given!r}")
            continue
        for item in items:
            message = item["msg"]
            if message.startswith("Value error, "):
                message = message[len("Value error, "):]
            if item["type"] == "extra_forbidden":
                message = "unknown field"
            elif item["type"] == "missing":
                message = "required field is missing"
            value = item.get("input")
            shown = "" if item["type"] in ("missing", "extra_forbidden") or isinstance(value, (dict, list)) \
                or "got" in message else f" (got {value!r})"
            problems.append(f"field '{loc}': {message}{shown}")
    return SpecError(f"{path}: " + "; ".join(dict.fromkeys(problems)))


def _load_file(path: Path) -> KernelSpec:
    try:
        stat = path.stat()
    except OSError as err:
        raise SpecError(f"{path}: cannot read kernel spec ({err.strerror})") from None
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    cached = _CACHE.get(key)
    if cached is not None and cached[1] == _stat_key(cached[0].source_path):
        return cached[0]
    from perfmodel import safeload

    data = safeload.parse_yaml(safeload.read_text(path, error=SpecError, what="kernel spec"), str(path),
                               error=SpecError, invalid="malformed YAML")
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a YAML mapping with name, source, entry, params, grid, block, args, ...")
    try:
        model = SpecModel.model_validate(data)
    except ValidationError as err:
        raise _validation_error(path, err) from None
    spec = KernelSpec(model, path.resolve())
    _CACHE[key] = (spec, _stat_key(spec.source_path))
    return spec


def _candidates() -> dict[str, Path]:
    return yaml_files(spec_search_path())


def load_spec(name_or_path: str | os.PathLike | KernelSpec) -> KernelSpec:
    """A shipped spec by name (``"matmul_tiled"``), a spec on ``$PERFMODEL_KERNEL_PATH``, or a ``.yaml`` path."""
    if isinstance(name_or_path, KernelSpec):
        return name_or_path
    text = str(name_or_path)
    path = Path(text)
    try:
        is_file = path.is_file()
    except OSError as err:  # e.g. a name too long for the file system
        from perfmodel.safeload import path_error

        raise path_error(text, err, error=SpecError, what="kernel spec file") from None
    if text.endswith((".yaml", ".yml")) or os.sep in text or is_file:
        if not is_file:
            raise SpecError(f"{text}: no such kernel spec file")
        return _load_file(path)
    candidates = _candidates()
    if text in candidates:
        return _load_file(candidates[text])
    raise SpecError(f"unknown kernel {text!r} (available: {', '.join(sorted(candidates)) or 'none'}); "
                    "give a shipped name or a path to a spec .yaml")


def list_specs() -> list[KernelSpec]:
    """Every spec on the search path (shipped ones included), sorted by name."""
    return [_load_file(path) for _, path in sorted(_candidates().items())]


def _reserve(cache: dict, nbytes: int, where: str, size: int) -> None:
    """Refuse an argument array that would take the launch's arrays over the memory budget, before allocating."""
    from perfmodel.limits import human, memory_budget

    total = cache.get("__bytes__", 0) + nbytes
    budget = memory_budget()
    if total > budget:
        raise SpecError(f"{where}: {size:,} elements ({human(nbytes)}) take this launch's argument arrays to "
                        f"{human(total)}, over the memory budget of {human(budget)} (half the machine's memory, or "
                        "$PERFMODEL_MAX_MEMORY); use a smaller problem size - the counts of large grids come from "
                        "a sample of blocks, but the arrays are still allocated whole")
    cache["__bytes__"] = total


# ==============================================================================================================
# One call: spec -> launch -> compile -> simulate -> check

@dataclass(frozen=True, eq=False)
class RunResult:
    """What :func:`run` did. Unpacks as ``launch, program, result, check = run(...)``; ``args`` holds the args
    after the run (the output arrays as the kernel left them)."""

    launch: Launch
    program: Any                 # perfmodel.kernel.KernelProgram
    result: Any                  # perfmodel.sim.SimResult
    check: OutputCheck | None    # None for a sampled run (block_ids given): outputs are only partly written
    args: list[Any]

    def __iter__(self):
        return iter((self.launch, self.program, self.result, self.check))


def run(spec_or_name: str | os.PathLike | KernelSpec, params: Mapping[str, Any] | None = None, *,
        block_ids: Any = None, **simulate_kwargs: Any) -> RunResult:
    """Instantiate a spec, compile its kernel with the param ``#define``\\ s, simulate it and check the outputs.

    ``block_ids`` (optional) simulates only those linear block ids (sampled mode); the outputs are then not
    checked (``check`` is None). Other keyword arguments go to :func:`perfmodel.sim.simulate`."""
    spec = load_spec(spec_or_name)
    launch = spec.instantiate(params)

    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    arch = simulate_kwargs.pop("arch", "sm_90")
    program = load_kernel(launch.source_path, entry=launch.entry, defines=launch.defines, arch=arch,
                          include_dirs=spec.include_dirs)
    args = launch.arg_values()
    result = simulate(program, launch.grid, launch.block, args, launch.constant_values(),
                      dynamic_shared_bytes=launch.dynamic_shared_bytes, block_ids=block_ids, **simulate_kwargs)
    check = launch.check_outputs(args) if block_ids is None else None
    return RunResult(launch, program, result, check, args)
