"""Half-precision multiply-add contraction: ptxas fuses a ``mul`` and an ``add`` that carry no rounding modifier.

The PTX ISA lets the code generator contract ``mul``/``add`` sequences with no rounding modifier into fused
multiply-adds ("add", "mul": "mul/add sequences with no rounding modifiers may be optimized to use fused-multiply-add
instructions on the target device"); cuda_fp16.h's ``__hmul``/``__hadd`` and the ``half`` operators emit exactly
such ``mul.f16`` / ``add.f16`` (its ``__hmul_rn`` exists to prevent it), and ptxas for sm_90 turns ``a * b + c`` on
halves into one ``HFMA2`` - one rounding, not two. NVVM does the same for ``float`` itself (``fma.rn.f32`` in the
PTX), so only the 16-bit types are left for here. An ``add`` is executed as the ``fma`` of a ``mul`` when: both
are ``.f16``/``.f16x2``/``.bf16``/``.bf16x2`` with no rounding modifier and no guard, in one basic block, the
``mul``'s result is read by that ``add`` alone, and neither of the ``mul``'s sources is written between them.
"""
from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict

from perfmodel.ptx.ir import Addr, Reg, Vec

HALF = ("f16", "f16x2", "bf16", "bf16x2")
ROUNDING = {"rn", "rz", "rm", "rp"}


def _regs(op) -> list[str]:
    if isinstance(op, Reg):
        return [op.name]
    if isinstance(op, Vec):
        return [x.name for x in op.items if isinstance(x, Reg)]
    if isinstance(op, Addr) and isinstance(op.base, Reg):
        return [op.base.name]
    return []


def _plain(ins, opcode: str) -> bool:
    return (ins.opcode == opcode and ins.type in HALF and not ROUNDING & set(ins.mods) and ins.guard is None
            and len(ins.operands) == 3 and isinstance(ins.operands[0], Reg))


def contractions(f) -> dict[int, object]:
    """Position of each ``add`` in ``f`` -> the ``fma`` instruction it executes as."""
    adds = [i for i, ins in enumerate(f.instrs) if _plain(ins, "add")]
    if not adds:
        return {}
    defs: dict[str, list[int]] = defaultdict(list)
    uses: Counter = Counter()
    for i, ins in enumerate(f.instrs):
        writes = ins.opcode not in ("st", "red", "bra", "ret", "exit", "bar", "barrier") and bool(ins.operands)
        for k, op in enumerate(ins.operands):
            names = _regs(op)
            if k == 0 and writes and not isinstance(op, Addr):
                for n in names:
                    defs[n].append(i)
            else:
                uses.update(names)
        if ins.guard is not None:
            uses[ins.guard.name] += 1
    out = {}
    for i in adds:
        add = f.instrs[i]
        for j in (1, 2):
            src = add.operands[j]
            if not isinstance(src, Reg) or len(defs[src.name]) != 1 or uses[src.name] != 1:
                continue
            m = defs[src.name][0]
            mul = f.instrs[m]
            if not (_plain(mul, "mul") and mul.type == add.type and m < i and f.block_of[m] == f.block_of[i]):
                continue
            a, b = mul.operands[1], mul.operands[2]
            if any(m < d < i for n in _regs(a) + _regs(b) for d in defs[n]):
                continue
            out[i] = dataclasses.replace(add, opcode="fma", mods=("rn", add.type),
                                         operands=(add.operands[0], a, b, add.operands[3 - j]))
            break
    return out
