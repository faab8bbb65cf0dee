"""The vectorised warp counting against a plain per-warp Python reference, on random access patterns.

Random block and grid shapes (partial warps included), random branch conditions and random index expressions
for global, shared and constant memory, some depending on the block and some not (which exercises the
one-block-pattern and memoised paths), are simulated; the reference walks every warp of every block in Python,
one lane at a time, with the rules of docs/semantics.md.
"""
import random

import numpy as np
import pytest

from perfmodel.kernel import load_kernel as compile_kernel
from perfmodel.sim import simulate


def _index_expr(r, vars_, limit):
    terms = [f"{v} * {r.choice([0, 1, 2, 3, 4, 8, 16, 31, 32, 33, 64])}" for v in vars_]
    e = " + ".join(terms) + f" + {r.randint(0, 40)}"
    if r.random() < 0.4:
        e = f"(({e}) >> {r.randint(0, 3)})"
    return f"(({e}) & {limit - 1})"


def _py(expr, env):
    return eval(expr, {"__builtins__": {}}, env)  # noqa: S307 - our own generated arithmetic


def cond_never_true(cond):
    """A condition of the form ((...) & m) < 0 is false for every thread."""
    return cond.rstrip().endswith("< 0")


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("FUZZ_COUNT", "12"))))
def test_warp_counts_match_a_per_warp_reference(seed):
    r = random.Random(seed)
    bx, by = r.choice([8, 16, 24, 32, 48, 64, 100]), r.choice([1, 2, 3])
    gx, gy = r.randint(1, 3), r.randint(1, 2)
    thread_vars = ["tx", "ty"]
    block_vars = ["bx_", "by_"]
    eg = _index_expr(r, thread_vars + (block_vars if r.random() < 0.6 else []), 4096)
    es = _index_expr(r, thread_vars + (block_vars if r.random() < 0.3 else []), 1024)
    ec = _index_expr(r, thread_vars if r.random() < 0.7 else [], 64)
    cond = (f"((tx * {r.randint(0, 5)} + ty * {r.randint(0, 5)} + bx_ * {r.randint(0, 3)}) & "
            f"{r.choice([1, 3, 7, 15, 63])}) {r.choice(['<', '>=', '!='])} {r.randint(0, 8)}")
    if r.random() < 0.25:
        cond = "1"
    src = f"""
    __constant__ float M[64];
    __global__ void k(const float *g, float *out) {{
        __shared__ float s[1024];
        int tx = threadIdx.x, ty = threadIdx.y, bx_ = blockIdx.x, by_ = blockIdx.y;
        int tid = tx + blockDim.x * ty;
        int gid = tid + blockDim.x * blockDim.y * (bx_ + gridDim.x * by_);
        s[tid] = 1.0f;
        __syncthreads();
        if ({cond}) {{
            out[gid] = g[{eg}] + s[{es}] + M[{ec}];
        }}
    }}"""
    program = compile_kernel(source=src, path=f"ref{seed}.cu")
    T = bx * by
    nblocks = gx * gy
    res = simulate(program, (gx, gy), (bx, by), [np.zeros(4096, np.float32), np.zeros(T * nblocks, np.float32)])

    req = sec = wf = cwf = div = 0
    per_block_sectors = []
    for b in range(nblocks):
        env_b = {"bx_": b % gx, "by_": b // gx}
        lanes = []
        for tid in range(T):
            env = dict(env_b, tx=tid % bx, ty=tid // bx)
            lanes.append((bool(_py(cond, env)), _py(eg, env), _py(es, env), _py(ec, env)))
        block_sectors = 0
        for w0 in range(0, T, 32):
            warp = lanes[w0:w0 + 32]
            act = [ln for ln in warp if ln[0]]
            if act and len(act) < len(warp):
                div += 1
            if not act:
                continue
            req += 1
            n_sec = len({(ln[1] * 4) >> 5 for ln in act})
            sec += n_sec
            block_sectors += n_sec
            words = {ln[2] for ln in act}
            wf += max(sum(1 for w in words if w % 32 == bank) for bank in range(32))
            cwf += len({ln[3] for ln in act})
        per_block_sectors.append(block_sectors)

    c = res.counts
    assert c.global_["load_requests"] == req
    assert c.global_["load_sectors"] == sec
    assert c.shared["load_wavefronts"] == wf
    assert c.constant["load_wavefronts"] == cwf
    assert c.divergent_branches == div
    assert res.per_block["global_load_sectors"].tolist() == per_block_sectors
    # the store s[tid] of every block: consecutive words, one wavefront per warp - unless the condition is
    # false for every thread at compile time ((x & 1) < 0): then nothing reads s and NVVM deletes the store
    entry = program.module.functions[program.entry]
    stores = any(i.opcode == "st" and "shared" in i.mods for i in entry.instrs)
    assert c.shared["store_wavefronts"] == (nblocks * ((T + 31) // 32) if stores else 0)
    assert stores or cond_never_true(cond)
