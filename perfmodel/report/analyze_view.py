"""Terminal rendering of ``perfmodel analyze``: a headline, then Nsight-Compute-like sections.

Everything shown is read from ``Analysis.to_json()``, so the terminal and the ``--json`` document never drift.
"""
from __future__ import annotations

import math
from pathlib import Path

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

BAR_WIDTH = 36


def fmt_time(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "-"
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3g} µs"
    return f"{seconds * 1e9:.3g} ns"


def fmt_num(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        if abs(value) >= 1000:      # an extrapolated count: whole, with separators, as the exact run prints
            return f"{value:,.0f}"
        return f"{value:.{digits}g}"
    return f"{int(value):,}"


def fmt_bytes(value: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} B"


def bar(fraction: float, width: int = BAR_WIDTH, style: str = "cyan") -> Text:
    fraction = max(0.0, min(1.0, fraction))
    eighths = round(fraction * width * 8)
    full, rest = divmod(eighths, 8)
    text = "█" * full + ("" if rest == 0 else " ▏▎▍▌▋▊▉"[rest])
    return Text(text.ljust(width), style=style)


def headline(doc: dict) -> Text:
    occ = doc["occupancy"]
    text = Text()
    text.append(doc["kernel"], style="bold")
    text.append(" on ")
    text.append(f"{doc['device_name']} ({doc['device']})", style="bold")
    text.append(": ")
    g = doc["counts"].get("global", {})
    moved = (g.get("load_bytes", 0) or 0) + (g.get("store_bytes", 0) or 0)
    if not doc["counts"].get("flops") and moved and doc["predicted_time_s"]:
        # no floating-point work (a copy, a transpose, an integer kernel): the rate a CUDA programmer quotes for
        # it is the effective bandwidth, the bytes its threads load and store over the time (what the CUDA
        # samples' transpose and bandwidthTest print), not operations - its integer work is mostly addressing
        rate = moved / doc["predicted_time_s"]
        shown = f"{rate / 1e9:,.1f} GB/s" if rate >= 1e9 else f"{rate / 1e6:,.3g} MB/s"
        text.append(f"{shown} effective", style="bold green")
        peak = (doc.get("seed_model") or {}).get("dram_gb_per_s")
        dram = ((doc.get("model") or {}).get("traffic") or {}).get("dram_bytes")
        if peak and rate > peak * 1e9:
            # requested bytes, not DRAM bytes: re-reads served by L1 or L2 (or stores absorbed there) count each time
            text.append(f" (above the {peak:,.0f} GB/s DRAM peak: L1/L2 serve re-reads)")
        elif dram is not None and moved > 1.5 * dram:
            # most of the bytes are re-reads the caches serve (FFmpeg's to_jpeg: 16.7 MB of lookup-table reads
            # beside 4.2 MB of pixels read the headline as 80% of the DRAM peak): what DRAM moves, beside it
            text.append(f" ({dram / doc['predicted_time_s'] / 1e9:,.1f} GB/s of it from DRAM: L1/L2 serve re-reads)")
    else:
        text.append(f"{doc['predicted_gflops']:,.1f} GFLOPS", style="bold green")
    text.append(f" in {fmt_time(doc['predicted_time_s'])}")
    text.append("  ·  bound: ")
    bound = doc["bound"]
    label = doc["resources"].get(bound, {}).get("label", bound)
    text.append(label, style="bold yellow")
    text.append("  ·  occupancy ")
    text.append(f"{100 * occ['occupancy']:.0f}%", style="bold")
    text.append(f" ({occ['blocks_per_sm']} blocks/SM, limited by {', '.join(occ['limiters']) or '-'})")
    return text


def _kv_table(rows: list[tuple[str, str | Text]], title: str) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold", show_header=False, box=None,
                  padding=(0, 2))
    table.add_column(style="dim")
    table.add_column()
    for key, value in rows:
        table.add_row(key, value)
    return table


