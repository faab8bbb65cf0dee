"""Tensor-core wmma (perfmodel/sim/tensor.py): results against numpy for every operand type and layout, counts by
hand, the errors a warp-wide instruction can give, cvt to tf32 bit by bit, and the model's tensor-core bound."""
from pathlib import Path

import numpy as np
import pytest

from perfmodel.errors import SimulationError
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

SRC = Path(__file__).parent / "data" / "wmma_kernels.cu"
WARPS = 4                   # every launch: 2 blocks of 64 threads


def _run(entry, args, **kw):
    return simulate(load_kernel(SRC, entry=entry), (2, 1, 1), (64, 1, 1), args, **kw)


def _tiles(x, rows, cols, col_major):
    """Warp w's rows x cols matrix: tile w of the buffer, stored row- or column-major."""
    x = np.asarray(x).reshape(WARPS, -1)[:, :rows * cols]
    return x.reshape(WARPS, cols, rows).transpose(0, 2, 1) if col_major else x.reshape(WARPS, rows, cols)


def _bf16(x):
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _bf16_value(u):
    return (u.astype(np.uint32) << 16).view(np.float32)


def _small(rng, n, dtype):
    return rng.integers(-3, 4, n).astype(dtype)


# entry -> (M, N, K, A col-major?, B col-major?, C col-major?, operand maker, C maker, tolerance)
CASES = {
    "h_rr": (16, 16, 16, False, False, False, lambda r, n: _small(r, n, np.float16),
             lambda r, n: r.uniform(-1, 1, n).astype(np.float32), 1e-5),
    "h_cc_colc": (16, 16, 16, True, True, True, lambda r, n: _small(r, n, np.float16),
                  lambda r, n: r.uniform(-1, 1, n).astype(np.float32), 1e-5),
    "h32_rc": (32, 8, 16, False, True, False, lambda r, n: _small(r, n, np.float16),
               lambda r, n: _small(r, n, np.float16), 0),
    "bf_cr": (8, 32, 16, True, False, True, lambda r, n: _bf16(_small(r, n, np.float32)),
              lambda r, n: r.uniform(-1, 1, n).astype(np.float32), 1e-5),
    "s8_rc": (16, 16, 16, False, True, False, lambda r, n: r.integers(-128, 128, n).astype(np.int8),
              lambda r, n: r.integers(-1000, 1000, n).astype(np.int32), 0),
    "u8_rr": (32, 8, 16, False, False, False, lambda r, n: r.integers(0, 256, n).astype(np.uint8),
              lambda r, n: r.integers(-1000, 1000, n).astype(np.int32), 0),
    "f64_rc": (8, 8, 4, False, True, True, lambda r, n: r.uniform(-1, 1, n),
               lambda r, n: r.uniform(-1, 1, n), 1e-14),
}


@pytest.mark.parametrize("entry", sorted(CASES))
def test_wmma_results_against_numpy(entry):
    m, n, k, a_col, b_col, c_col, make, make_c, tol = CASES[entry]
    rng = np.random.default_rng(7)
    a, b, c = make(rng, WARPS * m * k), make(rng, WARPS * k * n), make_c(rng, WARPS * m * n)
    value = _bf16_value if entry.startswith("bf") else (lambda x: x)
    ref = (_tiles(value(a), m, k, a_col).astype(np.float64) @ _tiles(value(b), k, n, b_col).astype(np.float64)
           + 2 * _tiles(c, m, n, c_col).astype(np.float64))
    out = c.copy()
    _run(entry, [a, b, out])
    got = _tiles(out, m, n, c_col).astype(np.float64)
    assert np.max(np.abs(got - ref)) <= tol * max(1.0, np.max(np.abs(ref)))


