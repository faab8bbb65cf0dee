"""`perfmodel accuracy`: the model against the committed H100 measurements (validation/h100.json).

The bounds below guard the figures the model achieves on the committed data, so a model change cannot silently
make them worse. Where a bound is looser than issue 7's target, the target is written beside it and
docs/validation.md says why (never loosen a bound without saying so there).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from perfmodel.gpu.accuracy import _kernels_beside
from perfmodel.gpu.accuracy import (EXCLUDED, GLOBAL_COUNTS, INSTRUCTION_MEDIAN_BOUND, INSTRUCTION_WORST_BOUND,
                                    SASS_GROUPED_KERNELS, SOURCE_LEVEL_KERNELS, CountComparison, accuracy, case_id,
                                    time_error, time_factor)
from perfmodel.model import calibration

EXACT_KERNELS = SOURCE_LEVEL_KERNELS + SASS_GROUPED_KERNELS

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "validation" / "h100.json"


# --- the comparison logic, with a fake analyzer -------------------------------------------------------------

def _case(kernel="k", time_s=1e-3, regs=32, api=8, ncu=None):
    return {"kernel": kernel, "overrides": {"Width": 64}, "params": {"Width": 64}, "time_s": time_s,
            "function": {"num_regs": regs}, "occupancy_api": {"blocks_per_sm": api},
            "ncu": ncu if ncu is not None else {"global_load_requests": 100, "global_load_sectors": 400,
                                               "global_store_requests": 10, "global_store_sectors": 40,
                                               "l2_hit_rate_pct": 50.0, "dram_bytes_read": 1e6,
                                               "dram_bytes_write": 0}}


class _FakeAnalysis:
    def __init__(self, doc):
        self.doc = doc

    def to_json(self):
        return self.doc


def _fake_analyze(predicted=1.5e-3, blocks=8, loads=100):
    calls = []

    def analyze(kernel, device, params=None, regs=None, sample=None):
        calls.append((kernel, device, params, regs, sample))
        return _FakeAnalysis({"predicted_time_s": predicted, "bound": "dram", "occupancy": {"blocks_per_sm": blocks},
                              "counts": {"global": {"load_requests": loads, "load_sectors": 400,
                                                    "store_requests": 10, "store_sectors": 40},
                                         "shared": {"load_requests": 0}}})

    analyze.calls = calls
    return analyze


def test_errors_and_factors():
    assert time_error(1.5, 1.0) == pytest.approx(0.5)
    assert time_error(0.5, 1.0) == pytest.approx(-0.5)
    assert time_factor(0.5, 1.0) == pytest.approx(2.0) and time_factor(2.0, 1.0) == pytest.approx(2.0)
    assert time_error(None, 1.0) is None
    assert CountComparison("x", 10, 10).match and not CountComparison("x", 10, 11).match
    assert CountComparison("x", None, 10).match is None


def test_accuracy_passes_measured_registers_and_params_to_the_analyzer():
    fake = _fake_analyze()
    report = accuracy({"cases": [_case(regs=40)], "profile": "h100"}, analyze=fake)
    assert fake.calls == [("k", "h100", {"Width": 64}, 40, None)]
    case = report.cases[0]
    assert case.time_error == pytest.approx(0.5)
    assert case.occupancy_match is True
    assert case.global_counts_match is True
    summary = report.summary()
    assert summary["median_abs_time_error"] == pytest.approx(0.5)
    assert summary["within_2x"] == 1 and summary["occupancy_agree"] == 1


def test_accuracy_flags_disagreements():
    report = accuracy({"cases": [_case(api=4)], "profile": "h100"}, analyze=_fake_analyze(loads=99))
    case = report.cases[0]
    assert case.occupancy_match is False
    assert case.global_counts_match is False
    assert report.summary()["global_counts"]["global.load_requests"]["agree"] == 0


def test_accuracy_records_analyzer_errors_instead_of_crashing():
    from perfmodel.errors import SpecError

    def broken(*args, **kwargs):
        raise SpecError("no such param")

    report = accuracy({"cases": [_case()], "profile": "h100"}, analyze=broken)
    assert report.cases[0].error and report.summary()["failed"] == [case_id(_case())]


def test_markdown_and_json_render(tmp_path):
    from perfmodel.report.accuracy_view import to_markdown

    report = accuracy({"cases": [_case(), _case(kernel="other")], "profile": "h100"}, analyze=_fake_analyze())
    text = to_markdown(report)
    assert "| k/Width=64 |" in text and "median |error|" in text
    json.dumps(report.to_json())


def test_warp_instructions_are_compared_as_ratios():
    cases = []
    for ours, ncu, warning in ((109, 100, None), (80, 100, None), (100, 100, None), (5, 100, "ncu grid differs")):
        case = _case(ncu={"warp_instructions": ncu})
        if warning:
            case["ncu_mapping_warning"] = warning

        def analyze(kernel, device, params=None, regs=None, sample=None, ours=ours):
            return _FakeAnalysis({"predicted_time_s": 1e-3, "counts": {"warp_instructions": ours}})

        cases.append(accuracy({"cases": [case]}, "h100", analyze=analyze).cases[0])
    from perfmodel.gpu.accuracy import instruction_summary

    s = instruction_summary(cases)
    # the case whose ncu row is another kernel's is not compared; errors 9%, 20%, 0%
    assert s["compared"] == 3 and cases[3].warp_instructions.measured is None
    assert s["median_abs_error"] == pytest.approx(0.09) and s["max_abs_error"] == pytest.approx(0.20)
    assert s["worst_factor"] == pytest.approx(1.25) and s["within_10pct"] == 2 and s["within_25pct"] == 3


# --- the model against the committed H100 measurements ------------------------------------------------------
# One analysis of every case (about a minute on 2 cores: the large cases' inputs dominate), shared by the tests.

@pytest.fixture(scope="module")
def report(h100_accuracy):
    return h100_accuracy[0]     # accuracy(DATASET), shared with tests/test_heldout.py (conftest.py)


def test_every_case_is_analysed(report):
    summary = report.summary()
    assert summary["failed"] == []
    assert summary["cases"] == summary["timed"] >= 40


def test_blocks_per_sm_equal_the_cuda_occupancy_api_in_every_case(report):
    # given the measured registers per thread (the analyzer gets them as regs=...)
    wrong = [(c.id, c.blocks_per_sm_ours, c.blocks_per_sm_api) for c in report.cases if not c.occupancy_match]
    assert wrong == []


def test_source_level_and_excluded_kernels_cover_every_shipped_kernel():
    from perfmodel.spec import list_specs

    shipped = {s.name if hasattr(s, "name") else s for s in list_specs()}
    assert set(EXACT_KERNELS) | set(EXCLUDED) == shipped
    assert not set(EXACT_KERNELS) & set(EXCLUDED)
    assert not set(SOURCE_LEVEL_KERNELS) & set(SASS_GROUPED_KERNELS)


def test_global_counts_equal_ncu_exactly_for_source_level_kernels(report):
    """Requests and 32-byte sectors of global loads and stores, against l1tex__t_{requests,sectors}_pipe_lsu_
    mem_global_op_{ld,st}.sum. Exact for every case the analyzer simulated exactly; every kernel on the list has
    such a case. A sampled analysis extrapolates counts from a stratified sample of blocks: those agree within 0.1%
    (partial edge blocks - picture_scale 8191 x 8190, conv2d_tiled - are what the strata average). spmv_csr is on
    the list through the SASS loop regrouping (sim/regroup.py): its rows of different lengths make warps whose
    lanes run the further-unrolled loop different numbers of times."""
    exact_kernels = set()
    for case in report.cases:
        if case.kernel not in EXACT_KERNELS:
            continue
        assert len(case.global_counts) == len(GLOBAL_COUNTS)
        for count in case.global_counts:
            assert count.measured is not None and count.ours is not None, (case.id, count.name)
            if case.sampled:
                assert abs(count.ratio - 1) <= 1e-3, (case.id, count.name, count.ours, count.measured)
            else:
                assert count.match, (case.id, count.name, count.ours, count.measured)
        if not case.sampled:
            exact_kernels.add(case.kernel)
    assert exact_kernels == set(EXACT_KERNELS)


def test_warp_instructions_within_the_issue_bounds(report):
    """Warp instructions executed (SASS-level estimate) against ncu's smsp__inst_executed.sum: issue 11's bounds,
    median |error| within 10% and no case off by more than 25%."""
    s = report.summary()["warp_instructions"]
    assert s["compared"] == len(report.cases)
    assert s["median_abs_error"] <= INSTRUCTION_MEDIAN_BOUND
    off = [(c.id, round(c.warp_instructions.ratio, 3)) for c in report.cases
           if abs(c.warp_instructions.ratio - 1) > INSTRUCTION_WORST_BOUND]
    assert off == []


def test_l1_hit_rate_of_global_loads_against_ncu(report):
    """The traffic model's L1 hit rate of global loads against ncu's l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate
    on the 66 H100 cases: 60 within 10 points, a median difference under 2 points where either side has hits. The
    six beyond: matmul_colwise (two cases: 99% vs 26% and 72% - a block rereads b only after all of it has streamed
    past, beyond the L1; the model counts every reread as a hit), matmul_rowwise (two: 99.9% vs 89%), spmv_csr
    (one: 60% vs 47%) and matmul_tiled with 8-wide tiles at W=2048 (0% vs 25%: reuse between blocks on one SM)."""
    s = report.summary()["l1_load_hit"]
    assert s["compared"] == len(report.cases)
    off = sorted(c.kernel for c in report.cases if abs(c.l1_load_hit_diff_pp) > 10)
    assert off == ["matmul_colwise", "matmul_colwise", "matmul_rowwise", "matmul_rowwise", "matmul_tiled", "spmv_csr"]
    assert s["within_10pp"] == 60 and s["worst_case"] == "matmul_colwise/ha=256,wa=256,wb=256"
    assert s["median_abs_diff_pp_with_hits"] <= 2.0


def test_time_error_median_within_25_percent(report):
    # issue 7's target; achieved on the committed data: 9.5% (66 cases) at commit 42cdf70
    assert report.summary()["median_abs_time_error"] <= 0.25


def test_every_case_within_2x_of_the_measurement(report):
    # issue 7's target; achieved: worst case 1.45x at commit 42cdf70
    off = [(c.id, round(c.time_factor, 2)) for c in report.cases if c.time_factor > 2.0]
    assert off == []


def test_achieved_accuracy_does_not_regress(report):
    # The issue's targets above leave room to get worse unnoticed; these guard what the model achieves now,
    # with a small margin so that an honest refit of a calibrated constant can move a case, but a model change
    # that loses accuracy fails here first. On the PTX engine (issue 11): median 11.5%, worst 1.45x, 54/66 within
    # 25% - the source-level engine achieved 9.5%, 1.45x, 60/66 with an instruction count fitted to the same data
    # (0.45 x counted + 18 per warp); its replacement, the SASS-level count, is not fitted, and the latency-bound
    # 1D convolutions moved from ~10% to 20-45% slow. docs/validation.md says so; the refit is issue 13's.
    # Issue 13 items 3 and 5 (loads in flight per warp from the compiled code, measured L1/L2/DRAM latencies, the
    # latency of a non-load instruction refitted 25 -> 10 on the split's latency fit part, which holds these
    # cases): 8.3%, 1.36x, 63/66; with issue 11's SASS loop regrouping (exact spmv counts and instructions):
    # 8.1%, 1.36x, 62/66. With the DRAM latency under load (measured, devices/h100.yaml) and the non-load latency
    # refitted 10 -> 6 on the same fit part (its sum of squared log errors 1.21 -> 0.87): 9.3%, 1.27x, 64/66 - the
    # median moved up a point while the worst case and the count within 25% improved, here and held out
    # (docs/model.md 2.4). Against the median over three timing sessions (docs/validation.md "Reproducibility"):
    # 9.5%, 1.26x, 63/66. With the shared loads counted as the cubin issues them (merged LDS.64 / LDS.128,
    # measured wide-load wavefronts) and the L1 data stage moving shared wavefronts and global lines together
    # (docs/model.md 2.3): 7.1%, 1.26x, 64/66. With the chain's ILP credit, fitted with six SGEMM kernels in the
    # fit part (docs/model.md 2.4): 8.0%, 1.30x, 65/66 - these 66 cases fit a little worse, the GEMMs far better.
    # With the L2 hits of a cold one-wave launch waiting for the DRAM fetch in flight (measured,
    # validation/microbench/hot_lines.py) and the pair refitted 12 / 2.25 -> 9 / 2.0: 6.4%, 1.26x, 65/66.
    summary = report.summary()
    assert summary["median_abs_time_error"] <= 0.07
    assert summary["max_time_factor"] <= 1.30
    assert summary["within_25pct"] >= 64


def test_kernel_classes_from_the_split_file(tmp_path):
    from perfmodel.errors import PerfmodelError
    from perfmodel.gpu.accuracy import case_classes, load_classes

    classes = load_classes(ROOT / "validation" / "split.yaml")
    assert case_classes("hist_global_f32", 16384, classes, 132) == ["atomics"]
    # a reduction launched with 8 blocks on 132 SMs is a reduction and a few-block case; with 1,024 only a reduction
    assert case_classes("reduce_sequential", 8, classes, 132) == ["reduction", "few-block"]
    assert case_classes("reduce_sequential", 1024, classes, 132) == ["reduction"]
    assert case_classes("unknown_kernel", 1024, classes, 132) == []
    bad = tmp_path / "split.yaml"
    bad.write_text("classes: [atomics]\n")
    with pytest.raises(PerfmodelError, match="classes"):
        load_classes(bad)
    # per-class figures: the cases of the class only
    report = accuracy({"cases": [_case(time_s=1e-3), _case(kernel="other", time_s=4e-3)], "profile": "h100",
                       "classes": {"ks": {"kernels": ["k"]}}}, analyze=_fake_analyze())
    figures = report.summary()["classes"]
    assert list(figures) == ["ks"] and figures["ks"]["timed"] == 1


# ---- the latency constant's fit (issue 13 item 3, the split's "latency" fit part, validation/split.yaml) ----
# Here and not in tests/test_heldout.py because it reads the session fixture h100_accuracy: pytest-xdist runs this
# file on one worker (--dist loadfile, pyproject.toml), so only that worker builds the fixture.
SPLIT = yaml.safe_load((ROOT / "validation" / "split.yaml").read_text())


def _h100_with(latency, floor):
    from perfmodel.devices import load_device

    h100 = load_device("h100")
    return h100.model_copy(update={"throughput": h100.throughput.model_copy(
        update={"dependent_issue_latency_cycles": float(latency), "independent_issue_cycles": float(floor)})})


def _sum_log2(rows, stored, latency, floor):
    """Sum over the fit part of log(predicted / measured)^2 with the H100 profile's dependent-issue latency and
    independent-issue cycles set as given: ``rows`` (spec, launch, sim, regs, measured) are simulated in this
    session, ``stored`` the SGEMM cases' model inputs (validation/h100_sgemm_fit_inputs.json)."""
    import math

    from perfmodel.analysis import model_launch
    from perfmodel.model.bottleneck import bottleneck_model, device_rates
    from perfmodel.model.traffic import Traffic

    dev = _h100_with(latency, floor)
    total = 0.0
    for spec, launch, sim, regs, measured in rows:
        predicted = model_launch(spec, launch, sim, dev, regs=regs).model.predicted_time_s
        total += math.log(predicted / measured) ** 2
    for inputs in stored.values():
        kw = dict(inputs)
        measured = kw.pop("measured_cold_s")
        rates = device_rates(dev, shared_memory_per_sm_used=kw.pop("shared_memory_per_sm_used"))
        kw["traffic"] = Traffic(**kw["traffic"])
        predicted = bottleneck_model(kw.pop("counts"), rates=rates, **kw).predicted_time_s
        total += math.log(predicted / measured) ** 2
    return total


