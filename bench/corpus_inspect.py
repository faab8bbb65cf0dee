#!/usr/bin/env python3
"""Run ``perfmodel kernels inspect`` over the corpus files the corpus specs name, for comparison with
``corpus_run.py``: what the compile stage alone says about each kernel (registers, PTX size, the PTX
instructions the simulator does not support).

Usage::

    python bench/corpus_inspect.py CORPUS_DIR [--device h100] [--json OUT] [--markdown OUT]

Each distinct source file is inspected once, with ``--kernel EXPR`` for every template instantiation the specs
launch (``perfmodel kernels inspect FILE -k 'MatrixMulCUDA<32>' --device h100 --json``, as a user would run it).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_run import PLACEHOLDER, SPEC_DIR, corpus_root  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("--device", default="h100")
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--markdown", dest="markdown_out")
    args = parser.parse_args(argv)
    root = corpus_root(args.corpus)

    files: dict[str, dict] = {}        # source -> {"entries": {spec name: entry}, "templates": set}
    for spec in sorted(SPEC_DIR.glob("*.yaml")):
        data = yaml.safe_load(spec.read_text())
        source = data["source"].replace(PLACEHOLDER, str(root))
        slot = files.setdefault(source, {"entries": {}, "templates": []})
        slot["entries"][spec.stem] = data["entry"]
        if "<" in data["entry"] and data["entry"] not in slot["templates"]:
            slot["templates"].append(data["entry"])

    rows = []
    commands = []
    for source, slot in files.items():
        cmd = ["perfmodel", "kernels", "inspect", source, "--device", args.device, "--json"]
        for expr in slot["templates"]:
            cmd += ["--kernel", expr]
        commands.append(" ".join(shlex.quote(c) for c in cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        short = source[source.index("Samples/"):]
        if proc.returncode != 0:
            error = " ".join((proc.stderr or proc.stdout).split())[:300]
            for name, entry in slot["entries"].items():
                rows.append({"spec": name, "file": short, "kernel": entry, "status": "error", "detail": error})
            continue
        found = json.loads(proc.stdout)
        by_expr = {k["expression"]: k for k in found}
        by_name = {k["name"]: k for k in found}
        for name, entry in slot["entries"].items():
            kernel = by_expr.get(entry) or by_name.get(entry)
            if kernel is None:
                rows.append({"spec": name, "file": short, "kernel": entry, "status": "missing",
                             "detail": f"inspect lists {', '.join(sorted(by_expr))}"})
                continue
            unsupported = kernel.get("unsupported") or []
            rows.append({"spec": name, "file": short, "kernel": entry,
                         "status": "unsupported PTX" if unsupported else "ok",
                         "registers": kernel.get("registers"), "shared_bytes": kernel.get("shared_bytes"),
                         "ptx_instructions": kernel.get("ptx_instructions"),
                         "detail": ", ".join(str(u) for u in unsupported)})

    ok = sum(r["status"] == "ok" for r in rows)
    summary = f"{ok} of {len(rows)} kernels compile with only supported PTX instructions"
    print(summary)
    for r in rows:
        print(f"{r['spec']:<50} {r['status']:<16} regs={r.get('registers')} {r['detail'][:120]}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"commands": commands, "rows": rows}, indent=1))
    if args.markdown_out:
        now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        lines = ["# `perfmodel kernels inspect` over the cuda-samples corpus", "",
                 f"Generated {now} by `python bench/corpus_inspect.py "
                 f"{' '.join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))}`, which runs, "
                 "per file, `perfmodel kernels inspect FILE --device h100 --json --kernel EXPR...` (one `--kernel` "
                 "per template instantiation the specs launch).", "", f"**{summary}.**", "",
                 "| spec | file | kernel | inspect | regs | smem B | PTX instrs | unsupported / error |",
                 "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            detail = r["detail"].replace("|", "\\|")
            lines.append(f"| {r['spec']} | `{r['file']}` | `{r['kernel']}` | {r['status']} | "
                         f"{r.get('registers', '') or ''} | {r.get('shared_bytes', '') if r.get('shared_bytes') is not None else ''} | "
                         f"{r.get('ptx_instructions', '') or ''} | {detail} |")
        Path(args.markdown_out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
