"""JUnit XML for `perfmodel check`: one <testcase> per entry x device, as CI systems display it.

A failed case has one <failure> whose ``message`` is its first failure and whose text lists every failure
(what moved, from what to what, by how much, and the limit or tolerance); the passing checks go to
<system-out> so the CI page shows the whole picture of a case.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from perfmodel.check.runner import CaseResult, CheckResult


def _classname(case: CaseResult) -> str:
    return "perfmodel.check." + "".join(c if c.isalnum() or c in "_-" else "_" for c in case.entry)


def failure_type(case: CaseResult) -> str:
    """What failed, for the CI page's failure type: ``launch: does not fit the device``, ``threshold:
    predicted_gflops``, ``regression: cgma, predicted_gflops`` (joined with ``; `` when several kinds failed)."""
    parts = []
    launch = [f for f in case.failures if f.kind == "launch"]
    if launch:
        reason = "does not fit the device" if "does not fit" in (case.error or "") else "fails to run"
        parts.append(f"launch: {reason}")
    for kind, word in (("threshold", "threshold"), ("baseline", "regression")):
        metrics = sorted(dict.fromkeys(f.metric for f in case.failures if f.kind == kind))
        if metrics:
            parts.append(f"{word}: {', '.join(metrics)}")
    return "; ".join(parts)


def junit_tree(result: CheckResult) -> ET.ElementTree:
    summary = result.summary()
    seconds = f"{sum(case.seconds for case in result.cases):.3f}"
    suites = ET.Element("testsuites", name="perfmodel check", tests=str(summary["cases"]),
                        failures=str(summary["failed_cases"]), errors="0", time=seconds)
    suite = ET.SubElement(suites, "testsuite", name=f"perfmodel check {result.budget}",
                          tests=str(summary["cases"]), failures=str(summary["failed_cases"]), errors="0",
                          skipped="0", time=seconds)
    for case in result.cases:
        element = ET.SubElement(suite, "testcase", classname=_classname(case), name=case.name,
                                time=f"{case.seconds:.3f}")
        failures = case.failures
        if failures:
            failure = ET.SubElement(element, "failure", type=failure_type(case), message=failures[0].message)
            lines = [f"{item.kind} {item.metric}: {item.message}" for item in failures]
            lines += [f"note: {note}" for note in case.notes]
            failure.text = "\n".join(lines)
        others = [item for item in case.items if item.status != "fail"]
        params = ", ".join(f"{k}={v}" for k, v in case.params.items()) or "defaults"
        out = [f"kernel {case.kernel} on {case.device}, params {params}"]
        out += [f"{item.status}: {item.message}" for item in others]
        if not failures:
            out += [f"note: {note}" for note in case.notes]
        ET.SubElement(element, "system-out").text = "\n".join(out)
    ET.indent(suites)
    return ET.ElementTree(suites)


def write_junit(result: CheckResult, path: Path | str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    junit_tree(result).write(path, encoding="utf-8", xml_declaration=True)
