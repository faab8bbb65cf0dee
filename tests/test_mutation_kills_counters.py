"""Tests written against the mutants of the simulator's memory path (perfmodel/sim/memory.py) that the suite let
survive. Oracles: numpy on the same inputs, the C semantics of atomics (an atomicAdd returns the value before its
own add, lanes in order), and the error contract (an error names the source line, the thread and the block)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from perfmodel.errors import SimulationError
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate


pytestmark = pytest.mark.usefixtures("no_sass_weights")   # conftest.py: counts, not the SASS issue count


def run(src, grid, block, args, **kw):
    return simulate(load_kernel(source=src), grid, block, args, **kw)


def test_float_atomic_add_over_many_addresses_sums_and_returns_the_old_values():
    # 16,384 threads, two per address: 8,192 addresses in one atomic instruction (more than a few thousand
    # addresses, each hit by two lanes). Values are multiples of 1/4, so every float32 sum is exact.
    src = r"""
    __global__ void k(const float *x, float *acc, float *old) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        old[i] = atomicAdd(&acc[i / 2], x[i]);
    }"""
    n = 16384
    x = (np.arange(n) % 37).astype(np.float32) * 0.25
    acc = np.full(n // 2, 1.0, np.float32)
    old = np.zeros(n, np.float32)
    run(src, n // 256, 256, [x, acc, old])
    assert np.array_equal(acc, 1.0 + x[0::2] + x[1::2])
    # lane order: the even thread adds first and sees the initial 1.0; the odd one sees 1.0 + its partner's value
    assert np.array_equal(old[0::2], np.ones(n // 2, np.float32))
    assert np.array_equal(old[1::2], 1.0 + x[0::2])


GENERIC = r"""
__device__ __noinline__ void put(int *p, int v) { *p = v; }
__device__ __noinline__ int bump(int *p, int v) { return atomicAdd(p, v); }

