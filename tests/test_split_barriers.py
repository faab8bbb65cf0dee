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
