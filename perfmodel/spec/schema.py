"""The kernel-spec file format: pydantic models of the YAML (field names are the YAML keys), the dtypes a
spec may name, and the conversion of a validation error into one message naming the file and each field.
docs/spec.md documents every field; :mod:`perfmodel.spec_schema` exports them as JSON Schema."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar, Literal

import ml_dtypes
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError, field_validator, \
    model_validator

from perfmodel import expr as _expr
from perfmodel.errors import SpecError

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
    # bfloat16 (8-bit exponent, 7-bit mantissa) as ml_dtypes stores it: the bits of __nv_bfloat16
    "bfloat16": np.dtype(ml_dtypes.bfloat16), "__nv_bfloat16": np.dtype(ml_dtypes.bfloat16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
}

Expr = StrictInt | StrictFloat | str


def arg_dtype(name: str) -> np.dtype:
    """The dtype a spec's ``dtype:`` names: a :data:`DTYPES` spelling, or a CUDA vector type (``float3``,
    ``int2``, ``uchar4``, ``dim3``: a by-value parameter, numpy's structured {x, y, z, w})."""
    from perfmodel.compile.signature import vector_dtype

    dtype = DTYPES.get(name)
    return dtype if dtype is not None else vector_dtype(name)
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


_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.MULTILINE)
_ANGLE_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*<([^>]+)>', re.MULTILINE)


def macro_names_with_headers(path, source: str, include_dirs=()) -> tuple[str, ...]:
    """:func:`macro_names` of a source and of the local headers it includes (``#include "x.h"``, found beside
    the including file or in ``include_dirs``; ``#include <x.h>`` found in ``include_dirs``; transitively): a ``-D``
    that only a header tests (``#ifdef SINGLE_PRECISION`` in HeCBench md's MD.h, Parboil's ``<parboil.h>`` found
    through ``-I``) reaches the compiler too."""
    from pathlib import Path

    from perfmodel import safeload
    from perfmodel.compile.hostcode import tree_header

    names = list(macro_names(source))
    seen: set[Path] = set()
    todo = [(Path(path).resolve().parent, source)] if path is not None else []
    while todo and len(seen) < 200:
        folder, text = todo.pop(0)
        found = [(n, (folder, *(Path(d) for d in include_dirs))) for n in _QUOTED_INCLUDE.findall(text)]
        found += [(n, tuple(Path(d) for d in include_dirs)) for n in _ANGLE_INCLUDE.findall(text)]
        for name, bases in found:
            for base in bases:
                candidate = (base / name).resolve()
                if candidate.is_file():
                    break
            else:
                # where the compile finds it too: up the tree (hostcode.tree_header), as ccminer's headers are
                candidate = tree_header(name, folder)
                if candidate is None:
                    continue
            if candidate in seen:
                continue
            seen.add(candidate)
            try:
                inner = safeload.read_text(candidate, what="header", latin1=True)
            except Exception:       # noqa: BLE001 - an unreadable header names no macros; the compile says why
                continue
            names += macro_names(inner)
            todo.append((candidate.parent, inner))
    return tuple(dict.fromkeys(names))


# ==============================================================================================================
# The file schema (pydantic). Field names are the YAML keys.

# the text of a macro that is not a number: a type or a name (`double`, `unsigned int`, `float4`, `cuda::std::int64_t`,
# `Vec<float, 4>`, `float *`) - what a build line's -D gives that the spec's expressions cannot
MACRO_TEXT = re.compile(r"^\s*[A-Za-z_][\w\s:<>,*&]*$")


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


class SurfaceSpec(_Strict):
    """A surface object's texels (``cudaCreateSurfaceObject`` over a CUDA array; perfmodel/sim/texture.py):
    ``shape`` ``[width]``, ``[height, width]`` or ``[depth, height, width]`` (with ``layered``, the layers first);
    the run writes them, so a surface arg can be an output."""

    dtype: str = "float32"
    channels: Literal[1, 2, 4] = 1
    shape: list[Expr]
    init: InitSpec | None = None
    layered: bool = False

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, value: str) -> str:
        from perfmodel.sim.texture import CHANNEL_DTYPES

        if value not in DTYPES or DTYPES[value].name not in CHANNEL_DTYPES:
            raise ValueError(f"texel dtype {value!r}: expected one of {', '.join(CHANNEL_DTYPES)}")
        return value

    @model_validator(mode="after")
    def _dims(self):
        if not 1 <= len(self.shape) <= 3 or (self.layered and len(self.shape) not in (2, 3)):
            raise ValueError("shape is [width], [height, width] or [depth, height, width]; layered: [layers, "
                             "width] or [layers, height, width]")
        return self


