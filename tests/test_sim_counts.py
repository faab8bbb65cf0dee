"""Counts against hand derivations and closed forms."""
import numpy as np
import pytest

from perfmodel.kernel import load_kernel as compile_kernel
from perfmodel.sim import simulate
from perfmodel.spec import load_spec

# The seed kernels exactly as shipped (kernels_spec/*.cu), so these counts pin what `perfmodel analyze` runs.
NAIVE = load_spec("matmul_naive").source_text
TILED = load_spec("matmul_tiled").source_text
ELEMENTWISE = load_spec("matmul_elementwise").source_text


def compile_src(src, **defines):
    return compile_kernel(source=src, path="t.cu", defines=defines or None)


def access_kernel(expr, dtype="float"):
    return compile_src(f"""
    __global__ void k({dtype} *a, {dtype} *out, int s) {{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        out[i] = a[{expr}];
    }}""")


@pytest.mark.parametrize("expr,stride_bytes,sectors_per_warp", [
    ("i", 4, 4),            # coalesced: 32 lanes x 4 B = 128 B = 4 sectors
    ("2 * i", 8, 8),        # stride 2: 256 B span, every sector touched = 8
    ("8 * i", 32, 32),      # stride 8 floats = 32 B: one sector per lane
    ("32 * i", 128, 32),    # stride 32: still one sector per lane (sector count saturates at 32)
    ("s", 0, 1),            # broadcast: every lane reads the same word = 1 sector
    ("i / 32", 0, 1),       # one address per warp: 1 sector
])
def test_global_access_patterns_sector_counts(expr, stride_bytes, sectors_per_warp):
    program = access_kernel(expr)
    a = np.zeros(32 * 256 + 1, np.float32)
    out = np.zeros(256, np.float32)
    r = simulate(program, 2, 128, [a, out, 5])
    g = r.counts.global_
    assert g["loads"] == 256 and g["load_requests"] == 8
    assert g["load_sectors"] == 8 * sectors_per_warp
    assert g["store_requests"] == 8 and g["store_sectors"] == 8 * 4
    assert g["load_bytes"] == 256 * 4


def test_misaligned_and_double_accesses():
    # a[i + 1]: 128 B starting 4 B into a sector -> 5 sectors per warp
    r = simulate(access_kernel("i + 1"), 1, 32, [np.zeros(64, np.float32), np.zeros(32, np.float32), 0])
    assert r.counts.global_["load_sectors"] == 5
    # doubles, coalesced: 32 x 8 B = 256 B = 8 sectors
    r = simulate(access_kernel("i", "double"), 1, 32, [np.zeros(32), np.zeros(32), 0])
    assert r.counts.global_["load_sectors"] == 8 and r.counts.global_["load_bytes"] == 256


def test_indirect_gather_sectors_follow_the_data():
    program = compile_src(r"""
    __global__ void k(float *x, int *idx, float *out) {
        int i = threadIdx.x;
        out[i] = x[idx[i]];
    }""")
    x = np.zeros(4096, np.float32)
    out = np.zeros(32, np.float32)
    same = np.zeros(32, np.int32)
    spread = (np.arange(32) * 64).astype(np.int32)
    assert simulate(program, 1, 32, [x, same, out]).counts.global_["load_sectors"] == 4 + 1
    assert simulate(program, 1, 32, [x, spread, out]).counts.global_["load_sectors"] == 4 + 32


@pytest.mark.parametrize("index,wavefronts", [
    ("threadIdx.x", 1),            # consecutive words: 32 banks, 1 wavefront
    ("2 * threadIdx.x", 2),        # stride 2: two words per even bank -> 2-way conflict
    ("32 * threadIdx.x", 32),      # stride 32: every lane in bank 0 -> 32-way conflict
    ("33 * threadIdx.x", 1),       # stride 33 (padding trick): conflict-free
    ("0", 1),                      # broadcast: one word
    ("threadIdx.x / 2", 1),        # pairs share a word (multicast): 16 words in 16 banks
])
def test_shared_memory_bank_conflicts(index, wavefronts):
    program = compile_src(f"""
    __global__ void k(float *out) {{
        __shared__ float s[64 * 33];
        s[threadIdx.x] = threadIdx.x;
        __syncthreads();
        out[threadIdx.x] = s[{index}];
    }}""")
    r = simulate(program, 3, 64, [np.zeros(64, np.float32)])
    sh = r.counts.shared
    assert sh["load_requests"] == 6 and sh["store_requests"] == 6
    assert sh["load_wavefronts"] == 6 * wavefronts
    assert sh["store_wavefronts"] == 6


