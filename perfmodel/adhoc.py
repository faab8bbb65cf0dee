"""A launch given on the command line (or from Python) instead of a YAML spec: ``perfmodel analyze FILE.cu
--kernel EXPR --grid X,Y --block X,Y --arg NAME=VALUE ... -D NAME=VALUE``.

:func:`command_line_spec` compiles the kernel once to read its signature (parameter names and C types), checks
every ``--arg`` against it, and builds the same validated :class:`~perfmodel.spec.KernelSpec` a YAML file would
give - so the rest of the pipeline (simulation, models, references, ``--save-spec``) is shared:

- ``-D NAME=VALUE`` become params (expression names); those the source names in a preprocessor line
  (``#define NAME``, ``#ifdef``/``#ifndef NAME``, ``#if ... NAME``) are passed to the compiler as well.
- ``--arg NAME=EXPR`` (or ``--arg 0=EXPR`` by position) on a scalar parameter: a number or an expression over
  the ``-D`` names and the other scalar arguments; its dtype is the parameter's C type. A scalar parameter with
  no ``--arg`` takes the ``-D`` of the same name.
- ``--arg NAME=DTYPE[COUNT][:INIT]`` on a pointer parameter: an array of COUNT (an expression) elements; INIT is
  ``zeros`` (default), ``ones``, ``arange``, ``random`` (floats uniform in [-1, 1), ints in [0, 100)),
  ``random(LOW,HIGH)``, ``value=EXPR`` or ``file=PATH.npy``.
- ``--check NAME=REFERENCE``: check output array NAME against a Python function (``module:function``,
  ``file.py:function``), a ``.npy`` file of expected values or a built-in reference, with ``--rtol``/``--atol``.

Every mistake is a :class:`LaunchArgumentError` (exit 2) naming the option, the parameter and its C type.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel import expr as _expr
from perfmodel.errors import PerfmodelError, SpecError

RANDOM_FLOAT = (-1.0, 1.0)
RANDOM_INT = (0, 100)
_ARRAY = re.compile(r"^\s*(?P<dtype>[A-Za-z_][A-Za-z0-9_ ]*?)\s*\[(?P<count>.*)\]\s*(?::\s*(?P<init>.*?))?\s*$",
                    re.S)


class LaunchArgumentError(PerfmodelError):
    """A command-line launch (``--arg``, ``--grid``, ``--block``, ``--check``, ...) that does not work out."""

    kind = "usage"


def _dtype_name(dtype: np.dtype | None) -> str | None:
    from perfmodel.spec import DTYPES

    if dtype is None or dtype.fields is not None:
        return None
    name = str(dtype)
    return name if name in DTYPES and DTYPES[name] == dtype else None


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
    if sep and key.strip() == "file" and value.strip():
        path = (cwd / Path(value.strip()).expanduser()).resolve()
        if not path.is_file():
            raise LaunchArgumentError(f"{option}: no such .npy file {value.strip()!r} (looked at {path})")
        return {"file": str(path)}
    return _bad_init(text, option)


def _bad_init(text: str, option: str):
    raise LaunchArgumentError(f"{option}: unknown initialiser {text!r}; expected zeros, ones, arange, random, "
                              "random(LOW,HIGH), value=EXPR or file=PATH.npy")


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
        raise LaunchArgumentError(f"{option}: unknown dtype {dtype!r} (known: {', '.join(DTYPES)})")
    if pointee is not None and DTYPES[dtype] != DTYPES[pointee]:
        raise LaunchArgumentError(f"{option}: {what} is {ctype}, so its elements are {pointee}, not {dtype}")
    count = m["count"].strip()
    if not count:
        raise LaunchArgumentError(f"{option}: expected a COUNT between the brackets, e.g. {dtype}[N]")
    _check_expression(count, set(values), option)
    size = _evaluate(count, values, option + " (COUNT)", integer=True, minimum=0)
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
    if isinstance(init, dict) and "file" in init:
        from perfmodel.references import load_npy

        held = load_npy(init["file"], option).size
        if held != size:
            raise LaunchArgumentError(f"{option}: {init['file']} holds {held:,} elements, COUNT is {size:,}")
    return {"dtype": dtype, "length": count, "init": init}


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


def _struct_text(value: str, p, item: str) -> dict[str, str]:
    """``{n=32, shift=(1, 2), out=float32[n]:random}`` -> field -> its text, checked against the layout."""
    layout = p.layout
    option = f"--arg {item}"
    if layout.error is not None:
        raise LaunchArgumentError(f"{option}: parameter {p.name!r} is {p.ctype}, a struct passed by value, whose "
                                  f"fields perfmodel could not find: {layout.error}")
    inner = value.strip()
    if not (inner.startswith("{") and _closing(inner) == len(inner) - 1):
        raise LaunchArgumentError(f"{option}: parameter {p.name!r} is {p.ctype}, a struct passed by value; give its "
                                  f"fields in braces, e.g. --arg '{p.name}={_struct_example(layout)}'")
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


def _struct_fields(p, texts: dict[str, str], item: str, values: Mapping[str, Any], cwd: Path, index: int) -> dict:
    """The spec's ``fields:`` of a struct given on the command line."""
    option = f"--arg {item}"
    fields: dict[str, Any] = {}
    for n, (key, text) in enumerate(texts.items()):
        leaf = p.layout.leaf(key)
        at = f"{option} (field {key})"
        is_array = _ARRAY.match(text) is not None
        if leaf.pointer:
            if not is_array:
                raise LaunchArgumentError(f"{at}: {key} is a pointer ({leaf.ctype}); give it an array, e.g. "
                                          f"{key}={leaf.pointee or 'float32'}[N]:random")
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


