"""Tests that kill the five bugs of issue 18, each written from a source outside the code under test.

The bugs were planted one at a time in a copy of main and the suite still passed; ``bench/plant_bugs.py``
plants each again and shows that ``python -m pytest`` now fails. The oracles:

* the seed model's bandwidth bound: the slides' own figures (G80: 86.4 GB/s, 346.5 GFLOPS, CGMA 16 ->
  16 x 86.4 / 4 = 345.6 GFLOPS, *below* the peak, so the tiled kernel is memory-bandwidth bound);
* ``__syncthreads`` in the loads in flight: hand-counted from the tiled kernel's source (a warp issues its two
  tile loads, then waits at a barrier before it can use them: never more than 2 loads between two barriers);
* the compulsory-miss floor: every DRAM sector a load reads passes through L2, and a sector touched for the
  first time cannot be an L1 hit of the grid (hand-derived invariants on hand-made counts);
* ``correct``: a deliberately wrong kernel (a vec_add that writes A - B), through the exact and the sampled path.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from perfmodel.analysis import analyze
from perfmodel.model.seed import seed_model
from perfmodel.model.traffic import SECTOR_BYTES, estimate_traffic
from perfmodel.paths import shipped_dir

# ---- 1. the seed bound divides by the 4-byte operand -------------------------------------------------------

G80_PEAK_GFLOPS = 346.5      # the slides' G80 figures
G80_DRAM_GB_S = 86.4


def test_seed_bound_tiled_g80_is_memory_bandwidth_345_6_from_the_slides():
    # tiled 16 x 16: 8,192 mul/add per 512 loads per phase (the slides) -> CGMA 16; 16 x 86.4 / 4 = 345.6
    flops, loads = 8192.0, 512.0
    result = seed_model(flops, loads, 0.0, G80_PEAK_GFLOPS * 1e9, G80_DRAM_GB_S * 1e9)
    hand = 16 * G80_DRAM_GB_S / 4
    assert hand == pytest.approx(345.6)
    assert result.bandwidth_bound_gflops == pytest.approx(hand)
    assert result.achievable_gflops == pytest.approx(hand)
    assert result.bound == "memory bandwidth"
    # naive: CGMA 1 -> 86.4 / 4 = 21.6 (the slides' 21.6 GFLOPS)
    naive = seed_model(2.0, 2.0, 0.0, G80_PEAK_GFLOPS * 1e9, G80_DRAM_GB_S * 1e9)
    assert naive.bandwidth_bound_gflops == pytest.approx(21.6)
    # the generic slide: 200 GB/s -> 50 G operands/s; CGMA 30 reaches 1,500 GFLOPS exactly (a compute bound)
    generic = seed_model(30.0, 1.0, 0.0, 1500e9, 200e9)
    assert generic.bandwidth_bound_gflops == pytest.approx(1500.0)
    assert generic.required_cgma == pytest.approx(30.0)


def test_seed_bound_tiled_g80_end_to_end_is_memory_bandwidth(cli):
    import json

    code, out, err = cli("analyze", "matmul_tiled", "--device", "g80", "-D", "Width=32", "--json")
    assert code == 0, err
    seed = json.loads(out)["seed_model"]
    assert seed["cgma"] == pytest.approx(16.0)
    assert seed["bandwidth_bound_gflops"] == pytest.approx(345.6)
    assert seed["achievable_gflops"] == pytest.approx(345.6)
    assert seed["bound"] == "memory bandwidth"


# ---- 2. __syncthreads bounds the loads a warp has in flight -------------------------------------------------

def test_tiled_matmul_warp_never_has_more_than_two_loads_in_flight():
    # matmul_tiled.cu, per phase: Mds[ty][tx] = d_M[...]; Nds[ty][tx] = d_N[...]; __syncthreads(); the inner
    # product; __syncthreads(). Two loads, then a barrier before they are used: at most 2 in flight per warp.
    # Width 64 / TILE 16 = 4 phases: 8 loads per warp over the whole kernel, so a model that ignored the
    # barriers would let the warp have all 8 (or its cap) in flight at once.
    a = analyze("matmul_tiled", "h100", {"Width": 64, "TILE_WIDTH": 16}, regs=32)
    assert a.counts["global"]["load_requests"] / a.counts["warps"] == pytest.approx(8.0)
    assert 1.0 <= a.model.loads_in_flight_per_warp <= 2.0
    # the naive kernel has no barrier: its 2 x 64 loads per warp are limited only by the per-warp cap
    naive = analyze("matmul_naive", "h100", {"Width": 64, "BLOCK_WIDTH": 16}, regs=32)
    assert naive.model.loads_in_flight_per_warp > 2.0


def test_barriers_bound_loads_in_flight_of_counts_without_the_compiled_figure():
    """The same rule where the compiled code's figure (perfmodel/model/mlp.py, which also stops at barriers) is
    not there - hand-written counts: 4 warps of one block, 8 global load requests per warp and 3 barriers per
    warp, so 4 intervals of 2 loads: 2 in flight. Ignoring the barriers would give 8 (the per-warp cap)."""
    from perfmodel.devices import load_device
    from perfmodel.model.bottleneck import bottleneck_model, device_rates

    counts = {"warps": 4, "global": {"load_requests": 32, "load_sectors": 128}, "barrier_warps": 12}
    traffic = estimate_traffic(load_sectors=128, store_sectors=0, unique_load_sectors=128, unique_store_sectors=0,
                               block_load_sectors=128, block_footprint_sectors=128, wave_blocks=1, total_blocks=1,
                               l1_bytes=0, l2_bytes=0)
    result = bottleneck_model(counts, rates=device_rates(load_device("h100")), traffic=traffic, total_blocks=1,
                              warps_per_sm=4, blocks_per_sm=1, warps_per_block=4, loads_in_flight=None)
    assert result.loads_in_flight_per_warp == pytest.approx(2.0)


# ---- 3. the compulsory sectors reach L2 (and DRAM) whatever L1 reuse says --------------------------------

@pytest.mark.parametrize("l2_bytes", [0.0, 1e3, 50e6])
def test_compulsory_sectors_are_a_floor_of_l2_load_traffic(l2_bytes):
    # 1,000 requested load sectors over the grid, 600 of them distinct; the representative block re-touches
    # its data 10 times (100 sectors, 10 distinct: 90% reuse), more than the grid as a whole does.
    t = estimate_traffic(load_sectors=1000, store_sectors=0, unique_load_sectors=600, unique_store_sectors=0,
                         block_load_sectors=100, block_footprint_sectors=10, wave_blocks=10, total_blocks=10,
                         l1_bytes=256 * 1024, l2_bytes=l2_bytes)
    # each of the 600 distinct sectors is fetched at least once through L2: L1 cannot hit on a first touch
    assert t.l2_load_sectors >= 600
    # DRAM reads pass through L2: never more DRAM read bytes than L2 load bytes, and at least the compulsory
    assert 600 * SECTOR_BYTES <= t.dram_read_bytes <= t.l2_load_sectors * SECTOR_BYTES
    assert 0.0 <= t.l2_hit_rate <= 1.0


# ---- 4 and 5. a wrong kernel is reported wrong, exactly and sampled -------------------------------------------

@pytest.fixture(scope="module")
def wrong_vec_add(tmp_path_factory) -> Path:
    """The shipped vec_add spec, pointed at a kernel that writes A - B instead of A + B."""
    folder = tmp_path_factory.mktemp("wrong_vec_add")
    src = shipped_dir("kernels_spec")
    spec = (src / "vec_add.yaml").read_text()
    assert "source: vec_add.cu" in spec
    (folder / "wrong_vec_add.yaml").write_text(
        spec.replace("name: vec_add", "name: wrong_vec_add").replace("source: vec_add.cu", "source: wrong.cu"))
    source = (src / "vec_add.cu").read_text()
    assert "C[i] = A[i] + B[i];" in source
    (folder / "wrong.cu").write_text(source.replace("C[i] = A[i] + B[i];", "C[i] = A[i] - B[i];"))
    shutil.copy(src / "vec_add.cu", folder / "right.cu")
    return folder / "wrong_vec_add.yaml"


def test_wrong_kernel_is_reported_incorrect_exact_path(wrong_vec_add):
    a = analyze(str(wrong_vec_add), "h100", {"N": 2048, "BLOCK_SIZE": 256}, sample=0)
    assert not a.sim.sampled
    assert a.sim.correct is False
    assert a.to_json()["correct"] is False


def test_wrong_kernel_is_reported_incorrect_sampled_path(wrong_vec_add):
    a = analyze(str(wrong_vec_add), "h100", {"N": 64 * 256, "BLOCK_SIZE": 256}, sample=4)
    assert a.sim.sampled and a.sim.blocks_simulated < 64
    assert a.sim.correct is False
    assert a.to_json()["correct"] is False


def test_wrong_kernel_cli_json_says_incorrect(wrong_vec_add, cli):
    import json

    code, out, err = cli("analyze", str(wrong_vec_add), "--device", "h100", "-D", "N=4096", "--sample", "4",
                         "--json")
    doc = json.loads(out)
    assert doc["correct"] is False, (code, err)


def test_right_kernel_through_the_same_spec_is_correct(wrong_vec_add):
    # the control: the same spec with the unchanged source is correct on both paths (so the two tests above
    # fail because of A - B, not because of the spec)
    right = wrong_vec_add.with_name("right_vec_add.yaml")
    right.write_text(wrong_vec_add.read_text().replace("source: wrong.cu", "source: right.cu")
                     .replace("name: wrong_vec_add", "name: right_vec_add"))
    assert analyze(str(right), "h100", {"N": 2048, "BLOCK_SIZE": 256}, sample=0).sim.correct is True
    assert analyze(str(right), "h100", {"N": 64 * 256, "BLOCK_SIZE": 256}, sample=4).sim.correct is True
