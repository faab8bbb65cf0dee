"""The HTML report of ``perfmodel analyze --plot FILE.html``: one self-contained file (inline CSS and an inline
SVG roofline; no script, no external resource) with the headline, launch and occupancy, CGMA, per-resource
bounds, the hottest source lines and the advice."""
from __future__ import annotations

import html
from pathlib import Path

from perfmodel.report.analyze_view import fmt_time
from perfmodel.report.plots import html_page, inline_svg, roofline_figure


def _e(value) -> str:
    return html.escape(str(value))


def _rows(pairs) -> str:
    return "\n".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in pairs)


def analysis_html(doc: dict) -> str:
    occ = doc["occupancy"]
    launch = doc["launch"]
    params = ", ".join(f"{k}={v}" for k, v in doc["params"].items())
    title = f"{doc['kernel']} on {doc['device_name']} ({doc['device']})"
    headline = (f"{_e(doc['kernel'])} on {_e(doc['device_name'])}: <b>{doc['predicted_gflops']:,.1f} GFLOPS</b> in "
                f"<b>{_e(fmt_time(doc['predicted_time_s']))}</b> &middot; bound: <b>{_e(doc['bound'])}</b> &middot; "
                f"occupancy <b>{occ['occupancy']:.0%}</b> ({occ['blocks_per_sm']} blocks/SM, limited by "
                f"{_e(', '.join(occ['limiters']))})")
    launch_rows = _rows([
        ("params", params or "defaults"),
        ("grid x block", f"{tuple(launch['grid'])} x {tuple(launch['block'])} = {launch['total_blocks']:,} blocks of "
                         f"{launch['threads_per_block']} threads"),
        ("registers per thread", f"{doc['registers_per_thread']} ({doc['registers_source']})"),
        ("shared memory per block", f"{doc['shared_memory_per_block']:,} B"),
        ("blocks per SM", f"{occ['blocks_per_sm']} (limits: "
                          + ", ".join(f"{k} {v}" for k, v in occ["limits"].items()) + ")"),
        ("warps per SM", f"{occ['warps_per_sm']} of {occ['max_warps_per_sm']}"),
        ("simulation", "sampled" if doc["sampled"] else "exact") ,
        ("outputs", doc["correct_detail"]),
    ])
    seed = doc["seed_model"]
    cgma_rows = _rows([
        ("CGMA", f"{doc['cgma']:.4g} flops per global load" if doc["cgma"] is not None else "-"),
        ("seed bound", f"min({seed['peak_gflops']:,.1f} {seed.get('peak_basis', 'FP32')} peak, CGMA x "
                       f"{seed['dram_gb_per_s']:,.1f} GB/s / {seed.get('operand_bytes', 4):.3g} B) = "
                       f"{doc['achievable_gflops']:,.1f} GFLOPS ({seed['bound']})"),
    ])
    resources = sorted(doc["resources"].values(), key=lambda r: -float(r["time_s"]))
    top = max((float(r["time_s"]) for r in resources), default=0.0) or 1.0
    resource_rows = "\n".join(
        f"<tr class=\"{'bound' if r['name'] == doc['bound'] else ''}\"><td>{_e(r['label'])}</td>"
        f"<td class=\"num\">{_e(fmt_time(r['time_s']))}</td><td class=\"num\">{100 * r['share_of_peak']:.0f}%</td>"
        f"<td><span class=\"bar\" style=\"width:{int(240 * float(r['time_s']) / top)}px\"></span></td></tr>"
        for r in resources if float(r["time_s"]) > 0)
    hot = "\n".join(f"<tr><td class=\"num\">{_e(_where(h))}</td><td class=\"num\">{100 * h['share']:.0f}%</td>"
                    f"<td><code>{_e(h['source'])}</code></td></tr>" for h in doc.get("hot_lines") or [])
    advice = "\n".join(f"<li>{_e(a)}</li>" for a in doc.get("advice") or [])
    body = f"""<h1 id="title">perfmodel: {_e(title)}</h1>
<p class="headline" id="headline">{headline}</p>
<h2>Roofline</h2>
<figure id="roofline">{inline_svg(roofline_figure(doc))}</figure>
<h2>Launch &amp; occupancy</h2>
<table id="launch">{launch_rows}</table>
<h2>CGMA (seed model)</h2>
<table id="cgma">{cgma_rows}</table>
<h2>Per-resource bounds (time; share of peak)</h2>
<table id="resources"><tr><th>resource</th><th>time</th><th>share of peak</th><th></th></tr>
{resource_rows}</table>
<h2>Hottest source lines</h2>
<table id="hot-lines"><tr><th>line</th><th>share</th><th>source</th></tr>
{hot}</table>
<h2>Advice</h2>
<ul id="advice">{advice}</ul>
"""
    return html_page(f"perfmodel: {title}", body)


def write_analysis_html(doc: dict, path) -> Path:
    path = Path(path)
    path.write_text(analysis_html(doc), encoding="utf-8")
    return path


def _where(hot: dict) -> str:
    """A hot line's place: its number in the kernel's file, or header:number."""
    return str(hot["line"]) if not hot.get("file") else f"{hot['file'].rsplit('/', 1)[-1]}:{hot['line']}"
