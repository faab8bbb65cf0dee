"""A kernel ready to execute: compiled with NVRTC (:mod:`perfmodel.compile`), its PTX parsed
(:mod:`perfmodel.ptx`), and what the executor and the analyzer need to know about it."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from perfmodel.errors import SimulationError


@dataclass(frozen=True)
class SassFacts:
    """What the compiled cubin's SASS adds to the PTX (all empty without nvdisasm)."""
    weights: list | None = None     # SASS instructions per PTX instruction of the entry function (_sass_weights)
    loops: dict = field(default_factory=dict)   # PTX block -> UnrolledLoop (entry function)
    notes: list = field(default_factory=list)   # what the loop matching recognised or refused
    spin: dict = field(default_factory=dict)    # PTX atom index -> SASS CAS-loop round size
    # PTX shared load index -> ((SASS width in bytes, share of the line's loaded bytes), ...) where ptxas merged
    # the line's loads into wider LDS.64 / LDS.128 (_shared_load_widths)
    shared_widths: dict = field(default_factory=dict)
    # PTX index of a double division, reciprocal or square root -> the FP64-pipe SASS instructions (DFMA, DADD,
    # DMUL) one execution issues: its Newton steps (_fp64_expansion)
    fp64_expansion: dict = field(default_factory=dict)


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
    primary_file: int | None = None
    defines: dict = field(default_factory=dict)
    # what the compiled SASS says (:class:`SassFacts`): given, or computed on first use from ``sass_source``
    # (compiled module, kernel info), so that a program used only for its registers or PTX runs no nvdisasm
    sass: SassFacts | None = field(default=None, repr=False, compare=False)
    sass_source: tuple | None = field(default=None, repr=False, compare=False)
    # struct-typed __constant__ / __device__ variables: name -> StructLayout (perfmodel/compile/variables.py)
    variable_layouts: dict = field(default_factory=dict, repr=False, compare=False)
    # pointer-typed __constant__ / __device__ variables: name -> pointed-to C type
    pointer_variables: dict = field(default_factory=dict, repr=False, compare=False)

    def sass_facts(self) -> SassFacts:
        if self.sass is None:
            self.sass = _sass_facts(*self.sass_source, self.module, self.entry) if self.sass_source else SassFacts()
        return self.sass

    @property
    def source_files(self) -> dict:
        """Path -> original text of every file the compile read of the project's (the kernel's file and its own
        headers); empty for a program built without a compile."""
        compiled = (self.sass_source or (None,))[0]
        return dict(getattr(compiled, "files", None) or {})

    @property
    def sass_weights(self) -> list | None:
        return self.sass_facts().weights

    @property
    def sass_loops(self) -> dict:
        return self.sass_facts().loops

    @property
    def sass_loop_notes(self) -> list:
        return self.sass_facts().notes

    @property
    def sass_spin(self) -> dict:
        return self.sass_facts().spin

    @property
    def param_bytes(self) -> int:
        from perfmodel.sim.program import param_layout
        return param_layout(self.module.functions[self.entry].params)[1]

    @property
    def static_shared_bytes(self) -> int:
        """Static shared memory as the PTX declares it (module-level and demoted function-level variables)."""
        total = 0
        for v in self.module.shared_variables(self.entry):
            if v.count is None:
                continue
            total = (total + v.align - 1) // v.align * v.align + v.nbytes
        return total


_PTX_CACHE: dict = {}


def _parsed(compiled):
    """The parsed PTX module, cached in the process by the PTX text and the name its errors give: a compile-cache
    hit is a new object each time, with the same text (the module is not changed after parsing; what is computed
    from it later, like ``_combined_atomics``, is a function of its text)."""
    from perfmodel.ptx import parse_ptx

    label = f"{compiled.source_path or '<source>'} (PTX)"
    key = (compiled.ptx, label)
    module = _PTX_CACHE.get(key)
    if module is not None:
        return module
    module = parse_ptx(compiled.ptx, label)
    if len(_PTX_CACHE) > 64:
        _PTX_CACHE.pop(next(iter(_PTX_CACHE)))
    _PTX_CACHE[key] = module
    return module


_SASS_GLOBAL = ("LDG", "STG", "ATOMG", "RED", "ATOM", "LDGSTS")   # LDGSTS: cp.async (a global load)
_SASS_SHARED = ("LDS", "STS", "ATOMS")
_SASS_LOCAL = ("LDL", "STL")


def _line_key(path, line) -> tuple:
    """A source line as the PTX ``.loc`` and the cubin's line table both name it: (file name, line)."""
    return (str(path).rsplit("/", 1)[-1], line)