@pytest.fixture(scope="module")
def latency_fit_rows(h100_accuracy):
    """The 74 simulated cases of the latency fit part: every validation/h100.json case (simulated once per session,
    conftest.py) and the H100 reductions the split names."""
    from perfmodel.analysis import _spec, analyze
    from perfmodel.gpu.accuracy import measured_time

    report, kept = h100_accuracy
    parts = SPLIT["latency"]["fit"]
    assert parts[0] == {"dataset": "validation/h100.json"}
    rows = []
    for case in report.cases:
        launch, sim = kept[case_id({"kernel": case.kernel, "overrides": case.params})]
        rows.append((_spec(case.kernel), launch, sim, case.registers, case.measured_time_s))
    part = parts[1]
    cases = {case_id(c): c for c in json.loads((ROOT / part["dataset"]).read_text())["cases"]}
    with _kernels_beside(ROOT / part["dataset"]):
        for cid in part["cases"]:
            c = cases[cid]
            a = analyze(c["kernel"], "h100", c["overrides"], regs=c["function"]["num_regs"], check=False)
            rows.append((_spec(c["kernel"]), a.launch, a.sim, c["function"]["num_regs"], measured_time(c)))
    assert len(rows) == 74
    return rows


@pytest.fixture(scope="module")
def sgemm_fit_inputs():
    """The SGEMM fit cases' model inputs (validation/fit_inputs.py), one of them recomputed here: an engine change
    that moves their counts fails until the file is written again."""
    sys.path.insert(0, str(ROOT / "validation"))
    try:
        import fit_inputs
    finally:
        sys.path.remove(str(ROOT / "validation"))
    part = SPLIT["latency"]["fit"][2]
    assert part["dataset"] == "validation/h100_sgemm.json" and part["inputs"] == "validation/h100_sgemm_fit_inputs.json"
    stored = json.loads((ROOT / part["inputs"]).read_text())["cases"]
    assert sorted(stored) == sorted(part["cases"]) and len(stored) == 12
    cases = {case_id(c): c for c in json.loads((ROOT / part["dataset"]).read_text())["cases"]}
    cid = "sgemm_03_shared_mem_block/S=1024"
    fresh = fit_inputs.model_inputs(cases[cid])
    assert fresh == {k: v for k, v in stored[cid].items() if k != "measured_cold_s"}, \
        "the engine's counts moved: run python validation/fit_inputs.py"
    return stored


