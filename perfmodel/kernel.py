"""A kernel ready to execute: compiled with NVRTC (:mod:`perfmodel.compile`), its PTX parsed
(:mod:`perfmodel.ptx`), and what the executor and the analyzer need to know about it."""
from __future__ import annotations

from dataclasses import dataclass, field

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


_SASS_GLOBAL = ("LDG", "STG", "ATOMG", "RED", "ATOM")
_SASS_SHARED = ("LDS", "STS", "ATOMS")


def _sass_op(instr: str) -> str:
    words = instr.split()
    op = words[1] if words and words[0].startswith("@") and len(words) > 1 else (words[0] if words else "")
    return op.split(".")[0]


def _is_global_ptx(ins) -> bool:
    return ins.opcode in ("ld", "ldu", "st", "atom", "red") and not any(
        m in ins.mods for m in ("param", "const", "shared", "local"))


def _is_shared_ptx(ins) -> bool:
    return ins.opcode in ("ld", "st", "atom", "red") and "shared" in ins.mods


def _sass_weights(compiled, info, module, entry) -> list | None:
    """SASS instructions per PTX instruction of the entry function, from the compiled cubin's line table.

    Each PTX instruction gets its source line's static ratio (SASS / PTX instructions on that line), divided by
    how many times ptxas replicated the basic block it sits in: ptxas unrolls loops further than NVVM did, so a
    loop line's static SASS holds several copies that run fewer times each. The replication is read off the
    global memory instructions, which ptxas neither merges nor drops: SASS LDG/STG/ATOM on the block's lines over
    PTX global accesses there. Executed PTX warp instructions times these weights estimate the SASS warp
    instructions the hardware issues (``counts.warp_instructions``)."""
    from collections import Counter

    from perfmodel.compile.sass import kernel_instructions

    try:
        sass = kernel_instructions(compiled, info)
    except Exception:   # noqa: BLE001 - nvdisasm missing or failing: fall back to PTX counts
        return None
    if not sass:
        return None
    f = module.functions[entry]

    def key(path, line):
        return (str(path).rsplit("/", 1)[-1], line)

    sass_n = Counter(key(*inner) for inner, _outer, _t in sass)
    sass_g = Counter(key(*inner) for inner, _outer, t in sass if _sass_op(t) in _SASS_GLOBAL)
    ptx_keys = [key(module.files.get(ins.file, ""), ins.line) for ins in f.instrs]
    ptx_n = Counter(ptx_keys)
    ptx_g = Counter(k for k, ins in zip(ptx_keys, f.instrs) if _is_global_ptx(ins))
    sass_s = Counter(key(*inner) for inner, _outer, t in sass if _sass_op(t) in _SASS_SHARED)
    ptx_s = Counter(k for k, ins in zip(ptx_keys, f.instrs) if _is_shared_ptx(ins))
    replication = []
    for blk in f.blocks:
        rep = 1.0
        # global accesses first; shared ones (which ptxas may also merge into 64/128-bit accesses, so they can
        # only show replication, never rule it out) where the block has no global access
        for is_kind, n_ptx, n_sass in ((_is_global_ptx, ptx_g, sass_g), (_is_shared_ptx, ptx_s, sass_s)):
            lines = {ptx_keys[i] for i in range(blk.start, blk.end) if is_kind(f.instrs[i])}
            a = sum(n_ptx[k] for k in lines)
            b = sum(n_sass[k] for k in lines)
            if a:
                rep = b / a if b > a else 1.0
                break
        replication.append(rep)
    weights = []
    for i, k in enumerate(ptx_keys):
        if k[1] == 0 or k not in sass_n:
            w = 1.0 if k[1] == 0 else 0.0
        else:
            w = sass_n[k] / ptx_n[k]
        weights.append(w / replication[f.block_of[i]])
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
