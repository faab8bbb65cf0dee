"""A PTX function made executable: each basic block's instructions as closures, its terminator, and the static
per-block figures (instructions, flops by kind) that the executor multiplies by the lanes and warps that ran it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from perfmodel.errors import Location, SimulationError
from perfmodel.ptx.ir import CP_ASYNC_WAITS, Function, Module, Reg, Sym
from perfmodel.sim import alu, memops, warpops
from perfmodel.sim.contract import contractions
from perfmodel.sim.values import Operands

UNSUPPORTED_HINT = ("perfmodel executes the PTX instruction set listed in docs/semantics.md; cube-map, mipmapped "
                    "and gathered texture fetches, formatted surface accesses, warpgroup tensor-core wgmma, sparse, "
                    "fp8 and sub-byte mma / wmma forms (wmma, mma.sync, ldmatrix and stmatrix are executed) and bulk "
                    "tensor copies are not simulated")

NOOPS = {"membar", "fence", "prefetch", "prefetchu", "nanosleep", "pmevent", "discard", "applypriority",
         "createpolicy", "griddepcontrol", "setmaxnreg", "elect"}
MEMORY = {"ld", "st", "ldu", "atom", "red"}


def _builder(ins):
    opcode = ins.opcode
    if opcode == "cp" and ins.mods[:1] == ("async",) and ins.mods[1:2] and ins.mods[1] in CP_ASYNC_WAITS:
        return memops.b_cp_async_group
    if opcode == "mbarrier" or opcode == "cp" and ins.mods[:2] in (("async", "mbarrier"), ("async", "bulk")):
        from perfmodel.sim import mbarrier

        if opcode == "mbarrier":
            return mbarrier.b_mbarrier
        return mbarrier.b_cp_async_arrive if ins.mods[1] == "mbarrier" else mbarrier.b_bulk_copy
    if opcode in alu.BUILDERS:
        return alu.BUILDERS[opcode]
    if opcode in ("ld", "ldu"):
        return memops.b_ld
    if opcode == "st":
        return memops.b_st
    if opcode in ("atom", "red"):
        return memops.b_atom
    if opcode in ("bar", "barrier"):
        return warpops.b_bar
    if opcode == "shfl":
        return warpops.b_shfl
    if opcode == "vote":
        return warpops.b_vote
    if opcode == "activemask":
        return warpops.b_activemask
    if opcode == "match":
        return warpops.b_match
    if opcode == "redux":
        return warpops.b_redux
    if opcode == "wmma":
        from perfmodel.sim import tensor

        return tensor.b_wmma
    if opcode in ("mma", "ldmatrix", "stmatrix"):
        from perfmodel.sim import mma_sync

        return {"mma": mma_sync.b_mma, "ldmatrix": mma_sync.b_ldmatrix, "stmatrix": mma_sync.b_stmatrix}[opcode]
    if opcode in ("tex", "suld", "sust"):
        from perfmodel.sim import texture

        return {"tex": texture.b_tex, "suld": texture.b_suld, "sust": texture.b_sust}[opcode]
    if opcode in NOOPS:
        return lambda ins, ops: (lambda st, fr: None)
    return None


@dataclass
class CBlock:
    body: list                  # closures
    term: str                   # "fall", "bra", "cbra", "ret", "exit", "trap"
    target: int = -1            # taken target block (bra / cbra)
    fall: int = -1              # fall-through block
    guard_slot: int = -1
    guard_neg: bool = False
    ipdom: int = -1
    n_instr: int = 0
    flops: dict = field(default_factory=dict)    # kind -> per-thread count (unguarded instructions)
    flop_total: int = 0
    fp64: int = 0
    fp64_flops: int = 0
    int_ops: int = 0
    works: bool = False         # has a flop or a memory access, or integer work in a loop (the idle-thread report)
    first: int = 0              # global id of the first instruction
    last_gid: int = 0
    gids: list = field(default_factory=list)     # global id of the instruction behind each closure of body


@dataclass
class CFunc:
    func: Function
    blocks: list[CBlock]
    nregs: int
    param_names: list[str]
    ret_names: list[str]
    gid0: int
    slots: dict = field(default_factory=dict)    # register name -> frame slot


class UnplacedSymbol(alu.Unsupported):
    """An instruction takes the address of a name that is no variable (a kernel or a device function): raised
    while its closure is built, so the error names the instruction's line."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _source_name(mangled: str) -> str:
    """``child`` for ``_Z5childPfi`` (the first name of an Itanium-mangled symbol); the name itself otherwise."""
    m = re.match(r"_Z(?:N\d*)?(\d+)", mangled)
    if not m:
        return mangled
    n, start = int(m.group(1)), m.end()
    return mangled[start:start + n] or mangled


