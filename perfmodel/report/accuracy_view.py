"""Rendering for ``perfmodel validate`` (one real-GPU run) and ``perfmodel accuracy`` (model vs measurement)."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from perfmodel.gpu.accuracy import GLOBAL_COUNTS, AccuracyReport, CaseAccuracy, fmt_error


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.2f} us"


def _short_time(seconds: float | None) -> str:
    """Three significant digits: 9.31 us, 298 us, 26.0 ms."""
    if seconds is None:
        return "-"
    value, unit = (seconds * 1e3, "ms") if seconds >= 1e-3 else (seconds * 1e6, "us")
    return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"


def _count(value: float | None) -> str:
    return "-" if value is None else f"{int(round(value)):,}"


def render_validate(console: Console, document: dict[str, Any]) -> None:
    device = document.get("device", {})
    for case in document.get("cases", []):
        t = case.get("time") or {}
        cold, warm = t.get("cold") or {}, t.get("warm") or {}
        ok = {True: "[green]correct[/green]", False: "[red]WRONG[/red]", None: "not checked"}[case.get("correct")]
        console.print(f"[bold]{case['kernel']}[/bold] {case.get('overrides') or ''} on {device.get('name')} "
                      f"(CC {device.get('compute_capability')}): {ok}, {_time(case.get('time_s'))} (cold median)")
        table = Table(show_header=False, box=None, pad_edge=False)
        fn = case.get("function", {})
        rows = [
            ("launch", f"grid {tuple(case['grid'])} x block {tuple(case['block'])}, "
                       f"{case.get('dynamic_shared_bytes', 0)} B dynamic shared"),
            ("registers / thread", str(fn.get("num_regs"))),
            ("static shared / block", f"{fn.get('shared_size_bytes')} B"),
            ("blocks / SM (occupancy API)", str((case.get("occupancy_api") or {}).get("blocks_per_sm"))),
            ("time cold (L2 flushed)", f"median {_time(cold.get('median_s'))}, p10 {_time(cold.get('p10_s'))}, "
                                       f"p90 {_time(cold.get('p90_s'))}, n={cold.get('repeats')}"),
            ("time warm", f"median {_time(warm.get('median_s'))}, batched mean "
                          f"{_time(t.get('warm_batched_mean_s'))}"),
        ]
        if case.get("check", {}).get("message"):
            rows.append(("check", str(case["check"]["message"])))
        for key, value in sorted((case.get("ncu") or {}).items()):
            if not key.startswith("ncu_"):
                rows.append((f"ncu {key}", f"{value:,}" if isinstance(value, (int, float)) else str(value)))
        for key, value in rows:
            table.add_row(f"[dim]{key}[/dim]", value)
        console.print(table)


def _flag(value: bool | None) -> str:
    return {True: "[green]=[/green]", False: "[red]x[/red]", None: "[dim]?[/dim]"}[value]


def _err_style(case: CaseAccuracy) -> str:
    factor = case.time_factor
    if factor is None:
        return "dim"
    if factor > 2:
        return "red"
    if abs(case.time_error) > 0.25:
        return "yellow"
    return "green"


def render_accuracy(console: Console, report: AccuracyReport) -> None:
    s = report.summary()
    console.print(f"[bold]perfmodel accuracy[/bold]: {report.dataset} - model profile {report.device!r} vs "
                  f"measurements on {report.measured_on}", highlight=False)
    table = Table(header_style="bold", box=None, pad_edge=False)
    table.add_column("case", no_wrap=True)
    for col in ("regs", "blocks/SM", "measured", "predicted", "error", "bound", "ld/st", "L2 hit", "DRAM GB/s"):
        table.add_column(col, justify="left" if col in ("bound", "ld/st") else "right", no_wrap=True,
                         min_width=len(col))
    for case in report.cases:
        if case.error:
            table.add_row(case.id, str(case.registers), "", _time(case.measured_time_s), "[red]error[/red]", "",
                          case.error[:60], "", "", "")
            continue
        flags = {m.name: m for m in case.global_counts}
        cells = "".join(_flag(flags[ours].match if ours in flags else None) for ours, _ in GLOBAL_COUNTS)
        if case.sampled:
            cells += " [dim]~[/dim]"
        hw = case.hardware
        style = _err_style(case)
        table.add_row(
            case.id, str(case.registers),
            f"{case.blocks_per_sm_ours}|{case.blocks_per_sm_api}{_flag(case.occupancy_match)}",
            _short_time(case.measured_time_s), _short_time(case.predicted_time_s),
            f"[{style}]{fmt_error(case.time_error)}[/{style}]", case.bound or "-", cells,
            "-" if hw.get("l2_hit_rate_pct") is None else f"{hw['l2_hit_rate_pct']:.0f}%",
            "-" if hw.get("achieved_dram_gb_per_s") is None else f"{hw['achieved_dram_gb_per_s']:.0f}",
        )
    console.print(table)
    console.print("[dim]blocks/SM: ours|CUDA occupancy API. global ld/st: load requests, load sectors, store "
                  "requests, store sectors against ncu (= equal, x different; ~ counts extrapolated from a sampled "
                  "simulation). error: predicted / measured - 1.[/dim]", highlight=False)
    _render_summary(console, s)


def _summary_lines(s: dict[str, Any]) -> list[str]:
    lines = []
    if s.get("median_abs_time_error") is not None:
        lines.append(f"time: median |error| {s['median_abs_time_error'] * 100:.1f}%, max |error| "
                     f"{s['max_abs_time_error'] * 100:.1f}% (worst factor {s['max_time_factor']:.2f}x); "
                     f"{s['within_25pct']}/{s['timed']} within 25%, {s['within_2x']}/{s['timed']} within 2x")
    ss = s.get("sessions") or {}
    if ss.get("cases"):
        lines.append(f"measured times: the median over up to {ss['most_sessions']} timing sessions; a case's sessions "
                     f"spread {ss['median_spread']:.2f}x (median) to {ss['max_spread']:.2f}x ({ss['widest_case']}); "
                     f"{ss['predicted_within_sessions']}/{ss['predicted_compared']} predictions lie inside their "
                     f"case's measured range")
    for name, c in (s.get("classes") or {}).items():
        if c.get("median_abs_time_error") is not None:
            lines.append(f"class {name}: {c['timed']} cases, median |error| {c['median_abs_time_error'] * 100:.1f}%, "
                         f"worst factor {c['max_time_factor']:.2f}x, {c['within_25pct']} within 25%")
    lines.append(f"blocks per SM equal to the CUDA occupancy API: {s['occupancy_agree']}/{s['occupancy_compared']}")
    for name, g in s["global_counts"].items():
        sampled = ("" if not g["source_level_sampled_compared"] else
                   f"; sampled analyses (extrapolated counts) within {g['source_level_sampled_max_rel_diff'] * 100:.3f}%"
                   f" in {g['source_level_sampled_compared']}")
        lines.append(f"{name}: equal to ncu in {g['agree']}/{g['compared']} cases; source-level kernels, exact "
                     f"simulation: {g['source_level_exact_agree']}/{g['source_level_exact_compared']}{sampled}")
    wi = s.get("warp_instructions") or {}
    if wi.get("compared"):
        lines.append(f"warp instructions executed vs ncu (smsp__inst_executed): median |error| "
                     f"{wi['median_abs_error'] * 100:.1f}%, max |error| {wi['max_abs_error'] * 100:.1f}% (worst factor "
                     f"{wi['worst_factor']:.2f}x); {wi['within_10pct']}/{wi['compared']} within 10%, "
                     f"{wi['within_25pct']}/{wi['compared']} within 25%")
    l1 = s.get("l1_load_hit") or {}
    if l1.get("compared"):
        with_hits = _points(l1["median_abs_diff_pp_with_hits"])
        lines.append(f"L1 hit rate of global loads vs ncu (l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate): median "
                     f"|difference| {l1['median_abs_diff_pp']:.1f} points ({with_hits} over the {l1['with_hits']} with "
                     f"hits on either side), largest {l1['max_abs_diff_pp']:.1f} ({l1['worst_case']}); "
                     f"{l1['within_10pp']}/{l1['compared']} within 10 points")
    if s.get("failed"):
        lines.append(f"not analysed: {', '.join(s['failed'])}")
    return lines


def _render_summary(console: Console, s: dict[str, Any]) -> None:
    console.print("[bold]summary[/bold]")
    for line in _summary_lines(s):
        console.print(f"  {line}", highlight=False)


def _points(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def _l1_cell(case) -> str:
    ours, ncu = case.l1_load_hit_pct, case.hardware.get("l1_global_load_hit_rate_pct")
    return f"{'-' if ours is None else f'{ours:.0f}%'} / {'-' if ncu is None else f'{ncu:.0f}%'}"


def to_markdown(report: AccuracyReport) -> str:
    s = report.summary()
    out = [f"# Model accuracy: `{report.device}` profile vs {report.measured_on}", "",
           f"Dataset: `{report.dataset}`, {s['cases']} cases.", ""]
    out += [f"- {line}" for line in _summary_lines(s)]
    out += ["", "| case | regs | blocks/SM ours / API | measured | predicted | error | bound | "
                "gld req | gld sect | gst req | gst sect | warp instr. (ours / ncu) | "
                "L1 hit, global loads (ours / ncu) | L2 hit | DRAM GB/s | achieved occ. |",
            "|---|---:|---:|---:|---:|---:|---|---|---|---|---|---:|---:|---:|---:|---:|"]
    for case in report.cases:
        hw = case.hardware
        flags = {m.name: m for m in case.global_counts}
        cells = []
        for ours, _ in GLOBAL_COUNTS:
            m = flags.get(ours)
            if m is None or m.match is None:
                cells.append("?")
            else:
                cells.append("=" if m.match else f"x ({_count(m.ours)} vs {_count(m.measured)})")

        def pct(key):
            return "-" if hw.get(key) is None else f"{hw[key]:.0f}%"

        bandwidth = hw.get("achieved_dram_gb_per_s")
        wi = case.warp_instructions
        wi_cell = ("-" if wi is None or wi.ratio is None else
                   f"{fmt_error(wi.ratio - 1)} ({_count(wi.ours)} / {_count(wi.measured)})")

        out.append(
            f"| {case.id}{' (sampled)' if case.sampled else ''} | {case.registers} | {case.blocks_per_sm_ours} / {case.blocks_per_sm_api} | "
            f"{_time(case.measured_time_s)} | {_time(case.predicted_time_s) if not case.error else 'error'} | "
            f"{fmt_error(case.time_error)} | {case.bound or '-'} | {' | '.join(cells)} | {wi_cell} | "
            f"{_l1_cell(case)} | "
            f"{pct('l2_hit_rate_pct')} | "
            f"{'-' if bandwidth is None else f'{bandwidth:.0f}'} | "
            f"{pct('achieved_occupancy_pct')} |")
    out += ["", "(sampled): the analyzer simulated a stratified sample of blocks and extrapolated the counts."]
    if report.excluded:
        out += ["", "Kernels not held to exact global counts:"]
        out += [f"- `{k}`: {why}" for k, why in report.excluded.items()]
    return "\n".join(out) + "\n"
