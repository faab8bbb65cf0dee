"""``cp.async`` (global -> shared asynchronous copies) and its groups, against the PTX ISA's rules and hand counts.

The PTX ISA ("Data Movement and Conversion Instructions: cp.async", cp.async.commit_group / wait_group / wait_all):
a copy belongs to its thread's open group, ``commit_group`` closes it, ``wait_group N`` waits until at most the N
newest committed groups are pending, ``wait_all`` waits for every copy; touching a destination before then is a
data race, which the executor reports (docs/semantics.md). Counts: the copy's global read is one warp request with its
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
__device__ float dot(float4 q) { return q.x + q.y + q.z + q.w; }
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


TWO_GROUPS = r"""
    __global__ void k(const float *a, const float *b, float *out) {
        __shared__ float ta[32], tb[32];
        int t = threadIdx.x;
        copy4(&ta[t], &a[t]); commit();
        copy4(&tb[t], &b[t]); commit();
        wait_group<1>();
        out[t] = ta[t];            // the older group has landed
        READ_EARLY
        wait_group<0>();
        out[32 + t] = tb[t];       // both have
    }"""


def test_groups_complete_oldest_first():
    """Two groups: after ``wait_group 1`` the older one has landed (the ISA guarantees it), after ``wait_group 0``
    both."""
    a = np.arange(32, dtype=np.float32)
    b = 100 + np.arange(32, dtype=np.float32)
    out = np.zeros(64, np.float32)
    run(TWO_GROUPS.replace("READ_EARLY", ""), 1, 32, [a, b, out])
    assert out.tolist() == a.tolist() + b.tolist()


def test_reading_a_copy_in_flight_is_a_data_race():
    """After ``wait_group 1`` the newer group may still be in flight: reading its destination then is a data race
    (its value depends on when the copy lands; measured on an H200, docs/semantics.md). The error names the read
    and the copy, with the thread and block."""
    src = COPY + TWO_GROUPS.replace("READ_EARLY", "out[t] += tb[t];  // in flight")
    lines = src.splitlines()
    read_line = next(i for i, text in enumerate(lines, 1) if "in flight" in text)
    copy_line = next(i for i, text in enumerate(lines, 1) if "cp.async.ca" in text)
    args = [np.zeros(32, np.float32), np.zeros(32, np.float32), np.zeros(64, np.float32)]
    with pytest.raises(SimulationError) as err:
        simulate(load_kernel(source=src), 1, 32, args)
    msg = str(err.value)
    assert "data race: a shared-memory load" in msg and f":{read_line}:" in msg and f":{copy_line}:" in msg
    assert "(no cp.async.wait_group / wait_all has completed its group yet)" in msg
    assert "thread (0, 0, 0), block (0, 0, 0)" in msg


def test_uncommitted_copies_wait_for_wait_all():
    """``wait_group 0`` covers committed groups only, so a read after it races with an uncommitted copy;
    ``wait_all`` commits the open group first."""
    body = r"""
    __global__ void k(const float *a, float *out) {
        __shared__ float ta[32];
        int t = threadIdx.x;
        copy4(&ta[t], &a[t]);
        WAIT
        out[t] = ta[t];
    }"""
    a = np.arange(32, dtype=np.float32) + 7
    out = np.zeros(32, np.float32)
    run(body.replace("WAIT", "wait_all();"), 1, 32, [a, out])
    assert out.tolist() == a.tolist()
    with pytest.raises(SimulationError, match="data race"):
        run(body.replace("WAIT", "wait_group<0>();"), 1, 32, [a, out])


def test_a_store_to_a_copy_in_flight_is_a_data_race():
    body = r"""
    __global__ void k(const float *a, float *out) {
        __shared__ float ta[64];
        int t = threadIdx.x;
        copy4(&ta[t], &a[t]); commit();
        ta[32 + t] = 1.0f;         // other words: no race
        ta[(t + 1) % 32] = 2.0f;   // a neighbour's copy in flight
        wait_all();
        out[t] = ta[t];
    }"""
    with pytest.raises(SimulationError, match="data race: a shared-memory store"):
        run(body, 1, 32, [np.zeros(32, np.float32), np.zeros(32, np.float32)])


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


def test_the_race_is_reported_in_its_block():
    """40 blocks of 32 threads (more blocks than threads per block); only block 37 reads before its wait."""
    body = r"""
    __global__ void k(const float *a, float *out) {
        __shared__ float ta[32];
        int t = threadIdx.x;
        copy4(&ta[t], &a[blockIdx.x * 32 + t]); commit();
        if (blockIdx.x == 37 && t == 5) out[0] = ta[(t + 1) % 32];   // in flight
        wait_all();
        out[blockIdx.x * 32 + t] = ta[t];
    }"""
    a = np.arange(40 * 32, dtype=np.float32)
    with pytest.raises(SimulationError, match=r"data race.*\(thread \(5, 0, 0\), block \(37, 0, 0\)\)"):
        run(body, 40, 32, [a, np.zeros_like(a)])
    out = np.zeros_like(a)
    run(body.replace("blockIdx.x == 37", "blockIdx.x == 99"), 40, 32, [a, out])
    assert out.tolist() == a.tolist()


def test_lanes_without_a_copy_read_freely():
    """Only the even lanes copy; the odd lanes read their own words (no copy writes them) before the wait."""
    body = r"""
    __global__ void k(const float *a, float *out) {
        __shared__ float ta[32];
        int t = threadIdx.x;
        ta[t] = -1.0f;
        __syncthreads();
        if (t % 2 == 0) { copy4(&ta[t], &a[t]); }
        commit();
        if (t % 2 == 1) out[t] = ta[t];
        wait_all();
        if (t % 2 == 0) out[t] = ta[t];
    }"""
    a = np.arange(32, dtype=np.float32) + 1
    out = np.zeros(32, np.float32)
    run(body, 1, 32, [a, out])
    assert out.tolist() == [float(v) if i % 2 == 0 else -1.0 for i, v in enumerate(a)]


V4 = "dot(*reinterpret_cast<float4 *>(&tile[0]))"      # one 16-byte shared load of tile[0..3]


@pytest.mark.parametrize("copy,read,races", [
    ("copy16(&tile[0], &a[0]);", "tile[3]", True),          # the 4th word of one lane's 16-byte copy
    ("copy16(&tile[0], &a[0]);", "tile[4]", False),         # the word after it
    ("copy4(&tile[0], &a[0]);", V4, True),                  # a 16-byte read whose first word is in flight
    ("copy4(&tile[3], &a[3]);", V4, True),                  # ... whose last word is
    ("copy4(&tile[4], &a[4]);", V4, False),                 # ... next to it
])
def test_races_are_found_word_by_word(copy, read, races):
    """Lane 0 issues one copy; lane 1 reads before the wait. Words are 4 bytes; a 16-byte copy writes 4 of them and
    a float4 read touches 4."""
    body = r"""
    __global__ void k(const float *a, float *out) {
        __shared__ __align__(16) float tile[8];
        int t = threadIdx.x;
        if (t < 8) tile[t] = 0.0f;
        __syncthreads();
        if (t == 0) COPY
        commit();
        if (t == 1) out[0] = READ;
        wait_all();
    }""".replace("COPY", copy).replace("READ", read)
    args = [np.arange(8, dtype=np.float32), np.zeros(1, np.float32)]
    if races:
        with pytest.raises(SimulationError, match="data race: a shared-memory load"):
            run(body, 1, 32, args)
    else:
        run(body, 1, 32, args)


def test_lanes_that_waited_may_write_their_destination():
    """The even lanes wait and then update their own destination while the odd lanes' copies are still in flight:
    no race, and the odd lanes' later wait does not copy the even lanes' data again."""
    body = r"""
    __global__ void k(const float *a, float *out) {
        __shared__ float ta[32];
        int t = threadIdx.x;
        copy4(&ta[t], &a[t]); commit();
        if (t % 2 == 0) { wait_all(); ta[t] += 100.0f; }
        wait_all();
        out[t] = ta[t];
    }"""
    a = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    run(body, 1, 32, [a, out])
    assert out.tolist() == [v + 100.0 if i % 2 == 0 else v for i, v in enumerate(a.tolist())]


@pytest.mark.parametrize("src_size", [16, 8, 6, 0])
def test_a_copy_with_a_src_size_zero_fills_the_rest(src_size):
    """``cp.async.cg.shared.global [dst], [src], 16, src-size``: the first src-size bytes come from src, the rest of
    the 16 are zeros (the PTX ISA's cp.async), checked against numpy on the bytes; each lane's src-size comes from a
    register (YHs's ampere_sgemm, __pipeline_memcpy_async's zero fill). A full copy is one 16-byte request per warp,
    a copy of 0 bytes none."""
    src = r"""
    __global__ void k(const float *in, float *out, unsigned n) {
        __shared__ __align__(16) float tile[128];
        unsigned s = (unsigned)__cvta_generic_to_shared(&tile[4 * threadIdx.x]);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                     :: "r"(s), "l"(&in[4 * threadIdx.x]), "r"(n) : "memory");
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        for (int j = 0; j < 4; ++j) out[4 * threadIdx.x + j] = tile[4 * threadIdx.x + j];
    }"""
    rng = np.random.default_rng(3)
    x = rng.random(128, dtype=np.float32) + 1
    out = np.full(128, -1, np.float32)
    r = simulate(load_kernel(source=src), 1, 32, [x, out, src_size])
    want = np.zeros((32, 16), np.uint8)
    want[:, :src_size] = x.view(np.uint8).reshape(32, 16)[:, :src_size]
    assert np.array_equal(out.view(np.uint8).reshape(32, 16), want)
    loads = r.counts.global_["load_requests"]
    assert loads == {16: 1, 0: 0}.get(src_size, loads)


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