# Device functions' addresses (what a function pointer, a vtable's entry holds): one per function from here, where
# no memory is (the heap is at space.GLOBAL_BASE, texture handles at texture.HANDLE_BASE)
FUNCTION_BASE = 0x7E00_0000_0000


def function_addresses(module: Module) -> dict[str, int]:
    """Device function (not kernel) name -> its address, 16 bytes apart in name order."""
    names = sorted(n for n, f in module.functions.items() if not f.is_entry)
    return {n: FUNCTION_BASE + 16 * i for i, n in enumerate(names)}


class Symbols:
    """Variable name -> (space, address in that space); device functions' addresses too (space "func")."""

    def __init__(self):
        self.table: dict[str, tuple[str, int]] = {}

    def add(self, name: str, space: str, address: int) -> None:
        self.table[name] = (space, address)

    def address(self, name: str) -> int:
        if name not in self.table:
            raise UnplacedSymbol(name)
        return self.table[name][1]

    def space(self, name: str) -> str | None:
        e = self.table.get(name)
        return e[0] if e else None


def _toolkit_header(path: str) -> bool:
    """A header of NVIDIA's wheels or toolkit (``.../nvidia/<pkg>/include/...``, ``.../cuda/include/...``)."""
    p = path.replace("\\", "/")
    return "/include/" in p and ("/nvidia/" in p or "/cuda" in p)


def _flop_kind(ins) -> tuple[str | None, bool]:
    kind = alu.FP_KIND.get(ins.opcode)
    t = ins.type
    if kind is None or t not in ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2"):
        return None, False
    return kind, t == "f64"


_INT_OPS = {"add", "sub", "mul", "mad", "div", "rem", "min", "max", "abs", "neg", "and", "or", "xor", "not", "shl",
            "shr", "popc", "clz", "bfe", "bfi", "brev", "prmt", "shf", "sad", "mul24", "mad24", "bfind", "cnot",
            "vadd", "vsub", "vabsdiff", "vmin", "vmax", "vshl", "vshr"}


