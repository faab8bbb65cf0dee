"""``cp.async`` (global -> shared asynchronous copies) and its groups, against the PTX ISA's rules and hand counts.

The PTX ISA ("Data Movement and Conversion Instructions: cp.async", cp.async.commit_group / wait_group / wait_all):
a copy belongs to its thread's open group, ``commit_group`` closes it, ``wait_group N`` waits until at most the N
newest committed groups are pending, ``wait_all`` waits for every copy. The executor lands a copy's data at the
latest point the ISA allows (docs/semantics.md). Counts: the copy's global read is one warp request with its
sectors, its shared write one store request with its wavefronts (hand-derived below), as for ``ld``/``st``.
"""
import numpy as np
import pytest

from perfmodel.compile.support import unsupported_opcodes
from perfmodel.errors import SimulationError
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

pytestmark = pytest.mark.usefixtures("no_sass_weights")   # conftest.py: counts, not the SASS issue count

COPY = r"""
__device__ void copy4(float *dst, const float *src) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" :: "r"(s), "l"(src) : "memory");
}
__device__ void copy16(float *dst, const float *src) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(src) : "memory");
}
__device__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ void wait_group() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }
__device__ void wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
"""


def run(body, grid, block, args):
    return simulate(load_kernel(source=COPY + body), grid, block, args)


def test_four_byte_copies_land_and_count_as_a_load_and_a_store():
    """64 threads per block copy one float each and read the tile back reversed after the wait. Per warp: one
    global request of 32 x 4 B = 128 B = 4 sectors; one shared store request of 32 consecutive words = 1
    wavefront; the reversed read is 1 wavefront too (32 distinct banks)."""
    body = r"""
    __global__ void k(const float *in, float *out) {
        __shared__ float tile[64];
        int i = blockIdx.x * 64 + threadIdx.x;
        copy4(&tile[threadIdx.x], &in[i]);
        commit();
        wait_group<0>();
        __syncthreads();
        out[i] = tile[63 - threadIdx.x];
    }"""
    x = np.arange(3 * 64, dtype=np.float32)
    out = np.zeros_like(x)
    r = run(body, 3, 64, [x, out])
    assert out.tolist() == x.reshape(3, 64)[:, ::-1].reshape(-1).tolist()
    g, s = r.counts.global_, r.counts.shared
    warps = 3 * 2
    assert g["load_requests"] == warps and g["load_sectors"] == 4 * warps
    assert g["store_requests"] == warps and g["store_sectors"] == 4 * warps
    assert s["store_requests"] == warps and s["store_wavefronts"] == warps
    assert s["load_requests"] == warps and s["load_wavefronts"] == warps


def test_sixteen_byte_copies():
    """32 threads copy 16 B each (a float4): the warp's read is 512 B = 16 sectors in one request; its shared
    write is 512 B = 4 wavefronts of 128 B."""
    body = r"""
    __global__ void k(const float *in, float *out) {
        __shared__ __align__(16) float tile[128];
        copy16(&tile[4 * threadIdx.x], &in[4 * threadIdx.x]);
        wait_all();
        __syncthreads();
        for (int j = 0; j < 4; ++j) out[4 * threadIdx.x + j] = 2.0f * tile[4 * threadIdx.x + j];
    }"""
    x = np.random.default_rng(3).uniform(-1, 1, 128).astype(np.float32)
    out = np.zeros_like(x)
    r = run(body, 1, 32, [x, out])
    assert out.tolist() == (2 * x).tolist()
    assert r.counts.global_["load_requests"] == 1 and r.counts.global_["load_sectors"] == 16
    assert r.counts.shared["store_requests"] == 1 and r.counts.shared["store_wavefronts"] == 4