def test_shared_wavefronts_for_doubles_and_2d_tiles():
    program = compile_src(r"""
    __global__ void k(double *out) {
        __shared__ double d[64];
        __shared__ float tile[32][32];
        d[threadIdx.x] = 1.0;
        tile[threadIdx.x][0] = 1.0f;          // column access: 32-way conflict
        __syncthreads();
        out[threadIdx.x] = d[threadIdx.x] + tile[0][threadIdx.x];
    }""")
    r = simulate(program, 1, 32, [np.zeros(32)])
    # doubles: 64 words over 32 banks = 2 wavefronts each for the store and the load; column store: 32; row: 1
    assert r.counts.shared["store_wavefronts"] == 2 + 32
    assert r.counts.shared["load_wavefronts"] == 2 + 1


def test_constant_serialisation_counts_distinct_addresses_per_warp():
    program = compile_src(r"""
    __constant__ float M[64];
    __global__ void k(float *out) {
        int i = threadIdx.x;
        out[i] = M[0] + M[i % 4] + M[i];
    }""")
    r = simulate(program, 1, 64, [np.zeros(64, np.float32)], constants={"M": np.arange(64, dtype=np.float32)})
    c = r.counts.constant
    assert c["loads"] == 3 * 64 and c["load_requests"] == 3 * 2
    # per warp: M[0] 1 address, M[i%4] 4 addresses, M[i] 32 addresses (fully serialised)
    assert c["load_wavefronts"] == 2 * (1 + 4 + 32)


def test_naive_matmul_16x16_block_requests_and_sectors_by_hand():
    """One 16x16 block, Width=16 (all threads in range).

    The block has 256 threads = 8 warps; warp w holds rows 2w and 2w+1 (x fastest), 16 columns each.
    Per k-iteration, per warp:
      d_M[Row*Width+k]: lanes read 2 distinct words (one per row), 64 B apart -> 2 sectors, 1 request;
      d_N[k*Width+Col]: 16 consecutive floats (64 B, sector aligned) shared by both rows -> 2 sectors, 1 request.
    16 iterations x 8 warps: loads = 2 x 256 x 16 = 8192, requests = 2 x 8 x 16 = 256, sectors = 4 x 8 x 16 = 512.
    The store d_P[Row*Width+Col]: each warp writes 2 rows x 64 B = 4 sectors, 1 request -> 8 requests, 32 sectors.
    """
    program = compile_src(NAIVE)
    W = 16
    M = np.random.default_rng(1).random((W, W), dtype=np.float32)
    N = np.random.default_rng(2).random((W, W), dtype=np.float32)
    P = np.zeros((W, W), np.float32)
    r = simulate(program, (1, 1), (16, 16), [M, N, P, W])
    g = r.counts.global_
    assert (g["loads"], g["load_requests"], g["load_sectors"]) == (8192, 256, 512)
    assert (g["stores"], g["store_requests"], g["store_sectors"]) == (256, 8, 32)
    assert r.counts.flops == 2 * W ** 3
    assert np.allclose(P, M @ N, rtol=1e-5)


