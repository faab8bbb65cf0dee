"""Differential test of the simulator's C arithmetic against gcc.

Random typed expressions over int, unsigned and float operands (the mix exercises C's usual arithmetic
conversions, truncating division, modulo, shifts, wraparound, casts, comparisons, ternaries and double
literals) are evaluated by a kernel in the simulator and by the same C code compiled with gcc -fwrapv
(wrapping signed arithmetic, as the GPU does). Results must agree bit for bit. Operations whose C behaviour is
undefined (division by 0 or INT_MIN / -1, shift counts outside [0, 31], out-of-range float -> int) are guarded in
the generated code itself.
"""
import random
import shutil
import subprocess

import numpy as np
import pytest

from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate


pytestmark = [pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed as the C reference"),
              pytest.mark.usefixtures("ptx_only")]   # conftest.py: no nvdisasm, no SASS weights

N = 64
SAFE_DIV = "SD"    # macro: a divisor that is never 0 or -1


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def leaf(self, t):
        r = self.r
        if t == "int":
            return r.choice(["ia", "ib", "ic", f"({r.randint(-9, 9)})", "(-2147483647 - 1)", "2147483647"])
        if t == "unsigned":
            return r.choice(["ua", "ub", f"{r.randint(0, 9)}u", "4294967295u"])
        return r.choice(["fa", "fb", f"({r.uniform(-4, 4):.3f}f)", "0.1", "2.0"])

    def expr(self, t, depth):
        r = self.r
        if depth == 0 or r.random() < 0.25:
            return self.leaf(t)
        d = depth - 1
        if t in ("int", "unsigned"):
            other = r.choice(["int", "unsigned"])
            k = r.randrange(9)
            if k == 0:
                op = r.choice('+-*')
                if t == "int" and other == "int":      # signed overflow is undefined: wrap explicitly
                    return f"W{'ADD SUB MUL'.split()['+-*'.index(op)]}({self.expr(t, d)}, {self.expr(other, d)})"
                return f"({self.expr(t, d)} {op} {self.expr(other, d)})"
            if k == 1:
                return f"({self.expr(t, d)} {r.choice(['/', '%'])} {SAFE_DIV}({self.expr(t, d)}))"
            if k == 2:
                op = r.choice(['<<', '>>'])
                if t == "int" and op == "<<":            # shifting a negative int left is undefined before C++20
                    return f"WSHL({self.expr(t, d)}, ({self.expr('int', d)} & 31))"
                return f"({self.expr(t, d)} {op} ({self.expr('int', d)} & 31))"
            if k == 3:
                return f"({self.expr(t, d)} {r.choice('&|^')} {self.expr(other, d)})"
            if k == 4:
                a = r.choice(["int", "unsigned", "float"])
                return f"({t})({self.expr(a, d)} {r.choice(['<', '>', '<=', '>=', '==', '!='])} {self.expr(a, d)})"
            if k == 5:
                return f"({self.expr('int', d)} > 0 ? {self.expr(t, d)} : {self.expr(t, d)})"
            if k == 6:
                op = r.choice(['-', '~'])
                if t == "int" and op == "-":
                    return f"WNEG({self.expr(t, d)})"
                return f"({op}({self.expr(t, d)}))"
            if k == 7:     # in range: out-of-range float -> int is undefined in C (the GPU saturates)
                lo = "0.0f" if t == "unsigned" else "-1.0e6f"
                return f"({t})(fmaxf(fminf({self.expr('float', d)}, 1.0e6f), {lo}))"
            return f"({t})({self.expr(other, d)})"
        k = r.randrange(5)
        if k == 0:
            op = r.choice('+-*')
            if op == "*":           # FM: a multiplication NVVM may not contract into an fma (see PRELUDE)
                return f"FM({self.expr('float', d)}, {self.expr(r.choice(['float', 'int']), d)})"
            return f"({self.expr('float', d)} {op} {self.expr(r.choice(['float', 'int']), d)})"
        if k == 1:
            return f"({self.expr('float', d)} / (fabsf({self.expr('float', d)}) + 1.0f))"
        if k == 2:
            return f"(float)({self.expr(r.choice(['int', 'unsigned']), d)} % 1000)"
        if k == 3:
            return f"({self.expr('int', d)} < 0 ? {self.expr('float', d)} : {self.expr('float', d)})"
        return f"(-({self.expr('float', d)}))"


def _cases(seed, count=48):
    g = Gen(seed)
    out = []
    for i in range(count):
        t = ["int", "unsigned", "float"][i % 3]
        out.append((t, g.expr(t, 4)))
    return out


# Both sides: signed +, -, *, unary - and << wrap through unsigned arithmetic (signed overflow is undefined
# behaviour that NVVM exploits, e.g. folding (ib + 4) > 0 into ib > -4, so -fwrapv alone is not the GPU's
# semantics). FM(a, b) is a floating multiplication that the compiler may not fuse with a neighbouring add: on
# the device __fmul_rn / __dmul_rn in the promoted type of a * b (NVRTC contracts a * b + c into fma by
# default, gcc -ffp-contract=off never does), in C a plain a * b.
WRAP = """
#define WADD(a, b) ((int)((unsigned)(a) + (unsigned)(b)))
#define WSUB(a, b) ((int)((unsigned)(a) - (unsigned)(b)))
#define WMUL(a, b) ((int)((unsigned)(a) * (unsigned)(b)))
#define WNEG(a) ((int)(0u - (unsigned)(a)))
#define WSHL(a, n) ((int)((unsigned)(a) << (n)))
"""
PRELUDE = "#define SD(x) (((x) == 0 || (x) == (__typeof__(x))-1) ? 7 : (x))\n#define FM(a, b) ((a) * (b))\n" + WRAP
DEVICE_FM = """
__device__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
template <class A, class B> __device__ auto FM(A a, B b) -> decltype(a * b) {
    return mul_rn((decltype(a * b))a, (decltype(a * b))b);
}
"""


def _kernel_source(cases):
    body = "\n".join(f"    o_{t[0]}[{k} * {N} + t] = {e};" for k, (t, e) in enumerate(cases))
    return f"""
#define SD(x) (((x) == 0 || (x) == -1) ? 7 : (x))
{WRAP}{DEVICE_FM}
__global__ void fuzz(const int *IA, const int *IB, const int *IC, const unsigned int *UA, const unsigned int *UB,
                     const float *FA, const float *FB, int *o_i, unsigned int *o_u, float *o_f) {{
    int t = threadIdx.x;
    int ia = IA[t], ib = IB[t], ic = IC[t];
    unsigned int ua = UA[t], ub = UB[t];
    float fa = FA[t], fb = FB[t];
{body}
}}
"""


def _c_source(cases, inputs):
    arrays = []
    for name, arr in inputs.items():
        if arr.dtype == np.float32:
            vals = ", ".join(f"{float(v).hex()}f" for v in arr)
            arrays.append(f"static const float {name}[{N}] = {{{vals}}};")
        elif arr.dtype == np.uint32:
            arrays.append(f"static const unsigned int {name}[{N}] = {{{', '.join(f'{int(v)}u' for v in arr)}}};")
        else:
            arrays.append(f"static const int {name}[{N}] = {{{', '.join(f'({int(v)})' for v in arr)}}};")
    lines = []
    for k, (t, e) in enumerate(cases):
        if t == "float":
            lines.append(f"  {{ float v = {e}; unsigned int b; memcpy(&b, &v, 4); printf(\"%u\\n\", b); }}")
        elif t == "int":
            lines.append(f"  {{ int v = {e}; printf(\"%d\\n\", v); }}")
        else:
            lines.append(f"  {{ unsigned int v = {e}; printf(\"%u\\n\", v); }}")
    return ("#include <stdio.h>\n#include <string.h>\n#include <math.h>\n" + PRELUDE + "\n".join(arrays) +
            f"\nint main(void) {{\n for (int t = 0; t < {N}; ++t) {{\n"
            "  int ia = IA[t], ib = IB[t], ic = IC[t]; unsigned int ua = UA[t], ub = UB[t];\n"
            "  float fa = FA[t], fb = FB[t];\n" + "\n".join(lines) + "\n }\n return 0;\n}\n")