def _sass_opcode(instr: str) -> str:
    """A SASS instruction's opcode with its modifiers (``LDS.U.128``), past a predicate guard."""
    words = instr.split()
    return words[1] if words and words[0].startswith("@") and len(words) > 1 else (words[0] if words else "")


def _sass_op(instr: str) -> str:
    return _sass_opcode(instr).split(".")[0]


def _is_global_ptx(ins) -> bool:
    return ins.opcode in ("ld", "ldu", "st", "atom", "red") and not any(
        m in ins.mods for m in ("param", "const", "shared", "local"))


def _is_shared_ptx(ins) -> bool:
    return ins.opcode in ("ld", "st", "atom", "red") and "shared" in ins.mods


def _is_local_ptx(ins) -> bool:
    return ins.opcode in ("ld", "st") and "local" in ins.mods


def _ptx_bytes(ins) -> int:
    """Bytes per lane of a PTX memory instruction (element size x vector length)."""
    from perfmodel.ptx.ir import TYPES

    vec = next((int(m[1:]) for m in ins.mods if m in ("v2", "v4", "v8")), 1)
    return TYPES[ins.type][1] * vec if ins.type in TYPES else 4


def _sass_bytes(instr: str) -> int:
    """Bytes per lane of a SASS shared-memory instruction, from its width modifier (LDS.U.128, STS.64, LDS.U8)."""
    mods = _sass_opcode(instr).split(".")[1:]
    for m, n in (("128", 16), ("64", 8), ("U16", 2), ("S16", 2), ("U8", 1), ("S8", 1)):
        if m in mods:
            return n
    return 4


# double-precision arithmetic: ptxas turns each PTX add/mul/fma.f64 into one DADD/DMUL/DFMA and does not contract
# them (the PTX fma already is one), so their SASS over PTX count shows a loop's further unrolling where the loop
# holds no memory instruction
_SASS_FP64 = ("DFMA", "DADD", "DMUL")


def _is_fp64_ptx(ins) -> bool:
    return ins.opcode in ("add", "sub", "mul", "fma", "mad") and ins.type == "f64"


def _is_fp64_expanded(ins) -> bool:
    """A double division, reciprocal or square root: Newton steps of DFMA / DMUL in SASS, not one instruction."""
    return ins.opcode in ("div", "rcp", "sqrt", "rsqrt") and ins.type == "f64"


# kernel-parameter and __constant__ arrays read by index: ptxas turns each PTX ld.param / ld.const into constant-bank
# loads (LDC, ULDC), whose bytes show a loop's further unrolling where the loop reads neither global nor shared
# memory (a loop over a __grid_constant__ struct's array that ptxas unrolls completely)
_SASS_CONST = ("LDC", "ULDC")


def _is_const_ptx(ins) -> bool:
    """A parameter or constant load at a register address: an array read by index, which ptxas neither hoists out
    of the loop nor merges with another (a load of a named parameter or constant, ``[k_param_4]``, it may)."""
    from perfmodel.ptx.ir import Addr, Reg

    if ins.opcode not in ("ld", "ldu") or not any(m in ins.mods for m in ("param", "const")):
        return False
    return any(isinstance(o, Addr) and isinstance(o.base, Reg) for o in ins.operands[1:])


def _loop_blocks(f) -> set:
    """Blocks inside a PTX loop: those laid out between a back edge's target and its source."""
    out = set()
    for b, blk in enumerate(f.blocks):
        for s in blk.succ:
            if s <= b:
                out |= set(range(s, b + 1))
    return out


_PTX_REFUSE = {"atom", "red", "bar", "barrier", "shfl", "vote", "match", "redux", "activemask", "call", "ret",
               "exit", "membar", "fence", "tex", "suld", "sust", "cp"}


def _ptx_memory_key(ins) -> tuple | None:
    """(space, "ld"/"st", bytes) of a global or shared load or store, as :func:`perfmodel.compile.sass.memory_key`
    gives it for SASS; "other" for any other memory access (param excepted), None for no memory access."""
    from perfmodel.sim.memops import access_parts
    from perfmodel.sim.values import DT

    if ins.opcode not in ("ld", "ldu", "st"):
        return None
    space, vec, t = access_parts(ins)
    if space == "param":
        return None
    if space not in ("global", "shared"):
        return ("other",)
    try:
        size = DT[t].itemsize if t in DT else int("".join(ch for ch in t if ch.isdigit())) // 8
    except (KeyError, ValueError, TypeError):
        return ("other",)
    return (space, "st" if ins.opcode == "st" else "ld", size * vec)