def test_wmma_tf32_operands_are_rounded_by_cvt_rna():
    """__float_to_tf32 (cvt.rna.tf32.f32) keeps 10 mantissa bits, ties away from zero; the mma uses those."""
    rng = np.random.default_rng(3)
    a, b = rng.uniform(-1, 1, WARPS * 128).astype(np.float32), rng.uniform(-1, 1, WARPS * 128).astype(np.float32)
    c = np.zeros(WARPS * 256, np.float32)

    def tf32(x):
        u = x.view(np.uint32).astype(np.uint64)
        return ((u + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)

    _run("tf32_rr", [a, b, c])
    ref = _tiles(tf32(a), 16, 8, False).astype(np.float64) @ _tiles(tf32(b), 8, 16, False) + 0.5
    assert np.max(np.abs(_tiles(c, 16, 16, False) - ref)) < 1e-5
    # the unrounded operands give a different product: the rounding is what the test sees
    raw = _tiles(a, 16, 8, False).astype(np.float64) @ _tiles(b, 8, 16, False) + 0.5
    assert np.max(np.abs(_tiles(c, 16, 16, False) - raw)) > 1e-4


def test_cvt_to_tf32_bit_patterns():
    from perfmodel.sim.moves import to_tf32

    one_and_half_ulp = np.array([0x3F801000], np.uint32).view(np.float32)     # 1 + 2^-11: a tie at 10 bits
    assert to_tf32(one_and_half_ulp, "rna")[0] == 0x3F802000                   # away from zero: 1 + 2^-10
    assert to_tf32(one_and_half_ulp, "rn")[0] == 0x3F800000                    # to even: 1
    assert to_tf32(one_and_half_ulp, "rz")[0] == 0x3F800000
    neg = np.array([0xBF801000], np.uint32).view(np.float32)
    assert to_tf32(neg, "rna")[0] == 0xBF802000
    assert to_tf32(neg, "rna", relu=True)[0] == 0
    above_half = np.array([0x3F801001], np.uint32).view(np.float32)
    assert to_tf32(above_half, "rn")[0] == 0x3F802000
    largest = np.array([0x7F7FFFFF], np.uint32).view(np.float32)              # rounds past the largest tf32
    assert to_tf32(largest, "rna")[0] == 0x7F800000
    assert to_tf32(largest, "rna", satfinite=True)[0] == 0x7F7FE000
    assert to_tf32(np.array([np.nan], np.float32), "rna")[0] == 0x7FFFFFFF


def test_wmma_counts_by_hand():
    """h_rr, 4 warps, each: load A and B (16 x 16 f16, leading dimension 16: one 512-byte run, moved in 8-byte
    pieces, the warp's piece c the 256 bytes at 256 c; the fragment holds its elements twice: 4 requests of 8
    sectors each), load C (16 x 16 f32, 1 KB: 4 requests of 8 sectors), one mma (2 x 16 x 16 x 16 flops), 8
    element-wise f32 multiplies per thread, store D (as C)."""
    rng = np.random.default_rng(1)
    a, b = _small(rng, WARPS * 256, np.float16), _small(rng, WARPS * 256, np.float16)
    c = rng.uniform(-1, 1, WARPS * 256).astype(np.float32)
    counts = _run("h_rr", [a, b, c]).counts
    assert counts.tensor == {"mma": WARPS, "flops": {"f16": WARPS * 8192}}
    assert counts.flops == WARPS * 8192 + 128 * 8
    g = counts.global_
    assert (g["load_requests"], g["load_sectors"]) == (WARPS * (4 + 4 + 4), WARPS * (32 + 32 + 32))
    assert (g["store_requests"], g["store_sectors"]) == (WARPS * 4, WARPS * 32)
    assert counts.ptx_classes.get("tensor") == WARPS


KERNEL = r"""
#include <mma.h>
using namespace nvcuda;
__global__ void k(const half *a, const half *b, float *c, int kdim, int split) {
    if (threadIdx.x >= split) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int i = 0; i < kdim; i += 16) {
        wmma::load_matrix_sync(fa, a + i, kdim);
        wmma::load_matrix_sync(fb, b + i, kdim);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + blockIdx.x * 256, acc, 16, wmma::mem_row_major);
}
"""


def _loop_args(kdim):
    rng = np.random.default_rng(5)
    return [_small(rng, 16 * kdim, np.float16), _small(rng, 16 * kdim, np.float16), np.zeros(4 * 256, np.float32),
            kdim, 32]


def test_wmma_loop_against_numpy_and_fast_loops_count_the_same():
    program = load_kernel(source=KERNEL, entry="k")
    kdim = 2048                         # 128 iterations: a loop long enough for fast_loops (sim/loops.py) to skip
    args = _loop_args(kdim)
    exact = simulate(program, (4, 1, 1), (32, 1, 1), args)
    ref = args[0].reshape(16, kdim).astype(np.float64) @ args[1].reshape(16, kdim).astype(np.float64).T
    for blk in range(4):
        assert np.array_equal(args[2][blk * 256:(blk + 1) * 256].reshape(16, 16), ref)
    fast = simulate(program, (4, 1, 1), (32, 1, 1), _loop_args(kdim), fast_loops=True)
    assert fast.counts.to_json() == exact.counts.to_json()
    assert exact.counts.tensor["mma"] == 4 * kdim // 16


def test_wmma_by_part_of_a_warp_is_an_error():
    program = load_kernel(source=KERNEL, entry="k")
    args = _loop_args(64)
    args[-1] = 16                       # threads 16..31 return before the wmma
    with pytest.raises(SimulationError, match="warp-wide instruction"):
        simulate(program, (1, 1, 1), (32, 1, 1), args)


def test_wmma_pointer_must_be_the_warps_own():
    src = KERNEL.replace("a + i, kdim", "a + i + threadIdx.x % 2, kdim")
    program = load_kernel(source=src, entry="k")
    with pytest.raises(SimulationError, match="same in every thread of the warp"):
        simulate(program, (1, 1, 1), (32, 1, 1), _loop_args(64))


def test_tensor_bound_by_hand():
    """2^31 f16 flops on an H100: the measured 2,728 flops per clock per SM (devices/h100.yaml), 132 SMs at
    1.98 GHz -> 2^31 / (2728 x 132 x 1.98e9) s; a device with no measured rate leaves the work unbounded."""
    from perfmodel.devices import load_device
    from perfmodel.model.bottleneck import device_rates, tensor_time

    rates = device_rates(load_device("h100"))
    t, missing = tensor_time({"f16": 2 ** 31}, rates)
    assert t == pytest.approx(2 ** 31 / (2728 * 132 * 1.98e9), rel=1e-12)
    assert missing == []
    t2, _ = tensor_time({"f16": 2 ** 31, "tf32": 2 ** 30}, rates, active_sms=66)
    assert t2 == pytest.approx(2 * (2 ** 31 / 2728 + 2 ** 30 / 1023) / (132 * 1.98e9), rel=1e-12)
    assert tensor_time({"f16": 1.0}, device_rates(load_device("a100")))[1] == ["f16"]


# ncu on an H100 (validation/raw/h100_tensor_cases.json, validation/measure.py --set tensor, 2026-11-27): the
# vendored cuda-samples cudaTensorCoreGemm at 256^3 (M_TILES = N_TILES = K_TILES = 16)
NCU_256 = {
    "cudaTensorCoreGemm_simple_wmma_gemm": {"load_requests": 33792, "load_sectors": 270336, "store_requests": 1024,
                                            "store_sectors": 8192},
    "cudaTensorCoreGemm_compute_gemm": {"load_requests": 1536, "load_sectors": 24576, "store_requests": 512,
                                        "store_sectors": 8192},
}


@pytest.fixture(scope="module")
def vendored_specs(tmp_path_factory):
    import sys

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "bench"))
    try:
        from corpus_run import resolve_specs
    finally:
        sys.path.remove(str(root / "bench"))
    out = tmp_path_factory.mktemp("tensor_specs")
    return {p.stem: p for p in resolve_specs(root / "validation" / "kernels" / "cuda-samples", out)}