def test_issue_latencies_are_the_fit_parts_least_squares(latency_fit_rows, sgemm_fit_inputs):
    """The committed pair (calibration.py and both Hopper profiles) minimises the fit part's sum of squared log
    errors over whole cycles of the dependent step and quarter cycles of the floor (calibration.py: 9 / 2.0 ->
    0.7191; 8 -> 0.7227, 10 -> 0.7203, 7 -> 0.7309, 11 -> 0.7264; floor 1.75 -> 0.7282, 2.25 -> 0.7381): no
    neighbour within two steps does better by more than 0.5% (the minimum is flat between 8 and 10), and two cycles
    away both sides are worse.
    Without the ILP credit (floor = step: every instruction a dependent step) the same cases fit far worse."""
    from perfmodel.devices import load_device

    L, F = calibration.DEPENDENT_ISSUE_LATENCY_CYCLES, calibration.INDEPENDENT_ISSUE_CYCLES
    for name in ("h100", "h200"):
        t = load_device(name).throughput
        assert (t.dependent_issue_latency_cycles, t.independent_issue_cycles) == (L, F)
    at = {(l, f): _sum_log2(latency_fit_rows, sgemm_fit_inputs, l, f)
          for l, f in ((L, F), (L - 1, F), (L + 1, F), (L - 2, F), (L + 2, F), (L, F - 0.25), (L, F + 0.25))}
    assert at[(L, F)] <= 1.005 * min(at.values()), at
    assert at[(L - 2, F)] > 1.003 * at[(L, F)] and at[(L + 2, F)] > 1.003 * at[(L, F)], at
    assert _sum_log2(latency_fit_rows, sgemm_fit_inputs, 6, 6) > 2 * at[(L, F)]