class TextureSpec(SurfaceSpec):
    """A texture object's texels and the description the host gives ``cudaCreateTextureObject``
    (perfmodel/sim/texture.py). ``shape`` as a surface's; ``dtype``: one channel's type; ``init`` fills the texels
    channel by channel (row-major, channels interleaved)."""

    filter: Literal["point", "linear"] = "point"
    address: Literal["clamp", "border", "wrap", "mirror"] | list[Literal["clamp", "border", "wrap", "mirror"]] = \
        "clamp"
    normalized_coords: bool = False
    read_mode: Literal["element", "normalized_float"] = "element"


_FIELD_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class _SizedArray(_Strict):
    """An array described by ``dtype``, ``length`` or ``shape``, and ``init`` (a ``__constant__`` symbol's, a
    struct's pointer field's)."""

    WHAT: ClassVar[str] = "an array"

    @field_validator("dtype", check_fields=False)
    @classmethod
    def _dtype(cls, value: str) -> str:
        if value not in DTYPES:
            raise ValueError(f"unknown dtype {value!r} (known: {', '.join(DTYPES)})")
        return value

    @model_validator(mode="after")
    def _size(self):
        if self.length is not None and self.shape is not None:
            raise ValueError("give length or shape, not both")
        init_kind = self.init.kind if self.init else "zeros"
        if self.length is None and self.shape is None and init_kind not in ("values", "generator", "file"):
            raise ValueError(f"{self.WHAT} needs length: EXPR (or shape: [..])")
        return self


class FieldArraySpec(_SizedArray):
    """The array a struct's pointer field points to: as an array arg (``dtype``, ``length`` or ``shape``,
    ``init``); outputs name it ``ARG.FIELD``."""

    WHAT: ClassVar[str] = "a pointer field's array"
    dtype: str
    length: Expr | None = None
    shape: list[Expr] | None = None
    init: InitSpec | None = None


