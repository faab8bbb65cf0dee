"""Basic blocks and immediate post-dominators of a PTX function.

Divergent lanes reconverge at the immediate post-dominator of the block that split them (the classic SIMT
stack, as in GPGPU-Sim's ``ptx_ir``): the first block that every path from the branch must reach.
"""
from __future__ import annotations

from perfmodel.ptx.ir import Block, Function, Sym

TERMINATORS = {"bra", "ret", "exit", "trap", "brx"}


def build_blocks(f: Function) -> None:
    n = len(f.instrs)
    leaders = {0} if n else set()
    for idx in f.labels.values():
        if idx < n:
            leaders.add(idx)
    for i, ins in enumerate(f.instrs):
        if ins.opcode in TERMINATORS and i + 1 < n:
            leaders.add(i + 1)
    starts = sorted(leaders)
    f.blocks = []
    f.block_of = [0] * n
    for b, s in enumerate(starts):
        e = starts[b + 1] if b + 1 < len(starts) else n
        f.blocks.append(Block(s, e))
        for i in range(s, e):
            f.block_of[i] = b
    nb = len(f.blocks)
    for b, blk in enumerate(f.blocks):
        last = f.instrs[blk.end - 1]
        fall = (b + 1,) if b + 1 < nb else ()
        if last.opcode == "bra":
            tgt = last.operands[0]
            if not isinstance(tgt, Sym) or tgt.name not in f.labels:
                blk.succ = fall
                continue
            ti = f.labels[tgt.name]
            tb = f.block_of[ti] if ti < n else None
            tsucc = (tb,) if tb is not None else ()
            blk.succ = tsucc + tuple(x for x in fall if x not in tsucc) if last.guard is not None else tsucc
        elif last.opcode in ("ret", "exit", "trap"):
            blk.succ = ()
        else:
            blk.succ = fall
    _post_dominators(f)


def _post_dominators(f: Function) -> None:
    nb = len(f.blocks)
    exit_ = nb
    full = (1 << (nb + 1)) - 1
    pdom = [full] * nb + [1 << exit_]
    succs = [blk.succ or (exit_,) for blk in f.blocks]
    changed = True
    while changed:
        changed = False
        for b in range(nb - 1, -1, -1):
            acc = full
            for s in succs[b]:
                acc &= pdom[s]
            new = acc | (1 << b)
            if new != pdom[b]:
                pdom[b] = new
                changed = True
    # blocks from which the exit can be reached (the others keep the initial "everything" set: an endless loop);
    # a block that reaches the exit may legitimately be post-dominated by every block (a straight chain)
    reaches = {exit_}
    changed = True
    while changed:
        changed = False
        for b in range(nb):
            if b not in reaches and any(s in reaches for s in succs[b]):
                reaches.add(b)
                changed = True
    for b in range(nb):
        strict = pdom[b] & ~(1 << b)
        if b not in reaches or not strict:       # cannot reach the exit (an endless loop): reconverge at the exit
            f.blocks[b].ipdom = -1
            continue
        best, best_size = -1, -1
        d = 0
        s = strict
        while s:
            if s & 1:
                size = bin(pdom[d]).count("1")
                if size > best_size:
                    best, best_size = d, size
            s >>= 1
            d += 1
        f.blocks[b].ipdom = -1 if best == exit_ else best
