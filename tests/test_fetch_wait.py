"""Concurrent first touches (docs/model.md 2.4): in a cold launch of one wave, the L2 hits wait for the DRAM fetch
that another block started. The rule and the chain arithmetic are checked by hand. The measurement the rule rests on
(validation/raw/*_hot_lines.json) is checked against the devices' own pointer-chase latencies. The model is then
checked on held-out kernels that no constant was fitted on."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import yaml

from perfmodel.devices import load_device
from perfmodel.gpu.accuracy import accuracy
from perfmodel.model import bottleneck as bn
from perfmodel.model.chain import fetch_wait_share
from perfmodel.model.traffic import Traffic

ROOT = Path(__file__).resolve().parents[1]


def _traffic(l2_hit: float, state: str = "cold") -> Traffic:
    return Traffic(load_sectors=0, store_sectors=0, l1_hit_rate=0.0, block_reuse=0.0, l2_load_sectors=0,
                   l2_store_sectors=0, l2_hit_rate=l2_hit, dram_read_bytes=0, dram_write_bytes=0,
                   working_set_bytes=0, footprint_bytes=0, l2_state=state)


def test_the_rule():
    assert fetch_wait_share("cold", 1.0) == 1.0
    assert fetch_wait_share("cold", 0.06) == 1.0            # fp16ScalarProduct: 128 blocks, 16 per SM possible
    assert fetch_wait_share("cold", 1.01) == 0.0            # a second wave starts as the first one's blocks end
    assert fetch_wait_share("warm", 0.5) == 0.0             # the lines are resident
    assert fetch_wait_share("cold", 0.0) == 0.0


def test_miss_latency_by_hand():
    rates = bn.device_rates(load_device("h100"))
    l2, dram = rates.l2_latency_cycles, rates.global_latency_cycles
    assert (l2, dram) == (281.7, 689.0)
    t = _traffic(0.9)
    # 90% of the round's sectors are L2 hits, the rest DRAM misses that also wait 100 cycles of queueing
    assert bn.miss_latency_cycles(t, rates, 100.0) == pytest.approx(0.9 * 281.7 + 0.1 * 789.0)
    # the hits wait for the fetch in flight: the idle DRAM round trip, with no queueing of their own
    assert bn.miss_latency_cycles(t, rates, 100.0, 1.0) == pytest.approx(0.9 * 689.0 + 0.1 * 789.0)
    assert bn.miss_latency_cycles(t, rates, 100.0, 0.5) == pytest.approx(0.9 * (281.7 + 689.0) / 2 + 0.1 * 789.0)


def test_the_bottleneck_model_charges_it_only_cold_and_in_one_wave():
    """The same counts with one wave, two waves, cold and warm: only the cold one-wave launch waits the fetch."""
    rates = bn.device_rates(load_device("h100"))
    warps_per_block = 4

    def chain(blocks, state):
        # per warp: 200 instructions, 16 loads of 4 sectors each
        warps = blocks * warps_per_block
        counts = {"warps": warps, "warp_instructions": 200.0 * warps,
                  "global": {"load_requests": 16.0 * warps, "load_sectors": 64.0 * warps}}
        return bn.bottleneck_model(counts, rates=rates, traffic=_traffic(0.95, state), total_blocks=blocks,
                                   warps_per_sm=warps_per_block, blocks_per_sm=1, warps_per_block=warps_per_block)

    one_cold, one_warm = chain(132, "cold"), chain(132, "warm")
    two_cold = chain(264, "cold")
    assert one_cold.fetch_wait_share == 1.0 and one_warm.fetch_wait_share == 0.0 and two_cold.fetch_wait_share == 0.0
    # 16 loads a warp with no compiled figure: the loads between barriers, at most 8 in flight -> 2 rounds
    rounds = 2
    dl = 0.95 * (rates.global_latency_cycles - rates.l2_latency_cycles)
    per_wave_cold = one_cold.latency_time_s * rates.clock_hz
    per_wave_two = two_cold.latency_time_s * rates.clock_hz / 2
    assert per_wave_cold - per_wave_two == pytest.approx(rounds * dl, rel=1e-6)


@pytest.mark.parametrize("device", ["h100", "h200"])
def test_the_measurement_behind_it(device):
    """validation/microbench/hot_lines.py on each GPU: an L2 hit costs the same whether 1 or 132 SMs read the line
    (no queue at a hot line), and cold, the readers of lines 16-132 blocks read together wait near the idle DRAM
    latency the device's pointer chase measured (devices/<device>.yaml measured.dram_latency_cycles), not the L2-hit
    latency."""
    data = json.loads((ROOT / "validation" / "raw" / f"{device}_hot_lines.json").read_text())
    measured = yaml.safe_load((ROOT / "devices" / f"{device}.yaml").read_text())["measured"]
    dram = measured["dram_latency_cycles"]["value"]
    l2 = measured["l2_hit_latency_cycles"]["value"]
    cases = data["cases"]
    assert len(cases) == 135
    warm = [c["warm"]["cycles_per_iter_median"] for c in cases]
    # every warm case, shared or not: an L2 hit plus the FMA and the loop (~30 cycles)
    assert all(l2 <= w <= l2 + 70 for w in warm), (min(warm), max(warm))
    shared_cold = [c["cold"]["cycles_per_iter_median"] for c in cases if c["mode"] != "spread" and c["blocks"] >= 16]
    assert len(shared_cold) == 50                # 16, 32, 64, 128, 132 blocks x 5 warp counts x 2 patterns
    assert 0.88 * dram <= statistics.median(shared_cold) <= 1.05 * dram
    assert min(shared_cold) >= 1.8 * l2


def test_heldout_one_wave_kernels_that_reread_each_others_lines():
    """fp16ScalarProduct (all 128 blocks read the same lines in each iteration) is in no fit part: cold on both GPUs
    it was 1.43-1.69x too fast with its L2 hits at the L2 latency; now within 1.4x (the intrinsics variant 1.35x
    too fast, the native one within 4%)."""
    kernels = ["fp16ScalarProduct_intrinsics", "fp16ScalarProduct_native"]
    errors = []
    for dataset in ("validation/h100_fidelity.json", "validation/h200.json"):
        errors += [c.time_error for c in accuracy(ROOT / dataset, kernels=kernels).cases]
    assert len(errors) == 4
    assert max(max(1 + e, 1 / (1 + e)) for e in errors) <= 1.4, errors
