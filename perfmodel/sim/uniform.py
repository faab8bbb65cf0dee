"""Which atomics the compiler combines across a warp: those whose address every lane shares by construction.

ptxas (sm_80 and later) turns a 32-bit integer ``atom``/``red`` of kind add, min, max, and, or or xor whose address
it can prove the same for every lane of the warp into one warp-level reduction (``REDUX`` or ``VOTEU.ANY`` +
``POPC``) followed by a single atomic from one lane. It cannot prove it for an address that comes from memory or from
the thread index, so those stay one atomic per lane even when the lanes happen to share the address at run time.
Measured on an H100 and an H200 (validation/raw/h100_atomics.json, h200_atomics.json; 4 Mi threads on one word):
``atomicAdd``/``atomicMax``/``atomicOr`` on a parameter's address 99 us, ``atomicExch``/``atomicCAS`` 3.07 ms, the
same integer add on an address loaded from memory (all zeros) 3.08 ms - 31x apart, as one operation per warp vs
one per lane.

The proof is an abstract interpretation of the PTX registers over two classes, warp-uniform or not, flow
insensitive like :mod:`perfmodel.sim.invariance` (whose per-instruction rules it reuses), with three changes:

- the thread index, lane id and the like vary within a warp; the block index, the launch's dimensions and the
  kernel's parameters do not (a non-entry function's parameters may: they are not uniform);
- a definition under a guard that varies within the warp does not make a uniform value;
- a register defined inside one arm of a branch that varies within the warp (a block reached from one of its
  successors before their reconvergence point, the branch's immediate post-dominator) and anywhere else is not
  uniform: lanes that took different ways meet there with different values (``k = 0; if (tid < 16) k = 1;``).
"""
from __future__ import annotations

from perfmodel.ptx.ir import Special
from perfmodel.sim.invariance import UNIFORM, VARIANT, _address, _Classes, _dests, _result

# specials that are the same for every lane of a warp (the rest - %tid, %laneid, %clock... - are not)
_WARP_UNIFORM_SPECIALS = ("%ctaid", "%ntid", "%nctaid", "%dynamic_smem_size", "%total_smem_size",
                          "%aggr_smem_size", "%nclusterid", "%clusterid", "%cluster_ctaid", "%cluster_nctaid",
                          "%cluster_nctarank", "%cluster_ctarank", "%is_explicit_cluster")

# the atomic kinds ptxas combines with a warp reduction (32-bit integers)
COMBINED_OPS = ("add", "min", "max", "and", "or", "xor")


class _WarpClasses(_Classes):
    def __init__(self):
        super().__init__(UNIFORM)

    def of(self, op) -> int:
        if isinstance(op, Special):
            return UNIFORM if op.name.startswith(_WARP_UNIFORM_SPECIALS) else VARIANT
        return super().of(op)


def _arms(func, branch_block: int) -> list[set[int]]:
    """The blocks of each arm of the conditional branch ending ``branch_block``: reachable from one successor
    without passing the branch's immediate post-dominator."""
    stop = func.blocks[branch_block].ipdom
    arms = []
    for s in func.blocks[branch_block].succ:
        seen, todo = set(), [s]
        while todo:
            b = todo.pop()
            if b == stop or b in seen or b < 0:
                continue
            seen.add(b)
            todo.extend(func.blocks[b].succ)
        arms.append(seen)
    return arms


def warp_uniform_registers(func) -> dict[str, int]:
    """Every register's class (``UNIFORM``: the same in every lane of a warp; ``VARIANT``)."""
    C = _WarpClasses()
    defs: dict[str, set[int]] = {}
    for k, ins in enumerate(func.instrs):
        for d in _dests(ins):
            defs.setdefault(d.name, set()).add(func.block_of[k] if func.block_of else 0)
    arms_done: set[int] = set()
    changed = True
    while changed:
        changed = False
        for ins in func.instrs:
            dests = _dests(ins)
            if not dests:
                continue
            if ins.opcode in ("ld", "ldu") and "param" in ins.mods and not func.is_entry:
                c = VARIANT
            else:
                c = _result(ins, C)
            if ins.guard is not None and C.of(ins.guard) != UNIFORM:
                c = VARIANT
            for d in dests:
                changed |= C.raise_to(d, c)
        # registers merged from the arms of a branch that varies within the warp
        if not func.blocks:
            continue
        for k, ins in enumerate(func.instrs):
            if ins.opcode != "bra" or ins.guard is None or C.of(ins.guard) == UNIFORM:
                continue
            b = func.block_of[k]
            if b in arms_done:
                continue
            arms_done.add(b)
            for arm in _arms(func, b):
                for name, where in defs.items():
                    if where & arm and where - arm and C.cls.get(name, UNIFORM) != VARIANT:
                        C.cls[name] = VARIANT
                        changed = True
    return dict(C.cls)


def combined_atomics(func) -> frozenset:
    """Indices of the ``atom``/``red`` instructions whose address every lane of a warp shares by construction
    (the compiler combines the warp's lanes when the kind is one of :data:`COMBINED_OPS` on 32-bit integers).
    Cached on the function."""
    cached = getattr(func, "_combined_atomics", None)
    if cached is not None:
        return cached
    C = _WarpClasses()
    C.cls.update(warp_uniform_registers(func))
    out = frozenset(k for k, ins in enumerate(func.instrs)
                    if ins.opcode in ("atom", "red") and (a := _address(ins)) is not None and C.of(a) == UNIFORM)
    try:
        func._combined_atomics = out
    except AttributeError:      # pragma: no cover - a frozen function object
        pass
    return out
