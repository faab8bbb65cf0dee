"""The values of ``perfmodel analyze FILE.cu --arg NAME=VALUE``, checked against the kernel's signature: scalar
expressions, arrays (``DTYPE[COUNT][:INIT]``), CUDA vector types (``X,Y,Z``) and structs passed by value
(``{FIELD=VALUE, ...}``), each turned into its spec form (perfmodel/adhoc.py builds the spec from them). Every
mistake is a :class:`LaunchArgumentError` (exit 2) naming the option, the parameter and its C type."""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel import expr as _expr
from perfmodel.errors import PerfmodelError, SpecError

RANDOM_FLOAT = (-1.0, 1.0)
RANDOM_INT = (0, 100)
_ARRAY = re.compile(r"^\s*(?P<dtype>[A-Za-z_][A-Za-z0-9_ ]*?)\s*\[(?P<count>.*)\]\s*(?:@\s*(?P<offset>[^:]*?)\s*)?"
                    r"(?::\s*(?P<init>.*?))?\s*$", re.S)


class LaunchArgumentError(PerfmodelError):
    """A command-line launch (``--arg``, ``--grid``, ``--block``, ``--check``, ...) that does not work out."""

    kind = "usage"


def _dtype_name(dtype: np.dtype | None) -> str | None:
    from perfmodel.spec import DTYPES

    if dtype is None or dtype.fields is not None:
        return None
    name = str(dtype)
    return name if name in DTYPES and DTYPES[name] == dtype else None


def _fits_pointee(dtype: np.dtype, pointee: str) -> bool:
    """Whether ``DTYPE[COUNT]`` of ``dtype`` may stand for a pointer's elements: a number pointee's own dtype; for a
    vector pointee (``uint2*``, ``uchar4*``) any number type that divides it (``uint32[2 * N]`` for N uint2s, one
    ``uint32`` a pixel for ``uchar4``), as the bytes are the same."""
    from perfmodel.compile.signature import vector_dtype
    from perfmodel.spec import DTYPES

    if pointee in DTYPES:
        return dtype == DTYPES[pointee]
    return vector_dtype(pointee).itemsize % dtype.itemsize == 0


def _pointee_name(dtype: np.dtype | None) -> str | None:
    """What ``DTYPE[COUNT]`` must match for a pointer to ``dtype``: a number type's name, or a vector type's."""
    from perfmodel.compile.signature import vector_name

    return _dtype_name(dtype) or vector_name(dtype)


def _signature_text(params) -> str:
    return ", ".join(f"{p.ctype} {p.name}" for p in params) or "no parameters"


def _split_expressions(text: str) -> list[str]:
    """``a, b, c`` at the top level of brackets: the expressions of a list (``<`` and ``>`` are operators here,
    ``1<<20`` a shift, unlike in a C++ template argument list)."""
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(text[start:k].strip())
            start = k + 1
    parts.append(text[start:].strip())
    return parts


def _closing(text: str) -> int:
    """Index of the bracket closing ``text[0]``; -1 if none."""
    depth = 0
    for k, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0:
            return k
    return -1


def _split_dims(text: str, option: str) -> list[str]:
    parts = _split_expressions(text) if text.strip() else []
    if not 1 <= len(parts) <= 3 or any(not p for p in parts):
        raise LaunchArgumentError(f"{option} {text!r}: expected 1 to 3 comma-separated sizes or expressions, "
                                  f"e.g. {option} 'cdiv(N,256)' or {option} 32,32")
    return parts


def _plain(message: str) -> str:
    """``field '--arg x=...': problem`` (the spec form of an expression error) -> ``--arg x=...: problem``."""
    match = re.match(r"^field '(.*?)': ", message)
    return f"{match.group(1)}: {message[match.end():]}" if match else message


_ENUM = re.compile(r"\benum\b\s*(?:class\s+|struct\s+)?(?:[A-Za-z_]\w*\s*)?(?::\s*[\w\s]+?)?\{([^{}]*)\}")


def enumerators(texts) -> dict[str, int]:
    """NAME -> value of the enumerators the sources declare (``typedef enum { LOGISTIC, RELU, ... } ACTIVATION;``,
    darknet): counted from 0, or from an ``= EXPR`` of numbers and earlier enumerators; an enum whose value cannot
    be worked out stops there. Comments are ignored."""
    from perfmodel.compile.lexer import mask

    out: dict[str, int] = {}
    for text in texts:
        for m in _ENUM.finditer(mask(text)):
            value = -1
            for part in m.group(1).split(","):
                name, _, expr = part.partition("=")
                name = name.strip()
                if not re.fullmatch(r"[A-Za-z_]\w*", name):
                    break
                if expr.strip():
                    try:
                        value = int(_expr.evaluate(re.sub(r"(?<=\d)[uUlL]+\b", "", expr.strip()), out,
                                                   field=name))
                    except (SpecError, TypeError, ValueError):
                        break
                else:
                    value += 1
                out.setdefault(name, value)
    return out


