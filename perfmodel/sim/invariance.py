"""Which kernels do the same work in every block: a static proof over the PTX, checked at run time on a few blocks.

A kernel's counts (instructions, flops, requests, sectors, lines, wavefronts, bank conflicts, barriers,
divergence) are the same in every block when (1) its control flow does not depend on the block index or on
data, and (2) every address it computes moves by one whole-warp shift from block to block, a shift that leaves
the 32-byte sector / 128-byte line / 32-bank pattern unchanged. This module proves what can be proved statically,
by an abstract interpretation of the PTX registers over three classes:

- ``UNIFORM``: the same in every block (thread indices, parameters, constants, immediates, arithmetic of these);
- ``AFFINE``: an integer linear in ``%ctaid`` (``blockIdx``) with block-independent coefficients - what ``add``,
  ``sub``, ``mad``/``mul`` by a uniform value, ``shl`` by a uniform amount and integer ``cvt`` make of the block
  index (C's ``Row * Width + Col``);
- ``VARIANT``: anything else: values loaded from memory, warp-level results, divisions of the block index...

It is flow-insensitive (a register's class is the join over all its definitions), hence sound for loops. The
kernel qualifies when every branch and every guard predicate is uniform or a comparison of affine integers, every
address is uniform or affine, and it calls no function. What the static classes cannot show is checked when the
pilot blocks run (:class:`Probe`): each comparison of affine values must give every block the same outcome (an
affine function over the grid's box takes its extremes at the corners, so corners that agree prove every block
agrees), and each affine address must be ``base + k . blockIdx`` with ``k`` the same for every lane.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel.ptx.ir import Addr, PredPair, Reg, Special, Vec

UNIFORM, AFFINE, VARIANT = 0, 1, 2

_UNIFORM_SPECIALS = ("%tid", "%ntid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%lanemask", "%dynamic_smem_size",
                     "%total_smem_size", "%aggr_smem_size", "%nclusterid", "%cluster_nctaid", "%cluster_nctarank",
                     "%clusterid", "%cluster_ctaid", "%cluster_ctarank", "%is_explicit_cluster")
_INT_TYPES = {"b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64"}
_LINEAR = {"add", "sub", "neg", "mov", "cvta"}
_PRODUCT = {"mul", "mad", "mul24", "mad24"}
_MEMORY = {"ld", "ldu", "st", "atom", "red"}
_NO_DEST = {"st", "red", "bar", "barrier", "bra", "ret", "exit", "trap", "membar", "fence", "prefetch", "prefetchu",
            "nanosleep", "pmevent", "discard", "applypriority", "griddepcontrol", "setmaxnreg", "cp", "stmatrix"}
# results the register classes cannot follow: warp-level data, atomics' returns, and the carry-chain instructions
# (their carry flag is an operand no register names)
_DATA = {"shfl", "vote", "match", "redux", "activemask", "atom", "elect", "createpolicy", "addc", "subc", "madc",
         "wmma", "mma", "ldmatrix", "mbarrier"}


@dataclass(frozen=True)
class StaticProof:
    ok: bool
    reason: str                          # why not, when not ok
    checked: frozenset                   # instruction indices of setp comparing affine values (checked at run time)
    affine_addresses: frozenset          # memory instructions whose address is affine in the block index


def _special_class(name: str) -> int:
    if name.startswith("%ctaid"):
        return AFFINE
    if name.startswith(_UNIFORM_SPECIALS):
        return UNIFORM
    return VARIANT        # %clock, %smid, %globaltimer ...: not the same in every block


def _dests(ins) -> list:
    if ins.opcode in _NO_DEST or not ins.operands:
        return []
    d = ins.operands[0]
    if isinstance(d, Reg):
        return [d]
    if isinstance(d, PredPair):
        return [d.first, d.second]
    if isinstance(d, Vec):
        return [x for x in d.items if isinstance(x, Reg)]
    return []


def _address(ins) -> Addr | None:
    for op in ins.operands:
        if isinstance(op, Addr):
            return op
    return None


def _all_int(ins) -> bool:
    types = ins.types
    return bool(types) and all(t in _INT_TYPES for t in types)


class _Classes:
    def __init__(self, block_index_class: int = AFFINE):
        self.cls: dict[str, int] = {}
        self.block_index_class = block_index_class

    def of(self, op) -> int:
        if isinstance(op, Reg):
            return self.cls.get(op.name, UNIFORM)
        if isinstance(op, Special):
            c = _special_class(op.name)
            return self.block_index_class if c == AFFINE else c
        if isinstance(op, Addr):
            return self.of(op.base)
        if isinstance(op, Vec):
            return max((self.of(x) for x in op.items), default=UNIFORM)
        if isinstance(op, PredPair):
            return max(self.of(op.first), self.of(op.second))
        return UNIFORM          # Imm, Sym (a variable's address), Sink

    def raise_to(self, reg: Reg, c: int) -> bool:
        old = self.cls.get(reg.name, UNIFORM)
        if c > old:
            self.cls[reg.name] = c
            return True
        return False


def _result(ins, C: _Classes) -> int:
    op = ins.opcode
    srcs = ins.operands[1:] if _dests(ins) else ins.operands
    classes = [C.of(s) for s in srcs]
    worst = max(classes, default=UNIFORM)
    if op in _DATA:
        return VARIANT
    if op in ("ld", "ldu"):
        mods = ins.mods
        if "param" in mods:
            return UNIFORM
        if "const" in mods and worst == UNIFORM:
            return UNIFORM        # the constant bank does not change during a launch
        return VARIANT
    if op == "setp" or op == "set":
        if worst == UNIFORM:
            return UNIFORM
        # a comparison of affine integers: the same outcome in every block iff the corners agree (checked)
        cmp_types = [t for t in ins.types if t != "pred"]
        if worst == AFFINE and cmp_types and all(t in _INT_TYPES for t in cmp_types):
            return AFFINE
        return VARIANT
    if op == "selp":
        a, b, p = classes[0], classes[1], classes[2]
        return max(a, b) if p <= AFFINE else VARIANT
    if ins.type == "pred" and op in ("and", "or", "xor", "not", "mov"):
        return worst          # a combination of predicates, each uniform or checked where it is computed
    if worst == UNIFORM:
        return UNIFORM
    if not _all_int(ins) and op != "cvta":
        return VARIANT
    if op in _LINEAR or (op == "cvt" and all(t in _INT_TYPES for t in ins.types)):
        return worst
    if op in _PRODUCT:
        a, b = classes[0], classes[1]
        prod = VARIANT if (a > UNIFORM and b > UNIFORM) else max(a, b)
        if op.startswith("mad"):
            prod = max(prod, classes[2])
        return prod
    if op == "shl":
        return classes[0] if classes[1] == UNIFORM else VARIANT
    return VARIANT


def analyse(func, block_index_class: int = AFFINE, classes_out: dict | None = None) -> StaticProof:
    """The static half of the proof for one PTX function (the kernel entry). ``block_index_class=UNIFORM`` asks
    only whether data reaches control flow or addresses; ``classes_out`` receives every register's class."""
    C = _Classes(block_index_class)
    for ins in func.instrs:
        if ins.opcode == "call":
            return StaticProof(False, "the kernel calls a function", frozenset(), frozenset())
        if ins.opcode in ("tex", "suld", "sust"):
            # the texels a fetch reads depend on its coordinates through filtering and address modes
            # (perfmodel/sim/texture.py), which the register classes do not follow
            return StaticProof(False, "the kernel uses a texture or surface object", frozenset(), frozenset())
    changed = True
    rounds = 0
    while changed:
        changed = False
        rounds += 1
        for ins in func.instrs:
            dests = _dests(ins)
            if not dests:
                continue
            c = _result(ins, C)
            for d in dests:
                changed |= C.raise_to(d, c)
        if rounds > 4 * len(func.regs) + 8:       # the lattice has height 3: cannot happen
            return StaticProof(False, "the register classes did not converge", frozenset(), frozenset())
    if classes_out is not None:
        classes_out.update(C.cls)
    checked, affine = set(), set()
    for k, ins in enumerate(func.instrs):
        where = f"line {ins.line}" if ins.line else f"instruction {k}"
        if ins.guard is not None and C.of(ins.guard) > AFFINE:
            what = "a branch" if ins.opcode == "bra" else f"'{ins.opcode}'"
            return StaticProof(False, f"{what} at {where} depends on data or on the block index non-linearly",
                               frozenset(), frozenset())
        if ins.opcode in _MEMORY and "param" not in ins.mods or ins.opcode in ("wmma", "ldmatrix", "stmatrix"):
            addr = _address(ins)
            c = C.of(addr) if addr is not None else UNIFORM
            if c > AFFINE:
                return StaticProof(False, f"a memory address at {where} depends on data or on the block index "
                                          "non-linearly", frozenset(), frozenset())
            if c == AFFINE:
                affine.add(k)
        if ins.opcode in ("setp", "set") and _result(ins, C) == AFFINE:
            checked.add(k)
    return StaticProof(True, "", frozenset(checked), frozenset(affine))