def test_measured_time_is_the_median_over_the_sessions():
    from perfmodel.gpu.accuracy import measured_time

    case = {"time_s": 1.0, "time": {"cold": {"median_s": 1.0}, "warm": {"median_s": 4.0}}}
    assert measured_time(case, "cold") == 1.0 and measured_time(case, "warm") == 4.0
    case["sessions"] = [{"cold_median_s": 2.0, "warm_median_s": 1.0}, {"cold_median_s": 3.0, "warm_median_s": 2.0}]
    assert measured_time(case, "cold") == 2.0          # median of 1, 2, 3
    assert measured_time(case, "warm") == 2.0          # median of 4, 1, 2
    case["sessions"] = case["sessions"][:1]
    assert measured_time(case, "warm") == 2.5          # two values: their mean


def test_session_spread_and_predictions_inside_the_measured_range():
    """Per case: every session's time, the slowest over the fastest, and whether the prediction lies inside; in the
    summary, the median and widest spread and how many predictions fall inside their case's range (by hand)."""
    narrow = _case(time_s=1.0e-3)
    narrow["sessions"] = [{"cold_median_s": 1.1e-3}, {"cold_median_s": 1.2e-3}]      # 1.0-1.2 ms: 1.2x
    wide = _case(kernel="other", time_s=1.0e-3)
    wide["sessions"] = [{"cold_median_s": 2.0e-3}, {"cold_median_s": None}]           # 1.0-2.0 ms: 2x, one blank
    alone = _case(kernel="third", time_s=1.0e-3)                                       # one session: no spread
    report = accuracy({"cases": [narrow, wide, alone], "profile": "h100"}, analyze=_fake_analyze(predicted=1.5e-3))
    by_kernel = {c.kernel: c for c in report.cases}
    assert by_kernel["k"].measured_sessions_s == [1.0e-3, 1.1e-3, 1.2e-3]
    assert by_kernel["k"].session_spread == pytest.approx(1.2) and by_kernel["k"].within_sessions is False
    assert by_kernel["other"].measured_sessions_s == [1.0e-3, 2.0e-3]
    assert by_kernel["other"].session_spread == pytest.approx(2.0) and by_kernel["other"].within_sessions is True
    assert by_kernel["third"].session_spread is None and by_kernel["third"].within_sessions is None
    s = report.summary()["sessions"]
    assert s == {"cases": 2, "most_sessions": 3, "median_spread": pytest.approx(1.6), "max_spread": pytest.approx(2.0),
                 "widest_case": by_kernel["other"].id, "predicted_within_sessions": 1, "predicted_compared": 2}
    doc = report.to_json()["cases"][1]
    assert doc["measured_sessions_s"] == [1.0e-3, 2.0e-3] and doc["session_spread"] == pytest.approx(2.0)