def test_groups_complete_oldest_first():
    """Two groups: after ``wait_group 1`` the older one has landed (the ISA guarantees it); after ``wait_group 0``
    both. The newer one is still in flight after ``wait_group 1``: reading it then is a data race, and the executor
    shows the destination's old contents (the latest completion the ISA allows)."""
    body = r"""
    __global__ void k(const float *a, const float *b, float *out) {
        __shared__ float ta[32], tb[32];
        int t = threadIdx.x;
        ta[t] = -1.0f; tb[t] = -1.0f;
        copy4(&ta[t], &a[t]); commit();
        copy4(&tb[t], &b[t]); commit();
        wait_group<1>();
        out[t] = ta[t];            // landed
        out[32 + t] = tb[t];       // in flight: the old -1
        wait_group<0>();
        out[64 + t] = tb[t];       // landed
    }"""
    a = np.arange(32, dtype=np.float32)
    b = 100 + np.arange(32, dtype=np.float32)
    out = np.zeros(96, np.float32)
    run(body, 1, 32, [a, b, out])
    assert out[:32].tolist() == a.tolist()
    assert out[32:64].tolist() == [-1.0] * 32
    assert out[64:].tolist() == b.tolist()


def test_uncommitted_copies_wait_for_wait_all():
    """``wait_group 0`` covers committed groups only; ``wait_all`` commits the open group first."""
    body = r"""
    __global__ void k(const float *a, float *out) {
        __shared__ float ta[32];
        int t = threadIdx.x;
        ta[t] = -1.0f;
        copy4(&ta[t], &a[t]);
        wait_group<0>();
        out[t] = ta[t];            // the copy is in no committed group yet: still the old -1
        wait_all();
        out[32 + t] = ta[t];
    }"""
    a = np.arange(32, dtype=np.float32) + 7
    out = np.zeros(64, np.float32)
    run(body, 1, 32, [a, out])
    assert out[:32].tolist() == [-1.0] * 32
    assert out[32:].tolist() == a.tolist()


@pytest.mark.parametrize("branch", ["{ copy4(&ta[t], &a[t]); commit(); }",     # the odd lanes commit nothing
                                    "copy4(&ta[t], &a[t]); commit();"])        # they commit an empty group
def test_groups_are_per_thread(branch):
    """Only the even lanes copy; every lane then waits. Each lane's own groups decide: the even lanes' copies
    land, the odd lanes (which issued nothing) keep their old value."""
    body = r"""
    __global__ void k(const float *a, float *out) {
        __shared__ float ta[32];
        int t = threadIdx.x;
        ta[t] = -1.0f;
        if (t % 2 == 0) BRANCH
        wait_group<0>();
        out[t] = ta[t];
    }""".replace("BRANCH", branch)
    a = np.arange(32, dtype=np.float32) + 1
    out = np.zeros(32, np.float32)
    run(body, 1, 32, [a, out])
    assert out.tolist() == [float(v) if i % 2 == 0 else -1.0 for i, v in enumerate(a)]


def test_a_zero_filling_copy_stops_with_its_line():
    """``src-size`` below ``cp-size`` (the rest of the destination zero-filled) is not executed: an error naming
    the instruction, never a silently different value."""
    src = r"""
    __global__ void k(const float *in, float *out) {
        __shared__ float tile[32];
        unsigned s = (unsigned)__cvta_generic_to_shared(&tile[threadIdx.x]);
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, 2;\n" :: "r"(s), "l"(&in[threadIdx.x]) : "memory");
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        out[threadIdx.x] = tile[threadIdx.x];
    }"""
    with pytest.raises(SimulationError, match="cp.async.ca.shared.global"):
        simulate(load_kernel(source=src), 1, 32, [np.zeros(32, np.float32), np.zeros(32, np.float32)])


def test_inspect_lists_bulk_copies_but_not_cp_async():
    body = """
    cp.async.ca.shared.global [%r1], [%rd1], 4;
    cp.async.cg.shared.global [%r1], [%rd1], 16, 16;
    cp.async.commit_group;
    cp.async.wait_group 0;
    cp.async.wait_all;
    """
    assert unsupported_opcodes(body) == []
    assert unsupported_opcodes(body + "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                                      "[%r1], [%rd1], 256, [%r2];") == ["cp"]
