"""Static SASS instruction counts per source line, from the kernel's CUBIN disassembled by ``nvdisasm``.

``nvdisasm`` comes with the ``nvidia-cuda-nvdisasm`` wheel (``nvidia/cu13/bin/nvdisasm``; ``$PERFMODEL_NVDISASM``
overrides). It is run once per CUBIN with ``-gi -c`` (code sections, line info with the inlining chain); the
text is cached on disk next to the compile cache (``<cache>/sass/<sha256 of the cubin>.sass``) and in process.

Each instruction is attributed to a (file, line): the innermost location (what the PTX ``.loc`` names first, and
what ``nvdisasm -g`` prints) by default, or the outermost one (the line in the kernel that the inlined code was
called from) with ``inlined="outermost"``. Padding after the end of the function (``NOP`` and the final
self-branch ``BRA`` that ptxas appends) is not counted.

Every function returns None when nvdisasm is unavailable or fails, so callers can fall back to PTX counts.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_memory: dict[tuple, dict[str, list[tuple[tuple[str, int], tuple[str, int], str]]]] = {}
_memory_flow: dict[tuple, dict[str, list]] = {}
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_FUNC_HDR = re.compile(r"^//-+ \.text\.(\S+)\s+-+")
_LINEINFO = re.compile(r'//## File "([^"]*)", line (\d+)(?: inlined at "([^"]*)", line (\d+))?')
_INSTR = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_SUBROUTINE = re.compile(r"^(\$[\w$.]+):\s*$")   # a local subroutine of the function (e.g. a math slow path)
_TARGET = re.compile(r"`\((\.L_x_\d+)\)")


@functools.lru_cache(maxsize=1)
def find_nvdisasm() -> str | None:
    override = os.environ.get("PERFMODEL_NVDISASM")
    if override:
        return override if Path(override).is_file() else None
    from perfmodel.compile.nvrtc import nvidia_roots

    for root in nvidia_roots():
        cand = root / "bin" / "nvdisasm"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return None


def _disassemble(cubin: bytes) -> str | None:
    from perfmodel.compile.cache import cache_dir

    digest = hashlib.sha256(cubin).hexdigest()
    path = cache_dir() / "sass" / f"{digest}.sass"
    try:
        return path.read_text()
    except OSError:
        pass
    with _exclusive(path):
        # another process (a parallel sweep's worker, a test worker) may have disassembled it meanwhile
        try:
            return path.read_text()
        except OSError:
            return _run_nvdisasm(cubin, path)


@contextlib.contextmanager
def _exclusive(path: Path):
    """Hold an advisory lock for ``path`` (POSIX ``flock``) so that processes wanting the same listing run nvdisasm
    once; where locking is unavailable, nothing is held (each runs its own). The locks are 16 files by the first hex
    digit of the listing's name, so that different kernels rarely wait on each other and the files stay few."""
    try:
        import fcntl

        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path.parent / f".lock-{path.name[0]}", "a")
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        f.close()           # closing releases the lock


