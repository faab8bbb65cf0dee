"""Arithmetic, logic, comparison, conversion and move instructions: one small builder per PTX opcode, each
returning a closure ``fn(st, fr)`` over numpy lanes (semantics per the PTX ISA; exceptions in docs/semantics.md).

The builders share one shape: read the source operands with their instruction type, compute with numpy on the
broadcast lane arrays, and write the destination through the mask (:mod:`perfmodel.sim.values`).
"""
from __future__ import annotations

import numpy as np

from perfmodel.ptx.ir import TYPES, Imm, PredPair, Reg, Sink, Vec
from perfmodel.sim.values import DT, SIGNED, as_type

BUILDERS: dict = {}

# flops per thread by opcode (ncu counts FADD/FMUL as 1 and FFMA as 2; divisions and transcendentals go to
# the SFU / multi-instruction sequences and count as one "special" operation here)
FP_KIND = {"add": "add", "sub": "add", "mul": "mul", "fma": "fma", "mad": "fma", "div": "div", "rcp": "special",
           "sqrt": "special", "rsqrt": "special", "ex2": "special", "lg2": "special", "sin": "special",
           "cos": "special", "tanh": "special"}


def builder(*names):
    def deco(fn):
        for n in names:
            BUILDERS[n] = fn
        return fn
    return deco


class Unsupported(Exception):
    pass


# ---- type helpers ----------------------------------------------------------------------------------------------

def _udt(t):
    return np.dtype(f"u{TYPES[t][1]}")


def _sdt(t):
    return np.dtype(f"i{TYPES[t][1]}")


