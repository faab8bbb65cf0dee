"""Memory-level parallelism of one warp, read off the compiled PTX (issue 13 item 3).

A warp issues in order: it stops at the first instruction that needs a load's result. The global loads it can have
in flight at once are therefore the loads of one basic block that do not wait on each other - the compiler puts a
block's independent loads before their uses (but not above a store that may alias them, nor above a barrier), and an unrolled loop body is one block (``matmul_naive``'s inner loop,
unrolled 4x by NVVM: 8 loads; a grid-stride loop ``for (i = ...; i < n; i += gridDim.x * blockDim.x) sum += in[i]``,
whose trip count NVVM cannot compute, is not unrolled: 1 load per round trip). Loads whose address depends on an
earlier load of the block (a gather ``x[col[j]]``) start a further round: a block with ``L`` loads whose longest
chain of load-to-load dependences has ``D`` loads keeps ``L / D`` in flight.

:func:`loads_in_flight_by_line` gives that figure per source line (the largest over the blocks holding a global load
of the line); :func:`weighted_loads_in_flight` weights it by the lines' executed load requests. The bottleneck
model's latency chain divides a warp's load requests by it (``chain.latency_chain_time``).

The same walk over a block's register dependences gives its instruction-level parallelism: its non-load
instructions over the longest chain of them (:func:`block_ilp`, per source line :func:`ilp_by_line`), which the
chain credits (``chain.instruction_cycles``).
"""
from __future__ import annotations

from typing import Any

_NO_DESTINATION = {"st", "bra", "bar", "barrier", "ret", "exit", "red", "membar", "fence", "trap", "call",
                   "prefetch", "prefetchu", "brkpt", "pmevent", "nanosleep", "cp", "griddepcontrol"}


def _regs(operand: Any) -> list[str]:
    """Register names an operand reads (through addresses and vectors)."""
    from perfmodel.ptx.ir import Addr, PredPair, Reg, Vec

    if isinstance(operand, Reg):
        return [operand.name]
    if isinstance(operand, Addr):
        return _regs(operand.base)
    if isinstance(operand, Vec):
        return [name for item in operand.items for name in _regs(item)]
    if isinstance(operand, PredPair):
        return [operand.first.name, operand.second.name]
    return []


def _is_global_load(ins: Any) -> bool:
    # a texture fetch reads global memory through the same L1TEX path (perfmodel/sim/texture.py)
    return ins.opcode in ("tex", "suld") or (ins.opcode in ("ld", "ldu") and not any(
        m in ins.mods for m in ("param", "const", "shared", "local")))


class _Dependences:
    """Register dependences along a basic block: the step at which each register's latest value is ready."""

    def __init__(self) -> None:
        self.depth: dict[str, int] = {}

    def ready(self, ins: Any) -> int:
        """The latest step of the registers ``ins`` reads (its sources, addresses and guard predicate)."""
        writes = ins.opcode not in _NO_DESTINATION and bool(ins.operands)
        sources = ins.operands[1:] if writes else ins.operands
        d = max((self.depth.get(r, 0) for op in sources for r in _regs(op)), default=0)
        if ins.guard is not None:
            d = max(d, self.depth.get(ins.guard.name, 0))
        return d

    def wrote(self, ins: Any, step: int) -> None:
        if ins.opcode not in _NO_DESTINATION and ins.operands:
            for r in _regs(ins.operands[0]):
                self.depth[r] = step


def block_loads_in_flight(instrs: list) -> tuple[int, float]:
    """(global loads, loads in flight) of one basic block: its loads over the rounds they need
    (:func:`load_rounds`)."""
    rounds = load_rounds(instrs)
    return len(rounds), (len(rounds) / max(rounds.values()) if rounds else 0.0)


def load_rounds(instrs: list) -> dict[int, int]:
    """Position in the block -> round, of each global load of one basic block.

    The compiler hoists a load above anything it does not depend on, except a global (or generic) store or atomic
    (the addresses may alias) and a barrier. So a load's round is one more than the latest round its address depends on, and no
    earlier than the round that a preceding store's data or a preceding barrier waits for (a store issues once the
    loads whose values it writes are back; a barrier once every value used before it is)."""
    walk = _Dependences()
    out: dict[int, int] = {}
    fence = used = 0
    for pos, ins in enumerate(instrs):
        d = walk.ready(ins)
        if _is_global_load(ins):
            d = max(d, fence) + 1
            out[pos] = d
        else:
            used = max(used, d)
            if ins.opcode in ("st", "atom", "red") and not any(m in ins.mods for m in ("shared", "local", "param")):
                fence = max(fence, d)
            elif ins.opcode in ("bar", "barrier", "membar", "fence") or (
                    ins.opcode == "cp" and ins.mods[1:2] in (("wait_group",), ("wait_all",))):   # cp.async waits
                fence = max(fence, used)
        walk.wrote(ins, d)
    return out


def loads_in_flight_by_line(module: Any, entry: str) -> dict:
    """Source line (:meth:`perfmodel.ptx.ir.Module.line_key`) -> loads in flight of the basic blocks that hold the
    line's global loads (the largest)."""
    f = module.functions[entry]
    primary = module.primary_file(entry)
    out: dict = {}
    for blk in f.blocks:
        instrs = f.instrs[blk.start:blk.end]
        loads, in_flight = block_loads_in_flight(instrs)
        if not loads:
            continue
        for ins in instrs:
            key = module.model_line_key(ins, primary) if _is_global_load(ins) and ins.line else None
            if key is not None:
                out[key] = max(out.get(key, 0.0), in_flight)
    return out