@pytest.mark.parametrize("seed", [int(s) for s in __import__("os").environ.get("FUZZ_SEEDS", "1,2,3").split(",")])
def test_simulator_arithmetic_matches_gcc(seed, tmp_path):
    rng = np.random.default_rng(seed)
    special = np.array([0, 1, -1, 2, -2, 7, -7, 2147483647, -2147483648, 31, 32, 33], np.int64)
    ints = lambda: np.concatenate([special, rng.integers(-2**31, 2**31, N - len(special))]).astype(np.int32)  # noqa: E731
    inputs = {"IA": ints(), "IB": ints(), "IC": rng.integers(-40, 40, N).astype(np.int32),
              "UA": ints().view(np.uint32), "UB": rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32),
              "FA": (rng.standard_normal(N) * 100).astype(np.float32),
              "FB": np.concatenate([[0.0, -0.0, 1.0, -1.5], rng.uniform(-3, 3, N - 4)]).astype(np.float32)}
    cases = _cases(seed)
    c_file = tmp_path / "ref.c"
    c_file.write_text(_c_source(cases, inputs))
    exe = tmp_path / "ref"
    subprocess.run(["gcc", "-O0", "-fwrapv", "-ffp-contract=off", "-std=gnu11", "-o", str(exe), str(c_file),
                    "-lm"], check=True, capture_output=True, timeout=60)
    ref = [int(x) for x in subprocess.run([str(exe)], check=True, capture_output=True, text=True,
                                         timeout=30).stdout.split()]
    ref = np.array(ref, dtype=np.int64).reshape(N, len(cases))

    o_i = np.zeros(len(cases) * N, np.int32)
    o_u = np.zeros(len(cases) * N, np.uint32)
    o_f = np.zeros(len(cases) * N, np.float32)
    program = load_kernel(source=_kernel_source(cases), entry="fuzz")
    simulate(program, 1, N, [inputs[k] for k in ("IA", "IB", "IC", "UA", "UB", "FA", "FB")] + [o_i, o_u, o_f])
    for k, (t, e) in enumerate(cases):
        col = ref[:, k]
        if t == "int":
            got = o_i[k * N:(k + 1) * N].astype(np.int64)
        elif t == "unsigned":
            got = o_u[k * N:(k + 1) * N].astype(np.int64)
        else:
            # gcc folds 0.0f - x into -x even without -ffast-math, so the sign of a zero may differ: compare
            # zeros as equal, everything else bit for bit
            got = o_f[k * N:(k + 1) * N].view(np.uint32).astype(np.int64)
            got = np.where(got == 0x80000000, 0, got)
            col = np.where(col == 0x80000000, 0, col)
        bad = np.flatnonzero(got != col)
        assert bad.size == 0, (f"expression {k} ({t}): {e}\n thread {bad[0]}: simulator {got[bad[0]]}, "
                               f"gcc {col[bad[0]]}")


# ---- 64-bit integers and doubles -----------------------------------------------------------------------------

WRAP64 = """
#define WADDL(a, b) ((long long)((unsigned long long)(a) + (unsigned long long)(b)))
#define WSUBL(a, b) ((long long)((unsigned long long)(a) - (unsigned long long)(b)))
#define WMULL(a, b) ((long long)((unsigned long long)(a) * (unsigned long long)(b)))
#define WNEGL(a) ((long long)(0ull - (unsigned long long)(a)))
#define WSHLL(a, n) ((long long)((unsigned long long)(a) << (n)))
#define SDL(x) (((x) == 0 || (x) == -1) ? 7 : (x))
"""