def _check_expression(text: str, known: set[str], option: str) -> None:
    try:
        _expr.check_syntax(text, field=option)
    except SpecError as err:
        raise LaunchArgumentError(_plain(err.message)) from None
    unknown = _expr.names_in(text) - known
    if unknown:
        raise LaunchArgumentError(
            f"{option}: unknown name(s) {', '.join(sorted(unknown))} in expression {text!r} (known: "
            f"{', '.join(sorted(known)) or 'none'}; define one with -D NAME=VALUE or --arg NAME=VALUE)")


def _evaluate(text: str, names: Mapping[str, Any], option: str, *, integer: bool = False, minimum=None):
    try:
        if integer:
            return _expr.evaluate_int(text, names, field=option, minimum=minimum)
        return _expr.evaluate(text, names, field=option)
    except SpecError as err:
        raise LaunchArgumentError(_plain(err.message)) from None


def _parse_init(text: str | None, option: str, cwd: Path) -> dict | str:
    """The spec form of an ``--arg`` initialiser."""
    if text is None or text == "":
        return "zeros"
    text = text.strip()
    if text in ("zeros", "ones", "arange"):
        return text
    if text == "random":
        return "random"
    m = re.fullmatch(r"random\((.*),(.*)\)", text)
    if m and m.group(1).strip() and m.group(2).strip():
        return {"random": {"low": m.group(1).strip(), "high": m.group(2).strip()}}
    key, sep, value = text.partition("=")
    if sep and key.strip() == "value" and value.strip():
        return {"constant": value.strip()}
    if sep and key.strip() == "values" and value.strip():
        # values=(1, 2, 3): every element, as numbers (a small mask or table)
        inner = value.strip()
        if inner.startswith("(") and inner.endswith(")"):
            inner = inner[1:-1]
        numbers = []
        for part in _split_expressions(inner):
            try:
                numbers.append(int(part) if re.fullmatch(r"[+-]?\d+", part) else float(part))
            except ValueError:
                raise LaunchArgumentError(f"{option}: values=(...) takes numbers, not {part!r}") from None
        if not numbers:
            raise LaunchArgumentError(f"{option}: values=(...) needs at least one number")
        return {"values": numbers}
    if sep and key.strip() == "file" and value.strip():
        path = (cwd / Path(value.strip()).expanduser()).resolve()
        if not path.is_file():
            raise LaunchArgumentError(f"{option}: no such .npy file {value.strip()!r} (looked at {path})")
        return {"file": str(path)}
    return _bad_init(text, option)


def _bad_init(text: str, option: str):
    raise LaunchArgumentError(f"{option}: unknown initialiser {text!r}; expected zeros, ones, arange, random, "
                              "random(LOW,HIGH), value=EXPR, values=(V1, V2, ...) or file=PATH.npy")


def _components(text: str, fields: tuple[str, ...], p, item: str) -> list[str]:
    """``--arg w=1,2,3`` or ``--arg w=(1, 2, 3)`` for a CUDA vector type (``float3 w``): one expression per
    component, in the order x, y, z, w."""
    inner = text.strip()
    if inner.startswith("(") and _closing(inner) == len(inner) - 1:
        inner = inner[1:-1]
    parts = _split_expressions(inner)
    if len(parts) != len(fields) or not all(parts):
        raise LaunchArgumentError(f"--arg {item!r}: parameter {p.name!r} is {p.ctype}, {len(fields)} components "
                                  f"({', '.join(fields)}); give one value each, e.g. --arg {p.name}="
                                  f"{','.join(str(k + 1) for k in range(len(fields)))}")
    return parts


