"""Run ``perfmodel kernels inspect`` (the library call behind it) over a corpus of real CUDA files.

    python bench/corpus_inspect.py CORPUS_DIR [--json OUT] [--markdown OUT] [--arch sm_90]

CORPUS_DIR holds a README.md with a table ``| `path` | `kernel (instantiation)` | features | template |``
(the user's list of files and the instantiations their host code launches). Each file is compiled once with the
instantiations listed for it; a kernel counts as covered when it is listed with its registers.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import OrderedDict
from pathlib import Path


def read_table(corpus: Path) -> list[dict]:
    rows = []
    for line in (corpus / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        path, kernel = cells[0].strip("`"), cells[1].strip("`")
        rows.append({"file": path, "kernel": kernel, "features": cells[2] if len(cells) > 2 else "",
                     "template": len(cells) > 3 and cells[3].strip() == "yes"})
    return rows


def find(corpus: Path, rel: str) -> Path:
    for cand in (corpus / rel, *corpus.glob(f"*/{rel}")):
        if cand.is_file():
            return cand
    raise FileNotFoundError(rel)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args(argv)

    from perfmodel.compile import CompileError, compile_cuda
    from perfmodel.report.inspect_view import inspect_json

    rows = read_table(args.corpus)
    files: OrderedDict[str, list[dict]] = OrderedDict()
    for r in rows:
        files.setdefault(r["file"], []).append(r)
    results = []
    for rel, krows in files.items():
        path = find(args.corpus, rel)
        exprs = [r["kernel"] for r in krows if r["template"]]
        t0 = time.perf_counter()
        try:
            listed = inspect_json(compile_cuda(path, name_expressions=exprs, arch=args.arch))
            err = None
        except CompileError as e:
            listed, err = [], str(e)
        dt = time.perf_counter() - t0
        by_expr = {x["expression"]: x for x in listed}
        for r in krows:
            got = by_expr.get(r["kernel"])
            results.append({**r, "covered": got is not None and got["registers"] > 0,
                            "registers": got["registers"] if got else None,
                            "shared_bytes": got["shared_bytes"] if got else None,
                            "local_bytes": got["local_bytes"] if got else None,
                            "ptx_instructions": got["ptx_instructions"] if got else None,
                            "unsupported": got["unsupported"] if got else None,
                            "error": err, "compile_s": round(dt, 3)})
        status = "ok" if err is None else "FAIL: " + err[:300]
        print(f"{dt:6.2f}s {rel}: {status}", file=sys.stderr)
    covered = sum(r["covered"] for r in results)
    print(f"covered {covered}/{len(results)} kernels with registers", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    md = markdown(results, args.arch)
    if args.markdown:
        args.markdown.write_text(md)
    else:
        print(md)
    return 0


def markdown(results: list[dict], arch: str) -> str:
    covered = sum(r["covered"] for r in results)
    unsup = [r for r in results if r["unsupported"]]
    out = [f"# Corpus: `perfmodel kernels inspect` over the cuda-samples corpus ({arch})", "",
           f"Kernels listed with registers: **{covered}/{len(results)}** "
           f"({100 * covered / max(1, len(results)):.0f}%). Kernels using PTX the executor does not support: "
           f"{len(unsup)}.", "",
           "| file | kernel | regs | smem B | local B | PTX instr | unsupported PTX |",
           "|---|---|---:|---:|---:|---:|---|"]
    for r in results:
        if r["covered"]:
            u = ", ".join(r["unsupported"]) or "—"
            out.append(f"| `{r['file'].split('/')[-1]}` | `{r['kernel']}` | {r['registers']} | "
                       f"{r['shared_bytes']} | {r['local_bytes']} | {r['ptx_instructions']} | {u} |")
        else:
            why = (r["error"] or "not listed").replace("|", "\\|")[:200]
            out.append(f"| `{r['file'].split('/')[-1]}` | `{r['kernel']}` | — | — | — | — | FAILED: {why} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
