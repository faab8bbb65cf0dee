"""Byte- and half-word-lane integer instructions of real kernels: ``vabsdiff4`` (stereoDisparity's sum of absolute
differences) and ``dp4a`` / ``dp2a`` (int8 dot products), against byte arithmetic in numpy."""
import numpy as np

from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate


def _kernel(src, name):
    return load_kernel(source=src, path=name)


def test_vabsdiff4_sums_byte_differences():
    """stereoDisparity's SAD instruction (``vabsdiff4.u32.u32.u32.add``) and the SIMD form ``__vabsdiffu4``
    compiles to, against byte arithmetic in numpy."""
    program = _kernel(r"""
    __global__ void k(unsigned *o, const unsigned *a, const unsigned *b) {
        int i = threadIdx.x;
        unsigned r;
        asm("vabsdiff4.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(r) : "r"(a[i]), "r"(b[i]), "r"(7u));
        o[i] = r;
        o[32 + i] = __vabsdiffu4(a[i], b[i]);
    }""", "v.cu")
    rng = np.random.default_rng(0)
    a, b = (rng.integers(0, 2 ** 32, 32, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    o = np.zeros(64, np.uint32)
    simulate(program, 1, 32, [o, a, b])
    da = np.abs(a.view(np.uint8).reshape(32, 4).astype(int) - b.view(np.uint8).reshape(32, 4).astype(int))
    np.testing.assert_array_equal(o[:32], da.sum(axis=1) + 7)
    np.testing.assert_array_equal(o[32:], da.astype(np.uint8).view(np.uint32).reshape(-1))


def test_vabsdiff2_on_half_words():
    """``__vabsdiffu2`` (HeCBench's intrinsics-simd), ``vabsdiff2.s32.s32.s32`` and the ``.add`` form: |a - b|
    per 16-bit half (signed halves for .s32 sources), against numpy's int16 / uint16 lanes."""
    program = _kernel(r"""
    __global__ void k(unsigned *o, const unsigned *a, const unsigned *b) {
        int i = threadIdx.x;
        unsigned r;
        asm("vabsdiff2.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(r) : "r"(a[i]), "r"(b[i]), "r"(9u));
        o[i] = r;
        o[32 + i] = __vabsdiffu2(a[i], b[i]);
        asm("vabsdiff2.s32.s32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a[i]), "r"(b[i]), "r"(0));
        o[64 + i] = r;
    }""", "v2.cu")
    rng = np.random.default_rng(2)
    a, b = (rng.integers(0, 2 ** 32, 32, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    o = np.zeros(96, np.uint32)
    simulate(program, 1, 32, [o, a, b])
    du = np.abs(a.view(np.uint16).reshape(32, 2).astype(int) - b.view(np.uint16).reshape(32, 2).astype(int))
    ds = np.abs(a.view(np.int16).reshape(32, 2).astype(int) - b.view(np.int16).reshape(32, 2).astype(int))
    np.testing.assert_array_equal(o[:32], du.sum(axis=1) + 9)
    np.testing.assert_array_equal(o[32:64], du.astype(np.uint16).view(np.uint32).reshape(-1))
    # a signed difference can reach 65535, which the unsaturated form keeps as its low 16 bits
    np.testing.assert_array_equal(o[64:], (ds & 0xFFFF).astype(np.uint16).view(np.uint32).reshape(-1))


def test_dp4a_and_dp2a_sum_lane_products():
    """``__dp4a`` (signed and unsigned) and ``__dp2a_lo`` / ``__dp2a_hi``: c plus the lane products, each lane
    sign-extended for the signed forms, the sum wrapping modulo 2^32."""
    program = _kernel(r"""
    __global__ void k(int *o, const int *a, const int *b, const unsigned *ua) {
        int i = threadIdx.x;
        o[i] = __dp4a(a[i], b[i], 5);
        o[32 + i] = __dp4a(ua[i], ua[i + 1], 7u);
        o[64 + i] = __dp2a_lo(a[i], b[i], 3);
        o[96 + i] = __dp2a_hi(ua[i], ua[i + 1], 3u);
    }""", "d.cu")
    rng = np.random.default_rng(1)
    a, b = (rng.integers(-2 ** 31, 2 ** 31, 32).astype(np.int32) for _ in range(2))
    ua = rng.integers(0, 2 ** 32, 33, dtype=np.uint64).astype(np.uint32)
    o = np.zeros(128, np.int32)
    simulate(program, 1, 32, [o, a, b, ua])
    sa, sb = (x.view(np.int8).reshape(32, 4).astype(np.int64) for x in (a, b))
    u0 = ua[:32].view(np.uint8).reshape(32, 4).astype(np.int64)
    u1 = ua[1:].copy().view(np.uint8).reshape(32, 4).astype(np.int64)
    np.testing.assert_array_equal(o[:32], ((sa * sb).sum(axis=1) + 5).astype(np.int32))
    np.testing.assert_array_equal(o[32:64].view(np.uint32), (((u0 * u1).sum(axis=1) + 7) % 2 ** 32).astype(np.uint32))
    halves = a.view(np.int16).reshape(32, 2).astype(np.int64)
    np.testing.assert_array_equal(o[64:96], ((halves * sb[:, :2]).sum(axis=1) + 3).astype(np.int32))
    uhalves = ua[:32].view(np.uint16).reshape(32, 2).astype(np.int64)
    np.testing.assert_array_equal(o[96:].view(np.uint32),
                                  (((uhalves * u1[:, 2:]).sum(axis=1) + 3) % 2 ** 32).astype(np.uint32))


def _bmsk_isa(a: int, b: int, clamp: bool) -> int:
    """The PTX ISA's pseudo-code for bmsk, transcribed ("Integer Arithmetic Instructions: bmsk")."""
    full = 0xFFFFFFFF
    a1, b1 = a & 0x1F, b & 0x1F
    mask0 = (full << a1) & full
    s = a1 + b1
    mask1 = (full << s) & full if s < 32 else 0
    position_overflow = width_overflow = False
    if clamp:
        if a >= 32:
            position_overflow, mask0 = True, 0
        if b >= 32:
            width_overflow = True
    if s >= 32 or position_overflow or width_overflow:
        mask1 = 0
    elif b1 == 0:
        mask1 = full
    return mask0 & ~mask1 & full


def test_bmsk_follows_the_isa_pseudo_code():
    """``bmsk.clamp`` / ``bmsk.wrap`` (CUB's radix sort extracts digits with it) on operands below, at and above 32,
    against the PTX ISA's own pseudo-code."""
    program = _kernel(r"""
    __global__ void k(unsigned *o, const unsigned *a, const unsigned *b) {
        int i = threadIdx.x;
        unsigned c, w;
        asm("bmsk.clamp.b32 %0, %1, %2;" : "=r"(c) : "r"(a[i]), "r"(b[i]));
        asm("bmsk.wrap.b32 %0, %1, %2;" : "=r"(w) : "r"(a[i]), "r"(b[i]));
        o[i] = c;
        o[64 + i] = w;
    }""", "m.cu")
    rng = np.random.default_rng(2)
    a = np.concatenate([rng.integers(0, 40, 56), [0, 31, 32, 33, 5, 0, 40, 16]]).astype(np.uint32)
    b = np.concatenate([rng.integers(0, 40, 56), [0, 1, 0, 5, 32, 33, 40, 16]]).astype(np.uint32)
    o = np.zeros(128, np.uint32)
    simulate(program, 1, 64, [o, a, b])
    assert o[:64].tolist() == [_bmsk_isa(int(x), int(y), True) for x, y in zip(a, b)]
    assert o[64:].tolist() == [_bmsk_isa(int(x), int(y), False) for x, y in zip(a, b)]


CARRY = r"""
// 128-bit a + b and a - b in four 32-bit limbs, and the 64 x 64 -> 128-bit product of a's low halves, through the
// carry flag (add.cc / addc, sub.cc / subc, mad.lo.cc / madc.hi) - what multi-precision code compiles to
__global__ void k(const unsigned *a, const unsigned *b, unsigned *sum, unsigned *diff, unsigned *prod)
{
    int i = threadIdx.x;
    const unsigned *x = a + 4 * i, *y = b + 4 * i;
    unsigned s0, s1, s2, s3, d0, d1, d2, d3;
    asm("add.cc.u32 %0, %4, %8;\n\taddc.cc.u32 %1, %5, %9;\n\taddc.cc.u32 %2, %6, %10;\n\taddc.u32 %3, %7, %11;"
        : "=r"(s0), "=r"(s1), "=r"(s2), "=r"(s3)
        : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]), "r"(y[2]), "r"(y[3]));
    asm("sub.cc.u32 %0, %4, %8;\n\tsubc.cc.u32 %1, %5, %9;\n\tsubc.cc.u32 %2, %6, %10;\n\tsubc.u32 %3, %7, %11;"
        : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)
        : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]), "r"(y[2]), "r"(y[3]));
    sum[4 * i] = s0; sum[4 * i + 1] = s1; sum[4 * i + 2] = s2; sum[4 * i + 3] = s3;
    diff[4 * i] = d0; diff[4 * i + 1] = d1; diff[4 * i + 2] = d2; diff[4 * i + 3] = d3;
    unsigned long long p = (unsigned long long)x[0] | ((unsigned long long)x[1] << 32);
    unsigned long long q = (unsigned long long)y[0] | ((unsigned long long)y[1] << 32);
    unsigned long long lo = p * q, hi = __umul64hi(p, q);
    prod[4 * i] = (unsigned)lo; prod[4 * i + 1] = (unsigned)(lo >> 32);
    prod[4 * i + 2] = (unsigned)hi; prod[4 * i + 3] = (unsigned)(hi >> 32);
}
"""


def test_carry_chains_give_multi_precision_results():
    """add.cc / addc and sub.cc / subc chains (128-bit sums and differences in four limbs) and the 128-bit product
    (NVVM lowers __umul64hi through mad.lo.cc / madc.hi chains on some paths) against Python's integers."""
    program = _kernel(CARRY, "carry.cu")
    rng = np.random.default_rng(9)
    n = 32
    a = rng.integers(0, 2 ** 32, 4 * n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2 ** 32, 4 * n, dtype=np.uint64).astype(np.uint32)
    a[:4], b[:4] = 0xFFFFFFFF, [1, 0, 0, 0]              # a carry through every limb
    sums, diffs, prods = (np.zeros(4 * n, np.uint32) for _ in range(3))
    simulate(program, 1, n, [a, b, sums, diffs, prods])

    def value(limbs):
        return sum(int(v) << (32 * k) for k, v in enumerate(limbs))
    for i in range(n):
        x, y = value(a[4 * i:4 * i + 4]), value(b[4 * i:4 * i + 4])
        assert value(sums[4 * i:4 * i + 4]) == (x + y) % 2 ** 128
        assert value(diffs[4 * i:4 * i + 4]) == (x - y) % 2 ** 128
        assert value(prods[4 * i:4 * i + 4]) == (x % 2 ** 64) * (y % 2 ** 64)
    assert value(sums[:4]) == 0


def test_double_precision_math_library_with_carry_chains():
    """pow, erf, exp, log1p and atan2 in double precision (CUDA's math library uses carry chains inside pow)
    against numpy, within a few ulps (the library is not correctly rounded either)."""
    import math

    program = _kernel(r"""
    __global__ void k(double *o) {
        double x = o[threadIdx.x];
        o[threadIdx.x] = pow(x, 2.5);
        o[32 + threadIdx.x] = erf(x) + exp(x) + log1p(x) + atan2(x, 1.0);
    }""", "dm.cu")
    x = np.linspace(0.1, 2.0, 32)
    o = np.concatenate([x, np.zeros(32)])
    simulate(program, 1, 32, [o])
    np.testing.assert_allclose(o[:32], x ** 2.5, rtol=1e-14)
    expected = np.array([math.erf(v) for v in x]) + np.exp(x) + np.log1p(x) + np.arctan2(x, 1.0)
    np.testing.assert_allclose(o[32:], expected, rtol=1e-14)


def test_a_failed_assert_names_its_condition_line_and_thread():
    import pytest

    from perfmodel.errors import SimulationError

    program = _kernel("#include <cassert>\n__global__ void k(int *o)\n{\n    assert(o[threadIdx.x] >= 0);\n"
                      "    o[threadIdx.x] += 1;\n}\n", "assert.cu")
    o = np.zeros(64, np.int32)
    simulate(program, 1, 64, [o])                      # every condition holds: the kernel runs
    assert (o == 1).all()
    o[37] = -5
    with pytest.raises(SimulationError, match=r"assert\.cu:4:.*assertion failed: o\[threadIdx\.x\] >= 0 "
                                              r"\(thread \(37, 0, 0\), block \(0, 0, 0\)\)"):
        simulate(program, 1, 64, [o])


def test_half_precision_intrinsics_with_inline_asm_and_f16_set():
    """cuda_fp16.h's hsqrt / hexp / __hmax (inline asm declaring `.reg.b32 f` with no space, and `set.eq.f16.f16`
    writing 1.0 for true) against float16 arithmetic in numpy."""
    program = _kernel("#include <cuda_fp16.h>\n__global__ void k(__half *o) { __half x = o[threadIdx.x];\n"
                      "o[threadIdx.x] = hsqrt(x) + hexp(x) + __hmax(x, __float2half(0.5f)); }\n", "half.cu")
    x = np.linspace(0.1, 2, 32).astype(np.float16)
    o = x.copy()
    simulate(program, 1, 32, [o])
    f32 = x.astype(np.float32)
    expected = (np.sqrt(f32) + np.exp(f32)).astype(np.float16).astype(np.float32) + np.maximum(f32, 0.5)
    np.testing.assert_allclose(o.astype(np.float32), expected, rtol=2e-3)


LOP3 = r"""
__global__ void lop(const unsigned *a, const unsigned *b, const unsigned *c, unsigned *out)
{
    int i = threadIdx.x;
    unsigned x = a[i], y = b[i], z = c[i];
    unsigned r[4];
    asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(r[0]) : "r"(x), "r"(y), "r"(z));
    asm("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(r[1]) : "r"(x), "r"(y), "r"(z));
    asm("lop3.b32 %0, %1, %2, %3, 0xCA;" : "=r"(r[2]) : "r"(x), "r"(y), "r"(z));
    asm("lop3.b32 %0, %1, %2, %3, 0x1E;" : "=r"(r[3]) : "r"(x), "r"(y), "r"(z));
    for (int k = 0; k < 4; k++) out[4 * i + k] = r[k];
}
"""


def test_lop3_truth_tables(tmp_path):
    """immLut is the function applied to 0xF0, 0xCC, 0xAA (PTX ISA, lop3): 0x96 = a^b^c, 0xE8 = majority,
    0xCA = a ? b : c bit by bit, 0x1E = a ^ (b | c); checked against numpy's bitwise operators."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = tmp_path / "lop.cu"
    src.write_text(LOP3)
    program = load_kernel(src, entry="lop")
    rng = np.random.default_rng(1)
    a, b, c = (rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    out = np.zeros(128, np.uint32)
    simulate(program, 1, 32, [a, b, c, out])
    o = out.reshape(32, 4)
    assert np.array_equal(o[:, 0], a ^ b ^ c)
    assert np.array_equal(o[:, 1], (a & b) | (a & c) | (b & c))
    assert np.array_equal(o[:, 2], (a & b) | (~a & c))
    assert np.array_equal(o[:, 3], a ^ (b | c))


def test_packed_16_bit_integer_simd_intrinsics():
    """The CUDA Math API's two-half-word SIMD intrinsics, which NVRTC compiles to ``add``/``min``/``max`` on
    ``.s16x2``/``.u16x2`` (PTX ISA 8.0, sm_90) around other instructions (HeCBench's intrinsics-simd). Each is
    checked against its definition in the CUDA Math API ("SIMD Intrinsics"), computed per half-word in numpy:
    wrapping sums and differences, signed and unsigned min/max, saturating forms clamped to [-32768, 32767]. (The
    Math API writes __viaddmax_s16x2_relu as max(max(a + b, c), 0); CUDA's crt/device_functions.hpp computes
    a + b with add.s16x2, which wraps, and so does the reference here.)"""
    program = _kernel(r"""
    __global__ void k(unsigned *o, const unsigned *a, const unsigned *b, const unsigned *c) {
        int i = threadIdx.x, n = blockDim.x;
        unsigned x = a[i], y = b[i], z = c[i];
        o[0 * n + i] = __vadd2(x, y);
        o[1 * n + i] = __vsub2(x, y);
        o[2 * n + i] = __vmaxs2(x, y);
        o[3 * n + i] = __vmins2(x, y);
        o[4 * n + i] = __vmaxu2(x, y);
        o[5 * n + i] = __vminu2(x, y);
        o[6 * n + i] = __vabsdiffs2(x, y);
        o[7 * n + i] = __vneg2(x);
        o[8 * n + i] = __vabsss2(x);
        o[9 * n + i] = __vaddss2(x, y);
        o[10 * n + i] = __vsubss2(x, y);
        o[11 * n + i] = __viaddmax_s16x2_relu(x, y, z);
        o[12 * n + i] = __vimax_s16x2_relu(x, y);
        o[13 * n + i] = __vimin_s16x2_relu(x, y);
        o[14 * n + i] = __vhaddu2(x, y);
        o[15 * n + i] = __vnegss2(x);
    }""", "simd2.cu")
    rng = np.random.default_rng(7)
    n = 64
    edges = np.array([0x80008000, 0x7FFF7FFF, 0xFFFF0000, 0x00010001, 0x80007FFF, 0], np.uint32)
    a, b, c = (np.concatenate([edges, rng.integers(0, 2 ** 32, n - edges.size, dtype=np.uint64).astype(np.uint32)])
               for _ in range(3))
    b[:edges.size] = edges[::-1]
    o = np.zeros(16 * n, np.uint32)
    simulate(program, 1, n, [o, a, b, c])

    def s(v):
        return v.view(np.int16).reshape(n, 2).astype(np.int64)

    def u(v):
        return v.view(np.uint16).reshape(n, 2).astype(np.int64)

    def pack(h):                           # two 16-bit results (any integers) -> their low 16 bits, packed
        return (np.asarray(h) & 0xFFFF).astype(np.uint16).view(np.uint32).reshape(-1)

    def sat(h):
        return np.clip(h, -32768, 32767)

    def wrap(h):                           # a 16-bit signed result: __viaddmax's sum wraps before the max
        return (h + 32768) % 65536 - 32768

    x, y, z, ux, uy = s(a), s(b), s(c), u(a), u(b)
    expected = [x + y, x - y, np.maximum(x, y), np.minimum(x, y), np.maximum(ux, uy), np.minimum(ux, uy),
                np.abs(x - y), -x, sat(np.abs(x)), sat(x + y), sat(x - y),
                np.maximum(np.maximum(wrap(x + y), z), 0), np.maximum(np.maximum(x, y), 0),
                np.maximum(np.minimum(x, y), 0), (ux + uy) >> 1, sat(-x)]
    for k, e in enumerate(expected):
        np.testing.assert_array_equal(o[k * n:(k + 1) * n], pack(e), err_msg=f"intrinsic #{k}")


def test_scalar_video_instructions_against_the_gpu():
    """vadd, vsub, vabsdiff, vmin, vmax, vshl, vshr with .sat, .clamp / .wrap and .add / .min / .max (ccminer's
    jh512 takes ``vshl.u32.u32.u32.clamp.add``), every form of tests/data/video_scalar.cu on the 1,024 inputs an
    H200 ran them on (validation/microbench/video_scalar.py -> validation/video_scalar_h200.npz): bit for bit. Row 3
    (a saturating vshl, whose GPU results follow no rule found) is compiled only with -D SATURATING_SHIFT, and
    then refused by name."""
    import sys
    from pathlib import Path

    import pytest

    from perfmodel.errors import PerfmodelError

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "validation" / "microbench"))
    try:
        from video_scalar import ROWS, inputs
    finally:
        sys.path.pop(0)
    gpu = np.load(root / "validation" / "video_scalar_h200.npz")
    a, b, c = inputs()
    np.testing.assert_array_equal(a, gpu["a"])          # the measured inputs are the ones regenerated here
    n = a.size
    src = (root / "tests" / "data" / "video_scalar.cu").read_text()
    o = np.zeros(ROWS * n, np.uint32)
    simulate(_kernel(src, "video_scalar.cu"), n // 256, 256, [o, a, b, c, n])
    rows = [r for r in range(ROWS) if r != 3]
    np.testing.assert_array_equal(o.reshape(ROWS, n)[rows], gpu["o"].reshape(ROWS, n)[rows])
    with pytest.raises(PerfmodelError, match=r"a saturating vshl .*differs from the PTX ISA"):
        simulate(load_kernel(source=src, path="video_scalar.cu", defines={"SATURATING_SHIFT": 1}), 4, 256,
                 [o, a, b, c, n])
