"""A kernel ready to execute: compiled with NVRTC (:mod:`perfmodel.compile`), its PTX parsed
(:mod:`perfmodel.ptx`), and what the executor and the analyzer need to know about it."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perfmodel.errors import SimulationError


@dataclass
class KernelProgram:
    name: str                     # the kernel's name expression (e.g. "MatrixMulCUDA<32>" or "vectorAdd")
    path: str                     # the user's file
    source_lines: list
    params: list                  # perfmodel.compile.ParamInfo (name, ctype, is_pointer, dtype, size, align)
    module: object                # perfmodel.ptx.Module
    entry: str                    # the PTX .entry (mangled) name
    arch: str = "sm_90"
    arch_note: str = ""
    registers: int | None = None
    spill_stores: int = 0
    spill_loads: int = 0
    local_bytes: int = 0
    ptxas_shared_bytes: int | None = None
    sass_weights: dict | None = field(default=None, repr=False)
    primary_file: int | None = None
    defines: dict = field(default_factory=dict)

    @property
    def param_bytes(self) -> int:
        from perfmodel.sim.program import param_layout
        return param_layout(self.module.functions[self.entry].params)[1]

    @property
    def static_shared_bytes(self) -> int:
        """Static shared memory as the PTX declares it (module-level and demoted function-level variables)."""
        total = 0
        variables = [v for v in self.module.variables if v.space == "shared"]
        for f in self.module.functions.values():
            variables += [v for v in f.variables if v.space == "shared"]
        for v in variables:
            if v.count is None:
                continue
            total = (total + v.align - 1) // v.align * v.align + v.nbytes
        return total


_PTX_CACHE: dict = {}


def _parsed(compiled):
    from perfmodel.ptx import parse_ptx

    key = id(compiled)
    hit = _PTX_CACHE.get(key)
    if hit is not None and hit[0] is compiled:
        return hit[1]
    module = parse_ptx(compiled.ptx, f"{compiled.source_path or '<source>'} (PTX)")
    if len(_PTX_CACHE) > 64:
        _PTX_CACHE.pop(next(iter(_PTX_CACHE)))
    _PTX_CACHE[key] = (compiled, module)
    return module


def _sass_weights(compiled, info, module, entry) -> dict | None:
    """SASS instructions per PTX instruction, per (PTX file index, source line), from the compiled cubin.

    Executed PTX warp instructions on a line times this ratio estimate the SASS warp instructions the hardware
    issues for that line (ptxas expands some PTX - 64-bit address arithmetic, integer division - and fuses
    other instructions); lines with no SASS count 0, PTX lines absent from the SASS line table keep 1."""
    try:
        sass = compiled.sass_line_counts(info)
    except Exception:   # noqa: BLE001 - nvdisasm missing or failing: fall back to PTX counts
        return None
    if not sass:
        return None
    by_path = {}
    for (path, line), n in sass.items():
        by_path[(str(path), line)] = n
        by_path[(str(path).rsplit("/", 1)[-1], line)] = n
    ptx_counts: dict = {}
    funcs = [module.functions[entry]]
    for f in funcs:
        for ins in f.instrs:
            ptx_counts[(ins.file, ins.line)] = ptx_counts.get((ins.file, ins.line), 0) + 1
    weights = {}
    for (fidx, line), n_ptx in ptx_counts.items():
        path = module.files.get(fidx, "")
        n_sass = by_path.get((path, line), by_path.get((path.rsplit("/", 1)[-1], line)))
        if n_sass is None:
            weights[(fidx, line)] = 0.0 if line else 1.0
        else:
            weights[(fidx, line)] = n_sass / n_ptx
    # SASS on lines with no PTX at all (the prologue at line 0 has PTX; others are rare): attach to line 0
    return weights


def load_kernel(path=None, source: str | None = None, entry: str | None = None, defines: dict | None = None,
                arch: str = "sm_90", include_dirs=(), cache: bool = True) -> KernelProgram:
    """Compile ``entry`` (a kernel name or a template name expression) from a CUDA file or source text and
    parse its PTX. With no entry, the file's only non-template kernel."""
    from perfmodel.compile import CompileError, compile_cuda

    exprs = [entry] if entry else []
    compiled = compile_cuda(path=None if path is None else str(path), source=source, arch=arch,
                            name_expressions=exprs, defines=dict(defines or {}), include_dirs=tuple(include_dirs),
                            cache=cache)
    if entry is None:
        if len(compiled.kernels) != 1:
            names = ", ".join(k.expression for k in compiled.kernels) or "none"
            raise CompileError(f"{path or 'the source'}: {len(compiled.kernels)} kernels ({names}); name the "
                               "entry kernel")
        info = compiled.kernels[0]
    else:
        info = compiled.kernel(entry)
    module = _parsed(compiled)
    if info.mangled not in module.functions:
        raise SimulationError(f"{info.expression}: the PTX has no entry {info.mangled}")
    f = module.functions[info.mangled]
    primary = next((ins.file for ins in f.instrs if ins.line), None)
    return KernelProgram(
        name=info.expression, path=str(compiled.source_path or path or "<source>"),
        source_lines=list(compiled.source_lines), params=list(info.params), module=module, entry=info.mangled,
        arch=compiled.arch, arch_note=compiled.arch_note, registers=info.registers,
        spill_stores=info.spill_stores, spill_loads=info.spill_loads, local_bytes=info.local_bytes,
        ptxas_shared_bytes=info.static_shared_bytes, sass_weights=_sass_weights(compiled, info, module, info.mangled),
        primary_file=primary, defines=dict(defines or {}))