def _parse_assignments(items: Sequence[str] | None, option: str) -> list[tuple[str, str, str]]:
    out = []
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise LaunchArgumentError(f"{option} {item!r}: expected NAME=VALUE (or INDEX=VALUE), e.g. "
                                      f"{option} n=1024 or {option} x=float32[n]:random")
        out.append((key.strip(), value.strip(), item))
    return out


def command_line_spec(file: str | Path, kernel: str | None, grid: str, block: str, *, smem: str | None = None,
                      args: Sequence[str] | None = None, defines: Mapping[str, int | float] | None = None,
                      include_dirs: Sequence[str] = (), checks: Sequence[str] | None = None,
                      rtol: float | None = None, atol: float | None = None, arch: str = "sm_90",
                      cwd: str | Path | None = None):
    """Build the KernelSpec of a command-line launch (see the module docstring). Raises LaunchArgumentError."""
    from perfmodel import safeload
    from perfmodel.compile.signature import vector_name
    from perfmodel.kernel import load_kernel
    from perfmodel.spec import DTYPES, macro_names

    cwd = Path(cwd or Path.cwd()).resolve()
    path = (cwd / Path(file).expanduser()).resolve()
    source = safeload.read_text(path, error=SpecError, what="CUDA source", latin1=True)
    defines = dict(defines or {})
    macros = macro_names(source)
    includes = tuple(str((cwd / d).resolve()) for d in include_dirs)
    compile_defines = {k: v for k, v in defines.items() if k in macros}
    program = load_kernel(path, entry=kernel, defines=compile_defines, arch=arch, include_dirs=includes)
    entry = kernel or program.name
    params = list(program.params)
    by_name = {p.name: i for i, p in enumerate(params)}

    # --arg: by name or position
    given: dict[int, tuple[str, str]] = {}
    for key, value, item in _parse_assignments(args, "--arg"):
        if key.isdigit():
            index = int(key)
            if index >= len(params):
                raise LaunchArgumentError(f"--arg {item!r}: {entry} has {len(params)} parameters (0 to "
                                          f"{len(params) - 1}): {_signature_text(params)}")
        elif key in by_name:
            index = by_name[key]
        else:
            raise LaunchArgumentError(f"--arg {item!r}: {entry} has no parameter named {key!r}; its parameters "
                                      f"are {_signature_text(params)}")
        if index in given:
            raise LaunchArgumentError(f"--arg {item!r}: parameter {params[index].name!r} is given twice")
        given[index] = (value, item)

    # scalars become params (expression names) after the -D names; arrays are checked once names are known
    scalar_exprs: dict[str, tuple[str, str]] = {}
    vector_exprs: dict[int, tuple[list[str], str]] = {}
    missing = []
    struct_exprs: dict[int, tuple[dict[str, str], str]] = {}
    for i, p in enumerate(params):
        fields = None if p.is_pointer or p.dtype is None else p.dtype.names
        if i in given and fields:
            value, item = given[i]
            vector_exprs[i] = (_components(value, fields, p, item), item)
        elif i in given and p.layout is not None:
            value, item = given[i]
            struct_exprs[i] = (_struct_text(value, p, item), item)
        elif i in given:
            value, item = given[i]
            is_array = _ARRAY.match(value) is not None
            if p.is_pointer and not is_array:
                raise LaunchArgumentError(
                    f"--arg {item!r}: parameter {p.name!r} of {entry} is a pointer ({p.ctype}); give it an array, "
                    f"e.g. --arg {p.name}={_dtype_name(p.dtype) or 'float32'}[N]:random")
            if not p.is_pointer and is_array:
                raise LaunchArgumentError(f"--arg {item!r}: parameter {p.name!r} of {entry} is a scalar "
                                          f"({p.ctype}); give it a number or an expression, e.g. --arg {p.name}=1024")
            if not p.is_pointer:
                if p.name in defines:
                    if value == p.name:     # --arg wA=wA with -D wA=320: the -D value
                        continue
                    raise LaunchArgumentError(f"--arg {item!r}: {p.name!r} is also given with -D; give it once")
                scalar_exprs[p.name] = (value, item)
        elif p.is_pointer:
            missing.append(f"{p.name!r} ({p.ctype}, a pointer: --arg {p.name}="
                           f"{_dtype_name(p.dtype) or 'float32'}[COUNT]:random)")
        elif fields:
            missing.append(f"{p.name!r} ({p.ctype}: --arg {p.name}={','.join(fields).upper()}, one value per "
                           "component)")
        elif p.layout is not None and p.layout.error is None:
            missing.append(f"{p.name!r} ({p.ctype}, a struct: --arg '{p.name}={_struct_example(p.layout)}')")
        elif p.layout is not None:
            missing.append(f"{p.name!r} ({p.ctype}, a struct passed by value whose fields perfmodel could not find: "
                           f"{p.layout.error})")
        elif p.name not in defines:
            if p.dtype is None:         # a texture or surface object, a struct: not a number
                missing.append(f"{p.name!r} ({p.ctype}: not a number - write a spec, `perfmodel kernels init` starts "
                               "one, or use the Python API)")
            else:
                missing.append(f"{p.name!r} ({p.ctype}: --arg {p.name}=VALUE or -D {p.name}=VALUE)")
    if missing:
        raise LaunchArgumentError(f"{entry}: no value for parameter{'s' if len(missing) > 1 else ''} "
                                  f"{'; '.join(missing)}. Its signature: {_signature_text(params)}")

    # order the scalar expressions so that each uses only names defined before it
    known = set(defines)
    ordered: list[str] = []
    pending = dict(scalar_exprs)
    all_names = set(defines) | set(scalar_exprs)
    for name, (value, item) in scalar_exprs.items():
        _check_expression(value, all_names - {name}, f"--arg {item}")
    while pending:
        ready = [n for n, (v, _) in pending.items() if _expr.names_in(v) <= known]
        if not ready:
            cycle = ", ".join(f"{n}={v}" for n, (v, _) in pending.items())
            raise LaunchArgumentError(f"--arg: the scalar expressions refer to each other in a cycle: {cycle}")
        for n in ready:
            ordered.append(n)
            known.add(n)
            del pending[n]
    model_params: dict[str, Any] = dict(defines)
    for name in ordered:
        model_params[name] = scalar_exprs[name][0]
    try:
        values = _resolve_params(model_params)
    except SpecError as err:
        raise LaunchArgumentError(_plain(err.message)) from None

    spec_args: list[dict] = []
    for i, p in enumerate(params):
        if p.is_pointer:
            value, item = given[i]
            spec_args.append({"name": p.name, **_array_arg(value, f"--arg {item}", f"parameter {p.name!r}", p.ctype,
                                                           _dtype_name(p.dtype), i + 1, values, cwd)})
        elif i in struct_exprs:
            spec_args.append({"name": p.name, "fields": _struct_fields(p, *struct_exprs[i], values, cwd, i)})
        elif i in vector_exprs:
            parts, item = vector_exprs[i]
            option = f"--arg {item}"
            for j, (name, part) in enumerate(zip(p.dtype.names, parts)):
                _check_expression(part, set(values), option)
                scalar = _evaluate(part, values, option)
                if p.dtype.fields[name][0].kind in "iu" and isinstance(scalar, float) and not scalar.is_integer():
                    raise LaunchArgumentError(f"{option}: component {name} of {p.name!r} ({p.ctype}) is an integer, "
                                              f"but its value is {scalar!r}")
            spec_args.append({"name": p.name, "dtype": vector_name(p.dtype), "value": parts})
        else:
            dtype = _dtype_name(p.dtype)
            if dtype is None:
                raise LaunchArgumentError(f"parameter {p.name!r} of {entry} is {p.ctype}, which cannot be given on "
                                          "the command line (numbers, CUDA vector types, structs and pointers can); "
                                          "neither can a spec or the Python API give it yet")
            value = p.name if (p.name in scalar_exprs or p.name in defines) else None
            scalar = values[value]
            if DTYPES[dtype].kind in "iu" and isinstance(scalar, float) and not scalar.is_integer():
                raise LaunchArgumentError(f"--arg {p.name}: parameter {p.name!r} is {p.ctype}, an integer, but its "
                                          f"value is {scalar!r}")
            spec_args.append({"name": p.name, "dtype": dtype, "value": value})

    # grid, block, shared memory
    names = set(values)
    dims = {}
    for option, text in (("--grid", grid), ("--block", block)):
        parts = _split_dims(text, option)
        for part in parts:
            _check_expression(part, names, option)
            _evaluate(part, values, f"{option} {text}", integer=True, minimum=1)
        dims[option] = parts
    if smem is not None:
        _check_expression(smem, names, "--smem")
        _evaluate(smem, values, f"--smem {smem}", integer=True, minimum=0)

    outputs = []
    arrays = {a["name"] for a in spec_args if "length" in a}
    arrays |= {f"{a['name']}.{k}" for a in spec_args for k, v in a.get("fields", {}).items() if isinstance(v, dict)}
    for key, ref, item in _parse_assignments(checks, "--check"):
        if key.isdigit() and int(key) < len(params):
            key = params[int(key)].name
        if key not in arrays:
            raise LaunchArgumentError(f"--check {item!r}: {key!r} is not an array argument of {entry} (arrays: "
                                      f"{', '.join(sorted(arrays)) or 'none'})")
        if ref.endswith(".npy") or re.match(r"^[^:]+\.py:", ref):
            target, sep, attr = ref.rpartition(":") if not ref.endswith(".npy") else (ref, "", "")
            ref = str((cwd / Path(target).expanduser()).resolve()) + (f":{attr}" if sep else "")
        output: dict[str, Any] = {"arg": key, "reference": ref}
        if rtol is not None:
            output["rtol"] = rtol
        if atol is not None:
            output["atol"] = atol
        outputs.append(output)

    data = {"name": _identifier(entry), "source": str(path), "entry": entry, "params": model_params,
            "grid": dims["--grid"], "block": dims["--block"], "args": spec_args, "outputs": outputs,
            "include_dirs": list(includes)}
    if smem is not None:
        data["dynamic_shared_memory"] = smem
    # a spec param named like one of the file's macros is a -D of the compile; a kernel argument given with --arg
    # is not (HeCBench's ecdh: `#define P_x 5` in main.cu, after the header whose kernel has a parameter P_x)
    for name in [n for n in scalar_exprs if n in macros]:
        data = _renamed(data, name, _free_name(name, set(model_params) | set(macros)))
    return _build(data, cwd, entry)


