"""Merge what device calls brought back into the committed dataset.

    python validation/merge.py OUT.json --profile h100 --microbench MICRO.json [--latency LATENCY.json]
        [--counts RECOLLECT.json] MEASURE.json [MEASURE2.json ...]

Later files win for a case id measured twice. Every part must come from the same GPU model (checked).
``--counts``: the exact-count metrics of a validation/recollect.py run replace the measurement's own ncu values
for those metrics (the first H100 measurement collected them in a many-metric run, where the global store-sector
counts were slightly off; see perfmodel/gpu/ncu.py).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    options = {}
    skip = {0}
    for flag in ("--profile", "--microbench", "--latency", "--counts"):
        if flag in argv:
            options[flag] = argv[argv.index(flag) + 1]
            skip |= {argv.index(flag), argv.index(flag) + 1}
    micro_path = Path(options["--microbench"])
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
    skipped = [s for s in skipped if s.get("id") not in cases]     # failed once, measured in a later part
    devices.add(micro["device"]["name"])
    counts_info = None
    if "--counts" in options:
        from perfmodel.gpu.ncu import EXACT_COUNT_KEYS

        recollected = json.loads(Path(options["--counts"]).read_text())
        for cid, metrics in recollected["metrics"].items():
            if cid in cases and metrics:
                for key in EXACT_COUNT_KEYS:
                    if key in metrics:
                        cases[cid]["ncu"][key] = metrics[key]
        counts_info = {"source": Path(options["--counts"]).name, "measured_at_utc": recollected.get("measured_at_utc"),
                       "metrics": list(EXACT_COUNT_KEYS),
                       "note": "global/shared counts from an ncu run of these eight metrics alone (exact and "
                               "repeatable for the global counts; shared wavefronts vary by up to ~0.5% between "
                               "runs); the other metrics from the measurement's own runs. Cases measured after the scheme changed "
                               "(the edge cases, validation/raw/h100_measure_edges.json) got their counts from such a run "
                               "directly (perfmodel.gpu.ncu.collect_all)"}
    if len(devices) != 1:
        raise SystemExit(f"parts come from different GPUs: {sorted(devices)}")
    document = {
        "schema_version": 1,
        "profile": options["--profile"],
        "description": "Measured kernel runs for perfmodel's accuracy check: CuPy/NVRTC launches of the shipped "
                       "kernel specs, CUDA-event times (cold = L2 flushed before each launch, the headline "
                       "time_s; warm = back to back), function attributes, the CUDA occupancy API, and Nsight "
                       "Compute counters. Produced by validation/measure.py and validation/merge.py.",
        "device": first["device"],
        "versions": first["versions"],
        "clocks_before": first.get("clocks_before"),
        "clocks_after": first.get("clocks_after"),
        "ncu_info": {k: v for k, v in (first.get("ncu_info") or {}).items() if k != "command"},
        "ncu_counts_run": counts_info,
        "microbench": {"summary": micro["summary"], "stream": micro["stream"], "fma": micro["fma"],
                       "stream_clocks": micro.get("stream_clocks"), "fma_clocks": micro.get("fma_clocks"),
                       "measured_at_utc": micro.get("measured_at_utc")},
        "latency": json.loads(Path(options["--latency"]).read_text()) if "--latency" in options else None,
        "cases": list(cases.values()),
        "skipped": skipped,
    }
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"{out}: {len(cases)} cases, {len(skipped)} skipped, {out.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
