"""Counts of every shipped kernel against closed forms derived by hand from the source.

Notation: r = Mask_Width // 2 (the halo width n of the slides), B = block size, nb = number of blocks.
Thread-level counts (``loads``, ``stores``) count one per active thread per executed access.
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from perfmodel.spec import run

ROOT = Path(__file__).resolve().parents[1]


@cache
def counts_of(name: str, **params):
    outcome = run(name, params)
    assert outcome.check.correct, outcome.check.message
    return outcome, outcome.result.counts.to_json()


def site_loads(outcome, array: str) -> int:
    """Thread-level global loads of one array, summed over the load instructions that touched it."""
    return sum(row["arrays"].get(array, 0) for row in outcome.result.instructions
               if row["kind"] in ("global ld", "global ldu", "generic ld"))


# ---------------------------------------------------------------------------------------------------- matmul

@pytest.mark.parametrize("name", ["matmul_rowwise", "matmul_colwise", "matmul_elementwise"])
def test_small_int_matmuls(name):
    ha, wa, wb = 5, 7, 4
    outcome, counts = counts_of(name, ha=ha, wa=wa, wb=wb)
    # every one of the ha*wb inner products reads wa elements of a and wa of b, and stores one c element
    assert counts["global"]["loads"] == 2 * ha * wa * wb
    assert counts["global"]["stores"] == ha * wb
    assert counts["flops"] == 0            # int kernels: the multiply-adds are integer ops
    assert counts["int_ops"] >= 2 * ha * wa * wb
    assert counts["blocks"] == 1


def test_matmul_elementwise_thread_shape():
    _, counts = counts_of("matmul_elementwise", ha=5, wa=7, wb=4)
    assert counts["threads"] == 5 * 4      # one thread per element of c, one block


def test_matmul_naive_closed_form():
    width, block = 40, 16                  # 40 is not a multiple of 16: the bounds check idles threads
    outcome, counts = counts_of("matmul_naive", Width=width, BLOCK_WIDTH=block)
    assert counts["flops"] == 2 * width ** 3
    assert counts["global"]["loads"] == 2 * width ** 3
    assert counts["global"]["stores"] == width ** 2
    threads = (3 * block) ** 2             # cdiv(40, 16) = 3 blocks per dimension
    assert counts["threads"] == threads
    assert counts["idle_threads"] == threads - width ** 2
    # the seed's CGMA: one mul + one add per two global loads
    assert counts["flops"] / counts["global"]["loads"] == 1.0


@pytest.mark.parametrize(("width", "tile"), [(32, 16), (64, 16), (48, 8)])
def test_matmul_tiled_closed_form(width, tile):
    outcome, counts = counts_of("matmul_tiled", Width=width, TILE_WIDTH=tile)
    phases = width // tile
    assert counts["global"]["loads"] == 2 * width ** 2 * phases
    assert counts["flops"] == 2 * width ** 3
    assert counts["global"]["stores"] == width ** 2
    assert counts["shared"]["stores"] == 2 * width ** 2 * phases
    assert counts["shared"]["loads"] == 2 * width ** 3
    assert counts["barriers"] == 2 * phases * (width // tile) ** 2   # two __syncthreads per phase per block
    # the seed's figures per block and phase at T=16: 2*16*16 = 512 loads, 2*16^3 = 8192 mul/add
    blocks = (width // tile) ** 2
    if tile == 16:
        assert counts["global"]["loads"] / blocks / phases == 512
        assert counts["flops"] / blocks / phases == 8192
    # CGMA = T: tiling by T cuts global loads by T compared with the naive kernel
    assert counts["flops"] / counts["global"]["loads"] == tile


# ---------------------------------------------------------------------------------------------- vec, picture

def test_vec_add_closed_form():
    n, block = 1000, 128
    _, counts = counts_of("vec_add", N=n, BLOCK_SIZE=block)
    assert counts["global"]["loads"] == 2 * n
    assert counts["global"]["stores"] == n
    assert counts["flops"] == n
    assert counts["idle_threads"] == 8 * block - n          # cdiv(1000, 128) = 8 blocks
    # coalesced float accesses: 4 sectors per full warp request
    assert counts["global"]["store_sectors"] == n * 4 // 32


def test_picture_scale_seed_case():
    """The slides' 76x62 picture with 16x16 blocks: 5x4 = 20 blocks, 80x64 threads, 80*64 - 76*62 idle."""
    outcome, counts = counts_of("picture_scale")
    assert outcome.launch.grid == (5, 4, 1) and outcome.launch.block == (16, 16, 1)
    assert counts["blocks"] == 20
    assert counts["threads"] == 80 * 64
    assert counts["idle_threads"] == 80 * 64 - 76 * 62 == 408
    assert counts["global"]["loads"] == counts["global"]["stores"] == counts["flops"] == 76 * 62
    # the slides' four areas: 12 blocks fully in range, 3 blocks cut in x (upper right), 4 cut in y (lower
    # left), 1 cut in both (lower right corner)
    idle = outcome.result.per_block["idle_threads"].reshape(4, 5)   # linear block id = y * 5 + x
    assert (idle == 0).sum() == 12
    assert idle[:3, 4].tolist() == [(80 - 76) * 16] * 3               # 4 idle columns x 16 rows
    assert idle[3, :4].tolist() == [(64 - 62) * 16] * 4               # 2 idle rows x 16 columns
    assert idle[3, 4] == 256 - (76 - 64) * (62 - 48)                  # 12 x 14 pixels in the corner block