class Gen64:
    """Expressions of type long long ("ll"), unsigned long long ("ull") and double ("dbl"), mixed with int and
    float: 64-bit multiply/divide (NVVM turns division by constants into mul.hi sequences), shifts by up to 63,
    conversions between the widths and to and from double."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def leaf(self, t):
        r = self.r
        if t == "ll":
            return r.choice(["la", "lb", "(long long)ia", f"({r.randint(-99, 99)}LL)", "(-9223372036854775807LL - 1)",
                             "9223372036854775807LL", f"({r.randint(-2**40, 2**40)}LL)"])
        if t == "ull":
            return r.choice(["ula", "(unsigned long long)ua", f"{r.randint(0, 99)}ull", "18446744073709551615ull",
                             f"{r.randint(0, 2**63)}ull"])
        if t == "int":
            return r.choice(["ia", f"({r.randint(-9, 9)})"])
        return r.choice(["da", "db", "(double)fa", f"({r.uniform(-1e3, 1e3):.6f})", "0.1"])

    def expr(self, t, depth):
        r = self.r
        if depth == 0 or r.random() < 0.25 or t == "int":
            return self.leaf(t)
        d = depth - 1
        if t in ("ll", "ull"):
            other = r.choice(["ll", "ull", "int"])
            signed = "ull" not in (t, other)
            k = r.randrange(9)
            if k == 0:
                op = r.choice("+-*")
                if signed:
                    return f"W{'ADD SUB MUL'.split()['+-*'.index(op)]}L({self.expr(t, d)}, {self.expr(other, d)})"
                return f"({self.expr(t, d)} {op} {self.expr(other, d)})"
            if k == 1:
                if r.random() < 0.5:      # a constant divisor: NVVM's multiply-high sequences
                    c = r.choice([3, 7, 10, 1000, 641, 1 << 20, 0x100000001])
                    return f"({self.expr(t, d)} {r.choice(['/', '%'])} {c}{'LL' if t == 'll' else 'ull'})"
                return f"({self.expr(t, d)} {r.choice(['/', '%'])} SDL({self.expr(t, d)}))"
            if k == 2:
                op = r.choice(["<<", ">>"])
                if t == "ll" and op == "<<":
                    return f"WSHLL({self.expr(t, d)}, ({self.expr('int', d)} & 63))"
                return f"({self.expr(t, d)} {op} ({self.expr('int', d)} & 63))"
            if k == 3:
                return f"({self.expr(t, d)} {r.choice('&|^')} {self.expr(other, d)})"
            if k == 4:
                a = r.choice(["ll", "ull", "dbl", "int"])
                return f"(({'long long' if t == 'll' else 'unsigned long long'})" \
                       f"({self.expr(a, d)} {r.choice(['<', '>', '<=', '>=', '==', '!='])} {self.expr(a, d)}))"
            if k == 5:
                return f"({self.expr('ll', d)} > 0 ? {self.expr(t, d)} : {self.expr(t, d)})"
            if k == 6:
                if t == "ll" and r.random() < 0.5:
                    return f"WNEGL({self.expr(t, d)})"
                return f"(~({self.expr(t, d)}))"
            if k == 7:
                lo = "0.0" if t == "ull" else "-1.0e15"
                ct = "long long" if t == "ll" else "unsigned long long"
                return f"(({ct})(fmax(fmin({self.expr('dbl', d)}, 1.0e15), {lo})))"
            ct = "long long" if t == "ll" else "unsigned long long"
            narrow = r.choice(["", "(int)", "(unsigned)", "(short)", "(unsigned char)"])
            return f"(({ct}){narrow}({self.expr(r.choice(['ll', 'ull']), d)}))"
        k = r.randrange(7)
        if k == 0:
            op = r.choice("+-*")
            b = self.expr(r.choice(["dbl", "ll", "int"]), d)
            if op == "*":
                return f"FM({self.expr('dbl', d)}, {b})"
            return f"({self.expr('dbl', d)} {op} {b})"
        if k == 1:
            return f"({self.expr('dbl', d)} / (fabs({self.expr('dbl', d)}) + 1.0))"
        if k == 2:
            return f"(double)({self.expr('ll', d)} % 1000000007LL)"
        if k == 3:
            return f"({self.expr('ll', d)} < 0 ? {self.expr('dbl', d)} : {self.expr('dbl', d)})"
        if k == 4:
            return f"((double)(float)({self.expr('dbl', d)}))"
        if k == 5:
            return f"((double)({self.expr(r.choice(['ll', 'ull']), d)}))"
        return f"(-({self.expr('dbl', d)}))"


def _cases64(seed, count=36):
    g = Gen64(seed)
    return [(t, g.expr(t, 4)) for t in (["ll", "ull", "dbl"] * count)[:count]]


_DECL64 = ("long long la = LA[t], lb = LB[t]; unsigned long long ula = ULA[t]; double da = DA[t], db = DB[t]; "
           "int ia = IA[t]; unsigned ua = UA[t]; float fa = FA[t];")
_ORDER64 = ("LA", "LB", "ULA", "DA", "DB", "IA", "UA", "FA")


@pytest.mark.parametrize("seed", [int(s) for s in __import__("os").environ.get("FUZZ_SEEDS", "1,2,3").split(",")])
def test_64bit_integers_and_doubles_match_gcc(seed, tmp_path):
    rng = np.random.default_rng(100 + seed)
    special = np.array([0, 1, -1, 7, -7, 2**31, -2**31 - 1, 2**32, 2**63 - 1, -2**63, 2**62 + 3], np.int64)
    l64 = lambda: np.concatenate([special, rng.integers(-2**63, 2**63 - 1, N - len(special), dtype=np.int64)])  # noqa: E731
    inputs = {"LA": l64(), "LB": l64(), "ULA": l64().view(np.uint64),
              "DA": np.concatenate([[0.0, -0.0, 1.5, -2.5, 1e300, 2.0**53 + 1, 0.1],
                                    rng.standard_normal(N - 7) * 1e6]).astype(np.float64),
              "DB": (rng.standard_normal(N) * 1e3).astype(np.float64),
              "IA": rng.integers(-2**31, 2**31, N).astype(np.int32),
              "UA": rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32),
              "FA": (rng.standard_normal(N) * 100).astype(np.float32)}
    cases = _cases64(seed)
    outs = {"ll": "o_l", "ull": "o_u", "dbl": "o_d"}
    body = "\n".join(f"    {outs[t]}[{k} * {N} + t] = {e};" for k, (t, e) in enumerate(cases))
    cuda = (WRAP64 + DEVICE_FM + "__global__ void fuzz64(const long long *LA, const long long *LB, "
            "const unsigned long long *ULA, const double *DA, const double *DB, const int *IA, const unsigned *UA, "
            "const float *FA, long long *o_l, unsigned long long *o_u, double *o_d) {\n"
            f"    int t = threadIdx.x;\n    {_DECL64}\n{body}\n}}\n")
    arrays = []
    for name in _ORDER64:
        arr = inputs[name]
        if arr.dtype.kind == "f":
            ct, vals = ("double" if arr.dtype == np.float64 else "float"), \
                ", ".join(float(v).hex() + ("" if arr.dtype == np.float64 else "f") for v in arr)
        elif arr.dtype == np.int64:
            ct, vals = "long long", ", ".join(f"({int(v)}LL)" if v > -2**63 else "(-9223372036854775807LL - 1)"
                                              for v in arr)
        elif arr.dtype == np.uint64:
            ct, vals = "unsigned long long", ", ".join(f"{int(v)}ull" for v in arr)
        elif arr.dtype == np.uint32:
            ct, vals = "unsigned", ", ".join(f"{int(v)}u" for v in arr)
        else:
            ct, vals = "int", ", ".join(f"({int(v)})" for v in arr)
        arrays.append(f"static const {ct} {name}[{N}] = {{{vals}}};")
    lines = []
    for t, e in cases:
        if t == "dbl":
            lines.append(f"  {{ double v = {e}; unsigned long long b; memcpy(&b, &v, 8); printf(\"%llu\\n\", b); }}")
        elif t == "ll":
            lines.append(f"  {{ long long v = {e}; printf(\"%lld\\n\", v); }}")
        else:
            lines.append(f"  {{ unsigned long long v = {e}; printf(\"%llu\\n\", v); }}")
    c = ("#include <stdio.h>\n#include <string.h>\n#include <math.h>\n#define FM(a, b) ((a) * (b))\n" + WRAP64 +
         "\n".join(arrays) + f"\nint main(void) {{\n for (int t = 0; t < {N}; ++t) {{\n  {_DECL64}\n" +
         "\n".join(lines) + "\n }\n return 0;\n}\n")
    (tmp_path / "ref.c").write_text(c)
    subprocess.run(["gcc", "-O0", "-fwrapv", "-ffp-contract=off", "-std=gnu11", "-o", str(tmp_path / "ref"),
                    str(tmp_path / "ref.c"), "-lm"], check=True, capture_output=True, timeout=60)
    out = subprocess.run([str(tmp_path / "ref")], check=True, capture_output=True, text=True, timeout=30).stdout
    ref = [int(v) & (2**64 - 1) for v in out.split()]
    ref = np.array(ref, dtype=np.uint64).reshape(N, len(cases))
    o_l = np.zeros(len(cases) * N, np.int64)
    o_u = np.zeros(len(cases) * N, np.uint64)
    o_d = np.zeros(len(cases) * N, np.float64)
    simulate(load_kernel(source=cuda, entry="fuzz64"), 1, N, [inputs[k] for k in _ORDER64] + [o_l, o_u, o_d])
    for k, (t, e) in enumerate(cases):
        col = ref[:, k]
        got = {"ll": o_l, "ull": o_u, "dbl": o_d}[t][k * N:(k + 1) * N].view(np.uint64)
        same = got == col
        if t == "dbl":          # zeros of either sign and NaNs of any payload compare equal
            g, w = got.view(np.float64), col.view(np.float64)
            same |= ((g == 0) & (w == 0)) | (np.isnan(g) & np.isnan(w))
        bad = np.flatnonzero(~same)
        assert bad.size == 0, (f"expression {k} ({t}): {e}\n thread {bad[0]}: simulator {int(got[bad[0]]):#x}, "
                               f"gcc {int(col[bad[0]]):#x}")


# ---- intrinsics and single PTX instructions against C reference implementations -----------------------------
#
# Each case is (result kind, CUDA expression, C expression). The CUDA side uses the CUDA intrinsics (or inline PTX
# for the instructions NVVM only emits in special patterns: shl/shr with counts >= 32, bfe, bfi, bfind); the C
# side is the documented semantics written out (PTX ISA pseudocode, C99 <math.h>, gcc's _Float16 and __int128).
# Results are compared as bits; NaNs of float results are compared as "any NaN" (the GPU's canonical NaN and
# x86's default NaN differ, and neither is what this test is about).

INTRINSIC_DEVICE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__device__ unsigned fbits(float x) { return __float_as_uint(x); }
__device__ unsigned long long dbits(double x) { return (unsigned long long)__double_as_longlong(x); }
__device__ unsigned f2h(float x) { return __half_as_ushort(__float2half_rn(x)); }
__device__ unsigned f2bf(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
__device__ float h2f(unsigned h) { return __half2float(__ushort_as_half((unsigned short)h)); }
__device__ unsigned hadd(float a, float b) { return __half_as_ushort(__hadd(__float2half_rn(a), __float2half_rn(b))); }
__device__ unsigned hmul(float a, float b) { return __half_as_ushort(__hmul(__float2half_rn(a), __float2half_rn(b))); }
__device__ unsigned hfma(float a, float b, float c) {
    return __half_as_ushort(__hfma(__float2half_rn(a), __float2half_rn(b), __float2half_rn(c))); }
__device__ unsigned f2h_rz(float x) { return __half_as_ushort(__float2half_rz(x)); }
__device__ unsigned f2h_ru(float x) { return __half_as_ushort(__float2half_ru(x)); }
__device__ unsigned h2add_lo_hi(float a, float b, float c, float d) {
    __half2 x = __floats2half2_rn(a, b), y = __floats2half2_rn(c, d);
    __half2 r = __hadd2(x, y);
    return (unsigned)__half_as_ushort(__low2half(r)) | ((unsigned)__half_as_ushort(__high2half(r)) << 16); }
__device__ unsigned SHL(unsigned a, unsigned n) { unsigned r; asm("shl.b32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(n)); return r; }
__device__ unsigned SHRU(unsigned a, unsigned n) { unsigned r; asm("shr.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(n)); return r; }
__device__ int SHRS(int a, unsigned n) { int r; asm("shr.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(n)); return r; }
__device__ unsigned long long SHL64(unsigned long long a, unsigned n) {
    unsigned long long r; asm("shl.b64 %0, %1, %2;" : "=l"(r) : "l"(a), "r"(n)); return r; }
__device__ long long SHRS64(long long a, unsigned n) {
    long long r; asm("shr.s64 %0, %1, %2;" : "=l"(r) : "l"(a), "r"(n)); return r; }
__device__ unsigned BFEU(unsigned a, unsigned p, unsigned l) {
    unsigned r; asm("bfe.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(p), "r"(l)); return r; }
__device__ int BFES(int a, unsigned p, unsigned l) {
    int r; asm("bfe.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(p), "r"(l)); return r; }
__device__ long long BFES64(long long a, unsigned p, unsigned l) {
    long long r; asm("bfe.s64 %0, %1, %2, %3;" : "=l"(r) : "l"(a), "r"(p), "r"(l)); return r; }
__device__ unsigned BFI(unsigned f, unsigned b, unsigned p, unsigned l) {
    unsigned r; asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(r) : "r"(f), "r"(b), "r"(p), "r"(l)); return r; }
__device__ unsigned BFINDU(unsigned a) { unsigned r; asm("bfind.u32 %0, %1;" : "=r"(r) : "r"(a)); return r; }
__device__ unsigned BFINDS(int a) { unsigned r; asm("bfind.s32 %0, %1;" : "=r"(r) : "r"(a)); return r; }
__device__ unsigned BFINDSA(unsigned a) { unsigned r; asm("bfind.shiftamt.u32 %0, %1;" : "=r"(r) : "r"(a)); return r; }
__device__ unsigned CNOT(unsigned a) { unsigned r; asm("cnot.b32 %0, %1;" : "=r"(r) : "r"(a)); return r; }
__device__ int ADDSAT(int a, int b) { int r; asm("add.sat.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ int SUBSAT(int a, int b) { int r; asm("sub.sat.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ int MUL24(int a, int b) { return __mul24(a, b); }
__device__ unsigned CVT_SAT_U8(int a) { unsigned short r; asm("cvt.sat.u8.s32 %0, %1;" : "=h"(r) : "r"(a)); return r; }
__device__ int CVT_SAT_S16(unsigned a) { short r; asm("cvt.sat.s16.u32 %0, %1;" : "=h"(r) : "r"(a)); return r; }
__device__ unsigned CVT_SAT_U32(int a) { unsigned r; asm("cvt.sat.u32.s32 %0, %1;" : "=r"(r) : "r"(a)); return r; }
__device__ float CVT_RNI(float a) { float r; asm("cvt.rni.f32.f32 %0, %1;" : "=f"(r) : "f"(a)); return r; }
__device__ float CVT_SATF(float a) { float r; asm("cvt.sat.f32.f32 %0, %1;" : "=f"(r) : "f"(a)); return r; }
__device__ unsigned SETP_NEU(float a, float b) { unsigned r; asm("{ .reg .pred p; setp.neu.f32 p, %1, %2; selp.u32 %0, 1, 0, p; }" : "=r"(r) : "f"(a), "f"(b)); return r; }
__device__ unsigned SETP_NE(float a, float b) { unsigned r; asm("{ .reg .pred p; setp.ne.f32 p, %1, %2; selp.u32 %0, 1, 0, p; }" : "=r"(r) : "f"(a), "f"(b)); return r; }
__device__ unsigned SETP_GEU(float a, float b) { unsigned r; asm("{ .reg .pred p; setp.geu.f32 p, %1, %2; selp.u32 %0, 1, 0, p; }" : "=r"(r) : "f"(a), "f"(b)); return r; }
__device__ unsigned SETP_NUM(float a, float b) { unsigned r; asm("{ .reg .pred p; setp.num.f32 p, %1, %2; selp.u32 %0, 1, 0, p; }" : "=r"(r) : "f"(a), "f"(b)); return r; }
__device__ unsigned SET_LT(float a, float b) { unsigned r; asm("set.lt.u32.f32 %0, %1, %2;" : "=r"(r) : "f"(a), "f"(b)); return r; }
__device__ unsigned SETP_PAIR(int a, int b) { unsigned r; asm("{ .reg .pred p, q; setp.lt.s32 p|q, %1, %2; selp.u32 %0, 1, 2, q; }" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ unsigned TESTP_SUB(float a) { unsigned r; asm("{ .reg .pred p; testp.subnormal.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(r) : "f"(a)); return r; }
__device__ unsigned TESTP_NORM(float a) { unsigned r; asm("{ .reg .pred p; testp.normal.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(r) : "f"(a)); return r; }
__device__ unsigned PRMT(unsigned a, unsigned b, unsigned c) { return __byte_perm(a, b, c); }
#define PRMT_MODE(m) __device__ unsigned PRMT_##m(unsigned a, unsigned b, unsigned c) { \
    unsigned r; asm("prmt.b32." #m " %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
PRMT_MODE(f4e) PRMT_MODE(b4e) PRMT_MODE(rc8) PRMT_MODE(ecl) PRMT_MODE(ecr) PRMT_MODE(rc16)
__device__ unsigned PRMT_FULL(unsigned a, unsigned b, unsigned c) {   /* default mode with the sign bit of selectors */
    unsigned r; asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
__device__ float MINNAN(float a, float b) { float r; asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__device__ float MAXNAN(float a, float b) { float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__device__ int MAXRELU(int a, int b) { int r; asm("max.relu.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ int MINRELU(int a, int b) { int r; asm("min.relu.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ int MAD24(int a, int b, int c) { int r; asm("mad24.lo.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
__device__ unsigned MAD24HIU(unsigned a, unsigned b, unsigned c) { unsigned r; asm("mad24.hi.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
__device__ int MUL24HI(int a, int b) { int r; asm("mul24.hi.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ unsigned SHFL_DOWN_BIG(unsigned v, unsigned d) { return __shfl_down_sync(0xffffffffu, v, d); }
__device__ unsigned SHF_L(unsigned lo, unsigned hi, unsigned n) { return __funnelshift_l(lo, hi, n); }
__device__ unsigned SHF_RC(unsigned lo, unsigned hi, unsigned n) { return __funnelshift_rc(lo, hi, n); }
"""