def bf16_to_f32(u: np.ndarray) -> np.ndarray:
    return (u.astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    u = np.asarray(x, np.float32).view(np.uint32)
    r = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    r = np.where(np.isnan(np.asarray(x, np.float32)), np.uint32(0x7FFF), r)     # the canonical NaN (cuda_bf16.hpp)
    return r.astype(np.uint16)


def to_f16(x) -> np.ndarray:
    """float32/float64 -> float16 rounded once to nearest even; NaN becomes the GPU's canonical NaN 0x7FFF (what
    cvt.rn.f16.f32 and cuda_fp16.hpp's __internal_float2half give; numpy would keep the sign and payload)."""
    x = np.asarray(x)
    h = x.astype(np.float16)
    nan = np.isnan(x)
    if nan.any():
        h = np.where(nan, np.uint16(0x7FFF).view(np.float16), h)
    return h


def split_x2(u: np.ndarray, t: str):
    """A packed .f16x2 / .bf16x2 register as two float32 arrays (low half first)."""
    u = as_type(u, np.dtype(np.uint32))
    lo = (u & np.uint32(0xFFFF)).astype(np.uint16)
    hi = (u >> np.uint32(16)).astype(np.uint16)
    if t == "f16x2":
        return lo.view(np.float16).astype(np.float32), hi.view(np.float16).astype(np.float32)
    return bf16_to_f32(lo), bf16_to_f32(hi)


def pack_x2(lo: np.ndarray, hi: np.ndarray, t: str) -> np.ndarray:
    if t == "f16x2":      # float32 or float64 halves, each rounded once to f16
        lo16 = to_f16(lo).view(np.uint16)
        hi16 = to_f16(hi).view(np.uint16)
    else:
        lo16, hi16 = f32_to_bf16(lo), f32_to_bf16(hi)
    return lo16.astype(np.uint32) | (hi16.astype(np.uint32) << np.uint32(16))


def _floaty(t):
    return t in ("f16", "f32", "f64", "bf16", "f16x2", "bf16x2")


def _lift(fn, t):
    """Apply a float32-domain function to .f16/.bf16/x2 values; plain types pass through."""
    if t == "bf16":
        return lambda *a: f32_to_bf16(fn(*[bf16_to_f32(x) for x in a]))
    if t in ("f16x2", "bf16x2"):
        def x2(*a):
            parts = [split_x2(x, t) for x in a]
            lo = fn(*[p[0] for p in parts])
            hi = fn(*[p[1] for p in parts])
            return pack_x2(lo, hi, t)
        return x2
    return fn


def _sat(x, t):
    if t in ("f32", "f64", "f16", "bf16"):
        return np.where(np.isnan(x), 0, np.clip(x, 0, 1)).astype(x.dtype)
    return x


def elementwise(ins, ops, fn, t, nsrc=None, dst_t=None):
    """d = fn(*srcs) with every source read as type t."""
    srcs = ins.operands[1:] if nsrc is None else ins.operands[1:1 + nsrc]
    getters = [ops.reader(o, t) for o in srcs]
    w = ops.writer(ins.operands[0])
    f = _lift(fn, t)
    if ins.has("sat") and t in ("f32", "f64", "f16"):
        inner = f
        f = lambda *a: _sat(inner(*a), t)   # noqa: E731
    dst_dt = DT[dst_t] if dst_t else None
    if len(getters) == 1:
        g0, = getters

        def run1(st, fr):
            v = f(g0(st, fr))
            w(st, fr, v if dst_dt is None else v.astype(dst_dt, copy=False))
        return run1
    if len(getters) == 2:
        g0, g1 = getters

        def run2(st, fr):
            v = f(g0(st, fr), g1(st, fr))
            w(st, fr, v if dst_dt is None else v.astype(dst_dt, copy=False))
        return run2

    def run(st, fr):
        v = f(*[g(st, fr) for g in getters])
        w(st, fr, v if dst_dt is None else v.astype(dst_dt, copy=False))
    return run


def _sat_int(x, t):
    """.sat on s32 add/sub: clamp to the signed range (computed in int64)."""
    info = np.iinfo(DT[t])
    return np.clip(x, info.min, info.max).astype(DT[t])


# ---- directed rounding (.rz / .rm / .rp) ----------------------------------------------------------------------

DIRECTED = ("rz", "rm", "rp")


def _directed_mode(ins):
    return next((m for m in ins.mods if m in DIRECTED), None)


def _two_prod(a, b):
    """a * b = p + e exactly (float64; Dekker's product with Veltkamp's split)."""
    p = a * b

    def split(x):
        c = 134217729.0 * x
        hi = c - (c - x)
        return hi, x - hi
    ah, al = split(a)
    bh, bl = split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def exact_f64(op, args):
    """(r, s): the round-to-nearest float64 result of op on float64 args and the sign of (exact result - r), from
    error-free transformations (exact for add/sub/mul/div/sqrt of float64 operands and for fma of float32 ones)."""
    if op in ("add", "sub"):
        a, b = args
        b = -b if op == "sub" else b
        r = a + b
        bv = r - a
        return r, np.sign((a - (r - bv)) + (b - bv))
    if op == "mul":
        p, e = _two_prod(*args)
        return p, np.sign(e)
    if op == "fma":                   # float32 operands: the product is exact
        a, b, c = args
        p = a * b
        r = p + c
        bv = r - p
        return r, np.sign((p - (r - bv)) + (c - bv))
    if op in ("div", "rcp"):
        a, b = args if op == "div" else (np.ones_like(args[0]), args[0])
        q = a / b
        p, pe = _two_prod(q, b)
        return q, np.sign((a - p) - pe) * np.sign(b)
    if op == "sqrt":
        a, = args
        r = np.sqrt(a)
        p, pe = _two_prod(r, r)
        return r, np.sign((a - p) - pe)
    raise Unsupported(f"directed rounding of {op}")


def round_directed(r, s, out, mode):
    """Round the value (r + a tiny amount of sign s) - r a float64 array - to dtype ``out`` toward zero (rz),
    minus infinity (rm) or plus infinity (rp)."""
    out = np.dtype(out)
    if out == np.float64:
        y, sy = r, s
    else:
        y = to_f16(r) if out == np.float16 else r.astype(out)
        d = r - y.astype(np.float64)                    # exact: y is r's nearest neighbour
        sy = np.where(np.isfinite(r) & (d != 0), np.sign(d), s)
    sy = np.where(np.isfinite(r), sy, 0)
    if mode == "rz":
        step = (sy != 0) & (np.sign(y) * sy < 0)
        target = np.zeros((), out)
    elif mode == "rm":
        step, target = sy < 0, np.array(-np.inf, out)
    else:
        step, target = sy > 0, np.array(np.inf, out)
    if step.any():
        y = np.where(step, np.nextafter(y, target), y)
    return y.astype(out, copy=False)


def directed(op, t, mode):
    """fn(*args) computing ``op`` in type t (f32 / f64) rounded by ``mode``."""
    out = DT[t]

    def fn(*args):
        r, s = exact_f64(op, [np.asarray(x, np.float64) for x in args])
        return round_directed(r, s, out, mode)
    return fn


# ---- integer and float arithmetic ------------------------------------------------------------------------------

@builder("add", "sub")
def b_addsub(ins, ops):
    t = ins.type
    sub = ins.opcode == "sub"
    if ins.has("sat") and t == "s32":
        fn = (lambda a, b: _sat_int(a.astype(np.int64) - b, t)) if sub else \
            (lambda a, b: _sat_int(a.astype(np.int64) + b, t))
        return elementwise(ins, ops, fn, t)
    if ins.has("cc"):
        raise Unsupported("add.cc/sub.cc (extended-precision carry chains)")
    mode = _directed_mode(ins)
    if mode and t in ("f32", "f64"):
        return elementwise(ins, ops, directed(ins.opcode, t, mode), t)
    return elementwise(ins, ops, np.subtract if sub else np.add, t)


@builder("addc", "subc")
def b_carry(ins, ops):
    raise Unsupported(f"{ins.opcode} (extended-precision carry chains)")


def _mulhi(a, b, t):
    if TYPES[t][1] <= 4:
        wide = np.int64 if t in SIGNED else np.uint64
        return ((a.astype(wide) * b.astype(wide)) >> (8 * TYPES[t][1])).astype(DT[t])
    # 64-bit high half: schoolbook on 32-bit limbs (unsigned), sign-corrected for .s64
    ua, ub = a.view(np.uint64) if a.dtype != np.uint64 else a, b.view(np.uint64) if b.dtype != np.uint64 else b
    m32 = np.uint64(0xFFFFFFFF)
    a0, a1 = ua & m32, ua >> np.uint64(32)
    b0, b1 = ub & m32, ub >> np.uint64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> np.uint64(32)) + (p01 & m32) + (p10 & m32)
    hi = p11 + (p01 >> np.uint64(32)) + (p10 >> np.uint64(32)) + (mid >> np.uint64(32))
    if t in SIGNED:
        hi = hi - np.where(a < 0, ub, 0).astype(np.uint64) - np.where(b < 0, ua, 0).astype(np.uint64)
    return hi.view(DT[t])


