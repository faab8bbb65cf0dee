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
import struct
import subprocess

import numpy as np
import pytest

from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed as the C reference")

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
