"""Pictures: the occupancy calculator's three "impact of varying" graphs, a sweep's metric against the varied
parameter (one series per device), and a roofline with the kernel's point.

Exported with ``--plot FILE.png|.svg|.html`` through matplotlib's Agg/SVG backends (a base dependency: no
display, no GUI toolkit); ``.html`` is one self-contained page with the figure inlined as SVG. Figures are built
on ``matplotlib.figure.Figure`` directly (no pyplot global state), so this is safe in worker threads.
"""
from __future__ import annotations

import html
import io
import math
from pathlib import Path

from perfmodel.errors import PerfmodelError

FORMATS = (".png", ".svg", ".html")
COLORS = ["#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
          "#bcbd22"]


def check_plot_path(path) -> Path:
    from perfmodel.cli.common import check_output_path

    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise PerfmodelError(f"--plot {path}: the file name must end in .png, .svg or .html (got "
                             f"{path.suffix or 'no suffix'!r})")
    return check_output_path(path, "--plot")


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def figure_bytes(fig, fmt: str) -> bytes:
    """The figure as PNG or SVG bytes (SVG without a date, so the same figure gives the same file)."""
    buffer = io.BytesIO()
    if fmt == "svg":
        import matplotlib

        with matplotlib.rc_context({"svg.hashsalt": "perfmodel", "svg.fonttype": "none"}):
            fig.savefig(buffer, format="svg", metadata={"Date": None})
    else:
        fig.savefig(buffer, format="png", dpi=100, metadata={"Software": "perfmodel (matplotlib)"})
    return buffer.getvalue()


def inline_svg(fig) -> str:
    """The figure as an ``<svg>`` element to put inside an HTML page (the XML prologue dropped)."""
    text = figure_bytes(fig, "svg").decode("utf-8")
    return text[text.index("<svg"):]


def html_page(title: str, body: str) -> str:
    """A self-contained page: inline CSS, no script, no external resource."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="perfmodel">
<title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1100px;
       color: #1b1b1b; background: #ffffff; }}
h1 {{ font-size: 1.5em; border-bottom: 3px solid #2ca02c; padding-bottom: 6px; }}
h2 {{ font-size: 1.15em; margin-top: 1.6em; }}
table {{ border-collapse: collapse; margin: 8px 0; }}
th, td {{ border: 1px solid #cccccc; padding: 3px 8px; text-align: left; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
tr.bound td {{ background: #fde0dc; font-weight: bold; }}
.headline {{ font-size: 1.1em; background: #eef7ee; border-left: 6px solid #2ca02c; padding: 10px 14px; }}
.bar {{ display: inline-block; height: 10px; background: #1f77b4; }}
figure {{ margin: 12px 0; }} figure svg {{ max-width: 100%; height: auto; }}
code, pre {{ font-family: ui-monospace, "DejaVu Sans Mono", monospace; }}
</style>
</head>
<body>
{body}
</body>
</html>
"""