@dataclass(frozen=True)
class UnrolledLoop:
    """A PTX self-loop block that ptxas unrolled ``factor`` times more: its SASS loop holds ``factor`` copies of
    the block and runs while at least ``factor`` PTX iterations remain; what remains then runs as straight-line
    chunks of ``factor / 2``, ``factor / 4``, ..., 1 copies, each if its bit of the remainder is set
    (docs/semantics.md, "SASS loop regrouping")."""
    block: int                       # PTX block index in the entry function
    factor: int                      # R
    sass_main: int                   # SASS instructions of the loop body (R copies, with the loop's overhead)
    sass_start: int                  # index of its first SASS instruction
    line: int                        # a source line of the loop (for messages)

    @property
    def chunks(self) -> tuple[int, ...]:
        out, c = [], self.factor // 2
        while c >= 1:
            out.append(c)
            c //= 2
        return tuple(out)


def _unrolled_loops(sass_flow, module, entry) -> tuple[dict, list, set]:
    """Match the SASS loops that hold several copies of a PTX self-loop block (see :class:`UnrolledLoop`).

    Returns ({PTX block: UnrolledLoop}, notes saying what was recognised or refused and why, the SASS instruction
    indices the recognised loops and their chunks cover). A loop is recognised only when the SASS body's global and
    shared loads and stores are exactly R copies of the PTX block's (same source lines, directions and widths), R a
    power of two >= 2, and the straight-line runs after it that hold such accesses are, in order, exactly R/2, R/4,
    ..., 1 copies. Anything else keeps the PTX grouping (today's behaviour) and is noted."""
    from collections import Counter

    from perfmodel.compile.sass import backward_loops, memory_key

    if not sass_flow:
        return {}, [], set()
    f = module.functions[entry]

    key = _line_key

    ptx_loops = {}
    for b, blk in enumerate(f.blocks):
        last = f.instrs[blk.end - 1]
        if not (blk.succ and blk.succ[0] == b and last.opcode == "bra" and last.guard is not None):
            continue
        ins_keys = [(ins, _ptx_memory_key(ins)) for ins in f.instrs[blk.start:blk.end]]
        mem = Counter((key(module.files.get(ins.file, ""), ins.line),) + k for ins, k in ins_keys if k)
        ptx_loops[b] = (mem, any(k == ("other",) or (k and ins.guard is not None) for ins, k in ins_keys) or
                        any(ins.opcode in _PTX_REFUSE for ins, _ in ins_keys), last.line)
    notes, found, covered, covered_by, twice = [], {}, set(), {}, set()

    def sass_mem(indices):
        out = Counter()
        for i in indices:
            k = memory_key(sass_flow[i])
            if k is not None:
                out[(key(*sass_flow[i].inner),) + k] += 1
        return out

    all_loops = backward_loops(sass_flow)
    for loop in all_loops:
        main = sass_mem(range(loop.start, loop.end + 1))
        if not main:
            continue
        matches = []
        for b, (mem, refuse, line) in ptx_loops.items():
            if not mem or sum(main.values()) % sum(mem.values()):
                continue
            r = sum(main.values()) // sum(mem.values())
            if r >= 2 and all(main[k] == r * n for k, n in mem.items()) and set(main) == set(mem):
                matches.append((b, r, refuse, line))
        if not matches:
            continue
        passing, refusals = [], []
        for b, r, refuse, line in matches:
            why = _chunk_check(loop, ptx_loops[b][0], r, refuse, sass_mem)
            (refusals if why else passing).append((b, r, line, why))
        if len(passing) != 1:
            b, r, line, why = (passing or refusals)[0]
            why = why if not passing else (f"the SASS loop at instruction {loop.start} matches {len(passing)} PTX "
                                          "loops")
            notes.append(f"line {line} (PTX block {b}): unrolled {r}x by ptxas, but {why}; refused (PTX grouping "
                         "kept)")
            continue
        b, r, line, _ = passing[0]
        if b in found or b in twice:
            notes.append(f"line {line} (PTX block {b}): two SASS loops match it; refused (PTX grouping kept)")
            found.pop(b, None)
            covered -= covered_by.pop(b, set())
            twice.add(b)
            continue
        found[b] = UnrolledLoop(b, r, loop.end - loop.start + 1, loop.start, line)
        groups = [g for g in loop.groups if sass_mem(g)]
        n_chunks = len(found[b].chunks)
        last = groups[n_chunks - 1][-1] if n_chunks else loop.end
        if _tail_used(loop, groups, n_chunks):
            last += 1           # the 1-copy loop's backward branch
        covered_by[b] = set(range(loop.start, last + 1))
        covered |= covered_by[b]
        notes.append(f"line {line} (PTX block {b}): recognised: ptxas unrolled it {r}x, remainder chunks "
                     f"{list(found[b].chunks)}")
    # loops ptxas kept as they are (R = 1): exactly the block's accesses, one SASS loop for one PTX block. Nothing
    # to regroup; their SASS body is what one iteration issues (the warp-instruction weights)
    bodies = {loop.start: sass_mem(range(loop.start, loop.end + 1)) for loop in all_loops}
    for loop in all_loops:
        if loop.start in covered:
            continue
        main = bodies[loop.start]
        same = [b for b, (mem, _refuse, _line) in ptx_loops.items() if mem and mem == main]
        if len(same) == 1 and same[0] not in found and same[0] not in twice and sum(
                1 for other in all_loops if other.start not in covered and bodies[other.start] == main) == 1:
            b = same[0]
            found[b] = UnrolledLoop(b, 1, loop.end - loop.start + 1, loop.start, ptx_loops[b][2])
            covered |= set(range(loop.start, loop.end + 1))
    # a refusal for a block that another SASS loop matched (a remainder loop tried against the main loop) is noise
    notes = [n for n in notes if "refused" not in n or not any(f"(PTX block {b})" in n for b in found)]
    return found, notes, covered