# The same names in C: the PTX ISA's definitions
INTRINSIC_C = r"""
#include <stdint.h>
typedef unsigned long long u64;
static unsigned fbits(float x) { unsigned b; memcpy(&b, &x, 4); return b; }
static u64 dbits(double x) { u64 b; memcpy(&b, &x, 8); return b; }
static unsigned f2h(float x) {   /* NaN -> the canonical 0x7fff, as cuda_fp16.hpp's __internal_float2half */
    if (x != x) return 0x7fff;
    _Float16 h = (_Float16)x; unsigned short b; memcpy(&b, &h, 2); return b; }
static float h2f(unsigned h) { unsigned short s = (unsigned short)h; _Float16 v; memcpy(&v, &s, 2); return (float)v; }
static unsigned f2bf(float x) {   /* round to nearest even on the top 16 bits; NaN -> canonical */
    unsigned u = fbits(x);
    if (x != x) return 0x7fff;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; }
static unsigned hadd(float a, float b) { return f2h(h2f(f2h(a)) + h2f(f2h(b))); }
static unsigned hmul(float a, float b) { return f2h(h2f(f2h(a)) * h2f(f2h(b))); }
static unsigned hfma(float a, float b, float c) {   /* the sum is exact in double here; one rounding to half */
    double r = (double)h2f(f2h(a)) * h2f(f2h(b)) + h2f(f2h(c));
    if (r != r) return 0x7fff;
    _Float16 h = (_Float16)r; unsigned short u; memcpy(&u, &h, 2); return u; }
static unsigned h2add_lo_hi(float a, float b, float c, float d) { return hadd(a, c) | (hadd(b, d) << 16); }
static unsigned SHL(unsigned a, unsigned n) { return n >= 32 ? 0 : a << n; }
static unsigned SHRU(unsigned a, unsigned n) { return n >= 32 ? 0 : a >> n; }
static int SHRS(int a, unsigned n) { return a >> (n >= 31 ? 31 : n); }
static u64 SHL64(u64 a, unsigned n) { return n >= 64 ? 0 : a << n; }
static long long SHRS64(long long a, unsigned n) { return a >> (n >= 63 ? 63 : n); }
static u64 bfe_(u64 a, unsigned p, unsigned l, int msb, int sgn) {
    p &= 0xff; l &= 0xff;
    int sbit = (!sgn || l == 0) ? 0 : (int)((a >> ((p + l - 1) > (unsigned)msb ? (unsigned)msb : (p + l - 1))) & 1);
    u64 d = 0;
    for (int i = 0; i <= msb; i++) {
        int bit = ((unsigned)i < l && p + i <= (unsigned)msb) ? (int)((a >> (p + i)) & 1) : sbit;
        d |= (u64)bit << i;
    }
    return d; }
static unsigned BFEU(unsigned a, unsigned p, unsigned l) { return (unsigned)bfe_(a, p, l, 31, 0); }
static int BFES(int a, unsigned p, unsigned l) { return (int)(unsigned)bfe_((unsigned)a, p, l, 31, 1); }
static long long BFES64(long long a, unsigned p, unsigned l) { return (long long)bfe_((u64)a, p, l, 63, 1); }
static unsigned BFI(unsigned f, unsigned b, unsigned p, unsigned l) {
    p &= 0xff; l &= 0xff;
    unsigned d = b;
    for (unsigned i = 0; i < l && p + i <= 31; i++) d = (d & ~(1u << (p + i))) | (((f >> i) & 1u) << (p + i));
    return d; }
static unsigned BFINDU(unsigned a) { return a == 0 ? 0xffffffffu : 31 - __builtin_clz(a); }
static unsigned BFINDS(int a) { unsigned u = a < 0 ? ~(unsigned)a : (unsigned)a; return u == 0 ? 0xffffffffu : 31 - __builtin_clz(u); }
static unsigned BFINDSA(unsigned a) { return a == 0 ? 0xffffffffu : __builtin_clz(a); }
static unsigned CNOT(unsigned a) { return a == 0; }
static int ADDSAT(int a, int b) { long long s = (long long)a + b; return s > 2147483647 ? 2147483647 : s < -2147483647 - 1 ? -2147483647 - 1 : (int)s; }
static int SUBSAT(int a, int b) { long long s = (long long)a - b; return s > 2147483647 ? 2147483647 : s < -2147483647 - 1 ? -2147483647 - 1 : (int)s; }
static int MUL24(int a, int b) { long long x = (a << 8) >> 8, y = (b << 8) >> 8; return (int)(unsigned)(x * y); }
static unsigned CVT_SAT_U8(int a) { return a < 0 ? 0 : a > 255 ? 255 : a; }
static int CVT_SAT_S16(unsigned a) { return a > 32767u ? 32767 : (int)a; }
static unsigned CVT_SAT_U32(int a) { return a < 0 ? 0 : (unsigned)a; }
static float CVT_RNI(float a) { return nearbyintf(a); }
static float CVT_SATF(float a) { return a != a ? 0.0f : a < 0.0f ? 0.0f : a > 1.0f ? 1.0f : a; }
static unsigned SETP_NEU(float a, float b) { return !(a == b); }
static unsigned SETP_NE(float a, float b) { return a < b || a > b; }
static unsigned SETP_GEU(float a, float b) { return !(a < b); }
static unsigned SETP_NUM(float a, float b) { return a == a && b == b; }
static unsigned SET_LT(float a, float b) { return a < b ? 0xffffffffu : 0; }
static unsigned SETP_PAIR(int a, int b) { return a < b ? 2 : 1; }
static unsigned TESTP_SUB(float a) { return fpclassify(a) == FP_SUBNORMAL; }
static unsigned TESTP_NORM(float a) { return fpclassify(a) == FP_NORMAL; }
static unsigned PRMT(unsigned a, unsigned b, unsigned c) {
    u64 x = (u64)a | ((u64)b << 32); unsigned d = 0;
    for (int i = 0; i < 4; i++) {
        unsigned sel = (c >> (4 * i)) & 7;   /* __byte_perm uses the low 3 bits of each selector */
        d |= (unsigned)((x >> (8 * sel)) & 0xff) << (8 * i);
    }
    return d; }
/* PTX ISA prmt: the special modes by the table (result bytes b3 b2 b1 b0 for c[1:0] = 0..3) */
static const char *PRMT_TABLE[6][4] = {
    {"3210", "4321", "5432", "6543"}, {"5670", "6701", "7012", "0123"}, {"0000", "1111", "2222", "3333"},
    {"3210", "3211", "3222", "3333"}, {"0000", "1110", "2210", "3210"}, {"1010", "3232", "1010", "3232"}};
static unsigned prmt_mode(int m, unsigned a, unsigned b, unsigned c) {
    u64 x = (u64)a | ((u64)b << 32); const char *sel = PRMT_TABLE[m][c & 3]; unsigned d = 0;
    for (int i = 0; i < 4; i++) d |= (unsigned)((x >> (8 * (sel[3 - i] - '0'))) & 0xff) << (8 * i);
    return d; }
static unsigned PRMT_f4e(unsigned a, unsigned b, unsigned c) { return prmt_mode(0, a, b, c); }
static unsigned PRMT_b4e(unsigned a, unsigned b, unsigned c) { return prmt_mode(1, a, b, c); }
static unsigned PRMT_rc8(unsigned a, unsigned b, unsigned c) { return prmt_mode(2, a, b, c); }
static unsigned PRMT_ecl(unsigned a, unsigned b, unsigned c) { return prmt_mode(3, a, b, c); }
static unsigned PRMT_ecr(unsigned a, unsigned b, unsigned c) { return prmt_mode(4, a, b, c); }
static unsigned PRMT_rc16(unsigned a, unsigned b, unsigned c) { return prmt_mode(5, a, b, c); }
static unsigned PRMT_FULL(unsigned a, unsigned b, unsigned c) {
    u64 x = (u64)a | ((u64)b << 32); unsigned d = 0;
    for (int i = 0; i < 4; i++) {
        unsigned s = (c >> (4 * i)) & 0xf, byte = (unsigned)((x >> (8 * (s & 7))) & 0xff);
        if (s & 8) byte = (byte & 0x80) ? 0xff : 0;           /* msb of the selector: replicate the sign */
        d |= byte << (8 * i);
    }
    return d; }
static float MINNAN(float a, float b) { return (a != a || b != b) ? NAN : fminf(a, b); }
static float MAXNAN(float a, float b) { return (a != a || b != b) ? NAN : fmaxf(a, b); }
static int MAXRELU(int a, int b) { int m = a > b ? a : b; return m > 0 ? m : 0; }
static int MINRELU(int a, int b) { int m = a < b ? a : b; return m > 0 ? m : 0; }
static long long s24(int a) { return (long long)(((unsigned)a << 8)) << 32 >> 40; }
static int MAD24(int a, int b, int c) { return (int)((unsigned)(s24(a) * s24(b)) + (unsigned)c); }
static unsigned MAD24HIU(unsigned a, unsigned b, unsigned c) { return (unsigned)((((u64)(a & 0xffffff) * (b & 0xffffff)) >> 16) + c); }
static int MUL24HI(int a, int b) { return (int)(unsigned)((u64)(s24(a) * s24(b)) >> 16); }
static unsigned SHF_L(unsigned lo, unsigned hi, unsigned n) { u64 x = ((u64)hi << 32) | lo; return (unsigned)((x << (n & 31)) >> 32); }
static unsigned SHF_RC(unsigned lo, unsigned hi, unsigned n) { u64 x = ((u64)hi << 32) | lo; n = n > 32 ? 32 : n; return (unsigned)(x >> n); }
#include <fenv.h>
/* directed rounding: the operation run under fesetround (gcc -frounding-math -O0 keeps it in place) */
#define UNDER(mode, T, expr) do { fesetround(mode); volatile T r_ = (expr); fesetround(FE_TONEAREST); return r_; } while (0)
static float __fadd_rd(float a, float b) { UNDER(FE_DOWNWARD, float, a + b); }
static float __fadd_ru(float a, float b) { UNDER(FE_UPWARD, float, a + b); }
static float __fadd_rz(float a, float b) { UNDER(FE_TOWARDZERO, float, a + b); }
static float __fsub_ru(float a, float b) { UNDER(FE_UPWARD, float, a - b); }
static float __fmul_rz(float a, float b) { UNDER(FE_TOWARDZERO, float, a * b); }
static float __fmul_ru(float a, float b) { UNDER(FE_UPWARD, float, a * b); }
static float __fdiv_rd(float a, float b) { UNDER(FE_DOWNWARD, float, a / b); }
static float __fdiv_rz(float a, float b) { UNDER(FE_TOWARDZERO, float, a / b); }
static float __frcp_ru(float a) { UNDER(FE_UPWARD, float, 1.0f / a); }
static float __fsqrt_rd(float a) { UNDER(FE_DOWNWARD, float, sqrtf(a)); }
static float __fmaf_rz(float a, float b, float c) { UNDER(FE_TOWARDZERO, float, fmaf(a, b, c)); }
static float __fmaf_ru(float a, float b, float c) { UNDER(FE_UPWARD, float, fmaf(a, b, c)); }
static double __dadd_rz(double a, double b) { UNDER(FE_TOWARDZERO, double, a + b); }
static double __dmul_ru(double a, double b) { UNDER(FE_UPWARD, double, a * b); }
static double __ddiv_rd(double a, double b) { UNDER(FE_DOWNWARD, double, a / b); }
static double __dsqrt_ru(double a) { UNDER(FE_UPWARD, double, sqrt(a)); }
static float __double2float_rd(double a) { UNDER(FE_DOWNWARD, float, (float)a); }
static float __double2float_ru(double a) { UNDER(FE_UPWARD, float, (float)a); }
static float __double2float_rz(double a) { UNDER(FE_TOWARDZERO, float, (float)a); }
static float __int2float_rz(int a) { UNDER(FE_TOWARDZERO, float, (float)a); }
static float __int2float_rd(int a) { UNDER(FE_DOWNWARD, float, (float)a); }
static float __uint2float_ru(unsigned a) { UNDER(FE_UPWARD, float, (float)a); }
static float __ll2float_rd(long long a) { UNDER(FE_DOWNWARD, float, (float)a); }
static float __ull2float_rz(u64 a) { UNDER(FE_TOWARDZERO, float, (float)a); }
static double __ll2double_ru(long long a) { UNDER(FE_UPWARD, double, (double)a); }
static unsigned f2h_rz(float x) { if (x != x) return 0x7fff; fesetround(FE_TOWARDZERO); volatile _Float16 h = (_Float16)x; fesetround(FE_TONEAREST); unsigned short b; _Float16 hh = h; memcpy(&b, &hh, 2); return b; }
static unsigned f2h_ru(float x) { if (x != x) return 0x7fff; fesetround(FE_UPWARD); volatile _Float16 h = (_Float16)x; fesetround(FE_TONEAREST); unsigned short b; _Float16 hh = h; memcpy(&b, &hh, 2); return b; }
static int __popc(unsigned a) { return __builtin_popcount(a); }
static int __popcll(u64 a) { return __builtin_popcountll(a); }
static int __clz(int a) { return a == 0 ? 32 : __builtin_clz((unsigned)a); }
static int __clzll(long long a) { return a == 0 ? 64 : __builtin_clzll((u64)a); }
static int __ffs(int a) { return __builtin_ffs(a); }
static unsigned __brev(unsigned a) { unsigned r = 0; for (int i = 0; i < 32; i++) r |= ((a >> i) & 1u) << (31 - i); return r; }
static u64 __brevll(u64 a) { u64 r = 0; for (int i = 0; i < 64; i++) r |= ((a >> i) & 1ull) << (63 - i); return r; }
static int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((u64)a * b) >> 32); }
static long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static u64 __umul64hi(u64 a, u64 b) { return (u64)(((unsigned __int128)a * b) >> 64); }
static unsigned __sad(int a, int b, unsigned c) { return (a > b ? (unsigned)a - (unsigned)b : (unsigned)b - (unsigned)a) + c; }
static double f2i_clamp(double x, double lo, double hi) { return x != x ? 0 : x < lo ? lo : x > hi ? hi : x; }
static int __float2int_rn(float a) { return (int)f2i_clamp(nearbyint(a), -2147483648.0, 2147483647.0); }
static int __float2int_rd(float a) { return (int)f2i_clamp(floor(a), -2147483648.0, 2147483647.0); }
static int __float2int_ru(float a) { return (int)f2i_clamp(ceil(a), -2147483648.0, 2147483647.0); }
static int __float2int_rz(float a) { return (int)f2i_clamp(trunc(a), -2147483648.0, 2147483647.0); }
static unsigned __float2uint_rn(float a) { return (unsigned)f2i_clamp(nearbyint(a), 0.0, 4294967295.0); }
static long long __float2ll_rz(float a) { double t = trunc(a); return t != t ? 0 : t >= 9223372036854775807.0 ? 9223372036854775807LL : t <= -9223372036854775808.0 ? (-9223372036854775807LL - 1) : (long long)t; }
static u64 __double2ull_rz(double a) { double t = trunc(a); return t != t || t <= 0 ? 0 : t >= 18446744073709551615.0 ? 18446744073709551615ULL : (u64)t; }
static float __saturatef(float a) { return CVT_SATF(a); }
static float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static float __fmul_rn(float a, float b) { return a * b; }
static float __fdiv_rn(float a, float b) { return a / b; }
static float __frcp_rn(float a) { return 1.0f / a; }
static float __fsqrt_rn(float a) { return sqrtf(a); }
static float __int2float_rn(int a) { return (float)a; }
static float __uint2float_rn(unsigned a) { return (float)a; }
static float __ll2float_rn(long long a) { return (float)a; }
static double __ull2double_rn(u64 a) { return (double)a; }
static int min(int a, int b) { return a < b ? a : b; }
static unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
static long long llmin(long long a, long long b) { return a < b ? a : b; }
static int abs_(int a) { return a < 0 ? (int)(0u - (unsigned)a) : a; }
"""