def _mul24(t, hi):
    """mul24.lo / .hi: the 48-bit product of the low 24 bits (sign-extended for .s32); .lo keeps bits 0..31, .hi
    bits 16..47."""
    def m24(a, b):
        mask = (1 << 24) - 1
        if t in SIGNED:
            x = ((a.astype(np.int64) & mask) ^ (1 << 23)) - (1 << 23)
            y = ((b.astype(np.int64) & mask) ^ (1 << 23)) - (1 << 23)
        else:
            x, y = a.astype(np.uint64) & np.uint64(mask), b.astype(np.uint64) & np.uint64(mask)
        p = x * y
        p = p >> (16 if t in SIGNED else np.uint64(16)) if hi else p
        return (p & (0xFFFFFFFF if t in SIGNED else np.uint64(0xFFFFFFFF))).astype(_udt(t)).view(DT[t])
    return m24


def _wide(t):
    return {"s16": "s32", "u16": "u32", "s32": "s64", "u32": "u64"}[t]


@builder("mul", "mul24")
def b_mul(ins, ops):
    t = ins.type
    if _floaty(t):
        mode = _directed_mode(ins)
        if mode and t in ("f32", "f64"):
            return elementwise(ins, ops, directed("mul", t, mode), t)
        return elementwise(ins, ops, np.multiply, t)
    if ins.opcode == "mul24":
        return elementwise(ins, ops, _mul24(t, ins.has("hi")), t)
    if ins.has("wide"):
        wt = DT[_wide(t)]
        return elementwise(ins, ops, lambda a, b: a.astype(wt) * b.astype(wt), t)
    if ins.has("hi"):
        return elementwise(ins, ops, lambda a, b: _mulhi(a, b, t), t)
    return elementwise(ins, ops, np.multiply, t)


