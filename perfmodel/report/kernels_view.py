"""Renderers for ``perfmodel kernels list`` / ``show``: one data function per view (used by ``--json``) and one
rich renderer that draws the same data, so the terminal and the JSON never drift apart."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

# The per-line columns of the source view, as Nsight Compute's source page shows them: (key in SimResult.lines,
# column title).
LINE_COLUMNS = (
    ("global_sectors", "global\nsectors"),
    ("shared_wavefronts", "shared\nwavefr."),
    ("flops", "flops"),
)
# Shown only when some line has a non-zero figure (constant-memory and divergent kernels).
OPTIONAL_LINE_COLUMNS = (
    ("constant_wavefronts", "const.\nwavefr."),
    ("divergent_branches", "diverg.\nbranches"),
)


# --------------------------------------------------------------------------------------------------------------
# kernels list

def kernels_list_json(specs) -> list[dict]:
    return [{
        "name": spec.name,
        "description": spec.description,
        "entry": spec.entry,
        "source": str(spec.source_path),
        "path": str(spec.path),
        "params": dict(spec.params),
        "param_help": dict(spec.param_help),
        "tags": spec.tags,
    } for spec in specs]


def render_kernels_list(specs, console: Console) -> None:
    table = Table(title="kernel specs", title_justify="left", show_lines=False, expand=False)
    table.add_column("kernel", style="bold cyan", no_wrap=True)
    table.add_column("description")
    table.add_column("params (defaults)", style="green")
    for spec in specs:
        params = ", ".join(f"{name}={value}" for name, value in spec.params.items())
        table.add_row(spec.name, spec.description, params)
    console.print(table)
    console.print(Text("perfmodel kernels show NAME [-D PARAM=VALUE ...] shows one kernel's source with per-line "
                       "counts.", style="dim"))


# --------------------------------------------------------------------------------------------------------------
# kernels show: data

def _as_dict(value: Any) -> dict:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if hasattr(value, "to_json"):
        return dict(value.to_json())
    if hasattr(value, "_asdict"):
        return dict(value._asdict())
    if hasattr(value, "__dataclass_fields__"):
        return {k: getattr(value, k) for k in value.__dataclass_fields__}
    return dict(vars(value))


def _number(value: Any) -> int | float:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def line_rows(outcome) -> list[dict]:
    """One row per source line: ``line``, ``source`` and the per-line counts of the run (absent = 0)."""
    lines_data = getattr(outcome.result, "lines", None) or {}
    per_line: dict[int, dict] = {}
    for key, value in lines_data.items():
        line = key[-1] if isinstance(key, tuple) else key
        per_line[int(line)] = _as_dict(value)
    source_lines = getattr(outcome.program, "source_lines", None) or outcome.launch.spec.source_text.splitlines()
    rows = []

    def add(row: dict, figures: dict) -> None:
        counts = {k: _number(v) for k, v in figures.items() if isinstance(v, (int, float, np.generic))}
        for key, _ in LINE_COLUMNS:
            row[key] = counts.pop(key, 0)
        row.update(counts)
        rows.append(row)
    for number, text in enumerate(source_lines, start=1):
        add({"line": number, "source": text}, per_line.get(number, {}))
    # the lines of the headers the kernel's code comes from (a __device__ function of the project's, CUB's
    # BlockScan): after the file's own, each with its file - the totals are the kernel's, not the file's
    files = dict(getattr(outcome.program, "source_files", None) or {})
    for key, value in (getattr(outcome.result, "header_lines", None) or {}).items():
        path, _, number = str(key).rpartition(":")
        if not path or not number.isdigit():
            continue
        if path not in files:       # an SDK header (CUB's), read where the compile found it
            try:
                files[path] = Path(path).read_text(errors="replace")
            except OSError:
                files[path] = ""
        text_lines = files[path].splitlines()
        text = text_lines[int(number) - 1] if 0 < int(number) <= len(text_lines) else ""
        add({"file": path, "line": int(number), "source": text}, _as_dict(value))
    return rows


def block_rows(outcome) -> dict:
    """Which blocks have idle threads (threads that made no memory access and no flop - bounds-check losers).

    Returns ``{"threads_per_block", "blocks": [{"block": [x, y, z], "idle_threads", "state"}...],
    "partially_idle", "fully_idle", "busy"}`` where state is ``busy`` / ``partially idle`` / ``idle``."""
    launch, result = outcome.launch, outcome.result
    per_block = getattr(result, "per_block", None) or {}
    idle = per_block.get("idle_threads") if isinstance(per_block, Mapping) else None
    threads = launch.threads_per_block
    summary: dict[str, Any] = {"threads_per_block": threads, "blocks": [], "busy": 0, "partially_idle": 0,
                               "fully_idle": 0}
    if idle is None:
        return summary
    block_ids = getattr(result, "block_ids", None)
    if block_ids is None:
        block_ids = np.arange(len(idle))
    gx, gy, _ = launch.grid
    for linear, count in zip(np.asarray(block_ids).tolist(), np.asarray(idle).tolist()):
        count = int(count)
        state = "busy" if count == 0 else ("idle" if count >= threads else "partially idle")
        summary[{"busy": "busy", "idle": "fully_idle", "partially idle": "partially_idle"}[state]] += 1
        block = [linear % gx, (linear // gx) % gy, linear // (gx * gy)]
        summary["blocks"].append({"block": block, "idle_threads": count, "state": state})
    return summary


def kernel_show_json(outcome) -> dict:
    launch, result, check = outcome.launch, outcome.result, outcome.check
    counts = result.counts.to_json() if hasattr(result.counts, "to_json") else _as_dict(result.counts)
    blocks = block_rows(outcome)
    return {
        "kernel": launch.spec.name,
        "description": launch.spec.description,
        "launch": launch.to_json(),
        "sampled": check is None,
        "blocks_simulated": int(len(result.block_ids)) if getattr(result, "block_ids", None) is not None
        else launch.total_blocks,
        "correct": None if check is None else check.correct,
        "check": None if check is None else check.to_json(),
        "counts": counts,
        "lines": line_rows(outcome),
        "blocks": {key: value for key, value in blocks.items() if key != "blocks"} | {
            "not_busy": [b for b in blocks["blocks"] if b["state"] != "busy"]},
    }


# --------------------------------------------------------------------------------------------------------------
# kernels show: terminal

def _fmt(value: Any) -> str:
    if value in (0, None):
        return ""
    if isinstance(value, float):
        return f"{value:,.3g}"
    return f"{value:,}"


def _header(outcome) -> Panel:
    launch, check = outcome.launch, outcome.check
    spec = launch.spec
    text = Text()
    text.append(f"{spec.name}", style="bold cyan")
    text.append(f" - {spec.description}\n")
    text.append(f"{spec.source_path.name}", style="bold")
    text.append(f" : {spec.entry}   ")
    text.append(", ".join(f"{k}={v}" for k, v in launch.params.items()), style="green")
    text.append("\n")
    g, b = launch.grid, launch.block
    text.append(f"grid ({g[0]}, {g[1]}, {g[2]}) x block ({b[0]}, {b[1]}, {b[2]}) = {launch.total_blocks:,} blocks of "
                f"{launch.threads_per_block:,} threads ({launch.total_threads:,} threads)")
    if launch.dynamic_shared_bytes:
        text.append(f", {launch.dynamic_shared_bytes:,} B dynamic shared memory")
    text.append("\n")
    if check is None:
        simulated = len(getattr(outcome.result, "block_ids", None) if getattr(outcome.result, "block_ids", None)
                        is not None else [])
        text.append(f"sampled run: {simulated:,} of {launch.total_blocks:,} blocks simulated; counts are of those "
                    "blocks only (not extrapolated) and outputs are not checked", style="yellow")
    elif check.correct is None:
        text.append("outputs ", style="yellow")
        text.append(check.message)
    elif check.correct:
        text.append("outputs correct: ", style="bold green")
        text.append(check.message)
    else:
        text.append("outputs WRONG: ", style="bold red")
        text.append(check.message)
    return Panel(text, title="kernel", title_align="left", expand=False)


def _source_table(outcome, rows: list[dict]) -> Table:
    code = "\n".join(row["source"] for row in rows)
    highlighted = Syntax(code, "cuda", theme="ansi_dark", background_color="default").highlight(code)
    lines = highlighted.split("\n", allow_blank=True)
    columns = list(LINE_COLUMNS) + [(key, title) for key, title in OPTIONAL_LINE_COLUMNS
                                    if any(row.get(key) for row in rows)]
    title = "source (counts of this run, per line)" if outcome.check is not None else \
        "source (counts of the simulated blocks only, per line)"
    table = Table(title=title, title_justify="left", box=None, pad_edge=False, show_edge=False, padding=(0, 1),
                  caption="sectors: distinct 32-byte global sectors per warp request, summed; wavefr.: shared-memory "
                          "wavefronts (bank conflicts add some) or constant-memory serialised addresses",
                  caption_justify="left")
    for _, column_title in columns:
        table.add_column(column_title, justify="right", style="magenta", no_wrap=True, min_width=9)
    # One source line per row, as in Nsight Compute's source page: long lines are cut, never folded.
    table.add_column("source", no_wrap=True, overflow="ellipsis", ratio=1, min_width=20)
    totals = dict.fromkeys((key for key, _ in columns), 0)
    for row, text in zip(rows, lines):
        for key in totals:
            totals[key] += row.get(key, 0) or 0
        # The line number leads the source cell so that it survives a narrow terminal (a column of its own is
        # the first one rich squeezes out).
        where = f"{Path(row['file']).name}:{row['line']}" if row.get("file") else f"{row['line']:>4}"
        numbered = Text(f"{where}  ", style="dim") + text
        table.add_row(*(_fmt(row.get(key)) for key, _ in columns), numbered)
    table.add_row(*(Text(_fmt(totals[key]) or "0", style="bold") for key, _ in columns),
                  Text("total", style="bold"))
    return table


def _counts_table(counts: Mapping[str, Any]) -> Table:
    table = Table(title="counts", title_justify="left", box=None, show_header=False, padding=(0, 2))
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right")
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right")
    glob, shared, const = counts.get("global", {}), counts.get("shared", {}), counts.get("constant", {})
    items = [
        ("flops", counts.get("flops")), ("int ops", counts.get("int_ops")),
        ("global loads", glob.get("loads")), ("global stores", glob.get("stores")),
        ("global load requests", glob.get("load_requests")), ("global store requests", glob.get("store_requests")),
        ("global load sectors", glob.get("load_sectors")), ("global store sectors", glob.get("store_sectors")),
        ("shared loads", shared.get("loads")), ("shared stores", shared.get("stores")),
        ("shared load wavefronts", shared.get("load_wavefronts")),
        ("shared store wavefronts", shared.get("store_wavefronts")),
        ("constant loads", const.get("loads")), ("constant wavefronts", const.get("load_wavefronts")),
        ("barriers", counts.get("barriers")), ("divergent branches", counts.get("divergent_branches")),
        ("SIMT efficiency", counts.get("simt_efficiency")), ("idle threads", counts.get("idle_threads")),
    ]
    for i in range(0, len(items), 2):
        left, right = items[i], items[i + 1] if i + 1 < len(items) else ("", None)
        table.add_row(left[0], _fmt_count(left[1]), right[0], _fmt_count(right[1]))
    return table


def _fmt_count(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not float(value).is_integer():
        return f"{value:.3f}"
    return f"{int(value):,}"


def _blocks_view(outcome) -> Text | None:
    summary = block_rows(outcome)
    if not summary["blocks"] or summary["partially_idle"] + summary["fully_idle"] == 0:
        return None
    launch = outcome.launch
    text = Text()
    text.append(f"{summary['busy']} blocks busy, {summary['partially_idle']} partially idle, "
                f"{summary['fully_idle']} idle (of {len(summary['blocks'])} simulated)\n", style="bold")
    gx, gy, gz = launch.grid
    if gz == 1 and gx <= 32 and gy <= 32 and len(summary["blocks"]) == gx * gy:
        idle = np.zeros((gy, gx), dtype=np.int64)
        for block in summary["blocks"]:
            x, y, _ = block["block"]
            idle[y, x] = block["idle_threads"]
        width = max(len(str(int(idle.max()))), 1)
        text.append("idle threads per block (rows: blockIdx.y, columns: blockIdx.x; . = none idle)\n", style="dim")
        for y in range(gy):
            for x in range(gx):
                value = int(idle[y, x])
                style = "green" if value == 0 else ("red" if value >= launch.threads_per_block else "yellow")
                text.append(f"{'.' if value == 0 else value:>{width}} ", style=style)
            text.append("\n")
    else:
        shown = [b for b in summary["blocks"] if b["state"] != "busy"][:16]
        text.append("; ".join(f"({b['block'][0]},{b['block'][1]},{b['block'][2]}): {b['idle_threads']} idle"
                              for b in shown))
        if summary["partially_idle"] + summary["fully_idle"] > len(shown):
            text.append(" ...")
    return text


def render_kernel_show(outcome, console: Console) -> None:
    rows = line_rows(outcome)
    counts = outcome.result.counts.to_json() if hasattr(outcome.result.counts, "to_json") else \
        _as_dict(outcome.result.counts)
    parts: list[Any] = [_header(outcome), _source_table(outcome, rows), _counts_table(counts)]
    blocks = _blocks_view(outcome)
    if blocks is not None:
        parts.append(Panel(blocks, title="blocks with idle threads", title_align="left", expand=False))
    console.print(Group(*parts))
