"""Replace cases of a committed dataset with a later measurement of the same cases, keeping the compiler record.

    python validation/replace_cases.py DATASET.json RAW.json

``RAW.json`` is a ``validation/measure.py`` document (kept in ``validation/raw/``) whose cases each carry a
``compiler`` record (measure.py writes one per case built with perfmodel's compile), or one with a top-level
``compiler`` list, one record per kernel (validation/compiler_check.py's histograms; the SGEMM re-measurement):
the SASS opcode histogram of the kernel as the measuring machine compiled it. Each of its cases replaces the
dataset's case of the same id and records the raw file and the compiler (tests/test_measured_cubins.py compares
it with the analysis's compile); the dataset's ``source`` (or, without one, its ``measured_again`` list) names the
raw file. Made for the cases that the GPU
machine's NVRTC 13.0 (through CuPy) compiled differently from the NVRTC 13.5 wheel perfmodel analyses with
(docs/validation.md, "Compiler").
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    dataset_path, raw_path = Path(argv[0]), Path(argv[1])
    dataset = json.loads(dataset_path.read_text())
    raw = json.loads(raw_path.read_text())
    if raw["device"]["name"] != dataset["device"]["name"]:
        raise SystemExit(f"{raw_path}: measured on {raw['device']['name']}, the dataset on {dataset['device']['name']}")
    compiler = {c["kernel"]: c for c in raw.get("compiler") or []}
    rel = str(raw_path.resolve().relative_to(ROOT))
    index = {c["id"]: i for i, c in enumerate(dataset["cases"])}
    for case in raw["cases"]:
        if case["id"] not in index:
            raise SystemExit(f"{raw_path}: case {case['id']} is not in {dataset_path}")
        record = case.get("compiler") or compiler.get(case["kernel"])
        if not record or not record.get("opcodes"):
            raise SystemExit(f"{raw_path}: no compiler record (SASS histogram) for {case['id']}")
        case = {**case, "measured_at_utc": raw["measured_at_utc"], "source": rel,
                "compiler": {k: record[k] for k in ("nvrtc", "instructions", "opcodes")}}
        old = dataset["cases"][index[case["id"]]]
        if "ncu" in old and "ncu" not in case:
            raise SystemExit(f"{raw_path}: {case['id']} has no ncu counters and the dataset's case has")
        dataset["cases"][index[case["id"]]] = case
    if "source" in dataset:
        if rel not in dataset["source"]:
            dataset["source"] = f"{dataset['source']}; {rel} (cases measured again)"
    elif rel not in dataset.setdefault("measured_again", []):
        dataset["measured_again"].append(rel)
    dataset_path.write_text(json.dumps(dataset, indent=1) + "\n")
    print(f"{dataset_path}: {len(raw['cases'])} cases replaced from {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
