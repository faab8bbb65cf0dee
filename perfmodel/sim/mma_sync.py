"""Warp-level matrix instructions with specified fragments: ``mma.sync``, ``ldmatrix`` and ``stmatrix`` (PTX ISA,
"Warp-level Matrix Multiply-Accumulate Instructions" and "Matrix Fragments for mma.m16n8k*"; what hand-written
tensor-core kernels - HGEMMs, flash attention - use through inline PTX).

Unlike ``wmma`` (perfmodel/sim/tensor.py, whose distribution the ISA leaves unspecified), these name every
element's thread: with ``g = laneid >> 2`` (groupID) and ``t = laneid % 4`` (threadID_in_group), element ``i`` of a
lane's fragment is the matrix element at ``(row, col)`` of the tables below, packed into 32-bit registers lowest
index in the lowest bits (``.f64``: one element per 64-bit register). Each layout here was checked on an H200
against numpy (validation/microbench/mma_sync.py, validation/mma_sync_h200.npz; tests/test_mma_sync.py):

* ``m16n8k16`` ``.f16``/``.bf16``: A (16 x 16) ``(g + 8 (i/2 % 2), 2t + i%2 + 8 (i/4))``, B (16 x 8)
  ``(2t + i%2 + 8 (i/2), g)``; ``m16n8k8`` ``.f16``/``.bf16``: A ``(g + 8 (i/2), 2t + i%2)``, B ``(2t + i, g)``;
* ``m16n8k8`` ``.tf32``: A ``(g + 8 (i%2), t + 4 (i/2))``, B ``(t + 4i, g)``; ``m16n8k4`` ``.tf32``: A ``(g + 8i, t)``,
  B ``(t, g)``;
* ``m16n8k32`` ``.s8``/``.u8``: A ``(g + 8 (i/4 % 2), 4t + i%4 + 16 (i/8))``, B ``(4t + i%4 + 16 (i/4), g)``;
* C and D of every 16 x 8 shape ``(g + 8 (i/2), 2t + i%2)`` (``.f32``/``.s32``: a register each; ``.f16``: two to a
  register); ``m8n8k4`` ``.f64``: A ``(g, t)``, B ``(t, g)``, C / D ``(g, 2t + i)``.

D is computed exactly (products and sums in float64, integers in int64) and rounded once to D's type, as
perfmodel/sim/tensor.py does for ``wmma.mma``; the hardware's internal order is not documented and can differ in
the last bit. ``.tf32`` operands use their top 19 bits. Other shapes and types (``m8n8k4`` ``.f16``, the
``.sp`` sparse forms, fp8, sub-byte and the ``m16n8k*`` ``.f64`` shapes) are refused by name.

``ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.b16``: lane ``8q + r`` (``q`` < the count) gives the address of row
``r`` of matrix ``q`` (16 bytes); lane ``l`` receives in its register ``q`` the elements ``(l/4, 2 (l%4))`` and
``(l/4, 2 (l%4) + 1)`` of matrix ``q`` (``.trans``: of its transpose). ``stmatrix`` is the same distribution, stored.
The rows move through the memory counters as 16-byte shared accesses of the lanes that give them (the same
bank-conflict rule as an ``LDS.128``: one 128-byte wavefront per 8 rows in distinct banks).
"""
from __future__ import annotations

import re

import numpy as np

from perfmodel.ptx.ir import Addr, Vec
from perfmodel.sim.alu import Unsupported
from perfmodel.sim.memops import address_getter
from perfmodel.sim.tensor import _check_warps

_SHAPE = re.compile(r"^m(\d+)n(\d+)k(\d+)$")
ESIZE = {"f16": 2, "bf16": 2, "tf32": 4, "f32": 4, "s32": 4, "f64": 8, "s8": 1, "u8": 1}


