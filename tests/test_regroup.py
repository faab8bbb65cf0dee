"""Loops ptxas unrolled further than the PTX (perfmodel.sim.regroup): requests, sectors and issued copies grouped as
the SASS issues them, against counts derived by hand; identical to the PTX grouping when a warp's lanes share one
trip count; the loop fast-forward and block replication still give the unoptimised path's counts."""
import dataclasses

import numpy as np
import pytest

from perfmodel.analysis import _counts_json
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate


# A CSR-style row loop (the shape of spmv_csr): NVVM unrolls it 4x into a PTX self-loop block (4 loads of a[]
# per PTX iteration, after a `(hi - lo) & 3` remainder loop); ptxas (sm_90) unrolls that block 4x again: a SASS
# loop of 16 loads that runs while >= 4 PTX iterations remain, then a chunk of 2 copies (8 loads) if >= 2 remain,
# then a chunk of 1 copy (4 loads) if 1 remains.
SRC = """
__global__ void sum_range(const int *start, const int *end, const float *a, float *out) {
    int t = threadIdx.x;
    int lo = start[t];
    int hi = end[t];
    float s = 0.0f;
    for (int i = lo; i < hi; i++) {
        s += a[i];
    }
    out[t + 32 * blockIdx.x] = s;
}

__global__ void sum_lanes(const float *a, float *out, int n0, int n1, int n2) {
    int t = threadIdx.x;
    int lo = t & 7;
    int hi = lo + (t < 8 ? n0 : (t < 16 ? n1 : n2));
    float s = 0.0f;
    for (int i = lo; i < hi; i++) {
        s += a[i];
    }
    out[t + 32 * blockIdx.x] = s;
}

__global__ void sum_count(const int *start, const int *end, const float *a, float *out) {
    int t = threadIdx.x;
    int m = end[t];
    float s = 0.0f;
    for (int i = 0; i < m; i++) {
        s += a[i];
    }
    out[t + 32 * blockIdx.x] = s;
}
"""
LOOP_LINE = next(i for i, line in enumerate(SRC.splitlines(), 1) if "s += a[i];" in line)


@pytest.fixture(scope="module")
def sum_range():
    return load_kernel(source=SRC, path="rows.cu", entry="sum_range")


@pytest.fixture(scope="module")
def sum_count():
    # the loop from 0: ptxas's other form, whose 1-copy remainder chunk is a loop (that runs at most once)
    return load_kernel(source=SRC, path="rows.cu", entry="sum_count")


@pytest.fixture(scope="module")
def sum_lanes():
    return load_kernel(source=SRC, path="rows.cu", entry="sum_lanes")


def _run(program, ptx_trips, **kw):
    """One warp; lane l runs ptx_trips[l] PTX iterations (4 elements each) from element 0: every lane of an
    iteration reads the same 4 addresses a[4k .. 4k+3] (one sector per load when lanes agree on k)."""
    trips = np.asarray(ptx_trips, np.int32)
    args = [np.zeros(32, np.int32), 4 * trips, np.arange(256, dtype=np.float32), np.zeros(32, np.float32)]
    res = simulate(program, 1, 32, args, **kw)
    assert np.array_equal(args[3], [float(sum(range(4 * t))) for t in trips])     # values are the PTX's
    return res


def _ptx_grouping(program):
    return dataclasses.replace(program, sass=dataclasses.replace(program.sass_facts(), loops={}))


def test_the_row_loop_is_recognised(sum_range, sum_lanes, sum_count):
    for program in (sum_range, sum_lanes, sum_count):
        (loop,) = [lp for lp in program.sass_loops.values() if lp.factor > 1]
        assert loop.factor == 4 and loop.chunks == (2, 1)
        assert any("recognised" in note for note in program.sass_loop_notes)


def test_lanes_with_3_and_4_iterations(sum_range):
    # lanes 0-15: t = 3 PTX iterations, lanes 16-31: t = 4. PTX grouping: 4 iterations x 4 loads = 16 requests.
    # SASS: lanes 16-31 run the main loop once (16 loads); lanes 0-15 (3 = 2 + 1) run the 2-copy chunk (8 loads)
    # and the 1-copy chunk (4 loads), which lanes 16-31 skip: 16 + 8 + 4 = 28 requests. Every load instruction
    # reads one address across its lanes: 28 sectors. (spmv's 12 loads per iteration: 48 vs 48 + 24 + 12 = 84.)
    ptx = _run(_ptx_grouping(sum_range), [3] * 16 + [4] * 16).lines[LOOP_LINE]
    sass = _run(sum_range, [3] * 16 + [4] * 16).lines[LOOP_LINE]
    assert (ptx["global_requests"], ptx["global_sectors"]) == (16, 16)
    assert (sass["global_requests"], sass["global_sectors"]) == (28, 28)
    assert sass["global_loads"] == ptx["global_loads"] == 4 * (16 * 3 + 16 * 4)