class ProgramBuilder:
    """Compiles the functions of one module on demand; instruction ids are unique across the module."""

    def __init__(self, module: Module, symbols: Symbols, source_file: str):
        self.module = module
        self.symbols = symbols
        self.source_file = source_file
        self.funcs: dict[str, CFunc] = {}
        self.instrs: list = []          # global id -> Instr
        self.func_of: list = []         # global id -> function name
        self._definitions: dict = {}    # function name -> its registers' writers (address_params, for messages)
        # calls of the CUDA device runtime (dynamic parallelism): an error where a thread reaches one, a note where
        # none did - gid -> (what the call is, for the message; what `kernels inspect` lists)
        self.device_runtime: dict[int, tuple[str, str]] = {}

    def get(self, name: str) -> CFunc:
        cf = self.funcs.get(name)
        if cf is None:
            if name not in self.module.functions:
                raise SimulationError(f"call to '{name}', whose body is not in the compiled PTX (an external "
                                      "function); " + UNSUPPORTED_HINT)
            n = len(self.instrs)
            try:
                cf = self.funcs[name] = self._build(self.module.functions[name])
            except BaseException:
                del self.instrs[n:], self.func_of[n:]     # as before the attempt (a builder is reused)
                raise
        return cf

    def address_params(self, gid: int) -> set[tuple[str, int]]:
        """PTX .param (or .global variable) names, with the byte offset loaded, that the address of memory
        instruction ``gid`` is computed from (:func:`perfmodel.ptx.dataflow.address_params`), for messages."""
        from perfmodel.ptx.dataflow import address_params, definitions

        f = self.module.functions[self.func_of[gid]]
        if f.name not in self._definitions:
            self._definitions[f.name] = definitions(f)
        return address_params(f, self.instrs[gid], self._definitions[f.name])

    def _location(self, ins) -> Location:
        path = self.module.files.get(ins.file, self.source_file)
        if "__nv_nvrtc_builtin" in path:
            # code inlined from NVRTC's built-in header (tex2D, cudaStreamCreateWithFlags, ...): report the user's
            # line that called it - the call site of its .loc's inlined_at chain where that is the user's file,
            # else the nearest earlier instruction of the same function located in a real file
            if ins.outer is not None and ins.outer[1]:
                outer_path = self.module.files.get(ins.outer[0], "")
                if outer_path and "__nv_nvrtc_builtin" not in outer_path and not _toolkit_header(outer_path):
                    return Location(outer_path, ins.outer[1], ins.outer[2] or None)
            for prev in reversed(self._instrs_before(ins)):
                p = self.module.files.get(prev.file, "")
                if prev.line and p and "__nv_nvrtc_builtin" not in p:
                    return Location(p, prev.line, prev.col or None)
            return Location(self.source_file)
        if ins.outer is not None and _toolkit_header(path):
            # code inlined from NVIDIA's headers (libcu++, CUB, cuda_fp16, mma.h): the user's line that called it,
            # the outermost call site of its .loc's inlined_at chain, when that is not a header too
            outer_path = self.module.files.get(ins.outer[0], "")
            if outer_path and not _toolkit_header(outer_path) and ins.outer[1]:
                return Location(outer_path, ins.outer[1], ins.outer[2] or None)
        return Location(path, ins.line or None, ins.col or None)

    def _instrs_before(self, ins) -> list:
        for f in self.module.functions.values():
            for k, other in enumerate(f.instrs):
                if other is ins:
                    return f.instrs[:k]
        return []

    def _build(self, f: Function) -> CFunc:
        gid0 = len(self.instrs)
        for ins in f.instrs:
            ins.index = len(self.instrs)
            self.instrs.append(ins)
            self.func_of.append(f.name)
        ops = Operands(f, self.symbols)
        fused = contractions(f)
        blocks = []
        for b, blk in enumerate(f.blocks):
            cb = CBlock([], "fall", ipdom=blk.ipdom, first=f.instrs[blk.start].index if blk.end > blk.start else 0)
            cb.n_instr = blk.end - blk.start
            cb.fall = b + 1 if b + 1 < len(f.blocks) else -1
            for k in range(blk.start, blk.end):
                ins = f.instrs[k]
                is_last = k == blk.end - 1
                if is_last and ins.opcode == "bra":
                    tgt = ins.operands[0]
                    if not isinstance(tgt, Sym) or tgt.name not in f.labels:
                        raise self._unsupported(ins, "an indirect branch")
                    ti = f.labels[tgt.name]
                    cb.target = f.block_of[ti] if ti < len(f.instrs) else -1
                    if ins.guard is not None:
                        cb.term = "cbra"
                        cb.guard_slot = ops.slot(ins.guard)
                        cb.guard_neg = ins.guard_neg
                    else:
                        cb.term = "bra"
                    continue
                if ins.opcode in ("ret", "exit"):
                    if ins.guard is not None:
                        raise self._unsupported(ins, "a predicated return")
                    cb.term = "ret"
                    continue
                if ins.opcode == "trap":
                    cb.body.append(self._trap(ins))
                    cb.gids.append(ins.index)
                    continue
                if ins.opcode == "call":
                    fn = self._call(ins, ops)
                else:
                    # a half mul + add ptxas fuses runs as the fused multiply-add it becomes (sim/contract.py)
                    fn = self._instr(fused.get(k, ins), ops)
                kind, is64 = _flop_kind(ins)
                if kind is not None:
                    cb.works = True
                    if ins.guard is None:
                        n = 2 if kind == "fma" else 1
                        x2 = 2 if ins.type in ("f16x2", "bf16x2") else 1
                        cb.flops[kind] = cb.flops.get(kind, 0) + x2
                        if x2 == 2:
                            cb.flops["packed"] = cb.flops.get("packed", 0) + 1
                        cb.flop_total += n * x2
                        cb.fp64 += x2 if is64 else 0
                        cb.fp64_flops += n * x2 if is64 else 0
                elif ins.opcode in _INT_OPS and ins.guard is None:
                    cb.int_ops += 1
                if ins.opcode in MEMORY and "param" not in ins.mods or ins.opcode in ("wmma", "mma", "ldmatrix",
                                                                                       "stmatrix"):
                    cb.works = True
                if ins.guard is not None:
                    fn = self._guarded(ins, ops, fn, kind)
                cb.body.append(fn)
                cb.gids.append(ins.index)
            blocks.append(cb)
        # integer work inside a loop is work too (a hash or a search that only its finder stores: md5hash's threads
        # each hash ten keys): a thread that only computes its index and fails a bounds check runs no loop
        for j, cb in enumerate(blocks):
            if cb.term in ("bra", "cbra") and 0 <= cb.target <= j:
                for k in range(cb.target, j + 1):
                    if blocks[k].int_ops:
                        blocks[k].works = True
        return CFunc(f, blocks, ops.nregs, [p.name for p in f.params], [p.name for p in f.rets], gid0,
                     dict(ops.slots))

    def _unsupported(self, ins, what: str | None = None, hint: bool = True, short: str | None = None) \
            -> SimulationError:
        """``hint``: add the list of what the executor does not simulate (for an instruction, not for a call);
        ``short``: what `kernels inspect` lists (default: the instruction's opcode with its modifiers)."""
        loc = self._location(ins)
        desc = what or f"the PTX instruction '{ins.opcode}{''.join('.' + m for m in ins.mods)}'"
        err = SimulationError(f"{loc}: {desc} is not supported ({ins.text.strip()})"
                              + (f"; {UNSUPPORTED_HINT}" if hint else ""), location=loc)
        err.short = short or ins.text.strip().split()[0]
        return err

    def _instr(self, ins, ops):
        b = _builder(ins)
        if b is None:
            raise self._unsupported(ins)
        try:
            return b(ins, ops)
        except UnplacedSymbol as exc:
            f = self.module.functions.get(exc.name)
            if f is not None and f.is_entry and ins.opcode == "mov" and len(ins.operands) == 2:
                # a kernel's address, for a launch from device code: a stand-in value; the launch itself (the
                # device runtime's call) is an error where a thread reaches it, and a kernel whose threads never do
                # runs (a recursion at depth 0, a quicksort whose partition is small)
                write = ops.writer(ins.operands[0])
                zero = np.zeros((1, 1), np.uint64)
                return lambda st, fr: write(st, fr, zero)
            short = "device-side launch" if f is not None and f.is_entry else "function pointer"
            raise self._unsupported(ins, self._unplaced(exc.name), hint=False, short=short) from None
        except alu.Unsupported as exc:
            raise self._unsupported(ins, f"the PTX instruction '{ins.opcode}' with {exc}") from None
        except (TypeError, KeyError, IndexError, ValueError, StopIteration) as exc:
            raise self._unsupported(ins, f"the PTX instruction '{ins.text.strip()}' ({type(exc).__name__}: "
                                    f"{exc})") from None

    def _unplaced(self, name: str) -> str:
        """What an instruction that takes ``name``'s address does, for the error: a kernel's address is a launch
        from device code (dynamic parallelism), a device function's a function pointer."""
        f = self.module.functions.get(name)
        if f is not None and f.is_entry:
            short = _source_name(name)
            return (f"a launch of the kernel {short} from device code (dynamic parallelism; analyse {short} on its "
                    "own, with the launch the parent gives it)")
        if f is not None:
            return f"taking the address of the device function {_source_name(name)} (a function pointer)"
        return f"a reference to '{name}', which is not a variable perfmodel can place"

    def _device_runtime_call(self, ins, what: str):
        """A call of the CUDA device runtime (``what``: cudaGetParameterBufferV2 and cudaLaunchDeviceV2 for a
        ``<<<...>>>`` in device code, cudaMalloc, ...): dynamic parallelism, which perfmodel does not simulate. An
        error naming the thread that reaches it; recorded for the note of a run in which none did."""
        fname = self.func_of[ins.index]
        launched = sorted({op.name for other in self.module.functions[fname].instrs if other.opcode == "mov"
                           for op in other.operands[1:] if isinstance(op, Sym)
                           and getattr(self.module.functions.get(op.name), "is_entry", False)})
        launch = what.startswith(("cudaGetParameterBuffer", "cudaLaunchDevice"))
        if launch and launched:
            names = ", ".join(_source_name(n) for n in launched)
            if fname in launched:
                desc = (f"the kernel {_source_name(fname)} launches itself from device code (recursive dynamic "
                        "parallelism), which perfmodel does not simulate: it runs one launch; arguments that end the "
                        "recursion before this launch (a depth of 0, a size below the cutoff) analyse one level")
            else:
                desc = (f"a launch of the kernel {names} from device code (dynamic parallelism), which perfmodel does "
                        f"not simulate: analyse {names} on its own, with the launch the parent gives it")
        else:
            desc = f"a call to the CUDA device runtime ({what}: dynamic parallelism, which perfmodel does not simulate)"
        self.device_runtime[ins.index] = (desc, "device-side launch" if launch else f"call {what}")

        def device_runtime(st, fr):
            st.fault_where(st.mask_full(), desc, gid=ins.index)
        return device_runtime

    def _indirect_call(self, ins, ops, target: str, arg_names, ret_names):
        """A call through a register (a virtual function, a function pointer): each distinct address the active
        threads hold runs its function for those threads, one function after another, as the GPU serialises a
        divergent indirect branch; an address that is no device function's is a fault naming the thread."""
        if any(a is None for a in arg_names + ret_names):
            raise self._unsupported(ins, "a call with register arguments")
        read = ops.reader(Reg(target), "u64")
        names = {address: name for name, address in function_addresses(self.module).items()}
        loc = self._location(ins)
        builder = self

        def indirect_call(st, fr):
            shape = (st.nB, st.Tp)
            active = np.broadcast_to(st.mask_full(), shape)
            values = np.broadcast_to(read(st, fr), shape)
            saved = st.mask
            try:
                for value in np.unique(values[active]):
                    lanes = active & (values == value)
                    name = names.get(int(value))
                    if name is None:
                        st.fault_where(lanes, f"an indirect call (a virtual function, a function pointer) through "
                                       f"{int(value):#x}, which is no device function's address: a null or "
                                       "uninitialised pointer, or an object's vtable pointer not set", gid=ins.index,
                                       loc=loc)
                    st.mask = lanes
                    st.call(builder.get(name), fr, arg_names, ret_names)
            finally:
                st.mask = saved
        return indirect_call

    def _assert_fail(self, ins, arg_names):
        """``assert(cond)`` calls ``__assertfail(message, file, line, function, size)`` when cond is false: an error
        at the assert's line naming the failed condition (read from the module's string constant) and the thread."""
        loc = self._location(ins)

        def text(st, fr, name):
            """The NUL-terminated global string a pointer parameter points to ('' if it cannot be read)."""
            from perfmodel.sim.space import GLOBAL_BASE

            try:
                ptr = st.param_read(fr, name, 0, np.dtype(np.uint64))
                ptr = int(np.broadcast_to(ptr, st.mask_full().shape)[st.mask_full()][0]) - GLOBAL_BASE
                raw = st.heap.bytes[ptr:ptr + 512].tobytes()
                return raw.split(b"\0", 1)[0].decode("utf-8", "replace")
            except Exception:    # noqa: BLE001 - the message is a courtesy; the assertion failed either way
                return ""

        def assert_fail(st, fr):
            cond = text(st, fr, arg_names[0]) if arg_names and arg_names[0] else ""
            st.fault_where(st.mask_full(), f"assertion failed{': ' + cond if cond else ''}", gid=ins.index, loc=loc)
        return assert_fail

    def _trap(self, ins):
        loc = self._location(ins)

        def trap(st, fr):
            st.fault_where(st.mask_full(), "the kernel executed a trap (assert or __trap)", gid=ins.index, loc=loc)
        return trap

    def _guarded(self, ins, ops, fn, flop_kind):
        s = ops.slot(ins.guard)
        neg = ins.guard_neg
        n = 2 if flop_kind == "fma" else 1
        x2 = 2 if ins.type in ("f16x2", "bf16x2") else 1
        is64 = ins.type == "f64"

        def guarded(st, fr):
            p = fr.r[s]
            if p is None:
                p = np.zeros((1, 1), bool)
            if neg:
                p = ~p
            saved = st.mask
            m = p if saved is None else (saved & p)
            if not m.any():
                return
            st.mask = m
            try:
                if flop_kind is not None:
                    st.count_guarded_flops(m, flop_kind, n * x2, x2, is64)
                fn(st, fr)
            finally:
                st.mask = saved
        return guarded

    def _call(self, ins, ops):
        rets, func, args = ins.operands
        name = func.name
        if name == "vprintf":
            # printf is not executed (its output would be one line per thread); it returns 0 through its .param
            rets_named = [r.name for r in rets.items if isinstance(r, Sym)]

            def printf(st, fr):
                st.mark_worked()            # a thread that prints did something, even if not run here
                for r in rets_named:
                    st.param_write(fr, r, 0, np.zeros((1, 1), np.int32))
            return printf
        arg_names = [a.name if isinstance(a, Sym) else None for a in args.items]
        if name == "__assertfail":
            return self._assert_fail(ins, arg_names)
        if name.startswith("%"):
            return self._indirect_call(ins, ops, name, arg_names, [r.name if isinstance(r, Sym) else None
                                                                   for r in rets.items])
        if name not in self.module.functions:
            if name.startswith("__cudaCDP"):    # the device runtime: cudaMalloc, cudaStreamCreate... in a kernel
                return self._device_runtime_call(ins, "cuda" + name[len("__cudaCDP"):].lstrip("0123456789"))
            what = {"malloc": "device-side memory allocation (new, or malloc, in a kernel: the external function "
                              "'malloc')",
                    "free": "device-side memory release (delete, or free, in a kernel: the external function "
                            "'free')"}.get(name, f"a call to the external function '{name}'")
            raise self._unsupported(ins, what, hint=False, short=f"call {name}")
        ret_names = [r.name if isinstance(r, Sym) else None for r in rets.items]
        if any(a is None for a in arg_names + ret_names):
            # arguments passed in registers (call f, (%r1)) rather than .param variables
            raise self._unsupported(ins, "a call with register arguments")
        builder = self

        def call(st, fr):
            callee = builder.get(name)
            st.call(callee, fr, arg_names, ret_names)
        return call


