#!/usr/bin/env python3
"""In-sample against held-out accuracy on the split of ``validation/split.yaml`` (docs/validation.md's tables).

For each L2 state (cold, warm) it runs ``perfmodel accuracy`` on the three committed datasets and prints, per part
of the split, the cases, the median absolute time error, the worst factor and how many are within 25%:

* the latency part: fit = every case of h100.json and the eight few-block reductions of h100_fidelity.json at
  4 Mi; held out = the rest of h100_fidelity.json (less the atomics fit cases) and every case of h200.json;
* the atomics part: fit = the five fit cases; held out = every other case of the split's kernels, both GPUs;
* the kernel classes of the held-out cases (``classes`` in split.yaml; few-block = fewer blocks than SMs).

    python validation/split_report.py            # ~2 minutes on 2 cores
"""
from __future__ import annotations

import statistics
from pathlib import Path

import yaml

from perfmodel.gpu.accuracy import accuracy, case_classes

ROOT = Path(__file__).resolve().parent.parent
H100, FIDELITY, H200 = "validation/h100.json", "validation/h100_fidelity.json", "validation/h200.json"


def figures(errors: list[float]) -> str:
    if not errors:
        return "   0 cases"
    factors = [max(1 + e, 1 / (1 + e)) for e in errors]
    return (f"{len(errors):4d} cases  median |error| {100 * statistics.median(abs(e) for e in errors):5.1f}%  "
            f"worst {max(factors):.2f}x  within 25% {sum(abs(e) <= 0.25 for e in errors):4d}")


def main() -> int:
    split = yaml.safe_load((ROOT / "validation" / "split.yaml").read_text())
    latency_fit = set(split["latency"]["fit"][1]["cases"])
    atomics_fit = set(split["fit"]["cases"])
    atomics_kernels = set(split["kernels"])
    for l2 in ("cold", "warm"):
        reports = {ds: accuracy(ROOT / ds, l2=l2) for ds in (H100, FIDELITY, H200)}

        def errs(ds, keep):
            return [c.time_error for c in reports[ds].cases if c.time_error is not None and keep(c)]

        def held(c):          # a case of h100_fidelity.json no constant was fitted on
            return c.id not in latency_fit and c.id not in atomics_fit

        print(f"== {l2}")
        rows = [
            ("latency: fit part (in sample)", errs(H100, lambda c: True) + errs(FIDELITY, lambda c: c.id in latency_fit)),
            ("latency: held out, h100_fidelity", errs(FIDELITY, held)),
            ("latency: held out, h200", errs(H200, lambda c: True)),
            ("latency: held out, all", errs(FIDELITY, held) + errs(H200, lambda c: True)),
            ("atomics: fit part (in sample)", errs(FIDELITY, lambda c: c.id in atomics_fit)),
            ("atomics: held out, H100", errs(FIDELITY, lambda c: c.kernel in atomics_kernels and held(c))),
            ("atomics: held out, H200", errs(H200, lambda c: c.kernel in atomics_kernels)),
        ]
        for name in split["classes"]:
            def in_class(c, name=name, report=None):
                return name in case_classes(c.kernel, c.total_blocks, split["classes"], report.sm_count)
            rows.append((f"class {name}, held out",
                         errs(FIDELITY, lambda c, n=name: held(c) and in_class(c, n, reports[FIDELITY]))
                         + errs(H200, lambda c, n=name: in_class(c, n, reports[H200]))))
        for name, e in rows:
            print(f"  {name:<36} {figures(e)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