@pytest.mark.parametrize("W,T", [(64, 16), (64, 8), (96, 32)])
def test_tiled_matmul_closed_forms(W, T):
    program = compile_src(TILED, TILE_WIDTH=T)
    rng = np.random.default_rng(0)
    M = rng.random((W, W), dtype=np.float32)
    N = rng.random((W, W), dtype=np.float32)
    P = np.zeros((W, W), np.float32)
    r = simulate(program, (W // T, W // T), (T, T), [M, N, P, W])
    c = r.counts
    assert c.global_["loads"] == 2 * W * W * (W // T)
    assert c.flops == 2 * W ** 3
    assert c.fp_ops["fma"] == W ** 3
    assert c.shared["loads"] == 2 * W ** 3 and c.shared["stores"] == 2 * W * W * (W // T)
    assert c.barriers == 2 * (W // T) * (W // T) ** 2          # per block, two per phase
    assert c.divergent_branches == 0 and c.simt_efficiency == 1.0
    assert np.allclose(P, M @ N, rtol=1e-4)


def test_define_override_really_rebuilds():
    p16 = compile_src(TILED)
    p8 = compile_src(TILED, TILE_WIDTH=8)
    assert p16.static_shared_bytes == 2 * 16 * 16 * 4
    assert p8.static_shared_bytes == 2 * 8 * 8 * 4
    assert str(p8.defines["TILE_WIDTH"]) == "8"


def test_seed_elementwise_example():
    program = compile_src(ELEMENTWISE)
    a = np.array([[2, 3, 1], [4, 5, 7]], np.int32)
    b = np.array([[1, 8, 5], [4, 2, 7], [9, 6, 3]], np.int32)
    c = np.zeros((2, 3), np.int32)
    r = simulate(program, 1, (3, 2), [a, b, c, 3])
    assert c.tolist() == [[23, 28, 34], [87, 84, 76]]
    assert r.counts.flops == 0 and r.counts.int_ops > 0        # integer matmul: no flops


@pytest.mark.parametrize("src,W,block", [(TILED, 128, (16, 16)), (NAIVE, 72, (16, 16))], ids=["tiled", "naive"])
def test_sampled_block_ids_equal_exact_counts_restricted(src, W, block):
    program = compile_src(src)
    grid = ((W + 15) // 16, (W + 15) // 16)
    rng = np.random.default_rng(0)
    M = rng.random((W, W), dtype=np.float32)
    N = rng.random((W, W), dtype=np.float32)
    exact = simulate(program, grid, block, [M, N, np.zeros((W, W), np.float32), W])
    ids = np.array([0, 5, grid[0] * grid[1] - 1, 7])
    sampled = simulate(program, grid, block, [M, N, np.zeros((W, W), np.float32), W], block_ids=ids)
    assert sampled.blocks_simulated == 4 and sampled.total_blocks == grid[0] * grid[1]
    pos = {int(b): i for i, b in enumerate(exact.block_ids)}
    for metric, values in sampled.per_block.items():
        assert values.tolist() == [int(exact.per_block[metric][pos[int(b)]]) for b in ids], metric
    # each block in its own one-block run gives the same totals as its share of the batch
    one = [simulate(program, grid, block, [M, N, np.zeros((W, W), np.float32), W], block_ids=[b]) for b in ids]
    for key in ("flops", "int_ops"):
        assert getattr(sampled.counts, key) == sum(getattr(o.counts, key) for o in one)
    for key in ("loads", "load_requests", "load_sectors", "stores", "store_sectors"):
        assert sampled.counts.global_[key] == sum(o.counts.global_[key] for o in one)
    assert sampled.counts.shared == {k: sum(o.counts.shared[k] for o in one) for k in sampled.counts.shared}


def test_batching_does_not_change_counts():
    program = compile_src(NAIVE)
    W = 40
    M = np.ones((W, W), np.float32)
    args = lambda: [M, M, np.zeros((W, W), np.float32), W]  # noqa: E731
    a = simulate(program, (3, 3), (16, 16), args())
    b = simulate(program, (3, 3), (16, 16), args(), max_lanes=256)
    assert a.counts.to_json() == b.counts.to_json()
    for k in a.per_block:
        assert a.per_block[k].tolist() == b.per_block[k].tolist()


def test_idle_threads_and_divergence_of_partial_blocks():
    program = compile_src(r"""
    __global__ void pictureKernel(float* d_Pin, float* d_Pout, int n, int m)
    {
        int Row = blockIdx.y*blockDim.y + threadIdx.y;
        int Col = blockIdx.x*blockDim.x + threadIdx.x;
        if ((Row < m) && (Col < n))
        {
            d_Pout[Row*n+Col] = 2*d_Pin[Row*n+Col];
        }
    }""")
    n, m = 76, 62
    pin = np.random.default_rng(0).random(n * m, dtype=np.float32)
    pout = np.zeros(n * m, np.float32)
    r = simulate(program, (5, 4), (16, 16), [pin, pout, n, m])
    assert np.array_equal(pout, 2 * pin)
    assert r.counts.idle_threads == 80 * 64 - 76 * 62
    assert r.counts.threads == 80 * 64
    idle = r.per_block["idle_threads"].reshape(4, 5)
    assert idle[:3, :4].sum() == 0 and idle[3, 4] == 16 * 16 - 12 * 14
    # A warp is two 16-thread rows. In the right-hand column of blocks (Col 64..79, 12 valid) every warp with a
    # valid row splits on Col < n: 8 warps in each of the top three blocks, 7 in the corner block, whose last warp
    # (rows 62, 63) is entirely out. In the bottom row of blocks a warp is entirely in or entirely out: no split.
    assert r.counts.divergent_branches == 8 * 3 + 7


def test_threads_that_only_compute_in_a_loop_are_not_idle():
    """A search where only the finder stores (HeCBench md5hash: each thread hashes ten keys, one writes): its
    threads did integer work in a loop, no flop and no memory access, and were all reported idle ("bounds-check
    losers"), and their blocks left out of the model as doing nothing. Integer work in a loop counts as work; a
    thread that only computes its index and fails a bounds check still does not."""
    program = compile_src(r"""
    __global__ void search(unsigned *out, unsigned target, int iters, int n)
    {
        unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        unsigned x = i;
        for (int k = 0; k < iters; k++) x = x * 1664525u + 1013904223u;
        if (x == target) out[0] = i;
    }""")
    out = np.zeros(1, np.uint32)
    r = simulate(program, 4, 64, [out, 12345, 50, 200])
    assert r.counts.idle_threads == 256 - 200          # only the 56 threads past n
    assert r.per_block["idle_threads"].tolist() == [0, 0, 0, 56]


def test_a_reused_shared_address_is_counted_under_each_mask_and_reads_current_data():
    """One shared load in a loop, its lane-only address computed once before the loop: the executor reuses the
    address's bounds check and bank analysis while the address and the mask are the same objects
    (perfmodel/sim/memory.py ``_shared``). Each iteration has a new mask, so the counts must follow it: the 32 lanes
    of a warp all read bank 0 (``s[t * 32]``), one wavefront per active lane, and iteration ``it`` has ``32 >> it``
    of them active: 32 + 16 + 8 + 4 + 2 + 1 = 63 wavefronts and loads (hand-derived). The second loop rereads the
    same addresses after stores changed them: the values are read again, not reused."""
    program = compile_src(r"""
    __global__ void k(float *out, int n) {
        __shared__ float s[32 * 32];
        int t = threadIdx.x;
        for (int j = t; j < 32 * 32; j += 32) s[j] = j;
        __syncthreads();
        float acc = 0.0f;
        for (int it = 0; it < n; ++it) {
            if (t < (32 >> it)) acc += s[t * 32];
        }
        float again = 0.0f;
        for (int it = 0; it < n; ++it) {
            again += s[t * 32];
            __syncthreads();
            s[t * 32] += 1.0f;
            __syncthreads();
        }
        out[t] = acc;
        out[32 + t] = again;
    }""")
    out = np.zeros(64, np.float32)
    r = simulate(program, 1, 32, [out, 6])
    t = np.arange(32)
    active = np.array([sum(1 for it in range(6) if i < (32 >> it)) for i in t])
    np.testing.assert_array_equal(out[:32], active * t * 32)
    # the second loop reads 32t, 32t + 1, ..., 32t + 5
    np.testing.assert_array_equal(out[32:], 6 * t * 32 + 15)
    per_line = {line: v["shared_wavefronts"] for line, v in r.lines.items() if v["shared_loads"]}
    assert sorted(per_line.values())[0] == 63, per_line
