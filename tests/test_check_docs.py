"""docs/ci.md stays true: its example budget validates, its CI snippets are valid YAML that run the check, and
its table of default tolerances is the code's."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from perfmodel.check import DEFAULT_TOLERANCES, budget_from_dict

DOC = Path(__file__).resolve().parent.parent / "docs" / "ci.md"


def yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)


def test_example_budget_validates():
    budget = budget_from_dict(yaml.safe_load(yaml_blocks()[0]), "example.yaml")
    entry = budget.entries[0]
    assert entry.id == "tiled16" and [t.device for t in entry.targets()] == ["g80", "h100"]
    assert entry.targets()[1].thresholds["predicted_gflops"].min == 1000


def test_ci_snippets_parse_and_run_perfmodel_check():
    workflow = yaml.safe_load(yaml_blocks()[1])
    steps = workflow["jobs"]["perfmodel-check"]["steps"]
    assert any("perfmodel check perf-budget.yaml" in step.get("run", "") for step in steps)
    gitlab = yaml.safe_load(yaml_blocks()[2])["perfmodel-check"]
    assert any(line.startswith("perfmodel check perf-budget.yaml") for line in gitlab["script"])
    assert gitlab["artifacts"]["reports"]["junit"] == "perf-junit.xml"
    yaml.safe_load(yaml_blocks()[3])  # the optional after_script


def test_default_tolerance_table_matches_the_code():
    text = DOC.read_text()
    for metric, rule in DEFAULT_TOLERANCES.items():
        row = next(line for line in text.splitlines() if line.startswith("|") and f"`{metric}`" in line)
        assert rule.better in row, row
        amount = f"{rule.relative * 100:g}%" if rule.relative else "exact"
        assert amount in row, row
