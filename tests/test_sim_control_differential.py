"""Differential test of divergent control flow against gcc running each thread on its own.

Random kernels with nested if/else, loops with thread-dependent trip counts, break, continue, early return,
do/while, ternaries, __device__ functions with early returns and thread-local arrays are run by the simulator
(all threads at once, under masks) and, as plain C compiled with gcc, one thread after the other. Every output
must agree. The kernels have no shared memory or barriers, so the per-thread C run is the specification.
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

THREADS = 96          # three warps, the last one partial in a 2-D block of 32 x 3 (x fastest)
SLOTS = 12            # outputs per thread
VARS = ["v0", "v1", "v2", "v3"]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.slot = 0
        self.loop_id = 0

    def expr(self, depth=2):
        r = self.r
        if depth == 0 or r.random() < 0.3:
            return r.choice(VARS + ["tid", f"({r.randint(-20, 20)})", "A[WADD(tid * 7, v0) & 63]"])
        k = r.randrange(7)
        a, b = self.expr(depth - 1), self.expr(depth - 1)
        if k == 0:
            return f"W{r.choice(['ADD', 'SUB', 'MUL'])}({a}, {b})"     # wrapping: signed overflow is UB
        if k == 1:
            return f"({a} {r.choice(['/', '%'])} SD({b}))"
        if k == 2:
            return f"({a} {r.choice(['<', '>', '==', '!=', '<=', '>='])} {b})"
        if k == 3:
            return f"({a} > {b} ? {self.expr(depth - 1)} : {self.expr(depth - 1)})"
        if k == 4:
            return f"({a} {r.choice('&|^')} {b})"
        if k == 5:
            return f"f({a}, {b})"
        return f"({a} >> ({b} & 7))"

    def cond(self):
        r = self.r
        c = f"({self.expr()} {r.choice(['<', '>', '==', '!=', '&&', '||'])} {self.expr()})"
        return c if r.random() < 0.7 else f"((tid & {r.choice([1, 3, 7, 31])}) {r.choice(['==', '<'])} {r.randint(0, 5)})"

    def stmts(self, depth, in_loop, n=None):
        r = self.r
        out = []
        for _ in range(n if n is not None else r.randint(1, 4)):
            k = r.randrange(10)
            if k <= 2 or depth == 0:
                out.append(f"{r.choice(VARS)} = {self.expr()};")
            elif k == 3:
                out.append(f"if {self.cond()} {{ {' '.join(self.stmts(depth - 1, in_loop))} }} else "
                           f"{{ {' '.join(self.stmts(depth - 1, in_loop))} }}")
            elif k == 4:
                i = f"i{self.loop_id}"
                self.loop_id += 1
                body = self.stmts(depth - 1, True)
                out.append(f"for (int {i} = 0; {i} < ({self.expr(1)} & 7); {i}++) {{ v{r.randrange(4)} = WADD(v{r.randrange(4)}, {i}); "
                           f"{' '.join(body)} }}")
            elif k == 5:
                w = f"w{self.loop_id}"
                self.loop_id += 1
                out.append(f"{{ int {w} = {self.expr(1)} & 7; while ({w} > 0) {{ {w}--; "
                           f"{' '.join(self.stmts(depth - 1, True))} }} }}")
            elif k == 6:
                w = f"w{self.loop_id}"
                self.loop_id += 1
                # the counter moves first, so a `continue` in the body cannot skip it
                out.append(f"{{ int {w} = {self.expr(1)} & 3; do {{ {w}--; {' '.join(self.stmts(depth - 1, True))} "
                           f"}} while ({w} > 0); }}")
            elif k == 7 and in_loop:
                out.append(f"if {self.cond()} {r.choice(['break', 'continue'])};")
            elif k == 8 and self.slot < SLOTS:
                out.append(f"out[tid * {SLOTS} + {self.slot}] = {self.expr()};")
                self.slot += 1
            elif k == 9 and not in_loop and r.random() < 0.3:
                out.append(f"if {self.cond()} return;")
            else:
                out.append(f"loc[{self.expr(1)} & 3] = {self.expr(1)}; {(v := r.choice(VARS))} = WADD({v}, loc[{self.expr(1)} & 3]);")
        return out

    def kernel_body(self):
        body = self.stmts(3, False, n=8)
        while self.slot < SLOTS:
            body.append(f"out[tid * {SLOTS} + {self.slot}] = {self.r.choice(VARS)};")
            self.slot += 1
        return "\n    ".join(body)


DEVICE_FN = """
int f(int a, int b) {
    if (a > b) return WSUB(a, b);
    int s = 0;
    for (int j = 0; j < (b & 3); j++) { if (s > 100) break; s = WADD(s, a ^ j); }
    return WADD(WMUL(s, 3), b);
}
"""


def _sources(seed):
    g = Gen(seed)
    body = g.kernel_body()
    # signed +, -, * wrap through unsigned on both sides: NVVM treats signed overflow as undefined (gcc -fwrapv
    # alone would not match it)
    head = ("#define SD(x) ((((x) == 0) || ((x) == -1)) ? 7 : (x))\n"
            "#define WADD(a, b) ((int)((unsigned)(a) + (unsigned)(b)))\n"
            "#define WSUB(a, b) ((int)((unsigned)(a) - (unsigned)(b)))\n"
            "#define WMUL(a, b) ((int)((unsigned)(a) * (unsigned)(b)))\n")
    prologue = ("int v0 = A[tid & 63], v1 = tid * 3 - 50, v2 = A[(tid + 5) & 63] % 17, v3 = 1;\n"
                "    int loc[4]; loc[0] = 1; loc[1] = 2; loc[2] = 3; loc[3] = 4;\n    ")
    cuda = (head + "__device__" + DEVICE_FN +
            "__global__ void k(const int *A, int *out) {\n"
            "    int tid = threadIdx.x + blockDim.x * threadIdx.y;\n    " + prologue + body + "\n}\n")
    c = ("#include <stdio.h>\n" + head + DEVICE_FN +
         "void k(int tid, const int *A, int *out) {\n    " + prologue + body + "\n}\n")
    return cuda, c


@pytest.mark.parametrize("seed", [int(s) for s in __import__("os").environ.get("FUZZ_SEEDS", "1,2,3,4,5").split(",")])
def test_divergent_control_flow_matches_gcc(seed, tmp_path):
    cuda, c = _sources(seed)
    A = np.random.default_rng(seed).integers(-100, 100, 64).astype(np.int32)
    c += ("int main(void) {\n  static int out[%d];\n  static const int A[64] = {%s};\n"
          "  for (int t = 0; t < %d; ++t) k(t, A, out);\n"
          "  for (int i = 0; i < %d; ++i) printf(\"%%d\\n\", out[i]);\n  return 0;\n}\n"
          % (THREADS * SLOTS, ", ".join(str(int(v)) for v in A), THREADS, THREADS * SLOTS))
    (tmp_path / "ref.c").write_text(c)
    subprocess.run(["gcc", "-O0", "-fwrapv", "-std=gnu11", "-o", str(tmp_path / "ref"), str(tmp_path / "ref.c")],
                   check=True, capture_output=True, timeout=60)
    ref = np.array(subprocess.run([str(tmp_path / "ref")], check=True, capture_output=True, text=True, timeout=30)
                   .stdout.split(), dtype=np.int64)
    out = np.zeros(THREADS * SLOTS, np.int32)
    simulate(load_kernel(source=cuda, entry="k"), 1, (32, THREADS // 32), [A, out])
    bad = np.flatnonzero(out.astype(np.int64) != ref)
    assert bad.size == 0, f"thread {bad[0] // SLOTS} slot {bad[0] % SLOTS}: {out[bad[0]]} vs gcc {ref[bad[0]]}\n{cuda}"