def test_the_other_form_counts_the_same(sum_count):
    # the same trip counts as below through ptxas's form with a 1-copy loop as its last chunk: 28 requests,
    # 32 sectors (see the derivation below)
    sass = _run(sum_count, [3] * 8 + [5] * 8 + [4] * 16)
    line = max(i for i, t in enumerate(SRC.splitlines(), 1) if "s += a[i];" in t)     # sum_count's
    assert (sass.lines[line]["global_requests"], sass.lines[line]["global_sectors"]) == (28, 32)


def test_lanes_reach_one_chunk_at_different_iterations(sum_range):
    # lanes 0-7: t = 3 (q = 0, remainder 2 + 1), lanes 8-15: t = 5 (q = 1, remainder 1), lanes 16-31: t = 4 (q = 1).
    # main loop, once: lanes 8-31 at PTX iterations 0-3: 16 loads, one address each -> 16 requests, 16 sectors;
    # 2-copy chunk: lanes 0-7 at iterations 0, 1 -> 8 requests, 8 sectors;
    # 1-copy chunk: lanes 0-7 at iteration 2 (a[8..11]) with lanes 8-15 at iteration 4 (a[16..19]): two sectors
    # (bytes 32-47 and 64-79 of a) per load -> 4 requests, 8 sectors.
    # Total 28 requests, 32 sectors; the PTX grouping: 5 iterations x 4 loads = 20 requests, 20 sectors.
    trips = [3] * 8 + [5] * 8 + [4] * 16
    ptx = _run(_ptx_grouping(sum_range), trips)
    sass = _run(sum_range, trips)
    assert (ptx.lines[LOOP_LINE]["global_requests"], ptx.lines[LOOP_LINE]["global_sectors"]) == (20, 20)
    assert (sass.lines[LOOP_LINE]["global_requests"], sass.lines[LOOP_LINE]["global_sectors"]) == (28, 32)
    # the totals and the per-block figure follow; the instructions outside the loop are untouched
    assert sass.counts.global_["load_requests"] - ptx.counts.global_["load_requests"] == 8
    assert sass.counts.global_["load_sectors"] - ptx.counts.global_["load_sectors"] == 12
    assert int(sass.per_block["global_load_sectors"][0]) == sass.counts.global_["load_sectors"]
    # issued copies of the PTX block: 4 (main loop) + 2 + 1 = 7 against 5 PTX iterations; the executed PTX is
    # the same and the SASS-level estimate grows by 2 copies' weight
    assert sass.counts.ptx_warp_instructions == ptx.counts.ptx_warp_instructions
    (b,) = [b for b, lp in sum_range.sass_loops.items() if lp.factor > 1]
    blk = sum_range.module.functions[sum_range.entry].blocks[b]
    per_copy = sum(sum_range.sass_weights[blk.start:blk.end])
    assert sass.counts.warp_instructions - ptx.counts.warp_instructions == pytest.approx(2 * per_copy, abs=1)


@pytest.mark.parametrize("trips", [[5] * 32, [2] * 32, [0] * 8 + [6] * 24])
def test_one_trip_count_per_warp_counts_as_before(sum_range, trips):
    # every lane of the warp with the same trip count (or none): the SASS slots are the PTX iterations
    sass = _run(sum_range, trips)
    ptx = _run(_ptx_grouping(sum_range), trips)
    assert _counts_json(sass.counts) == _counts_json(ptx.counts)
    assert sass.lines == ptx.lines
    t = max(trips)
    assert (sass.lines[LOOP_LINE]["global_requests"], sass.lines[LOOP_LINE]["global_sectors"]) == (4 * t, 4 * t)


def _lanes_run(program, n, grid=1, **kw):
    out = np.zeros(32 * grid, np.float32)
    res = simulate(program, grid, 32, [np.arange(256, dtype=np.float32), out, *n], **kw)
    return res, out


