#!/usr/bin/env python3
"""Run the cuda-samples corpus through ``perfmodel.analyze`` and tabulate what happens.

Usage::

    python bench/corpus_run.py CORPUS_DIR [--device h100] [--json OUT] [--markdown OUT] [-k SUBSTRING ...]

``CORPUS_DIR`` is the cuda-samples checkout (the folder holding ``Samples/`` and ``Common/``; a folder holding
``cuda-samples/`` is accepted too).

The specs live in ``bench/corpus_specs/*.yaml``. Their ``source:`` is written as
``"{CORPUS}/Samples/.../file.cu"``: this script substitutes ``{CORPUS}`` with the absolute corpus path and writes
the resolved specs into a temporary folder, from which they are loaded (the corpus files themselves are never
copied or edited). Each spec cites, in a comment, the host-code lines its launch and sizes come from.

Every kernel is analysed on its own; a ``PerfmodelError`` (compile, simulation, spec, occupancy) is caught and
reported as that kernel's status. Any other exception is reported as ``internal: ...`` (an engine bug). The
script exits 0 either way: it is a measurement.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import re
import shlex
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEC_DIR = HERE / "corpus_specs"
PLACEHOLDER = "{CORPUS}"


def corpus_root(path: str) -> Path:
    root = Path(path).expanduser().resolve()
    if (root / "Samples").is_dir():
        return root
    if (root / "cuda-samples" / "Samples").is_dir():
        return root / "cuda-samples"
    raise SystemExit(f"{path}: no Samples/ folder (expected the cuda-samples checkout)")


def resolve_specs(root: Path, out_dir: Path, selectors: list[str] | None = None) -> list[Path]:
    """Write every corpus spec with ``{CORPUS}`` replaced by ``root`` into ``out_dir``; return their paths."""
    paths = []
    for spec in sorted(SPEC_DIR.glob("*.yaml")):
        if selectors and not any(s.lower() in spec.stem.lower() for s in selectors):
            continue
        text = spec.read_text().replace(PLACEHOLDER, str(root))
        target = out_dir / spec.name
        target.write_text(text)
        paths.append(target)
    return paths


def _entry_and_file(path: Path) -> tuple[str, str]:
    import yaml

    data = yaml.safe_load(path.read_text())
    source = str(data.get("source", ""))
    marker = "/Samples/"
    short = source[source.index(marker) + 1:] if marker in source else source
    return str(data.get("entry", "?")), short


def run_one(path: Path, device: str) -> dict:
    from perfmodel.analysis import analyze
    from perfmodel.errors import PerfmodelError

    entry, source = _entry_and_file(path)
    row: dict = {"kernel": path.stem, "entry": entry, "source": source, "grid": None, "block": None,
                 "status": "error", "detail": "", "correct": None, "registers": None, "predicted_time_s": None,
                 "bound": None, "sim_seconds": None, "sampled": None}
    started = time.perf_counter()
    try:
        from perfmodel.spec import load_spec

        spec = load_spec(str(path))
        launch = spec.instantiate({})
        row["grid"], row["block"] = list(launch.grid), list(launch.block)
        row["dynamic_shared_bytes"] = launch.dynamic_shared_bytes
        result = analyze(spec, device)
        if result.sim.correct is None and "not computed" in (result.sim.correct_detail or "") and \
                getattr(launch, "outputs", None):
            # a long run counted its uniform loops from a few iterations, so its outputs were not computed:
            # execute everything (analyze --execute-all) to check them, where that ends within a minute
            try:
                result = analyze(spec, device, execute_all=True, timeout=60)
                row["executed_all"] = True
            except PerfmodelError:
                pass
    except PerfmodelError as err:
        row["detail"] = " ".join(str(err).split())
        row["wall_seconds"] = time.perf_counter() - started
        return row
    except Exception as err:   # noqa: BLE001 - an engine bug: report it and go on
        row["status"] = "internal"
        row["detail"] = f"{type(err).__name__}: {' '.join(str(err).split())}"
        row["traceback"] = traceback.format_exc()
        row["wall_seconds"] = time.perf_counter() - started
        return row
    row["wall_seconds"] = time.perf_counter() - started
    sim = result.sim
    row["registers"] = result.registers.per_thread
    row["predicted_time_s"] = result.predicted_time_s
    row["bound"] = result.bound
    row["sim_seconds"] = sim.sim_seconds
    row["sampled"] = bool(sim.sampled)
    row["blocks_simulated"] = sim.blocks_simulated
    row["correct"] = sim.correct
    row["detail"] = sim.correct_detail
    if not result.launch.outputs:
        row["status"] = "not checked"
        row["detail"] = "no reference (the spec checks no output)"
    elif sim.correct is None:
        row["status"] = "not checked"
    else:
        row["status"] = "correct" if sim.correct else "wrong"
    return row


def failure_class(row: dict) -> str:
    """A coarse reason for a kernel that did not run to completion (empty when it did)."""
    import re

    if row["status"] in ("correct", "wrong", "not checked"):
        return ""
    detail = row["detail"]
    match = re.search(r"the PTX instruction '([a-z]+)[.']", detail)
    if match:
        return f"unsupported PTX ({match.group(1)})"
    if "unterminated statement: .section" in detail:
        return "engine bug: PTX parser (.section block)"
    if row["status"] == "internal":
        return "engine bug: internal error"
    if "not a variable perfmodel can place" in detail or "which is not a parameter of" in detail:
        return "engine bug: executor"
    if "but the array has dtype" in detail:
        return "spec limitation: no float16 array dtype"
    if "data race:" in detail:
        return "the kernel's own data race (reported by the executor)"
    return "error"


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return ""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def _dims(d) -> str:
    if not d:
        return ""
    while len(d) > 1 and d[-1] == 1:
        d = d[:-1]
    return "×".join(str(x) for x in d) if len(d) > 1 else str(d[0])


def status_text(row: dict, limit: int | None = 160) -> str:
    status = row["status"]
    if status == "correct":
        text = "correct ✓"
    elif status == "wrong":
        text = "wrong ✗: " + row["detail"]
    elif status == "not checked":
        text = "ok (not checked)"
    elif status == "internal":
        text = "internal error: " + row["detail"]
    else:
        text = "error: " + row["detail"]
    if row.get("sampled") and status in ("correct", "wrong", "not checked"):
        text += f" [sampled {row.get('blocks_simulated')} blocks]"
    if row.get("executed_all") and status in ("correct", "wrong"):
        text += " [--execute-all]"
    if limit and len(text) > limit:
        text = text[:limit - 1] + "…"
    return text


COLUMNS = ["kernel", "instantiation", "grid×block", "status", "regs", "predicted", "bound", "sim s"]


def table_cells(row: dict, limit: int | None = 160) -> list[str]:
    geometry = f"{_dims(row['grid'])} × {_dims(row['block'])}" if row["grid"] else ""
    if row.get("dynamic_shared_bytes"):
        geometry += f" (+{row['dynamic_shared_bytes']} B smem)"
    return [row["kernel"], row["entry"], geometry, status_text(row, limit),
            "" if row["registers"] is None else str(row["registers"]), _fmt_time(row["predicted_time_s"]),
            row["bound"] or "", "" if row["sim_seconds"] is None else f"{row['sim_seconds']:.1f}"]


def summary(rows: list[dict]) -> str:
    ran = sum(r["status"] in ("correct", "wrong", "not checked") for r in rows)
    correct = sum(r["status"] == "correct" for r in rows)
    wrong = sum(r["status"] == "wrong" for r in rows)
    return (f"{ran} of {len(rows)} ran to completion, {correct} checked correct"
            f" ({wrong} wrong, {len(rows) - ran} failed)")


def failure_summary(rows: list[dict]) -> list[str]:
    from collections import Counter

    counts = Counter(failure_class(r) for r in rows if failure_class(r))
    return [f"- {reason}: {n}" for reason, n in counts.most_common()]


def engine_description(note: str | None = None) -> str:
    """Which perfmodel ran: its folder, and the git commit of that folder when it is a checkout."""
    import subprocess

    import perfmodel

    folder = Path(perfmodel.__file__).resolve().parent
    text = f"`{folder}`"
    try:
        commit = subprocess.run(["git", "-C", str(folder), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--", "."], capture_output=True,
                               text=True, check=True).stdout.strip()
        text += f" at commit `{commit}`" + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        text += " (not a git checkout)"
    return text + (f"; {note}" if note else "")


def markdown(rows: list[dict], command: str, device: str, engine: str = "") -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# cuda-samples corpus through `perfmodel.analyze`",
        "",
        f"Generated {now} by:",
        "",
        "```",
        command,
        "```",
        "",
        f"Engine: {engine}.",
        "",
        f"Device profile: `{device}`. Specs: `bench/corpus_specs/*.yaml` (launch geometry and sizes from each "
        "sample's host code, cited in each spec; where a size was scaled down for the 2-core simulator the spec "
        "says so). Status: `correct ✓` = outputs match a numpy reference, `wrong ✗` = they do not, "
        "`ok (not checked)` = ran to completion with no reference, `error` = a `PerfmodelError`, `internal error` "
        "= any other exception. `[--execute-all]`: the default run counted long uniform loops from a few iterations "
        "(outputs not computed), so the kernel was run again executing everything to check its outputs.",
        "",
        f"**{summary(rows)}.**",
        "",
        "Why the failures failed (`failure_class` in the script):",
        "",
        *(failure_summary(rows) or ["- none"]),
        "",
        "| file | " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * (len(COLUMNS) + 1),
    ]
    for row in rows:
        lines.append("| `" + esc(row["source"]) + "` | " + " | ".join(esc(c) for c in table_cells(row, None)) + " |")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", help="the cuda-samples checkout (holding Samples/ and Common/)")
    parser.add_argument("--device", default="h100")
    parser.add_argument("--json", dest="json_out", help="write the rows as JSON here")
    parser.add_argument("--markdown", dest="markdown_out", help="write the results table as Markdown here")
    parser.add_argument("--engine-note", help="a line about the engine that ran, for the Markdown header")
    parser.add_argument("-k", dest="selectors", action="append", help="only specs whose name contains this")
    args = parser.parse_args(argv)

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    console = Console(width=max(Console().width, 160))
    root = corpus_root(args.corpus)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="corpus_specs_") as tmp:
        paths = resolve_specs(root, Path(tmp), args.selectors)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=False) as progress:
            task = progress.add_task("corpus", total=len(paths))
            for path in paths:
                progress.update(task, description=f"{path.stem:<40}")
                rows.append(run_one(path, args.device))
                progress.advance(task)

    table = Table(title=f"cuda-samples corpus on {args.device}", show_lines=False)
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*table_cells(row))
    console.print(table)
    console.print(summary(rows))
    for line in failure_summary(rows):
        console.print(line)

    command = "python bench/corpus_run.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None
                                                                               else sys.argv[1:]))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"command": command, "device": args.device,
                                                   "engine": engine_description(args.engine_note), "rows": rows},
                                                  indent=1, default=str))
    if args.markdown_out:
        text = markdown(rows, command, args.device, engine_description(args.engine_note))
        # the committed table names no folder of the machine it ran on: the corpus is CORPUS_DIR, this
        # checkout is the repository itself
        for folder, name in ((str(Path(root).resolve()), "CORPUS_DIR"), (str(Path(args.corpus).resolve()), "CORPUS_DIR"),
                             (str(HERE.parent), "."), (str(Path.cwd()), ".")):
            text = text.replace(folder, name)
        text = re.sub(r"/\S*?/site-packages/", "<site-packages>/", text)
        Path(args.markdown_out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
