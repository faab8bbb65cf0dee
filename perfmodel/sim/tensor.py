"""Tensor-core warp matrix operations: ``wmma.load``, ``wmma.store`` and ``wmma.mma`` (PTX ISA, "Warp Level Matrix
Multiply-Accumulate Instructions"; CUDA's ``nvcuda::wmma`` API compiles to them).

A warp loads an M x K matrix A, a K x N matrix B and an M x N accumulator C as *fragments* spread over its 32
threads' registers, multiplies and accumulates ``D = A B + C``, and stores D. The PTX ISA leaves the distribution of
matrix elements over the threads unspecified and target dependent (CUDA's programming guide: "the mapping of
matrix elements into each thread's fragment is unspecified"), so correct code may only apply one element-wise
operation to every fragment element; the executor picks one distribution, the same for every instruction:

* lane ``l`` holds ``E = rows x cols / 32`` elements of the matrix enumerated along its memory layout's
  contiguous dimension (rows for ``.row``, columns for ``.col``) for A and B, whose ``wmma.mma`` names their
  layouts; and along rows for C and D, whose ``wmma.mma`` names no layout (a ``.col`` load or store of C / D
  therefore moves each lane's elements one at a time);
* a fragment with more register bits than its ``E`` elements (``.f16`` A and B: always 8 registers) holds them
  repeated, so an element-wise operation changes every copy alike.

A lane's elements come in pieces of 8 bytes (one element when wider), and piece ``c`` of lane ``l`` is elements
``c 32 Q + l Q .. + Q - 1`` (``Q`` elements a piece), so that the warp's ``c``-th access reads one contiguous
stretch of each row (column) it covers - the memory counters see requests, sectors and shared-memory wavefronts
like those of any coalesced 8-byte vector load or store (ncu on an H100 counts the same global requests and
sectors for cuda-samples' ``simple_wmma_gemm``: its SASS moves 8 bytes per thread per instruction); a load reads a repeated fragment's elements
once per copy, as the hardware fills every register (an H100's ncu counts twice the tile's sectors for an f16 A or B
load). ``D`` is computed from the operands' exact
values: products and sums in float64 (integers: in int64), rounded once to the accumulator type. The hardware's
accumulation order and intermediate precision are not documented; results can differ in the last bits.
``.tf32`` operands use their top 19 bits (the low 13 mantissa bits are ignored). Sub-byte (``.s4``/``.u4``) and
single-bit (``.b1``) fragments are not executed.
"""
from __future__ import annotations

import numpy as np

from perfmodel.ptx.ir import Addr, Vec
from perfmodel.sim.alu import Unsupported
from perfmodel.sim.memops import address_getter

SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16), "m16n16k8": (16, 16, 8),
          "m8n8k4": (8, 8, 4)}
ELEM_BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "f32": 4, "f64": 8, "s8": 1, "u8": 1, "s32": 4}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SPACES = ("global", "shared")