def _array_arg(value: str, option: str, what: str, ctype: str, pointee: str | None, seed: int,
               values: Mapping[str, Any], cwd: Path) -> dict:
    """The spec form (dtype, length, init) of ``DTYPE[COUNT]:INIT``, for a pointer parameter or a struct's
    pointer field (``pointee``: its element dtype where the source names a number type)."""
    from perfmodel.spec import DTYPES

    m = _ARRAY.match(value)
    dtype = " ".join(m["dtype"].split())
    if dtype not in DTYPES:
        vector = _vector_array(m, dtype, option, what, ctype, pointee, seed, values, cwd)
        if vector is not None:
            return vector
        raise LaunchArgumentError(f"{option}: unknown dtype {dtype!r} (known: {', '.join(DTYPES)}, and the CUDA "
                                  "vector types: float4, uint2, ...)")
    if pointee is not None and not _fits_pointee(DTYPES[dtype], pointee):
        raise LaunchArgumentError(f"{option}: {what} is {ctype}, so its elements are {pointee}, not {dtype}")
    count = m["count"].strip()
    if not count:
        raise LaunchArgumentError(f"{option}: expected a COUNT between the brackets, e.g. {dtype}[N]")
    _check_expression(count, set(values), option)
    size = _evaluate(count, values, option + " (COUNT)", integer=True, minimum=0)
    offset = None
    if m["offset"] is not None:
        # DTYPE[COUNT]@OFFSET: the kernel gets a pointer OFFSET elements into the array (the host's d + OFFSET)
        if what.startswith("field"):
            raise LaunchArgumentError(f"{option}: @OFFSET is for a pointer parameter, not a struct's field")
        offset = m["offset"].strip()
        if not offset:
            raise LaunchArgumentError(f"{option}: expected an OFFSET after @, e.g. {dtype}[{count}]@1")
        _check_expression(offset, set(values), option)
        at = _evaluate(offset, values, option + " (OFFSET)", integer=True, minimum=0)
        if at > size:
            raise LaunchArgumentError(f"{option}: OFFSET {at:,} is beyond the array's {size:,} elements")
    init = _parse_init(m["init"], option, cwd)
    if isinstance(init, dict) and "random" in init:
        for key in ("low", "high"):
            _check_expression(init["random"][key], set(values), option)
    if isinstance(init, dict) and "constant" in init:
        _check_expression(init["constant"], set(values), option)
    if init == "random" or (isinstance(init, dict) and "random" in init):
        low, high = RANDOM_INT if DTYPES[dtype].kind in "iu" else RANDOM_FLOAT
        options = init["random"] if isinstance(init, dict) else {"low": low, "high": high}
        init = {"random": {"seed": seed, **options}}
    if isinstance(init, dict) and "values" in init and len(init["values"]) != size:
        raise LaunchArgumentError(f"{option}: values=(...) gives {len(init['values']):,} numbers for an array of "
                                  f"{size:,} elements; give one per element (or value=EXPR for all of them)")
    if isinstance(init, dict) and "file" in init:
        from perfmodel.references import load_npy

        held = load_npy(init["file"], option).size
        if held != size:
            raise LaunchArgumentError(f"{option}: {init['file']} holds {held:,} elements, COUNT is {size:,}")
    return {"dtype": dtype, "length": count, "init": init, **({"offset": offset} if offset is not None else {})}


def _vector_array(m, dtype: str, option: str, what: str, ctype: str, pointee: str | None, seed: int,
                  values: Mapping[str, Any], cwd: Path) -> dict | None:
    """``float4[N]``, ``uint2[N]:random``: N elements of a CUDA vector type, laid out as vector_types.h has them
    (x, y, z, w of each element in turn): an array of N x components of the component type (what a ``--check``
    reference and ``--save`` see, flat like every array). ``@OFFSET`` counts vectors. None when ``dtype`` is no
    vector type."""
    from perfmodel.compile.signature import vector_dtype, vector_name

    vec = vector_dtype(dtype) if dtype != "dim3" else None
    if vec is None:
        return None
    if pointee is not None and pointee != vector_name(vec):
        raise LaunchArgumentError(f"{option}: {what} is {ctype}, so its elements are {pointee}, not {dtype}")
    k = len(vec.names)
    count, offset = m["count"].strip(), m["offset"]
    if not count:
        raise LaunchArgumentError(f"{option}: expected a COUNT between the brackets, e.g. {dtype}[N]")
    if offset is not None and not offset.strip():
        raise LaunchArgumentError(f"{option}: expected an OFFSET after @, e.g. {dtype}[{count}]@1")
    _check_expression(count, set(values), option)
    flat = f"{_dtype_name(vec.fields['x'][0])}[({count}) * {k}]"
    if offset is not None:
        _check_expression(offset, set(values), option)
        flat += f"@({offset.strip()}) * {k}"
    if m["init"] is not None:
        flat += ":" + m["init"]
    return _array_arg(flat, option, what, ctype, None, seed, values, cwd)


def _struct_example(layout) -> str:
    """``{n=1, scale=1, out=float32[N]:random}``: one made-up value per field of a struct, for messages."""
    parts = []
    for f in layout.leaves:
        if f.pointer:
            parts.append(f"{f.path}={f.pointee or 'float32'}[N]:random")
        elif f.shape:
            parts.append(f"{f.path}=({', '.join(['1'] * min(f.count, 3))}{', ...' if f.count > 3 else ''})")
        else:
            parts.append(f"{f.path}=1")
    return "{" + ", ".join(parts) + "}"


