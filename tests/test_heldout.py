"""Held-out accuracy (issue 18 item 3, issue 13): the atomics constants are refitted here from the "fit" cases of
validation/split.yaml - measured times and the simulator's counts, with the arithmetic of each constant's comment
in perfmodel/model/calibration.py - and must equal the committed ones; then the model is checked on the held-out
cases, which no constant saw (other sizes, the variants not in the fit, and the H200)."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import yaml

from perfmodel.gpu.accuracy import _kernels_beside, accuracy, case_id
from perfmodel.model import calibration

ROOT = Path(__file__).resolve().parents[1]
SPLIT = yaml.safe_load((ROOT / "validation" / "split.yaml").read_text())


def _cases(dataset: str) -> dict[str, dict]:
    data = json.loads((ROOT / dataset).read_text())
    return {case_id(c): c for c in data["cases"] if c["kernel"] in SPLIT["kernels"]}


@pytest.fixture(scope="module")
def fit_counts():
    from perfmodel.analysis import analyze

    cases = _cases(SPLIT["fit"]["dataset"])
    out = {}
    with _kernels_beside(ROOT / SPLIT["fit"]["dataset"]):
        for cid in SPLIT["fit"]["cases"]:
            case = cases[cid]
            a = analyze(case["kernel"], "h100", case["overrides"], check=False)
            out[cid] = (case["time_s"] - calibration.LAUNCH_OVERHEAD_S, a.sim.counts)
    return out


def test_split_is_disjoint_and_covers_the_kernels():
    """Cases are (dataset, id) pairs: the H200's cases share the H100's ids but are other measurements."""
    fit = {(SPLIT["fit"]["dataset"], cid) for cid in SPLIT["fit"]["cases"]}
    assert all(cid in _cases(SPLIT["fit"]["dataset"]) for _, cid in fit)
    for part in SPLIT["heldout"]:
        held = {(part["dataset"], cid) for cid in _cases(part["dataset"])} - fit
        assert held and not (held & fit)
        assert {cid.split("/")[0] for _, cid in held} == set(SPLIT["kernels"])


def test_constants_are_the_fit_parts(fit_counts):
    def g(cid, key):
        return fit_counts[cid][1]["global"][key]

    t, _ = fit_counts["atomic_gather_u32/n=4194304,LANES=32"]
    same_int = t / g("atomic_gather_u32/n=4194304,LANES=32", "atomic_hot_line_one_address_int")
    t, _ = fit_counts["atomic_gather_f32/n=4194304,LANES=32"]
    same_float = t / g("atomic_gather_f32/n=4194304,LANES=32", "atomic_hot_line_one_address_float")
    cid = "hist_global_f32/n=4194304,NBINS=256"
    t, _ = fit_counts[cid]
    sector = (t - g(cid, "atomic_hot_line_repeats_float") * same_float) / g(cid, "atomic_hot_line_sectors")
    t, c = fit_counts["hist_global_f32/n=4194304,NBINS=65536"]
    rate = c["global"]["atomic_ops"] / t
    cid = "hist_shared_f32/n=4194304,NBINS=1"
    t, c = fit_counts[cid]
    shared_s = t - g(cid, "atomic_hot_line_one_address_float") * same_float    # its global line, not overlapped
    shared = shared_s * 1.98e9 / (c["shared"]["atomic_same_address"] / 132)   # 132 SMs at the measured 1.98 GHz
    for fitted, committed in ((same_int, calibration.GLOBAL_ATOMIC_SAME_INT_S),
                              (same_float, calibration.GLOBAL_ATOMIC_SAME_FLOAT_S),
                              (sector, calibration.GLOBAL_ATOMIC_SECTOR_S),
                              (rate, calibration.GLOBAL_ATOMIC_OPS_PER_S),
                              (shared, calibration.SHARED_ATOMIC_CYCLES)):
        assert committed == pytest.approx(fitted, rel=0.02)


@pytest.fixture(scope="module")
def heldout_errors():
    fit = set(SPLIT["fit"]["cases"])
    errors = {}
    for part in SPLIT["heldout"]:
        ids = set(_cases(part["dataset"])) - (fit if part["dataset"] == SPLIT["fit"]["dataset"] else set())
        report = accuracy(ROOT / part["dataset"], ids=ids)
        for case in report.cases:
            assert case.error is None, case.error
            errors[f"{part['dataset']}:{case.id}"] = case.time_error
    return errors


def test_heldout_atomics_accuracy(heldout_errors):
    """Before the atomics term the H100 atomics cases were off by a median 84%, up to 356x too fast; before the
    same-address rates and the compiler's combining rule (docs/model.md, "Atomics") the worst was 3.8x."""
    errors = list(heldout_errors.values())
    assert len(errors) >= 40
    assert statistics.median(abs(e) for e in errors) <= 0.10
    assert sum(abs(e) <= 0.25 for e in errors) >= 0.9 * len(errors)
    factors = [max(1 + e, 1 / (1 + e)) for e in errors]
    assert max(factors) <= 1.5      # hist_shared_u32 NBINS=1: 1.43x