def _ab_layouts(shape: str, atype: str):
    """(A (row, col) of element i, B (row, col) of element i, A elements, B elements) as functions of (g, t, i)."""
    if atype in ("f16", "bf16") and shape == "m16n8k16":
        return ((lambda g, t, i: (g + 8 * (i // 2 % 2), 2 * t + i % 2 + 8 * (i // 4))),
                (lambda g, t, i: (2 * t + i % 2 + 8 * (i // 2), g)), 8, 4)
    if atype in ("f16", "bf16") and shape == "m16n8k8":
        return ((lambda g, t, i: (g + 8 * (i // 2), 2 * t + i % 2)), (lambda g, t, i: (2 * t + i, g)), 4, 2)
    if atype == "tf32" and shape == "m16n8k8":
        return ((lambda g, t, i: (g + 8 * (i % 2), t + 4 * (i // 2))), (lambda g, t, i: (t + 4 * i, g)), 4, 2)
    if atype == "tf32" and shape == "m16n8k4":
        return ((lambda g, t, i: (g + 8 * i, t)), (lambda g, t, i: (t, g)), 2, 1)
    if atype in ("s8", "u8") and shape == "m16n8k32":
        return ((lambda g, t, i: (g + 8 * (i // 4 % 2), 4 * t + i % 4 + 16 * (i // 8))),
                (lambda g, t, i: (4 * t + i % 4 + 16 * (i // 4), g)), 16, 8)
    if atype == "f64" and shape == "m8n8k4":
        return (lambda g, t, i: (g, t)), (lambda g, t, i: (t, g)), 1, 1
    raise Unsupported(f"mma.sync.{shape} with .{atype} operands (executed: m16n8k16 and m16n8k8 .f16/.bf16, "
                      "m16n8k8 and m16n8k4 .tf32, m16n8k32 .s8/.u8, m8n8k4 .f64)")


def _cd_layout(shape: str):
    if shape == "m8n8k4":
        return (lambda g, t, i: (g, 2 * t + i)), 2
    return (lambda g, t, i: (g + 8 * (i // 2), 2 * t + i % 2)), 4


def _index(layout, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(32, count) row and column of each lane's elements."""
    rows = np.zeros((32, count), np.int64)
    cols = np.zeros((32, count), np.int64)
    for lane in range(32):
        for i in range(count):
            rows[lane, i], cols[lane, i] = layout(lane >> 2, lane & 3, i)
    return rows, cols


class _Operand:
    """One fragment: its element type, its registers' read type, and where each lane's elements sit."""

    def __init__(self, etype: str, layout, count: int, nregs: int, what: str):
        self.etype, self.esize, self.count = etype, ESIZE[etype], count
        per = 1 if self.esize == 8 else 4 // self.esize
        if nregs * per != count:
            raise Unsupported(f"mma.sync {what} with {nregs} registers for {count} .{etype} elements")
        self.per = per
        self.rows, self.cols = _index(layout, count)
        self.rtype = "f64" if etype == "f64" else "b32"

    def values(self, regs: list, rows: int, Tp: int) -> np.ndarray:
        """(rows, Tp, count) float64 / int64 element values from the registers."""
        if self.esize == 8:
            return np.stack([np.broadcast_to(r, (rows, Tp)).astype(np.float64) for r in regs], axis=-1)
        words = [np.broadcast_to(np.asarray(r).view(np.uint32) if np.asarray(r).dtype.itemsize == 4
                                 else np.asarray(r).astype(np.uint32), (rows, Tp)) for r in regs]
        bits = 8 * self.esize
        mask = np.uint32((1 << bits) - 1) if bits < 32 else np.uint32(0xFFFFFFFF)
        elems = [(w >> np.uint32(bits * p)) & mask for w in words for p in range(self.per)]
        x = np.stack(elems, axis=-1)
        e = self.etype
        if e == "f16":
            return x.astype(np.uint16).view(np.float16).astype(np.float64)
        if e == "bf16":
            return (x << np.uint32(16)).view(np.float32).astype(np.float64)
        if e == "tf32":
            return (x & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
        if e == "f32":
            return x.view(np.float32).astype(np.float64)
        if e == "s8":
            return x.astype(np.uint8).view(np.int8).astype(np.int64)
        if e == "u8":
            return x.astype(np.int64)
        return x.view(np.int32).astype(np.int64)            # s32

    def registers(self, vals: np.ndarray, satfinite: bool) -> list:
        """The registers holding (rows, Tp, count) float64 / int64 results in this fragment's type."""
        e = self.etype
        if e == "f64":
            return [vals[..., i].astype(np.float64) for i in range(self.count)]
        if e == "f32":
            return [vals[..., i].astype(np.float32) for i in range(self.count)]
        if e == "s32":
            v = np.clip(vals, -2 ** 31, 2 ** 31 - 1) if satfinite else vals
            return [(v[..., i] & 0xFFFFFFFF).astype(np.uint32).view(np.int32) for i in range(self.count)]
        from perfmodel.sim.numeric import to_f16                   # f16 accumulator: two to a register

        h = to_f16(vals).view(np.uint16).astype(np.uint32)
        return [h[..., 2 * k] | (h[..., 2 * k + 1] << np.uint32(16)) for k in range(self.count // 2)]

    def matrix(self, vals: np.ndarray, nw: int, shape: tuple[int, int]) -> np.ndarray:
        rows = vals.shape[0]
        out = np.zeros((rows, nw, *shape), vals.dtype)
        out[:, :, self.rows, self.cols] = vals.reshape(rows, nw, 32, self.count)
        return out

    def lanes(self, mat: np.ndarray) -> np.ndarray:
        rows, nw = mat.shape[:2]
        return mat[:, :, self.rows, self.cols].reshape(rows, nw * 32, self.count)


def mma_parts(ins) -> tuple[str, list[str]] | None:
    """(shape, [D, A, B, C types]) of an ``mma.sync`` (None when it names no shape)."""
    shape = next((m for m in ins.mods if _SHAPE.match(m)), None)
    if shape is None:
        return None
    types = [m for m in ins.mods if m in ESIZE or m in ("e4m3", "e5m2", "s4", "u4", "b1")]
    return shape, types


def mma_flops(ins) -> int:
    """2 M N K of an ``mma.sync`` (0 without a shape)."""
    m = _SHAPE.match(next((x for x in ins.mods if _SHAPE.match(x)), "") or "")
    return 2 * int(m.group(1)) * int(m.group(2)) * int(m.group(3)) if m else 0


def b_mma(ins, ops):
    parts = mma_parts(ins)
    if parts is None or "sync" not in ins.mods:
        raise Unsupported(f"mma.{'.'.join(ins.mods)} (executed: mma.sync.aligned with a shape)")
    shape, types = parts
    if "sp" in ins.mods or any(m.startswith("sp::") for m in ins.mods):
        raise Unsupported("sparse mma (mma.sp)")
    if len(types) != 4:
        raise Unsupported(f"mma.sync types .{'.'.join(types)} (four expected: .dtype.atype.btype.ctype)")
    dtype, atype, btype, ctype = types
    if atype != btype and {atype, btype} != {"s8", "u8"}:
        raise Unsupported(f"mma.sync with .{atype} A and .{btype} B")
    if [m for m in ins.mods if m in ("row", "col")] != ["row", "col"]:
        raise Unsupported("mma.sync layouts other than .row.col")
    a_layout, b_layout, na, nb = _ab_layouts(shape, atype)
    if btype != atype:
        b_layout, nb = _ab_layouts(shape, btype)[1], _ab_layouts(shape, btype)[3]
    cd_layout, ncd = _cd_layout(shape)
    m, n, k = (int(x) for x in _SHAPE.match(shape).groups())
    d, a, b, c = ins.operands
    if not all(isinstance(x, Vec) for x in (d, a, b, c)):
        raise Unsupported("mma.sync operands other than four register vectors")
    fa = _Operand(atype, a_layout, na, len(a.items), "A")
    fb = _Operand(btype, b_layout, nb, len(b.items), "B")
    fc = _Operand(ctype, cd_layout, ncd, len(c.items), "C")
    fd = _Operand(dtype, cd_layout, ncd, len(d.items), "D")
    if (dtype in ("s32",)) != (atype in ("s8", "u8")):
        raise Unsupported(f"mma.sync with .{atype} inputs and a .{dtype} accumulator")
    ra = [ops.reader(x, fa.rtype) for x in a.items]
    rb = [ops.reader(x, fb.rtype) for x in b.items]
    rc = [ops.reader(x, "f64" if ctype == "f64" else ("f32" if ctype == "f32" else "b32")) for x in c.items]
    writers = [ops.writer(x) for x in d.items]
    satfinite = "satfinite" in ins.mods
    gid = ins.index

    def c_values(regs, rows, Tp):
        if ctype == "f32":
            return np.stack([np.broadcast_to(np.asarray(r, np.float32), (rows, Tp)).astype(np.float64) for r in regs],
                            axis=-1)
        return fc.values(regs, rows, Tp)

    def mma(st, fr):
        _check_warps(st, gid, "mma.sync")
        ga, gb, gc = ([r(st, fr) for r in rs] for rs in (ra, rb, rc))
        rows = max(np.shape(x)[0] if np.ndim(x) == 2 else 1 for x in ga + gb + gc)
        rows = st.nB if rows != 1 or (st.mask is not None and st.mask.shape[0] != 1) else 1
        Tp, nw = st.Tp, st.nw
        A = fa.matrix(fa.values(ga, rows, Tp), nw, (m, k))
        B = fb.matrix(fb.values(gb, rows, Tp), nw, (k, n))
        C = fc.matrix(c_values(gc, rows, Tp), nw, (m, n))
        D = np.matmul(A, B) + C
        for w, v in zip(writers, fd.registers(fd.lanes(D), satfinite)):
            w(st, fr, v)
    return mma


# ---- ldmatrix / stmatrix -----------------------------------------------------------------------------------------

def _matrix_parts(ins, verb: str) -> tuple[int, bool, str]:
    mods = ins.mods
    if "m8n8" not in mods or "b16" not in mods:
        raise Unsupported(f"{verb}.{'.'.join(mods)} (executed: {verb}.sync.aligned.m8n8.x1/x2/x4 .b16, "
                          "with or without .trans)")
    num = next((int(x[1:]) for x in mods if x in ("x1", "x2", "x4")), None)
    if num is None:
        raise Unsupported(f"{verb} without .x1, .x2 or .x4")
    space = "shared" if any(x.split("::")[0] == "shared" for x in mods) else "generic"
    return num, "trans" in mods, space


def _sources(num: int, trans: bool) -> tuple[np.ndarray, np.ndarray]:
    """(32, num, 2) lane that gives the row, and the 16-bit element of that row, of each half of each lane's
    registers: lane l's register q holds (l/4, 2 (l%4) + h) of matrix q, or of its transpose."""
    lane = np.arange(32)[:, None, None]
    q = np.arange(num)[None, :, None]
    h = np.arange(2)[None, None, :]
    r, c = lane // 4, 2 * (lane % 4) + h
    if trans:
        r, c = c, r
    return np.broadcast_to(8 * q + r, (32, num, 2)), np.broadcast_to(c, (32, num, 2))


def _rows(st, gid: int, space: str, a, num: int, words=None):
    """The 16-byte rows the lanes that name one move (lane 8q + r: row r of matrix q, q < num): a shared access of
    those lanes alone, loading (``words`` None: returns 4 uint32 arrays) or storing ``words``."""
    saved = st.mask
    giving = (np.arange(st.Tp) % 32 < 8 * num).reshape(1, -1)
    st.mask = giving if saved is None else (saved & giving)
    try:
        return st.mem_access(gid, space, a, 4, 4, np.dtype(np.uint32), words)
    finally:
        st.mask = saved


def b_ldmatrix(ins, ops):
    num, trans, space = _matrix_parts(ins, "ldmatrix")
    dests, addr = ins.operands[0], ins.operands[1]
    if not isinstance(dests, Vec) or len(dests.items) != num or not isinstance(addr, Addr):
        raise Unsupported(f"ldmatrix operands other than {{{num} registers}}, [address]")
    ga = address_getter(addr, ops)
    writers = [ops.writer(x) for x in dests.items]
    src_lane, src_elem = _sources(num, trans)
    gid = ins.index

    def ldmatrix(st, fr):
        _check_warps(st, gid, "ldmatrix")
        words = _rows(st, gid, space, ga(st, fr), num)
        rows = max(w.shape[0] for w in words)
        halves = np.stack([np.broadcast_to(w, (rows, st.Tp)) for w in words], axis=-1).view(np.uint16)
        halves = halves.reshape(rows, st.nw, 32, 8)
        got = halves[:, :, src_lane, src_elem].astype(np.uint32)           # (rows, nw, 32, num, 2)
        regs = (got[..., 0] | (got[..., 1] << np.uint32(16))).reshape(rows, st.Tp, num)
        for q, w in enumerate(writers):
            w(st, fr, regs[..., q])
    return ldmatrix


def b_stmatrix(ins, ops):
    num, trans, space = _matrix_parts(ins, "stmatrix")
    addr, srcs = ins.operands[0], ins.operands[1]
    if not isinstance(srcs, Vec) or len(srcs.items) != num or not isinstance(addr, Addr):
        raise Unsupported(f"stmatrix operands other than [address], {{{num} registers}}")
    ga = address_getter(addr, ops)
    readers = [ops.reader(x, "b32") for x in srcs.items]
    src_lane, src_elem = _sources(num, trans)
    # the inverse map: row-giving lane p = 8q + r, element c of that row <- (lane, q, h) of the registers
    lane_of = np.zeros((32, 8), np.int64)
    reg_of = np.zeros((32, 8), np.int64)
    half_of = np.zeros((32, 8), np.int64)
    for lane in range(32):
        for q in range(num):
            for h in range(2):
                p, c = src_lane[lane, q, h], src_elem[lane, q, h]
                lane_of[p, c], reg_of[p, c], half_of[p, c] = lane, q, h
    gid = ins.index

    def stmatrix(st, fr):
        _check_warps(st, gid, "stmatrix")
        a = ga(st, fr)
        vals = [np.asarray(r(st, fr)) for r in readers]
        rows = max(v.shape[0] if v.ndim == 2 else 1 for v in vals)
        rows = st.nB if st.mask is not None and st.mask.shape[0] != 1 else rows
        regs = np.stack([np.broadcast_to(v.astype(np.uint32), (rows, st.Tp)) for v in vals], axis=-1)
        halves = regs.reshape(rows, st.nw, 32, num, 1).view(np.uint16)     # (rows, nw, 32, num, 2)
        row_halves = halves[:, :, lane_of, reg_of, half_of]                # (rows, nw, 32, 8)
        words = row_halves.reshape(rows, st.nw, 32, 4, 2).astype(np.uint32)
        words = (words[..., 0] | (words[..., 1] << np.uint32(16))).reshape(rows, st.Tp, 4)
        _rows(st, gid, space, a, num, [words[..., j] for j in range(4)])
    return stmatrix