__global__ void k(int *out, int *count) {
    __shared__ int tile[64];
    int t = threadIdx.x;
    put(&tile[t], 3 * t);              // a generic pointer that points into shared memory
    __syncthreads();
    put(&out[t], tile[63 - t] + 1);    // a generic pointer into global memory
    bump(&tile[0], 1);                 // a generic atomic, every lane on shared memory
    __syncthreads();
    if (t == 0) count[0] = tile[0];
    bump(&count[1], 2);                // a generic atomic, every lane on global memory
}
"""


def test_generic_pointers_into_shared_and_global_memory():
    out = np.zeros(64, np.int32)
    count = np.zeros(2, np.int32)
    r = run(GENERIC, 1, 64, [out, count])
    assert out.tolist() == [3 * (63 - t) + 1 for t in range(64)]
    assert count[0] == 0 + 64          # tile[0] = 3 * 0, then 64 atomic increments
    assert count[1] == 2 * 64
    counts = r.counts.to_json()
    # 64 lanes x 2 atomics. (Which space the generic atomic on shared memory is counted in is left open: the
    # simulator counts it as global today, see the issue 18 closing note.)
    assert counts["shared"]["atomics"] + counts["global"]["atomics"] == 128


def test_out_of_bounds_global_atomic_names_its_line_thread_and_block():
    src = r"""
    __global__ void k(int *hist, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        atomicAdd(&hist[i], 1);
    }"""
    with pytest.raises(SimulationError) as exc:
        run(src, 2, 32, [np.zeros(40, np.int32), 40])
    msg = str(exc.value)
    assert "out-of-bounds global atomic" in msg
    assert re.search(r"kernel\.cu:4:\d+: ", msg), msg
    assert "(thread (8, 0, 0), block (1, 0, 0))" in msg


def test_vec_add_instruction_mix_by_hand():
    # vec_add with N a multiple of the block: every one of the 64 warps runs the whole kernel once. Per warp, the
    # PTX of `if (i < N) C[i] = A[i] + B[i];`: 4 parameter loads, 3 address adds in 64 bits (A, B, C + 4i), two
    # global loads and a store, one float add, and one return.
    from perfmodel.analysis import analyze

    a = analyze("vec_add", "h100", {"N": 64 * 32, "BLOCK_SIZE": 256})
    mix, warps = a.counts["ptx_classes"], a.counts["warps"]
    assert warps == 64
    assert mix["exit"] == warps
    assert mix["param"] == 4 * warps
    assert mix["int64"] == 3 * warps
    assert mix["memory"] == 3 * warps
    assert mix["fp"] == warps


def test_in_place_update_counts_its_sectors_once_as_loads_and_once_as_stores():
    # x[i] = 2 * x[i] over 4,096 floats: 512 distinct 32-byte sectors read, and the same 512 written
    src = r"""
    __global__ void k(float *x) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        x[i] = 2.0f * x[i];
    }"""
    x = np.arange(4096, dtype=np.float32)
    g = run(src, 16, 256, [x]).counts.to_json()["global"]
    assert np.array_equal(x, 2 * np.arange(4096, dtype=np.float32))
    assert g["unique_load_sectors"] == 4096 * 4 // 32
    assert g["unique_store_sectors"] == 4096 * 4 // 32


def test_out_of_bounds_global_store_is_named_a_store():
    src = r"""
    __global__ void k(float *C) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        C[i + 1] = 1.0f;
    }"""
    with pytest.raises(SimulationError) as exc:
        run(src, 4, 32, [np.zeros(128, np.float32)])
    assert re.search(r"out-of-bounds global store: C\[128\] but C has 128 elements", str(exc.value)), str(exc.value)


def test_atomics_are_counted_on_their_source_line():
    src = r"""
    __global__ void k(int *hist) {
        atomicAdd(&hist[threadIdx.x % 4], 1);
    }"""
    hist = np.zeros(4, np.int32)
    r = run(src, 2, 128, [hist])
    assert hist.tolist() == [64] * 4
    per_line = {line: agg.get("atomics", 0) for line, agg in (r.lines or {}).items()}
    assert per_line.get(3) == 256, per_line


def test_flops_and_divergent_branch_land_on_their_source_lines():
    # 2,040 elements in 256-thread blocks: 2,040 float adds on the add's line; of the 64 warps only the last
    # (24 of its 32 lanes in range) splits at `if (i < N)`
    src = r"""
    __global__ void k(float *A, float *B, float *C, int N) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < N)
            C[i] = A[i] + B[i];
    }"""
    n = 2040
    a, b, c = np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    r = run(src, 8, 256, [a, b, c, n])
    assert np.array_equal(c, np.full(n, 2.0, np.float32))
    lines = r.lines or {}
    assert lines[5]["flops"] == n
    assert sum(agg.get("flops", 0) for agg in lines.values()) == n
    assert lines[4]["divergent_branches"] == 1
    assert sum(agg.get("divergent_branches", 0) for agg in lines.values()) == 1


def test_one_load_over_two_arrays_and_an_fma_line_by_hand():
    """Lanes 0-15 read a[0..15] and lanes 16-31 b[0..15] through one selected pointer: the load's row names both
    arrays, 16 lanes each (lane 16 reads b[0], exactly where b starts, and belongs to b), and shows its PTX text.
    The next source line is one fused multiply-add per thread: 32 threads x 2 flops = 64 flops on that line."""
    import numpy as np

    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("__global__ void k(const float *a, const float *b, float *out, float x) {\n"
           "    float v = (threadIdx.x < 16 ? a : b)[threadIdx.x % 16];\n"
           "    out[threadIdx.x] = v * x + 1.0f;\n"
           "}\n")
    program = load_kernel(source=src, path="two_arrays.cu")
    a, b = np.arange(16, dtype=np.float32), 100 + np.arange(16, dtype=np.float32)
    out = np.zeros(32, np.float32)
    result = simulate(program, 1, 32, [a, b, out, 3.0])
    assert np.array_equal(out, np.r_[a, b] * 3 + 1)
    loads = [r for r in result.instructions if r["line"] == 2 and r["kind"].endswith(" ld")]
    assert len(loads) == 1
    assert loads[0]["arrays"] == {"a": 16, "b": 16}
    assert loads[0]["ptx"].startswith("ld.global")
    assert result.lines[3]["flops"] == 64


def test_inline_ptx_ldu_and_exit_are_classed_like_the_compilers_own():
    """NVRTC itself emits ld.global.nc and ret, but inline PTX can hold ``ldu`` and ``exit`` (and the simulator
    runs them): the warp's one ldu and two st.global are 3 memory instructions; its exits are the inline exit of
    lanes 16-31 and the ret of lanes 0-15, 2 in the exit class."""
    import numpy as np

    from perfmodel.analysis import _counts_json
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = r'''__global__ void k(const float *a, float *out) {
    float v;
    asm volatile("ldu.global.f32 %0, [%1];" : "=f"(v) : "l"(a));
    out[threadIdx.x] = v;
    if (threadIdx.x >= 16) asm volatile("exit;");
    out[threadIdx.x] = 2.0f * v;
}'''
    out = np.zeros(32, np.float32)
    result = simulate(load_kernel(source=src, path="inline_ptx.cu"), 1, 32, [np.full(4, 5.0, np.float32), out])
    assert out.tolist() == [10.0] * 16 + [5.0] * 16
    classes = _counts_json(result.counts)["ptx_classes"]
    assert classes["memory"] == 3 and classes["exit"] == 2


def test_ptx_classes_of_a_floating_mad_and_64_bit_logic():
    # the PTX ISA: mad.rn.f32 is floating-point arithmetic (class fp); and.b64 / or.b64 are 64-bit integer
    # operations, which ptxas splits into two 32-bit ones (class int64, like add.s64). The same kernel with the
    # three replaced by moves: one fp and two int64 instructions fewer per warp, three register moves more.
    import numpy as np

    from perfmodel.analysis import _counts_json
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    template = r'''__global__ void k(const float *a, float *out, unsigned long long *bits) {
    float v = a[threadIdx.x], r;
    unsigned long long m = bits[threadIdx.x], x, y;
    asm volatile("MAD" : "=f"(r) : "f"(v), "f"(v), "f"(v));
    asm volatile("AND" : "=l"(x) : "l"(m), "l"(m));
    asm volatile("OR" : "=l"(y) : "l"(x), "l"(m));
    out[threadIdx.x] = r;
    bits[threadIdx.x] = y;
}'''
    ops = {"MAD": "mad.rn.f32 %0, %1, %2, %3;", "AND": "and.b64 %0, %1, %2;", "OR": "or.b64 %0, %1, %2;"}
    moves = {"MAD": "mov.f32 %0, %1;", "AND": "mov.b64 %0, %1;", "OR": "mov.b64 %0, %1;"}

    def classes(table, name):
        src = template
        for key, text in table.items():
            src = src.replace(key, text)
        a = np.full(32, 3.0, np.float32)
        bits = np.arange(32, dtype=np.uint64)
        out = np.zeros(32, np.float32)
        result = simulate(load_kernel(source=src, path=name), 1, 32, [a, out, bits])
        return _counts_json(result.counts)["ptx_classes"], out, bits

    with_ops, out, bits = classes(ops, "classes.cu")
    assert out.tolist() == [12.0] * 32 and bits.tolist() == list(range(32))
    with_moves, _, _ = classes(moves, "moves.cu")
    assert with_ops.get("fp", 0) - with_moves.get("fp", 0) == 1
    assert with_ops.get("int64", 0) - with_moves.get("int64", 0) == 2
    assert with_moves.get("mov", 0) - with_ops.get("mov", 0) == 3


def test_one_load_through_a_pointer_to_either_of_two_arrays():
    # p is a or b by the lane's parity, and lanes 24-31 do not load: 12 active lanes read a, 12 read b; a grid of 2
    # identical blocks twice that. No shared memory anywhere: every line's shared_loads is 0. Without the SASS
    # weights (no nvdisasm), the issue count is the executed PTX's.
    import dataclasses

    import numpy as np

    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = r'''__global__ void k(const float *a, const float *b, float *out) {
    int t = threadIdx.x;
    const float *p = (t & 1) ? b : a;
    if (t < 24) out[t + 32 * blockIdx.x] = p[t];
}'''
    program = load_kernel(source=src, path="two_arrays.cu")
    for grid in (1, 2):
        out = np.zeros(64, np.float32)
        a, b = np.arange(32, dtype=np.float32), 100 + np.arange(32, dtype=np.float32)
        r = simulate(program, grid, 32, [a, b, out])
        t = np.arange(24)
        assert np.array_equal(out[:24], np.where(t & 1, b[:24], a[:24]))
        (load,) = [row for row in r.instructions if row["kind"] == "global ld"]
        assert load["arrays"] == {"a": 12 * grid, "b": 12 * grid} and load["threads"] == 24 * grid
        assert all(agg["shared_loads"] == 0 and agg["shared_stores"] == 0 for agg in r.lines.values())
    plain = simulate(dataclasses.replace(program, sass=dataclasses.replace(program.sass_facts(), weights=None)), 1, 32,
                     [a, b, np.zeros(64, np.float32)])
    assert plain.counts.warp_instructions == plain.counts.ptx_warp_instructions > 0
    assert sum(agg["warp_instructions"] for agg in plain.lines.values()) == plain.counts.warp_instructions