def test_partial_store_cost_fit_and_heldout(monkeypatch):
    """calibration.PARTIAL_STORE_SECTOR_COST: the value whose prediction of the fit case matches its measured time
    (secant steps from 0 and 1); then every held-out transpose_naive case (other sizes on the H100, all sizes on
    the H200) is within 25%."""
    from perfmodel.analysis import analyze

    part = SPLIT["partial_stores"]
    dataset = SPLIT["fit"]["dataset"]
    data = json.loads((ROOT / dataset).read_text())
    case = next(c for c in data["cases"] if case_id(c) == part["fit"])
    committed = calibration.PARTIAL_STORE_SECTOR_COST
    def predicted(cost):
        monkeypatch.setattr(calibration, "PARTIAL_STORE_SECTOR_COST", cost)
        return analyze(case["kernel"], "h100", case["overrides"], check=False,
                       regs=case["function"]["num_regs"]).model.predicted_time_s - case["time_s"]

    with _kernels_beside(ROOT / dataset):
        a, b = 0.0, 1.0
        fa, fb = predicted(a), predicted(b)
        for _ in range(4):
            a, fa, b = b, fb, b - fb * (b - a) / (fb - fa)
            fb = predicted(b)
    monkeypatch.setattr(calibration, "PARTIAL_STORE_SECTOR_COST", committed)
    fitted = b
    assert committed == pytest.approx(fitted, rel=0.03)
    errors = []
    for held in SPLIT["heldout"]:
        ids = {case_id(c) for c in json.loads((ROOT / held["dataset"]).read_text())["cases"]
               if c["kernel"] == part["kernel"]} - ({part["fit"]} if held["dataset"] == dataset else set())
        errors += [c.time_error for c in accuracy(ROOT / held["dataset"], ids=ids).cases]
    assert len(errors) == 7
    assert all(abs(e) <= 0.25 for e in errors), errors


# ---- the latency chain (split.yaml "latency"): calibration.DEPENDENT_ISSUE_LATENCY_CYCLES and ------------------
# INDEPENDENT_ISSUE_CYCLES

def test_heldout_reductions():
    """Held out from every fitted constant: the few-block reductions at n = 16 Mi on the H100 and all twelve on the
    H200. Before the compiled loads in flight and the measured latencies they were 2-3x too fast (median 57-60%
    error, docs/validation.md)."""
    errors = []
    fit = set(SPLIT["latency"]["fit"][1]["cases"])
    kernels = ["reduce_sequential", "reduce_interleaved_mod"]
    for part in SPLIT["latency"]["heldout"]:
        if not any(c["kernel"] in kernels for c in json.loads((ROOT / part["dataset"]).read_text())["cases"]):
            continue                                    # the SGEMM tutorial's datasets: no reduction
        report = accuracy(ROOT / part["dataset"], kernels=kernels)
        errors += [c.time_error for c in report.cases if not (part["dataset"] == SPLIT["latency"]["fit"][1]["dataset"]
                                                             and c.id in fit)]
    assert len(errors) == 16
    factors = [max(1 + e, 1 / (1 + e)) for e in errors]
    assert statistics.median(abs(e) for e in errors) <= 0.15
    assert max(factors) <= 1.6


def test_heldout_transposes_with_the_dram_latency_under_load():
    """The transposes are in no fit part (split.yaml): their loads wait the DRAM latency the measured in-flight sweep
    gives at their bytes in flight (32 x 32 blocks, 2 per SM, one 4-byte load in flight per thread: 8 KB per SM of
    1,024-thread blocks, 360-420 ns above the idle latency; devices/h100.yaml and h200.yaml
    measured.dram_latency_under_load). Before that term the class was 22-24% too fast (median, cold) with the shared
    transpose 1.60x too fast on the H200."""
    kernels = ["transpose_naive", "transpose_shared", "transpose_read_scattered"]
    errors = []
    for dataset in ("validation/h100_fidelity.json", "validation/h200.json"):
        errors += [c.time_error for c in accuracy(ROOT / dataset, kernels=kernels).cases]
    assert len(errors) == 20
    factors = [max(1 + e, 1 / (1 + e)) for e in errors]
    assert statistics.median(abs(e) for e in errors) <= 0.20
    assert max(factors) <= 1.35
