"""Bit instructions: logic, shifts, population count, leading zeros, bit find/reverse, bit-field extract and
insert, byte permute, funnel shift (PTX ISA semantics)."""
from __future__ import annotations

import numpy as np

from perfmodel.ptx.ir import TYPES
from perfmodel.sim.alu import builder
from perfmodel.sim.numeric import Unsupported, _udt, elementwise
from perfmodel.sim.values import DT, SIGNED


# ---- bits ------------------------------------------------------------------------------------------------------

@builder("and", "or", "xor")
def b_logic(ins, ops):
    fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[ins.opcode]
    return elementwise(ins, ops, fn, ins.type)


@builder("lop3")
def b_lop3(ins, ops):
    """``lop3.b32 d, a, b, c, immLut``: any logical function of three inputs, bit by bit. The PTX ISA defines
    immLut as the function applied to 0xF0, 0xCC and 0xAA (a, b, c), so bit i of immLut is the result for
    a = bit 2 of i, b = bit 1, c = bit 0: d is the OR of the minterms whose immLut bit is set. The ``.and``/
    ``.or`` form (a predicate result combined with a predicate operand, PTX 8.2) is not run."""
    if len(ins.operands) != 5 or any(m in ("and", "or") for m in ins.mods):
        raise Unsupported("lop3 with a predicate result (lop3.and / lop3.or)")
    t = ins.type
    ga, gb, gc = (ops.reader(ins.operands[k], t) for k in (1, 2, 3))
    glut = ops.reader(ins.operands[4], "u32")
    w = ops.writer(ins.operands[0])
    udt = _udt(t)

    def lop3(st, fr):
        a, b, c = (g(st, fr).view(udt) for g in (ga, gb, gc))
        lut = np.asarray(glut(st, fr)) & 0xFF
        terms = ((~a, ~b, ~c), (~a, ~b, c), (~a, b, ~c), (~a, b, c), (a, ~b, ~c), (a, ~b, c), (a, b, ~c), (a, b, c))
        d = np.zeros(np.broadcast(a, b, c).shape, udt)
        for i, (x, y, z) in enumerate(terms):
            on = (lut >> i) & 1
            if np.any(on):
                d |= np.where(on != 0, x & y & z, udt.type(0)).astype(udt)
        w(st, fr, d.view(DT[t]))
    return lop3


@builder("not")
def b_not(ins, ops):
    return elementwise(ins, ops, np.invert, ins.type)


@builder("cnot")
def b_cnot(ins, ops):
    t = ins.type
    return elementwise(ins, ops, lambda a: (a == 0).astype(DT[t]), t)


@builder("shl")
def b_shl(ins, ops):
    t = ins.type
    bits = TYPES[t][1] * 8
    ga = ops.reader(ins.operands[1], t)
    gb = ops.reader(ins.operands[2], "u32")
    w = ops.writer(ins.operands[0])
    udt = _udt(t)

    def shl(st, fr):
        a, b = ga(st, fr), gb(st, fr)
        r = np.left_shift(a.view(udt), np.minimum(b, bits - 1).astype(udt))
        r = np.where(b >= bits, udt.type(0), r) if (b >= bits).any() else r
        w(st, fr, r.view(DT[t]))
    return shl


@builder("shr")
def b_shr(ins, ops):
    t = ins.type
    bits = TYPES[t][1] * 8
    ga = ops.reader(ins.operands[1], t)
    gb = ops.reader(ins.operands[2], "u32")
    w = ops.writer(ins.operands[0])
    signed = t in SIGNED
    dt = DT[t]

    def shr(st, fr):
        a, b = ga(st, fr), gb(st, fr)
        if signed:
            r = np.right_shift(a, np.minimum(b, bits - 1).astype(dt))
        else:
            r = np.right_shift(a, np.minimum(b, bits - 1).astype(dt))
            if (b >= bits).any():
                r = np.where(b >= bits, dt.type(0), r)
        w(st, fr, r.astype(dt, copy=False))
    return shr


def _popc(u: np.ndarray) -> np.ndarray:
    u = u.astype(np.uint64)
    c = np.zeros(u.shape, np.uint32)
    for sh in range(0, 64, 8):
        c += _POPC8[((u >> np.uint64(sh)) & np.uint64(0xFF)).astype(np.intp)]
    return c


_POPC8 = np.array([bin(i).count("1") for i in range(256)], np.uint32)