def param_layout(params) -> tuple[dict, int]:
    """Kernel .param offsets as the driver packs them (each aligned to its own alignment)."""
    off = 0
    out = {}
    for p in params:
        off = (off + p.align - 1) // p.align * p.align
        out[p.name] = off
        off += p.nbytes
    return out, off


def first_unsupported(module: Module, entry: str, source_file: str) -> SimulationError | None:
    """The error the executor gives for the first instruction of ``entry`` (and the functions it calls) it cannot
    run, building them as a launch would but with every variable placed at 0 (what an instruction resolves at build
    time does not depend on where): None when it can run them all. `kernels inspect` lists what this finds beyond
    the opcodes (an fp8 conversion, a cube-map fetch, a device-side launch, a call through a pointer)."""
    symbols = Symbols()
    for v in module.variables:
        symbols.add(v.name, v.space, 0)
    for name, address in function_addresses(module).items():
        symbols.add(name, "func", address)
    for f in module.functions.values():
        for v in f.variables:
            symbols.add(v.name, v.space, 0)
        for p in f.params:
            symbols.add(p.name, "param", 0)
    builder = ProgramBuilder(module, symbols, source_file)
    try:
        for name in [entry, *module.callees(entry)]:
            if name in module.functions:
                builder.get(name)
    except SimulationError as err:
        return err
    if builder.device_runtime:        # run only where a thread reaches it, refused then
        gid = min(builder.device_runtime)
        desc, short = builder.device_runtime[gid]
        err = SimulationError(f"{builder._location(builder.instrs[gid])}: {desc}")
        err.short = short
        return err
    return None
