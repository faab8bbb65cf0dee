"""Unit tests of the `perfmodel check` logic with a fake analyzer (the end-to-end tests with the real analyzer
are in test_check_cli.py): budget schema and errors, thresholds, tolerances, baseline comparison, the
failure/exit-code policy, JUnit, Markdown and JSON output."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from perfmodel.check import (
    Baseline,
    CheckInputError,
    InvalidBaselineError,
    InvalidBudgetError,
    Threshold,
    Tolerance,
    apply_overrides,
    baseline_from,
    budget_from_dict,
    load_baseline,
    load_budget,
    lookup,
    run_check,
    write_baseline,
)
from perfmodel.check.runner import compare_with_baseline
from perfmodel.errors import BudgetError, OccupancyError, SimulationError, SpecError
from perfmodel.report.junit import junit_tree
from perfmodel.report.markdown import check_markdown


def fake_analyze(kernel, device, params=None, regs=None, sample=None):
    """A stand-in with the shape of ``Analysis.to_json()``: GFLOPS grow with the tile, the G80 takes at most
    512 threads per block, kernel 'faulty' goes out of bounds, kernel 'missing' does not exist."""
    params = dict(params or {})
    tile = params.get("TILE_WIDTH", 16)
    if kernel.endswith("missing"):
        raise SpecError(f"unknown kernel '{kernel}'")
    if kernel == "faulty":
        raise SimulationError("thread (3,0,0) of block (0,0,0) reads d_M[4096] out of bounds")
    if device == "g80" and tile * tile > 512:
        raise OccupancyError(f"{tile * tile} threads per block exceed the G80's 512")
    peak = {"g80": 345.6, "h100": 60000.0}.get(device, 1000.0)
    gflops = min(peak, 21.6 * tile)
    return {
        "kernel": kernel, "device": device, "params": params, "correct": params.get("broken", 0) == 0,
        "cgma": float(tile), "achievable_gflops": gflops, "predicted_gflops": gflops,
        "predicted_time_s": 1.0 / gflops, "bound": "dram" if gflops < peak else "compute",
        "occupancy": {"blocks_per_sm": 3, "warps_per_sm": 24, "threads_per_sm": 768,
                      "occupancy": 1.0 if tile >= 16 else 0.5, "limiters": ["warps"],
                      "limits": {"warps": 3, "registers": 4, "shared_memory": 8, "blocks": 8}},
        "counts": {"flops": 2 * 64 ** 3, "global": {"load_sectors": 32768 // tile, "store_sectors": 512},
                   "shared": {"load_wavefronts": 4096 * params.get("conflicts", 1), "store_wavefronts": 512}},
    }


def write_budget(folder: Path, data: dict, name: str = "budget.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


TILED = {"name": "tiled", "kernel": "matmul_tiled", "devices": ["g80", "h100"],
         "params": {"TILE_WIDTH": 16, "Width": 64},
         "thresholds": {"predicted_gflops": {"min": 300}, "occupancy.occupancy": {"min": 0.5}, "correct": True}}


# ---------------------------------------------------------------------------------------------------------
# schema


def test_budget_loads_with_defaults_and_device_specific_thresholds(tmp_path):
    entry = dict(TILED, devices=["g80", {"device": "h100", "thresholds": {"predicted_gflops": {"min": 1000}}}])
    budget = load_budget(write_budget(tmp_path, {"entries": [entry, {"kernel": "vec_add", "device": "g80"}]}))
    assert [e.id for e in budget.entries] == ["tiled", "vec_add"]
    g80, h100 = budget.entries[0].targets()
    assert g80.thresholds["predicted_gflops"].min == 300
    assert h100.thresholds["predicted_gflops"].min == 1000
    assert h100.thresholds["correct"].equals is True
    assert budget.default_baseline_path() == tmp_path / "budget.baseline.json"


def test_kernel_and_device_paths_are_relative_to_the_budget(tmp_path):
    folder = tmp_path / "perf"
    folder.mkdir()
    budget = load_budget(write_budget(folder, {"baseline": "base/b.json",
                                               "entries": [{"kernel": "specs/k.yaml", "device": "g80"}]}))
    assert budget.resolve("specs/k.yaml") == str((folder / "specs/k.yaml").resolve())
    assert budget.resolve("matmul_tiled") == "matmul_tiled"
    assert budget.resolve("../devices/mine.yml") == str((tmp_path / "devices/mine.yml").resolve())
    assert budget.default_baseline_path() == folder.resolve() / "base/b.json"


@pytest.mark.parametrize("entry, field", [
    ({"kernel": "k"}, "entries[0]"),                                          # no device
    ({"kernel": "k", "device": "g80", "devices": ["h100"]}, "entries[0]"),    # both
    ({"kernel": "k", "devices": []}, "entries[0]"),
    ({"kernel": "k", "devices": ["g80", "g80"]}, "entries[0]"),
    ({"kernel": "k", "device": "g80", "thresholds": {"cgma": {"min": "lots"}}}, "entries[0].thresholds.cgma.min"),
    ({"kernel": "k", "device": "g80", "thresholds": {"cgma": {"min": 5, "max": 1}}}, "entries[0].thresholds.cgma"),
    ({"kernel": "k", "device": "g80", "thresholds": {"cgma": {"above": 5}}}, "entries[0].thresholds.cgma.above"),
    ({"kernel": "k", "device": "g80", "thresholds": {"a..b": {"min": 1}}}, "entries[0].thresholds"),
    ({"kernel": "k", "device": "g80", "tolerances": {"cgma": {"better": "up"}}}, "entries[0].tolerances.cgma"),
    ({"kernel": "k", "device": "g80", "tolerances": {"cgma": {"relative": -1}}}, "entries[0].tolerances.cgma"),
    ({"kernel": "k", "device": "g80", "params": {"TILE_WIDTH": "big"}}, "entries[0].params.TILE_WIDTH"),
    ({"kernel": "k", "device": "g80", "typo": 1}, "entries[0].typo"),
])
def test_invalid_budget_names_file_field_and_line(tmp_path, entry, field):
    path = write_budget(tmp_path, {"entries": [{"kernel": "ok", "device": "g80"}, entry][1:]})
    with pytest.raises(InvalidBudgetError) as info:
        load_budget(path)
    message = str(info.value)
    assert isinstance(info.value, BudgetError) and info.value.exit_code == 2
    assert str(path) in message and f"field '{field}" in message
    assert re.search(rf"{re.escape(str(path))}:\d+: field", message)  # with the YAML line


def test_invalid_budget_files(tmp_path):
    with pytest.raises(InvalidBudgetError, match="budget file not found"):
        load_budget(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("entries: [\n  {kernel: x\n")
    with pytest.raises(InvalidBudgetError, match=r"bad.yaml:\d+:\d+: not valid YAML"):
        load_budget(bad)
    with pytest.raises(InvalidBudgetError, match="'entries'"):
        budget_from_dict({"version": 1}, "b.yaml")
    with pytest.raises(InvalidBudgetError, match="version"):
        budget_from_dict({"version": 2, "entries": [{"kernel": "k", "device": "g80"}]}, "b.yaml")
    with pytest.raises(InvalidBudgetError, match="expected a mapping"):
        budget_from_dict(["a"], "b.yaml")
    with pytest.raises(InvalidBudgetError, match="distinct 'name's"):
        budget_from_dict({"entries": [{"kernel": "k", "device": "g80"}, {"kernel": "k", "device": "h100"}]})


# ---------------------------------------------------------------------------------------------------------
# thresholds, tolerances, lookup


def test_lookup_follows_dotted_paths_and_explains_misses():
    doc = {"counts": {"shared": {"load_wavefronts": 7}}, "items": [1, 2]}
    assert lookup(doc, "counts.shared.load_wavefronts") == 7
    assert lookup(doc, "items.1") == 2
    with pytest.raises(KeyError, match=r"'load_wavefrnts' is not a field of counts.shared \(it has: load_wavefronts\)"):
        lookup(doc, "counts.shared.load_wavefrnts")


def test_threshold_messages_say_by_how_much():
    assert Threshold(min=300).evaluate("predicted_gflops", 345.6) == (True, "predicted_gflops = 345.6 within >= 300")
    ok, message = Threshold(min=300).evaluate("predicted_gflops", 172.8)
    assert not ok and message == ("predicted_gflops = 172.8 is below the minimum 300 (short by 127.2, -42.4%)")
    ok, message = Threshold(max=1000).evaluate("counts.shared.load_wavefronts", 1500)
    assert not ok and "above the maximum 1,000 (over by 500, +50.0%)" in message
    assert Threshold.model_validate(True).evaluate("correct", True)[0]
    assert not Threshold.model_validate(True).evaluate("correct", False)[0]
    assert not Threshold.model_validate(True).evaluate("correct", 1)[0]  # a count of 1 is not "true"
    assert Threshold.model_validate("dram").evaluate("bound", "dram")[0]
    assert Threshold.model_validate(0.5).evaluate("occupancy.occupancy", 0.5)[0]
    assert not Threshold(min=1).evaluate("correct", None)[0]
    with pytest.raises(TypeError, match="not a number"):
        Threshold(min=1).evaluate("bound", "dram")


def test_baseline_comparison_directions_and_tolerances():
    higher = Tolerance(better="higher", relative=0.02)
    assert compare_with_baseline("g", 99.0, 100.0, higher).status == "pass"      # -1% within 2%
    item = compare_with_baseline("g", 50.0, 100.0, higher)
    assert item.status == "fail" and item.change == -50 and item.change_relative == pytest.approx(-0.5)
    assert "g fell from 100 to 50 (-50, -50.0%)" in item.message and "tolerance 2%" in item.message
    assert compare_with_baseline("g", 150.0, 100.0, higher).status == "improved"
    lower = Tolerance(better="lower", absolute=10)
    assert compare_with_baseline("w", 110, 100, lower).status == "pass"
    assert compare_with_baseline("w", 111, 100, lower).status == "fail"
    both = Tolerance(better="lower", relative=0.01, absolute=5)  # the larger allowance wins
    assert compare_with_baseline("w", 104, 100, both).status == "pass"
    exact = Tolerance(better="higher")
    assert compare_with_baseline("correct", False, True, exact).status == "fail"
    assert compare_with_baseline("o", 0.5, 0.5 + 1e-15, exact).status == "pass"   # float noise is no move
    assert compare_with_baseline("g", 1.0, None, higher).status == "new"
    assert compare_with_baseline("g", None, 1.0, higher).status == "fail"


def test_tolerance_layers_defaults_budget_entry(tmp_path):
    budget = budget_from_dict({
        "tolerances": {"predicted_gflops": {"relative": 0.1}, "cgma": False, "occupancy.warps_per_sm":
                       {"better": "higher"}},
        "entries": [{"kernel": "k", "device": "g80", "tolerances": {"predicted_gflops": {"absolute": 3}}},
                    {"kernel": "j", "device": "g80", "tolerances": {"bound": {"relative": 0}}}]})
    rules = budget.tolerances_for(budget.entries[0])
    assert rules["predicted_gflops"] == Tolerance(better="higher", absolute=3)  # direction from the default
    assert "cgma" not in rules and rules["occupancy.warps_per_sm"].better == "higher"
    assert rules["counts.shared.load_wavefronts"].better == "lower"
    with pytest.raises(CheckInputError, match="'bound'.*must declare 'better"):
        budget.tolerances_for(budget.entries[1])


# ---------------------------------------------------------------------------------------------------------
# the runner


def run(tmp_path, data, baseline=None):
    return run_check(load_budget(write_budget(tmp_path, data)), baseline=baseline, analyze=fake_analyze)


def test_passing_budget(tmp_path):
    result = run(tmp_path, {"entries": [TILED]})
    assert result.passed and result.exit_code == 0
    assert [case.name for case in result.cases] == ["tiled on g80", "tiled on h100"]
    assert {item.metric for item in result.cases[0].items} == {"predicted_gflops", "occupancy.occupancy", "correct"}
    assert result.cases[0].metrics["predicted_gflops"] == pytest.approx(345.6)
    assert "counts.global.load_sectors" in result.cases[0].metrics and "counts.local.loads" not in result.cases[0].metrics


def test_failing_threshold_and_failures_first(tmp_path):
    entry = dict(TILED, params={"TILE_WIDTH": 8, "Width": 64})
    result = run(tmp_path, {"entries": [entry]})
    assert result.exit_code == 1
    failures = result.cases[0].failures
    assert [f.metric for f in failures] == ["predicted_gflops"]
    assert "172.8 is below the minimum 300" in failures[0].message
    statuses = [item.status for _, item in result.rows()]  # both devices miss 300: 2 failures, listed first
    assert statuses == ["fail", "fail"] + ["pass"] * 4


def test_launch_that_does_not_fit_is_a_failure_not_an_error(tmp_path):
    entry = dict(TILED, params={"TILE_WIDTH": 32, "Width": 64})
    result = run(tmp_path, {"entries": [entry, {"name": "oob", "kernel": "faulty", "device": "h100"}]})
    assert result.exit_code == 1
    g80, h100, oob = result.cases
    assert g80.error and "1024 threads per block exceed the G80's 512" in g80.error
    assert [item.kind for item in g80.failures] == ["launch"]
    assert h100.passed
    assert "fails to run" in oob.error and "out of bounds" in oob.error


def test_invalid_spec_and_unknown_metrics_are_input_errors(tmp_path):
    with pytest.raises(CheckInputError, match="entry 'missing' on device 'g80': unknown kernel") as info:
        run(tmp_path, {"entries": [{"kernel": "missing", "device": "g80"}]})
    assert info.value.exit_code == 2
    with pytest.raises(CheckInputError, match="threshold 'occupancy.occupncy'.*it has: blocks_per_sm"):
        run(tmp_path, {"entries": [{"kernel": "k", "device": "g80",
                                    "thresholds": {"occupancy.occupncy": {"min": 0.5}}}]})
    with pytest.raises(CheckInputError, match="threshold 'bound'.*not a number"):
        run(tmp_path, {"entries": [{"kernel": "k", "device": "g80", "thresholds": {"bound": {"min": 1}}}]})
    with pytest.raises(CheckInputError, match="tolerance 'counts.nope'"):
        run(tmp_path, {"entries": [{"kernel": "k", "device": "g80",
                                    "tolerances": {"counts.nope": {"better": "lower"}}}]})


def test_baseline_round_trip_and_regression(tmp_path):
    budget = load_budget(write_budget(tmp_path, {"entries": [TILED]}))
    first = run_check(budget, analyze=fake_analyze)
    write_baseline(baseline_from(first, budget), tmp_path / "b.json")
    stored = json.loads((tmp_path / "b.json").read_text())
    assert stored["format"] == "perfmodel-baseline" and stored["budget"] == "budget.yaml"
    assert stored["entries"]["tiled"]["params"] == {"TILE_WIDTH": 16, "Width": 64}
    assert stored["entries"]["tiled"]["devices"]["g80"]["predicted_gflops"] == pytest.approx(345.6)

    again = run_check(budget, baseline=load_baseline(tmp_path / "b.json"), analyze=fake_analyze)
    assert again.passed and again.baseline_compared
    assert {item.status for case in again.cases for item in case.items} == {"pass"}

    # more bank conflicts on the same tile: the thresholds pass, the baseline catches it
    worse = apply_overrides(budget, {"conflicts": 2}, known_params=lambda kernel: {"conflicts"})
    result = run_check(worse, baseline=load_baseline(tmp_path / "b.json"), analyze=fake_analyze)
    assert result.exit_code == 1
    failure = result.cases[0].failures[0]
    assert failure.kind == "baseline" and failure.metric == "counts.shared.load_wavefronts"
    assert "rose from 4,096 to 8,192 (+4,096, +100.0%)" in failure.message
    assert result.cases[0].notes == ["params differ from the baseline's: conflicts default -> 2"]


def test_entry_missing_from_baseline_is_noted_not_failed(tmp_path):
    result = run(tmp_path, {"entries": [TILED]}, baseline=Baseline())
    assert result.passed
    assert "not in the baseline" in result.cases[0].notes[0]


def test_baseline_records_the_budget_no_longer_checks_are_noted(tmp_path):
    budget = load_budget(write_budget(tmp_path, {"entries": [TILED]}))
    baseline = baseline_from(run_check(budget, analyze=fake_analyze), budget)
    fewer = budget.model_copy(update={"entries": [budget.entries[0].model_copy(update={"devices": ["g80"]})]})
    result = run_check(fewer, baseline=baseline, analyze=fake_analyze)
    assert result.passed
    assert result.notes == ["the baseline also records tiled on h100, which the budget no longer checks; "
                            "--update-baseline drops them"]


def test_update_leaves_out_cases_without_metrics(tmp_path):
    budget = load_budget(write_budget(tmp_path, {"entries": [dict(TILED, params={"TILE_WIDTH": 32})]}))
    baseline = baseline_from(run_check(budget, analyze=fake_analyze), budget)
    assert list(baseline.entries["tiled"].devices) == ["h100"]


def test_overrides_apply_only_where_the_kernel_has_the_param(tmp_path):
    budget = budget_from_dict({"entries": [TILED, {"kernel": "vec_add", "device": "g80", "params": {"n": 5}}]})
    known = {"matmul_tiled": {"TILE_WIDTH", "Width"}, "vec_add": {"n"}}.__getitem__
    changed = apply_overrides(budget, {"TILE_WIDTH": 8}, known_params=known)
    assert changed.entries[0].params == {"TILE_WIDTH": 8, "Width": 64}
    assert changed.entries[1].params == {"n": 5}
    with pytest.raises(CheckInputError, match="-D BLOCK: no entry"):
        apply_overrides(budget, {"BLOCK": 8}, known_params=known)


def test_invalid_baseline_file(tmp_path):
    with pytest.raises(InvalidBaselineError, match="not found; create it with"):
        load_baseline(tmp_path / "none.json")
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(InvalidBaselineError, match=r"x.json:1:2: not valid JSON"):
        load_baseline(tmp_path / "x.json")
    (tmp_path / "y.json").write_text('{"format": "other"}')
    with pytest.raises(InvalidBaselineError, match="not a perfmodel baseline"):
        load_baseline(tmp_path / "y.json")


# ---------------------------------------------------------------------------------------------------------
# reports


def test_junit_and_markdown_carry_the_failure_text(tmp_path):
    budget = load_budget(write_budget(tmp_path, {"entries": [TILED]}))
    write_baseline(baseline_from(run_check(budget, analyze=fake_analyze), budget), tmp_path / "b.json")
    worse = apply_overrides(budget, {"TILE_WIDTH": 8}, known_params=lambda kernel: {"TILE_WIDTH"})
    result = run_check(worse, baseline=load_baseline(tmp_path / "b.json"), analyze=fake_analyze)
    result.baseline = str(tmp_path / "b.json")

    path = tmp_path / "junit.xml"
    junit_tree(result).write(path, encoding="utf-8", xml_declaration=True)
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "2"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["tiled on g80", "tiled on h100"]
    failure = cases[0].find("failure")
    assert "predicted_gflops = 172.8 is below the minimum 300" in failure.get("message")
    assert "predicted_gflops fell from 345.6 to 172.8 (-172.8, -50.0%)" in failure.text
    assert "TILE_WIDTH 16 -> 8" in failure.text

    text = check_markdown(result)
    assert text.startswith("### :x: perfmodel check failed: 2 of 2 cases")
    # grouped by entry: the entry once, then each device's failures
    assert text.count("#### tiled (`matmul_tiled`, TILE_WIDTH=8, Width=64)") == 1
    assert "- **g80**: predicted_gflops fell from 345.6 to 172.8 (-172.8, -50.0%)" in text
    assert failure.get("type") == ("threshold: predicted_gflops; regression: achievable_gflops, cgma, "
                                   "counts.global.load_sectors, occupancy.occupancy, predicted_gflops, "
                                   "predicted_time_s")
    assert "| tiled | g80 | TILE_WIDTH=8, Width=64 | 14 | 7 | :x: fail |" in text  # the per-case table


def test_report_of_a_pass(tmp_path):
    result = run(tmp_path, {"entries": [TILED]})
    root = junit_tree(result).getroot()
    assert root.get("failures") == "0" and root.find("testsuite/testcase/failure") is None
    assert "pass: predicted_gflops = 345.6" in root.find("testsuite/testcase/system-out").text
    assert check_markdown(result).startswith("### :white_check_mark: perfmodel check passed: 2 cases, 6 checks")


# ---------------------------------------------------------------------------------------------------------
# the CLI, with the fake analyzer (real specs and devices are not needed here)


@pytest.fixture
def fake_cli(monkeypatch):
    import typer

    import perfmodel.check.runner as runner
    from perfmodel.cli import check as check_cli

    app = typer.Typer()
    app.callback()(lambda: None)  # a command group, as in perfmodel's own app
    check_cli.register(app)

    monkeypatch.setattr(runner, "_default_analyze", lambda: fake_analyze)
    monkeypatch.setattr(runner, "validate_references", lambda budget: None)
    monkeypatch.setattr("perfmodel.check.validate_references", lambda budget: None)
    monkeypatch.setattr(runner, "spec_params", lambda kernel: {"TILE_WIDTH", "Width"})

    def invoke(*args):
        return CliRunner().invoke(app, ["check", *map(str, args)], catch_exceptions=False)

    return invoke


def test_cli_exit_codes_and_outputs(tmp_path, fake_cli):
    from perfmodel.errors import PerfmodelError

    good = write_budget(tmp_path, {"entries": [TILED]}, "good.yaml")
    bad = write_budget(tmp_path, {"entries": [dict(TILED, params={"TILE_WIDTH": 8})]}, "bad.yaml")
    junit = tmp_path / "out" / "junit.xml"
    md = tmp_path / "out" / "summary.md"

    result = fake_cli(good, "--junit", junit, "--markdown", md)
    assert result.exit_code == 0, result.output
    assert "PASS: 2 cases, 6 checks" in result.output and "no baseline at" in result.output
    assert ET.parse(junit).getroot().get("failures") == "0" and md.read_text().startswith("### :white_check")

    result = fake_cli(bad, "--junit", junit)
    assert result.exit_code == 1
    assert "FAIL: 2 of 2 cases failed" in result.output and "below the minimum 300" in result.output
    assert ET.parse(junit).getroot().get("failures") == "2"

    invalid = write_budget(tmp_path, {"entries": [{"kernel": "k"}]}, "invalid.yaml")
    with pytest.raises(PerfmodelError) as info:  # main() turns it into exit code 2
        fake_cli(invalid)
    assert info.value.exit_code == 2 and "give either 'device'" in str(info.value)


def test_cli_update_then_check_then_regression_json(tmp_path, fake_cli):
    budget = write_budget(tmp_path, {"entries": [TILED]})
    result = fake_cli(budget, "--update-baseline")
    assert result.exit_code == 0 and (tmp_path / "budget.baseline.json").exists()
    assert "baseline written to" in result.output

    result = fake_cli(budget, "--json")
    assert result.exit_code == 0
    document = json.loads(result.output)
    assert document["passed"] and document["baseline_compared"] and document["summary"]["failed_checks"] == 0

    result = fake_cli(budget, "-D", "TILE_WIDTH=8", "--json")
    assert result.exit_code == 1
    document = json.loads(result.output)
    moved = [c for c in document["cases"][0]["checks"] if c["kind"] == "baseline" and c["status"] == "fail"]
    assert {c["metric"] for c in moved} >= {"predicted_gflops", "cgma", "occupancy.occupancy"}