def launch_section(doc: dict) -> Table:
    launch, occ = doc["launch"], doc["occupancy"]
    waves = occ.get("waves") or {}
    regs_note = doc["registers_source"]
    limits = ", ".join(f"{k} {v}" for k, v in occ["limits"].items())
    rows = [
        ("grid x block", f"{tuple(launch['grid'])} x {tuple(launch['block'])} = {launch['total_blocks']:,} blocks "
                         f"of {launch['threads_per_block']} threads"),
        ("registers/thread", f"{doc['registers_per_thread']} ({regs_note})"),
        ("shared memory/block", f"{doc['shared_memory_per_block']:,} B (allocated "
                                f"{occ['shared_memory_per_block_allocated']:,} B)"),
        ("blocks/SM", f"{occ['blocks_per_sm']}  (limits: {limits})"),
        ("warps/SM", f"{occ['warps_per_sm']} of {occ['max_warps_per_sm']}  ->  occupancy "
                     f"{100 * occ['occupancy']:.1f}%, limited by {', '.join(occ['limiters'])}"),
    ]
    if waves:
        rows.append(("waves", f"{waves.get('waves', 0):.2f} ({waves.get('full_waves', 0)} full, tail "
                              f"{waves.get('tail_blocks', 0):,} blocks)"))
    return _kv_table(rows, "Launch & occupancy")


def counts_section(doc: dict) -> Table:
    c = doc["counts"]
    g, s = c.get("global", {}), c.get("shared", {})
    const = c.get("constant", {})
    table = Table(title="Counts" + (" (extrapolated from a sample)" if doc["sampled"] else ""),
                  title_justify="left", title_style="bold", box=None, padding=(0, 2))
    for col in ("", "thread-level", "warp requests", "sectors / wavefronts"):
        table.add_column(col, justify="right" if col else "left")
    table.add_row("global loads", fmt_num(g.get("loads")), fmt_num(g.get("load_requests")),
                  f"{fmt_num(g.get('load_sectors'))} sectors")
    table.add_row("global stores", fmt_num(g.get("stores")), fmt_num(g.get("store_requests")),
                  f"{fmt_num(g.get('store_sectors'))} sectors")
    if s.get("loads") or s.get("stores"):
        table.add_row("shared loads", fmt_num(s.get("loads")), fmt_num(s.get("load_requests")),
                      f"{fmt_num(s.get('load_wavefronts'))} wavefronts")
        table.add_row("shared stores", fmt_num(s.get("stores")), fmt_num(s.get("store_requests")),
                      f"{fmt_num(s.get('store_wavefronts'))} wavefronts")
    for space, d in (("global", g), ("shared", s)):
        if d.get("atomics"):
            same, requests = d.get("atomic_same_address"), d.get("atomic_requests")
            # the sum over requests of the lanes on each one's busiest address, as a mean: "256 lanes on each
            # request's busiest address, summed" read as 256 lanes on one address where none shared one
            table.add_row(f"{space} atomics", fmt_num(d.get("atomics")), fmt_num(requests),
                          f"{same / requests:.3g} lanes per request on its busiest address (1: none shared)"
                          if same and requests else "")
    local = c.get("local", {})
    if local.get("loads") or local.get("stores"):      # spills and per-thread arrays the compiler put in memory
        table.add_row("local loads", fmt_num(local.get("loads")), fmt_num(local.get("load_requests")), "")
        table.add_row("local stores", fmt_num(local.get("stores")), fmt_num(local.get("store_requests")), "")
    if const.get("loads"):
        table.add_row("constant loads", fmt_num(const.get("loads")), fmt_num(const.get("load_requests")),
                      f"{fmt_num(const.get('load_wavefronts'))} wavefronts")
    fp = c.get("fp_ops", {})
    table.add_row("flops", fmt_num(c.get("flops")), "", ", ".join(f"{k} {fmt_num(v)}" for k, v in fp.items()
                                                                  if v and k != "packed")
                  + (f" (packed half2: {fmt_num(fp['packed'])} lanes)" if fp.get("packed") else ""))
    tensor = c.get("tensor") or {}
    if tensor.get("mma"):
        table.add_row("tensor-core mma", "", fmt_num(tensor["mma"]),
                      ", ".join(f"{k} {fmt_num(v)} flops" for k, v in (tensor.get("flops") or {}).items() if v))
    table.add_row("int ops", fmt_num(c.get("int_ops")), "", "")
    table.add_row("warp instructions", "", fmt_num(c.get("warp_instructions")),
                  f"SIMT efficiency {100 * c['simt_efficiency']:.1f}%" if c.get("simt_efficiency") is not None else "")
    table.add_row("barriers", "", fmt_num(c.get("barriers")), "")
    idle = doc.get("idle") or {}
    if c.get("idle_threads") or idle.get("partially_idle_blocks"):
        parts = [f"{idle[key]:,} of {idle['blocks']:,} blocks {what} idle"
                 for key, what in (("fully_idle_blocks", "fully"), ("partially_idle_blocks", "partially"))
                 if idle.get(key)]
        blocks = ", ".join(parts)
        table.add_row("idle threads", f"{fmt_num(c.get('idle_threads'))} of {fmt_num(c.get('threads'))}", "", blocks)
    return table


