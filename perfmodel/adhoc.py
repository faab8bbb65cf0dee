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
- ``--arg NAME=X,Y,Z`` on a CUDA vector type passed by value (``float3 w``): one expression per component;
  ``--arg 'NAME={FIELD=VALUE, ...}'`` on a struct passed by value: every field (compile/structs.py finds them), a
  pointer field taking ``DTYPE[COUNT][:INIT]`` like a pointer parameter (perfmodel/adhoc_args.py).
- ``--check NAME=REFERENCE``: check output array NAME against a Python function (``module:function``,
  ``file.py:function``), a ``.npy`` file of expected values or a built-in reference, with ``--rtol``/``--atol``.

Every mistake is a :class:`LaunchArgumentError` (exit 2) naming the option, the parameter and its C type.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from perfmodel import expr as _expr
from perfmodel.adhoc_args import (  # noqa: F401  (LaunchArgumentError, _dtype_name: re-exported for cli/, api.py)
    _ARRAY, LaunchArgumentError, _array_arg, _check_expression, _components, _dtype_name, _evaluate, _plain,
    _pointee_name, _signature_text, _split_dims, _struct_example, _struct_fields, _struct_text, enumerators)
from perfmodel.errors import CompileError, SpecError


# --arg NAME=null: a pointer the host passes as NULL
_NULL = ("null", "nullptr")


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
                      cwd: str | Path | None = None, symbols: Sequence[str] | None = None,
                      text_macros: Mapping[str, str] | None = None):
    """Build the KernelSpec of a command-line launch (see the module docstring). Raises LaunchArgumentError.
    ``text_macros``: -D NAME=TEXT whose TEXT is no number (a type), for the compile only."""
    from perfmodel import safeload
    from perfmodel.compile.signature import vector_name
    from perfmodel.kernel import load_kernel
    from perfmodel.spec import DTYPES, macro_names_with_headers

    cwd = Path(cwd or Path.cwd()).resolve()
    path = (cwd / Path(file).expanduser()).resolve()
    source = safeload.read_text(path, error=SpecError, what="CUDA source", latin1=True)
    defines = dict(defines or {})
    includes = tuple(str((cwd / d).resolve()) for d in include_dirs)
    macros = macro_names_with_headers(path, source, includes)
    compile_defines = {k: v for k, v in defines.items() if k in macros}
    text_macros = dict(text_macros or {})
    compile_defines.update(text_macros)
    unnamed: list[str] = []      # -D names no #if or #define line names, that the code uses as macros
    while True:       # (each round passes one more -D name at least: as many rounds as there are -D's at most)
        try:
            program = load_kernel(path, entry=kernel, defines=compile_defines, arch=arch, include_dirs=includes)
            break
        except CompileError as err:
            # a name the code uses that only the build line defines (an NVRTC-compiled library's `-DTILE_DIM=32`,
            # ArrayFire's): given with -D, it goes to the compiler too, and the compile is made again
            missing = [n for n in re.findall(r'identifier "(\w+)" is undefined', str(err))
                       if n in defines and n not in compile_defines]
            if not missing:
                raise
            unnamed += missing
            compile_defines.update({n: defines[n] for n in missing})
    macros = tuple(macros) + tuple(unnamed)
    entry = kernel or program.name
    notes = _variables_not_macros(defines, macros, source, file)
    params = list(program.params)
    by_name = {p.name: i for i, p in enumerate(params)}

    # --arg: by name or position
    given: dict[int, tuple[str, str]] = {}
    functions = _function_addresses(program)
    for key, value, item in _parse_assignments(args, "--arg"):
        value = _with_functions(value, functions, set(defines) | set(by_name))
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
            fields = _struct_text(value, p, item)
            struct_exprs[i] = ({k: _with_enumerators(v, program, set(defines) | set(by_name))
                                if isinstance(v, str) and "[" not in v else v for k, v in fields.items()}, item)
        elif i in given:
            value, item = given[i]
            if value.strip().lower() in _NULL:
                if not p.is_pointer:
                    raise LaunchArgumentError(f"--arg {item!r}: parameter {p.name!r} of {entry} is {p.ctype}, not a "
                                              "pointer; only a pointer can be NULL")
                continue
            if p.is_pointer and p.ctype.count("*") > 1:
                m = _ARRAY.match(value)
                dtype = " ".join(m["dtype"].split()) if m else None
                if m and dtype in ("uint64", "int64") and (m["init"] or "zeros").strip() == "zeros":
                    # N pointers, NULL until the kernel writes them (Ray Tracing in One Weekend's create_world
                    # fills a hitable **d_list): an array of 8-byte words the kernel may write and read back
                    pass
                else:
                    raise LaunchArgumentError(
                        f"--arg {item!r}: parameter {p.name!r} of {entry} is {p.ctype}, an array of device pointers: "
                        f"give it N NULL pointers the kernel fills (--arg {p.name}=uint64[N]), or NULL (--arg "
                        f"{p.name}=null); pointers to arrays of their own the command line cannot build (a kernel "
                        "that takes each array as a pointer of its own, or one array with offsets, can be analysed)")
            is_array = _ARRAY.match(value) is not None
            pointers = {q.name for q in params if q.is_pointer and q.name != p.name}
            if p.is_pointer and not is_array and value.strip() in pointers:
                continue        # --arg out=in: the other pointer's very array (an in-place kernel, bit_rev(d, d))
            if p.is_pointer and not is_array:
                raise LaunchArgumentError(
                    f"--arg {item!r}: parameter {p.name!r} of {entry} is a pointer ({p.ctype}); give it an array, "
                    f"e.g. --arg {p.name}={_pointee_name(p.dtype) or 'float32'}[N]:random")
            if not p.is_pointer and is_array:
                raise LaunchArgumentError(f"--arg {item!r}: parameter {p.name!r} of {entry} is a scalar "
                                          f"({p.ctype}); give it a number or an expression, e.g. --arg {p.name}=1024")
            if not p.is_pointer:
                if p.name in defines:
                    if value == p.name:     # --arg wA=wA with -D wA=320: the -D value
                        continue
                    raise LaunchArgumentError(f"--arg {item!r}: {p.name!r} is also given with -D; give it once")
                scalar_exprs[p.name] = (_with_enumerators(value, program, set(defines) | set(by_name)), item)
        elif p.is_pointer and p.ctype.count("*") > 1:
            missing.append(f"{p.name!r} ({p.ctype}, an array of device pointers: --arg {p.name}=uint64[N] for N "
                           f"NULL pointers the kernel fills, or --arg {p.name}=null)")
        elif p.is_pointer:
            missing.append(f"{p.name!r} ({p.ctype}, a pointer: --arg {p.name}="
                           f"{_pointee_name(p.dtype) or 'float32'}[COUNT]:random)")
        elif fields:
            missing.append(f"{p.name!r} ({p.ctype}: --arg {p.name}={','.join(fields).upper()}, one value per "
                           "component)")
        elif p.layout is not None and p.layout.error is None and not p.layout.leaves:
            struct_exprs[i] = ({}, f"{p.name} (an empty struct: nothing to give)")
        elif p.layout is not None and p.layout.error is None:
            missing.append(f"{p.name!r} ({p.ctype}, a struct: --arg '{p.name}={_struct_example(p.layout)}')")
        elif p.layout is not None:
            missing.append(f"{p.name!r} ({p.ctype}, a struct passed by value whose fields perfmodel could not find: "
                           f"{p.layout.error})")
        elif p.name not in defines and _numeric_default(p) is not None:
            # the source's default argument (ggml's rms_norm_f32(..., const int64_t stride_row = 0, ...)), as the
            # host's call that leaves it out gets it
            scalar_exprs[p.name] = (_numeric_default(p), f"{p.name}={p.default} (its default)")
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
    pointer_names = {q.name for q in params if q.is_pointer}
    for i, p in enumerate(params):
        if p.is_pointer:
            value, item = given[i]
            if value.strip().lower() in _NULL:
                spec_args.append({"name": p.name, "null": True})
                continue
            if value.strip() in pointer_names - {p.name}:
                other = value.strip()
                j = next(k for k, q in enumerate(params) if q.name == other)
                if not _ARRAY.match(given[j][0]):
                    raise LaunchArgumentError(f"--arg {item!r}: {other!r} must have an array of its own "
                                              f"(--arg {other}=DTYPE[COUNT]:INIT) for {p.name!r} to share it")
                spec_args.append({"name": p.name, "same_as": other})
                continue
            spec_args.append({"name": p.name, **_array_arg(value, f"--arg {item}", f"parameter {p.name!r}", p.ctype,
                                                           _pointee_name(p.dtype), i + 1, values, cwd)})
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

    declared = _module_variables(program)
    constants, device_variables = _symbols(symbols or (), declared, program.name, values, cwd, program)
    outputs = []
    arrays = {a["name"] for a in spec_args if "length" in a or "same_as" in a}
    arrays |= {f"{a['name']}.{k}" for a in spec_args for k, v in a.get("fields", {}).items() if isinstance(v, dict)}
    arrays |= {f"{name}.{k}" for name, c in {**constants, **device_variables}.items()
               for k, v in c.get("fields", {}).items() if isinstance(v, dict)}
    arrays |= {name for name, c in constants.items() if c.get("pointer")}     # what a pointer variable points to
    devices = sorted(n for n, v in declared.items() if v.space == "global")
    for key, ref, item in _parse_assignments(checks, "--check"):
        if key.isdigit() and int(key) < len(params):
            key = params[int(key)].name
        if key not in arrays and key in devices:
            if key not in device_variables:
                # read back from the symbol after the run (cudaMemcpyFromSymbol): its declared elements
                device_variables[key] = _declared_array(declared[key], program, f"--check {item}")
        elif key not in arrays:
            raise LaunchArgumentError(f"--check {item!r}: {key!r} is not an array argument or __device__ variable "
                                      f"of {entry} (those: {', '.join(sorted(arrays) + devices) or 'none'})")
        if ref.endswith(".npy") or re.match(r"^[^:]+\.py:", ref):
            target, sep, attr = ref.rpartition(":") if not ref.endswith(".npy") else (ref, "", "")
            where = (cwd / Path(target).expanduser()).resolve()
            if not where.is_file():
                raise LaunchArgumentError(f"--check {item!r}: no such file {target!r} (looked at {where})")
            ref = str(where) + (f":{attr}" if sep else "")
        output: dict[str, Any] = {"arg": key, "reference": ref}
        if rtol is not None:
            output["rtol"] = rtol
        if atol is not None:
            output["atol"] = atol
        outputs.append(output)

    data = {"name": _identifier(entry), "source": str(path), "entry": entry, "params": model_params,
            "grid": dims["--grid"], "block": dims["--block"], "args": spec_args, "outputs": outputs,
            "include_dirs": list(includes)}
    if text_macros:
        data["macros"] = text_macros
    if unnamed:
        data["compile_params"] = unnamed
    if constants:
        data["constants"] = constants
    if device_variables:
        data["device_variables"] = device_variables
    if smem is not None:
        data["dynamic_shared_memory"] = smem
    # a spec param named like one of the file's macros is a -D of the compile; a kernel argument given with --arg
    # is not (HeCBench's ecdh: `#define P_x 5` in main.cu, after the header whose kernel has a parameter P_x)
    for name in [n for n in scalar_exprs if n in macros]:
        data = _renamed(data, name, _free_name(name, set(model_params) | set(macros)))
    spec = _build(data, cwd, entry)
    spec.__dict__["launch_notes"] = notes
    return spec


