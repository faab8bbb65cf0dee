"""Terminal rendering of ``perfmodel sweep`` and ``perfmodel compare``: a table and a GFLOPS chart; and CSV."""
from __future__ import annotations

import csv
import io

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from perfmodel.report.analyze_view import fmt_time, wide_console

CHART_WIDTH = 44


def _label(row: dict, varied: list[str]) -> str:
    if varied == ["device"]:
        return row.get("device", "")
    return "  ".join(f"{name}={row.get(name)}" for name in varied)


def _f(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def sweep_table(doc: dict) -> Table:
    varied = doc["varied"]
    title = (f"{doc['kernel']} on {doc['device']}" if isinstance(doc["device"], str)
             else f"{doc['kernel']} across devices")
    if doc.get("params"):
        title += "  (" + ", ".join(f"{k}={v}" for k, v in doc["params"].items()) + ")"
    table = Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1),
                  collapse_padding=True, pad_edge=False)
    for name in varied:
        table.add_column(name, justify="right" if name != "device" else "left", no_wrap=True)
    for name, justify in (("threads", "right"), ("smem B", "right"), ("regs", "right"), ("blk/SM", "right"),
                          ("warps/SM", "right"), ("occ", "right"), ("limiter", "left"), ("CGMA", "right"),
                          ("seed GFLOPS", "right"), ("predicted", "right"), ("time", "right"), ("bound", "left"),
                          ("", "left")):
        table.add_column(name, justify=justify, no_wrap=True)
    footnotes = []
    for row in doc["points"]:
        keys = [str(row.get(name, "")) for name in varied]
        if not row["valid"]:
            footnotes.append(row["reason"])
            table.add_row(*keys, *["-"] * 12, Text(f"invalid [{len(footnotes)}]", style="red"), style="dim")
            continue
        regs = f"{row['registers_per_thread']}" + ("*" if row.get("registers_source") == "estimate" else "")
        marker = Text("★ best", style="bold green") if row["best"] else Text("")
        if row.get("correct") is False:
            marker.append(" wrong output", style="bold red")
        table.add_row(*keys, f"{row['threads_per_block']:,}", f"{row['shared_memory_per_block']:,}", regs,
                      str(row["blocks_per_sm"]), str(row["warps_per_sm"]), f"{100 * row['occupancy']:.0f}%",
                      row["limiter"], _f(row["cgma"], ".3g"), _f(row["achievable_gflops"], ",.1f"),
                      _f(row["predicted_gflops"], ",.1f"), fmt_time(row["predicted_time_s"]), row["bound"], marker,
                      style="bold" if row["best"] else None)
    captions = [f"[{i}] {reason}" for i, reason in enumerate(footnotes, 1)]
    if any(r.get("registers_source") == "estimate" for r in doc["points"] if r["valid"]):
        captions.append("* registers per thread estimated (pass --regs N or --regs auto)")
    if captions:
        table.caption = "\n".join(captions)
        table.caption_justify = "left"
    return table


def gflops_chart(doc: dict) -> Text:
    """Horizontal bars of predicted GFLOPS per point; ┃ marks the seed model's bound where it fits the scale."""
    rows = doc["points"]
    valid = [r for r in rows if r["valid"]]
    text = Text()
    if not valid:
        return text
    # one scale for both models, so the gap between the seed bound and the bottleneck model shows
    top = max(max(max(r["predicted_gflops"], r["achievable_gflops"]) for r in valid), 1e-12)
    labels = [_label(r, doc["varied"]) for r in rows]
    width = max(len(label) for label in labels)
    text.append("predicted GFLOPS (█) and the seed bound (┃)\n", style="bold")
    for row, label in zip(rows, labels):
        text.append(label.rjust(width) + " │", style="dim")
        if not row["valid"]:
            text.append(" invalid\n", style="red")
            continue
        cells = [" "] * CHART_WIDTH
        filled = int(round(row["predicted_gflops"] / top * CHART_WIDTH))
        for i in range(filled):
            cells[i] = "█"
        seed_pos = row["achievable_gflops"] / top * CHART_WIDTH
        cells[max(0, min(CHART_WIDTH - 1, int(round(seed_pos)) - 1))] = "┃"
        text.append("".join(cells), style="bold green" if row["best"] else "cyan")
        text.append(f" {row['predicted_gflops']:,.1f}")
        text.append(f"  (seed {row['achievable_gflops']:,.1f})", style="dim")
        text.append("\n")
    return text


def render_sweep(doc: dict, console: Console) -> None:
    console = wide_console(console, 144)
    console.print(sweep_table(doc))
    console.print()
    console.print(gflops_chart(doc))


CSV_COLUMNS = ["threads_per_block", "shared_memory_per_block", "registers_per_thread", "registers_source",
               "blocks_per_sm", "warps_per_sm", "occupancy", "limiter", "cgma", "achievable_gflops",
               "predicted_gflops", "predicted_time_s", "bound", "correct", "sampled", "valid", "reason", "best"]


def sweep_csv(doc: dict) -> str:
    buffer = io.StringIO()
    columns = list(doc["varied"]) + CSV_COLUMNS
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in doc["points"]:
        writer.writerow({k: row.get(k, "") for k in columns})
    return buffer.getvalue()
