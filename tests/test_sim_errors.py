"""Errors a user can hit while simulating: each names the line, the thread and the block."""
import re

import numpy as np
import pytest

from perfmodel.errors import SimulationError
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate


pytestmark = pytest.mark.usefixtures("ptx_only")   # conftest.py: no nvdisasm, no SASS weights


def run(src, grid, block, args, **kw):
    return simulate(load_kernel(source=src), grid, block, args, **kw)


def test_barrier_divergence_names_line_and_block():
    # the threads that skip the barrier go on running (the store after the if): divergence. (Threads that skip it
    # only to leave the kernel count as arrived, as on the GPU: the next test.)
    src = r"""
    __global__ void k(float *a) {
        __shared__ float s[64];
        if (threadIdx.x < 32 || blockIdx.x == 0) {
            s[threadIdx.x] = a[threadIdx.x];
            __syncthreads();
        }
        a[threadIdx.x] = s[63 - threadIdx.x];
    }"""
    with pytest.raises(SimulationError) as exc:
        run(src, (3, 2), 64, [np.zeros(64, np.float32)])
    msg = str(exc.value)
    assert re.search(r"kernel\.cu:6:\d+: barrier divergence: .* block \(1, 0, 0\); thread \(32, 0, 0\)", msg)
    assert exc.value.block == (1, 0, 0)
    assert exc.value.thread == (32, 0, 0)


def test_barrier_after_early_exit_of_some_threads_is_allowed():
    """Exited threads do not take part in later barriers: only live threads must arrive. At the PTX level the early
    `return` waits at the kernel's one ret block (NVVM's), which only returns: those threads are on their way out
    and count as arrived, as the GPU counts exited threads (HeCBench's bsearch kernel_BS4, any `if (i >= n)
    return;` in front of a __syncthreads(), was reported as barrier divergence)."""
    src = r"""
    __global__ void k(float *a, int n) {
        __shared__ float s[64];
        int i = threadIdx.x;
        if (i >= n) return;
        s[i] = a[i];
        __syncthreads();
        a[i] = s[n - 1 - i];
    }"""
    a = np.arange(64, dtype=np.float32)
    r = run(src, 1, 64, [a, 40])
    assert a[:40].tolist() == list(range(39, -1, -1))
    assert r.counts.barriers == 1
    assert r.notes and "left the kernel before the __syncthreads() at " in r.notes[0], r.notes
    assert "kernel.cu:7:" in r.notes[0], r.notes
    a = np.arange(64, dtype=np.float32)
    assert not run(src, 1, 64, [a, 64]).notes        # every thread reaches it: nothing to say


def test_barrier_in_a_loop_with_divergent_trip_counts_is_divergence():
    """Threads 0-15 leave the loop after 2 barriers and go on running (the store after it) while 16-31 wait at a
    third: divergence, naming one that went on. With nothing after the loop, the short threads leave the kernel
    instead, and exited threads count as arrived (docs/semantics.md, "Barriers"; nvdiffrast's persistent loops):
    the third barrier completes - 3 barrier instances."""
    src = r"""
    __global__ void k(int *n) {
        for (int j = 0; j < n[threadIdx.x]; j++) {
            __syncthreads();
        }
        n[threadIdx.x] += 1;
    }"""
    n = np.array([2] * 16 + [3] * 16, np.int32)
    with pytest.raises(SimulationError, match=r"kernel\.cu:4:\d+: barrier divergence: .* block \(0, 0, 0\); "
                                              r"thread \(0, 0, 0\)"):
        run(src, 1, 32, [n])
    res = run(src.replace("n[threadIdx.x] += 1;", ""), 1, 32, [n])
    assert res.counts.barriers == 3


def test_global_out_of_bounds_names_array_index_thread_block():
    src = r"""
    __global__ void k(float *A, float *B, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        B[i] = A[i + 1];
    }"""
    with pytest.raises(SimulationError) as exc:
        run(src, 4, 32, [np.zeros(128, np.float32), np.zeros(128, np.float32), 128])
    msg = str(exc.value)
    assert re.search(r"kernel\.cu:4:\d+: out-of-bounds global load: A\[128\] but A has 128 elements", msg)
    assert "(thread (31, 0, 0), block (3, 0, 0))" in msg
    assert exc.value.thread == (31, 0, 0) and exc.value.block == (3, 0, 0)


def test_negative_global_index_is_reported():
    src = r"""
    __global__ void k(float *N, float *P) {
        int i = threadIdx.x;
        P[i] = N[i - 2];
    }"""
    with pytest.raises(SimulationError, match=r"N\[-2\].*thread \(0, 0, 0\), block \(0, 0, 0\)"):
        run(src, 1, 8, [np.zeros(8, np.float32), np.zeros(8, np.float32)])