def fused_multiply_add(a, b, c, out=None):
    """a*b+c rounded once, for float32 and float16 operands (the result keeps a's dtype; float32 inputs of the
    f16x2 lift give a float64 result that :func:`pack_x2` rounds once to f16).

    The product is exact in float64 (24 + 24 bits) and the float64 sum is the exact sum rounded once; rounding it
    again to the narrow type gives the correctly rounded fma except where the float64 sum fell exactly on a
    midpoint between two narrow values. Only those lanes (rare) are corrected: TwoSum gives the float64 sum's
    error, and a nudge of one float64 ulp towards the exact sum lets the final rounding go the right way."""
    out = a.dtype if out is None else np.dtype(out)
    s = np.multiply(a, b, dtype=np.float64)
    s += c
    mant = 23 if out == np.float32 else 10      # float64 out: the f16x2 lift rounds it to f16 afterwards
    low = np.uint64((1 << (52 - mant)) - 1)
    half = np.uint64(1 << (51 - mant))
    tie = (s.view(np.uint64) & low) == half
    if tie.any():
        idx = np.nonzero(tie)
        a64 = np.broadcast_to(a, tie.shape)[idx].astype(np.float64)
        b64 = np.broadcast_to(b, tie.shape)[idx].astype(np.float64)
        c64 = np.broadcast_to(c, tie.shape)[idx].astype(np.float64)
        p = a64 * b64
        t = p + c64
        bv = t - p
        e = (p - (t - bv)) + (c64 - bv)
        s[idx] = np.where(e != 0, np.nextafter(t, np.where(e > 0, np.inf, -np.inf)), t)
    return to_f16(s) if out == np.float16 else s.astype(out, copy=False)


@builder("mad", "fma", "mad24")
def b_mad(ins, ops):
    t = ins.type
    if _floaty(t):
        mode = _directed_mode(ins)
        if mode and t == "f32":
            return elementwise(ins, ops, directed("fma", t, mode), t)
        if t in ("f32", "f16"):
            return elementwise(ins, ops, fused_multiply_add, t)
        if t == "f16x2":
            return elementwise(ins, ops, lambda a, b, c: fused_multiply_add(a, b, c, np.float64), t)
        # .f64 (and .bf16, whose lift rounds through f32): a*b+c with two roundings (numpy has no fused
        # multiply-add): results can differ from the GPU's single rounding in the last bit (docs/semantics.md)
        return elementwise(ins, ops, lambda a, b, c: a * b + c, t)
    if ins.opcode == "mad24":
        if ins.has("sat"):
            raise Unsupported("mad24.hi.sat")
        m24 = _mul24(t, ins.has("hi"))
        return elementwise(ins, ops, lambda a, b, c: (m24(a, b) + c).astype(DT[t]), t)
    if ins.has("wide"):
        wt = DT[_wide(t)]
        gs = [ops.reader(o, t) for o in ins.operands[1:3]]
        gc = ops.reader(ins.operands[3], _wide(t))
        w = ops.writer(ins.operands[0])

        def madw(st, fr):
            a, b = gs[0](st, fr), gs[1](st, fr)
            w(st, fr, a.astype(wt) * b.astype(wt) + gc(st, fr))
        return madw
    if ins.has("hi"):
        return elementwise(ins, ops, lambda a, b, c: _mulhi(a, b, t) + c, t)
    if ins.has("sat"):
        return elementwise(ins, ops, lambda a, b, c: _sat_int(_mulhi(a, b, t).astype(np.int64) + c, t), t)
    return elementwise(ins, ops, lambda a, b, c: a * b + c, t)


@builder("sad")
def b_sad(ins, ops):
    t = ins.type
    return elementwise(ins, ops, lambda a, b, c: (np.where(a > b, a - b, b - a) + c).astype(DT[t]), t)


def _magnitude(x):
    """|x| of a signed integer array as uint64 (exact for the most negative value too)."""
    u = x.astype(np.int64).view(np.uint64)
    return np.where(x < 0, np.uint64(0) - u, u)


def int_div_checked(st, a, b, gid=None):
    """b with zeros replaced by 1; a zero divisor on an active lane is an error (inactive lanes - the other side
    of a branch - routinely hold 0)."""
    zero = b == 0
    if zero.any():
        bad = zero if st.mask is None else zero & st.mask
        if bad.any():
            st.fault_where(bad, "integer division by zero", gid=gid)
        return np.where(zero, 1, b).astype(b.dtype, copy=False)
    return b