def _same(a, b):
    assert _counts_json(a.counts) == _counts_json(b.counts)
    assert a.lines == b.lines
    for key in a.per_block:
        assert np.array_equal(a.per_block[key], b.per_block[key]), key


@pytest.mark.parametrize("n", [(12, 20, 16), (64, 64, 64), (68, 80, 72)])
def test_loop_fast_forward_gives_the_executed_counts(sum_lanes, n, monkeypatch):
    # trip counts from threadIdx and parameters (no data): the fast-forward tries the loop; with one trip count
    # it counts it from a few iterations ("done", the grouping is the identity), else it hands back the
    # iterations it ran ("resume") and the regrouping goes on from them
    import perfmodel.sim.loops as L

    seen = []
    real = L._fast_forward

    def spy(*a, **k):
        how = real(*a, **k)
        seen.append(how)
        return how

    monkeypatch.setattr(L, "_fast_forward", spy)
    full, out_full = _lanes_run(sum_lanes, n)
    fast, out_fast = _lanes_run(sum_lanes, n, fast_loops=True)
    _same(full, fast)
    assert seen == (["done"] if len(set(n)) == 1 else ["resume"])
    if len(set(n)) == 1:
        assert fast.skipped_iterations > 0
    else:
        assert np.array_equal(out_full, out_fast)
        ptx, _ = _lanes_run(_ptx_grouping(sum_lanes), n)
        assert full.counts.global_["load_requests"] > ptx.counts.global_["load_requests"]


def test_block_replication_gives_the_unreplicated_counts(sum_lanes):
    plain, _ = _lanes_run(sum_lanes, (12, 20, 16), grid=64)
    repl, _ = _lanes_run(sum_lanes, (12, 20, 16), grid=64, replicate=True)
    assert repl.replication is not None and repl.replication.proved, repl.replication
    _same(plain, repl)


SPIN_SRC = """
__global__ void bump(const int *bin, float *out) {
    __shared__ float local[32];
    local[threadIdx.x] = 0.0f;
    __syncthreads();
    atomicAdd(&local[bin[threadIdx.x]], 1.0f);
    __syncthreads();
    out[threadIdx.x] = local[threadIdx.x];
}
"""


def test_a_shared_float_atomic_is_a_cas_loop_repeated_per_lane_on_one_address():
    # sm_90 has no shared-memory float add: the atomicAdd is `LDS; FADD; ATOMS.CAST.SPIN; ISETP; @!P BRA` (5 SASS
    # instructions, read off nvdisasm), repeated until every lane's CAS succeeded: one round per lane on the most
    # shared address. 32 lanes on one bin: 32 rounds; on 32 bins: 1 round; 31 x 5 = 155 more warp instructions.
    program = load_kernel(source=SPIN_SRC, path="bump.cu", entry="bump")
    assert list(program.sass_spin.values()) == [5]

    def run(bins):
        out = np.zeros(32, np.float32)
        res = simulate(program, 1, 32, [np.asarray(bins, np.int32), out])
        assert out.sum() == 32
        return res.counts

    one, spread = run([0] * 32), run(list(range(32)))
    assert one.global_["load_requests"] == spread.global_["load_requests"]
    assert one.warp_instructions - spread.warp_instructions == 31 * 5


# The regrouping's other counting paths: shared-memory loads (wavefronts), blocks whose thread count is not a
# multiple of 32 (the last warp partly empty), and 16-byte loads. Each count below is derived by hand from the SASS
# slot rule of the module docstring.
MORE_SRC = r"""
__global__ void sum_shared(const int *start, const int *end, const float *a, float *out) {
    __shared__ float sa[512];
    int t = threadIdx.x;
    for (int i = t; i < 512; i += blockDim.x) sa[i] = a[i];
    __syncthreads();
    int lo = start[t];
    int hi = end[t];
    float s = 0.0f;
    for (int i = lo; i < hi; i++) {
        s += sa[i];
    }
    out[t + blockDim.x * blockIdx.x] = s;
}

__global__ void sum_wide(const int *start, const int *end, const float4 *a, float *out) {
    int t = threadIdx.x;
    int lo = start[t];
    int hi = end[t];
    float s = 0.0f;
    for (int i = lo; i < hi; i++) {
        float4 v = a[i];
        s += v.x + v.y + v.z + v.w;
    }
    out[t + blockDim.x * blockIdx.x] = s;
}
"""


