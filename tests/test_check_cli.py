"""End-to-end `perfmodel check` with the real analyzer, through the console script's `main()` (so the exit code
2 path for invalid input is the real one): exit codes 0/1/2, JUnit, the baseline round trip, a regression made
on purpose (TILE_WIDTH=8 against a TILE_WIDTH=16 baseline), a launch that does not fit, and the project's own
budget. Sizes are small (Width=64) to keep it fast. The `cli` fixture (tests/conftest.py) runs the console
script in-process."""
from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from perfmodel.paths import shipped_dir

REPO = Path(__file__).resolve().parent.parent
TILED = {"name": "tiled", "kernel": "matmul_tiled", "device": "g80", "params": {"TILE_WIDTH": 16, "Width": 64},
         "thresholds": {"correct": True, "occupancy.occupancy": {"min": 0.5}}}


def tiled_on(devices: list[str], **changes) -> dict:
    """The TILED entry on several devices, with fields changed."""
    entry = {k: v for k, v in TILED.items() if k != "device"}
    return {**entry, "devices": devices, **changes}


def write_budget(folder: Path, entries: list[dict], name: str = "budget.yaml", **extra) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump({**extra, "entries": entries}, sort_keys=False))
    return path


def test_exit_codes_pass_fail_invalid(tmp_path, cli):
    passing = write_budget(tmp_path, [TILED], "pass.yaml")
    code, out, _ = cli("check", passing)
    assert code == 0, out
    assert "PASS: 1 cases, 2 checks" in out

    failing = write_budget(tmp_path, [dict(TILED, thresholds={"predicted_gflops": {"min": 1e6}})], "fail.yaml")
    code, out, _ = cli("check", failing)
    assert code == 1
    assert "FAIL: 1 of 1 cases failed" in out and "is below the minimum 1,000,000" in out

    for entry, complaint in [
        (dict(TILED, device="no_such_gpu"), "unknown device 'no_such_gpu'"),
        (dict(TILED, kernel="specs/missing.yaml"), "no such kernel spec file"),
        (dict(TILED, params={"TILE_SIZE": 16}), "TILE_SIZE"),                      # not a param of the spec
        (dict(TILED, thresholds={"occupancy.occupancy_": {"min": 1}}), "'occupancy_' is not a field"),
        ({"kernel": "matmul_tiled"}, "give either 'device'"),                     # schema
    ]:
        invalid = write_budget(tmp_path, [entry], "invalid.yaml")
        code, out, err = cli("check", invalid)
        assert code == 2, (entry, out, err)
        assert "invalid.yaml" in err and complaint in err, err


def test_junit_parses_and_carries_the_failure_text(tmp_path, cli):
    budget = write_budget(tmp_path, [tiled_on(["g80", "h100"], thresholds={"predicted_gflops": {"min": 1e6},
                                                                             "correct": True})])
    junit = tmp_path / "reports" / "perf.xml"
    code, _, _ = cli("check", budget, "--junit", junit, "--markdown", tmp_path / "summary.md")
    assert code == 1
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "2"
    case = suite.find("testcase[@name='tiled on g80']")
    failure = case.find("failure")
    assert failure.get("type") == "threshold: predicted_gflops"   # says what failed
    assert "predicted_gflops =" in failure.get("message") and "is below the minimum 1,000,000" in failure.text
    assert "pass: correct = true" in case.find("system-out").text
    assert "### :x: perfmodel check failed: 2 of 2 cases" in (tmp_path / "summary.md").read_text()


def test_baseline_round_trip_then_tile_width_8_regression(tmp_path, cli):
    budget = write_budget(tmp_path, [TILED], baseline="perf-baseline.json")
    code, out, _ = cli("check", budget, "--update-baseline")
    assert code == 0, out
    stored = json.loads((tmp_path / "perf-baseline.json").read_text())
    metrics = stored["entries"]["tiled"]["devices"]["g80"]
    assert stored["entries"]["tiled"]["params"] == {"TILE_WIDTH": 16, "Width": 64}
    assert metrics["correct"] is True and metrics["cgma"] == pytest.approx(16.0)  # the seed's tiled CGMA
    baseline_gflops = metrics["predicted_gflops"]

    code, out, _ = cli("check", budget, "--json")  # update, then check: passes, every metric unchanged
    assert code == 0
    document = json.loads(out)
    checks = document["cases"][0]["checks"]
    assert document["baseline_compared"] and {c["status"] for c in checks} == {"pass"}
    assert {c["metric"] for c in checks if c["kind"] == "baseline"} >= {"predicted_gflops", "cgma", "correct"}

    # the regression made on purpose: TILE_WIDTH=8 against the TILE_WIDTH=16 baseline
    junit = tmp_path / "junit.xml"
    code, out, _ = cli("check", budget, "-D", "TILE_WIDTH=8", "--json", "--junit", junit)
    assert code == 1
    case = json.loads(out)["cases"][0]
    moved = {c["metric"]: c for c in case["checks"] if c["status"] == "fail"}
    assert moved["predicted_gflops"]["value"] < baseline_gflops
    assert moved["cgma"]["value"] == pytest.approx(8.0) and moved["cgma"]["change_relative"] == pytest.approx(-0.5)
    assert "predicted_gflops fell from" in moved["predicted_gflops"]["message"]
    assert "params differ from the baseline's: TILE_WIDTH 16 -> 8" in case["notes"]
    failure = ET.parse(junit).getroot().find("testsuite/testcase/failure")
    assert "cgma fell from 16 to 8 (-8, -50.0%)" in failure.text

    # the same regression made by editing the budget instead of -D
    budget.write_text(budget.read_text().replace("TILE_WIDTH: 16", "TILE_WIDTH: 8"))
    code, out, _ = cli("check", budget)
    assert code == 1 and "predicted_gflops fell from" in out