def matrix_dims(which: str, shape: str) -> tuple[int, int]:
    m, n, k = SHAPES[shape]
    return {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[which]


def flops_per_warp(ins) -> int:
    """2 M N K for a ``wmma.mma`` or an ``mma.sync`` (each of the M N K products is a multiply and an add),
    else 0."""
    if ins.opcode == "mma":
        from perfmodel.sim.mma_sync import mma_flops

        return mma_flops(ins)
    if ins.opcode != "wmma" or ins.mods[:1] != ("mma",):
        return 0
    shape = next((m for m in ins.mods if m in SHAPES), None)
    if shape is None:
        return 0
    m, n, k = SHAPES[shape]
    return 2 * m * n * k


def input_type(ins) -> str | None:
    """The A/B operand type of a ``wmma.mma`` (``f16`` when the instruction names only the D and C types) or an
    ``mma.sync`` (its .dtype.atype.btype.ctype)."""
    if ins.opcode == "mma":
        from perfmodel.sim.mma_sync import mma_parts

        parts = mma_parts(ins)
        return parts[1][1] if parts is not None and len(parts[1]) == 4 else None
    if ins.opcode != "wmma" or ins.mods[:1] != ("mma",):
        return None
    types = [m for m in ins.mods if m in ELEM_BYTES]
    if len(types) == 4:                 # .dtype.atype.btype.ctype
        return types[1]
    return "f16" if types and all(t in ("f16", "f32") for t in types) else None


def _parts(ins):
    mods = ins.mods
    shape = next((m for m in mods if m in SHAPES), None)
    if shape is None:
        raise Unsupported(f"wmma shape {'.'.join(mods)} (executed: {', '.join(SHAPES)})")
    return shape, mods


def _layout_of(mods) -> str:
    lay = [m for m in mods if m in ("row", "col")]
    if not lay:
        raise Unsupported("wmma without a .row / .col layout")
    return lay[0]


def _lane_elements(rows: int, cols: int) -> int:
    e, r = divmod(rows * cols, 32)
    if r:
        raise Unsupported(f"a {rows} x {cols} fragment")
    return e


def _check_warps(st, gid: int, what: str) -> None:
    """wmma is ``.sync.aligned``: every thread of each warp that executes it must execute it together."""
    m = st.mask
    if m is None:
        return
    full = np.broadcast_to(m, (m.shape[0], st.Tp)).reshape(m.shape[0], st.nw, 32)
    partial = full.any(axis=2) & ~full.all(axis=2)
    if partial.any():
        st.fault_where(np.repeat(partial, 32, axis=1),
                       f"{what} is a warp-wide instruction (.sync.aligned): part of a warp executed it, the other "
                       "threads of the warp did not (they diverged or exited); every thread of the warp must "
                       "execute it together", gid)


def _uniform_per_warp(st, gid: int, v: np.ndarray, what: str) -> None:
    if v.shape[1] == 1:
        return
    m = st.mask_full()
    rows = max(v.shape[0], m.shape[0])
    w = np.broadcast_to(v, (rows, st.Tp)).reshape(rows, st.nw, 32)
    mw = np.broadcast_to(m, (rows, st.Tp)).reshape(rows, st.nw, 32)
    first = np.take_along_axis(w, np.argmax(mw, axis=2)[..., None], axis=2)     # the warp's first active lane
    differ = (w != first) & mw
    if differ.any():
        st.fault_where(differ.reshape(rows, st.Tp),
                       f"{what} must be the same in every thread of the warp (wmma is .aligned); threads of one warp "
                       "gave different values", gid)


class _Fragment:
    """Where each lane's elements sit: per lane ``E`` elements at element offsets ``off[e]`` (lanes, E) from the
    warp's pointer, and how they pack into the instruction's registers."""

    def __init__(self, which, shape, etype, layout, nregs, reg_bytes):
        rows, cols = matrix_dims(which, shape)
        self.rows, self.cols, self.etype = rows, cols, etype
        self.esize = ELEM_BYTES[etype]
        self.E = E = _lane_elements(rows, cols)
        self.nregs, self.reg_bytes = nregs, reg_bytes
        slots, rem = divmod(nregs * reg_bytes, self.esize)
        if rem or slots % E:
            raise Unsupported(f"a {etype} fragment of {nregs} registers for a {rows} x {cols} matrix")
        self.slots = slots
        self.layout = layout
        # the element order: along rows (row-major) for A/B with .row and for C/D, along columns for A/B with .col;
        # lane l's slot e = c Q + j (c-th piece of Q elements, 8 bytes or one wider element) is element
        # c 32 Q + l Q + j of that order, so that each piece of the 32 lanes is one contiguous run of the order
        along_cols = which in ("a", "b") and layout == "col"
        self.Q = Q = min(E, max(1, 8 // self.esize))
        e = np.arange(E)
        idx = (e // Q * 32 * Q)[None, :] + np.arange(32)[:, None] * Q + (e % Q)[None, :]
        if along_cols:
            self.i, self.j = idx % rows, idx // rows
        else:
            self.i, self.j = idx // cols, idx % cols
        # a piece is contiguous in memory when the order follows the memory layout (Q divides the run's length)
        self.contiguous = (layout == "col") == along_cols and (rows if along_cols else cols) % Q == 0

    def default_stride(self) -> int:
        return self.cols if self.layout == "row" else self.rows


def _stride_getter(ins, ops, k: int):
    if len(ins.operands) > k:
        return ops.reader(ins.operands[k], "u32")
    return None


def _lane_index(st) -> np.ndarray:
    return st.special("%laneid").astype(np.int64).reshape(1, -1)


def _elements_from_words(words: list, esize: int) -> list:
    """uint32 word arrays -> uint{8 esize} element arrays, little-endian."""
    if esize == 4:
        return list(words)
    if esize == 8:
        return [(words[k].astype(np.uint64) | (words[k + 1].astype(np.uint64) << np.uint64(32)))
                for k in range(0, len(words), 2)]
    per = 4 // esize
    bits = 8 * esize
    dt = UINT[esize]
    return [((w >> np.uint32(bits * p)) & np.uint32((1 << bits) - 1)).astype(dt) for w in words for p in range(per)]


def _words_from_elements(elems: list, esize: int) -> list:
    if esize == 4:
        return [e.astype(np.uint32, copy=False) for e in elems]
    if esize == 8:
        out = []
        for e in elems:
            e = e.astype(np.uint64, copy=False)
            out += [(e & np.uint64(0xFFFFFFFF)).astype(np.uint32), (e >> np.uint64(32)).astype(np.uint32)]
        return out
    per = 4 // esize
    bits = 8 * esize
    out = []
    for k in range(0, len(elems), per):
        w = np.zeros(np.broadcast_shapes(*(x.shape for x in elems[k:k + per])), np.uint32)
        for p, x in enumerate(elems[k:k + per]):
            w = w | (x.astype(np.uint32) << np.uint32(bits * p))
        out.append(w)
    return out


def _registers_from_elements(frag: _Fragment, elems: list, reg_types: list) -> list:
    """The instruction's registers from the lane's E elements (repeated to fill every slot)."""
    slots = [elems[s % frag.E] for s in range(frag.slots)]
    if frag.reg_bytes == 8:
        return [s.view(np.float64) if t == "f64" else s for s, t in zip(slots, reg_types)]
    words = _words_from_elements(slots, frag.esize)
    return [w.view(np.float32) if t == "f32" else (w.view(np.int32) if t == "s32" else w)
            for w, t in zip(words, reg_types)]


def _elements_from_registers(frag: _Fragment, regs: list) -> list:
    if frag.reg_bytes == 8:
        elems = [r.view(np.uint64) for r in regs]
    else:
        elems = _elements_from_words([r.view(np.uint32) for r in regs], frag.esize)
    return elems[:frag.E]


def _reg_type(etype: str) -> tuple[str, int]:
    """(register read type, bytes) of a fragment's registers."""
    if etype == "f64":
        return "f64", 8
    if etype == "f32":
        return "f32", 4
    if etype == "s32":
        return "s32", 4
    return "b32", 4


def _access(st, gid, space, a, words, values=None):
    dt = np.dtype(np.uint32)
    return st.mem_access(gid, space, a, 4, words, dt, values)


def b_wmma(ins, ops):
    kind = ins.mods[0]
    if kind == "load":
        return _b_load(ins, ops)
    if kind == "store":
        return _b_store(ins, ops)
    if kind == "mma":
        return _b_mma(ins, ops)
    raise Unsupported(f"wmma.{kind}")


def _etype(ins):
    t = ins.type
    if t in ("s4", "u4", "b1") or t not in ELEM_BYTES:
        raise Unsupported(f"{t} fragments (executed: {', '.join(ELEM_BYTES)})")
    return t


def _space(mods) -> str:
    for m in mods:
        if m.split("::")[0] in SPACES:
            return m.split("::")[0]
    return "generic"


def _fragment_access(ins, ops, which, regs_at, addr_at, verb):
    """What a ``wmma.load`` / ``wmma.store`` needs: its fragment, register type, register operands and the address,
    stride and space getters. ``regs_at`` / ``addr_at``: the operand positions of the register vector and the
    address."""
    shape, mods = _parts(ins)
    etype = _etype(ins)
    regs = ins.operands[regs_at]
    if not isinstance(regs, Vec) or not isinstance(ins.operands[addr_at], Addr):
        order = "{registers}, [address]" if regs_at == 0 else "[address], {registers}"
        raise Unsupported(f"wmma.{verb} operands other than {order}")
    rtype, rbytes = _reg_type(etype)
    frag = _Fragment(which, shape, etype, _layout_of(mods), len(regs.items), rbytes)
    return frag, rtype, regs.items, address_getter(ins.operands[addr_at], ops), _stride_getter(ins, ops, 2), \
        _space(mods)


def _b_load(ins, ops):
    which = _parts(ins)[1][1]
    frag, rtype, dests, ga, gs, space = _fragment_access(ins, ops, which, 0, 1, "load")
    writers = [ops.writer(d) for d in dests]
    gid = ins.index
    what = f"wmma.load.{which}"
    reg_types = [rtype] * frag.nregs

    def load(st, fr):
        _check_warps(st, gid, what)
        base, stride = _pointer_and_stride(st, fr, ga, gs, frag, gid, what)
        elems = _move(st, gid, space, base, stride, frag, None)
        for w, v in zip(writers, _registers_from_elements(frag, elems, reg_types)):
            w(st, fr, v)
    return load


def _b_store(ins, ops):
    frag, rtype, srcs, ga, gs, space = _fragment_access(ins, ops, "d", 1, 0, "store")
    readers = [ops.reader(s, rtype) for s in srcs]
    gid = ins.index
    what = "wmma.store.d"

    def store(st, fr):
        _check_warps(st, gid, what)
        base, stride = _pointer_and_stride(st, fr, ga, gs, frag, gid, what)
        regs = [r(st, fr) for r in readers]
        _move(st, gid, space, base, stride, frag, _elements_from_registers(frag, regs))
    return store


def _pointer_and_stride(st, fr, ga, gs, frag, gid, what):
    base = ga(st, fr)
    _uniform_per_warp(st, gid, base, f"the pointer of {what}")
    if gs is None:
        stride = np.full((1, 1), frag.default_stride(), np.int64)
    else:
        stride = gs(st, fr).astype(np.int64)
        _uniform_per_warp(st, gid, stride, f"the stride of {what}")
    return base, stride


def _move(st, gid, space, base, stride, frag, elems):
    """Load (``elems`` None: returns the lane's E element arrays) or store ``elems``, through the memory counters."""
    lane = _lane_index(st)                                      # (1, Tp)
    esize = frag.esize
    E = frag.E
    # element offset of each lane's first element and of every element, per distinct stride
    i = frag.i[lane[0] % 32]                                    # (Tp, E)
    j = frag.j[lane[0] % 32]
    if frag.layout == "row":
        off = i[None] * stride[..., None] + j[None]             # (rows|1, Tp, E)
    else:
        off = i[None] + j[None] * stride[..., None]
    addr = base[..., None] + off * esize
    # a load fills every register slot from memory: a fragment holding its elements ``copies`` times (f16 A/B)
    # reads them that many times (ncu counts twice the sectors of the tile for an f16 A or B load on an H100)
    copies = frag.slots // E if elems is None else 1
    if frag.contiguous:
        Q = frag.Q
        words = []
        for copy in range(copies):
            for c in range(E // Q):
                a = addr[..., c * Q]
                n = Q * esize // 4
                if elems is None:
                    got = _access(st, gid, space, a, n)
                    if copy == 0:
                        words += got
                else:
                    piece = _words_from_elements(elems[c * Q:(c + 1) * Q], esize)
                    _access(st, gid, space, a, n, [np.asarray(x) for x in piece])
        return _elements_from_words(words, esize) if elems is None else None
    out = []
    dt = np.dtype(UINT[esize])
    for copy in range(copies):
        for e in range(E):
            a = addr[..., e]
            if elems is None:
                got = st.mem_access(gid, space, a, esize, 1, dt, None)
                if copy == 0:
                    out += got
            else:
                st.mem_access(gid, space, a, esize, 1, dt, [elems[e].astype(dt, copy=False)])
    return out if elems is None else None


# ---- D = A B + C -----------------------------------------------------------------------------------------------

def _values(elems: list, etype: str, rows: int, Tp: int) -> np.ndarray:
    """(rows, Tp, E) float64 / int64 values of a fragment's elements."""
    x = np.stack([np.broadcast_to(e, (rows, Tp)) for e in elems], axis=-1)
    if etype == "f16":
        return x.astype(np.uint16).view(np.float16).astype(np.float64)
    if etype == "bf16":
        return (x.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if etype == "tf32":
        return (x.astype(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    if etype == "f32":
        return x.astype(np.uint32).view(np.float32).astype(np.float64)
    if etype == "f64":
        return x.astype(np.uint64).view(np.float64)
    if etype == "s8":
        return x.astype(np.uint8).view(np.int8).astype(np.int64)
    if etype == "u8":
        return x.astype(np.uint8).astype(np.int64)
    if etype == "s32":
        return x.astype(np.uint32).view(np.int32).astype(np.int64)
    raise Unsupported(f"{etype} fragments")


def _matrix(vals: np.ndarray, frag: _Fragment, nw: int) -> np.ndarray:
    """(rows, Tp, E) lane values -> (rows, warps, R, C) matrices."""
    rows = vals.shape[0]
    flat = vals.reshape(rows, nw, 32 * frag.E)
    out = np.empty((rows, nw, frag.rows, frag.cols), vals.dtype)
    out[:, :, frag.i.reshape(-1), frag.j.reshape(-1)] = flat
    return out


def _lanes(mat: np.ndarray, frag: _Fragment) -> np.ndarray:
    rows, nw = mat.shape[:2]
    return mat[:, :, frag.i.reshape(-1), frag.j.reshape(-1)].reshape(rows, nw * 32, frag.E)


def _to_elements(d: np.ndarray, etype: str, satfinite: bool) -> list:
    """(rows, Tp, E) float64 / int64 results -> E uint element arrays of the accumulator type."""
    if etype == "f32":
        u = d.astype(np.float32).view(np.uint32)
    elif etype == "f16":
        from perfmodel.sim.numeric import to_f16
        u = to_f16(d).view(np.uint16)
    elif etype == "f64":
        u = d.view(np.uint64)
    else:                                                       # s32
        if satfinite:
            d = np.clip(d, -2 ** 31, 2 ** 31 - 1)
        u = (d & 0xFFFFFFFF).astype(np.uint32)
    return [u[..., e] for e in range(u.shape[-1])]


def _b_mma(ins, ops):
    shape, mods = _parts(ins)
    lays = [m for m in mods if m in ("row", "col")]
    if len(lays) != 2:
        raise Unsupported("wmma.mma without .alayout.blayout")
    types = [m for m in mods if m in ELEM_BYTES or m in ("s4", "u4", "b1")]
    if len(types) == 2:                                         # .dtype.ctype (f16 / f32 accumulators, f16 inputs)
        dtype, atype, btype, ctype = types[0], "f16", "f16", types[1]
    elif len(types) == 4:
        dtype, atype, btype, ctype = types
    else:
        raise Unsupported(f"wmma.mma types {'.'.join(types)}")
    for t in (atype, btype):
        if t not in ELEM_BYTES:
            raise Unsupported(f"{t} fragments (executed: f16, bf16, tf32, f64, s8, u8)")
    d, a, b, c = ins.operands
    if not all(isinstance(x, Vec) for x in (d, a, b, c)):
        raise Unsupported("wmma.mma operands other than four register vectors")
    fa = _Fragment("a", shape, atype, lays[0], len(a.items), _reg_type(atype)[1])
    fb = _Fragment("b", shape, btype, lays[1], len(b.items), _reg_type(btype)[1])
    fc = _Fragment("c", shape, ctype, "row", len(c.items), _reg_type(ctype)[1])
    fd = _Fragment("d", shape, dtype, "row", len(d.items), _reg_type(dtype)[1])
    ra = [ops.reader(x, _reg_type(atype)[0]) for x in a.items]
    rb = [ops.reader(x, _reg_type(btype)[0]) for x in b.items]
    rc = [ops.reader(x, _reg_type(ctype)[0]) for x in c.items]
    dtypes = [_reg_type(dtype)[0]] * len(d.items)
    writers = [ops.writer(x) for x in d.items]
    satfinite = "satfinite" in mods
    gid = ins.index
    if atype in ("s8", "u8") and dtype != "s32":
        raise Unsupported(f"wmma.mma with {atype} inputs and a {dtype} accumulator")

    def mma(st, fr):
        _check_warps(st, gid, "wmma.mma")
        ga, gb, gc = ([r(st, fr) for r in rs] for rs in (ra, rb, rc))
        rows = max(x.shape[0] for x in ga + gb + gc)
        rows = st.nB if rows != 1 or (st.mask is not None and st.mask.shape[0] != 1) else 1
        Tp, nw = st.Tp, st.nw
        A = _matrix(_values(_elements_from_registers(fa, ga), atype, rows, Tp), fa, nw)
        B = _matrix(_values(_elements_from_registers(fb, gb), btype, rows, Tp), fb, nw)
        C = _matrix(_values(_elements_from_registers(fc, gc), ctype, rows, Tp), fc, nw)
        D = np.matmul(A, B) + C
        out = _registers_from_elements(fd, _to_elements(_lanes(D, fd), dtype, satfinite), dtypes)
        for w, v in zip(writers, out):
            w(st, fr, v)
    return mma