# ----------------------------------------------------------------------------------------------- 1D convolution

WIDTH, BLOCK, MASK = 256, 32, 5
RADIUS = MASK // 2
NB = WIDTH // BLOCK


def _conv(name, **extra):
    mask_param = "MASK_WIDTH" if name == "conv1d_tiled_alt" else "Mask_Width"
    return counts_of(name, Width=WIDTH, BLOCK_SIZE=BLOCK, **{mask_param: MASK}, **extra)


def test_conv1d_basic_closed_form():
    # each output reads the Mask_Width inputs that exist: W*MW minus the r(r+1) ghost reads at the two ends;
    # the mask M is a global pointer, read once per N read
    outcome, counts = _conv("conv1d_basic")
    reads = WIDTH * MASK - RADIUS * (RADIUS + 1)
    assert site_loads(outcome, "N") == reads
    assert site_loads(outcome, "M") == reads
    assert counts["global"]["loads"] == 2 * reads
    assert counts["flops"] == 2 * reads
    assert counts["global"]["stores"] == WIDTH


def test_conv1d_constant_closed_form():
    # the mask moves to __constant__ memory: half the global loads; every warp reads the same M[j]
    # (a broadcast), so each constant request is one wavefront
    _, counts = _conv("conv1d_constant")
    reads = WIDTH * MASK - RADIUS * (RADIUS + 1)
    assert counts["global"]["loads"] == reads
    assert counts["constant"]["loads"] == reads
    assert counts["constant"]["load_wavefronts"] == counts["constant"]["load_requests"]


def test_conv1d_tiled_halo_loads():
    """Strategy 1: each interior block loads its core (B) plus the 2n halo elements; the end blocks skip the
    ghost halo (n = Mask_Width / 2)."""
    outcome, counts = _conv("conv1d_tiled")
    per_block = outcome.result.per_block["global_loads"]
    assert per_block[1:-1].tolist() == [BLOCK + 2 * RADIUS] * (NB - 2)      # halo loads 2n per interior block
    assert per_block[0] == per_block[-1] == BLOCK + RADIUS
    assert counts["global"]["loads"] == WIDTH + 2 * RADIUS * (NB - 1)
    assert counts["shared"]["stores"] == NB * (BLOCK + 2 * RADIUS)          # ghosts are stored as 0
    assert counts["barriers"] == NB


def test_conv1d_tiled_alt_loads():
    """Alternative strategy 1: step 1 loads B elements starting at i - n, step 2 the next 2n: the same
    B + 2n per interior block as strategy 1."""
    outcome, counts = _conv("conv1d_tiled_alt")
    per_block = outcome.result.per_block["global_loads"]
    assert per_block[1:-1].tolist() == [BLOCK + 2 * RADIUS] * (NB - 2)
    assert counts["global"]["loads"] == WIDTH + 2 * RADIUS * (NB - 1)