def _tail_used(loop, groups, n_chunks) -> bool | None:
    """Whether the loop that follows the SASS loop (``tail_loop``) is its last (1-copy) chunk: True; False when it
    is not among the chunks; None when it would be a chunk other than the last."""
    if not (loop.tail_loop and groups and groups[-1] is loop.groups[-1]):
        return False
    at = len(groups) - 1
    if at >= n_chunks:
        return False
    return True if at == n_chunks - 1 else None


def _chunk_check(loop, mem, r, refuse, sass_mem) -> str:
    """Why the SASS loop is not R copies of the PTX block followed by chunks of R/2, ..., 1 copies ('' if it is)."""
    from collections import Counter

    if refuse:
        return "the block has accesses or warp-level instructions the regrouping does not handle"
    if r & (r - 1):
        return "R is not a power of two"
    groups = [g for g in loop.groups if sass_mem(g)]
    n_want = max(r.bit_length() - 1, 0)
    if _tail_used(loop, groups, n_want) is None:
        # ptxas's other form: the last chunk is a loop of one copy that runs while PTX iterations remain, which
        # after the main loop (< R remain) and the chunks of R/2 .. 2 copies is at most once: a 1-copy chunk.
        # A loop anywhere else among the chunks is refused.
        return "the chunks after the loop include another loop"
    want, c = [], r // 2
    while c >= 1:
        want.append(c)
        c //= 2
    per_copy = sum(mem.values())
    if len(groups) < len(want) or any(sass_mem(g) != Counter({k: c * n for k, n in mem.items()})
                                      for g, c in zip(groups, want)):
        seen = [round(sum(sass_mem(g).values()) / per_copy, 2) for g in groups[:len(want)]]
        return f"the straight-line code after the loop holds {seen} copies where {want} were expected"
    return ""


def _sass_loops(compiled, info, module, entry):
    """({PTX block: UnrolledLoop}, notes, covered SASS indices, {PTX instruction: SASS spin-loop size})."""
    from perfmodel.compile.sass import kernel_flow

    try:
        flow = kernel_flow(compiled, info)
    except Exception:   # noqa: BLE001 - nvdisasm missing or failing: PTX grouping
        flow = None
    loops, notes, covered = _unrolled_loops(flow, module, entry)
    spins = _spin_loops(flow, module, entry, covered, notes)
    return loops, notes, covered, spins


def _spin_loops(flow, module, entry, covered: set, notes: list) -> dict:
    """Atomics that ptxas turns into a compare-and-swap loop (sm_90's shared-memory float add: ``LDS; FADD;
    ATOMS.CAST.SPIN; ISETP; @!P BRA``): a straight-line SASS loop around a CAS, on the line of exactly one PTX
    ``atom`` that is not itself in a PTX loop. A warp repeats it until every lane's CAS succeeded: at least as many
    times as its largest number of active lanes on one address (``atomic_same_address``). Returns {PTX instruction
    index: SASS instructions of one round}, adds the loop to ``covered``."""
    from perfmodel.compile.sass import backward_loops

    if not flow:
        return {}
    f = module.functions[entry]

    key = _line_key

    in_loop = set()
    for b, blk in enumerate(f.blocks):
        if blk.succ and b in blk.succ:
            in_loop |= set(range(blk.start, blk.end))
    atoms: dict = {}
    for i, ins in enumerate(f.instrs):
        if ins.opcode in ("atom", "red"):
            atoms.setdefault(key(module.files.get(ins.file, ""), ins.line), []).append(i)
    out = {}
    for loop in backward_loops(flow):
        body = range(loop.start, loop.end + 1)
        if loop.start in covered or not any(".CAS" in flow[j].op for j in body):
            continue
        lines = {key(*flow[j].inner) for j in body if ".CAS" in flow[j].op}
        cands = [i for k in lines for i in atoms.get(k, [])]
        if len(lines) != 1 or len(cands) != 1 or cands[0] in in_loop or cands[0] in out:
            notes.append(f"SASS compare-and-swap loop at instruction {loop.start}: not one PTX atomic outside a "
                         "loop on its line; weighted as one instruction")
            continue
        out[cands[0]] = len(body)
        covered |= set(body)
        notes.append(f"line {f.instrs[cands[0]].line}: the atomic is a {len(body)}-instruction compare-and-swap "
                     "loop in SASS, repeated per warp as often as its most lanes on one address")
    return out