def _free_name(name: str, taken: set[str]) -> str:
    k = 1
    while f"{name}_arg{k}" in taken:
        k += 1
    return f"{name}_arg{k}"


def _renamed(data: dict, old: str, new: str) -> dict:
    """The spec document with the param ``old`` called ``new``: its key in ``params`` and every expression that
    names it (not the kernel's argument names, dtypes or file paths)."""
    word = re.compile(rf"(?<![\w.]){re.escape(old)}(?!\w)")

    def walk(v: Any, key: str = "") -> Any:
        if isinstance(v, dict):
            return {k: walk(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, str) and key not in ("name", "dtype", "file"):
            return word.sub(new, v)
        return v

    out = dict(data)
    out["params"] = {(new if k == old else k): walk(v) for k, v in data["params"].items()}
    for key in ("grid", "block", "dynamic_shared_memory", "args"):
        if key in data:
            out[key] = walk(data[key])
    return out


def _identifier(entry: str) -> str:
    base = entry.split("<", 1)[0].strip().split("::")[-1]
    return base if re.fullmatch(r"[A-Za-z_]\w*", base) else "kernel"


def _resolve_params(params: Mapping[str, Any]) -> dict:
    resolved: dict[str, Any] = {}
    for name, value in params.items():
        resolved[name] = _expr.evaluate(value, resolved, field=f"--arg {name}") if isinstance(value, str) else value
    return resolved


def _build(data: dict, cwd: Path, label: str):
    from pydantic import ValidationError

    from perfmodel.spec import KernelSpec, SpecModel
    from perfmodel.spec.schema import _validation_error

    where = cwd / "(command line)"
    try:
        model = SpecModel.model_validate(data)
    except ValidationError as err:
        raise LaunchArgumentError(_validation_error(where, err).message) from None
    try:
        spec = KernelSpec(model, where)
    except SpecError as err:
        raise LaunchArgumentError(err.message) from None
    spec.__dict__["_label"] = label
    spec.__dict__["command_line"] = data
    return spec


def spec_yaml(spec, out: str | Path) -> str:
    """The YAML of a command-line launch, to keep it as a spec file at ``out`` (paths relative to it)."""
    import os

    import yaml

    data = dict(spec.__dict__.get("command_line") or spec.model.model_dump(exclude_defaults=True))
    folder = Path(out).resolve().parent

    def rel(p: str) -> str:
        return os.path.relpath(p, folder)

    data["source"] = rel(data["source"])
    if data.get("include_dirs"):
        data["include_dirs"] = [rel(d) for d in data["include_dirs"]]
    else:
        data.pop("include_dirs", None)
    for arg in data.get("args", []):
        init = arg.get("init")
        if isinstance(init, dict) and "file" in init:
            arg["init"] = {"file": rel(init["file"])}
    for output in data.get("outputs", []):
        ref = output["reference"]
        if ref.endswith(".npy") or (".py:" in ref and os.path.isabs(ref.split(":")[0])):
            target, sep, attr = ref.rpartition(":") if not ref.endswith(".npy") else (ref, "", "")
            output["reference"] = rel(target) + (f":{attr}" if sep else "")
    if not data.get("outputs"):
        data.pop("outputs", None)
    header = (f"# {spec.label} in {data['source']}: the launch of a perfmodel analyze command line, kept as a "
              "spec\n# (docs/spec.md describes every field). Run it: perfmodel analyze THIS.yaml --device h100\n")
    return header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=110)