def test_conv1d_tiled_cache_loads():
    """Strategy 3: the core (B) from shared memory, and each halo element read from global memory once per
    thread that needs it: 1 + 2 + ... + n on each side = n(n+1) per interior block."""
    outcome, counts = _conv("conv1d_tiled_cache")
    per_block = outcome.result.per_block["global_loads"]
    assert per_block[1:-1].tolist() == [BLOCK + RADIUS * (RADIUS + 1)] * (NB - 2)
    assert per_block[0] == per_block[-1] == BLOCK + RADIUS * (RADIUS + 1) // 2
    assert counts["global"]["loads"] == WIDTH + RADIUS * (RADIUS + 1) * (NB - 1)


def test_conv1d_tiling_strategies_global_traffic_ordering():
    """ECE408/CS483 Spring 2023 lecture 8 ("Tiled Convolution") on the three 1D tiling strategies:

    - loading the halo into shared memory (strategy 1 and its alternative) "coalesce[s] global memory accesses":
      every input element is read from global memory once per block that needs it, in full-warp requests;
    - reading the halo from global memory (strategy 3) "optimize[s] reuse of shared memory" (less shared memory)
      but costs "branch divergence" and a halo "too narrow to fill a memory burst": more, narrower global
      requests, which only the cache absorbs;
    - all three cut global traffic far below the untiled kernel (each input read Mask_Width times).

    So, in thread-level loads and in warp requests: tiled = tiled_alt < tiled_cache < basic; shared memory:
    tiled_cache < tiled; divergence during the computation: tiled_cache > tiled; and the compulsory (distinct
    sector) traffic is the same for the three tiled kernels - the cache turns strategy 3's extra requests into
    hits."""
    runs = {name: _conv(name) for name in ("conv1d_tiled", "conv1d_tiled_alt", "conv1d_tiled_cache", "conv1d_basic")}
    counts = {name: c for name, (_, c) in runs.items()}
    loads = {name: c["global"]["loads"] for name, c in counts.items()}
    requests = {name: c["global"]["load_requests"] for name, c in counts.items()}
    unique = {name: c["global"]["unique_load_sectors"] for name, c in counts.items()}

    assert loads["conv1d_tiled"] == loads["conv1d_tiled_alt"] < loads["conv1d_tiled_cache"] < loads["conv1d_basic"]
    assert max(requests["conv1d_tiled"], requests["conv1d_tiled_alt"]) < requests["conv1d_tiled_cache"] \
        < requests["conv1d_basic"]
    assert unique["conv1d_tiled"] == unique["conv1d_tiled_alt"] == unique["conv1d_tiled_cache"] \
        == WIDTH * 4 // 32
    # strategy 3's halo requests are narrow: fewer threads per request than the coalesced loads of strategy 1
    assert loads["conv1d_tiled_cache"] / requests["conv1d_tiled_cache"] \
        < loads["conv1d_tiled"] / requests["conv1d_tiled"]
    smem = {name: outcome.program.static_shared_bytes for name, (outcome, _) in runs.items()}
    assert smem["conv1d_tiled_cache"] < smem["conv1d_tiled"]
    assert counts["conv1d_tiled_cache"]["divergent_branches"] > counts["conv1d_tiled"]["divergent_branches"]


# ----------------------------------------------------------------------------------------------- 2D convolution

def test_conv2d_tiled_closed_form():
    """Strategy 2: blocks of (T + MW - 1)^2 threads load the input tile (ghost cells outside the image load
    nothing), then only T^2 threads compute MW^2 multiply-adds each."""
    width, tile, mask = 36, 12, 5
    radius, k = mask // 2, 36 // 12
    outcome, counts = counts_of("conv2d_tiled", Width=width, TILE_WIDTH=tile, MASK_WIDTH=mask)
    side = tile + mask - 1
    assert outcome.launch.block == (side, side, 1)
    # per dimension, block b reads input rows b*T - r .. b*T + T + r - 1 clipped to the image: k(T + 2r) - 2r
    assert counts["global"]["loads"] == (k * (tile + 2 * radius) - 2 * radius) ** 2
    assert counts["shared"]["stores"] == k * k * side * side
    assert counts["flops"] == 2 * mask * mask * width * width
    assert counts["shared"]["loads"] == counts["constant"]["loads"] == mask * mask * width * width
    assert counts["global"]["stores"] == width * width
    # the threads of the input tile's rim idle during the computation: 144 of 256 threads compute
    per_block_flops = outcome.result.per_block["flops"]
    assert per_block_flops.tolist() == [2 * mask * mask * tile * tile] * (k * k)
    assert counts["simt_efficiency"] < 1.0