# ptxas's subroutines for 64-bit integer division and remainder: $__internal_0_$__cuda_sm20_div_u64, ..._rem_s64
_INT64_DIVISION = re.compile(r"__cuda_sm\d+_((?:div|rem)_[us]64)\b")


def _sass_weights(compiled, info, module, entry, loops: dict | None = None, covered: set | None = None) \
        -> list | None:
    """SASS instructions per PTX instruction of the entry function, from the compiled cubin's line table.

    Each PTX instruction gets its source line's static ratio (SASS / PTX instructions on that line), divided by
    how many times ptxas replicated the basic block it sits in: ptxas unrolls loops further than NVVM did, so a
    loop line's static SASS holds several copies that run fewer times each. The replication is read off the
    global memory instructions, which ptxas neither merges nor drops: SASS LDG/STG/ATOM on the block's lines over
    PTX global accesses there. Executed PTX warp instructions times these weights estimate the SASS warp
    instructions the hardware issues (``counts.warp_instructions``).

    ``loops`` (recognised further-unrolled loops, :func:`_unrolled_loops`) and ``covered`` (their SASS instructions):
    such a block's instructions weigh its SASS loop body's instructions over R, per source line, and neither the
    loop's SASS nor the block's PTX take part in the line ratios of the other blocks."""
    from collections import Counter

    from perfmodel.compile.sass import kernel_flow

    loops = loops or {}
    covered = covered or set()
    try:
        flow = kernel_flow(compiled, info)
    except Exception:   # noqa: BLE001 - nvdisasm missing or failing: fall back to PTX counts
        return None
    if not flow:
        return None
    sass = [(ins.inner, ins.outer, ins.text) for ins in flow]
    f = module.functions[entry]

    key = _line_key

    in_loop = set()
    for b in loops:
        in_loop |= set(range(f.blocks[b].start, f.blocks[b].end))
    # SASS subroutines are not what the entry's lines execute, though ptxas files most of them under the function's
    # last line (its closing brace weighed 130-173 instructions: darknet's upsample_kernel, 2.1x ncu's count; a
    # pow()): the math library's slow paths ($__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath, called only
    # for denormal, infinite or out-of-range operands); a PTX .func ptxas kept a subroutine (__internal_accurate_pow,
    # __noinline__ functions), whose own PTX the simulator executes and counts; and the 64-bit integer division
    # subroutines, which run once per executed PTX div/rem .u64/.s64 (added to those below; NVVM puts a div.u32
    # fast path before them where the operands fit in 32 bits)
    int64 = Counter(_INT64_DIVISION.search(ins.subroutine).group(1) for ins in flow
                    if ins.subroutine and _INT64_DIVISION.search(ins.subroutine))
    rest = [item for j, item in enumerate(sass) if j not in covered and not flow[j].subroutine]
    sass_n = Counter(key(*inner) for inner, _outer, _t in rest)
    sass_g = Counter(key(*inner) for inner, _outer, t in rest if _sass_op(t) in _SASS_GLOBAL)
    ptx_keys = [key(module.files.get(ins.file, ""), ins.line) for ins in f.instrs]
    ptx_n = Counter(k for i, k in enumerate(ptx_keys) if i not in in_loop)
    ptx_g = Counter(k for i, (k, ins) in enumerate(zip(ptx_keys, f.instrs)) if _is_global_ptx(ins) and i not in in_loop)
    def bytes_by_line(sass_ops, is_ptx):
        """(SASS bytes, PTX bytes) per source line of one kind of access: ptxas merges neighbouring shared
        accesses into LDS.64 / LDS.128 and parameter loads into LDC.64, which keeps the bytes, not the number."""
        sass_b, ptx_b = Counter(), Counter()
        for inner, _outer, t in rest:
            if _sass_op(t) in sass_ops:
                sass_b[key(*inner)] += _sass_bytes(t)
        for i, (k, ins) in enumerate(zip(ptx_keys, f.instrs)):
            if is_ptx(ins) and i not in in_loop:
                ptx_b[k] += _ptx_bytes(ins)
        return sass_b, ptx_b

    sass_s, ptx_s = bytes_by_line(_SASS_SHARED, _is_shared_ptx)
    sass_l, ptx_l = bytes_by_line(_SASS_LOCAL, _is_local_ptx)
    sass_c, ptx_c = bytes_by_line(_SASS_CONST, _is_const_ptx)
    looped = _loop_blocks(f)
    sass_d = Counter(key(*inner) for inner, _outer, t in rest if _sass_op(t) in _SASS_FP64)
    ptx_d = Counter(k for i, (k, ins) in enumerate(zip(ptx_keys, f.instrs)) if _is_fp64_ptx(ins) and i not in in_loop)
    # a double division, reciprocal or square root is a sequence of DFMAs in SASS (Newton steps): on its line the
    # DFMA count says nothing of unrolling (a loop of v / 1.037 + 1.0 read as unrolled 9 times, its instructions
    # a ninth of the SASS's)
    for k in {ptx_keys[i] for i, ins in enumerate(f.instrs) if _is_fp64_expanded(ins)}:
        ptx_d.pop(k, None)
    replication = []
    for b_index, blk in enumerate(f.blocks):
        rep = 1.0
        # global accesses first; shared ones (in bytes: ptxas merges them into 64/128-bit accesses) where the
        # block has no global access; then local ones (in bytes: a thread's run-time indexed array, LDL/STL); in a
        # loop, parameter and constant loads (in bytes: LDC.64 loads two words) where it has none of those;
        # double-precision arithmetic where it has no memory access at all
        kinds = [(_is_global_ptx, ptx_g, sass_g), (_is_shared_ptx, ptx_s, sass_s), (_is_local_ptx, ptx_l, sass_l)]
        if b_index in looped:
            kinds.append((_is_const_ptx, ptx_c, sass_c))
        for is_kind, n_ptx, n_sass in (*kinds, (_is_fp64_ptx, ptx_d, sass_d)):
            lines = {ptx_keys[i] for i in range(blk.start, blk.end) if is_kind(f.instrs[i])}
            a = sum(n_ptx[k] for k in lines)
            b = sum(n_sass[k] for k in lines)
            if a and is_kind is _is_const_ptx and b <= a:
                # ptxas files a uniform-datapath constant load (ULDC) under the line that uses the value, not the
                # line that loads it (gpumembench's int4 constant loop: the loads on the += line): the block's
                # other lines' bytes count, where they make a whole number of copies
                whole = sum(n_sass[k] for k in {ptx_keys[i] for i in range(blk.start, blk.end)})
                if whole >= 2 * a and abs(whole / a - round(whole / a)) < 0.05:
                    b = whole
            if a:
                rep = b / a if b > a else 1.0
                break
        replication.append(rep)
    weights = []
    for i, k in enumerate(ptx_keys):
        if i in in_loop:
            w = 0.0             # set by _loop_weights below
        elif k[1] == 0 or k not in sass_n:
            w = 1.0 if k[1] == 0 else 0.0
        else:
            w = sass_n[k] / ptx_n[k]
        weights.append(w / replication[f.block_of[i]])
    for b, loop in loops.items():
        _loop_weights(weights, f.blocks[b], ptx_keys, loop, sass, key)
    for i, ins in enumerate(f.instrs):
        sub = int64.get(f"{ins.opcode}_{ins.type}") if ins.opcode in ("div", "rem") else None
        if sub:
            weights[i] += sub        # the subroutine's instructions, each time the division runs
    return weights