def test_tile_that_no_longer_fits_the_device_fails_with_the_reason(tmp_path, cli):
    budget = write_budget(tmp_path, [tiled_on(["g80", "h100"], params={"TILE_WIDTH": 32, "Width": 64})])
    code, out, _ = cli("check", budget, "--json")
    assert code == 1
    g80, h100 = json.loads(out)["cases"]
    assert not g80["passed"] and "does not fit the device" in g80["error"] and "1,024 threads" in g80["error"]
    assert h100["passed"]


def test_spec_path_relative_to_the_budget(tmp_path, cli):
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("matmul_tiled.yaml", "matmul_tiled.cu"):
        shutil.copy(shipped_dir("kernels_spec") / name, specs / name)
    perf = tmp_path / "perf"
    perf.mkdir()
    budget = write_budget(perf, [dict(TILED, kernel="../specs/matmul_tiled.yaml")])
    code, out, _ = cli("check", budget)
    assert code == 0, out


def test_the_projects_own_budget_covers_every_shipped_kernel_and_device():
    from perfmodel.check import load_baseline, load_budget
    from perfmodel.devices import list_devices
    from perfmodel.spec import list_specs

    budget = load_budget(REPO / "perf" / "budget.yaml")
    kernels = {entry.kernel for entry in budget.entries}
    devices = {target.device for entry in budget.entries for target in entry.targets()}
    assert kernels >= {spec.name for spec in list_specs()}
    assert devices >= {device.id for device in list_devices()}
    assert budget.default_baseline_path() == REPO / "perf" / "baseline.json"
    baseline = load_baseline(REPO / "perf" / "baseline.json")
    recorded = {(name, device) for name, entry in baseline.entries.items() for device in entry.devices}
    assert recorded == {(entry.id, target.device) for entry in budget.entries for target in entry.targets()}


def test_register_increase_lowers_occupancy_and_fails(tmp_path, cli):
    """The seed's 16x16 tiles on G80: 10 registers per thread fit 3 blocks (768 threads); 12 fit only 2."""
    budget = write_budget(tmp_path, [dict(TILED, regs=10)])
    assert cli("check", budget, "--update-baseline")[0] == 0
    budget.write_text(budget.read_text().replace("regs: 10", "regs: 12"))
    code, out, _ = cli("check", budget, "--json")
    assert code == 1
    moved = {c["metric"]: c for c in json.loads(out)["cases"][0]["checks"] if c["status"] == "fail"}
    assert moved["occupancy.blocks_per_sm"]["baseline"] == 3 and moved["occupancy.blocks_per_sm"]["value"] == 2
    assert "occupancy.occupancy fell from 1 to 0.6667" in moved["occupancy.occupancy"]["message"]


def test_more_bank_conflicts_in_an_edited_kernel_fail(tmp_path, cli):
    """A kernel edit that stores the d_N tile transposed and reads it along rows: still correct, but a warp's
    reads of Nds[tx][k] hit a few banks TILE_WIDTH floats apart - more shared wavefronts than the baseline."""
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("matmul_tiled.yaml", "matmul_tiled.cu"):
        shutil.copy(shipped_dir("kernels_spec") / name, specs / name)
    budget = write_budget(tmp_path, [dict(TILED, kernel="specs/matmul_tiled.yaml")])
    assert cli("check", budget, "--update-baseline")[0] == 0

    source = specs / "matmul_tiled.cu"
    text = source.read_text()
    edited = text.replace("Nds[ty][tx] = d_N[", "Nds[tx][ty] = d_N[").replace("Nds[k][tx]", "Nds[tx][k]")
    assert edited.count("Nds[tx]") == 2, "the shipped kernel changed: update this test's edit"
    source.write_text(edited)
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a new mtime for the caches

    code, out, _ = cli("check", budget, "--json")
    assert code == 1
    case = json.loads(out)["cases"][0]
    moved = {c["metric"]: c for c in case["checks"] if c["status"] == "fail"}
    assert "counts.shared.load_wavefronts" in moved, case["checks"]
    assert moved["counts.shared.load_wavefronts"]["value"] > moved["counts.shared.load_wavefronts"]["baseline"]
    assert {c["metric"]: c["status"] for c in case["checks"]}["correct"] == "pass"