def cgma_section(doc: dict) -> Table:
    seed = doc["seed_model"]
    cgma = doc["cgma"]
    rows = [
        ("CGMA", f"{fmt_num(cgma)} flops per global load"
                 + (f"  ({fmt_num(doc['cgma_with_stores'])} counting stores)" if doc["cgma_with_stores"] else "")),
        ("seed bound", f"min({seed['peak_gflops']:,.1f} {seed.get('peak_basis', 'FP32')} peak, CGMA x "
                       f"{seed['dram_gb_per_s']:,.1f} GB/s / {seed.get('operand_bytes', 4):.3g} B) = "
                       f"{doc['achievable_gflops']:,.1f} GFLOPS ({seed['bound']})"),
        ("CGMA for the peak", f"{seed['required_cgma']:.3g}"),
    ]
    if cgma:
        position = min(1.0, cgma / seed["required_cgma"])
        line = Text()
        line.append_text(bar(position, BAR_WIDTH, "green" if position >= 1 else "yellow"))
        line.append(f" {100 * position:.0f}% of the ridge point")
        rows.append(("roofline", line))
    rows.append(("bottleneck model", f"{doc['predicted_gflops']:,.1f} GFLOPS "
                                     f"({100 * doc['predicted_gflops'] / seed['peak_gflops']:.1f}% of the "
                                     f"{seed.get('peak_basis', 'FP32')} peak)"))
    return _kv_table(rows, "CGMA & roofline (seed model)")


def resources_section(doc: dict) -> Table:
    resources = doc["resources"]
    table = Table(title="Per-resource bounds (speed of light: busy share of the predicted time)",
                  title_justify="left", title_style="bold", box=None, padding=(0, 1))
    table.add_column("resource")
    table.add_column("time", justify="right")
    table.add_column("SOL", justify="right")
    table.add_column("")
    ordered = sorted(resources.values(), key=lambda r: -r["time_s"])
    for r in ordered:
        is_bound = r["name"] == doc["bound"]
        style = "bold yellow" if is_bound else ("cyan" if r["share_of_peak"] > 0.3 else "dim")
        table.add_row(Text(r["label"] + (" ◀" if is_bound else ""), style="bold" if is_bound else ""),
                      fmt_time(r["time_s"]), f"{100 * r['share_of_peak']:.0f}%", bar(r["share_of_peak"], style=style))
    model = doc["model"]
    traffic = model["traffic"]
    table.caption = (f"L1 hit {100 * traffic['l1_hit_rate']:.0f}% · L2 hit {100 * traffic['l2_hit_rate']:.0f}% · "
                     f"DRAM {fmt_bytes(traffic['dram_bytes'])} · avg load latency "
                     f"{model['average_latency_cycles']:.0f} cycles"
                     + (f" (DRAM +{model['dram_queue_cycles']:.0f} under load: "
                        f"{fmt_bytes(model['bytes_in_flight_per_sm'])} in flight per SM)"
                        if model.get("dram_queue_cycles") else "")
                     + (" · L2 hits at the DRAM latency (cold, one wave: their lines are still being fetched)"
                        if model.get("fetch_wait_share") and traffic["l2_hit_rate"] > 0 else "")
                     + (f" · chain {model['instruction_cycles']:.1f} cycles an instruction (ILP credited)"
                        if model.get("instruction_cycles") else "")
                     + f" · launch overhead {fmt_time(model['launch_overhead_s'])}")
    table.caption_justify = "left"
    return table


