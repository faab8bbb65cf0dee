"""__syncthreads() in both branches of a block split by warps (each half syncs in its own branch: the SGEMM tutorial's
double-buffering kernel, warp-specialised code). From Volta on, bar.sync counts the block's arrivals at barrier 0
whichever instruction they come from, so the two halves' barriers pair up; the executor runs one branch to its
barrier, then the other, and so on (perfmodel/sim/machine.py, ``BarrierWait``)."""
import numpy as np
import pytest

from perfmodel.errors import SimulationError
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

SRC = r"""
// warps 0-1 write, warps 2-3 transform what they wrote, warps 0-1 read the result back: two barriers per half
__global__ void halves(const float *in, float *out) {
    __shared__ float s[128];
    int t = threadIdx.x;
    int b = blockIdx.x * 128;
    if (t < 64) {
        s[t] = in[b + t] * 2.0f;
        __syncthreads();            // pairs with the other half's first
        __syncthreads();            // and with its second
        out[b + t] = s[t + 64];
    } else {
        __syncthreads();
        s[t] = s[t - 64] + 1.0f;
        __syncthreads();
        out[b + t] = s[t] * 10.0f;
    }
}
// only one half syncs, and the other goes on running after it: a real barrier divergence
__global__ void one_sided(float *out) {
    __shared__ float s[128];
    int t = threadIdx.x;
    s[t] = t;
    if (t < 64) {
        __syncthreads();
        out[t] = s[127 - t];
    } else {
        out[t] = 0;
    }
    out[t] += s[t];
}
"""


def test_barriers_of_two_branches_pair_up():
    x = np.random.default_rng(0).integers(0, 10, 256).astype(np.float32)
    out = np.zeros(256, np.float32)
    res = simulate(load_kernel(source=SRC, entry="halves"), (2, 1, 1), (128, 1, 1), [x, out])
    v = x.reshape(2, 2, 64)[:, 0] * 2 + 1
    assert np.array_equal(out.reshape(2, 2, 64)[:, 0], v)
    assert np.array_equal(out.reshape(2, 2, 64)[:, 1], v * 10)
    c = res.counts
    # two barrier instances per block; each of the 4 warps executes two bar.sync instructions
    assert (c.barriers, c.barrier_warps) == (2 * 2, 2 * 4 * 2)


def test_a_barrier_one_branch_never_reaches_is_divergence():
    with pytest.raises(SimulationError, match="barrier divergence") as err:
        simulate(load_kernel(source=SRC, entry="one_sided"), (1, 1, 1), (128, 1, 1), [np.zeros(128, np.float32)])
    assert "thread (64, 0, 0)" in str(err.value)


PERSISTENT = r"""
__global__ void persist(int* counter, int n, float* out)
{
    __shared__ int s_base;
    for (;;)
    {
        __syncthreads();
        if (threadIdx.x == 0)
            s_base = atomicAdd(counter, blockDim.x);
        __syncthreads();
        int i = s_base + threadIdx.x;
        if (i >= n)
            return;
        out[i] = 2.f * i;
    }
}
"""


@pytest.mark.parametrize("n", [128, 100])
def test_threads_that_return_from_a_persistent_loop_count_as_arrived(n):
    """nvdiffrast's antialias kernels: each round a block claims blockDim.x work items; threads past the end return
    from inside the loop while the others loop back to the __syncthreads() at its top. A GPU counts the exited
    threads as arrived; the loop's path stopped at the barrier, the returning path ran and left, and the barrier was
    then called divergent (n = 100: 36 of 64 threads go round again). By hand, 64 threads, n = 100: rounds claim 0,
    64 and 128 (counter ends at 192), out = 2 i."""
    counter = np.zeros(1, np.int32)
    out = np.zeros(n, np.float32)
    simulate(load_kernel(source=PERSISTENT, entry="persist"), 1, 64, [counter, n, out])
    assert counter[0] == 64 * (-(-n // 64) + 1)
    np.testing.assert_array_equal(out, 2.0 * np.arange(n))