@builder("popc")
def b_popc(ins, ops):
    t = ins.type
    return elementwise(ins, ops, lambda a: _popc(a.view(_udt(t))), t, dst_t="u32")


def _clz(u: np.ndarray, bits: int) -> np.ndarray:
    u = u.astype(np.uint64)
    n = np.zeros(u.shape, np.uint32)
    x = u.copy()
    for sh in (32, 16, 8, 4, 2, 1):
        if sh >= bits:
            continue
        top = x >> np.uint64(bits - sh)
        z = top == 0
        n += np.where(z, sh, 0).astype(np.uint32)
        x = np.where(z, x << np.uint64(sh), x) & np.uint64((1 << bits) - 1)
    n += (x >> np.uint64(bits - 1) == 0).astype(np.uint32)
    return n


@builder("clz")
def b_clz(ins, ops):
    t = ins.type
    bits = TYPES[t][1] * 8
    return elementwise(ins, ops, lambda a: _clz(a.view(_udt(t)), bits), t, dst_t="u32")


@builder("bfind")
def b_bfind(ins, ops):
    t = ins.type
    bits = TYPES[t][1] * 8
    shiftamt = ins.has("shiftamt")

    def bfind(a):
        u = a.view(_udt(t)).astype(np.uint64)
        if t in SIGNED:
            u = np.where(a < 0, ~u & np.uint64((1 << bits) - 1), u)
        pos = (bits - 1 - _clz(u, bits).astype(np.int64))
        res = np.where(u == 0, -1, (bits - 1 - pos) if shiftamt else pos)
        return (res & 0xFFFFFFFF).astype(np.uint32)
    return elementwise(ins, ops, bfind, t, dst_t="u32")


@builder("brev")
def b_brev(ins, ops):
    t = ins.type
    bits = TYPES[t][1] * 8

    def brev(a):
        u = a.view(_udt(t)).astype(np.uint64)
        r = np.zeros(u.shape, np.uint64)
        for i in range(bits):
            r |= ((u >> np.uint64(i)) & np.uint64(1)) << np.uint64(bits - 1 - i)
        return r.astype(_udt(t)).view(DT[t])
    return elementwise(ins, ops, brev, t)


@builder("bfe")
def b_bfe(ins, ops):
    t = ins.type
    bits = TYPES[t][1] * 8
    ga = ops.reader(ins.operands[1], t)
    gb, gc = ops.reader(ins.operands[2], "u32"), ops.reader(ins.operands[3], "u32")
    w = ops.writer(ins.operands[0])
    signed = t in SIGNED

    def bfe(st, fr):
        # PTX ISA: d[i] = (i < len && pos + i <= msb) ? a[pos + i] : sbit, sbit = signed && len ? a[min(pos+len-1,
        # msb)] : 0, with pos and len the low bytes of b and c (both may exceed the width)
        a = ga(st, fr).view(_udt(t)).astype(np.uint64)
        pos = (gb(st, fr) & 0xFF).astype(np.int64)
        ln = (gc(st, fr) & 0xFF).astype(np.int64)
        n = np.clip(np.minimum(ln, bits - pos), 0, bits)                    # bits taken from a
        shifted = np.where(pos >= bits, np.uint64(0), a >> np.minimum(pos, bits - 1).astype(np.uint64))
        mask_n = np.where(n >= 64, ~np.uint64(0), (np.uint64(1) << np.minimum(n, 63).astype(np.uint64)) - np.uint64(1))
        field = shifted & mask_n
        if signed:
            sbit_pos = np.minimum(pos + ln - 1, bits - 1).astype(np.uint64)
            sbit = np.where(ln == 0, np.uint64(0), (a >> sbit_pos) & np.uint64(1))
            width = ~np.uint64(0) if bits == 64 else np.uint64((1 << bits) - 1)
            field = field | np.where(sbit == 1, ~mask_n & width, np.uint64(0))
        w(st, fr, field.astype(_udt(t)).view(DT[t]))
    return bfe