INTRINSIC_DEVICE += """
__device__ unsigned umax(unsigned a, unsigned b) { return max(a, b); }
__device__ int abs_(int a) { return abs(a); }
"""

# (kind, expression): kind "u32" / "u64" are integer bits, "f32" / "f64" / "f16" float bits (NaN = any NaN)
INTRINSIC_CASES = [
    ("u32", "__popc(ua)"), ("u32", "__popcll(la)"), ("u32", "__clz(ia)"), ("u32", "__clzll(la)"), ("u32", "__ffs(ia)"),
    ("u32", "__brev(ua)"), ("u64", "__brevll((unsigned long long)la)"), ("u32", "PRMT(ua, ub, uc)"),
    ("u32", "__mulhi(ia, ib)"), ("u32", "__umulhi(ua, ub)"), ("u64", "__mul64hi(la, lb)"),
    ("u64", "__umul64hi((unsigned long long)la, (unsigned long long)lb)"), ("u64", "(long long)ia * ib"),
    ("u64", "(unsigned long long)ua * ub"), ("u32", "MUL24(ia, ib)"), ("u32", "__sad(ia, ib, uc)"),
    ("u32", "SHL(ua, uc & 63)"), ("u32", "SHRU(ua, uc & 63)"), ("u32", "SHRS(ia, uc & 63)"),
    ("u64", "SHL64((unsigned long long)la, uc & 127)"), ("u64", "SHRS64(la, uc & 127)"),
    ("u32", "BFEU(ua, ub & 0x2f, uc & 0x2f)"), ("u32", "BFES(ia, ub & 0x2f, uc & 0x2f)"),
    ("u64", "BFES64(la, ub & 0x4f, uc & 0x4f)"), ("u32", "BFEU(ua, ub, uc)"),
    ("u32", "BFI(ua, ub, uc & 0x2f, (uc >> 8) & 0x2f)"), ("u32", "BFINDU(ua)"), ("u32", "BFINDS(ia)"),
    ("u32", "BFINDSA(ua)"), ("u32", "CNOT(ua & 3)"), ("u32", "ADDSAT(ia, ib)"), ("u32", "SUBSAT(ia, ib)"),
    ("u32", "CVT_SAT_U8(ic * 9)"), ("u32", "CVT_SAT_S16(ua)"), ("u32", "CVT_SAT_U32(ia)"),
    ("u32", "(int)(signed char)ia"), ("u32", "(unsigned)(unsigned short)ia"), ("u32", "(int)(short)ua"),
    ("u32", "PRMT_f4e(ua, ub, uc)"), ("u32", "PRMT_b4e(ua, ub, uc)"), ("u32", "PRMT_rc8(ua, ub, uc)"),
    ("u32", "PRMT_ecl(ua, ub, uc)"), ("u32", "PRMT_ecr(ua, ub, uc)"), ("u32", "PRMT_rc16(ua, ub, uc)"),
    ("u32", "PRMT_FULL(ua, ub, uc)"),
    ("f32", "MINNAN(fa, fb)"), ("f32", "MAXNAN(fb, fa)"), ("u32", "MAXRELU(ia, ib)"), ("u32", "MINRELU(ia, ic)"),
    ("u32", "MAD24(ia, ib, ic)"), ("u32", "MAD24HIU(ua, ub, uc)"), ("u32", "MUL24HI(ia, ib)"),
    ("u32", "SHF_L(ua, ub, uc)"), ("u32", "SHF_RC(ua, ub, uc & 63)"),
    ("u32", "min(ia, ib)"), ("u32", "umax(ua, ub)"), ("u64", "llmin(la, lb)"), ("u32", "abs_(ia)"),
    ("u32", "__float2int_rn(fa)"), ("u32", "__float2int_rd(fa)"), ("u32", "__float2int_ru(fa)"),
    ("u32", "__float2int_rz(fa)"), ("u32", "__float2uint_rn(fa)"), ("u64", "__float2ll_rz(fa)"),
    ("u64", "__double2ull_rz(da)"),
    ("f32", "__saturatef(fa)"), ("f32", "CVT_RNI(fa)"), ("f32", "fminf(fa, fb)"), ("f32", "fmaxf(fa, fb)"),
    ("f32", "(fa > fb ? fa : fb)"), ("u32", "(fa < fb)"), ("u32", "(fa != fb)"), ("u32", "!(fa >= fb)"),
    ("u32", "SETP_NEU(fa, fb)"), ("u32", "SETP_NE(fa, fb)"), ("u32", "SETP_GEU(fa, fb)"), ("u32", "SETP_NUM(fa, fb)"),
    ("u32", "SET_LT(fa, fb)"), ("u32", "SETP_PAIR(ia, ib)"), ("u32", "TESTP_SUB(fa)"), ("u32", "TESTP_NORM(fa)"),
    ("u32", "(isnan(fa) != 0) * 4 + (isinf(fa) != 0) * 2 + (signbit(fa) != 0)"),   # glibc's isinf(-inf) is -1
    ("f32", "__fmaf_rn(fa, fb, fc)"), ("f32", "__fmaf_rn(fb, fc, -fb * fc)"), ("f32", "__fmul_rn(fa, fb)"),
    ("f32", "__fdiv_rn(fa, fb)"), ("f32", "__frcp_rn(fb)"), ("f32", "__fsqrt_rn(fb)"),
    ("f32", "__int2float_rn(ia)"), ("f32", "__uint2float_rn(ua)"), ("f32", "__ll2float_rn(la)"),
    ("f64", "__ull2double_rn((unsigned long long)la)"), ("f64", "(double)fa * fb"), ("f32", "(float)da"),
    ("u32", "f2h(fb)"), ("u32", "f2h(fa)"), ("u32", "f2h(fc * 70000.0f)"), ("u32", "f2h(fc * 1.0e-6f)"), ("u32", "f2bf(fa)"),
    ("f32", "h2f(f2h(fb))"), ("u32", "hadd(fb, fc)"), ("u32", "hmul(fb, fc)"), ("u32", "hfma(fb, fc, fb)"),
    ("u32", "h2add_lo_hi(fb, fc, fc, fb)"),
    # directed rounding: add/sub/mul/div/rcp/sqrt/fma .rz/.rm/.rp and cvt to float
    ("f32", "__fadd_rd(fa, fb)"), ("f32", "__fadd_ru(fa, fc)"), ("f32", "__fadd_rz(fa, fb)"), ("f32", "__fsub_ru(fb, fa)"),
    ("f32", "__fmul_rz(fa, fb)"), ("f32", "__fmul_ru(fa, fc)"), ("f32", "__fdiv_rd(fb, fc)"), ("f32", "__fdiv_rz(fa, fc)"),
    ("f32", "__frcp_ru(fb)"), ("f32", "__fsqrt_rd(fabsf(fa))"), ("f32", "__fmaf_rz(fb, fc, fa)"),
    ("f32", "__fmaf_ru(fa, fc, fb)"), ("f64", "__dadd_rz(da, (double)fa)"), ("f64", "__dmul_ru(da, (double)fc)"),
    ("f64", "__ddiv_rd(da, 3.0)"), ("f64", "__dsqrt_ru(fabs(da))"), ("f32", "__double2float_rd(da)"),
    ("f32", "__double2float_ru(da)"), ("f32", "__double2float_rz(da)"), ("f32", "__int2float_rz(ia)"),
    ("f32", "__int2float_rd(ia)"), ("f32", "__uint2float_ru(ua)"), ("f32", "__ll2float_rd(la)"),
    ("f32", "__ull2float_rz((unsigned long long)lb)"), ("f64", "__ll2double_ru(la)"),
    ("u32", "f2h_rz(fb)"), ("u32", "f2h_ru(fc * 3.0f)"),
]