def _loop_weights(weights, blk, ptx_keys, loop, sass, key):
    """A recognised loop block's weights: per source line, the SASS loop body's instructions on that line over R,
    shared among the block's PTX instructions on it; SASS on lines the block does not have, evenly."""
    from collections import Counter

    body = Counter(key(*inner) for inner, _o, _t in sass[loop.sass_start:loop.sass_start + loop.sass_main])
    idx = range(blk.start, blk.end)
    own = Counter(ptx_keys[i] for i in idx)
    spread = sum(n for k, n in body.items() if k not in own) / loop.factor / len(idx)
    for i in idx:
        k = ptx_keys[i]
        weights[i] = body.get(k, 0) / loop.factor / own[k] + spread


def _deduced_launches(compiled) -> str:
    """For the error of a file whose kernels are all templates: where its host code launches one with the
    template arguments deduced from the call (``launch_k<<<g, b>>>(f, n)``), which the scan cannot read."""
    found = []
    texts = dict(compiled.files) or {compiled.source_path or "<source>": "\n".join(compiled.source_lines)}
    for file, text in texts.items():
        for t in compiled.templates:
            for m in re.finditer(rf"\b{re.escape(t.split('::')[-1])}\s*<\s*<\s*<", text):
                found.append(f"{t} at {os.path.basename(file)}:{text.count(chr(10), 0, m.start()) + 1}")
    explicit = [x for t in compiled.templates for x in compiled.template_launches.get(t, [])]
    out = ""
    if explicit:
        # (launches whose arguments the file spells, but which can name what only the launching code knows:
        # moderngpu's `launch_box_cta_k<launch_box, func_t><<<...>>>` inside a host template over a lambda)
        out += (f"; the host code launches {', '.join(explicit[:3])}: --kernel takes such an expression where its "
                "arguments are types and numbers the file defines (a template parameter of the launching function "
                "stands for what its caller gives)")
    if found:
        out += (f"; the host code launches {', '.join(found[:3])} with its template arguments deduced from the "
                "call's arguments, which --kernel must spell out")
    if out:
        out += (" - a type only the host code can name (an extended __device__ lambda, a class local to a function)"
                " cannot be, and such an instantiation cannot be analysed alone")
    return out


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
        if not compiled.kernels and compiled.templates:
            raise CompileError(f"{path or 'the source'}: its kernels are templates ({', '.join(compiled.templates)}), "
                               "compiled once instantiated: name one with --kernel 'NAME<ARGS>'"
                               + _deduced_launches(compiled))
        if not compiled.kernels:
            raise CompileError(f"{path or 'the source'}: the file defines no __global__ function (a kernel), nor "
                               "do the headers it includes from its own folders; there is nothing to launch")
        if len(compiled.kernels) != 1:
            names = ", ".join(k.expression for k in compiled.kernels)
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
    # the per-line figures are the lines of the file the kernel is written in: a header the .cu file includes
    # has its own lines (the .cu file's text at those numbers is something else)
    lines = list(compiled.source_lines)
    primary_path = module.files.get(primary) if primary is not None else None
    if primary_path and compiled.source_file and primary_path != compiled.source_file and \
            primary_path in compiled.files:
        lines = compiled.files[primary_path].splitlines()
    return KernelProgram(
        name=info.expression, path=str(compiled.source_path or path or "<source>"),
        source_lines=lines, params=list(info.params), module=module, entry=info.mangled,
        arch=compiled.arch, arch_note=compiled.arch_note, registers=info.registers,
        spill_stores=info.spill_stores, spill_loads=info.spill_loads, local_bytes=info.local_bytes,
        ptxas_shared_bytes=info.static_shared_bytes, primary_file=primary, defines=dict(defines or {}),
        sass_source=(compiled, info), variable_layouts=dict(compiled.variable_layouts),
        pointer_variables=dict(compiled.pointer_variables))


