"""The FP64 pipe (issue 13 item 5): double-precision operations at the SM's FP64 rate, and the issue count of a
loop ptxas unrolls further when it holds no memory instruction - against the H100 measurements of
validation/kernels/fp64_chain.cu (validation/h100_fidelity.json: CUDA-event times and Nsight Compute's
``smsp__inst_executed``) and hand-derived figures from NVIDIA's arithmetic-throughput table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfmodel.gpu.accuracy import _kernels_beside, case_id

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT / "validation" / "h100_fidelity.json"


@pytest.fixture(scope="module")
def measured():
    return {case_id(c): c for c in json.loads(DATASET.read_text())["cases"] if c["kernel"] == "fp64_fma_chain"}


def _analyze(case, device="h100"):
    from perfmodel.analysis import analyze

    with _kernels_beside(DATASET):
        return analyze(case["kernel"], device, case["overrides"], regs=case["function"]["num_regs"], check=False)


def test_fp64_bound_by_hand_and_against_the_h100(measured):
    """262,144 threads x 4 chains x 4,096 dependent DFMA = 4.295 G double operations. The H100 has 64 FP64 lanes
    per SM (NVIDIA's throughput table), 132 SMs at 1.98 GHz: 4.295e9 / (64 x 132 x 1.98e9) = 256.8 us, times the
    busiest SM's share of 1,024 blocks on 132 SMs (8 against 7.76: x 1.031) = 264.8 us. Measured: 269.1 us."""
    case = measured["fp64_fma_chain/n=262144,ITERS=4096,CHAINS=4"]
    a = _analyze(case)
    ops = 262144 * 4 * 4096
    assert a.sim.counts["fp64_ops"] >= ops
    assert a.model.bound == "fp64"
    hand = ops / (64 * 132 * 1.98e9) * (8 / (1024 / 132))
    assert a.model.resource("fp64").time_s == pytest.approx(hand, rel=0.01)
    assert a.model.predicted_time_s == pytest.approx(case["time_s"], rel=0.05)


def test_a_geforce_part_runs_doubles_at_one_64th(measured):
    """The RTX 4090's profile has 2 FP64 lanes per SM (1/64 of FP32, NVIDIA's throughput table for CC 8.9):
    the same kernel is FP64-bound there at 32x the H100's per-SM time."""
    from perfmodel.devices import load_device

    case = measured["fp64_fma_chain/n=262144,ITERS=4096,CHAINS=4"]
    a = _analyze(case, "rtx4090")
    dev = load_device("rtx4090")
    assert dev.fp64_lanes_per_sm == 2
    assert a.model.bound == "fp64"
    ops = a.sim.counts["fp64_ops"]
    busiest = -(-1024 // dev.sm_count) / (1024 / dev.sm_count)
    assert a.model.resource("fp64").time_s == pytest.approx(ops / (2 * dev.sm_count * dev.clock_hz) * busiest,
                                                            rel=1e-6)


def test_alu_only_loop_issue_count_equals_ncu(measured):
    """One DFMA chain per thread: ptxas unrolls the loop 4x beyond the PTX (16 DFMA per SASS iteration) and the
    loop has no memory instruction to show it; the double-precision arithmetic does. ncu: 34,111,488 warp
    instructions; before the FP64 marker the count was 4.0x that."""
    case = measured["fp64_fma_chain/n=262144,ITERS=4096,CHAINS=1"]
    a = _analyze(case)
    assert a.sim.counts["warp_instructions"] == pytest.approx(case["ncu"]["warp_instructions"], rel=0.02)
    assert a.model.predicted_time_s == pytest.approx(case["time_s"], rel=0.05)


# ---- the seed model's roof and operand of a double-precision kernel --------------------------------------------

_DOUBLE_POLY = r'''
extern "C" __global__ void poly(const double* x, double* y, const float* u, float* v, int n, int single_steps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double xv = x[i], a = 0.0;
        for (int k = 0; k < 256; ++k) a = a * xv + 1.0;      // 256 DFMA: 512 double flops
        y[i] = a;
        float b = u[i];
        for (int k = 0; k < single_steps; ++k) b = b * 0.5f + 1.0f;   // FFMA: 2 single flops each
        v[i] = b;
    }
}'''


def _poly(single_steps: int, **kw):
    import numpy as np

    from perfmodel.api import RawKernel

    n = 1 << 16
    rng = np.random.default_rng(3)
    x, u = rng.uniform(-0.9, 0.9, n), rng.uniform(-1, 1, n).astype(np.float32)
    y, v = np.zeros(n), np.zeros(n, np.float32)
    a = RawKernel(_DOUBLE_POLY, "poly")((n // 256,), (256,), (x, y, u, v, n, single_steps), device="h100", **kw)
    return a, n


def test_a_double_kernels_seed_roof_is_the_fp64_peak_and_its_operand_8_bytes():
    """Per thread 256 DFMA (512 double flops) over one 8-byte and one 4-byte load. The slides' roof for doubles:
    min(FP64 peak, CGMA x bandwidth / operand bytes) - the H100 profile's FP64 peak (33.5 TFLOPS, NVIDIA's
    datasheet figure for the SXM part) and 6 B the mean load (one double, one float)."""
    from perfmodel.devices import load_device

    dev = load_device("h100")
    a, n = _poly(0)
    assert a.counts["flops"] == a.counts["fp64_flops"] == n * 512
    seed = a.seed
    assert seed.peak_basis == "FP64"
    assert seed.peak_gflops == pytest.approx(33.5e3)
    assert seed.peak_gflops == pytest.approx(dev.peak_fp64_flops / 1e9)
    assert seed.operand_bytes == pytest.approx((8 + 4) / 2)
    assert seed.cgma == pytest.approx(512 / 2)
    assert seed.bandwidth_bound_gflops == pytest.approx(256 * 3352.0 / 6)
    assert seed.achievable_gflops == pytest.approx(33.5e3) and seed.bound == "compute peak"


def test_a_mixed_kernels_roof_is_its_flops_over_each_shares_time_at_its_peak():
    """64 FFMA (128 single flops) beside the 512 double flops per thread: the roof is the mix's harmonic peak,
    all flops over 128 / 66.9 TFLOPS + 512 / 33.5 TFLOPS per thread (the profile's peaks, NVIDIA's datasheet)."""
    from perfmodel.devices import load_device

    dev = load_device("h100")
    a, n = _poly(64)
    assert a.counts["fp64_flops"] == n * 512 and a.counts["flops"] == n * (512 + 128)
    hand = (512 + 128) / (128 / dev.peak_fp32_flops + 512 / dev.peak_fp64_flops) / 1e9
    assert a.seed.peak_gflops == pytest.approx(hand)
    assert a.seed.peak_basis == "mix of FP32 and FP64"


def test_double_flops_are_counted_alike_sampled_and_fast_forwarded(tmp_path):
    """The double-flop count through the shortcuts: a sampled run's extrapolation and the CLI's loop counted
    from a few iterations give the hand figure, 512 per thread."""
    import json

    from typer.testing import CliRunner

    from perfmodel.cli.main import app

    a, n = _poly(0, sample=8)
    assert a.sim.sampled and a.counts["fp64_flops"] == n * 512
    src = tmp_path / "poly.cu"
    src.write_text(_DOUBLE_POLY)
    r = CliRunner().invoke(app, ["analyze", str(src), "--grid", "256", "--block", "256", "--arg", "x=float64[n]:random",
                                 "--arg", "y=float64[n]", "--arg", "u=float32[n]:random", "--arg", "v=float32[n]",
                                 "-D", "n=65536", "--arg", "n=n", "--arg", "single_steps=0", "--device", "h100",
                                 "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["counts"]["fp64_flops"] == 65536 * 512
    assert doc["seed_model"]["peak_basis"] == "FP64"


def _ncu_fp64_div():
    import csv

    with open(ROOT / "validation" / "fp64_div_h200_ncu.csv") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("==PROF=="))
        return {(r["Kernel Name"], r["Metric Name"]): float(r["Metric Value"].replace(",", "")) for r in rows}


def test_a_double_division_loop_issues_its_newton_steps_on_the_fp64_pipe():
    """validation/microbench/fp64_div.cu, 132 x 256 threads x 200 iterations of v / 1.037 + 1.0, under Nsight
    Compute on an H200 (validation/fp64_div_h200_ncu.csv): 4,195,488 warp instructions, 1,900,800 of them on the FP64
    pipe (7 DFMA and a DMUL a division, a DADD the add). perfmodel read the division's DFMAs as ptxas unrolling the
    loop 9 times and counted 486,990 instructions (8.6x too few), and put one FP64 operation on the pipe per
    division. Now the pipe count is ncu's and the issue count within 30% (the loop's branch and slow-path tests)."""
    import numpy as np

    from perfmodel.api import RawModule

    ncu = _ncu_fp64_div()
    x = np.random.default_rng(1).uniform(0.5, 1.5, 132 * 256)
    a = RawModule(path=str(ROOT / "validation" / "microbench" / "fp64_div.cu")).get_function("div_f64")(
        (132,), (256,), (x, np.int32(200)), device="h100")
    assert a.counts["fp64_pipe_ops"] / 32 == ncu[("div_f64", "smsp__inst_executed_pipe_fp64.sum")] == 1_900_800
    assert a.counts["fp64_ops"] == 132 * 256 * 200 * 2          # the PTX operations: a division and an add
    assert a.counts["warp_instructions"] == pytest.approx(ncu[("div_f64", "smsp__inst_executed.sum")], rel=0.3)
    hand = 1_900_800 * 32 / (64 * 132 * 1.98e9)                  # 64 FP64 lanes an SM, one block an SM
    assert a.model.resource("fp64").time_s == pytest.approx(hand, rel=0.01)