def test_shared_out_of_bounds_store():
    src = r"""
    #define TILE 16
    __global__ void k(float *a) {
        __shared__ float tile[TILE][TILE];
        tile[threadIdx.y][threadIdx.x + 1] = a[0];
        __syncthreads();                           // read back: a shared store nobody reads is dead code to NVVM
        a[threadIdx.y * TILE + threadIdx.x] = tile[threadIdx.x][threadIdx.y];
    }"""
    with pytest.raises(SimulationError) as exc:
        run(src, (1, 2), (16, 16), [np.zeros(256, np.float32)])
    msg = str(exc.value)
    # tile[15][16] is byte 1024 of the 1024-byte window (the message names the offset, not the variable)
    assert re.search(r"kernel\.cu:5:\d+: out-of-bounds shared-memory access at offset 1024 \(valid: 0\.\.1020\)",
                     msg), msg
    assert "thread (15, 15, 0), block (0, 0, 0)" in msg


def test_extern_shared_array_without_a_launch_size_says_how_to_give_one():
    src = r"""
    __global__ void k(float *a) {
        extern __shared__ float buf[];
        buf[threadIdx.x] = a[threadIdx.x];
        __syncthreads();
        a[threadIdx.x] = buf[31 - threadIdx.x];
    }"""
    x = np.arange(32, dtype=np.float32)
    with pytest.raises(SimulationError) as exc:
        run(src, 1, 32, [x.copy()])
    msg = str(exc.value)
    assert "0 bytes of static shared memory and 0 of dynamic shared memory" in msg, msg
    assert "extern __shared__ buf takes its size from the launch" in msg, msg
    assert "--smem BYTES" in msg and "dynamic_shared_memory" in msg
    out = x.copy()
    run(src, 1, 32, [out], dynamic_shared_bytes=128)       # with the size given, it runs: the reversal
    assert np.array_equal(out, x[::-1])


def test_inactive_lanes_may_hold_out_of_range_indices():
    src = r"""
    __global__ void k(float *a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) a[i] = a[i] + 1.0f;
    }"""
    a = np.zeros(100, np.float32)
    run(src, 4, 32, [a, 100])
    assert a.tolist() == [1.0] * 100


def test_runaway_loop_names_the_loop_line():
    src = r"""
    __global__ void k(int *a) {
        int i = threadIdx.x;
        while (a[i] >= 0) {
            a[i] = a[i] + 1;
            if (a[i] > 1000000000) a[i] = 0;
        }
    }"""
    with pytest.raises(SimulationError) as exc:
        run(src, 1, 32, [np.zeros(32, np.int32)], max_steps=500)
    msg = str(exc.value)
    # the step limit counts basic-block executions of the batch; the loop body is lines 4-6
    m = re.search(r"kernel\.cu:(\d+):\d+: runaway kernel: more than 500 basic-block executions", msg)
    assert m and 4 <= int(m.group(1)) <= 6, msg
    assert "thread (0, 0, 0), block (0, 0, 0)" in msg


def test_integer_division_by_zero():
    src = r"""
    __global__ void k(int *a, int d) {
        a[threadIdx.x] = a[threadIdx.x] / d;
    }"""
    with pytest.raises(SimulationError, match=r"kernel\.cu:3:\d+: integer division by zero \(thread \(0, 0, 0\), "
                                              r"block \(0, 0, 0\)\)"):
        run(src, 1, 4, [np.ones(4, np.int32), 0])


def test_argument_checks():
    src = "__global__ void k(float *a, int n) { a[0] = n; }"
    with pytest.raises(SimulationError, match="takes 2 arguments"):
        run(src, 1, 1, [np.zeros(1, np.float32)])
    with pytest.raises(SimulationError, match="dtype float64"):
        run(src, 1, 1, [np.zeros(1), 3])
    with pytest.raises(SimulationError, match="unknown __constant__"):
        run(src, 1, 1, [np.zeros(1, np.float32), 3], constants={"M": np.zeros(3)})


def test_a_block_larger_than_the_kernels_launch_bounds_is_refused():
    """ccminer's bmw512 declares __launch_bounds__(32, 16); a 256-thread launch ran and was reported with 256-thread
    occupancy, where the GPU refuses it (CUDA C++ Programming Guide, Launch Bounds). The bound's own size runs."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    program = load_kernel(source="__global__ void __launch_bounds__(64) k(float *x)\n"
                                 "{ x[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f; }\n", path="lb.cu")
    with pytest.raises(SimulationError, match=r"256 threads a block exceed the kernel's __launch_bounds__ maximum "
                                               r"of 64"):
        simulate(program, 4, 256, [np.zeros(1024, np.float32)])
    x = np.zeros(1024, np.float32)
    simulate(program, 16, 64, [x])
    assert (x == 1).all()