def starter_spec(file: str | Path, kernel: str | None, *, out: str | Path | None = None,
                 defines: Mapping[str, Any] | None = None, include_dirs: Sequence[str] = ()) -> str:
    """The YAML text of a starter spec for one kernel of a CUDA file, from its signature (``perfmodel kernels
    init``): a size param ``N`` and a block size, every scalar parameter set from them, every pointer an array
    of N elements (inputs - ``const`` pointees - random, others zeros), and a commented ``outputs:`` to fill in."""
    import os

    import yaml

    from perfmodel.kernel import load_kernel
    from perfmodel.spec import macro_names

    path = Path(file).expanduser().resolve()
    from perfmodel import safeload

    source = safeload.read_text(path, error=SpecError, what="CUDA source", latin1=True)
    macros = macro_names(source)
    defines = dict(defines or {})
    program = load_kernel(path, entry=kernel, defines={k: v for k, v in defines.items() if k in macros},
                          include_dirs=tuple(str(Path(d).resolve()) for d in include_dirs))
    entry = kernel or program.name
    folder = Path(out).expanduser().resolve().parent if out is not None else Path.cwd()
    params: dict[str, Any] = {"N": {"default": 1 << 20, "help": "elements per array - set the problem size"},
                              "BLOCK": {"default": 256, "help": "threads per block"}}
    for name, value in defines.items():
        params.setdefault(name, value)
    lines_args: list[str] = []
    outputs: list[str] = []
    seed = 0
    for p in program.params:
        dtype = _dtype_name(p.dtype)
        if p.is_pointer:
            const = p.ctype.split("*")[0].split().count("const") > 0
            note = ""
            if dtype is None:
                dtype, note = "uint8", f"  # {p.ctype}: bytes - set the length to N * sizeof the element"
            if const:
                seed += 1
                init = f"{{random: {{seed: {seed}, low: -1, high: 1}}}}" if dtype[0] in "fh" else \
                    f"{{random: {{seed: {seed}, low: 0, high: 100}}}}"
            else:
                init = "zeros"
                outputs.append(p.name)
            lines_args.append(f"  - {{name: {p.name}, dtype: {dtype}, length: N, init: {init}}}{note}")
        elif p.ctype.split()[-1] in ("cudaTextureObject_t", "CUtexObject"):
            seed += 1
            lines_args.append(f"  - name: {p.name}   # {p.ctype}: the texture the host code creates - its texels and "
                              "cudaTextureDesc (docs/spec.md)")
            lines_args.append(f"    texture: {{dtype: float32, channels: 1, shape: [1024, 1024], init: {{random: "
                              f"{{seed: {seed}, low: 0, high: 1}}}}, filter: point, address: clamp, "
                              "normalized_coords: false, read_mode: element}")
        elif dtype is None:
            lines_args.append(f"  # {p.name}: {p.ctype} cannot be set by a spec (numbers, pointers and textures "
                              "only)")
        else:
            value = "N" if dtype[0] in "iu" else "1.0"
            lines_args.append(f"  - {{name: {p.name}, dtype: {dtype}, value: {value}}}   # {p.ctype}: set me")
    signature = _signature_text(program.params)
    rel = os.path.relpath(path, folder)
    text = [
        f"# Starter spec for {entry} in {path.name}, written by `perfmodel kernels init` from its signature:",
        f"#   {entry}({signature})",
        "# Set the sizes and the launch, name a reference for the outputs, then run it:",
        f"#   perfmodel analyze {Path(out).name if out else 'THIS.yaml'} --device h100",
        "# Every field: docs/spec.md.",
        yaml.safe_dump({"name": _identifier(entry), "source": rel, "entry": entry}, sort_keys=False,
                       width=110).rstrip(),
        "params:",
        *[f"  {k}: " + (yaml.safe_dump(v, default_flow_style=True, width=200).strip() if isinstance(v, dict)
                        else str(v)) for k, v in params.items()],
        'grid: ["cdiv(N, BLOCK)"]',
        "block: [BLOCK]",
        "args:" if lines_args else "args: []",
        *lines_args,
    ]
    if include_dirs:
        text.append("include_dirs: " + yaml.safe_dump([os.path.relpath(Path(d).resolve(), folder)
                                                        for d in include_dirs], default_flow_style=True).strip())
    text.append("# Without outputs the report says 'not checked'. Check each output against a Python function of "
                "the\n# initial args (module:function, file.py:function) or expected values (a .npy file):")
    text.append("# outputs:")
    for name in outputs or ["OUTPUT"]:
        text.append(f"#   - {{arg: {name}, reference: \"my_reference.py:{_identifier(entry)}\", rtol: 1e-5, "
                    "atol: 1e-6}")
    return "\n".join(text) + "\n"
