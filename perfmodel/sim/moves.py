"""Moves and conversions: mov (registers, immediates, special registers, symbol addresses, vector packing),
cvt (every rounding mode, saturation, the narrow float formats), cvta and isspacep (the address windows)."""
from __future__ import annotations

import numpy as np

from perfmodel.ptx.ir import TYPES, Vec
from perfmodel.sim.alu import Unsupported, builder
from perfmodel.sim.numeric import DIRECTED, _udt, bf16_to_f32, f32_to_bf16, pack_x2, round_directed, to_f16
from perfmodel.sim.values import DT


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


def to_tf32(x: np.ndarray, mode: str, satfinite: bool = False, relu: bool = False) -> np.ndarray:
    """float32 -> TensorFloat-32 in a .b32 register (PTX ISA, cvt: sign, 8 exponent bits and the top 10 mantissa
    bits; the low 13 bits zero): ``rna`` rounds to nearest with ties away from zero, ``rn`` to nearest even,
    ``rz`` toward zero. NaN stays NaN; a finite value that rounds past the largest tf32 becomes infinity (the
    largest finite tf32 with ``.satfinite``)."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    mag = u & np.uint64(0x7FFFFFFF)
    sign = u & np.uint64(0x80000000)
    nan = mag > np.uint64(0x7F800000)
    if mode == "rna":
        r = mag + np.uint64(0x1000)
    elif mode == "rn":
        r = mag + np.uint64(0xFFF) + ((mag >> np.uint64(13)) & np.uint64(1))
    else:
        r = mag
    r = np.where(mag >= np.uint64(0x7F800000), mag, r) & np.uint64(0xFFFFE000)
    if satfinite:
        r = np.where(~nan & (r >= np.uint64(0x7F800000)), np.uint64(0x7F7FE000), r)
    out = np.where(nan, np.uint64(0x7FFFFFFF), r | sign).astype(np.uint32)
    if relu:
        out = np.where(~nan & (sign != 0), np.uint32(0), out)
    return out


_FP8 = {"e4m3x2": ("float8_e4m3fn", 448.0), "e5m2x2": ("float8_e5m2", 57344.0)}


def _fp8_dtype(name: str) -> np.dtype:
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, _FP8[name][0]))


def to_fp8(x: np.ndarray, name: str, relu: bool) -> np.ndarray:
    """float32 / float16 values to fp8 bytes (uint8) as ``cvt.rn.satfinite``: round to nearest even, a value beyond
    the largest finite one (infinities included) becomes that largest one with its sign, NaN stays NaN (PTX ISA,
    cvt: .satfinite); ``.relu`` makes negatives 0. ml_dtypes gives the formats: float8_e4m3fn (the OCP/NVIDIA e4m3,
    largest 448, no infinity) and float8_e5m2 (largest 57344)."""
    v = np.asarray(x, np.float32)
    top = np.float32(_FP8[name][1])
    v = np.where(np.isnan(v), v, np.clip(v, -top, top))
    if relu:
        v = np.where(v < 0, np.float32(0), v)
    out = v.astype(_fp8_dtype(name)).view(np.uint8)
    # NaN is 0x7f in both formats on the GPU (measured: validation/raw/h200_fp8_convert.json; ml_dtypes gives e5m2's
    # NaN as 0x7e)
    return np.where(np.isnan(v), np.uint8(0x7F), out)


def from_fp8(b: np.ndarray, name: str) -> np.ndarray:
    """fp8 bytes (uint8) to float16, exactly (every e4m3 and e5m2 value is a float16 value); every NaN becomes the
    half 0x7fff, as the GPU gives it (measured: validation/raw/h200_fp8_convert.json)."""
    h = np.asarray(b, np.uint8).view(_fp8_dtype(name)).astype(np.float16)
    return np.where(np.isnan(h), np.uint16(0x7FFF).view(np.float16), h)


def _b_cvt_fp8(ins, ops):
    """``cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b`` (d = {fp8(a) high byte, fp8(b) low byte}),
    ``.f16x2 d, a`` (each half to its byte), and back, ``cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a`` (each byte to
    its half): CUDA's cuda_fp8.h conversions on CC 8.9 and later."""
    f8 = next(m for m in ins.mods if m in _FP8)
    w = ops.writer(ins.operands[0])
    relu = ins.has("relu")
    src = ins.mods[-1]
    if ins.mods[-1] == f8:         # fp8 pair -> f16x2
        if "f16x2" not in ins.mods:
            raise Unsupported(f"cvt from {f8} to {ins.mods[-2]}")
        g = ops.reader(ins.operands[1], "b16")

        def from8(st, fr):
            bits = g(st, fr).astype(np.uint16)
            lo = from_fp8((bits & 0xFF).astype(np.uint8), f8)
            hi = from_fp8((bits >> 8).astype(np.uint8), f8)
            if relu:
                lo, hi = np.maximum(lo, np.float16(0)), np.maximum(hi, np.float16(0))
            w(st, fr, lo.view(np.uint16).astype(np.uint32) | (hi.view(np.uint16).astype(np.uint32) << 16))
        return from8
    if not ins.has("satfinite") or src not in ("f32", "f16x2"):
        raise Unsupported(f"cvt to {f8} from {src} (cvt.rn.satfinite from .f32 or .f16x2 is run)")
    if src == "f32":
        ga, gb = ops.reader(ins.operands[1], "f32"), ops.reader(ins.operands[2], "f32")

        def to8(st, fr):
            hi, lo = to_fp8(ga(st, fr), f8, relu), to_fp8(gb(st, fr), f8, relu)
            w(st, fr, lo.astype(np.uint16) | (hi.astype(np.uint16) << 8))
        return to8
    g = ops.reader(ins.operands[1], "b32")

    def to8h(st, fr):
        bits = g(st, fr).astype(np.uint32)
        lo = to_fp8((bits & 0xFFFF).astype(np.uint16).view(np.float16), f8, relu)
        hi = to_fp8((bits >> 16).astype(np.uint16).view(np.float16), f8, relu)
        w(st, fr, lo.astype(np.uint16) | (hi.astype(np.uint16) << 8))
    return to8h


@builder("cvt")
def b_cvt(ins, ops):
    types = ins.types
    if any(m in _FP8 for m in ins.mods):
        return _b_cvt_fp8(ins, ops)
    if len(types) < 2:
        raise Unsupported(f"cvt with the types {'.'.join(ins.mods)}")
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
    if dt_t == "tf32":
        if at != "f32":
            raise Unsupported(f"cvt to tf32 from {at}")
        mode = next((m for m in mods if m in ("rna", "rn", "rz")), None)
        if mode is None:
            raise Unsupported("cvt.tf32.f32 without .rna / .rn / .rz")

        def cvt_tf32(st, fr):
            w(st, fr, to_tf32(g(st, fr), mode, "satfinite" in mods, "relu" in mods))
        return cvt_tf32
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