def _variables_not_macros(defines: Mapping[str, Any], macros, source: str, file) -> list[str]:
    """Notes for -D names the file declares as variables (``const int N = 1024;``): -D sets a macro, which the
    kernel never reads then; the value serves the launch's expressions only (--grid, --arg), so the two can
    disagree silently (a buffer sized for 4,096 elements and a kernel that writes 1,024)."""
    from perfmodel.compile.lexer import mask

    notes = []
    lines = source.splitlines()
    # braces open before each line (strings and comments masked), and the lines of #define bodies: a constant of a
    # host function or of a macro's body is not the file's
    code = mask(source).splitlines()
    depth, depths, in_macro, macro_lines = 0, [], False, set()
    for k, text in enumerate(code, 1):
        depths.append(depth)
        if in_macro or text.lstrip().startswith("#"):
            macro_lines.add(k)
            in_macro = text.rstrip().endswith("\\")
            continue
        depth += text.count("{") - text.count("}")
    for name in defines:
        if name in macros:
            continue
        pattern = re.compile(rf"\b(?:const|constexpr)\b[^;{{}}()]*\b{re.escape(name)}\s*(?:=|\{{)")
        line = next((k for k, text in enumerate(code, 1) if pattern.search(text) and k - 1 < len(depths)
                     and depths[k - 1] == 0 and k not in macro_lines), None)
        if line is not None:
            notes.append(f"-D {name}: {file}:{line} declares {name} as a constant (`{lines[line - 1].strip()}`), "
                         f"not a macro, so the kernel keeps its own value; -D {name} served only the launch's "
                         "expressions (--grid, --block, --arg)")
    return notes