def test_repeat_sessions_cover_the_datasets_and_show_what_reproduces():
    """Every case of the three datasets was timed again in four later sessions on its GPU (validation/raw/*_retime*.json,
    attached by validation/add_sessions.py). Cold times reproduce within 12% in every case (10% above 6 us); warm
    times of kernels over 20 us within 30%, while those under 20 us move by up to 2x (docs/validation.md,
    "Reproducibility"): the reason the accuracy check takes the median over sessions. The cases measured again from
    the analysed cubin (validation/replace_cases.py; docs/validation.md, "Compiler") have their own four sessions."""
    for name, raw, again in (("h100", "h100_seed_retime", 3), ("h100_fidelity", "h100_fidelity_retime", 4),
                             ("h200", "h200_retime", 7)):
        data = json.loads((ROOT / "validation" / f"{name}.json").read_text())
        small_moves, other_moves = [], []
        assert sum("source" in case for case in data["cases"]) == again, name
        for case in data["cases"]:
            sources = sorted(s["source"] for s in case["sessions"])
            expected = ([f"validation/raw/{raw}{n}.json" for n in ("", "2", "3", "4")] if "source" not in case else
                        [f"validation/raw/{name[:4]}_nvrtc135_session{n}.json" for n in (2, 3, 4, 5)])
            assert sources == expected, (name, case_id(case))
            for s in case["sessions"]:
                moved = s["cold_median_s"] / case["time_s"]
                assert 0.9 <= moved <= (1.12 if case["time_s"] < 6e-6 else 1.1), (name, case_id(case))
                moved = s["warm_median_s"] / case["time"]["warm"]["median_s"]
                (small_moves if case["time_s"] < 20e-6 else other_moves).append(max(moved, 1 / moved))
        assert max(other_moves) <= 1.3, name
        assert max(small_moves) >= 1.4, name          # what the median over sessions is for


