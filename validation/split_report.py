#!/usr/bin/env python3
"""In-sample against held-out accuracy on the split of ``validation/split.yaml`` (docs/validation.md's tables).

For each L2 state (cold, warm) it runs ``perfmodel accuracy`` on the four committed datasets and prints, per part
of the split, the cases, the median absolute time error, the worst factor and how many are within 25%:

* the latency part: fit = every case of h100.json, the eight few-block reductions of h100_fidelity.json at 4 Mi
  and the odd-numbered SGEMM tutorial kernels cold (h100_sgemm.json); held out = the rest of h100_fidelity.json
  (less the atomics fit cases), every case of h200.json and the other SGEMM cases (both GPUs);
* the atomics part: fit = the five fit cases; held out = every other case of the split's kernels, both GPUs;
* the kernel classes of the held-out cases (``classes`` in split.yaml; few-block = fewer blocks than SMs).

    python validation/split_report.py            # ~10 minutes on 2 cores (the SGEMM simulations)
"""
from __future__ import annotations

import statistics
from pathlib import Path

import yaml

from perfmodel.gpu.accuracy import accuracy, case_classes, time_summary

ROOT = Path(__file__).resolve().parent.parent
H100, FIDELITY, H200 = "validation/h100.json", "validation/h100_fidelity.json", "validation/h200.json"
SGEMM, SGEMM_H200 = "validation/h100_sgemm.json", "validation/h200_sgemm.json"


def figures(cases) -> str:
    s = time_summary(cases)
    if not s["timed"]:
        return "   0 cases"
    return (f"{s['timed']:4d} cases  median |error| {100 * s['median_abs_time_error']:5.1f}%  "
            f"worst {s['max_time_factor']:.2f}x  within 25% {s['within_25pct']:4d}")


def main() -> int:
    split = yaml.safe_load((ROOT / "validation" / "split.yaml").read_text())
    latency_fit = set(split["latency"]["fit"][1]["cases"])
    sgemm_fit = set(next(p for p in split["latency"]["fit"] if p["dataset"] == SGEMM)["cases"])
    atomics_fit = set(split["fit"]["cases"])
    atomics_kernels = set(split["kernels"])
    for l2 in ("cold", "warm"):
        reports = {ds: accuracy(ROOT / ds, l2=l2) for ds in (H100, FIDELITY, H200, SGEMM, SGEMM_H200)}
        h100 = reports[H100].cases
        fidelity_fit = [c for c in reports[FIDELITY].cases if c.id in latency_fit]
        # the cases of h100_fidelity.json no constant was fitted on
        fidelity_held = [c for c in reports[FIDELITY].cases if c.id not in latency_fit and c.id not in atomics_fit]
        h200 = reports[H200].cases
        # the SGEMM tutorial: six kernels' cold cases are in the fit part; their warm cases and the other six held out
        sgemm_in = [c for c in reports[SGEMM].cases if c.id in sgemm_fit and l2 == "cold"]
        sgemm_held = [c for c in reports[SGEMM].cases if c not in sgemm_in] + reports[SGEMM_H200].cases

        def in_class(name, cases, ds):
            return [c for c in cases if name in case_classes(c.kernel, c.total_blocks, split["classes"],
                                                              reports[ds].sm_count)]

        rows = [
            ("latency: fit part (in sample)", h100 + fidelity_fit + sgemm_in),
            ("latency: fit part, SGEMM kernels", sgemm_in),
            ("latency: held out, h100_fidelity", fidelity_held),
            ("latency: held out, h200", h200),
            ("latency: held out, SGEMM tutorial", sgemm_held),
            ("latency: held out, all", fidelity_held + h200 + sgemm_held),
            ("atomics: fit part (in sample)", [c for c in reports[FIDELITY].cases if c.id in atomics_fit]),
            ("atomics: held out, H100", [c for c in fidelity_held if c.kernel in atomics_kernels]),
            ("atomics: held out, H200", [c for c in h200 if c.kernel in atomics_kernels]),
        ] + [(f"class {name}, held out", in_class(name, fidelity_held, FIDELITY) + in_class(name, h200, H200))
             for name in split["classes"]]
        print(f"== {l2}")
        for name, cases in rows:
            print(f"  {name:<36} {figures(cases)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