@builder("bfi")
def b_bfi(ins, ops):
    t = ins.type
    bits = TYPES[t][1] * 8
    ga, gb = ops.reader(ins.operands[1], t), ops.reader(ins.operands[2], t)
    gc, gd = ops.reader(ins.operands[3], "u32"), ops.reader(ins.operands[4], "u32")
    w = ops.writer(ins.operands[0])

    def bfi(st, fr):
        a = ga(st, fr).view(_udt(t)).astype(np.uint64)
        b = gb(st, fr).view(_udt(t)).astype(np.uint64)
        pos = np.minimum(gc(st, fr) & 0xFF, bits).astype(np.uint64)
        ln = np.minimum(gd(st, fr) & 0xFF, bits).astype(np.uint64)
        m = np.where(ln >= 64, ~np.uint64(0), (np.uint64(1) << ln) - np.uint64(1))
        m = np.where(pos >= bits, np.uint64(0), m << np.minimum(pos, 63))
        m &= np.uint64((1 << bits) - 1) if bits < 64 else ~np.uint64(0)
        w(st, fr, ((b & ~m) | ((a << np.minimum(pos, 63)) & m)).astype(_udt(t)).view(DT[t]))
    return bfi


@builder("prmt")
def b_prmt(ins, ops):
    mode = next((m for m in ins.mods if m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")), None)
    ga, gb, gc = (ops.reader(o, "b32") for o in ins.operands[1:4])
    w = ops.writer(ins.operands[0])

    def prmt(st, fr):
        a = ga(st, fr).astype(np.uint64)
        b = gb(st, fr).astype(np.uint64)
        c = gc(st, fr).astype(np.uint64)
        src = a | (b << np.uint64(32))          # bytes 0..7
        out = np.zeros(np.broadcast_shapes(a.shape, b.shape, c.shape), np.uint64)
        if mode is None:
            for i in range(4):
                sel = (c >> np.uint64(4 * i)) & np.uint64(0xF)
                idx = sel & np.uint64(7)
                byte = (src >> (idx * np.uint64(8))) & np.uint64(0xFF)
                sign = (byte >> np.uint64(7)) & np.uint64(1)
                byte = np.where((sel & np.uint64(8)) != 0, np.where(sign == 1, np.uint64(0xFF), np.uint64(0)), byte)
                out |= byte << np.uint64(8 * i)
        else:
            # the special modes take the low two bits of c as n and pick source bytes per result byte i
            # (PTX ISA prmt table): f4e n+i, b4e n-i (mod 8), rc8 n, ecl max(i, n), ecr min(i, n),
            # rc16 2*(n&1) + (i&1)
            n = (c & np.uint64(3)).astype(np.int64)
            for i in range(4):
                if mode == "f4e":
                    idx = (n + i) & 7
                elif mode == "b4e":
                    idx = (n - i) & 7
                elif mode == "rc8":
                    idx = n
                elif mode == "ecl":
                    idx = np.maximum(n, i)
                elif mode == "ecr":
                    idx = np.minimum(n, i)
                else:
                    idx = 2 * (n & 1) + (i & 1)
                byte = (src >> (idx.astype(np.uint64) * np.uint64(8))) & np.uint64(0xFF)
                out |= byte << np.uint64(8 * i)
        w(st, fr, out.astype(np.uint32))
    return prmt


@builder("shf")
def b_shf(ins, ops):
    left = ins.has("l")
    clamp = ins.has("clamp")
    ga, gb, gc = ops.reader(ins.operands[1], "b32"), ops.reader(ins.operands[2], "b32"), \
        ops.reader(ins.operands[3], "u32")
    w = ops.writer(ins.operands[0])

    def shf(st, fr):
        a, b, c = ga(st, fr).astype(np.uint64), gb(st, fr).astype(np.uint64), gc(st, fr).astype(np.uint64)
        n = np.minimum(c, np.uint64(32)) if clamp else (c & np.uint64(31))
        x = (b << np.uint64(32)) | a
        r = (x << n) >> np.uint64(32) if left else (x >> n)
        w(st, fr, (r & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    return shf


def _lanes(x, width: int, count: int, signed: bool) -> list:
    """``count`` lanes of ``width`` bits of a 32-bit value, low first, sign-extended when ``signed``."""
    x = x.astype(np.int64) & 0xFFFFFFFF
    mask, top = (1 << width) - 1, 1 << (width - 1)
    out = [(x >> (width * k)) & mask for k in range(count)]
    return [np.where(v >= top, v - (1 << width), v) for v in out] if signed else out


@builder("vabsdiff4", "vabsdiff2")
def b_vabsdiff(ins, ops):
    """``vabsdiff4.dtype.atype.btype{.add|.sat} d, a, b, c`` (PTX ISA, "SIMD video instructions"): the absolute
    differences of the four byte lanes of a and b (signed bytes for .s32 sources). With ``.add`` d = their sum + c
    (the sum of absolute differences, SAD); without, d's byte i = |a_i - b_i| (``.sat`` clamps it to the byte's
    range, otherwise its low 8 bits). ``vabsdiff2`` is the same on two 16-bit halves. Byte selectors and masks on
    the operands are not supported."""
    from perfmodel.ptx.ir import Imm, Reg

    if len(ins.types) != 3 or any(t not in ("u32", "s32") for t in ins.types) or len(ins.operands) != 4 or not all(
            isinstance(o, (Reg, Imm)) for o in ins.operands):
        raise Unsupported(f"{ins.opcode} with lane selectors or masks ({ins.text.strip()})")
    width, count = (8, 4) if ins.opcode == "vabsdiff4" else (16, 2)
    dst_t, a_t, b_t = ins.types
    add, sat = ins.has("add"), ins.has("sat")
    ga, gb, gc = (ops.reader(o, "u32") for o in ins.operands[1:])
    w = ops.writer(ins.operands[0])
    lane_mask = (1 << width) - 1
    top = (1 << (width - 1)) - 1 if dst_t == "s32" else lane_mask

    def vabsdiff(st, fr):
        a = _lanes(ga(st, fr), width, count, a_t == "s32")
        b = _lanes(gb(st, fr), width, count, b_t == "s32")
        diffs = [np.abs(x - y) for x, y in zip(a, b)]
        if add:
            r = sum(diffs) + gc(st, fr).astype(np.int64)
        else:
            r = sum((np.minimum(d, top) if sat else (d & lane_mask)) << (width * k) for k, d in enumerate(diffs))
        w(st, fr, (r & 0xFFFFFFFF).astype(np.uint32).view(np.int32) if dst_t == "s32" else
          (r & 0xFFFFFFFF).astype(np.uint32))
    return vabsdiff


@builder("dp4a", "dp2a")
def b_dot_product(ins, ops):
    """``dp4a.atype.btype d, a, b, c`` = c + the sum of a's four bytes times b's (PTX ISA, "Integer Arithmetic
    Instructions: dp4a"); ``dp2a.{lo,hi}.atype.btype``: a's two 16-bit halves times b's bytes 0-1 (.lo) or 2-3 (.hi).
    Each lane is sign-extended when its type is .s32; d wraps modulo 2^32 (s32 when either type is)."""
    a_t, b_t = ins.types
    two = ins.opcode == "dp2a"
    hi = ins.has("hi")
    ga, gb, gc = (ops.reader(o, "u32") for o in ins.operands[1:])
    w = ops.writer(ins.operands[0])
    signed_out = "s32" in (a_t, b_t)

    def dot(st, fr):
        a = _lanes(ga(st, fr), 16 if two else 8, 2 if two else 4, a_t == "s32")
        b = _lanes(gb(st, fr), 8, 4, b_t == "s32")
        if two:
            b = b[2:] if hi else b[:2]
        r = (gc(st, fr).astype(np.int64) + sum(x * y for x, y in zip(a, b))) & 0xFFFFFFFF
        r = r.astype(np.uint32)
        w(st, fr, r.view(np.int32) if signed_out else r)
    return dot


@builder("bmsk")
def b_bmsk(ins, ops):
    """``bmsk.{clamp,wrap}.b32 d, a, b``: a mask of b one bits starting at bit a (PTX ISA, "Integer Arithmetic
    Instructions: bmsk"); .wrap takes a and b modulo 32, .clamp limits them to 32 (a start of 32 gives 0)."""
    wrap = ins.has("wrap")
    ga, gb = ops.reader(ins.operands[1], "u32"), ops.reader(ins.operands[2], "u32")
    w = ops.writer(ins.operands[0])

    def bmsk(st, fr):
        a, b = ga(st, fr).astype(np.int64), gb(st, fr).astype(np.int64)
        a, b = (a & 31, b & 31) if wrap else (np.minimum(a, 32), np.minimum(b, 32))
        w(st, fr, ((((np.int64(1) << b) - 1) << a) & 0xFFFFFFFF).astype(np.uint32))
    return bmsk


_VIDEO_SCALAR = ("vadd", "vsub", "vabsdiff", "vmin", "vmax", "vshl", "vshr")


@builder(*_VIDEO_SCALAR)
def b_video(ins, ops):
    """The scalar video instructions (PTX ISA, "Scalar Video Instructions"): ``vop.dtype.atype.btype{.sat}{.op2}
    d, a, b{, c}`` for vadd, vsub, vabsdiff, vmin, vmax, and ``vshl``/``vshr.dtype.atype.u32{.sat}.{clamp,wrap}``
    (ccminer's jh512: ``vshl.u32.u32.u32.clamp.add``). As the ISA's pseudo-code: a and b are sign- or zero-extended
    by their types; the shift count is b clamped to 32 (.clamp) or b mod 32 (.wrap), vshr shifting a signed a
    arithmetically; the exact result is clamped to d's range (.sat) and then combined with c (.add, .min, .max,
    compared signed for a .s32 d); d is its low 32 bits. Two forms differ on the GPU (an H200, every form against
    tests/data/video_scalar.cu's 1,024 inputs: validation/video_scalar_h200.npz): with .add nothing saturates,
    and a saturating vshl is refused. Sub-word selectors (``a.b0``, ``d.h1``) are not run."""
    from perfmodel.ptx.ir import Imm, Reg

    op = ins.opcode
    shift = op in ("vshl", "vshr")
    if len(ins.types) != 3 or any(t not in ("u32", "s32") for t in ins.types) or not all(
            isinstance(o, (Reg, Imm)) for o in ins.operands) or len(ins.operands) not in (3, 4):
        raise Unsupported(f"{op} with sub-word selectors or other types ({ins.text.strip()})")
    dst_t, a_t, b_t = ins.types
    op2 = next((m for m in ins.mods if m in ("add", "min", "max")), None)
    if (op2 is None) != (len(ins.operands) == 3):
        raise Unsupported(f"{op} merging c without .add, .min or .max ({ins.text.strip()})")
    sat, clamp = ins.has("sat"), ins.has("clamp")
    if shift and not (clamp or ins.has("wrap")):
        raise Unsupported(f"{op} without .clamp or .wrap ({ins.text.strip()})")
    if shift and sat and not (op == "vshr" and dst_t == a_t):
        # measured (validation/video_scalar_h200.npz): the GPU's vshl.u32.s32.u32.sat.clamp follows no rule
        # found (some overflowing shifts give 0xFFFFFFFF, others their low 32 bits); a vshr within one type
        # cannot leave its range, so its .sat changes nothing
        raise Unsupported(f"a saturating {op} ({ins.text.strip()}): the GPU's result differs from the PTX ISA's "
                          "pseudo-code, measured, and was not modelled")
    # measured: with .add the GPU does not saturate (the sum wraps; "saturation cannot be used with the secondary
    # accumulate operation", as the ISA says of the SIMD forms)
    sat = sat and op2 != "add"
    ga, gb = ops.reader(ins.operands[1], a_t), ops.reader(ins.operands[2], b_t)
    gc = ops.reader(ins.operands[3], dst_t) if op2 else None
    w = ops.writer(ins.operands[0])
    lo, hi = (-(1 << 31), (1 << 31) - 1) if dst_t == "s32" else (0, (1 << 32) - 1)

    def video(st, fr):
        # Python integers (object arrays) keep a shift of up to 32 bits of a 33-bit value exact
        a = np.asarray(ga(st, fr)).astype(np.int64).astype(object)
        b = np.asarray(gb(st, fr)).astype(np.int64).astype(object)
        if op == "vadd":
            t = a + b
        elif op == "vsub":
            t = a - b
        elif op == "vabsdiff":
            t = abs(a - b)
        elif op == "vmin":
            t = np.minimum(a, b)
        elif op == "vmax":
            t = np.maximum(a, b)
        else:
            n = np.minimum(b, 32) if clamp else b & 31
            t = a << n if op == "vshl" else a >> n
        if sat:
            t = np.minimum(np.maximum(t, lo), hi)
        if op2 is not None:
            c = np.asarray(gc(st, fr)).astype(np.int64).astype(object)
            t = t + c if op2 == "add" else (np.minimum(t, c) if op2 == "min" else np.maximum(t, c))
        r = np.asarray(t & 0xFFFFFFFF, dtype=object).astype(np.uint64).astype(np.uint32)
        w(st, fr, r.view(np.int32) if dst_t == "s32" else r)
    return video
