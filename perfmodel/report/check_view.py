"""Terminal rendering of a `perfmodel check` result: one table, failures first, then what failed and why."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from perfmodel.check.budget import format_value
from perfmodel.check.runner import CheckItem, CheckResult

STATUS_STYLE = {"fail": ("FAIL", "bold red"), "improved": ("improved", "cyan"), "new": ("new", "yellow"),
                "pass": ("pass", "green")}


def change_text(item: CheckItem) -> str:
    """The move from the baseline (``-172.8 (-50.0%)``), or empty for thresholds and new metrics."""
    if item.change is None:
        return ""
    sign = "+" if item.change > 0 else "-" if item.change < 0 else ""
    text = f"{sign}{format_value(abs(item.change))}"
    if item.change_relative is not None and item.change:
        text += f" ({item.change_relative * 100:+.1f}%)"
    return text


def render_check(result: CheckResult, console: Console, verbose: bool = False) -> None:
    """By default the failures (what moved, by how much, against what) and a one-line summary; ``verbose``:
    the whole table of checks and every case's notes first."""
    if verbose:
        table = Table(title=f"perfmodel check {result.budget}", title_justify="left", show_lines=False)
        for column, justify in (("entry", "left"), ("device", "left"), ("metric", "left"), ("value", "right"),
                                ("limit or baseline", "left"), ("change", "right"), ("result", "left")):
            table.add_column(column, justify=justify, overflow="fold")
        for case, item in result.rows():
            label, style = STATUS_STYLE[item.status]
            value = "-" if item.kind == "launch" else format_value(item.value)
            limit = item.expected if item.kind != "baseline" else f"baseline {item.expected}"
            table.add_row(case.entry, case.device, item.metric, value, limit, change_text(item),
                          Text(label, style=style))
        console.print(table)

    failed = [(case, item) for case, item in result.rows() if item.status == "fail"]
    if failed:
        console.print(Text("Failures:", style="bold red"))
        for case, item in failed:
            console.print(Text.assemble("  ", (case.name, "bold"), ": ", item.message), soft_wrap=True)
    if verbose:
        for case in result.cases:
            for note in case.notes:
                console.print(Text.assemble(("note: ", "yellow"), f"{case.name}: {note}"), soft_wrap=True)
    for note in result.notes:
        console.print(Text.assemble(("note: ", "yellow"), note), soft_wrap=True)

    summary = result.summary()
    if result.passed:
        line = Text(f"PASS: {summary['cases']} cases, {summary['checks']} checks", style="bold green")
    else:
        line = Text(f"FAIL: {summary['failed_cases']} of {summary['cases']} cases failed "
                    f"({summary['failed_checks']} of {summary['checks']} checks)", style="bold red")
    extras = [f"{summary[k]} {k}" for k in ("improved", "new") if summary[k]]
    if extras:
        line.append(f"; {', '.join(extras)}", style="default")
    if not verbose:
        line.append("  (-v for every check)", style="dim")
    console.print(line)