def _run_nvdisasm(cubin: bytes, path: Path) -> str | None:
    tool = find_nvdisasm()
    if tool is None:
        return None
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
        name = f.name
    try:
        # -ndf: no register dataflow analysis - the same listing (checked on the shipped kernels,
        # tests/test_compile.py), a third of nvdisasm's time (0.59 -> 0.42 s for matmul_tiled's cubin)
        proc = subprocess.run([tool, "-gi", "-c", "-ndf", name], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        os.unlink(name)
    if proc.returncode != 0:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(proc.stdout)
        os.replace(tmp, path)
    except OSError:
        pass
    return proc.stdout


def parse_sass(text: str, flow: bool = False) -> dict[str, list]:
    """mangled function -> [(innermost (file, line), outermost (file, line), instruction text)]; with ``flow``,
    [:class:`SassInstr`] (the same instructions with their labels and branch targets)."""
    funcs: dict[str, list] = {}
    current: list | None = None
    chain: list[tuple[str, int]] = []
    chain_open = False            # True while consecutive //## lines build one chain
    where_inner = where_outer = ("", 0)
    labels: list[str] = []
    subroutine = None
    for line in text.splitlines():
        m = _FUNC_HDR.match(line) or _SECTION.match(line)
        if m:
            current = funcs.setdefault(m.group(1), [])
            where_inner = where_outer = ("", 0)
            labels = []
            subroutine = None
            continue
        if current is None:
            continue
        m = _LINEINFO.search(line)
        if m:
            if not chain_open:
                chain = []
                chain_open = True
            chain.append((m.group(1), int(m.group(2))))
            if m.group(3) is None:      # outermost entry closes the chain
                where_inner, where_outer = chain[0], chain[-1]
            else:
                where_inner, where_outer = chain[0], (m.group(3), int(m.group(4)))
            continue
        m = _LABEL.match(line)
        if m:
            labels.append(m.group(1))
            continue
        m = _SUBROUTINE.match(line)
        if m:
            subroutine = m.group(1)
            continue
        m = _INSTR.match(line)
        if m:
            chain_open = False
            instr = m.group(1).strip()
            op = instr.split()[0] if instr else ""
            if op.startswith("@"):
                op = instr.split()[1] if len(instr.split()) > 1 else ""
            padding = op == "NOP" or (op == "BRA" and any(f"`({lb})" in instr for lb in labels))
            here, labels = tuple(labels), []
            if padding:
                continue
            if flow:
                t = _TARGET.search(instr)
                current.append(SassInstr(where_inner, where_outer, instr, here,
                                         t.group(1) if t and op.startswith("BRA") else None, subroutine))
            else:
                current.append((where_inner, where_outer, instr))
    return funcs


@dataclass(frozen=True)
class SassInstr:
    inner: tuple[str, int]        # innermost (file, line)
    outer: tuple[str, int]        # outermost (file, line)
    text: str                     # e.g. "@!P1 BRA `(.L_x_7)"
    labels: tuple[str, ...] = ()  # labels that name this instruction
    target: str | None = None     # a branch's target label
    subroutine: str | None = None  # the local subroutine it belongs to (``$__internal_0_$__cuda_sm3x_div_rn_...``)

    @property
    def op(self) -> str:
        """The opcode with its modifiers (``LDG.E``), without the guard."""
        words = self.text.split()
        return words[1] if words and words[0].startswith("@") and len(words) > 1 else (words[0] if words else "")


def _listing(mod, parsed: dict, flow: bool):
    """The parsed listing of ``mod``'s cubin (cached by the cubin's digest and the folders its paths are moved by)."""
    if not mod.cubin:
        return None
    moved = getattr(mod, "relocated", None)
    key = (hashlib.sha256(mod.cubin).hexdigest(), moved)
    if key not in parsed:
        text = _disassemble(mod.cubin)
        if text is None:
            return None
        if moved:
            from perfmodel.compile.cache import relocate

            text = relocate(text, moved)
        parsed[key] = parse_sass(text, flow=flow)
    return parsed[key]


def kernel_flow(mod, info) -> list | None:
    """The kernel's SASS as :class:`SassInstr` (labels and branch targets kept), or None without nvdisasm."""
    funcs = _listing(mod, _memory_flow, True)
    return None if funcs is None else funcs.get(info.mangled)


def kernel_instructions(mod, info) -> list[tuple[tuple[str, int], tuple[str, int], str]] | None:
    funcs = _listing(mod, _memory, False)
    if funcs is None:
        return None
    return funcs.get(info.mangled)


def sass_line_counts(mod, info, inlined: str = "innermost") -> dict[tuple[str, int], int] | None:
    """Static SASS instructions per (source file, line) of one kernel (file paths as in the PTX ``.file``s)."""
    instrs = kernel_instructions(mod, info)
    if instrs is None:
        return None
    pick = 1 if inlined == "outermost" else 0
    return dict(Counter(item[pick] for item in instrs))


def sass_instruction_count(mod, info) -> int | None:
    instrs = kernel_instructions(mod, info)
    return None if instrs is None else len(instrs)


def sass_opcode_counts(mod, info) -> dict[str, int] | None:
    """Static count per SASS opcode (``FFMA``, ``LDG.E``...) of one kernel."""
    instrs = kernel_instructions(mod, info)
    if instrs is None:
        return None
    ops = Counter()
    for _, _, instr in instrs:
        words = instr.split()
        op = words[1] if words and words[0].startswith("@") and len(words) > 1 else (words[0] if words else "")
        ops[op] += 1
    return dict(ops)


# ---- loops that ptxas unrolled further than the PTX -----------------------------------------------------------

_CONTROL = ("BRA", "BSYNC", "EXIT", "RET", "JMP", "BRX", "CALL", "WARPSYNC", "BREAK")


@dataclass(frozen=True)
class SassLoop:
    """A backward branch and what follows it, as :func:`backward_loops` finds them."""
    start: int                       # index of the loop's first instruction (the branch's target)
    end: int                         # index of the backward branch
    groups: tuple[tuple[int, ...], ...]   # after the loop: indices of the instructions of each straight-line run
                                          # (between branches, BSYNCs and labels), in order, up to the next loop
    tail_loop: bool = False          # the last group is the body of a straight-line loop that follows (ptxas's
                                     # last remainder chunk may be a loop that runs at most once)


def _is_control(ins: SassInstr) -> bool:
    return ins.op.split(".")[0] in _CONTROL


def backward_loops(flow: list) -> list[SassLoop]:
    """Innermost straight-line loops of a function's SASS: a backward branch whose body holds no other branch and
    no label that a branch targets (nothing jumps into it), with the straight-line runs that follow it up to the
    next loop, and that loop's body as the last run when it is a straight-line loop too (``tail_loop``)."""
    where = {lb: i for i, ins in enumerate(flow) for lb in ins.labels}
    targeted = {ins.target for ins in flow if ins.target}
    loop_heads = {where[ins.target] for i, ins in enumerate(flow)
                  if ins.target in where and where[ins.target] <= i}
    out = []
    def straight(a, b):
        return not any(_is_control(x) for x in flow[a:b]) and not any(
            set(x.labels) & targeted for x in flow[a + 1:b + 1])

    ends = {where[ins.target]: i for i, ins in enumerate(flow) if ins.target in where and where[ins.target] <= i}
    for b, ins in enumerate(flow):
        a = where.get(ins.target) if ins.target else None
        if a is None or a > b or not straight(a, b):
            continue
        groups, cur, tail = [], [], False
        for i in range(b + 1, len(flow)):
            x = flow[i]
            if i in loop_heads:
                if cur:
                    groups.append(tuple(cur))
                cur = []
                if straight(i, ends[i]):
                    groups.append(tuple(range(i, ends[i])))
                    tail = True
                break
            if x.labels or _is_control(x):
                if cur:
                    groups.append(tuple(cur))
                cur = []
            if _is_control(x):
                if x.op.split(".")[0] in ("EXIT", "RET") and not x.text.startswith("@"):
                    break
                continue
            cur.append(i)
        if cur:
            groups.append(tuple(cur))
        out.append(SassLoop(a, b, tuple(groups), tail))
    return out


def memory_key(ins: SassInstr) -> tuple | None:
    """(space, "ld"/"st", bytes) of a global or shared load or store; None for anything else (atomics, local and
    generic accesses, constant loads...)."""
    parts = ins.op.split(".")
    kind = {"LDG": ("global", "ld"), "STG": ("global", "st"), "LDS": ("shared", "ld"),
            "STS": ("shared", "st")}.get(parts[0])
    if kind is None:
        return None
    width = 4
    for p in parts[1:]:
        if p in ("64", "128"):
            width = int(p) // 8
        elif p in ("U8", "S8"):
            width = 1
        elif p in ("U16", "S16"):
            width = 2
    return kind + (width,)