# ---- the run-time half ----------------------------------------------------------------------------------------

def pilot_blocks(grid: tuple[int, int, int], lo=(0, 0, 0), hi=None) -> tuple[np.ndarray, list]:
    """Linear ids of the pilot blocks of the box ``lo..hi`` (inclusive; default the whole grid) - its first block,
    that block's neighbour along each axis the box extends, every corner and the centre - and, per axis, the row of
    the neighbour (None where the box is one block thick)."""
    gx, gy, gz = grid
    hi = tuple(g - 1 for g in grid) if hi is None else tuple(hi)
    lo = tuple(lo)
    coords = [lo]
    unit: list = [None, None, None]
    for d in range(3):
        if hi[d] > lo[d]:
            e = list(lo)
            e[d] += 1
            unit[d] = len(coords)
            coords.append(tuple(e))
    for x in {lo[0], hi[0]}:
        for y in {lo[1], hi[1]}:
            for z in {lo[2], hi[2]}:
                coords.append((x, y, z))
    coords.append(tuple((a + b) // 2 for a, b in zip(lo, hi)))
    seen, rows, unit_rows = {}, [], [None, None, None]
    for i, c in enumerate(coords):
        if c not in seen:
            seen[c] = len(rows)
            rows.append(c)
        for d in range(3):
            if unit[d] == i:
                unit_rows[d] = seen[c]
    ids = np.array([x + gx * (y + gy * z) for x, y, z in rows], np.int64)
    return ids, unit_rows


class Probe:
    """Run-time checks on the pilot batch; ``failed`` holds the first reason the proof does not hold."""

    def __init__(self, grid, block_ids: np.ndarray, unit_rows: list):
        gx, gy, _gz = grid
        self._extent = tuple(grid)
        coords = np.stack([block_ids % gx, (block_ids // gx) % gy, block_ids // (gx * gy)], axis=1)
        self.coords = coords - coords[0]        # from the box's first block (row 0)
        self.unit_rows = unit_rows
        self.failed: str | None = None
        self.shifts: dict[int, list] = {}       # memory instruction -> [[k, executions], ...] in order
        self.shared_writes = False              # a global store or atomic that several blocks aim at one address
        self.global_gids: set = set()
        self.widest = 0                         # bytes of the widest global access seen

    def fail(self, why: str) -> None:
        if self.failed is None:
            self.failed = why

    def _rows_mask(self, st, rows):
        m = st.mask
        if m is None:
            return None
        mb = np.broadcast_to(m, (rows, m.shape[1]))
        if rows > 1 and not (mb == mb[:1]).all():
            self.fail("the blocks' active lanes differ")
        return mb[0]

    def predicate(self, st, value, gid: int) -> None:
        """A comparison of affine values: every pilot block must see the same outcome on its active lanes."""
        if self.failed or value.shape[0] == 1:
            return
        act = self._rows_mask(st, value.shape[0])
        v = value if act is None else value[:, np.broadcast_to(act, (value.shape[1],))] if value.shape[1] > 1 \
            else value
        if not (v == v[:1]).all():
            self.fail(f"a comparison involving the block index (instruction {gid}) differs between blocks")

    def compare(self, st, a: np.ndarray, b: np.ndarray, cmp: str, unsigned: bool, gid: int) -> None:
        """The operands of a comparison of affine integers. ``a - b`` is linear in the block index, so over the
        box its sign is that of the corners when they all agree: for ``eq``/``ne`` the sign itself must agree
        (an outcome shared by the corners says nothing about the blocks between them); unsigned operands must be
        below 2^(bits-1) (then they compare as the signed, linear values do)."""
        if self.failed:
            return
        rows = max(a.shape[0], b.shape[0])
        if rows == 1:
            return
        lanes = max(a.shape[1], b.shape[1])
        act = self._rows_mask(st, rows)

        def signed(v):
            if v.dtype.kind == "u":
                v = v.view(np.dtype(f"i{v.dtype.itemsize}"))
            return np.broadcast_to(v.astype(np.int64), (rows, lanes))
        sa, sb = signed(a), signed(b)
        if act is not None and lanes > 1:
            sel = np.broadcast_to(act, (lanes,))
            sa, sb = sa[:, sel], sb[:, sel]
        if unsigned and ((sa < 0).any() or (sb < 0).any()):
            self.fail(f"an unsigned comparison involving the block index (instruction {gid}) wraps around")
            return
        if cmp in ("eq", "ne", "equ", "neu"):
            sign = np.sign(sa - sb)
            if not (sign == sign[:1]).all():
                self.fail(f"an equality test involving the block index (instruction {gid}) differs between blocks")

    def address(self, st, gid: int, a: np.ndarray, space: str, store: bool, nbytes: int = 4) -> None:
        """One execution of a memory instruction by the pilot blocks: the address must be ``base + k . block``
        with one ``k`` for every lane; the ``k`` of each execution is kept, in order (run-length encoded)."""
        if self.failed:
            return
        if a.shape[0] == 1:
            k = (0, 0, 0)
        else:
            rows = a.shape[0]
            act = self._rows_mask(st, rows)
            lanes = np.broadcast_to(a, (rows, max(a.shape[1], 1 if act is None else act.shape[0])))
            if act is not None:
                lanes = lanes[:, np.broadcast_to(act, (lanes.shape[1],))]
            if lanes.shape[1] == 0:
                return
            lanes = lanes.astype(np.int64)
            base = lanes[0]
            k_list = []
            for d in range(3):
                r = self.unit_rows[d]
                if r is None:
                    k_list.append(0)
                    continue
                diff = lanes[r] - base
                if not (diff == diff[0]).all():
                    self.fail(f"an address (instruction {gid}) moves by different amounts in different threads "
                              "from block to block")
                    return
                k_list.append(int(diff[0]))
            k = tuple(k_list)
            predicted = base[None, :] + (self.coords @ np.asarray(k, np.int64))[:, None]
            if not (lanes == predicted).all():
                self.fail(f"an address (instruction {gid}) is not linear in the block index")
                return
        if space.startswith("atom.") and "shared" not in space and k != (0, 0, 0):
            # the busiest 128-byte line's atomic work (sim/atomic_count.py) is a maximum over lines, not a sum
            # over blocks, when blocks aim at different lines
            self.fail(f"global atomics (instruction {gid}) move from block to block")
            return
        # (a thread's local memory is its own: every block's stores to the same local address are no overlap)
        if store and "shared" not in space and "local" not in space and \
                any(kd == 0 and ext > 1 for kd, ext in zip(k, self._extent)):
            self.shared_writes = True
        if space == "global":
            self.global_gids.add(gid)
            self.widest = max(self.widest, nbytes)
        runs = self.shifts.setdefault(gid, [])
        if runs and runs[-1][0] == k:
            runs[-1][1] += 1
        else:
            runs.append([k, 1])
