"""Distinct 128-byte L1 lines per global warp request (``global.load_lines`` / ``store_lines``).

Array bases are 256-byte aligned (cudaMalloc), so byte offset ``o`` from the base lies in line ``o // 128``. The
expected figures are derived by hand, and the vectorised counter is checked against a plain per-warp reference.
"""
import numpy as np
import pytest

from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate
from perfmodel.sim import warps as W


pytestmark = pytest.mark.usefixtures("no_sass_weights")   # conftest.py: counts, not the SASS issue count


def access_kernel(expr, dtype="float"):
    return load_kernel(source=f"""
    __global__ void k({dtype} *a, {dtype} *out, int s) {{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        out[i] = a[{expr}];
    }}""")


@pytest.mark.parametrize("expr,sectors_per_warp,lines_per_warp", [
    ("i", 4, 1),            # coalesced float: 32 x 4 B = one 128-byte line
    ("2 * i", 8, 2),        # stride 2: a 256-byte span = 2 lines
    ("8 * i", 32, 8),       # stride 32 B: one sector per lane, 4 lanes per line -> 8 lines
    ("32 * i", 32, 32),     # stride 128 B: a line per lane
    ("17 * i", 32, 17),     # stride 68 B (banded CSR gathers): offsets 0..2108 hit every line 0..16
    ("s", 1, 1),            # broadcast: one word, one line
    ("i / 32", 1, 1),       # one address per warp
])
def test_lines_of_access_patterns(expr, sectors_per_warp, lines_per_warp):
    a = np.zeros(32 * 256 + 1, np.float32)
    r = simulate(access_kernel(expr), 2, 128, [a, np.zeros(256, np.float32), 5])
    g = r.counts.global_
    assert g["load_requests"] == 8
    assert g["load_sectors"] == 8 * sectors_per_warp
    assert g["load_lines"] == 8 * lines_per_warp
    assert g["store_lines"] == 8 and g["store_sectors"] == 8 * 4     # out[i]: coalesced
    j = r.counts.to_json()["global"]
    assert j["load_lines"] == 8 * lines_per_warp and j["store_lines"] == 8


def test_misaligned_and_double_lines():
    # a[i + 1]: bytes 4..131 -> 5 sectors but 2 lines
    r = simulate(access_kernel("i + 1"), 1, 32, [np.zeros(64, np.float32), np.zeros(32, np.float32), 0])
    assert r.counts.global_["load_sectors"] == 5 and r.counts.global_["load_lines"] == 2
    # doubles, coalesced: 256 B = 2 lines
    r = simulate(access_kernel("i", "double"), 1, 32, [np.zeros(32), np.zeros(32), 0])
    assert r.counts.global_["load_lines"] == 2


def test_partial_warps_and_masked_lanes():
    # 48-thread blocks: warps cover i = 0..31 (line 0), 32..47 (bytes 128..191: line 1), 48..79 (bytes 192..319:
    # lines 1, 2), 80..95 (bytes 320..383: line 2)
    r = simulate(access_kernel("i"), 2, 48, [np.zeros(96, np.float32), np.zeros(96, np.float32), 0])
    assert r.counts.global_["load_requests"] == 4
    assert r.counts.global_["load_lines"] == 1 + 1 + 2 + 1
    # a guard leaves lanes idle: only lanes 0..39 of 64 load; bytes 0..159 -> warp 0 line 0, warp 1 (lanes 32..39,
    # bytes 128..159) line 1; the idle lanes of warp 1 must not add lines
    program = load_kernel(source="""
    __global__ void k(float *a, float *out, int n) {
        int i = threadIdx.x;
        if (i < n) out[i] = a[i * 2 % 64];
    }""")
    r = simulate(program, 1, 64, [np.zeros(64, np.float32), np.zeros(64, np.float32), 40])
    # loads: lanes 0..31 read 0,2,..,62 (bytes 0..251: lines 0, 1); lanes 32..39 read 0,2,..,14 (line 0)
    assert r.counts.global_["load_lines"] == 2 + 1
    assert r.counts.global_["store_lines"] == 1 + 1


def test_two_row_warps_of_a_16_wide_block():
    # blockDim (16, 16): a warp spans two rows of a 1024-float matrix -> 2 lines of 64 B each, 4 sectors
    program = load_kernel(source="""
    __global__ void k(float *a, float *out, int w) {
        int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
        out[r * w + c] = a[r * w + c];
    }""")
    w = 64
    r = simulate(program, (4, 4), (16, 16), [np.zeros(w * w, np.float32), np.zeros(w * w, np.float32), w])
    g = r.counts.global_
    assert g["load_requests"] == 16 * 8
    assert g["load_sectors"] == 16 * 8 * 4 and g["load_lines"] == 16 * 8 * 2


def test_gather_lines_follow_the_data_and_per_line_aggregates():
    program = load_kernel(source=r"""
    __global__ void k(float *x, int *idx, float *out) {
        int i = threadIdx.x;
        out[i] = x[idx[i]];
    }""")
    x = np.zeros(8192, np.float32)
    out = np.zeros(32, np.float32)
    spread = (np.arange(32) * 17).astype(np.int32)         # 68-byte stride through an index array
    far = (np.arange(32) * 64).astype(np.int32)            # 256-byte stride: a line per lane
    r = simulate(program, 1, 32, [x, spread, out])
    assert r.counts.global_["load_lines"] == 1 + 17
    agg = r.lines[4]
    assert agg["global_lines"] == 1 + 17 + 1 and agg["global_sectors"] == 4 + 32 + 4
    assert simulate(program, 1, 32, [x, far, out]).counts.global_["load_lines"] == 1 + 32


def _reference(sectors, active):
    rows, t = sectors.shape
    nw = -(-t // 32)
    out_s = np.zeros((rows, nw), np.int64)
    out_l = np.zeros((rows, nw), np.int64)
    for r in range(rows):
        for w in range(nw):
            lanes = range(32 * w, min(t, 32 * w + 32))
            ks = [int(sectors[r, j]) for j in lanes if active is None or active[r, j]]
            out_s[r, w] = len(set(ks))
            out_l[r, w] = len({k // 4 for k in ks})
    return out_s, out_l


@pytest.mark.parametrize("rows,t", [(1, 17), (2, 32), (3, 48), (4, 256), (1, 1000)])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("sort", [False, True])
def test_vectorised_lines_match_a_per_warp_reference(rows, t, masked, sort):
    rng = np.random.default_rng(rows * 1000 + t)
    sectors = rng.integers(0, 64, size=(rows, t))
    if sort:                                   # the already-sorted fast path
        sectors = np.sort(sectors, axis=1)
    active = (rng.random((rows, t)) < 0.6) if masked else None
    if masked:
        active[:, :32] = False if t > 40 else active[:, :32]     # a warp with no active lane counts 0
    got = W.distinct_sectors_lines(sectors, active)
    want = _reference(sectors, active)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert np.array_equal(got[0], W.distinct_per_warp(sectors, active))
