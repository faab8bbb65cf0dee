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