@builder("div")
def b_div(ins, ops):
    t = ins.type
    if _floaty(t):
        mode = _directed_mode(ins)
        if mode and t in ("f32", "f64"):
            return elementwise(ins, ops, directed("div", t, mode), t)
        return elementwise(ins, ops, np.divide, t)
    ga, gb = ops.reader(ins.operands[1], t), ops.reader(ins.operands[2], t)
    w = ops.writer(ins.operands[0])
    signed = t in SIGNED
    gid = ins.index

    def div(st, fr):
        a, b = ga(st, fr), gb(st, fr)
        b = int_div_checked(st, a, b, gid)
        if signed:
            ua, ub = _magnitude(a), _magnitude(b)      # |INT64_MIN| only fits unsigned
            q = ua // ub
            q = np.where((a < 0) ^ (b < 0), np.uint64(0) - q, q)
            w(st, fr, q.view(np.int64).astype(DT[t]))
        else:
            w(st, fr, (a // b).astype(DT[t], copy=False))
    return div


@builder("rem")
def b_rem(ins, ops):
    t = ins.type
    ga, gb = ops.reader(ins.operands[1], t), ops.reader(ins.operands[2], t)
    w = ops.writer(ins.operands[0])
    signed = t in SIGNED
    gid = ins.index

    def rem(st, fr):
        a, b = ga(st, fr), gb(st, fr)
        b = int_div_checked(st, a, b, gid)
        if signed:
            r = _magnitude(a) % _magnitude(b)                    # C: truncating, the sign of the dividend
            r = np.where(a < 0, np.uint64(0) - r, r)
            w(st, fr, r.view(np.int64).astype(DT[t]))
        else:
            w(st, fr, (a % b).astype(DT[t], copy=False))
    return rem


def _fmin(a, b):
    return np.fmin(a, b)


def _fmax(a, b):
    return np.fmax(a, b)


@builder("min", "max")
def b_minmax(ins, ops):
    t = ins.type
    if _floaty(t):
        if ins.has("NaN"):               # min.NaN / max.NaN: a NaN operand gives the canonical NaN
            inner = np.minimum if ins.opcode == "min" else np.maximum

            def fn(a, b):
                r = inner(a, b)
                nan = np.isnan(a) | np.isnan(b)
                return np.where(nan, np.array(np.nan, r.dtype), r) if nan.any() else r
        else:
            fn = _fmin if ins.opcode == "min" else _fmax   # IEEE minNum / maxNum: a NaN operand is ignored
        if ins.has("relu"):
            base = fn
            fn = lambda a, b: np.where(base(a, b) > 0, base(a, b), 0).astype(a.dtype)   # noqa: E731 (NaN -> 0)
        return elementwise(ins, ops, fn, t)
    fn = np.minimum if ins.opcode == "min" else np.maximum
    if ins.has("relu"):                  # min.relu.s32 / max.relu.s32: the result clamped at 0
        base = fn
        fn = lambda a, b: np.maximum(base(a, b), a.dtype.type(0))   # noqa: E731
    return elementwise(ins, ops, fn, t)


@builder("abs")
def b_abs(ins, ops):
    return elementwise(ins, ops, np.abs, ins.type)


@builder("neg")
def b_neg(ins, ops):
    return elementwise(ins, ops, np.negative, ins.type)


@builder("copysign")
def b_copysign(ins, ops):
    # copysign.f32 d, a, b: d = |b| with the sign of a
    return elementwise(ins, ops, lambda a, b: np.copysign(b, a), ins.type)


def _unary_float(fn):
    def build(ins, ops):
        return elementwise(ins, ops, fn, ins.type)
    return build


def _rounded_unary(op, fn):
    plain = _unary_float(fn)

    def build(ins, ops):
        mode = _directed_mode(ins)
        if mode and ins.type in ("f32", "f64"):
            return elementwise(ins, ops, directed(op, ins.type, mode), ins.type)
        return plain(ins, ops)
    return build


BUILDERS["rcp"] = _rounded_unary("rcp", lambda a: np.divide(a.dtype.type(1), a))
BUILDERS["sqrt"] = _rounded_unary("sqrt", np.sqrt)
BUILDERS["rsqrt"] = _unary_float(lambda a: np.divide(a.dtype.type(1), np.sqrt(a)))
BUILDERS["ex2"] = _unary_float(np.exp2)
BUILDERS["lg2"] = _unary_float(np.log2)
BUILDERS["sin"] = _unary_float(np.sin)
BUILDERS["cos"] = _unary_float(np.cos)
BUILDERS["tanh"] = _unary_float(np.tanh)


@builder("testp")
def b_testp(ins, ops):
    op = ins.mods[0]
    fn = {"finite": np.isfinite, "infinite": np.isinf, "number": lambda a: ~np.isnan(a), "notanumber": np.isnan,
          "normal": lambda a: np.isfinite(a) & (np.abs(a) >= np.finfo(a.dtype).tiny),
          "subnormal": lambda a: (np.abs(a) < np.finfo(a.dtype).tiny) & (a != 0)}[op]
    return elementwise(ins, ops, fn, ins.type)


# ---- bits ------------------------------------------------------------------------------------------------------

@builder("and", "or", "xor")
def b_logic(ins, ops):
    fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[ins.opcode]
    return elementwise(ins, ops, fn, ins.type)


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


# ---- comparison and selection ------------------------------------------------------------------------------

def _cmp(op: str, a, b):
    if op in ("eq",):
        return a == b
    if op == "ne":
        r = a != b
        if a.dtype.kind == "f":
            r &= ~(np.isnan(a) | np.isnan(b))
        return r
    if op in ("lt", "lo"):
        return a < b
    if op in ("le", "ls"):
        return a <= b
    if op in ("gt", "hi"):
        return a > b
    if op in ("ge", "hs"):
        return a >= b
    nan = np.isnan(a) | np.isnan(b)
    if op == "equ":
        return (a == b) | nan
    if op == "neu":
        return (a != b) | nan
    if op == "ltu":
        return (a < b) | nan
    if op == "leu":
        return (a <= b) | nan
    if op == "gtu":
        return (a > b) | nan
    if op == "geu":
        return (a >= b) | nan
    if op == "num":
        return ~nan
    if op == "nan":
        return nan
    raise Unsupported(f"comparison .{op}")


def _compare_parts(ins):
    cmp = ins.mods[0]
    boolop = ins.mods[1] if len(ins.mods) > 1 and ins.mods[1] in ("and", "or", "xor") else None
    return cmp, boolop, ins.type


def _combine(r, c, boolop):
    if boolop == "and":
        return r & c
    if boolop == "or":
        return r | c
    return r ^ c


@builder("setp")
def b_setp(ins, ops):
    cmp, boolop, t = _compare_parts(ins)
    ga, gb = ops.reader(ins.operands[1], t), ops.reader(ins.operands[2], t)
    gc = ops.reader(ins.operands[3], "pred") if boolop else None
    dst = ins.operands[0]
    if isinstance(dst, PredPair):
        w1, w2 = ops.writer(dst.first), ops.writer(dst.second)
    else:
        w1, w2 = ops.writer(dst), None
    conv = None
    if t in ("bf16", "f16x2", "bf16x2"):
        raise Unsupported(f"setp.{t}")
    if t == "f16":
        conv = np.float32

    def setp(st, fr):
        a, b = ga(st, fr), gb(st, fr)
        if conv is not None:
            a, b = a.astype(conv), b.astype(conv)
        r = _cmp(cmp, a, b)
        if gc is not None:
            c = gc(st, fr)
            p = _combine(r, c, boolop)
            w1(st, fr, p)
            if w2 is not None:
                w2(st, fr, _combine(~r, c, boolop))
        else:
            w1(st, fr, r)
            if w2 is not None:
                w2(st, fr, ~r)
    return setp


@builder("set")
def b_set(ins, ops):
    cmp = ins.mods[0]
    boolop = ins.mods[1] if ins.mods[1] in ("and", "or", "xor") else None
    types = ins.types
    dt, st_t = types[0], types[-1]
    ga, gb = ops.reader(ins.operands[1], st_t), ops.reader(ins.operands[2], st_t)
    gc = ops.reader(ins.operands[3], "pred") if boolop else None
    w = ops.writer(ins.operands[0])
    true = np.float32(1.0) if dt == "f32" else DT[dt].type(-1 if dt in SIGNED else np.iinfo(DT[dt]).max)

    def set_(st, fr):
        r = _cmp(cmp, ga(st, fr), gb(st, fr))
        if gc is not None:
            r = _combine(r, gc(st, fr), boolop)
        w(st, fr, np.where(r, true, DT[dt].type(0)).astype(DT[dt]))
    return set_


@builder("selp")
def b_selp(ins, ops):
    t = ins.type
    ga, gb = ops.reader(ins.operands[1], t), ops.reader(ins.operands[2], t)
    gc = ops.reader(ins.operands[3], "pred")
    w = ops.writer(ins.operands[0])

    def selp(st, fr):
        w(st, fr, np.where(gc(st, fr), ga(st, fr), gb(st, fr)))
    return selp


@builder("slct")
def b_slct(ins, ops):
    types = ins.types
    t, ct = types[0], types[-1]
    ga, gb, gc = ops.reader(ins.operands[1], t), ops.reader(ins.operands[2], t), ops.reader(ins.operands[3], ct)
    w = ops.writer(ins.operands[0])

    def slct(st, fr):
        w(st, fr, np.where(gc(st, fr) >= 0, ga(st, fr), gb(st, fr)))
    return slct


# ---- moves and conversions -----------------------------------------------------------------------------------

@builder("mov")
def b_mov(ins, ops):
    t = ins.type
    dst, src = ins.operands[0], ins.operands[1]
    if isinstance(src, Vec):          # pack: mov.b64 %rd, {%r1, %r2}
        n = len(src.items)
        part_t = {("b64", 2): "b32", ("b32", 2): "b16", ("b64", 4): "b16", ("b32", 4): "b8",
                  ("b16", 2): "b8"}.get((t, n))
        if part_t is None:
            raise Unsupported(f"mov.{t} with {n} parts")
        gs = [ops.reader(o, part_t) for o in src.items]
        w = ops.writer(dst)
        pbits = TYPES[part_t][1] * 8
        out_u = _udt(t)

        def pack(st, fr):
            acc = None
            for i, g in enumerate(gs):
                v = g(st, fr).astype(out_u) << out_u.type(pbits * i)
                acc = v if acc is None else acc | v
            w(st, fr, acc)
        return pack
    if isinstance(dst, Vec):          # unpack: mov.b64 {%r1, %r2}, %rd
        n = len(dst.items)
        part_t = {("b64", 2): "b32", ("b32", 2): "b16", ("b64", 4): "b16", ("b32", 4): "b8",
                  ("b16", 2): "b8"}.get((t, n))
        if part_t is None:
            raise Unsupported(f"mov.{t} into {n} parts")
        g = ops.reader(src, t)
        ws = [ops.writer(o) for o in dst.items]
        pbits = TYPES[part_t][1] * 8
        part_u = _udt(part_t)
        src_u = _udt(t)

        def unpack(st, fr):
            v = g(st, fr).view(src_u)
            for i, w in enumerate(ws):
                w(st, fr, (v >> src_u.type(pbits * i)).astype(part_u))
        return unpack
    g = ops.reader(src, t)
    w = ops.writer(dst)

    def mov(st, fr):
        w(st, fr, g(st, fr))
    return mov


_ROUND_INT = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}


def convert(v: np.ndarray, dt_t: str, at: str, mods: tuple) -> np.ndarray:
    """cvt semantics: v (read as type ``at``) converted to ``dt_t``."""
    ddt = DT[dt_t]
    sat = "sat" in mods
    rnd = next((m for m in mods if m in _ROUND_INT), None)
    relu = "relu" in mods
    # to a float32 working value for the narrow float types
    if at == "bf16":
        x = bf16_to_f32(v)
    elif at == "f16":
        x = v.astype(np.float32)
    else:
        x = v
    src_float = at in ("f16", "f32", "f64", "bf16")
    directed_mode = next((m for m in mods if m in DIRECTED), None)
    if directed_mode and dt_t in ("f16", "f32", "f64"):
        return round_directed(*_cvt_exact(x, at), ddt, directed_mode)
    if dt_t in ("f16", "f32", "f64", "bf16"):
        y = x
        if rnd:
            y = _ROUND_INT[rnd](y)
        if dt_t == "bf16":
            y = np.asarray(y, np.float32)
        if sat:
            y = np.where(np.isnan(y), 0, np.clip(y, 0, 1))
        if relu:
            y = np.where(np.isnan(y) | (y > 0), y, 0)
        if dt_t == "bf16":
            return f32_to_bf16(np.asarray(y, np.float32))
        if dt_t == "f16":
            return to_f16(y)
        return np.asarray(y).astype(ddt)
    # to an integer
    if src_float:
        y = _ROUND_INT.get(rnd or "rzi")(x.astype(np.float64))
        info = np.iinfo(ddt)
        # saturate; the bounds compare as floats (2**63 - 1 rounds up to 2**63 in float64, so a clip to it
        # followed by astype(int64) would overflow): in range values convert, the rest take the bound
        lo, hi = float(info.min), float(info.max) + 1.0          # exact powers of two
        ok = (y >= lo) & (y < hi)
        v = np.where(ok, y, 0).astype(ddt)
        out_of_range = np.where(np.isnan(y), ddt.type(0), np.where(y >= hi, ddt.type(info.max), ddt.type(info.min)))
        return np.where(ok, v, out_of_range).astype(ddt, copy=False)
    if sat:
        info = np.iinfo(ddt)
        wide = x.astype(np.int64) if x.dtype.kind == "i" or x.dtype.itemsize < 8 else x
        if x.dtype == np.uint64:
            y = np.minimum(x, np.uint64(info.max)).astype(ddt)
            return y
        return np.clip(wide, info.min, info.max).astype(ddt)
    return x.astype(ddt)


def _cvt_exact(x, at):
    """(r, s) for a conversion source: its float64 value and the sign of (exact value - r)."""
    if x.dtype.kind == "f" or x.dtype.itemsize <= 4:
        return x.astype(np.float64), np.zeros(x.shape)
    r = x.astype(np.float64)                        # 64-bit integers: r may be off by up to half a float64 ulp
    lim = 2.0 ** 63 if x.dtype.kind == "i" else 2.0 ** 64
    over = r >= lim
    back = np.where(over, 0, r).astype(x.dtype)
    s = np.where(over, -1, (x > back).astype(np.int64) - (x < back).astype(np.int64))
    return r, s.astype(np.float64)


@builder("cvt")
def b_cvt(ins, ops):
    types = ins.types
    if len(types) < 2:
        raise Unsupported(f"cvt with types {types}")
    dt_t, at = types[0], types[1]
    if dt_t in ("f16x2", "bf16x2"):
        # cvt.rn.f16x2.f32 d, a, b: d = {cvt(a) high, cvt(b) low}
        ga, gb = ops.reader(ins.operands[1], at), ops.reader(ins.operands[2], at)
        w = ops.writer(ins.operands[0])

        def cvt2(st, fr):
            w(st, fr, pack_x2(gb(st, fr).astype(np.float32), ga(st, fr).astype(np.float32), dt_t))
        return cvt2
    g = ops.reader(ins.operands[1], at)
    w = ops.writer(ins.operands[0])
    mods = ins.mods
    dst = ins.operands[0]
    # the destination register may be wider than the instruction type (cvt.u16.u32 into a .b32 register is
    # not allowed, but ld-style widening occurs for .u8/.s8): write the natural type
    _ = dst

    def cvt(st, fr):
        w(st, fr, convert(g(st, fr), dt_t, at, mods))
    return cvt


@builder("cvta")
def b_cvta(ins, ops):
    from perfmodel.sim.space import CONST_BASE, LOCAL_BASE, SHARED_BASE
    space = next((m.split("::")[0] for m in ins.mods if m.split("::")[0] in ("global", "shared", "local", "const",
                                                                             "param")), None)
    if space is None or any(m.startswith("shared::") and m != "shared::cta" for m in ins.mods):
        raise Unsupported(f"cvta.{'.'.join(ins.mods)}")
    to = ins.has("to")
    t = ins.type or "u64"
    base = {"global": 0, "shared": SHARED_BASE, "local": LOCAL_BASE, "const": CONST_BASE}.get(space)
    if base is None:
        raise Unsupported(f"cvta.{space}")
    g = ops.reader(ins.operands[1], t)
    w = ops.writer(ins.operands[0])
    dt = DT[t]

    def cvta(st, fr):
        v = g(st, fr).astype(np.int64)
        v = v - base if to else v + base
        w(st, fr, v.astype(dt))
    return cvta


@builder("isspacep")
def b_isspacep(ins, ops):
    from perfmodel.sim.space import CONST_BASE, LOCAL_BASE, SHARED_BASE, WINDOW
    space = ins.mods[0].split("::")[0]
    if space not in ("global", "shared", "local", "const") or ins.mods[0] not in (space, "shared::cta"):
        raise Unsupported(f"isspacep.{ins.mods[0]}")
    lo = {"global": 0, "shared": SHARED_BASE, "local": LOCAL_BASE, "const": CONST_BASE}[space]
    g = ops.reader(ins.operands[1], "u64")
    w = ops.writer(ins.operands[0])

    def isspacep(st, fr):
        v = g(st, fr).astype(np.int64)
        w(st, fr, (v >= lo) & (v < (lo + WINDOW if lo else SHARED_BASE)))
    return isspacep


def operand_regs(op) -> list:
    if isinstance(op, Reg):
        return [op]
    if isinstance(op, Vec):
        return [x for x in op.items if isinstance(x, Reg)]
    if isinstance(op, PredPair):
        return [op.first, op.second]
    return []


__all__ = ["BUILDERS", "FP_KIND", "Unsupported", "Imm", "Sink"]