# ------------------------------------------------------------------------------------------------------- SpMV

@pytest.mark.parametrize("params", [
    {},                                                                        # the seed's 4x4 example
    {"matrix": 1, "num_rows": 100, "num_cols": 80, "seed": 3},                 # random row lengths
    {"matrix": 2, "num_rows": 70, "half_bandwidth": 3},                        # banded
])
def test_spmv_csr_loads(params):
    """Per row: row_ptr[row] and row_ptr[row+1] (2 * num_rows); per nonzero: data[elem] and x[col_index[elem]]
    (the issue's 2 * nnz) plus the index load col_index[elem] (nnz more)."""
    outcome, counts = counts_of("spmv_csr", **params)
    num_rows = outcome.launch.params["num_rows"]
    row_ptr = outcome.launch.arg("row_ptr").value
    nnz = int(row_ptr[-1])
    assert site_loads(outcome, "data") + site_loads(outcome, "x") + site_loads(outcome, "row_ptr") \
        == 2 * nnz + 2 * num_rows
    assert site_loads(outcome, "col_index") == nnz
    assert counts["global"]["loads"] == 3 * nnz + 2 * num_rows
    assert counts["flops"] == 2 * nnz
    assert counts["global"]["stores"] == num_rows
    threads = outcome.launch.total_threads
    assert counts["idle_threads"] == threads - num_rows


def test_spmv_csr_seed_example_counts():
    outcome, counts = counts_of("spmv_csr")
    assert outcome.launch.arg("row_ptr").value.tolist() == [0, 2, 2, 5, 7]
    assert counts["global"]["loads"] == 3 * 7 + 2 * 4
    assert counts["flops"] == 14


def test_spmv_csr_divergence_from_data_dependent_trip_counts():
    """Row lengths differ within a warp, so the loop's exit branch splits warps; a banded matrix (equal lengths
    inside) diverges only at its edges and at the bounds check."""
    _, random_counts = counts_of("spmv_csr", matrix=1, num_rows=100, num_cols=80, seed=3)
    _, banded_counts = counts_of("spmv_csr", matrix=2, num_rows=70, half_bandwidth=3)
    assert random_counts["divergent_branches"] > banded_counts["divergent_branches"] > 0
    assert random_counts["simt_efficiency"] < banded_counts["simt_efficiency"]


def test_spmv_random_generator_is_reproducible():
    a = run("spmv_csr", {"matrix": 1, "num_rows": 50, "seed": 7}).launch
    b = run("spmv_csr", {"matrix": 1, "num_rows": 50, "seed": 7}).launch
    c = run("spmv_csr", {"matrix": 1, "num_rows": 50, "seed": 8}).launch
    assert np.array_equal(a.arg("col_index").value, b.arg("col_index").value)
    assert not np.array_equal(a.arg("row_ptr").value, c.arg("row_ptr").value)


CONSTANT_SUM = """__constant__ int cdata[1024];
__global__ void sum_v4(int *out)
{
    const int4 *p = (const int4 *)cdata;
    int4 s = make_int4(0, 0, 0, 0);
    for (int i = 0; i < 4; i++) {
#pragma unroll 128
        for (int j = 0; j < 256; j += 4) {
            int4 v = p[j + i];
            s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
        }
    }
    if (threadIdx.x == 0 && blockIdx.x == 0) *out = s.x + s.y + s.z + s.w;
}
"""


