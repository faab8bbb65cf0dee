"""Merge what device calls brought back into the committed dataset.

    python validation/merge.py OUT.json --profile h100 --microbench MICRO.json MEASURE.json [MEASURE2.json ...]

Later files win for a case id measured twice. Every part must come from the same GPU model (checked).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    profile = argv[argv.index("--profile") + 1]
    micro_path = Path(argv[argv.index("--microbench") + 1])
    skip = {argv.index("--profile"), argv.index("--profile") + 1, argv.index("--microbench"),
            argv.index("--microbench") + 1, 0}
    parts = [Path(a) for i, a in enumerate(argv) if i not in skip]
    micro = json.loads(micro_path.read_text())
    cases: dict[str, dict] = {}
    skipped, devices, first = [], set(), None
    for part in parts:
        doc = json.loads(part.read_text())
        first = first or doc
        devices.add(doc["device"]["name"])
        for case in doc["cases"]:
            case.setdefault("measured_at_utc", doc.get("measured_at_utc"))
            cases[case["id"]] = case
        skipped += doc.get("skipped", [])
        if doc.get("ncu_error"):
            skipped.append({"id": f"ncu run of {part.name}", "reason": doc["ncu_error"][-500:]})
    devices.add(micro["device"]["name"])
    if len(devices) != 1:
        raise SystemExit(f"parts come from different GPUs: {sorted(devices)}")
    document = {
        "schema_version": 1,
        "profile": profile,
        "description": "Measured kernel runs for perfmodel's accuracy check: CuPy/NVRTC launches of the shipped "
                       "kernel specs, CUDA-event times (cold = L2 flushed before each launch, the headline "
                       "time_s; warm = back to back), function attributes, the CUDA occupancy API, and Nsight "
                       "Compute counters. Produced by validation/measure.py and validation/merge.py.",
        "device": first["device"],
        "versions": first["versions"],
        "clocks_before": first.get("clocks_before"),
        "clocks_after": first.get("clocks_after"),
        "ncu_info": {k: v for k, v in (first.get("ncu_info") or {}).items() if k != "command"},
        "microbench": {"summary": micro["summary"], "stream": micro["stream"], "fma": micro["fma"],
                       "stream_clocks": micro.get("stream_clocks"), "fma_clocks": micro.get("fma_clocks"),
                       "measured_at_utc": micro.get("measured_at_utc")},
        "cases": list(cases.values()),
        "skipped": skipped,
    }
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"{out}: {len(cases)} cases, {len(skipped)} skipped, {out.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
