"""Terminal rendering of an occupancy result: the per-resource limit table (limiter highlighted) and the three
"impact of varying" views of NVIDIA's occupancy calculator as compact bar charts marking the current point."""
from __future__ import annotations

from typing import Callable

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from perfmodel.devices import Device
from perfmodel.occupancy import Occupancy, SweepPoint, sweep_runs
from perfmodel.units import format_bytes

BARS = " ▁▂▃▄▅▆▇█"
CHART_WIDTH = 64
LIMITER_STYLE = "bold red"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def limits_table(occ: Occupancy, device: Device) -> Table:
    table = Table(title=f"Occupancy on {device.name} ({device.id}, CC {device.compute_capability}): "
                        f"{occ.threads_per_block} threads, {occ.registers_per_thread} registers/thread, "
                        f"{occ.shared_memory_per_block} B shared memory per block", title_justify="left")
    for column, justify in (("resource", "left"), ("per block", "right"), ("per SM", "right"),
                            ("blocks it allows", "right"), ("", "left")):
        table.add_column(column, justify=justify)
    warps_block = _plural(occ.warps_per_block, "warp")
    if occ.warps_allocated_per_block != occ.warps_per_block:
        warps_block += f" (allocated as {occ.warps_allocated_per_block})"
    smem_block = f"{occ.shared_memory_per_block} B"
    if occ.shared_memory_per_block_allocated != occ.shared_memory_per_block:
        smem_block += f" -> {occ.shared_memory_per_block_allocated} B"
        if device.reserved_shared_memory_per_block:
            smem_block += f" (incl. {device.reserved_shared_memory_per_block} B reserved)"
    rows = {
        "warps": (warps_block, _plural(device.max_warps_per_sm, "warp")),
        "registers": (f"{occ.registers_per_block} ({occ.registers_per_thread}/thread)", f"{device.registers_per_sm}"),
        "shared_memory": (smem_block, format_bytes(occ.shared_memory_per_sm)),
        "blocks": ("1 block", _plural(device.max_blocks_per_sm, "block")),
    }
    names = {"warps": "warps", "registers": "registers", "shared_memory": "shared memory", "blocks": "blocks"}
    for key, (per_block, per_sm) in rows.items():
        limiter = key in occ.limiters
        style = LIMITER_STYLE if limiter else None
        table.add_row(Text(names[key], style=style), per_block, per_sm, Text(str(occ.limits[key]), style=style),
                      Text("<- limiter", style=style) if limiter else "")
    return table


def summary_text(occ: Occupancy) -> Text:
    text = Text()
    text.append(f"{_plural(occ.blocks_per_sm, 'block')} per SM", style="bold")
    text.append(f" = {occ.warps_per_sm} of {occ.max_warps_per_sm} warps, {occ.threads_per_sm} threads: ")
    text.append(f"occupancy {occ.occupancy:.1%}", style="bold")
    text.append(f" (limited by {', '.join(k.replace('_', ' ') for k in occ.limiters)})")
    if occ.waves is not None:
        w = occ.waves
        text.append(f"\ngrid of {w.grid_blocks} blocks: {w.blocks_per_wave} per wave ({occ.sm_count} SMs) -> "
                    f"{w.waves:.2f} waves ({w.full_waves} full"
                    + (f" + a tail of {w.tail_blocks} blocks, {w.tail_fraction:.0%} of a wave" if w.tail_blocks else "")
                    + f"; {w.efficiency:.0%} of the SM slots used)")
    for note in occ.notes:
        text.append(f"\nnote: {note}", style="yellow")
    return text


def _columns(points: list[SweepPoint], current_x: int) -> tuple[list[SweepPoint], int]:
    """At most CHART_WIDTH points, evenly spread, always including the current one; and its column."""
    if len(points) <= CHART_WIDTH:
        chosen = points
    else:
        step = len(points) / CHART_WIDTH
        chosen = [points[int(i * step)] for i in range(CHART_WIDTH - 1)] + [points[-1]]
    column = min(range(len(chosen)), key=lambda i: abs(chosen[i].x - current_x))
    exact = next((p for p in points if p.x == current_x), None)
    if exact is not None:
        chosen = chosen[:column] + [exact] + chosen[column + 1:]
    return chosen, column


