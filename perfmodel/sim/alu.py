"""Arithmetic, comparison and selection instructions, and the opcode -> builder table: one small builder per PTX
opcode, each returning a closure ``fn(st, fr)`` over numpy lanes (semantics per the PTX ISA; docs/semantics.md).
Bit instructions are in :mod:`perfmodel.sim.bits`, moves and conversions in :mod:`perfmodel.sim.moves`.

The builders share one shape: read the source operands with their instruction type, compute with numpy on the
broadcast lane arrays, and write the destination through the mask (:mod:`perfmodel.sim.values`).
"""
from __future__ import annotations

import numpy as np

from perfmodel.ptx.ir import TYPES, PredPair
from perfmodel.sim.numeric import (Unsupported, _directed_mode, _floaty, _sat_int, _udt, directed, elementwise,
                                   fma_f64, fused_multiply_add)
from perfmodel.sim.values import DT, SIGNED

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
        return _carry_chain(ins, ops)
    mode = _directed_mode(ins)
    if mode and t in ("f32", "f64"):
        return elementwise(ins, ops, directed(ins.opcode, t, mode), t)
    return elementwise(ins, ops, np.subtract if sub else np.add, t)


@builder("addc", "subc", "madc")
def b_carry(ins, ops):
    return _carry_chain(ins, ops)


def _carry_chain(ins, ops):
    """Extended-precision arithmetic through the condition code's carry flag (PTX ISA, "Extended-Precision Integer
    Arithmetic Instructions"): ``add.cc`` / ``sub.cc`` / ``mad{.lo,.hi}.cc`` write the carry (a borrow for
    subtraction), ``addc`` / ``subc`` / ``madc{.lo,.hi}`` also read it, and their ``.cc`` forms write it again. The
    flag is per thread (``Frame.carry``), written under the mask like a register."""
    t = ins.type
    if t not in ("u32", "s32", "u64", "s64"):
        raise Unsupported(f"{ins.opcode}.cc on .{t}")
    bits = 32 if t in ("u32", "s32") else 64
    op = ins.opcode
    uses_carry = op in ("addc", "subc", "madc")
    writes_carry = ins.has("cc")
    kind = {"add": "add", "addc": "add", "sub": "sub", "subc": "sub", "mad": "mad", "madc": "mad"}[op]
    hi = ins.has("hi")
    n_src = 3 if kind == "mad" else 2
    ut = "u32" if bits == 32 else "u64"
    gets = [ops.reader(o, ut) for o in ins.operands[1:1 + n_src]]
    w = ops.writer(ins.operands[0])
    mask = (1 << bits) - 1
    exact = bits == 64 or kind == "mad"       # products and 64-bit sums in Python integers (no overflow)
    as_int = (lambda v: v.astype(np.uint64).astype(object)) if exact else (lambda v: v.astype(np.int64))

    def carry_op(st, fr):
        vals = [as_int(g(st, fr)) for g in gets]
        cin = 0
        if uses_carry:
            cin = fr.carry if fr.carry is not None else np.zeros((1, 1), np.int64)
            cin = cin.astype(object) if exact else cin
        if kind == "add":
            full = vals[0] + vals[1] + cin
            cout = full >> bits
        elif kind == "sub":
            full = vals[0] - vals[1] - cin
            cout = (full < 0) * 1
        else:
            a, b, c = vals
            if t.startswith("s"):       # the product of signed operands
                top = 1 << (bits - 1)
                a, b = (np.where(a >= top, a - (1 << bits), a) for a in (a, b))
            prod = a * b
            part = (prod >> bits) & mask if hi else prod & mask
            full = part + c + cin
            cout = full >> bits
        res = full & mask
        if exact:
            res = np.asarray(res, dtype=object).astype(np.uint64 if bits == 64 else np.uint32)
            cout = np.asarray(cout, dtype=object).astype(np.int64)
        else:
            res = res.astype(np.uint32)
        w(st, fr, res.view(DT[t]) if t.startswith("s") else res)
        if writes_carry:
            new = np.asarray(cout, np.int64) & 1
            if st.mask is not None and fr.carry is not None:
                new = np.where(st.mask, new, fr.carry)
            fr.carry = new
    return carry_op


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


@builder("mad", "fma", "mad24")
def b_mad(ins, ops):
    t = ins.type
    if ins.has("cc"):
        return _carry_chain(ins, ops)
    if _floaty(t):
        mode = _directed_mode(ins)
        if mode and t == "f32":
            return elementwise(ins, ops, directed("fma", t, mode), t)
        if t in ("f32", "f16"):
            return elementwise(ins, ops, fused_multiply_add, t)
        if t == "f16x2":
            return elementwise(ins, ops, lambda a, b, c: fused_multiply_add(a, b, c, np.float64), t)
        if t == "f64":
            return elementwise(ins, ops, fma_f64, t)
        # .bf16 (whose lift rounds through f32): a*b+c with two roundings (docs/semantics.md)
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
    if dt in ("f16", "f32"):
        true = DT[dt].type(1.0)          # a float destination holds 1.0 for true (PTX ISA: set)
    elif dt == "bf16":
        true = DT[dt].type(0x3F80)       # 1.0 in bfloat16, held as its bits
    else:
        true = DT[dt].type(-1 if dt in SIGNED else np.iinfo(DT[dt]).max)

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


# the other builder modules register into BUILDERS when imported
from perfmodel.sim import bits, moves  # noqa: E402,F401