def _rows(program, ptx_trips, elements=4096):
    """One block of len(ptx_trips) threads; thread l runs ptx_trips[l] PTX iterations (4 elements each) from 0;
    a[] holds 0, 1, 2, ... (sum_wide reads it as float4)."""
    trips = np.asarray(ptx_trips, np.int32)
    n = len(trips)
    a = np.arange(elements, dtype=np.float32)
    args = [np.zeros(n, np.int32), 4 * trips, a, np.zeros(n, np.float32)]
    res = simulate(program, 1, n, args)
    floats = 4 if "sum_wide" in program.entry else 1                           # floats per element
    assert np.allclose(args[3], [a[:4 * t * floats].sum() for t in trips])     # values are the PTX's
    return res


def _loop_line(needle):
    return next(i for i, t in enumerate(MORE_SRC.splitlines(), 1) if needle in t)


@pytest.fixture(scope="module")
def sum_shared():
    p = load_kernel(source=MORE_SRC, path="more.cu", entry="sum_shared")
    assert [(lp.factor, lp.chunks) for lp in p.sass_loops.values() if lp.factor > 1] == [(4, (2, 1))]
    return p


@pytest.fixture(scope="module")
def sum_wide():
    p = load_kernel(source=MORE_SRC, path="more.cu", entry="sum_wide")
    assert [(lp.factor, lp.chunks) for lp in p.sass_loops.values() if lp.factor > 1] == [(4, (2, 1))]
    return p


def test_shared_loads_regrouped_as_wavefronts(sum_shared):
    # lanes 0-7: t = 3 (q = 0, remainder 2 + 1); lanes 8-15: t = 11 (q = 2, remainder 2 + 1); lanes 16-31: t = 4.
    # Lanes at one PTX iteration read one word: 1 wavefront. SASS slots:
    #   main loop, twice: lanes 8-31 at iterations 0-3, then lanes 8-15 at 4-7: 32 loads x 1 wavefront;
    #   2-copy chunk: lanes 0-7 at iterations 0, 1 (sa[0..7]) with lanes 8-15 at 8, 9 (sa[32..39]): word j and
    #     word 32 + j are in one bank: 2 wavefronts for each of its 8 loads;
    #   1-copy chunk: lanes 0-7 at iteration 2 (sa[8..11]) with lanes 8-15 at 10 (sa[40..43]): 4 loads x 2.
    # 44 requests, 32 + 16 + 8 = 56 wavefronts; the PTX grouping: 11 iterations x 4 loads, 1 wavefront each: 44.
    trips = [3] * 8 + [11] * 8 + [4] * 16
    sass = _rows(sum_shared, trips)
    ptx = _rows(_ptx_grouping(sum_shared), trips)
    assert (ptx.counts.shared["load_requests"], ptx.counts.shared["load_wavefronts"]) == (44, 44)
    assert (sass.counts.shared["load_requests"], sass.counts.shared["load_wavefronts"]) == (44, 56)
    line = _loop_line("s += sa[i];")
    assert sass.lines[line]["shared_wavefronts"] == 56
    # the per-block figure holds the loads' 56 and the staging stores' 16 (512 words by 32 lanes, 1 wavefront each)
    assert int(sass.per_block["shared_wavefronts"][0]) == 56 + 16 == sass.counts.shared["store_wavefronts"] + 56


@pytest.mark.parametrize("which, lines", [("sum_range", 28), ("sum_wide", 32)])
def test_a_block_of_24_threads(sum_range, sum_wide, which, lines):
    # the trip counts of test_lanes_reach_one_chunk_at_different_iterations on 24 lanes (lanes 16-23: t = 4):
    # 16 + 8 + 4 = 28 requests; the 1-copy chunk's loads read 2 sectors each (element 8 + j with 16 + j): 32 sectors.
    # Lines: 4-byte elements 8 + j and 16 + j share a 128-byte line (28 lines); 16-byte ones (bytes 128 + 16 j and
    # 256 + 16 j) do not (32).
    program = {"sum_range": sum_range, "sum_wide": sum_wide}[which]
    trips = [3] * 8 + [5] * 8 + [4] * 8
    res = _rows(program, trips)
    (agg,) = [v for v in res.lines.values() if v["global_loads"] and v["global_requests"] > 4]
    assert (agg["global_requests"], agg["global_sectors"], agg["global_lines"]) == (28, 32, lines)
    ptx = _rows(_ptx_grouping(program), trips)
    assert res.counts.global_["load_sectors"] - ptx.counts.global_["load_sectors"] == 32 - 20
    assert int(res.per_block["global_load_sectors"][0]) == res.counts.global_["load_sectors"]