def load_round_lines(module: Any, entry: str) -> list[list[int]]:
    """The source lines of each round of global loads that a warp issues together (per basic block and round,
    :func:`load_rounds`)."""
    f = module.functions[entry]
    primary = module.primary_file(entry)
    out: list[list] = []
    for blk in f.blocks:
        instrs = f.instrs[blk.start:blk.end]
        by_round: dict[int, set] = {}
        for pos, r in load_rounds(instrs).items():
            key = module.model_line_key(instrs[pos], primary) if instrs[pos].line else None
            if key is not None:
                by_round.setdefault(r, set()).add(key)
        out.extend(sorted(lines, key=str) for _r, lines in sorted(by_round.items()))
    return out


def round_miss_factor(reuse_by_line: dict | None, round_lines: list | None) -> float | None:
    """How much more often a round of loads misses L1 than its loads do on average: a round that issues together
    waits for its slowest load, so when one of its lines streams (every sector new) and another re-reads (every
    sector an L1 hit), the round waits a miss every time, not half the time.

    ``reuse_by_line``: line -> (load sectors, first touches) of one block run alone (``SimResult.load_reuse_by_line``;
    a line's miss share is first touches over sectors). Each line takes the largest miss share of the lines it
    issues with (``round_lines``, :func:`load_round_lines`); the factor is the sectors' miss share so raised over
    their own (1 when every line of a round misses alike). None without figures."""
    if not reuse_by_line:
        return None
    share = {line: (first / sectors if sectors else 0.0) for line, (sectors, first) in reuse_by_line.items()}
    worst = dict(share)
    for lines in round_lines or []:
        top = max((share.get(line, 0.0) for line in lines), default=0.0)
        for line in lines:
            if line in worst:
                worst[line] = max(worst[line], top)
    own = sum(first for _sectors, first in reuse_by_line.values())
    if own <= 0:
        return None
    return sum(sectors * worst[line] for line, (sectors, _first) in reuse_by_line.items()) / own


def _line_figures(lines: dict | None, key) -> dict:
    """A line's figures from ``sim.lines`` merged with ``sim.header_lines``, by a line key that JSON may have made a
    string: the kernel's own line number, or "path:line"."""
    lines = lines or {}
    if isinstance(key, int) or str(key).isdigit():
        return lines.get(int(key)) or lines.get(str(key)) or {}
    return lines.get(str(key)) or {}


def weighted_loads_in_flight(by_line: dict, lines: dict) -> float | None:
    """The lines' loads in flight weighted by their executed global load requests (``sim.lines``); None when no
    executed load has a figure (hand-written counts, a kernel without global loads)."""
    total = weighted = 0.0
    for line, in_flight in (by_line or {}).items():
        agg = _line_figures(lines, line)
        if not agg.get("global_loads"):
            continue
        requests = float(agg.get("global_requests", 0) or 0)
        total += requests
        weighted += requests * float(in_flight)
    return weighted / total if total > 0 else None


def block_ilp(instrs: list) -> tuple[int, int]:
    """(instructions, longest dependence chain) of one basic block, global loads left out (the chain charges them
    apart): each other instruction is one step after the latest of the registers it reads; a barrier waits for
    every step before it."""
    walk = _Dependences()
    count = top = fence = 0
    for ins in instrs:
        d = max(walk.ready(ins), fence)
        if not _is_global_load(ins):
            count += 1
            d += 1
            if ins.opcode in ("bar", "barrier"):
                d = max(d, top + 1)
                fence = d
            top = max(top, d)
        walk.wrote(ins, d)
    return count, top


def ilp_by_line(module: Any, entry: str) -> dict[int, float]:
    """Source line -> the instruction-level parallelism of the basic blocks holding its instructions (instructions
    over longest dependence chain, averaged over the line's instructions)."""
    f = module.functions[entry]
    primary = module.primary_file(entry)
    total: dict = {}
    weighted: dict = {}
    for blk in f.blocks:
        instrs = f.instrs[blk.start:blk.end]
        count, chain = block_ilp(instrs)
        if not count:
            continue
        ilp = count / max(1, chain)
        for ins in instrs:
            key = module.model_line_key(ins, primary) if ins.line and not _is_global_load(ins) else None
            if key is not None:
                total[key] = total.get(key, 0.0) + 1.0
                weighted[key] = weighted.get(key, 0.0) + ilp
    return {line: weighted[line] / total[line] for line in total}


def ilp_mix(by_line: dict, lines: dict) -> list[tuple[float, float]] | None:
    """[(share of the executed warp instructions, ILP)] over the lines (``sim.lines``); None without figures."""
    rows = []
    for line, ilp in (by_line or {}).items():
        agg = _line_figures(lines, line)
        w = float(agg.get("warp_instructions", 0) or 0)
        if w > 0:
            rows.append((w, float(ilp)))
    total = sum(w for w, _ in rows)
    return [(w / total, ilp) for w, ilp in rows] if total > 0 else None