def test_a_loop_of_constant_loads_that_ptxas_unrolls_completely():
    """gpumembench's constant benchmark: a PTX loop of 4 iterations over 64 int4 constant loads, which ptxas unrolls
    completely into straight-line ULDC.64 / UIADD3 - filed under the line that adds, not the line that loads, so
    the weights saw no copies and counted each iteration at the whole unrolled body's cost (4,094 warp instructions
    against about 1,040). The cubin is straight-line: one warp executes its static instruction count (nvdisasm's
    listing), to within the few that the final branch skips."""
    from perfmodel.compile import compile_cuda
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    static = compile_cuda("const_sum.cu", source=CONSTANT_SUM).sass_instruction_count("sum_v4")
    program = load_kernel(source=CONSTANT_SUM, path="const_sum.cu")
    data = np.arange(1024, dtype=np.int32)
    out = np.zeros(1, np.int32)
    r = simulate(program, 1, 32, [out], constants={"cdata": data})
    assert out[0] == data.sum()
    assert abs(r.counts.warp_instructions - static) <= 0.03 * static, (r.counts.warp_instructions, static)


def _ncu_subroutines():
    import csv

    with open(ROOT / "validation" / "subroutines_h200_ncu.csv") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("==PROF=="))
        return {r["Kernel Name"]: float(r["Metric Value"].replace(",", "")) for r in rows
                if r["Metric Name"] == "smsp__inst_executed.sum"}


def test_sass_subroutines_are_not_charged_to_the_last_line():
    """ptxas files a subroutine's instructions (the 64-bit integer division's __cuda_sm20_div_u64, pow()'s
    __internal_accurate_pow) under the kernel's closing brace, so the line ratios charged them to every thread's
    `ret`: darknet's upsample_kernel (size_t indices, / and %) counted 2.1x ncu's warp instructions, a pow() kernel
    1.83x (its .func's PTX is counted as well). validation/microbench/subroutines.cu under Nsight Compute on an H200
    (validation/subroutines_h200_ncu.csv), 2^20 threads each: 1,638,400 / 5,734,400 / 6,520,832; perfmodel had
    4,390,912 / 7,110,656 / 11,934,943 and now 2,129,920 / 7,110,656 / 6,298,855 (the division subroutine is
    charged to each div/rem.u64 that runs: none where the div.u32 fast path does). The small division stays 1.30x:
    ptxas files its fast path's 32-bit division under the line of the test, whose other PTX instructions all run."""
    import numpy as np

    from perfmodel.api import RawModule

    ncu = _ncu_subroutines()
    mod = RawModule(path=str(ROOT / "validation" / "microbench" / "subroutines.cu"))
    n, grid = 1 << 20, (4096,)
    x = np.random.default_rng(1).random(n // 1000 + 1, dtype=np.float32)
    small = mod.get_function("div64_small")(grid, (256,), (np.uint64(n), x, np.int32(1000), np.zeros(n, np.float32)),
                                           device="h100")
    large = mod.get_function("div64_large")(grid, (256,), (np.uint64(n), np.uint64(1000003), np.zeros(n, np.uint64)),
                                           device="h100")
    xd = np.random.default_rng(2).uniform(0.5, 2.0, n)
    power = mod.get_function("pow_double")(grid, (256,), (xd, np.zeros(n), np.int32(n)), device="h100")
    for name, result in (("div64_small", small), ("div64_large", large), ("pow_double", power)):
        ratio = result.counts["warp_instructions"] / ncu[name]
        assert 0.9 <= ratio <= 1.35, (name, result.counts["warp_instructions"], ncu[name])


def test_a_kept_math_helper_counts_on_its_call_line():
    """NVVM keeps pow(double, double)'s __internal_accurate_pow as a function whose .loc is the kernel's closing
    brace: the hottest-lines table put 84% of a pow kernel on `}` (chai's BS 60%). Its instructions now count on
    the line that calls it: of 8 warps' work, line 6 (the pow) holds all but the few instructions of the others."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("__global__ void k(const double *x, double *y, int n)\n{\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {\n        double v = x[i];\n"
           "        double r = pow(v, 3.5);\n        y[i] = r;\n    }\n}\n")
    r = simulate(load_kernel(source=src, path="pw.cu"), 2, 128, [np.linspace(0.5, 2, 256), np.zeros(256), 256])
    per_line = {k: v["warp_instructions"] for k, v in r.lines.items()}
    assert per_line[6] > 0.9 * sum(per_line.values())
    assert per_line[9] <= 8                       # the closing brace: each warp's ret