def hot_lines_section(doc: dict) -> Table | None:
    lines = doc.get("hot_lines") or []
    if not lines:
        return None
    metric = {"data_stage": "L1 data-stage work: shared wavefronts + global lines"}.get(
        lines[0]["metric"], lines[0]["metric"].replace("_", " "))
    table = Table(title=f"Hottest source lines (by {metric})", title_justify="left", title_style="bold",
                  box=None, padding=(0, 1))
    wheres = [str(item["line"]) if not item.get("file") else f"{Path(item['file']).name}:{item['line']}"
              for item in lines]
    # a header's name whole (block_scan_warp_scans.cuh:176 was cut to block_scan_war...): the source gives way
    table.add_column("line", justify="right", style="dim", no_wrap=True, min_width=max(map(len, wheres)))
    table.add_column("share", justify="right", no_wrap=True, min_width=5)
    table.add_column("", no_wrap=True, min_width=12)
    table.add_column("source", overflow="ellipsis", no_wrap=True, max_width=70)
    for item, where in zip(lines, wheres):
        table.add_row(where, f"{100 * item['share']:.0f}%", bar(item["share"], 12, "magenta"),
                      Text(item["source"], style="bold" if item is lines[0] else ""))
    return table


def notes_section(doc: dict) -> Text:
    text = Text()
    correct = doc["correct"]
    if correct is True:
        text.append("✓ ", style="green")
        text.append(f"outputs: {doc['correct_detail']}\n")
    elif correct is False:
        text.append("✗ outputs WRONG: ", style="bold red")
        text.append(f"{doc['correct_detail']}\n")
    else:
        text.append("– outputs ", style="yellow")
        detail = doc["correct_detail"]
        text.append(detail if "not checked" in detail else f"not checked: {detail}")
        text.append("\n")
    if doc["sampled"]:
        sample = doc["sample"]
        strata = ", ".join(f"{s['name']} {s['simulated']}/{s['blocks']:,}" for s in sample["strata"])
        text.append(f"sampled: simulated {sample['blocks_simulated']} of {sample['total_blocks']:,} blocks "
                    f"({strata}) because {sample['reason']}; counts extrapolated per stratum.\n", style="yellow")
        spread = doc.get("spread") or {}
        parts = [f"{name} cv {100 * v['cv']:.1f}%" for name, v in spread.items() if v.get("mean")]
        if parts:
            text.append("spread across sampled blocks: " + ", ".join(parts[:5]) + "\n", style="dim")
    if doc["registers_source"] == "estimate":
        text.append(f"registers: {doc['registers_note']}\n", style="yellow")
    for note in doc.get("simulation_notes") or []:
        text.append(f"note: {note}\n", style="yellow")
    for note in doc["model"].get("notes", []):
        text.append(f"note: {note}\n", style="dim")
    printf = (doc.get("compile") or {}).get("printf_calls")
    if printf:
        text.append(f"note: the kernel's printf ({printf} call{'s' if printf != 1 else ''} in its code) prints "
                    "nothing here and costs nothing in the model (on a GPU each call writes a buffer the host "
                    "prints after the kernel)\n", style="dim")
    return text