def _struct_text(value: str, p, item: str, flag: str = "--arg", what: str | None = None) -> dict[str, str]:
    """``{n=32, shift=(1, 2), out=float32[n]:random}`` -> field -> its text, checked against the layout. ``flag``
    and ``what`` name the option and the thing for messages (``--symbol``, ``__constant__ cData``)."""
    layout = p.layout
    option = f"{flag} {item}"
    what = what or f"parameter {p.name!r} is {p.ctype}, a struct passed by value"
    if layout.error is not None:
        raise LaunchArgumentError(f"{option}: {what}, whose fields perfmodel could not find: {layout.error}")
    inner = value.strip()
    if not (inner.startswith("{") and _closing(inner) == len(inner) - 1):
        raise LaunchArgumentError(f"{option}: {what}; give its fields in braces, e.g. {flag} "
                                  f"'{p.name}={_struct_example(layout)}'")
    out: dict[str, str] = {}
    for part in _split_expressions(inner[1:-1]):
        key, sep, text = part.partition("=")
        key, text = key.strip(), text.strip()
        if not sep or not key or not text:
            raise LaunchArgumentError(f"{option}: expected FIELD=VALUE inside the braces, got {part.strip()!r}")
        if layout.leaf(key) is None:
            raise LaunchArgumentError(f"{option}: {p.ctype} has no field {key!r}; its fields are "
                                      f"{layout.describe()}")
        if key in out:
            raise LaunchArgumentError(f"{option}: field {key!r} is given twice")
        out[key] = text
    missing = [f.path for f in layout.leaves if f.path not in out]
    if missing:
        raise LaunchArgumentError(f"{option}: no value for field{'s' if len(missing) > 1 else ''} "
                                  f"{', '.join(missing)} of {p.ctype} (every field needs one; its fields are "
                                  f"{layout.describe()})")
    return out


def _struct_fields(p, texts: dict[str, str], item: str, values: Mapping[str, Any], cwd: Path, index: int,
                   flag: str = "--arg") -> dict:
    """The spec's ``fields:`` of a struct given on the command line (``--arg``, or ``--symbol`` for a struct-typed
    ``__constant__`` / ``__device__`` variable)."""
    option = f"{flag} {item}"
    fields: dict[str, Any] = {}
    for n, (key, text) in enumerate(texts.items()):
        leaf = p.layout.leaf(key)
        at = f"{option} (field {key})"
        is_array = _ARRAY.match(text) is not None
        if leaf.pointer and text == "null":
            fields[key] = None          # NULL, as --arg p=null for a pointer parameter
            continue
        if leaf.pointer:
            if not is_array:
                raise LaunchArgumentError(f"{at}: {key} is a pointer ({leaf.ctype}); give it an array, e.g. "
                                          f"{key}={leaf.pointee or 'float32'}[N]:random, or null")
            fields[key] = _array_arg(text, at, f"field {key}", leaf.ctype, leaf.pointee, 100 * (index + 1) + n + 1,
                                     values, cwd)
            continue
        if is_array:
            raise LaunchArgumentError(f"{at}: {key} is {leaf.ctype}, not a pointer; give it "
                                      + ("a number or an expression" if not leaf.shape else
                                         f"{leaf.count} numbers in parentheses"))
        parts = [text]
        if text.startswith("(") and _closing(text) == len(text) - 1:
            parts = _split_expressions(text[1:-1])
        if len(parts) not in (1, leaf.count) or not all(parts):
            raise LaunchArgumentError(f"{at}: {key} is {leaf.ctype}, {leaf.count} numbers; give one (for every "
                                      f"element) or {leaf.count}, e.g. {key}=({', '.join(['1'] * min(leaf.count, 3))}"
                                      f"{', ...' if leaf.count > 3 else ''})")
        for part in parts:
            _check_expression(part, set(values), at)
            number = _evaluate(part, values, at)
            kind = np.dtype(leaf.dtype).kind
            if kind in "iu" and isinstance(number, float) and not number.is_integer():
                raise LaunchArgumentError(f"{at}: {key} is {leaf.ctype}, an integer, but its value is {number!r}")
            if kind in "iu" and not np.iinfo(leaf.dtype).min <= number <= np.iinfo(leaf.dtype).max:
                raise LaunchArgumentError(f"{at}: {key} is {leaf.ctype} ({leaf.dtype}); {number!r} does not fit")
        fields[key] = parts if text.startswith("(") else parts[0]
    return fields