def test_two_warps_the_second_partly_empty(sum_range, sum_wide):
    # 40 threads: warp 0 as above with lanes 24-31 at t = 4 (28 requests, 32 sectors); warp 1 has 8 lanes:
    # lanes 32-35 t = 2 (q = 0, remainder 2), lanes 36-39 t = 6 (q = 1, remainder 2). Warp 1's main loop once
    # (lanes 36-39 at iterations 0-3): 16 loads, 1 sector; its 2-copy chunk: lanes 32-35 at iterations 0, 1 with
    # lanes 36-39 at 4, 5 - elements 4c + j and 16 + 4c + j, 64 bytes apart (4-byte) or 256 (16-byte): 8 loads,
    # 2 sectors each; no 1-copy chunk. Warp 1: 24 requests, 32 sectors; 24 lines (4-byte: all in line 0) or 32.
    trips = [3] * 8 + [5] * 8 + [4] * 16 + [2] * 4 + [6] * 4
    for program, lines in ((sum_range, 28 + 24), (sum_wide, 32 + 32)):
        res = _rows(program, trips)
        (agg,) = [v for v in res.lines.values() if v["global_loads"] and v["global_requests"] > 4]
        assert (agg["global_requests"], agg["global_sectors"], agg["global_lines"]) == (52, 64, lines)


SHARED_LANES_SRC = r"""
__global__ void sum_shared_lanes(const float *a, float *out, int n0, int n1, int n2) {
    __shared__ float sa[512];
    int t = threadIdx.x;
    for (int i = t; i < 512; i += blockDim.x) sa[i] = a[i];
    __syncthreads();
    int lo = t & 7;
    int hi = lo + (t < 8 ? n0 : (t < 16 ? n1 : n2));
    float s = 0.0f;
    for (int i = lo; i < hi; i++) {
        s += sa[i];
    }
    out[t + 32 * blockIdx.x] = s;
}
"""


def test_blocks_with_one_address_pattern_count_once_each():
    # bounds from threadIdx and parameters only: every block of the grid reads the same shared words, so the
    # simulator counts the pattern once for all of them. Lanes 0-7 (lo = 0-7) run 12 elements (3 PTX iterations),
    # lanes 8-15 20 (5), lanes 16-31 16 (4); lane l reads word lo + 4k + j, so the words of one load are 8
    # consecutive words - 8 banks, 1 wavefront - in every slot where lanes 0-7 are alone, with lanes 8-15, or with
    # all; except in the 1-copy chunk, where lanes 0-7 (iteration 2: words lo + 8 + j) meet lanes 8-15 (iteration
    # 4: lo + 16 + j): 16 distinct words in 16 banks, still 1 wavefront. So every one of the SASS slots' loads is 1
    # wavefront: main loop 16 + 2-copy chunk 8 + 1-copy chunk 4 = 28 per block, 56 for 2 blocks; the per-block
    # figure adds the 16 staging stores.
    program = load_kernel(source=SHARED_LANES_SRC, path="lanes.cu", entry="sum_shared_lanes")
    assert [(lp.factor, lp.chunks) for lp in program.sass_loops.values() if lp.factor > 1] == [(4, (2, 1))]
    a = np.arange(512, dtype=np.float32)
    out = np.zeros(64, np.float32)
    res = simulate(program, 2, 32, [a, out, 12, 20, 16])
    lo = np.arange(32) & 7
    count = np.where(np.arange(32) < 8, 12, np.where(np.arange(32) < 16, 20, 16))
    assert np.array_equal(out, np.tile([a[x:x + c].sum() for x, c in zip(lo, count)], 2))
    assert (res.counts.shared["load_requests"], res.counts.shared["load_wavefronts"]) == (56, 56)
    assert res.per_block["shared_wavefronts"].tolist() == [28 + 16, 28 + 16]


