"""Markdown summary of a `perfmodel check` result, ready to post as a pull-request comment."""
from __future__ import annotations

from pathlib import Path

from perfmodel.check.budget import format_value
from perfmodel.check.runner import CheckResult
from perfmodel.report.check_view import change_text

_ICON = {"fail": ":x: fail", "improved": ":arrow_up: improved", "new": ":new: new",
         "pass": ":white_check_mark: pass"}


#: Rows per list: a pull-request comment must stay under GitHub's 65,536 characters.
MAX_ROWS = 60


def _more(count: int) -> list[str]:
    if count <= MAX_ROWS:
        return []
    return ["", f"... and {count - MAX_ROWS} more (the CI log and the JUnit report list them all)"]


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(rows, header: bool = True) -> list[str]:
    lines = ["| entry | device | metric | value | limit or baseline | change | result |",
             "|---|---|---|---:|---|---:|---|"] if header else []
    for case, item in rows:
        value = "-" if item.kind == "launch" else format_value(item.value)
        limit = item.expected if item.kind != "baseline" else f"baseline {item.expected}"
        lines.append("| " + " | ".join(_cell(c) for c in (case.entry, case.device, f"`{item.metric}`", value,
                                                          limit, change_text(item), _ICON[item.status])) + " |")
    return lines


def _by_entry(cases) -> list[tuple[str, list]]:
    """The cases grouped by budget entry, entries in budget order."""
    groups: dict[str, list] = {}
    for case in cases:
        groups.setdefault(case.entry, []).append(case)
    return list(groups.items())


def check_markdown(result: CheckResult) -> str:
    summary = result.summary()
    lines: list[str] = []
    if result.passed:
        lines.append(f"### :white_check_mark: perfmodel check passed: {summary['cases']} cases, "
                     f"{summary['checks']} checks")
    else:
        lines.append(f"### :x: perfmodel check failed: {summary['failed_cases']} of {summary['cases']} cases "
                     f"({summary['failed_checks']} of {summary['checks']} checks)")
    source = f"Budget `{result.budget}`"
    if result.baseline_compared and result.baseline:
        source += f", baseline `{result.baseline}`"
    elif result.baseline_written and result.baseline:
        source += f"; baseline written to `{result.baseline}`"
    lines += ["", source + ".", ""]

    failed = [(case, item) for case, item in result.rows() if item.status == "fail"]
    if failed:
        lines += ["**What moved**, by entry:", ""]
        shown = 0
        for entry, cases in _by_entry(result.cases):
            items = [(case, item) for case in cases for item in case.items if item.status == "fail"]
            if not items or shown >= MAX_ROWS:
                continue
            first = cases[0]
            params = ", ".join(f"{k}={v}" for k, v in first.params.items()) or "defaults"
            lines += [f"#### {_cell(entry)} (`{_cell(first.kernel)}`, {_cell(params)})", ""]
            for case, item in items[:MAX_ROWS - shown]:
                lines.append(f"- **{_cell(case.device)}**: {_cell(item.message)}")
            shown += len(items)
            lines.append("")
        lines += _more(len(failed))[1:] + ([""] if len(failed) > MAX_ROWS else [])
    notable = [(case, item) for case, item in result.rows() if item.status in ("improved", "new")]
    if notable:
        lines += [f"{summary['improved']} improved and {summary['new']} new metrics "
                  "(run `perfmodel check BUDGET --update-baseline` to record them):", ""]
        lines += _table(notable[:MAX_ROWS]) + _more(len(notable)) + [""]
    notes = [f"{case.name}: {note}" for case in result.cases for note in case.notes] + result.notes
    if notes:
        lines += ["Notes:", ""] + [f"- {_cell(note)}" for note in notes] + [""]
    # one row per case, not per check, for the same reason as MAX_ROWS; an entry's devices together
    lines += ["<details><summary>All cases</summary>", "", "| entry | device | params | checks | failed | result |",
              "|---|---|---|---:|---:|---|"]
    for case in [case for _, cases in _by_entry(result.cases) for case in cases]:
        params = ", ".join(f"{k}={v}" for k, v in case.params.items()) or "defaults"
        lines.append("| " + " | ".join(_cell(c) for c in (
            case.entry, case.device, params, str(len(case.items)), str(len(case.failures)),
            _ICON["pass" if case.passed else "fail"])) + " |")
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def write_markdown(result: CheckResult, path: Path | str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(check_markdown(result), encoding="utf-8")
