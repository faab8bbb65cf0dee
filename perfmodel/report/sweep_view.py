"""Terminal rendering of ``perfmodel sweep`` and ``perfmodel compare``: a table that fits the terminal (columns
dropped by priority, the dropped ones named; ``--csv``/``--json`` keep everything), a best-per-device-and-size
summary, and a terminal plot of the metric against the varied tunable (one series per device); and CSV."""
from __future__ import annotations

import csv
import io

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from perfmodel.report.analyze_view import fmt_time, wide_console


def _f(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _regs(row: dict) -> str:
    return f"{row['registers_per_thread']}" + ("*" if row.get("registers_source") == "estimate" else "")


# (header, justify, cell(row), priority: the highest number is dropped first when the terminal is narrow),
# in display order: the configuration, then the outcome
COLUMNS = [
    ("threads", "right", lambda r: f"{r['threads_per_block']:,}", 9),
    ("smem B", "right", lambda r: f"{r['shared_memory_per_block']:,}", 10),
    ("regs", "right", _regs, 8),
    ("blk/SM", "right", lambda r: str(r["blocks_per_sm"]), 4),
    ("warps/SM", "right", lambda r: str(r["warps_per_sm"]), 11),
    ("occ", "right", lambda r: f"{100 * r['occupancy']:.0f}%", 2),
    ("limiter", "left", lambda r: r["limiter"], 5),
    ("CGMA", "right", lambda r: _f(r["cgma"], ".3g"), 6),
    ("seed GFLOPS", "right", lambda r: _f(r["achievable_gflops"], ",.1f"), 7),
    ("predicted GFLOPS", "right", lambda r: _f(r["predicted_gflops"], ",.1f"), 0),
    ("time", "right", lambda r: fmt_time(r["predicted_time_s"]), 1),
    ("bound", "left", lambda r: r["bound"], 3),
]


def _keys(doc: dict) -> list[str]:
    multi = len(doc.get("devices") or [doc.get("device")]) > 1
    return (["device"] if multi or not doc["varied"] else []) + list(doc["varied"])


def _fits(doc: dict, columns: list, width: int) -> bool:
    from rich.console import Console

    probe = Console(width=10_000, file=io.StringIO())
    return probe.measure(_build_table(doc, columns, width)).maximum <= width


def choose_columns(doc: dict, width: int) -> tuple[list[tuple], list[str]]:
    """The columns that fit ``width`` characters (measured by rich), dropping the least important first; and
    the names dropped."""
    kept = list(COLUMNS)
    while len(kept) > 1 and not _fits(doc, kept, width):
        kept.remove(max(kept, key=lambda c: c[3]))
    dropped = [c[0] for c in COLUMNS if c not in kept]
    return kept, dropped


def _title(doc: dict) -> str:
    devices = doc.get("devices") or ([doc["device"]] if isinstance(doc["device"], str) else doc["device"])
    title = f"{doc['kernel']} on {', '.join(devices)}"
    if doc.get("params"):
        title += "  (" + ", ".join(f"{k}={v}" for k, v in doc["params"].items()) + ")"
    if doc.get("l2", "cold") != "cold":
        title += f"  [L2 {doc['l2']}]"
    return title


def sweep_table(doc: dict, width: int = 200) -> Table:
    columns, dropped = choose_columns(doc, width)
    return _build_table(doc, columns, width, dropped)


def _build_table(doc: dict, columns: list, width: int, dropped: list[str] | None = None) -> Table:
    keys = _keys(doc)
    table = Table(title=_title(doc), title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1),
                  collapse_padding=True, pad_edge=False)
    for name in keys:
        table.add_column(name, justify="left" if name == "device" else "right", no_wrap=True)
    for header, justify, _, _ in columns:
        table.add_column(header, justify=justify, no_wrap=True)
    table.add_column("", justify="left", no_wrap=True)
    footnotes: list[str] = []
    previous_device = None
    for row in doc["points"]:
        cells = [str(row.get(name, "")) for name in keys]
        if previous_device is not None and row.get("device") != previous_device:
            table.add_section()
        previous_device = row.get("device")
        if not row["valid"]:
            reason = row["reason"]
            if reason not in footnotes:
                footnotes.append(reason)
            table.add_row(*cells, *["-"] * len(columns),
                          Text(f"invalid [{footnotes.index(reason) + 1}]", style="red"), style="dim")
            continue
        marker = Text("★ best", style="bold green") if row["best"] else Text("")
        if row.get("correct") is False:
            marker.append(" wrong output", style="bold red")
        table.add_row(*cells, *[c[2](row) for c in columns], marker, style="bold" if row["best"] else None)
    captions = [f"[{i}] {reason}" for i, reason in enumerate(footnotes, 1)]
    per = [p for p in doc.get("best_per") or [] if p != "device" or len(doc.get("devices") or []) > 1]
    if per:
        captions.append("★ best: highest predicted GFLOPS of each " + " and ".join(per))
    if any(r.get("registers_source") == "estimate" for r in doc["points"] if r["valid"]):
        captions.append("* registers per thread estimated (pass --regs N or --regs auto)")
    if dropped is None:   # measuring: the caption wraps, it never widens the table
        return table
    if dropped:
        captions.append(f"columns left out to fit {width} characters: {', '.join(dropped)} (--csv or --json "
                        "has every column)")
    if captions:
        table.caption = "\n".join(captions)
        table.caption_justify = "left"
    return table