def test_lanes_that_leave_early_are_counted_in_their_chunks_only(sum_range):
    # lanes 0-7 read from element 64 (t = 3), the others from 0 (lanes 8-15 t = 5, 16-31 t = 4). Main loop once:
    # lanes 8-31 at iterations 0-3, one address per load: 16 requests, 16 sectors - the lanes 0-7 that leave
    # during this group are not in it (counting them there would add a second sector to 12 of its loads). 2-copy
    # chunk: lanes 0-7 at iterations 0, 1 (elements 64-71): 8 requests, 8 sectors. 1-copy chunk: lanes 0-7 at
    # iteration 2 (elements 72-75, sector 9) with lanes 8-15 at 4 (elements 16-19, sector 2): 4 requests, 8
    # sectors. 28 requests, 32 sectors; lines: bytes 288 and 64 are in lines 2 and 0, so 16 + 8 + 8 = 32.
    trips = np.asarray([3] * 8 + [5] * 8 + [4] * 16, np.int32)
    start = np.asarray([64] * 8 + [0] * 24, np.int32)
    a = np.arange(256, dtype=np.float32)
    args = [start, start + 4 * trips, a, np.zeros(32, np.float32)]
    res = simulate(sum_range, 1, 32, args)
    assert np.array_equal(args[3], [a[s:s + 4 * t].sum() for s, t in zip(start, trips)])
    agg = res.lines[LOOP_LINE]
    assert (agg["global_requests"], agg["global_sectors"], agg["global_lines"]) == (28, 32, 32)


PARTIAL_SRC = r"""
__global__ void sum_some(const float *a, float *out, int n0, int n1) {
    int t = threadIdx.x;
    int lo = t & 7;
    int hi = lo + (t < 8 ? n0 : (t < 24 ? n1 : 0));
    float s = 0.0f;
    for (int i = lo; i < hi; i++) {
        s += a[i];
    }
    out[t + 32 * blockIdx.x] = s;
}
"""


@pytest.mark.parametrize("n", [(12, 20), (16, 16)])
def test_fast_forward_of_a_loop_that_some_lanes_skip(n):
    # lanes 24-31 have no iterations: the loop starts under a partial mask, and the fast-forward must run it under
    # that mask (the unoptimised run's counts, per line and per block, and its values)
    program = load_kernel(source=PARTIAL_SRC, path="some.cu", entry="sum_some")
    assert [(lp.factor, lp.chunks) for lp in program.sass_loops.values() if lp.factor > 1] == [(4, (2, 1))]
    a = np.arange(256, dtype=np.float32)
    runs = []
    for fast in (False, True):
        out = np.zeros(32, np.float32)
        runs.append((simulate(program, 1, 32, [a, out, *n], fast_loops=fast), out))
    (full, out_full), (fast, out_fast) = runs
    _same(full, fast)
    assert np.array_equal(out_full, out_fast)
    lo = np.arange(32) & 7
    count = np.where(np.arange(32) < 8, n[0], np.where(np.arange(32) < 24, n[1], 0))
    assert np.array_equal(out_full, [a[l:l + c].sum() for l, c in zip(lo, count)])


@pytest.mark.parametrize("seed", [0, 1])
def test_sectors_left_to_the_slots_equal_the_executors_own(sum_range, seed, monkeypatch):
    """The executor leaves a regrouped loop's global sectors and lines to the slots, which count them from the
    trace (once) rather than recounting what the executor counted. One block of 256 threads: half the rows 0-23
    PTX iterations long at random (groups that lanes leave), half 40 (then groups that no lane leaves); every
    count and per-block figure must be the one the executor gives when it counts them itself."""
    from perfmodel.sim import regroup

    rng = np.random.default_rng(seed)
    n = 256
    lengths = 4 * np.where(np.arange(n) % 2 == 0, rng.integers(0, 24, n), 40)
    start = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int32)
    end = (start + lengths).astype(np.int32)
    a = rng.random(int(end.max()) + 1).astype(np.float32)

    def run():
        out = np.zeros(n, np.float32)
        # without CC 1.x transactions, as analyses for devices after CC 1.x run (they would keep the executor's)
        res = simulate(sum_range, 1, n, [start, end, a, out], cc1_counts=False)
        assert np.allclose(out, [a[s:e].sum() for s, e in zip(start, end)], rtol=1e-5)
        return res

    deferred = run()
    monkeypatch.setattr(regroup, "DEFER_GLOBAL_COUNTS", False)
    counted = run()
    _same(deferred, counted)
    assert deferred.lines[LOOP_LINE]["global_sectors"] > 0