class ArgSpec(_Strict):
    """A kernel argument: an array (``length`` or ``shape``, ``init``), a scalar (``value``), a texture object
    (``texture``, for a ``cudaTextureObject_t`` parameter) or a struct passed by value (``fields``: one entry per
    field the compile finds in its declaration - an EXPR, a list of EXPRs for an array or vector field, an array
    for a pointer field; a nested struct's fields named with dots)."""

    name: str
    dtype: str | None = None          # required, except for a texture (its handle is a 64-bit integer) or a struct
    kind: Literal["array", "scalar", "texture", "surface", "struct", "null"] | None = None
    length: Expr | None = None
    shape: list[Expr] | None = None
    init: InitSpec | None = None
    value: Expr | list[Expr] | None = None      # a list: one EXPR per component of a vector type (float3)
    texture: TextureSpec | None = None
    surface: SurfaceSpec | None = None
    fields: dict[str, Expr | list[Expr] | FieldArraySpec | None] | None = None   # None: a NULL pointer field
    # an array arg: the kernel's pointer is this many elements into the array (the host passes d + offset), and
    # the elements before it are the kernel's at negative indices
    offset: Expr | None = None
    # an array arg that is another array arg's very array (the host passes one buffer twice: bit_rev(d, d));
    # it takes no dtype, length or init of its own
    same_as: str | None = None
    # a pointer arg the host passes as NULL (an optional array the kernel tests before using): no array at all
    null: bool = False

    @model_validator(mode="before")
    @classmethod
    def _null_key(cls, data: Any) -> Any:
        # `{name: bias, null: true}` as docs/spec.md writes it: YAML reads an unquoted null key as None, not "null"
        if isinstance(data, dict) and None in data and "null" not in data:
            data = {("null" if k is None else k): v for k, v in data.items()}
        return data

    @field_validator("name")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not _IDENT.match(value):
            raise ValueError(f"expected a C identifier, got {value!r}")
        return value

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, value: str | None) -> str | None:
        if value is not None and arg_dtype(value) is None:
            raise ValueError(f"unknown dtype {value!r} (known: {', '.join(DTYPES)}, and for a by-value "
                             "parameter the CUDA vector types: float3, int2, uchar4, dim3, ...)")
        return value

    @model_validator(mode="after")
    def _shape_of_arg(self) -> ArgSpec:
        if self.null or self.kind == "null":
            others = [k for k in ("dtype", "length", "shape", "init", "value", "texture", "surface", "fields",
                                  "offset", "same_as") if getattr(self, k) is not None]
            if others:
                raise ValueError(f"null: true is the whole of a NULL pointer arg (no array), not {', '.join(others)}")
            object.__setattr__(self, "kind", "null")
            object.__setattr__(self, "null", True)
            return self
        if self.same_as is not None:
            others = [k for k in ("dtype", "length", "shape", "init", "value", "texture", "surface", "fields")
                      if getattr(self, k) is not None]
            if others or self.kind not in (None, "array"):
                raise ValueError(f"same_as: is the whole of an array arg (its array is {self.same_as}'s), not "
                                 f"{', '.join(others) or 'kind: ' + str(self.kind)}")
            object.__setattr__(self, "kind", "array")
            return self
        is_scalar = self.value is not None
        kind = self.kind or ("texture" if self.texture is not None else "surface" if self.surface is not None
                             else "struct" if self.fields is not None else "scalar" if is_scalar else "array")
        if kind == "struct" or self.fields is not None:
            if self.fields is None or kind != "struct":
                raise ValueError("a struct arg (a struct passed by value) takes fields: {FIELD: EXPR, ...} only")
            others = [k for k in ("dtype", "length", "shape", "init", "value", "texture", "surface")
                      if getattr(self, k) is not None]
            if others:
                raise ValueError(f"a struct arg takes fields: only (its layout comes from the compile), not "
                                 f"{', '.join(others)}")
            bad = [k for k in self.fields if not _FIELD_PATH.match(k)]
            if bad:
                raise ValueError(f"field {bad[0]!r}: expected a field name, or a nested struct's with dots (in.b)")
            object.__setattr__(self, "kind", "struct")
            return self
        if self.texture is not None and self.surface is not None:
            raise ValueError("an arg is a texture or a surface, not both")
        if kind in ("texture", "surface") or self.texture is not None or self.surface is not None:
            if getattr(self, kind, None) is None:
                raise ValueError(f"a {kind} arg takes {kind}: {{shape, dtype, channels, init, ...}}")
            if is_scalar or self.length is not None or self.shape is not None or self.init is not None:
                raise ValueError(f"a {kind} arg takes {kind}: only (its shape and init go inside it)")
            if self.dtype not in (None, "uint64", "u64"):
                raise ValueError(f"a {kind} arg is a cuda{kind.title()}Object_t (uint64); its texels' type is "
                                 f"{kind}.dtype")
            object.__setattr__(self, "dtype", "uint64")
        elif self.dtype is None:
            raise ValueError("an array or scalar arg needs dtype")
        fields = arg_dtype(self.dtype).names if self.dtype is not None else None
        if kind == "scalar":
            if not is_scalar:
                raise ValueError("a scalar arg needs value: EXPR" + (f" list, one per component ({', '.join(fields)})"
                                                                     if fields else ""))
            if self.length is not None or self.shape is not None or self.init is not None:
                raise ValueError("a scalar arg takes value only (no length, shape or init)")
            if fields and (not isinstance(self.value, list) or len(self.value) != len(fields)):
                raise ValueError(f"a {self.dtype} takes value: [{', '.join(fields)}], a list of {len(fields)} "
                                 f"EXPRs, got {self.value!r}")
            if not fields and isinstance(self.value, list):
                raise ValueError(f"a list value is for a vector type (float3, int2, ...); {self.dtype} takes one EXPR")
        elif fields and kind == "array":
            raise ValueError(f"{self.dtype} is the dtype of a by-value parameter (value: [...]); an array of them "
                             f"is an array of its component type ({arg_dtype(self.dtype)[0]}) with "
                             f"{len(fields)} elements each")
        elif kind == "array":
            if is_scalar:
                raise ValueError("an array arg takes length/shape and init, not value")
            if self.length is not None and self.shape is not None:
                raise ValueError("give length or shape, not both")
            init_kind = self.init.kind if self.init else "zeros"
            if self.length is None and self.shape is None and init_kind not in ("values", "generator", "file"):
                raise ValueError("an array arg needs length: EXPR (or shape: [..])")
        if self.offset is not None and kind != "array":
            raise ValueError("offset: is for an array arg (the pointer's position in its array)")
        object.__setattr__(self, "kind", kind)
        return self


class ConstantSpec(_SizedArray):
    """Initial value of a ``__constant__`` or ``__device__`` symbol (what the host's ``cudaMemcpyToSymbol`` would
    copy): an array (``dtype``, ``length`` or ``shape``, ``init``), or for a variable of a struct type its
    ``fields`` as a struct arg's (a pointer field an array, which outputs name ``NAME.FIELD``); ``pointer: true``
    for a pointer variable: the array it points to (outputs name it ``NAME``)."""

    WHAT: ClassVar[str] = "a constant"
    dtype: str = "float32"
    length: Expr | None = None
    shape: list[Expr] | None = None
    init: InitSpec | None = None
    fields: dict[str, Expr | list[Expr] | FieldArraySpec | None] | None = None   # None: a NULL pointer field
    # a pointer-typed variable (`__constant__ float *d_table;`): the array is what it points to, in global memory
    pointer: bool = False

    @model_validator(mode="after")
    def _size(self):
        if self.fields is not None and self.pointer:
            raise ValueError("pointer: is for a pointer variable's array, fields: for a struct variable")
        if self.fields is not None:
            if self.length is not None or self.shape is not None or self.init is not None:
                raise ValueError("a struct variable's fields: take no length, shape or init of their own")
            for key in self.fields:
                if not _FIELD_PATH.match(key):
                    raise ValueError(f"field name {key!r}: expected NAME or NAME.SUB (a nested struct's field)")
            return self
        if self.init is None:
            raise ValueError("a constant needs init: (or fields: for a variable of a struct type)")
        return super()._size()


