"""Numeric helpers of the executor: lane types, the narrow float formats (f16, bf16 and their x2 pairs), the
element-wise builder every arithmetic instruction uses, directed rounding, and the fused multiply-add."""
from __future__ import annotations

import numpy as np

from perfmodel.ptx.ir import TYPES
from perfmodel.sim.values import DT, as_type


class Unsupported(Exception):
    """An instruction form the executor does not implement (the builder names it)."""


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
    """Apply a float32-domain function to .f16/.bf16/x2 values, an integer one to each half of .s16x2/.u16x2;
    plain types pass through."""
    if t == "bf16":
        return lambda *a: f32_to_bf16(fn(*[bf16_to_f32(x) for x in a]))
    if t in ("s16x2", "u16x2"):
        # packed 16-bit integers (PTX ISA: add, min, max on .u16x2/.s16x2): the half-words a[0:15] and a[16:31]
        # processed apart, each result wrapping to 16 bits
        half = np.int16 if t == "s16x2" else np.uint16

        def ix2(*a):
            parts = [(x.astype(np.uint32) & 0xFFFF).astype(np.uint16).view(half) for x in a], \
                    [(x.astype(np.uint32) >> 16).astype(np.uint16).view(half) for x in a]
            lo, hi = (np.asarray(fn(*p)).astype(half).view(np.uint16).astype(np.uint32) for p in parts)
            return lo | (hi << np.uint32(16))
        return ix2
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


_SPLIT = 134217729.0              # 2^27 + 1: Veltkamp's split of a double into two 26-bit halves


def fma_f64(a, b, c):
    """a*b+c rounded once, for float64 (``fma.rn.f64``, the GPU's DFMA), where numpy has no fused multiply-add.

    The product is split exactly into p + e (Dekker's TwoProduct, Veltkamp halves) and the sum p + c into s + t
    (Knuth's TwoSum), so a*b + c = s + t + e exactly; r = s + (t + e) is the correctly rounded result unless the
    rounding error of t + e moves the exact sum across the midpoint between r and a neighbour, which the lanes'
    remainders show. Those lanes, and those with non-finite operands or magnitudes where the splitting overflows or
    the error terms underflow, are computed exactly with Python's fractions and rounded once (``float(Fraction)``
    rounds to nearest even), one lane at a time: they are rare."""
    a, b, c = np.broadcast_arrays(*(np.asarray(x, np.float64) for x in (a, b, c)))
    with np.errstate(all="ignore"):
        p = a * b
        ah = a * _SPLIT
        ah = ah - (ah - a)
        al = a - ah
        bh = b * _SPLIT
        bh = bh - (bh - b)
        bl = b - bh
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        s = p + c
        bv = s - p
        t = (p - (s - bv)) + (c - bv)
        w = t + e
        wv = w - t
        werr = (t - (w - wv)) + (e - wv)
        r = s + w
        rv = r - s
        d = (s - (r - rv)) + (w - rv)         # s + w = r + d exactly
        # the exact sum is r + d + werr: r is its correct rounding unless werr moves it across the midpoint
        # between r and a neighbour (|d| is at most half an ulp of r)
        settled = (werr == 0) | (np.abs(d) + np.abs(werr) < 0.5 * np.spacing(np.abs(r)))
        mag = np.maximum(np.abs(a), np.abs(b))
        safe = settled & np.isfinite(r) & np.isfinite(e) & np.isfinite(t) & (mag < 2.0 ** 995) & \
            ((p == 0) | (np.abs(p) > 2.0 ** -960)) & ((c == 0) | (np.abs(c) > 2.0 ** -960))
    if safe.all():
        return r
    from fractions import Fraction

    r = np.array(r, copy=True)
    # infinities and NaN among the operands: IEEE's rules, a*b+c as it is, every such lane at once (mixbench's
    # x*x + seed overflows in a few steps; one lane at a time, its double FMAs took minutes)
    nonfinite = ~(np.isfinite(a) & np.isfinite(b) & np.isfinite(c))
    if nonfinite.any():
        with np.errstate(all="ignore"):
            r[nonfinite] = a[nonfinite] * b[nonfinite] + c[nonfinite]
    for i in zip(*np.nonzero(~safe & ~nonfinite)):
        x, y, z = float(a[i]), float(b[i]), float(c[i])
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        try:
            v = float(exact)
        except OverflowError:
            v = np.inf if exact > 0 else -np.inf
        if v == 0.0 and exact == 0:          # an exact zero's sign, as IEEE's fma gives it
            v = 0.0 if (np.copysign(1.0, x * y) > 0 or np.copysign(1.0, z) > 0) else -0.0
        r[i] = v
    return r


def fused_multiply_add(a, b, c, out=None):
    """a*b+c rounded once, for float32 and float16 operands (the result keeps a's dtype; float32 inputs of the
    f16x2 lift give a float64 result that :func:`pack_x2` rounds once to f16).

    The product is exact in float64 (24 + 24 bits) and the float64 sum is the exact sum rounded once; rounding it
    again to the narrow type gives the correctly rounded fma except where the float64 sum fell exactly on a
    midpoint between two narrow values. Only those lanes (rare) are corrected: TwoSum gives the float64 sum's
    error, and a nudge of one float64 ulp towards the exact sum lets the final rounding go the right way."""
    out = a.dtype if out is None else np.dtype(out)
    s = np.multiply(a, b, dtype=np.float64)
    try:
        s += c
    except ValueError:          # a and b the same in every lane (shape (1, 1)) and c not: the sum is wider
        s = s + c
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