def _shared_load_widths(compiled, info, module, entry) -> dict:
    """PTX shared loads that ptxas merged into wider ones: ``{PTX instruction index: ((width, share), ...)}``.

    ptxas joins shared loads of neighbouring words it can prove aligned into one LDS.64 or LDS.128 (matmul_tiled's
    ``Mds[ty][k]`` for four consecutive k), one instruction and one request where the PTX has four, with the
    wavefronts of the wide access. Per source line (the cubin's line table), the bytes its SASS loads at each width
    are shared out over the line's PTX loads, where those all have one width and SASS never loads narrower. A
    merged load's lanes read the words following the first PTX load's, so its wavefronts are that first load's
    address pattern read at the wider width (:func:`perfmodel.sim.warps.wide_load_wavefronts`)."""
    from collections import Counter, defaultdict

    from perfmodel.compile.sass import kernel_flow

    try:
        flow = kernel_flow(compiled, info)
    except Exception:   # noqa: BLE001 - nvdisasm missing or failing: PTX counts stand
        return {}
    f = module.functions[entry]

    key = _line_key

    sass_bytes: dict = defaultdict(Counter)
    for ins in flow or ():
        if _sass_op(ins.text) == "LDS":
            width = _sass_bytes(ins.text)
            sass_bytes[key(*ins.inner)][width] += width
    ptx_loads: dict = defaultdict(list)
    for i, ins in enumerate(f.instrs):
        if ins.opcode == "ld" and "shared" in ins.mods:
            ptx_loads[key(module.files.get(ins.file, ""), ins.line)].append(i)
    out = {}
    for k, idx in ptx_loads.items():
        widths = {_ptx_bytes(f.instrs[i]) for i in idx}
        got = sass_bytes.get(k)
        if len(widths) != 1 or not got:
            continue
        w = widths.pop()
        if min(got) < w or set(got) == {w}:
            continue
        wide = {width: n for width, n in got.items() if width > w}
        # the loads that can merge: a neighbour w bytes away off the same base register in the same block
        # (Mds[ty][k], not Nds[k][tx] on the same line); the rest keep their width
        at = {(f.block_of[i], _addr_base(f.instrs[i])): set() for i in idx}
        for i in idx:
            at[(f.block_of[i], _addr_base(f.instrs[i]))].add(_addr_offset(f.instrs[i]))
        mergeable = [i for i in idx if _addr_base(f.instrs[i]) is not None and
                     {_addr_offset(f.instrs[i]) - w, _addr_offset(f.instrs[i]) + w}
                     & at[(f.block_of[i], _addr_base(f.instrs[i]))]]
        rep = sum(got.values()) / (len(idx) * w)            # ptxas's further unrolling of the line's block
        capacity = len(mergeable) * w * rep
        if mergeable and sum(wide.values()) <= capacity:
            shares = {width: n / capacity for width, n in wide.items()}
            rest = 1.0 - sum(shares.values())
            mix = tuple(sorted(list(shares.items()) + ([(w, rest)] if rest > 1e-9 else [])))
            chosen = mergeable
        else:
            total = sum(got.values())
            mix = tuple(sorted((width, n / total) for width, n in got.items()))
            chosen = idx
        for i in chosen:
            out[f.instrs[i].index] = mix
    return out


