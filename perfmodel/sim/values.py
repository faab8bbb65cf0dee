"""Operand access for the executor: typed reads of registers, immediates, special registers and symbol
addresses, and masked register writes.

Every lane value is a 2-D numpy array ``(rows, lanes)`` with ``rows`` 1 (the same in every block of the batch)
or the number of blocks, and ``lanes`` 1 (the same in every thread) or the padded threads per block; values only
grow to the full shape when they vary that much, so uniform and per-thread arithmetic stays cheap.
"""
from __future__ import annotations

import numpy as np

from perfmodel.ptx.ir import TYPES, Addr, Imm, Reg, Special, Sym

DT = {t: np.dtype(d) for t, (d, _s) in TYPES.items()}
SIGNED = {"s8", "s16", "s32", "s64"}
FLOAT = {"f16", "f32", "f64"}


def const(value, dtype) -> np.ndarray:
    return np.full((1, 1), value, dtype=dtype)


def imm_array(imm: Imm, t: str) -> np.ndarray:
    dt = DT[t]
    if imm.is_float and imm.bits is not None:
        if dt.itemsize * 8 == imm.width:
            return np.array([[imm.bits]], dtype=np.uint32 if imm.width == 32 else np.uint64).view(dt)
        if dt.kind == "f":
            return const(imm.value, dt)
        return np.array([[imm.bits]], np.uint64).astype(dt)
    if dt.kind == "f":
        return const(float(imm.value), dt)
    if dt == np.bool_:
        return const(bool(imm.value), dt)
    bits = dt.itemsize * 8
    v = int(imm.value) & ((1 << bits) - 1)
    return np.array([[v]], dtype=np.dtype(f"u{dt.itemsize}")).view(dt)


def as_type(v: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Reinterpret (same width) or convert (other width: truncate / extend as the source's signedness says)."""
    if v.dtype == dt:
        return v
    if v.dtype.itemsize == dt.itemsize and v.dtype != np.bool_ and dt != np.bool_:
        return v.view(dt)
    if dt == np.bool_:
        return v != 0
    if v.dtype == np.bool_:
        return v.astype(dt)
    if v.dtype.kind == "f" or dt.kind == "f":
        # a float read through a wider/narrower integer type: go through the bits
        u = v.view(np.dtype(f"u{v.dtype.itemsize}"))
        return u.astype(np.dtype(f"u{dt.itemsize}")).view(dt) if dt.kind != "f" else \
            u.astype(np.dtype(f"u{dt.itemsize}")).view(dt)
    return v.astype(dt)


class Frame:
    """One function activation: its registers, and the .param storage of calls it makes or receives."""

    __slots__ = ("r", "params", "done", "carry")

    def __init__(self, nregs: int):
        self.r: list = [None] * nregs
        self.params: dict = {}
        self.done = None          # lanes that returned from this function
        self.carry = None         # the condition code's carry flag (CC.CF) of add.cc / addc ... per lane


class Operands:
    """Turns PTX operands of one function into getter closures ``g(st, fr) -> array``."""

    def __init__(self, func, symbols):
        self.func = func
        self.slots: dict[str, int] = {}
        for name in func.regs:
            self.slots[name] = len(self.slots)
        self.symbols = symbols          # name -> (space, address)

    def slot(self, reg: Reg) -> int:
        s = self.slots.get(reg.name)
        if s is None:
            s = self.slots[reg.name] = len(self.slots)
        return s

    @property
    def nregs(self) -> int:
        return len(self.slots)

    def reader(self, op, t: str):
        dt = DT[t]
        if isinstance(op, Reg):
            if op.name.startswith("!"):
                s = self.slot(Reg(op.name[1:]))

                def neg_pred(st, fr, s=s):
                    v = fr.r[s]
                    return ~v if v is not None else const(True, np.bool_)
                return neg_pred
            s = self.slot(op)

            def reg(st, fr, s=s, dt=dt):
                v = fr.r[s]
                if v is None:
                    return np.zeros((1, 1), dt)
                return v if v.dtype == dt else as_type(v, dt)
            return reg
        if isinstance(op, Imm):
            a = imm_array(op, t)
            return lambda st, fr, a=a: a
        if isinstance(op, Special):
            name = op.name
            if not _known_special(name):
                from perfmodel.sim.numeric import Unsupported

                raise Unsupported(f"the special register {name}")

            def special(st, fr, name=name, dt=dt):
                return as_type(st.special(name), dt)
            return special
        if isinstance(op, Sym):
            addr = self.symbols.address(op.name)
            a = imm_array(Imm(addr), t if dt.kind in "ui" else "u64")
            return lambda st, fr, a=a: a
        if isinstance(op, Addr):
            raise TypeError("an address operand where a value was expected")
        raise TypeError(f"unsupported operand {op!r}")

    def writer(self, op, t: str | None = None):
        """w(st, fr, value): masked write of a destination register (or nothing for the sink ``_``)."""
        if not isinstance(op, Reg):
            return lambda st, fr, v: None
        s = self.slot(op)

        def write(st, fr, v, s=s):
            m = st.mask
            old = fr.r[s]
            if m is None or old is None:
                fr.r[s] = v
            else:
                if old.dtype != v.dtype:
                    old = as_type(old, v.dtype)
                fr.r[s] = np.where(m, v, old)
        return write


_SPECIAL_BASES = ("tid", "ntid", "ctaid", "nctaid", "laneid", "warpid", "nwarpid", "lanemask_eq", "lanemask_lt",
                  "lanemask_le", "lanemask_gt", "lanemask_ge", "clock", "clock64", "globaltimer", "globaltimer_lo",
                  "clock_hi", "smid", "gridid", "is_explicit_cluster", "cluster_ctarank", "nsmid",
                  "dynamic_smem_size", "total_smem_size", "aggr_smem_size", "nclusterid", "cluster_nctaid",
                  "cluster_nctarank", "clusterid", "cluster_ctaid", "envreg1", "envreg2",
                  "reserved_smem_offset_begin", "reserved_smem_offset_end", "reserved_smem_offset_cap",
                  "reserved_smem_offset_0", "reserved_smem_offset_1")


def _known_special(name: str) -> bool:
    """Whether the executor gives special register ``name`` a value (perfmodel.sim.machine.State._make_special;
    %envreg1/2 only hold the grid-sync workspace of a kernel that synchronises the grid)."""
    return name[1:].partition(".")[0] in _SPECIAL_BASES
