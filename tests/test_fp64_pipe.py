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
