"""CUDA C frontend: a light pre-pass, pycparser, and lowering of the kernel into the simulator's closures.

``compile_kernel(path, entry=None, defines=None, source=None) -> KernelProgram`` (cached on path, mtime, entry and
defines). Unsupported constructs raise ``FrontendError`` naming the construct and file:line:col.
"""
from __future__ import annotations

import os
from functools import lru_cache

from pycparser import c_ast, c_parser
from pycparser.c_parser import ParseError

from perfmodel.errors import FrontendError, Location
from perfmodel.frontend import ctypes as T
from perfmodel.frontend.prepass import map_col, prepass
from perfmodel.frontend.program import ConstDecl, KernelProgram, Param, SharedDecl

__all__ = ["compile_kernel", "KernelProgram", "Param", "SharedDecl", "ConstDecl", "FrontendError"]


def compile_kernel(path=None, entry: str | None = None, defines: dict | None = None,
                   source: str | None = None) -> KernelProgram:
    """Parse and lower one kernel. ``defines`` override the source's #defines of the same name."""
    if path is None and source is None:
        raise FrontendError("compile_kernel needs a path or a source text")
    path_s = str(path) if path is not None else "<source>"
    key_defines = tuple(sorted((str(k), str(v)) for k, v in (defines or {}).items()))
    if source is None:
        try:
            mtime = os.stat(path_s).st_mtime_ns
        except OSError as exc:
            raise FrontendError(f"cannot read kernel source {path_s}: {exc.strerror}") from None
        return _compile_file(path_s, mtime, entry, key_defines)
    return _compile_source(source, path_s, entry, key_defines)


@lru_cache(maxsize=128)
def _compile_file(path: str, mtime: int, entry, key_defines):
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    return _compile(source, path, entry, dict(key_defines))


@lru_cache(maxsize=128)
def _compile_source(source: str, path: str, entry, key_defines):
    return _compile(source, path, entry, dict(key_defines))


def _compile(source: str, filename: str, entry, overrides: dict) -> KernelProgram:
    from perfmodel.sim.lower import Lowerer

    pre = prepass(source, filename, overrides)
    parser = c_parser.CParser()
    try:
        ast = parser.parse(pre.text, filename)
    except ParseError as exc:
        raise _parse_error(exc, filename, pre, parser) from None
    funcs, globals_, kernels, file_consts = {}, {}, [], {}
    for ext in ast.ext:
        if isinstance(ext, c_ast.FuncDef):
            funcs[ext.decl.name] = ext
            if ext.decl.name in pre.kernel_names:
                kernels.append(ext.decl.name)
        elif isinstance(ext, c_ast.Decl):
            if isinstance(ext.type, c_ast.FuncDecl):
                continue                       # prototype
            if "extern" in (ext.storage or []):     # __constant__ (the pre-pass spells it extern)
                globals_[ext.name] = ext
            elif ext.name in ("bool", "uint", "size_t"):
                continue
            elif "const" in (ext.quals or []) and ext.init is not None:
                file_consts[ext.name] = ext         # `const int N = 64;`: a compile-time constant
            else:
                c = ext.coord
                loc = Location(filename, c.line, map_col(pre, c.line, c.column))
                raise FrontendError(f"{loc}: file-scope variable '{ext.name}' is not supported (only __constant__ "
                                    "arrays and scalars)", location=loc)
        elif isinstance(ext, c_ast.Typedef):
            continue
    if not kernels:
        raise FrontendError(f"{filename}: no __global__ kernel found", location=Location(filename))
    if entry is None:
        if len(kernels) > 1:
            raise FrontendError(f"{filename}: several kernels ({', '.join(kernels)}); name the entry",
                                location=Location(filename))
        entry = kernels[0]
    if entry not in kernels:
        raise FrontendError(f"{filename}: no __global__ kernel named '{entry}' (kernels: {', '.join(kernels)})",
                            location=Location(filename))
    device_funcs = {n: f for n, f in funcs.items() if n not in kernels}
    low = Lowerer(filename, lambda line, col: map_col(pre, line, col), device_funcs, globals_, pre.dynamic_shared,
                  file_consts)
    body = low.kernel(funcs[entry])

    params = []
    for name, t, _slot in low.params:
        if isinstance(t, T.ArrayType):
            params.append(Param(name, f"{t.elem.name}*", t.elem.dtype, True, 8))
        else:
            params.append(Param(name, t.name, t.dtype, False, t.itemsize))
    shared = []
    for name, t, dynamic in low.shared:
        if dynamic:
            shared.append(SharedDecl(name, t.elem.dtype, (None,), 0))
        else:
            n = t.elem.itemsize * t.elems
            shape = () if name in low.shared_scalars else t.shape
            shared.append(SharedDecl(name, t.elem.dtype, shape, n))
    constants = [ConstDecl(name, t.elem.dtype, t.shape) for name, t in low.constants]
    return KernelProgram(
        name=entry, path=filename, source_lines=source.split("\n"), params=params, shared=shared,
        constants=constants, defines=dict(pre.defines), sites=low.sites, n_slots=low.n_slots, body=body,
        param_slots=[slot for _n, _t, slot in low.params], shared_types=[t for _n, t, _d in low.shared],
        const_types=[t for _n, t in low.constants], local_bytes=low.local_bytes)


def _parse_error(exc: ParseError, filename: str, pre, parser) -> FrontendError:
    text = str(exc)
    # pycparser: "file:line:col: before: tok", or "file: message" with the offending token still unconsumed
    parts = text.split(":", 3)
    try:
        line, col = int(parts[1]), int(parts[2])
        loc = Location(filename, line, map_col(pre, line, col))
        rest = parts[3].strip()
    except (ValueError, IndexError):
        rest = text.split(":", 1)[-1].strip()
        tok = None
        try:
            tok = parser._peek()          # pycparser 3 keeps its token stream; best effort
        except Exception:  # noqa: BLE001
            pass
        if tok is not None and getattr(tok, "lineno", None):
            loc = Location(filename, tok.lineno, map_col(pre, tok.lineno, tok.column))
            rest = f"{rest} at {tok.value!r}"
        else:
            loc = Location(filename)
    return FrontendError(f"{loc}: cannot parse this CUDA C ({rest}); the supported subset is described in "
                         "docs/semantics.md", location=loc)