def test_l1_hit_rate_comparison_by_hand():
    """The model's L1 hit rate of global-load sectors against ncu's global-load hit rate (not the all-operations
    rate, which counts stores), in points, by hand: 90 vs 85 (5), 0 vs 0 (0, a streaming kernel), 20 vs 80 (60);
    a case without ncu's metric, or whose ncu row is another launch's, is not compared."""
    def ncu(load_hit=None):
        base = {"global_load_requests": 100, "global_load_sectors": 400, "global_store_requests": 10,
                "global_store_sectors": 40, "l1_hit_rate_pct": 50.0}
        return base if load_hit is None else {**base, "l1_global_load_hit_rate_pct": load_hit}

    other = _case(kernel="e", ncu=ncu(0.0))
    other["ncu_mapping_warning"] = "ncu grid (1, 1, 1) != (8, 1, 1)"     # ncu's row is another launch's
    cases = [_case(kernel="a", ncu=ncu(85.0)), _case(kernel="b", ncu=ncu(0.0)), _case(kernel="c", ncu=ncu(80.0)),
             _case(kernel="d", ncu=ncu()), other]
    ours = {"a": 0.9, "b": 0.0, "c": 0.2, "d": 0.5, "e": 0.9}

    def analyze(kernel, device, params=None, regs=None, sample=None):
        return _FakeAnalysis({"predicted_time_s": 1e-3, "bound": "dram", "occupancy": {"blocks_per_sm": 8},
                              "counts": {}, "model": {"traffic": {"l1_hit_rate": ours[kernel]}}})

    report = accuracy({"cases": cases, "profile": "h100"}, analyze=analyze)
    by = {c.kernel: c for c in report.cases}
    assert by["a"].l1_load_hit_diff_pp == pytest.approx(5.0) and by["c"].l1_load_hit_diff_pp == pytest.approx(-60.0)
    assert by["d"].l1_load_hit_pct == pytest.approx(50.0) and by["d"].l1_load_hit_diff_pp is None
    assert by["e"].l1_load_hit_diff_pp is None
    s = report.summary()["l1_load_hit"]
    assert s == {"compared": 3, "with_hits": 2, "median_abs_diff_pp": pytest.approx(5.0),
                 "median_abs_diff_pp_with_hits": pytest.approx(32.5), "max_abs_diff_pp": pytest.approx(60.0),
                 "worst_case": by["c"].id, "within_10pp": 2}
    doc = report.to_json()["cases"][2]["l1_load_hit_pct"]
    assert doc["ours"] == pytest.approx(20.0) and doc["measured"] == 80.0 and doc["difference_pp"] == pytest.approx(-60)
    from perfmodel.report.accuracy_view import to_markdown

    md = to_markdown(report)
    assert "| 90% / 85% |" in md and "| 50% / - |" in md
    assert ("median |difference| 5.0 points (32.5 over the 2 with hits on either side), largest 60.0 "
            f"({by['c'].id}); 2/3 within 10 points") in md