def _module_variables(program) -> dict:
    """The ``__constant__`` and ``__device__`` variables the kernel names, by name."""
    named = program.module.named_symbols(program.entry)
    return {v.name: v for v in program.module.variables
            if v.space in ("const", "global") and v.count is not None and v.name in named}


def _declared_array(v, program, option: str) -> dict:
    """A ``__device__`` variable as its declaration gives it, zeros: its element type from the source line that
    declares it (``__device__ float d_out[256];``; the PTX declares an array as bytes), else the PTX's scalar type."""
    import numpy as np

    from perfmodel.compile.signature import dtype_of
    from perfmodel.ptx.ir import TYPES
    from perfmodel.spec import DTYPES

    decl = re.compile(rf"__device__\s+(?:(?:static|volatile|const)\s+)*([A-Za-z_][\w:]*(?:\s+[A-Za-z_]\w*)*)\s+"
                      rf"{re.escape(v.name)}\s*(\[|=|;)")
    dtype = None
    for line in getattr(program, "source_lines", None) or ():
        m = decl.search(line)
        if m:
            dtype = dtype_of(m.group(1), False)
            break
    if dtype is None and v.type not in ("b8", "b16", "b32", "b64"):
        dtype = np.dtype(TYPES[v.type][0])
    name = next((n for n, d in DTYPES.items() if d == dtype), None) if dtype is not None else None
    if name is None or v.nbytes % dtype.itemsize:
        raise LaunchArgumentError(f"{option}: the element type of __device__ {v.name} ({v.nbytes:,} bytes) is not one "
                                  f"perfmodel reads from its declaration; give it with --symbol {v.name}=DTYPE[COUNT]")
    return {"dtype": name, "length": str(v.nbytes // dtype.itemsize), "init": "zeros"}


def _symbols(items: Sequence[str], declared: dict, kernel: str, values: Mapping[str, Any],
             cwd: Path, program=None) -> tuple[dict, dict]:
    """``--symbol NAME=DTYPE[COUNT][:INIT]``: the spec's ``constants`` (a ``__constant__`` variable) and
    ``device_variables`` (a ``__device__`` one) entries, each one of the variables the kernel names
    (``declared``, :func:`_module_variables`), no larger than it; ``--symbol 'NAME={FIELD=VALUE, ...}'`` for a
    variable of a struct type (``program.variable_layouts``), its ``fields``."""
    from types import SimpleNamespace

    from perfmodel.spec import DTYPES

    constants: dict[str, dict] = {}
    device: dict[str, dict] = {}
    functions = _function_addresses(program)
    for key, value, item in _parse_assignments(items, "--symbol"):
        value = _with_functions(value, functions, set(values))
        option = f"--symbol {item}"
        if key not in declared:
            raise LaunchArgumentError(f"{option}: {kernel} names no __constant__ or __device__ variable {key!r} "
                                      f"(it names: {', '.join(sorted(declared)) or 'none'})")
        if key in constants or key in device:
            raise LaunchArgumentError(f"{option}: {key!r} is given twice")
        v = declared[key]
        space = "__constant__" if v.space == "const" else "__device__"
        layout = (getattr(program, "variable_layouts", None) or {}).get(key)
        if value.strip().startswith("{") and layout is not None:
            # a struct-typed variable (AutoDock-GPU's `__constant__ GpuData cData;`): its fields, pointer fields
            # included, as a by-value struct parameter's
            var = SimpleNamespace(name=key, ctype=layout.ctype, layout=layout)
            texts = _struct_text(value, var, item, "--symbol", f"{space} {key} is {layout.ctype}, a struct")
            entry = {"fields": _struct_fields(var, texts, item, values, cwd, 50 + len(constants) + len(device),
                                              "--symbol")}
            (constants if v.space == "const" else device)[key] = entry
            continue
        pointee = (getattr(program, "pointer_variables", None) or {}).get(key)
        if pointee is not None and _ARRAY.match(value) and "@" not in value:
            # a pointer variable (`__constant__ float *d_table;`, set by the host's cudaMemcpyToSymbol of a
            # device pointer: ethminer's d_dag): the array is what it points to
            from perfmodel.compile.signature import dtype_of

            entry = _array_arg(value, option, f"{space} {key!r}", f"{space} {pointee}* {key}",
                               _pointee_name(dtype_of(pointee, False)), 1000 + len(constants) + len(device),
                               values, cwd)
            (constants if v.space == "const" else device)[key] = {**entry, "pointer": True}
            continue
        if not _ARRAY.match(value) or "@" in value:
            example = f"'{key}={_struct_example(layout)}'" if layout is not None and layout.error is None else \
                f"{key}=float32[16]:random"
            raise LaunchArgumentError(f"{option}: expected NAME=DTYPE[COUNT][:INIT]"
                                      + (f" or, for {space} {key} ({layout.ctype}), its fields in braces"
                                         if layout is not None else "") + f", e.g. --symbol {example}")
        entry = _array_arg(value, option, f"{space} {key!r}", f"{space} {key}", None, 1000, values, cwd)
        nbytes = _evaluate(entry["length"], values, option) * DTYPES[entry["dtype"]].itemsize
        if nbytes > v.nbytes:
            raise LaunchArgumentError(f"{option}: {space} {key} holds {v.nbytes:,} bytes; {nbytes:,} given")
        (constants if v.space == "const" else device)[key] = entry
    return constants, device


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|0[xX][0-9a-fA-F]+)")


def _starter_fields(name: str, layout, indent: str, lines: list[str], outputs: list[str], seed: int) -> int:
    """``kernels init``'s lines for every field of a struct (a parameter's or a variable's): a pointer field an
    array of N (random where it points to const, else zeros and an output), a number N or 1.0. Returns the seed."""
    for f in layout.leaves:
        if f.pointer:
            kind = f.pointee or "uint8"
            const = f.ctype.startswith("const ")
            seed += const
            init = (f"{{random: {{seed: {seed}, low: -1, high: 1}}}}" if kind[0] in "fhb" else
                    f"{{random: {{seed: {seed}, low: 0, high: 100}}}}") if const else "zeros"
            if not const:
                outputs.append(f"{name}.{f.path}")
            note = "" if f.pointee else ": bytes - set the length to N * sizeof the element"
            lines.append(f"{indent}{f.path}: {{dtype: {kind}, length: N, init: {init}}}   # {f.ctype}{note}")
        else:
            one = "N" if f.dtype[0] in "iu" else "1.0"
            value = f"[{', '.join([one] * f.count)}]" if f.shape and f.count <= 8 else one
            lines.append(f"{indent}{f.path}: {value}   # {f.ctype}"
                         + (f": {f.count} values, or one for every element" if f.shape else ""))
    return seed


def _function_addresses(program) -> dict[str, int]:
    """Source name -> address of the module's device functions that one name denotes (not an overload set): what
    the host copies out of a `__device__ op_t p = f;` with cudaMemcpyFromSymbol and passes on (cuda-samples'
    FunctionPointers), the address perfmodel's executor gives ``f`` (sim/program.py)."""
    from perfmodel.sim.program import _source_name, function_addresses

    by_name: dict[str, list[int]] = {}
    for mangled, address in function_addresses(program.module).items():
        by_name.setdefault(_source_name(mangled), []).append(address)
    return {name: found[0] for name, found in by_name.items() if len(found) == 1}


def _with_functions(value: str, functions: Mapping[str, int], names: set[str]) -> str:
    """``--arg op=Threshold`` (a function-pointer parameter), ``--symbol 'table=uint64[2]:values=(ComputeSobel,
    ComputeBox)'``: a device function's name, where no -D or parameter has it, stands for its address - in a
    scalar's expression, or in a values=(...) list."""
    if not functions or not re.search(r"[A-Za-z_]", value):
        return value

    def swap(text: str) -> str:
        return re.sub(r"(?<![\w.])[A-Za-z_]\w*(?![\w(\[])", lambda m: str(functions[m.group(0)])
                      if m.group(0) in functions and m.group(0) not in names else m.group(0), text)
    m = re.search(r"values\s*=\s*\(([^)]*)\)", value)
    if m:
        return value[:m.start(1)] + swap(m.group(1)) + value[m.end(1):]
    if "[" in value or "{" in value:
        return value
    return swap(value)


def _with_enumerators(value: str, program, names: set[str]) -> str:
    """``--arg a=LEAKY``: the enumerators of the file and its headers (darknet's ACTIVATION) by their values, where
    no -D or parameter has the name."""
    words = set(re.findall(r"[A-Za-z_]\w*", value)) - names
    if not words:
        return value
    texts = list(program.source_files.values()) or ["\n".join(program.source_lines)]
    enums = {k: v for k, v in enumerators(texts).items() if k in words}
    if not enums:
        return value

    def one(m):
        # a scoped one too: Geometry::POINT (TeaLeaf's enum class); in parentheses inside an expression (a negative
        # one), bare on its own (a struct field's "(0)" reads as a list of one)
        name = m.group(0).split("::")[-1].strip()
        if name not in enums or (name in names and "::" not in m.group(0)):
            return m.group(0)
        return str(enums[name]) if m.group(0) == value.strip() else f"({enums[name]})"
    return re.sub(r"(?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*", one, value)


def _numeric_default(p) -> str | None:
    """A scalar parameter's default argument when it is a number literal (``0``, ``1.0f``, ``256u``, ``-1``), as
    an expression; None otherwise (an expression of other names, a pointer's nullptr)."""
    text = (getattr(p, "default", None) or "").strip()
    if p.is_pointer or p.dtype is None or not text:
        return None
    number = re.sub(r"(?<=[\d.])(?:[fF]|[uU]?[lL]{0,2}|[lL]{1,2}[uU]?)$", "", text)
    return number if _NUMBER.fullmatch(number) else None


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
    from perfmodel.spec import macro_names_with_headers

    path = Path(file).expanduser().resolve()
    from perfmodel import safeload

    source = safeload.read_text(path, error=SpecError, what="CUDA source", latin1=True)
    includes = tuple(str(Path(d).resolve()) for d in include_dirs)
    macros = macro_names_with_headers(path, source, includes)
    defines = dict(defines or {})
    program = load_kernel(path, entry=kernel, defines={k: v for k, v in defines.items() if k in macros},
                          include_dirs=includes)
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
            note, length = "", "N"
            vector = _pointee_name(p.dtype) if dtype is None else None
            if vector is not None:          # float4*: N float4s are N x 4 float32s (x, y, z, w in turn)
                dtype, length = _dtype_name(p.dtype.fields["x"][0]), f"N * {len(p.dtype.names)}"
                note = f"  # {p.ctype}: N {vector}s"
            elif dtype is None:
                dtype, note = "uint8", f"  # {p.ctype}: bytes - set the length to N * sizeof the element"
            if const:
                seed += 1
                init = f"{{random: {{seed: {seed}, low: -1, high: 1}}}}" if dtype[0] in "fh" else \
                    f"{{random: {{seed: {seed}, low: 0, high: 100}}}}"
            else:
                init = "zeros"
                outputs.append(p.name)
            lines_args.append(f"  - {{name: {p.name}, dtype: {dtype}, length: {length}, init: {init}}}{note}")
        elif p.ctype.split()[-1] in ("cudaTextureObject_t", "CUtexObject"):
            seed += 1
            lines_args.append(f"  - name: {p.name}   # {p.ctype}: the texture the host code creates - its texels and "
                              "cudaTextureDesc (docs/spec.md)")
            lines_args.append(f"    texture: {{dtype: float32, channels: 1, shape: [1024, 1024], init: {{random: "
                              f"{{seed: {seed}, low: 0, high: 1}}}}, filter: point, address: clamp, "
                              "normalized_coords: false, read_mode: element}")
        elif p.dtype is not None and p.dtype.names:        # a CUDA vector type passed by value
            from perfmodel.compile.signature import vector_name

            one = "N" if p.dtype[0].kind in "iu" else "1.0"
            lines_args.append(f"  - {{name: {p.name}, dtype: {vector_name(p.dtype)}, value: "
                              f"[{', '.join([one] * len(p.dtype.names))}]}}   # {p.ctype}: set me")
        elif p.layout is not None and p.layout.error is None:   # a struct passed by value: every field
            lines_args.append(f"  - name: {p.name}   # {p.ctype}, a struct: set every field")
            lines_args.append("    fields:")
            seed = _starter_fields(p.name, p.layout, "      ", lines_args, outputs, seed)
        elif dtype is None:
            why = f": {p.layout.error}" if p.layout is not None else " (numbers, vectors, structs, pointers and " \
                                                                      "textures only)"
            lines_args.append(f"  # {p.name}: {p.ctype} cannot be set by a spec{why}")
        else:
            value = "N" if dtype[0] in "iu" else "1.0"
            lines_args.append(f"  - {{name: {p.name}, dtype: {dtype}, value: {value}}}   # {p.ctype}: set me")
    # struct-typed __constant__ / __device__ variables the kernel names (AutoDock-GPU's cData): every field
    lines_symbols: dict[str, list[str]] = {"const": [], "global": []}
    named = program.module.named_symbols(program.entry)
    for v in program.module.variables:
        layout = (getattr(program, "variable_layouts", None) or {}).get(v.name)
        if v.space in lines_symbols and v.name in named and layout is not None and layout.error is None:
            lines = lines_symbols[v.space]
            lines.append(f"  {v.name}:   # {layout.ctype}, a struct the host copies in (cudaMemcpyToSymbol): "
                         "set every field")
            lines.append("    fields:")
            seed = _starter_fields(v.name, layout, "      ", lines, outputs, seed)
        pointee = (getattr(program, "pointer_variables", None) or {}).get(v.name)
        if v.space in lines_symbols and v.name in named and pointee is not None:
            from perfmodel.compile.signature import dtype_of

            element = _pointee_name(dtype_of(pointee, False)) or "uint8"
            lines_symbols[v.space].append(
                f"  {v.name}: {{dtype: {element}, length: N, init: zeros, pointer: true}}   # {pointee}*: the "
                "device array the host points it to (cudaMemcpyToSymbol of its address)")
            outputs.append(v.name)
    # the size and block-size params are passed to the compiler where the file's preprocessor names them: a
    # file's own `#define BLOCK 512` (darknet) became BLOCK=256, silently, in the kernel analysed - other names
    renames = {}
    for mine, others in (("N", ("NELEMS", "PM_N")), ("BLOCK", ("THREADS", "PM_BLOCK"))):
        if mine in macros or mine in defines:
            renames[mine] = next(o for o in others if o not in macros and o not in defines)
    if renames:
        params = {renames.get(k, k) if k in ("N", "BLOCK") and isinstance(v, dict) else k: v
                  for k, v in params.items()}
        if "BLOCK" in renames:
            # the file's own block size where it #defines one (darknet's BLOCK 512: a launch of 256 would leave
            # part of its shared part[BLOCK] unwritten)
            texts = list(program.source_files.values()) or [source]
            found = next((int(m.group(1)) for t in texts
                          for m in [re.search(r"^[ \t]*#[ \t]*define[ \t]+BLOCK[ \t]+(\d+)\b", t, re.M)] if m), None)
            if found and 0 < found <= 1024:
                params[renames["BLOCK"]] = {"default": found, "help": "threads per block (the file's BLOCK)"}
        word = re.compile(r"(?<!name: )\b(" + "|".join(renames) + r")\b")
        lines_args = [word.sub(lambda m: renames[m.group(1)], line) for line in lines_args]
        lines_symbols = {k: [word.sub(lambda m: renames[m.group(1)], line) for line in v]
                         for k, v in lines_symbols.items()}
    size, threads = renames.get("N", "N"), renames.get("BLOCK", "BLOCK")
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
        f'grid: ["cdiv({size}, {threads})"]',
        f"block: [{threads}]",
        "args:" if lines_args else "args: []",
        *lines_args,
    ]
    for space, key in (("const", "constants:"), ("global", "device_variables:")):
        if lines_symbols[space]:
            text += [key, *lines_symbols[space]]
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
