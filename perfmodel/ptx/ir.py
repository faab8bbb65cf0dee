"""The PTX instruction table: what the parser produces and the executor runs.

A :class:`Module` holds the module-level variables (global, constant, shared) and the functions (``.entry``
kernels and ``.func`` device functions). Each :class:`Function` is a list of :class:`Instr` split into basic
blocks, with the immediate post-dominator of every block (where divergent lanes reconverge) and the ``.loc``
source position of every instruction.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# ---- operands -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reg:
    name: str            # "%r12", "%p1", "%SP"


@dataclass(frozen=True)
class Special:
    name: str            # "%tid.x", "%laneid", "%clock64", ...


@dataclass(frozen=True)
class Imm:
    value: int | float
    is_float: bool = False
    bits: int | None = None   # 0fXXXXXXXX / 0dXXXXXXXXXXXXXXXX literals keep their exact bit pattern
    width: int = 0            # 32 or 64 for such literals


@dataclass(frozen=True)
class Sym:
    name: str            # a variable's address (mov %r, smem) or a label / function name


@dataclass(frozen=True)
class Addr:
    base: Reg | Sym | Imm
    offset: int = 0


@dataclass(frozen=True)
class Vec:
    items: tuple          # of Reg / Imm / Sink


@dataclass(frozen=True)
class Sink:
    """The ``_`` operand (result discarded)."""


@dataclass(frozen=True)
class PredPair:
    """``%p|%q``: setp's two predicate results."""
    first: Reg
    second: Reg


Operand = Reg | Special | Imm | Sym | Addr | Vec | Sink | PredPair


# ---- instructions ---------------------------------------------------------------------------------------------


@dataclass
class Instr:
    opcode: str                    # base opcode, e.g. "ld", "fma", "bra"
    mods: tuple[str, ...]          # the dotted modifiers in order, e.g. ("global", "nc", "v4", "f32")
    operands: tuple                # destination(s) first, as written
    guard: Reg | None = None       # @%p / @!%p
    guard_neg: bool = False
    file: int = 0                  # .loc file index (0: none)
    line: int = 0                  # .loc line (0: compiler-generated)
    col: int = 0
    text: str = ""                 # the instruction as written, for messages
    index: int = -1                # position in its function
    outer: tuple | None = None     # (file, line, col) of the outermost call site when inlined (.loc inlined_at)

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(m for m in self.mods if m in TYPES)

    @property
    def type(self) -> str | None:
        t = self.types
        return t[-1] if t else None

    def has(self, *mods: str) -> bool:
        return any(m in self.mods for m in mods)


# cp.async's group instructions (the copies themselves are lowered to a load and a store: perfmodel.ptx.parse)
CP_ASYNC_WAITS = ("commit_group", "wait_group", "wait_all")

# PTX fundamental types and their (numpy dtype name, bytes)
TYPES = {
    "pred": ("bool", 1),
    "b8": ("uint8", 1), "u8": ("uint8", 1), "s8": ("int8", 1),
    "b16": ("uint16", 2), "u16": ("uint16", 2), "s16": ("int16", 2), "f16": ("float16", 2), "bf16": ("uint16", 2),
    "b32": ("uint32", 4), "u32": ("uint32", 4), "s32": ("int32", 4), "f32": ("float32", 4),
    "f16x2": ("uint32", 4), "bf16x2": ("uint32", 4), "tf32": ("uint32", 4),
    "s16x2": ("uint32", 4), "u16x2": ("uint32", 4),     # two 16-bit integers in a .b32 (add, min, max)
    "b64": ("uint64", 8), "u64": ("uint64", 8), "s64": ("int64", 8), "f64": ("float64", 8),
    "b128": ("uint64", 16),
}


@dataclass
class Variable:
    """A module- or function-level variable: .global, .const, .shared, .local (or a .param of a call)."""
    name: str
    space: str                     # "global", "const", "shared", "local", "param"
    type: str                      # element type, e.g. "b8", "f32"
    align: int
    count: int | None              # elements; None for `extern .shared x[]` (dynamic shared memory)
    init: bytes | None = None      # initial bytes (.global / .const with an initialiser)
    extern: bool = False
    # initialiser words that hold an address, written when the variables are placed (sim/launch.py): (byte offset,
    # size, symbol, addend, generic, mask) - ``generic(table)+8``, a function's name (a function-pointer table);
    # symbol None where the word's expression could not be read (its text in the addend's place)
    relocs: tuple = ()

    @property
    def nbytes(self) -> int:
        return (self.count or 0) * TYPES[self.type][1]


@dataclass
class Param:
    name: str
    type: str                      # "u64", "b8" (byte arrays for structs), ...
    align: int
    count: int                     # 1, or the byte count of an array param
    ptr_space: str | None = None   # `.param .u64 .ptr .global .align 4 p` (rare)

    @property
    def nbytes(self) -> int:
        return self.count * TYPES[self.type][1]


@dataclass
class Block:
    start: int                     # first instruction index
    end: int                       # one past the last
    succ: tuple[int, ...] = ()     # successor block ids (taken target first for a conditional branch)
    ipdom: int = -1                # immediate post-dominator block id (-1: the function's exit)


@dataclass
class Function:
    name: str
    is_entry: bool
    params: list[Param]
    rets: list[Param]
    instrs: list[Instr]
    labels: dict[str, int]         # label -> instruction index
    variables: list[Variable]      # function-level .local / .shared (demoted) variables
    regs: dict[str, str]           # register name -> declared type
    blocks: list[Block] = field(default_factory=list)
    block_of: list[int] = field(default_factory=list)   # instruction index -> block id
    directives: dict = field(default_factory=dict)      # .maxntid, .reqntid, ...
    line: int = 0                  # source line of the function (first .loc)


