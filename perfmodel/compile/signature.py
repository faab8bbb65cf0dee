"""Kernel signatures: parameter names and C types from the source, sizes from PTX, resources from ptxas.

* ``parse_params`` splits the text between a kernel's parentheses at top-level commas and names each parameter
  and its C type (``const float*``), with template parameters substituted from the name expression.
* ``ptx_entry_params`` reads the ``.param`` declarations of a PTX ``.entry`` (size, alignment).
* ``parse_ptxas_log`` reads NVRTC's ``--ptxas-options=-v`` log per entry function.
"""
from __future__ import annotations

import re

import ml_dtypes  # noqa: F401  (registers numpy's "bfloat16" dtype)
import numpy as np

_QUALIFIERS = {"const", "volatile"}
_DROP = {"__restrict__", "__restrict", "restrict", "register", "__grid_constant__", "struct", "class",
         "typename", "enum", "union"}
_IDENT = re.compile(r"[A-Za-z_]\w*$")
_TOKENS = re.compile(r"::|[A-Za-z_]\w*|\d[\w.]*|\S")

SCALAR_DTYPES: dict[str, str] = {
    "float": "float32", "double": "float64", "half": "float16", "__half": "float16",
    "int": "int32", "signed int": "int32", "signed": "int32", "unsigned int": "uint32", "unsigned": "uint32",
    "uint": "uint32", "char": "int8", "signed char": "int8", "unsigned char": "uint8", "uchar": "uint8",
    "short": "int16", "short int": "int16", "signed short": "int16", "unsigned short": "uint16",
    "unsigned short int": "uint16", "ushort": "uint16",
    "long": "int64", "long int": "int64", "long long": "int64", "long long int": "int64", "signed long long": "int64",
    "unsigned long": "uint64", "unsigned long int": "uint64", "ulong": "uint64",
    "unsigned long long": "uint64", "unsigned long long int": "uint64",
    "size_t": "uint64", "ptrdiff_t": "int64", "bool": "bool",
    "int8_t": "int8", "uint8_t": "uint8", "int16_t": "int16", "uint16_t": "uint16", "int32_t": "int32",
    "uint32_t": "uint32", "int64_t": "int64", "uint64_t": "uint64", "intptr_t": "int64", "uintptr_t": "uint64",
    "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16", "__bf16": "bfloat16",   # ml_dtypes' bfloat16
}


def split_top_level(text: str, sep: str = ",") -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts]


def expression_args(expression: str) -> list[str]:
    """``reduce6<int, 256, true>`` -> ["int", "256", "true"]; [] without template arguments."""
    if "<" not in expression:
        return []
    inner = expression[expression.index("<") + 1: expression.rindex(">")]
    return split_top_level(inner)


def substitute(tokens: list[str], mapping: dict[str, str]) -> list[str]:
    out: list[str] = []
    for t in tokens:
        if t in mapping:
            out += _TOKENS.findall(mapping[t])
        else:
            out.append(t)
    return out


def _join(tokens: list[str]) -> str:
    text = ""
    for t in tokens:
        if t in ("*", "&", "&&", "::", "<", ">", ",") or text.endswith(("::", "<")) or not text:
            text += t if t != "," else ", "
        else:
            text += " " + t
    return text.replace("> >", ">>").strip()


def parse_params(params_text: str, mapping: dict[str, str] | None = None) -> list[tuple[str, str, bool]]:
    """(name, C type, is_pointer) per parameter; template names replaced through ``mapping``."""
    text = params_text.strip()
    if text in ("", "void"):
        return []
    result = []
    for k, part in enumerate(split_top_level(text)):
        part = split_top_level(part, "=")[0] if "=" in part else part
        toks = [t for t in _TOKENS.findall(part) if t not in _DROP]
        # __attribute__((...)) / __align__(n) and friends
        clean, skip = [], 0
        for i, t in enumerate(toks):
            if skip:
                skip -= t == ")"
                skip += t == "(" and i > 0 and skip > 0
                continue
            if t in ("__attribute__", "__align__", "alignas") and i + 1 < len(toks) and toks[i + 1] == "(":
                skip = 1
                continue
            clean.append(t)
        toks = clean
        array = False
        if "[" in toks:           # float a[], float a[16]
            toks = toks[: toks.index("[")]
            array = True
        name = f"arg{k}"
        idents = [i for i, t in enumerate(toks) if _IDENT.match(t) and t not in _QUALIFIERS]
        if len(idents) >= 2 and idents[-1] == len(toks) - 1 and toks[idents[-1] - 1] != "::":
            name = toks[-1]
            toks = toks[:-1]
        if mapping:
            toks = substitute(toks, mapping)
        if array:
            toks = toks + ["*"]
        ctype = _join(toks)
        ctype = re.sub(r"\s*\*\s*", "*", ctype).replace("*const", "* const")
        result.append((name, ctype, "*" in toks))
    return result