def export(fig, path, title: str = "perfmodel") -> Path:
    """Write ``fig`` to ``path`` by its suffix: PNG, SVG, or a self-contained HTML page holding the SVG."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".html":
        body = f"<h1>{html.escape(title)}</h1>\n<figure>{inline_svg(fig)}</figure>"
        path.write_text(html_page(title, body), encoding="utf-8")
    elif suffix in (".png", ".svg"):
        path.write_bytes(figure_bytes(fig, suffix[1:]))
    else:
        raise PerfmodelError(f"--plot {path}: the file name must end in .png, .svg or .html")
    return path


# ---------------------------------------------------------------------------------------------------------
# sweep / compare: the metric against the varied parameter, one series per device

def plot_series(doc: dict, metric: str = "gflops") -> list[tuple[str, str, list[tuple[str, list, list, list]]]]:
    """Panels of (label of the problem size, x parameter, [(device, xs, ys, best flags)]): x is the first varied
    tunable (else the first varied param); one panel per combination of the other varied params."""
    varied = [v for v in doc["varied"] if v != "device"]
    if not varied:
        return []
    problem = doc.get("problem_params") or []
    tunables = [v for v in varied if v not in problem]
    x_name = tunables[0] if tunables else varied[0]
    others = [v for v in varied if v != x_name]
    key = "predicted_gflops" if metric == "gflops" else "predicted_time_s"
    devices = doc.get("devices") or list(dict.fromkeys(r.get("device", "") for r in doc["points"]))
    panels = []
    for combo in dict.fromkeys(tuple(r.get(o) for o in others) for r in doc["points"]):
        label = ", ".join(f"{o}={v}" for o, v in zip(others, combo))
        series = []
        for device in devices:
            rows = [r for r in doc["points"] if r.get("device") == device and r["valid"]
                    and tuple(r.get(o) for o in others) == combo]
            rows.sort(key=lambda r: r[x_name])
            series.append((device, [r[x_name] for r in rows], [r[key] for r in rows], [r["best"] for r in rows]))
        panels.append((label, x_name, series))
    return panels


def sweep_figure(doc: dict, metric: str = "gflops"):
    panels = plot_series(doc, metric)
    if not panels:
        raise PerfmodelError("--plot: nothing varies, nothing to plot (give --vary NAME=values)")
    n = len(panels)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig = _figure(4.6 * cols + 0.6, 3.4 * rows + 0.4)
    axes = fig.subplots(rows, cols, squeeze=False)
    ylabel = "predicted GFLOPS" if metric == "gflops" else "predicted time (s)"
    for i, (label, x_name, series) in enumerate(panels):
        ax = axes[i // cols][i % cols]
        xs_all = sorted({x for _, xs, _, _ in series for x in xs})
        for j, (device, xs, ys, best) in enumerate(series):
            if not xs:
                continue
            color = COLORS[j % len(COLORS)]
            ax.plot(xs, ys, marker="o", color=color, label=device)
            for x, y, is_best in zip(xs, ys, best):
                if is_best:
                    ax.plot([x], [y], marker="*", markersize=15, color=color, markeredgecolor="black")
        if xs_all and min(xs_all) > 0 and max(xs_all) / min(xs_all) >= 8:
            ax.set_xscale("log", base=2)
        ax.set_xticks(xs_all, [str(x) for x in xs_all])
        ys_all = [y for _, _, ys, _ in series for y in ys if y and y > 0]
        if metric == "time" or (ys_all and max(ys_all) / min(ys_all) > 20):   # G80 beside H100: a log scale
            ax.set_yscale("log")
        ax.set_xlabel(x_name)
        ax.set_ylabel(ylabel)
        ax.set_title(label or doc["kernel"], fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].set_visible(False)
    fig.suptitle(f"{doc['kernel']}: {ylabel} (★ best per device and size)")
    return fig


def sweep_figure_export(doc: dict, path, metric: str = "gflops") -> Path:
    return export(sweep_figure(doc, metric), path, title=f"perfmodel sweep: {doc['kernel']}")


# ---------------------------------------------------------------------------------------------------------
# occupancy: the calculator's three graphs

def occupancy_figure(occ, device, sweeps: dict):
    """Blocks per SM (steps) and occupancy against threads per block, registers per thread and shared memory per
    block, the current configuration marked, as the three graphs of NVIDIA's occupancy calculator."""
    fig = _figure(15, 4.2)
    axes = fig.subplots(1, 3)
    views = [("threads", "threads per block", occ.threads_per_block),
             ("registers", "registers per thread", occ.registers_per_thread),
             ("shared_memory", "shared memory per block (bytes)", occ.shared_memory_per_block)]
    for ax, (key, xlabel, current) in zip(axes, views):
        points = sweeps.get(key) or []
        xs = [p.x for p in points]
        blocks = [p.blocks_per_sm if p.error is None else 0 for p in points]
        warps = [100 * p.occupancy if p.error is None else 0 for p in points]
        ax.step(xs, blocks, where="post", color=COLORS[0], label="blocks per SM")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("resident blocks per SM", color=COLORS[0])
        ax.set_ylim(bottom=0)
        twin = ax.twinx()
        twin.step(xs, warps, where="post", color=COLORS[1], linestyle="--", label="occupancy %")
        twin.set_ylabel("occupancy (% of max warps)", color=COLORS[1])
        twin.set_ylim(0, 105)
        here = next((p for p in points if p.x == current), None)
        if here is not None and here.error is None:
            ax.plot([current], [here.blocks_per_sm], marker="o", markersize=10, color=COLORS[2], zorder=5,
                    label=f"this kernel ({current})")
        ax.axvline(current, color=COLORS[2], linestyle=":", linewidth=1)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
        ax.set_title(f"Impact of varying {xlabel.split(' (')[0]}", fontsize=10)
    fig.suptitle(f"Occupancy on {device.name} ({device.id}, CC {device.compute_capability}): "
                 f"{occ.threads_per_block} threads, {occ.registers_per_thread} registers, "
                 f"{occ.shared_memory_per_block} B shared memory per block -> {occ.blocks_per_sm} blocks/SM, "
                 f"{occ.occupancy:.0%}")
    return fig