def advice_section(doc: dict) -> Text | None:
    if not doc.get("advice"):
        return None
    text = Text()
    text.append("Advice\n", style="bold")
    for tip in doc["advice"]:
        text.append("  • ", style="yellow")
        text.append(tip + "\n")
    return text


def wide_console(console: Console, width: int = 132) -> Console:
    """When the output is not a terminal (a pipe, a CI log), rich would wrap at 80 columns: use ``width``."""
    if console.is_terminal or console.width >= width:
        return console
    return Console(width=width, file=console.file, no_color=console.no_color, highlight=False)


def _parts(doc: dict) -> list:
    parts = [launch_section(doc), counts_section(doc), cgma_section(doc), resources_section(doc)]
    hot = hot_lines_section(doc)
    if hot is not None:
        parts.append(hot)
    advice = advice_section(doc)
    if advice is not None:
        parts.append(advice)
    parts.append(notes_section(doc))
    return parts


def _panel(doc: dict) -> Panel:
    style = {True: "green", False: "red", None: "yellow"}[doc["correct"]]
    return Panel(headline(doc), expand=False, border_style=style)


def render_analysis(doc: dict, console: Console) -> None:
    console = wide_console(console, 110)
    console.print(_panel(doc))
    for part in _parts(doc):
        console.print(part)
        console.print()


def analysis_renderable(doc: dict):
    """The report as one rich renderable (``rich.print(analysis)``, rich's notebook display)."""
    from rich.console import Group

    return Group(_panel(doc), *[item for part in _parts(doc) for item in (part, Text(""))])


def analysis_html(doc: dict) -> str:
    """The report as HTML for a notebook (``Analysis._repr_html_``): the terminal rendering, recorded."""
    import io

    console = Console(record=True, width=110, file=io.StringIO(), force_terminal=True, color_system="truecolor")
    render_analysis(doc, console)
    return console.export_html(inline_styles=True, code_format="<pre style=\"font-family:monospace;"
                               "line-height:1.25\">{code}</pre>")


def analysis_rows(doc: dict) -> list[dict]:
    """One flat, DataFrame-ready row of an analysis: names as in the ``--json`` document, dotted when nested."""
    launch, occ, counts = doc["launch"], doc["occupancy"], doc["counts"]
    g, sh = counts.get("global", {}), counts.get("shared", {})
    row = {
        "kernel": doc["kernel"], "device": doc["device"], "device_name": doc["device_name"],
        "grid": tuple(launch["grid"]), "block": tuple(launch["block"]), "total_blocks": launch["total_blocks"],
        "threads_per_block": launch["threads_per_block"],
        "predicted_time_s": doc["predicted_time_s"], "predicted_gflops": doc["predicted_gflops"],
        "bound": doc["bound"], "achievable_gflops": doc["achievable_gflops"], "cgma": doc["cgma"],
        "occupancy.occupancy": occ["occupancy"], "occupancy.blocks_per_sm": occ["blocks_per_sm"],
        "registers_per_thread": doc["registers_per_thread"], "shared_memory_per_block": doc["shared_memory_per_block"],
        "correct": doc["correct"], "sampled": doc["sampled"],
        "counts.flops": counts.get("flops"), "counts.warp_instructions": counts.get("warp_instructions"),
        "counts.global.load_sectors": g.get("load_sectors"), "counts.global.store_sectors": g.get("store_sectors"),
        "counts.global.load_requests": g.get("load_requests"),
        "counts.global.store_requests": g.get("store_requests"),
        "counts.shared.load_wavefronts": sh.get("load_wavefronts"),
        "counts.shared.store_wavefronts": sh.get("store_wavefronts"),
    }
    for name, params in (("params", doc.get("params") or {}),):
        for key, value in params.items():
            row[f"{name}.{key}"] = value
    return [row]