def param_defaults(params_text: str) -> dict[str, str]:
    """Parameter name -> its default argument as written (``int n = 256``), for the parameters that have one."""
    out = {}
    names = [name for name, _ctype, _ptr in parse_params(params_text)]
    for name, part in zip(names, split_top_level(params_text.strip()) if params_text.strip() not in ("", "void")
                          else []):
        pieces = split_top_level(part, "=")
        if len(pieces) > 1:
            out[name] = "=".join(pieces[1:]).strip()
    return out


_VECTOR_BASES = {"char": "i1", "uchar": "u1", "short": "i2", "ushort": "u2", "int": "i4", "uint": "u4",
                 "long": "i8", "ulong": "u8", "longlong": "i8", "ulonglong": "u8", "float": "f4", "double": "f8",
                 "half": "f2", "__half": "f2"}


def vector_dtype(name: str) -> np.dtype | None:
    """CUDA vector types as numpy structured dtypes: ``float4`` -> {x, y, z, w: float32} (16 bytes).

    ``__half2``/``half2`` -> {x, y: float16}. Alignment beyond the fields' own (float4 is 16-byte aligned on the
    GPU) is not represented; the sizes match."""
    m = re.fullmatch(r"(__half|half|[a-z]+?)([1-4])", "uint3" if name == "dim3" else name)
    if not m or m.group(1) not in _VECTOR_BASES:
        return None
    fields = "xyzw"[: int(m.group(2))]
    return np.dtype([(f, _VECTOR_BASES[m.group(1)]) for f in fields])


#: the CUDA vector type names (``vector_types.h``) :func:`vector_dtype` knows
VECTOR_TYPES = tuple(f"{base}{n}" for base in _VECTOR_BASES for n in range(1, 5)) + ("dim3",)


def vector_name(dtype: np.dtype | None) -> str | None:
    """The CUDA vector type of a :func:`vector_dtype` (``float3`` for {x, y, z: float32}); None for any other
    dtype. Of the names with one layout (``long2``/``longlong2``, ``half2``/``__half2``) the first is given."""
    if dtype is None or dtype.names is None or dtype.names != tuple("xyzw"[:len(dtype.names)]):
        return None
    base = {dtype.fields[f][0].str[1:] for f in dtype.names}
    if len(base) != 1:
        return None
    kind = base.pop()
    return next((f"{c}{len(dtype.names)}" for c, k in _VECTOR_BASES.items() if k == kind), None)


def dtype_of(ctype: str, is_pointer: bool, aliases: dict[str, list[str]] | None = None) -> np.dtype | None:
    """numpy dtype of a scalar C type (the pointee for pointers); ``aliases`` resolves the source's typedefs
    (only those defined once: a typedef chosen by #if/#else stays unknown)."""
    base = ctype
    if is_pointer:
        if ctype.count("*") > 1:
            return np.dtype("uint64")       # a pointer to pointers: its elements are 8-byte addresses
        base = base.split("*")[0]
    base = base.replace("&", " ")
    words = [w for w in base.split() if w not in _QUALIFIERS]
    key = " ".join(w.split("::")[-1] if w.startswith(("std::", "cuda::std::")) else w for w in words)
    for _ in range(8):
        if key in SCALAR_DTYPES or not aliases or len(aliases.get(key, ())) != 1:
            break
        target = aliases[key][0]
        if "*" in target:
            return None
        key = " ".join(w for w in target.split() if w not in _QUALIFIERS)
    name = SCALAR_DTYPES.get(key)
    return np.dtype(name) if name else vector_dtype(key)