def best_summary(doc: dict) -> Table | None:
    """Best tunable values per device (rows) and problem size (columns): the what-if answer at a glance."""
    problem = doc.get("problem_params") or []
    tunables = [n for n in doc["varied"] if n not in problem]
    best = [r for r in doc["points"] if r["best"]]
    devices = doc.get("devices") or []
    if not best or not tunables or (len(devices) < 2 and not problem):
        return None
    sizes = list(dict.fromkeys(tuple(r.get(p) for p in problem) for r in doc["points"]))
    table = Table(title="Best " + ", ".join(tunables) + " (predicted GFLOPS) per device"
                  + (" and " + ", ".join(problem) if problem else ""),
                  title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1))
    table.add_column("device", no_wrap=True)
    for size in sizes:
        table.add_column(", ".join(f"{p}={v}" for p, v in zip(problem, size)) or "best", justify="right")
    for device in devices:
        cells = []
        for size in sizes:
            match = next((r for r in best if r.get("device") == device
                          and tuple(r.get(p) for p in problem) == size), None)
            if match is None:
                cells.append("-")
                continue
            what = str(match[tunables[0]]) if len(tunables) == 1 else ", ".join(f"{t}={match[t]}" for t in tunables)
            cells.append(f"{what} ({match['predicted_gflops']:,.0f})")
        table.add_row(device, *cells)
    return table


def terminal_plot(doc: dict, width: int = 100, height: int = 18, metric: str = "gflops") -> Text | None:
    """The metric against the first varied tunable, one series per device (at the largest problem size)."""
    from perfmodel.report.plots import plot_series

    panels = plot_series(doc, metric)
    if not panels:
        return None
    label, x_name, series = panels[-1]
    if not any(len(xs) > 1 for _, xs, _, _ in series):
        return None
    import plotext as plt

    plt.clear_figure()
    plt.plotsize(max(40, min(width, 120)), height)
    plt.theme("clear")
    colors = ["cyan", "green", "red", "blue", "magenta", "orange", "yellow", "gray"]
    all_x = sorted({x for _, xs, _, _ in series for x in xs})
    for i, (name, xs, ys, _) in enumerate(series):
        if xs:
            plt.plot(xs, ys, label=name, marker="braille", color=colors[i % len(colors)])
    if all_x and min(all_x) > 0 and max(all_x) / min(all_x) >= 8:
        plt.xscale("log")
    plt.xticks(all_x, [str(x) for x in all_x])
    all_y = [y for _, _, ys, _ in series for y in ys if y and y > 0]
    if metric == "time" or (all_y and max(all_y) / min(all_y) > 20):
        plt.yscale("log")
    what = "predicted GFLOPS" if metric == "gflops" else "predicted time (s)"
    plt.title(f"{what} vs {x_name}" + (f" at {label}" if label else ""))
    plt.xlabel(x_name)
    text = Text.from_ansi(plt.build())
    plt.clear_figure()
    return text


def render_sweep(doc: dict, console: Console, width: int | None = None) -> None:
    """Print the table (fitted to ``width``, default: the terminal's; 144 in a pipe or a CI log without
    ``$COLUMNS``), the best-per-device summary and the terminal plot."""
    import os

    if width is None and "COLUMNS" not in os.environ:   # a pipe or a CI log: rich would assume 80 columns
        console = wide_console(console, 144)
    width = width or console.width
    console.print(sweep_table(doc, width))
    summary = best_summary(doc)
    if summary is not None:
        console.print(summary)
    plot = terminal_plot(doc, width=min(width, 110))
    if plot is not None:
        console.print(plot)


CSV_COLUMNS = ["threads_per_block", "total_blocks", "shared_memory_per_block", "registers_per_thread",
               "registers_source", "blocks_per_sm", "warps_per_sm", "occupancy", "limiter", "flops", "cgma",
               "achievable_gflops", "predicted_gflops", "predicted_time_s", "bound", "correct", "sampled", "valid",
               "reason", "best"]


def sweep_csv(doc: dict) -> str:
    buffer = io.StringIO()
    columns = ["device"] + [v for v in doc["varied"] if v != "device"] + CSV_COLUMNS
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in doc["points"]:
        writer.writerow({k: row.get(k, "") for k in columns})
    return buffer.getvalue()