def occupancy_export(occ, device, sweeps: dict, path) -> Path:
    return export(occupancy_figure(occ, device, sweeps), path, title=f"perfmodel occupancy on {device.id}")


# ---------------------------------------------------------------------------------------------------------
# roofline

def roofline_numbers(doc: dict) -> dict:
    """The seed model's peak (FP32, or the kernel's FP64 / tensor mix), DRAM bandwidth, the kernel's arithmetic
    intensity (flops per modelled DRAM byte) and GFLOPS."""
    model = doc["model"]
    peak = float(doc["seed_model"]["peak_gflops"])
    bandwidth = float(model["rates"]["dram_bandwidth_bytes_per_s"]) / 1e9
    flops = float(doc["counts"].get("flops", 0) or 0)
    dram = float(model["traffic"]["dram_bytes"] or 0)
    intensity = flops / dram if dram > 0 else None
    operand = float(doc["seed_model"].get("operand_bytes", 4) or 4)
    seed_intensity = doc["cgma"] / operand if doc.get("cgma") else None   # CGMA flops per operand-size load
    return {"peak_gflops": peak, "peak_basis": doc["seed_model"].get("peak_basis", "FP32"), "dram_gb_per_s": bandwidth, "ridge": peak / bandwidth, "intensity": intensity,
            "predicted_gflops": float(doc["predicted_gflops"]), "seed_intensity": seed_intensity,
            "seed_gflops": float(doc["achievable_gflops"])}


def roofline_figure(doc: dict):
    numbers = roofline_numbers(doc)
    fig = _figure(7.5, 5)
    ax = fig.subplots()
    peak, bw = numbers["peak_gflops"], numbers["dram_gb_per_s"]
    xs_of_interest = [v for v in (numbers["intensity"], numbers["seed_intensity"], numbers["ridge"]) if v]
    lo = min(xs_of_interest + [0.1]) / 4
    hi = max(xs_of_interest + [10.0]) * 4
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(xs, [min(peak, x * bw) for x in xs], color="black", linewidth=2, label="roof: min(peak, AI x DRAM BW)")
    ax.axhline(peak, color="gray", linestyle=":", linewidth=1)
    ax.text(hi, peak * 1.05, f"peak {numbers['peak_basis']} {peak:,.1f} GFLOPS", ha="right", va="bottom", fontsize=8)
    ax.text(lo * 1.2, lo * 1.2 * bw * 1.3, f"DRAM {bw:,.1f} GB/s", rotation=0, fontsize=8)
    if numbers["intensity"] and numbers["predicted_gflops"] > 0:
        ax.plot([numbers["intensity"]], [numbers["predicted_gflops"]], marker="o", markersize=11, color=COLORS[2],
                linestyle="none", label=f"{doc['kernel']}: {numbers['predicted_gflops']:,.1f} GFLOPS at "
                                         f"{numbers['intensity']:.3g} flop/B (bottleneck model)")
    if numbers["seed_intensity"] and numbers["seed_gflops"] > 0:
        ax.plot([numbers["seed_intensity"]], [numbers["seed_gflops"]], marker="s", markersize=9, color=COLORS[0],
                linestyle="none", label=f"seed model: CGMA {doc['cgma']:.3g} -> {numbers['seed_gflops']:,.1f} "
                                        "GFLOPS")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flops per DRAM byte)")
    ax.set_ylabel("GFLOPS")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"Roofline: {doc['kernel']} on {doc.get('device_name', doc['device'])} "
                 f"({', '.join(f'{k}={v}' for k, v in doc['params'].items())})", fontsize=10)
    return fig


def roofline_export(doc: dict, path) -> Path:
    path = Path(path)
    if path.suffix.lower() == ".html":
        from perfmodel.report.html_report import write_analysis_html

        return write_analysis_html(doc, path)
    return export(roofline_figure(doc), path, title=f"roofline of {doc['kernel']}")