@dataclass
class Module:
    version: str
    target: str
    address_size: int
    files: dict[int, str]          # .file index -> path
    variables: list[Variable]
    functions: dict[str, Function]
    extern_funcs: set[str] = field(default_factory=set)

    def entry(self, name: str) -> Function:
        f = self.functions.get(name)
        if f is None or not f.is_entry:
            raise KeyError(name)
        return f

    @property
    def entries(self) -> list[str]:
        return [n for n, f in self.functions.items() if f.is_entry]

    def primary_file(self, entry: str) -> int | None:
        """The .file index of the kernel's own source: its first instruction tied to a line."""
        return next((ins.file for ins in self.functions[entry].instrs if ins.line), None)

    def line_key(self, ins: Instr, primary_file: int | None) -> int | str | None:
        """The key of an instruction's source line in the per-line figures: the line number in the kernel's own
        file (0: code of that file tied to no line), ``"path:line"`` in another (a header it includes); None for
        code tied to no file."""
        if primary_file is None or ins.file == primary_file:
            return ins.line
        if not ins.line:
            return None
        return f"{self.files.get(ins.file, ins.file)}:{ins.line}"

    @staticmethod
    def split_line_key(key) -> tuple[str | None, int]:
        """(path, line) of a line key: (None, n) for the kernel's own file's line n, (path, n) for ``"path:n"``;
        (str(key), 0) for anything else."""
        if isinstance(key, int):
            return None, key
        path, _, line = str(key).rpartition(":")
        return (path, int(line)) if path and line.isdigit() else (str(key), 0)

    def model_line_key(self, ins: Instr, primary_file: int | None) -> int | str | None:
        """:meth:`line_key` for the model's per-line inputs (loads in flight, ILP, load rounds, L1 reuse): None for
        the code of NVIDIA's headers (cuda_fp16.hpp's __hfma2, cuda::memcpy_async's lowered copies), which they
        leave out - counting the SGEMM tutorial's lowered cp.async copies as loads in flight made its
        double-buffering kernel 32-38% too fast (docs/model.md 2.8)."""
        key = self.line_key(ins, primary_file)
        if isinstance(key, str) and self._library_file(ins.file):
            return None
        return key

    def _library_file(self, file_index: int) -> bool:
        cache = self.__dict__.setdefault("_library_files", {})
        if file_index not in cache:
            from perfmodel.compile.nvrtc import sdk_include_dirs

            path = str(self.files.get(file_index, ""))
            cache[file_index] = any(path.startswith(d.rstrip("/") + "/") for d in sdk_include_dirs())
        return cache[file_index]

    def callees(self, entry: str) -> list[str]:
        """Functions reachable from the entry, in the order found: through calls, and through addresses - a device
        function whose address a reachable function takes (``mov.u64 %rd, f``) or a variable it names holds in its
        initialiser (a function-pointer table, a vtable), which an indirect call can reach (computed once per
        entry)."""
        cache = self.__dict__.setdefault("_callees_of", {})
        if entry not in cache:
            cache[entry] = self._callees(entry)
        return list(cache[entry])

    def _callees(self, entry: str) -> list[str]:
        variables = {v.name: v for v in self.variables}
        seen, todo = [], [entry]
        seen_vars: set[str] = set()

        def reach(name: str) -> None:
            if name in self.functions and name not in seen and name != entry and \
                    not self.functions[name].is_entry:
                seen.append(name)
                todo.append(name)
            elif name in variables and name not in seen_vars:
                seen_vars.add(name)
                for reloc in variables[name].relocs:
                    if reloc[2] is not None:
                        reach(reloc[2])
        while todo:
            f = self.functions.get(todo.pop())
            if f is None:
                continue
            for ins in f.instrs:
                if ins.opcode == "call":
                    name = ins.operands[1].name
                    if name in self.functions and name not in seen and name != entry:
                        seen.append(name)
                        todo.append(name)
                    continue
                for o in ins.operands:
                    o = o.base if isinstance(o, Addr) else o
                    if isinstance(o, Sym):
                        reach(o.name)
        return seen

    def named_symbols(self, entry: str) -> frozenset[str]:
        """The module-level symbols that ``entry`` or its callees name in an operand (computed once per entry)."""
        cache = self.__dict__.setdefault("_named_symbols", {})
        if entry in cache:
            return cache[entry]
        named: set[str] = set()
        for n in [entry] + self.callees(entry):
            for ins in self.functions[n].instrs:
                for o in ins.operands:
                    o = o.base if isinstance(o, Addr) else o
                    if isinstance(o, Sym):
                        named.add(o.name)
        cache[entry] = frozenset(named)
        return cache[entry]

    def shared_variables(self, entry: str) -> list[Variable]:
        """The ``.shared`` variables a block of ``entry`` holds, in declaration order (the order of their offsets):
        the module-level ones that the entry or its callees name, then the function-level (demoted ``__shared__``)
        ones of the entry and its callees. A file's other kernels' arrays are not the entry's: ptxas allocates
        each kernel only its own (cuda-samples' matrixMul compiles MatrixMulCUDA<16> and <32>; <32> has 8,192
        bytes, not 10,240)."""
        mine = [entry] + self.callees(entry)
        named = self.named_symbols(entry)
        out = [v for v in self.variables if v.space == "shared" and v.name in named]
        for n, f in self.functions.items():
            if n in mine:
                out += [v for v in f.variables if v.space == "shared"]
        return out

    def __getstate__(self) -> dict:
        # the simulator's compiled functions (perfmodel.sim.launch keeps them here, as closures) stay behind
        return {k: v for k, v in self.__dict__.items() if k != "_builders"}