def _intrinsic_inputs(seed):
    rng = np.random.default_rng(seed)
    special = np.array([0, 1, -1, 2, -2, 7, -7, 2147483647, -2147483648, 31, 32, 33, 0x00FF00FF, 0x12345678],
                       np.int64)
    ints = lambda: np.concatenate([special, rng.integers(-2**31, 2**31, N - len(special))]).astype(np.int32)  # noqa: E731
    f_special = np.array([0.0, -0.0, 0.5, 1.5, 2.5, -2.5, -0.5, np.nan, np.inf, -np.inf, 3e9, -3e9, 5e9, 1e-40,
                          -1e-39, 1.0, 16777217.0, 1e30], np.float32)
    fa = np.concatenate([f_special, (rng.standard_normal(N - len(f_special)) * 1e3).astype(np.float32)])
    # fb, fc: finite, with f16 halfway and overflow cases
    fb = np.concatenate([np.array([1 + 2**-11, 1 + 3 * 2**-11, 65504.0, 65520.0, -65520.0, 2**-25, 2**-24 * 1.5,
                                   1.0, -1.0, 3.0], np.float32), rng.uniform(-8, 8, N - 10).astype(np.float32)])
    fc = np.concatenate([np.array([1 + 2**-12, 1 - 2**-12, 1.0], np.float32),
                         rng.uniform(-4, 4, N - 3).astype(np.float32)])
    la = np.concatenate([[0, -1, 2**63 - 1, -2**63, 1 << 40], rng.integers(-2**63, 2**63, N - 5, dtype=np.int64)])
    return {"IA": ints(), "IB": ints(), "IC": rng.integers(-40, 40, N).astype(np.int32),
            "UA": ints().view(np.uint32), "UB": rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32),
            "UC": rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32),
            "FA": fa, "FB": fb, "FC": fc, "LA": la.astype(np.int64),
            "LB": rng.integers(-2**63, 2**63, N, dtype=np.int64),
            "DA": np.concatenate([[0.0, -1.5, 1e20, 2.0**64, np.nan, -np.inf, 2.0**53 + 2.0],
                                  rng.standard_normal(N - 7) * 1e10]).astype(np.float64)}