def _addr_base(ins):
    """The register a load's address is based on (``[%r5+16]`` -> ``%r5``), or None."""
    from perfmodel.ptx.ir import Addr, Reg

    a = ins.operands[1] if len(ins.operands) > 1 else None
    return a.base.name if isinstance(a, Addr) and isinstance(a.base, Reg) else None


def _addr_offset(ins) -> int:
    return ins.operands[1].offset


def _sass_facts(compiled, info, module, entry) -> SassFacts:
    """Disassemble the kernel's cubin (nvdisasm) and match its SASS to the PTX: loop grouping, CAS loops, weights,
    merged shared loads."""
    loops, notes, covered, spins = _sass_loops(compiled, info, module, entry)
    weights = _sass_weights(compiled, info, module, entry, loops, covered)
    if weights is not None:
        for i in spins:
            weights[i] = 0.0            # counted per round instead (sass_spin)
    return SassFacts(weights=weights, loops=loops, notes=notes, spin=spins,
                     shared_widths=_shared_load_widths(compiled, info, module, entry),
                     fp64_expansion=_fp64_expansion(compiled, info, module, entry, covered))


def _fp64_expansion(compiled, info, module, entry, covered: set) -> dict:
    """PTX index -> FP64-pipe instructions per execution, for each double division, reciprocal or square root
    outside a recognised unrolled loop: ptxas writes one as a sequence of DFMA / DMUL (and DADD) Newton steps plus a
    slow path for rare operands (not counted), so its line's FP64 SASS instructions, less one for each plain
    add / sub / mul / fma.f64 on the line, shared among the line's expanded instructions (the loop of
    validation/microbench/fp64_div.cu: 8 a division, ncu's FP64 pipe count on an H200)."""
    from collections import Counter

    from perfmodel.compile.sass import kernel_flow

    f = module.functions[entry]
    expanded = [i for i, ins in enumerate(f.instrs) if _is_fp64_expanded(ins)]
    if not expanded:
        return {}               # (no disassembly for a kernel without them)
    try:
        flow = kernel_flow(compiled, info)
    except Exception:   # noqa: BLE001 - nvdisasm missing or failing: no expansion known
        return {}
    if not flow:
        return {}
    keys = [_line_key(module.files.get(ins.file, ""), ins.line) for ins in f.instrs]
    sass = Counter(_line_key(*ins.inner) for j, ins in enumerate(flow) if j not in covered
                   and not (ins.subroutine and "slowpath" in ins.subroutine) and _sass_op(ins.text) in _SASS_FP64)
    plain = Counter(keys[i] for i, ins in enumerate(f.instrs) if _is_fp64_ptx(ins))
    n_exp = Counter(keys[i] for i in expanded)
    out = {}
    for i in expanded:
        k = keys[i]
        per = (sass[k] - plain[k]) / n_exp[k]
        if per > 1:
            out[i] = per
    return out
