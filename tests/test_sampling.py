"""Stratified block sampling: strata, selection, extrapolation (unit tests on hand-made counts)."""
import numpy as np
import pytest

from perfmodel.sampling import block_spread, classify_blocks, extrapolate_counts, stratified_blocks


def test_strata_of_a_2d_grid():
    stratum = classify_blocks((4, 3, 1)).reshape(3, 4)
    # corners 0, edges 1, interior 2
    assert stratum.tolist() == [[0, 1, 1, 0], [1, 2, 2, 1], [0, 1, 1, 0]]


def test_strata_of_a_1d_grid():
    assert classify_blocks((5, 1, 1)).tolist() == [0, 2, 2, 2, 0]
    assert classify_blocks((1, 1, 1)).tolist() == [2]


def test_sample_takes_every_corner_and_spreads_the_rest():
    sample = stratified_blocks((64, 64, 1), 40)
    sizes = {s.name: s.size for s in sample.strata}
    assert sizes == {"corner": 4, "edge (x=0)": 62, "edge (x=63)": 62, "edge (y=0)": 62, "edge (y=63)": 62,
                     "interior": 62 * 62}
    assert sample.blocks_simulated <= 40
    ids = sample.block_ids
    assert len(np.unique(ids)) == len(ids)
    assert {0, 63, 64 * 63, 64 * 64 - 1} <= set(ids.tolist())
    assert sum(s.size for s in sample.strata) == 64 * 64


def test_small_grid_is_sampled_whole():
    sample = stratified_blocks((3, 2, 1), 100)
    assert sample.blocks_simulated == 6


def test_extrapolation_scales_each_stratum_by_its_weight():
    corner = {"flops": 10, "global": {"loads": 4, "unique_load_sectors": 2, "load_sectors": 4}, "simt_efficiency": 0.5,
              "warp_instructions": 10}
    interior = {"flops": 20, "global": {"loads": 8, "unique_load_sectors": 8, "load_sectors": 8},
                "simt_efficiency": 1.0, "warp_instructions": 30}
    total = extrapolate_counts([(corner, 1.0), (interior, 10.0)], array_sectors=50)
    assert total["flops"] == 10 + 200
    assert total["global"]["loads"] == 4 + 80
    # unique sectors are capped by the arrays' sectors
    assert total["global"]["unique_load_sectors"] == 50
    # weighted by warp instructions x weight: (0.5*10 + 1.0*300) / 310
    assert total["simt_efficiency"] == pytest.approx((0.5 * 10 + 300) / 310)


def test_block_spread():
    spread = block_spread({"flops": np.array([1.0, 1.0, 4.0])})
    assert spread["flops"]["min"] == 1 and spread["flops"]["max"] == 4 and spread["flops"]["mean"] == 2


def test_a_1d_grid_is_sampled_at_the_middle_of_equal_runs():
    """A 1-D grid over a 2-D mesh has its idle halo blocks at both ends of the interior stratum: the even spread
    took the first and last interior blocks (CloverLeaf's ideal_gas at 3,840^2: 2 idle blocks of 46 sampled, each
    standing for 1,255, loads 4.2% low). The middle of each of 46 equal runs of the 57,748 interior blocks: about
    1,255 apart, the first at 1 + 1,255 // 2 = 628."""
    sample = stratified_blocks((57750, 1, 1), 48)
    interior = sorted(i for i in sample.block_ids.tolist() if i not in (0, 57749))
    assert len(interior) == 46
    assert interior[0] == 1 + (57748 // 46) // 2 and interior[-1] < 57748 - 600


def test_the_faces_of_a_grid_are_sampled_apart(cli, tmp_path):
    """cuda-convnet2's filterActs: the last column of blocks covers 4 of its 32 images, the first all 32; both were
    one "edge" stratum, and a sample with unequal shares of the two scaled up to 2.3% too many stores. A grid of
    16 x 64 blocks of 32 threads over rows of 500 elements (the x = 15 blocks hold 20 of 32): each face is now a
    stratum of its own, all of whose blocks do the same work, so the sample's loads are the exact run's."""
    import json

    (tmp_path / "k.cu").write_text(
        "__global__ void k(const float *x, float *y, int w) {\n"
        "    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;\n"
        "    if (c < w) y[r * w + c] = 2.0f * x[r * w + c];\n}\n")
    base = ["analyze", str(tmp_path / "k.cu"), "--grid", "16,64", "--block", "32", "--arg", "x=float32[64*500]",
            "--arg", "y=float32[64*500]", "--arg", "w=500", "--device", "h100", "--json"]
    exact = json.loads(cli(*base, "--sample", "0")[1])
    sampled = json.loads(cli(*base, "--sample", "24")[1])
    assert sampled["sampled"] is True
    assert exact["counts"]["global"]["load_requests"] == 64 * 16
    assert sampled["counts"]["global"]["loads"] == exact["counts"]["global"]["loads"] == 64 * 500
    assert sampled["counts"]["global"]["load_requests"] == exact["counts"]["global"]["load_requests"]


def test_extrapolated_counts_print_like_exact_ones():
    """A sampled run's counts are fractional: below a million they printed as `9782` or `4.376e+04` (graphBIG's
    BFS), where the exact run prints `43,760`. Counts from 1,000 up are whole numbers with separators."""
    from perfmodel.report.analyze_view import fmt_num

    assert fmt_num(43760.4) == "43,760" and fmt_num(271700.7) == "271,701" and fmt_num(9782.3) == "9,782"
    assert fmt_num(275637) == "275,637" and fmt_num(12.5) == "12.5" and fmt_num(None) == "-"