@pytest.mark.parametrize("kernel", sorted(NCU_256))
def test_cuda_samples_tensor_gemm_global_traffic_matches_ncu(kernel, vendored_specs):
    """Every global request and sector of both kernels as ncu counted them, and D right (the sample's check)."""
    from perfmodel.analysis import simulate_launch

    from perfmodel.spec import load_spec

    _, sim = simulate_launch(load_spec(str(vendored_specs[kernel])), {"M_TILES": 16, "N_TILES": 16, "K_TILES": 16},
                             sample=0)
    g = sim.counts["global"]
    assert {k: g[k] for k in NCU_256[kernel]} == NCU_256[kernel]
    assert sim.correct is True, sim.correct_detail


def test_seed_roof_of_a_tensor_kernel_is_its_mix_peak():
    """h_rr on an H100: 4 x 8192 f16 tensor flops at 2,728 per clock per SM and 1,024 FP32 multiplies at the FP32
    peak (66.9 TFLOPS): the roof is all the flops over the time each share needs at its peak."""
    from perfmodel.analysis import compute_peak_flops
    from perfmodel.devices import load_device
    from perfmodel.model.bottleneck import device_rates

    dev = load_device("h100")
    counts = {"flops": 4 * 8192 + 1024, "tensor": {"mma": 4, "flops": {"f16": 4 * 8192}}}
    seconds = 1024 / dev.peak_fp32_flops + 4 * 8192 / (2728 * 132 * 1.98e9)
    peak, basis = compute_peak_flops(counts, dev, device_rates(dev))
    assert peak == pytest.approx((4 * 8192 + 1024) / seconds) and basis == "mix of FP32 and tensor-core"
    assert compute_peak_flops({"flops": 10}, dev, device_rates(dev)) == (dev.peak_fp32_flops, "FP32")
    a100 = load_device("a100")          # no measured wmma rate: the FP32 roof, as the slides' model has it
    assert compute_peak_flops(counts, a100, device_rates(a100)) == (a100.peak_fp32_flops, "FP32")
