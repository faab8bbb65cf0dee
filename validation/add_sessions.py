#!/usr/bin/env python3
"""Attach repeat timing sessions to a measured dataset: each case of DATASET timed again in RAW (the
``measure.json`` of ``validation/measure.py --no-ncu``, run on the same kind of GPU) gets a ``sessions`` entry with
that run's cold and warm medians. ``perfmodel accuracy`` then compares with the median over the case's own timing
and its sessions (perfmodel/gpu/accuracy.py ``measured_time``); the dataset's own figures stay as they are.

    python validation/add_sessions.py validation/h100_fidelity.json validation/raw/h100_fidelity_retime.json ...

Re-running with the same RAW file replaces its entry. Every case of DATASET must be in every RAW file (a session
covers the whole dataset, so no case is picked for a second chance), on a GPU of the same name.

    python validation/add_sessions.py DATASET --cases-from RAW0[,RAW0...] RAW ...

``--cases-from``: the sessions cover only the cases that ``validation/replace_cases.py`` took from RAW0 (their
``source``), every one of them: the cases measured again from another cubin, whose earlier sessions went with
their earlier measurement.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str]) -> int:
    from perfmodel.gpu.accuracy import case_id

    argv = list(argv)
    scope_from = None
    if "--cases-from" in argv:
        at = argv.index("--cases-from")
        scope_from = set(argv[at + 1].split(","))
        del argv[at:at + 2]
    dataset_path = Path(argv[0])
    data = json.loads(dataset_path.read_text())
    name = (data.get("device") or {}).get("name")
    scope = data["cases"] if scope_from is None else [c for c in data["cases"] if c.get("source") in scope_from]
    if not scope:
        raise SystemExit(f"{dataset_path}: no case was taken from {', '.join(sorted(scope_from))}")
    for raw_arg in argv[1:]:
        raw_path = Path(raw_arg)
        raw = json.loads(raw_path.read_text())
        if (raw.get("device") or {}).get("name") != name:
            raise SystemExit(f"{raw_path}: measured on {(raw.get('device') or {}).get('name')}, the dataset on {name}")
        timed = {c["id"]: c["time"] for c in raw["cases"]}
        missing = [case_id(c) for c in scope if case_id(c) not in timed]
        if missing:
            raise SystemExit(f"{raw_path}: {len(missing)} cases of {dataset_path} not timed, e.g. {missing[:3]}")
        if not raw_path.resolve().is_relative_to(ROOT):
            raise SystemExit(f"{raw_path}: keep the raw run in the repository (validation/raw/) so the dataset can cite it")
        source = raw_path.resolve().relative_to(ROOT).as_posix()
        for case in scope:
            t = timed[case_id(case)]
            entry = {"source": source, "measured_at_utc": raw.get("measured_at_utc"),
                     "cold_median_s": t["cold"]["median_s"], "warm_median_s": t["warm"]["median_s"]}
            case["sessions"] = [s for s in case.get("sessions", []) if s.get("source") != source] + [entry]
        print(f"{raw_path}: {len(scope)} cases")
    dataset_path.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