class OutputSpec(_Strict):
    """An output arg checked with ``numpy.isclose(rtol, atol)`` (NaN matching NaN, integers exactly) against a
    reference: a named numpy reference of :mod:`perfmodel.references`, a Python callable (``module:function`` or
    ``path/to/file.py:function``) or the expected values in a ``.npy`` file (see :func:`perfmodel.references.resolve_reference`)."""

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
    # __device__ variables (module-scope global memory): initial values, and outputs may name them
    device_variables: dict[str, ConstantSpec] = Field(default_factory=dict)
    outputs: list[OutputSpec] = Field(default_factory=list)
    registers: dict[str, StrictInt] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    notes: str | None = None
    include_dirs: list[str] = Field(default_factory=list)   # -I folders, relative to the spec file
    # preprocessor macros whose value is text, not a number (a type: `SCALAR: double`, as a build line's
    # -DMINIFE_SCALAR=double): -D NAME=TEXT for the compile only (params are numbers that expressions use)
    macros: dict[str, str] = Field(default_factory=dict)
    # params that go to the compiler as -D NAME=VALUE too, though no #if or #define line of the source names them:
    # what a library that compiles its kernels with NVRTC leaves to its own -D's (ArrayFire's `-DTILE_DIM=32`)
    compile_params: list[str] = Field(default_factory=list)

    @field_validator("macros")
    @classmethod
    def _macro_texts(cls, value: dict) -> dict:
        for name, text in value.items():
            if not _IDENT.match(name):
                raise ValueError(f"macro name {name!r} is not an identifier")
            if not MACRO_TEXT.match(text):
                raise ValueError(f"macros.{name}: {text!r} is not a type or a name (words, '::', '<>', ',' and '*')")
        return value

    @field_validator("name")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not _IDENT.match(value):
            raise ValueError(f"expected an identifier, got {value!r}")
        return value

    @field_validator("entry")
    @classmethod
    def _entry(cls, value: str) -> str:
        # a kernel name, or a C++ template name expression as the host code launches it: reduce6<int, 256, true>,
        # or one of an overload set by its parameter types: scale(unsigned char*, const float*)
        base = value.split("<", 1)[0].split("(", 1)[0].strip()
        if not all(_IDENT.match(part) for part in base.split("::")) or value.count("<") != value.count(">") \
                or value.count("(") != value.count(")"):
            raise ValueError(f"expected a kernel name, a template name expression or name(parameter types), got "
                             f"{value!r}")
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
# Validation errors

# names users reach for, from CUDA's launch syntax and other tools, and the spec's field for each
_FIELD_ALIASES = {"smem": "dynamic_shared_memory", "shared_mem": "dynamic_shared_memory",
                  "shared_memory": "dynamic_shared_memory", "dynamic_smem": "dynamic_shared_memory",
                  "dyn_smem": "dynamic_shared_memory", "sharedmem": "dynamic_shared_memory",
                  "threads": "block", "threads_per_block": "block", "block_dim": "block", "blockdim": "block",
                  "blocks": "grid", "grid_dim": "grid", "griddim": "grid", "kernel": "entry", "file": "source",
                  "defines": "params", "regs": "registers"}


def _did_you_mean(name: str) -> str:
    """" (did you mean 'X'?)" for an unknown field close to a field of the spec format, or ""."""
    import difflib

    if not name:
        return ""
    alias = _FIELD_ALIASES.get(name.lower())
    if alias is None:
        fields = sorted({f for cls in _strict_models() for f in cls.model_fields})
        close = difflib.get_close_matches(name, fields, n=1, cutoff=0.7)
        alias = close[0] if close else None
    return f" (did you mean '{alias}'?)" if alias and alias != name else ""


def _strict_models() -> list:
    out, todo = [], [_Strict]
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo.extend(cls.__subclasses__())
    return out


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
                message = "unknown field" + _did_you_mean(str(item["loc"][-1]) if item.get("loc") else "")
            elif item["type"] == "missing":
                message = "required field is missing"
            value = item.get("input")
            shown = "" if item["type"] in ("missing", "extra_forbidden") or isinstance(value, (dict, list)) \
                or "got" in message else f" (got {value!r})"
            problems.append(f"field '{loc}': {message}{shown}")
    return SpecError(f"{path}: " + "; ".join(dict.fromkeys(problems)))