_INTR_ORDER = ("IA", "IB", "IC", "UA", "UB", "UC", "FA", "FB", "FC", "LA", "LB", "DA")
_INTR_DECL = ("int ia = IA[t], ib = IB[t], ic = IC[t]; unsigned int ua = UA[t], ub = UB[t], uc = UC[t]; "
              "float fa = FA[t], fb = FB[t], fc = FC[t]; long long la = LA[t], lb = LB[t]; double da = DA[t];")


def _intrinsic_value(kind, e):
    return {"u32": f"(unsigned)({e})", "u64": f"(unsigned long long)({e})", "f32": f"fbits({e})",
            "f64": f"dbits({e})"}[kind]


def test_intrinsics_and_single_instructions_match_c_reference(tmp_path):
    inputs = _intrinsic_inputs(11)
    body = "\n".join(f"    o[{k} * {N} + t] = {_intrinsic_value(kind, e)};"
                     for k, (kind, e) in enumerate(INTRINSIC_CASES))
    cuda = (INTRINSIC_DEVICE + "__global__ void intr(const int *IA, const int *IB, const int *IC, "
            "const unsigned *UA, const unsigned *UB, const unsigned *UC, const float *FA, const float *FB, "
            "const float *FC, const long long *LA, const long long *LB, const double *DA, unsigned long long *o) {\n"
            "    int t = threadIdx.x;\n    " + _INTR_DECL + "\n" + body + "\n}\n")
    arrays = []
    ctype = {np.dtype(np.int32): "int", np.dtype(np.uint32): "unsigned", np.dtype(np.float32): "float",
             np.dtype(np.int64): "long long", np.dtype(np.float64): "double"}
    for name in _INTR_ORDER:
        arr = inputs[name]
        if arr.dtype.kind == "f":
            vals = ", ".join(("NAN" if np.isnan(v) else ("INFINITY" if v > 0 else "-INFINITY") if np.isinf(v)
                              else float(v).hex()) for v in arr)
        elif arr.dtype == np.int64:
            vals = ", ".join(f"({int(v)}LL)" if v > -2**63 else "(-9223372036854775807LL - 1)" for v in arr)
        else:
            vals = ", ".join(f"({int(v)})" if arr.dtype == np.int32 else f"{int(v)}u" for v in arr)
        arrays.append(f"static const {ctype[arr.dtype]} {name}[{N}] = {{{vals}}};")
    lines = [f"  printf(\"%llu\\n\", (unsigned long long){_intrinsic_value(kind, e)});" for kind, e in INTRINSIC_CASES]
    c = ("#include <stdio.h>\n#include <string.h>\n#include <math.h>\n" + INTRINSIC_C + "\n".join(arrays) +
         f"\nint main(void) {{\n for (int t = 0; t < {N}; ++t) {{\n  " + _INTR_DECL + "\n" + "\n".join(lines) +
         "\n }\n return 0;\n}\n")
    (tmp_path / "ref.c").write_text(c)
    subprocess.run(["gcc", "-O0", "-fwrapv", "-ffp-contract=off", "-frounding-math", "-std=gnu11", "-o",
                    str(tmp_path / "ref"), str(tmp_path / "ref.c"), "-lm"], check=True, capture_output=True,
                   timeout=60)
    ref = np.array([int(x) for x in subprocess.run([str(tmp_path / "ref")], check=True, capture_output=True,
                                                   text=True, timeout=30).stdout.split()], dtype=np.uint64)
    ref = ref.reshape(N, len(INTRINSIC_CASES))
    o = np.zeros(len(INTRINSIC_CASES) * N, np.uint64)
    simulate(load_kernel(source=cuda, entry="intr"), 1, N, [inputs[k] for k in _INTR_ORDER] + [o])
    failures = []
    for k, (kind, e) in enumerate(INTRINSIC_CASES):
        got, want = o[k * N:(k + 1) * N], ref[:, k]
        if kind == "f32":
            nan = lambda v: np.isnan(v.astype(np.uint32).view(np.float32))  # noqa: E731
            same = (got == want) | (nan(got) & nan(want))
        elif kind == "f64":
            same = (got == want) | (np.isnan(got.view(np.float64)) & np.isnan(want.view(np.float64)))
        else:
            same = got == want
        bad = np.flatnonzero(~same)
        if bad.size:
            t = bad[0]
            failures.append(f"{e}: thread {t} ({', '.join(f'{n}={inputs[n][t]!r}' for n in _INTR_ORDER)}): "
                            f"simulator {int(got[t]):#x}, C {int(want[t]):#x}")
    assert not failures, "\n".join(failures)