def ptx_scalar_dtype(ptx_type: str | None) -> np.dtype | None:
    """The dtype of a by-value parameter that PTX declares as an integer scalar while the source names no number
    type: an enum (C++ [dcl.enum]: its underlying type is an integer type; NVRTC passes it as a ``.u32`` /
    ``.u64`` .param of that width), read as signed (the same bits for every enumerator up to 2^31 - 1); or a
    floating-point one, a type the source names through a template argument (miniFE's ``typename
    V::ScalarType alpha``: NVVM passes aggregates as byte arrays, so an ``.f32`` / ``.f64`` .param is a float or
    a double)."""
    if ptx_type in ("f32", "f64"):
        return np.dtype("float32" if ptx_type == "f32" else "float64")
    if ptx_type is None or ptx_type[0] not in "bus" or ptx_type in ("pred", "bf16"):
        return None             # not an integer (.bf16, .pred) or a byte array
    return np.dtype(f"int{8 * _PTX_SIZES[ptx_type]}")


def array_fits(param: np.dtype, array: np.dtype) -> bool:
    """Whether an array of ``array`` elements may stand for a pointer to ``param``: the same dtype, or the raw
    bits of a bfloat16 held as uint16."""
    return array == param or (param.name == "bfloat16" and array == np.uint16)


# ---- PTX ----------------------------------------------------------------------------------------------------------
_PTX_SIZES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
              "b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8, "pred": 1}
_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*\((.*?)\)", re.S)
_DECLARATION = re.compile(r"\s*;")     # after an entry's parameter list: a declaration (.extern .entry), no body
_PARAM = re.compile(r"\.param\s+(.*?)\s+([\w$]+)(?:\[(\d+)\])?\s*$")


def ptx_entries(ptx: str) -> dict[str, list[tuple[int, int, str | None]]]:
    """mangled entry name -> [(size, align, type)] per .param; the type (``u32``, ``f32``) of a scalar .param,
    None for a byte array (``.align 4 .b8 p[12]``: a struct or vector passed by value)."""
    entries = {}
    for m in _ENTRY.finditer(ptx):
        if _DECLARATION.match(ptx, m.end()):
            # ``.extern .entry k(...);``: a kernel this file launches (dynamic parallelism) but another file
            # defines
            continue
        params = []
        for decl in m.group(2).split(","):
            decl = decl.strip()
            pm = _PARAM.match(decl)
            if not pm:
                continue
            words = pm.group(1).split()
            kind = next((w[1:] for w in words if w[1:] in _PTX_SIZES), "b8")
            elem = _PTX_SIZES[kind]
            count = int(pm.group(3)) if pm.group(3) else 1
            align = elem
            if ".ptr" not in words and ".align" in words:
                align = int(words[words.index(".align") + 1])
            params.append((elem * count, align, kind if kind != "b8" and not pm.group(3) else None))
        entries[m.group(1)] = params
    return entries


def ptx_function_body(ptx: str, mangled: str) -> str:
    """The text of an entry's body (between its outer braces); "" for an entry the PTX only declares."""
    m = next((m for m in _ENTRY.finditer(ptx) if m.group(1) == mangled and not _DECLARATION.match(ptx, m.end())),
             None)
    if not m:
        return ""
    start = ptx.find("{", m.end())
    depth = 0
    for i in range(start, len(ptx)):
        if ptx[i] == "{":
            depth += 1
        elif ptx[i] == "}":
            depth -= 1
            if depth == 0:
                return ptx[start + 1:i]
    return ptx[start + 1:]


# ---- ptxas -v ---------------------------------------------------------------------------------------------------
def parse_ptxas_log(log: str) -> dict[str, dict[str, int]]:
    """Per entry function: registers, spill_stores, spill_loads, local_bytes, static_shared_bytes, barriers."""
    info: dict[str, dict[str, int]] = {}
    current = props = None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = m.group(1)
            info.setdefault(current, dict(registers=0, spill_stores=0, spill_loads=0, local_bytes=0,
                                          static_shared_bytes=0, barriers=0))
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            props = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and props in info:
            d = info[props]
            d["local_bytes"], d["spill_stores"], d["spill_loads"] = (int(x) for x in m.groups())
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and current in info:
            d = info[current]
            d["registers"] = int(m.group(1))
            b = re.search(r"used (\d+) barriers", line)
            d["barriers"] = int(b.group(1)) if b else 0
            s = re.search(r"(\d+) bytes smem", line)
            d["static_shared_bytes"] = int(s.group(1)) if s else 0
    return info