def sweep_chart(title: str, points: list[SweepPoint], current_x: int, label: Callable[[int], str]) -> Group:
    """One line of bars (height = occupancy, blank = cannot launch), a marker under the current point, the axis,
    then where the current run of equal blocks begins and ends and what the neighbouring runs give."""
    chosen, column = _columns(points, current_x)
    bars = Text()
    for i, p in enumerate(chosen):
        char = BARS[round(p.occupancy * (len(BARS) - 1))] if p.error is None else "x"
        style = "bold cyan" if i == column else ("red" if p.error else "green")
        bars.append(char, style=style)
    marker = Text(" " * column + "^", style="bold cyan")
    lo, hi = label(chosen[0].x), label(chosen[-1].x)
    axis = Text(lo + " " * max(1, len(chosen) - len(lo) - len(hi)) + hi, style="dim")

    runs = sweep_runs(points)
    index = next((i for i, r in enumerate(runs) if r.start <= current_x <= r.end), None)
    lines = Text()
    if index is None:
        lines.append(f"current {label(current_x)} is off this chart's samples")
    else:
        run = runs[index]
        span = label(run.start) if run.start == run.end else f"{label(run.start)} to {label(run.end)}"
        lines.append(f"here {label(current_x)}: {_plural(run.blocks_per_sm, 'block')}/SM, {run.occupancy:.0%}",
                     style="bold cyan")
        lines.append(f" (same from {span})")
        for neighbour, word in ((index - 1, "below"), (index + 1, "above")):
            if 0 <= neighbour < len(runs):
                other = runs[neighbour]
                edge = other.end if word == "below" else other.start
                result = ("cannot launch" if other.error else
                          f"{_plural(other.blocks_per_sm, 'block')}/SM, {other.occupancy:.0%}")
                lines.append(f"; {word}: {label(edge)} -> {result}")
    return Group(Text(title, style="bold"), bars, marker, axis, lines)


def render_occupancy(occ: Occupancy, device: Device, sweeps: dict[str, list[SweepPoint]] | None,
                     console: Console) -> None:
    console.print(limits_table(occ, device))
    console.print(summary_text(occ))
    if not sweeps:
        return
    views = []
    if "threads" in sweeps:
        views.append(sweep_chart("Impact of varying block size (threads per block)", sweeps["threads"],
                                 occ.threads_per_block, str))
    if "registers" in sweeps:
        views.append(sweep_chart("Impact of varying register count per thread", sweeps["registers"],
                                 occ.registers_per_thread, str))
    if "shared_memory" in sweeps:
        views.append(sweep_chart("Impact of varying shared memory per block (bytes)", sweeps["shared_memory"],
                                 occ.shared_memory_per_block, str))
    spaced = []
    for view in views:
        spaced.extend([view, Text("")])
    console.print(Panel(Group(*spaced[:-1]), title="impact of varying (bar height = occupancy, x = cannot launch)",
                        title_align="left", expand=False))


def render_best_block(result, device: Device, kernel: dict | None, console: Console) -> None:
    """The block size with the highest occupancy, and every size tried (as cudaOccMaxPotentialOccupancyBlockSize
    tries them: from the largest down, one warp at a time, stopping at full occupancy)."""
    text = Text()
    if kernel is not None:
        params = ", ".join(f"{k}={v}" for k, v in kernel["params"].items())
        text.append(f"{kernel['name']} ({params}): {kernel['registers_per_thread']} registers/thread "
                    f"({kernel['registers_source']}), {kernel['shared_memory_per_block']} B static shared memory "
                    "per block\n", style="dim")
    text.append(f"Best block size on {device.name} ({device.id}): ", style="bold")
    text.append(f"{result.block_size} threads", style="bold green")
    text.append(f" -> {_plural(result.blocks_per_sm, 'block')}/SM, {result.threads_per_sm} threads/SM, "
                f"occupancy {result.occupancy:.0%}; minimum grid for a full machine: {result.min_grid_size} blocks "
                f"({result.blocks_per_sm} x {device.sm_count} SMs)")
    console.print(text)
    table = Table(title="block sizes tried (largest first; the search stops at full occupancy)",
                  title_justify="left", title_style="dim")
    for column, justify in (("threads", "right"), ("regs", "right"), ("smem B", "right"), ("blocks/SM", "right"),
                            ("threads/SM", "right"), ("occupancy", "right"), ("limited by", "left")):
        table.add_column(column, justify=justify)
    for t in result.trials:
        style = "bold green" if t.threads == result.block_size else ("red" if t.error else None)
        table.add_row(str(t.threads), str(t.registers_per_thread), f"{t.shared_memory_per_block:,}",
                      str(t.blocks_per_sm), str(t.threads * t.blocks_per_sm), f"{t.occupancy:.0%}",
                      "cannot launch" if t.error else ", ".join(k.replace("_", " ") for k in t.limiters),
                      style=style)
    console.print(table)
