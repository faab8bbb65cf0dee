"""The pytest helper `assert_perf`: keyword parsing, failure messages, and the fixture that perfmodel's
pytest11 entry point provides to any test suite."""
from __future__ import annotations

import pytest

from perfmodel.check import Threshold
from perfmodel.pytest_plugin import assert_perf, thresholds_from_keywords

pytest_plugins = ["pytester"]


def fake_analyze(kernel, device, params=None, regs=None, sample=None):
    tile = (params or {}).get("TILE_WIDTH", 16)
    return {"kernel": kernel, "device": device, "correct": True, "bound": "dram",
            "predicted_gflops": 21.6 * tile, "occupancy": {"occupancy": 1.0 if tile >= 16 else 0.5},
            "counts": {"shared": {"load_wavefronts": 4096}}}


def test_keywords_become_thresholds():
    assert thresholds_from_keywords({"predicted_gflops__min": 300, "occupancy__occupancy__min": 0.5,
                                     "occupancy__occupancy__max": 1, "correct": True,
                                     "counts__shared__load_wavefronts__max": 5000}) == {
        "predicted_gflops": Threshold(min=300),
        "occupancy.occupancy": Threshold(min=0.5, max=1),
        "correct": Threshold(equals=True),
        "counts.shared.load_wavefronts": Threshold(max=5000),
    }
    with pytest.raises(TypeError, match="not a metric path"):
        thresholds_from_keywords({"predicted_gflops____min": 1})
    with pytest.raises(TypeError, match="invalid limits"):
        thresholds_from_keywords({"cgma__min": "lots"})


def test_assert_perf_passes_and_returns_the_analysis():
    analysis = assert_perf("matmul_tiled", "g80", {"TILE_WIDTH": 16}, analyze=fake_analyze,
                           predicted_gflops__min=300, occupancy__occupancy__min=0.5, correct=True, bound="dram")
    assert analysis["predicted_gflops"] == pytest.approx(345.6)


def test_assert_perf_failure_lists_every_broken_limit():
    with pytest.raises(AssertionError) as info:
        assert_perf("matmul_tiled", "g80", {"TILE_WIDTH": 8}, analyze=fake_analyze,
                    predicted_gflops__min=300, occupancy__occupancy__min=0.75, correct=True)
    assert str(info.value) == (
        "perfmodel: matmul_tiled on g80 (TILE_WIDTH=8) misses 2 of 3 limits:\n"
        "  - predicted_gflops = 172.8 is below the minimum 300 (short by 127.2, -42.4%)\n"
        "  - occupancy.occupancy = 0.5 is below the minimum 0.75 (short by 0.25, -33.3%)")


def test_assert_perf_rejects_unknown_metrics_and_no_limits():
    with pytest.raises(TypeError, match="predicted_gflop: 'predicted_gflop' is not a field of the top level"):
        assert_perf("matmul_tiled", "g80", analyze=fake_analyze, predicted_gflop__min=1)
    with pytest.raises(TypeError, match="at least one limit"):
        assert_perf("matmul_tiled", "g80", analyze=fake_analyze)


def test_fixture_is_provided_by_the_installed_plugin(pytester):
    pytester.makepyfile(test_user="""
        def fake(kernel, device, params=None, regs=None, sample=None):
            return {"predicted_gflops": 21.6 * params["TILE_WIDTH"]}

        def test_fast(assert_perf):
            assert_perf("matmul_tiled", "g80", {"TILE_WIDTH": 16}, analyze=fake, predicted_gflops__min=300)

        def test_slow(assert_perf):
            assert_perf("matmul_tiled", "g80", {"TILE_WIDTH": 8}, analyze=fake, predicted_gflops__min=300)
    """)
    result = pytester.runpytest()  # no -p: the pytest11 entry point loads the plugin
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*matmul_tiled on g80 (TILE_WIDTH=8) misses 1 of 1 limit:*",
                                 "*predicted_gflops = 172.8 is below the minimum 300*"])


def test_assert_perf_with_the_real_analyzer():
    analysis = assert_perf("matmul_tiled", "g80", {"TILE_WIDTH": 16, "Width": 64},
                           cgma=16.0, occupancy__occupancy__min=0.5, correct=True)
    assert analysis["kernel"] == "matmul_tiled" and analysis["device"] == "g80"
    with pytest.raises(AssertionError, match=r"matmul_tiled on g80 \(TILE_WIDTH=8, Width=64\) misses 1 of 2 limits:\n"
                                             r"  - cgma = 8 is below the minimum 16 \(short by 8, -50.0%\)"):
        assert_perf("matmul_tiled", "g80", {"TILE_WIDTH": 8, "Width": 64}, cgma__min=16, correct=True)
