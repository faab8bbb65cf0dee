#!/usr/bin/env python3
"""Counts of the fast paths against executing everything, on every committed validation case.

For each case of a validation dataset (default ``validation/h100.json``) the analysis runs twice with the same
parameters: as ``perfmodel analyze`` does by default (blocks proved identical replicated, long uniform loops
counted from a few iterations, large grids sampled) and with ``execute_all=True`` (every block and every
iteration of the exact or sampled run executed), on the dataset's device profile, with its kernels
(``validation/kernels``) on the spec path. Every count must be identical; the script prints each case's
mode and times and exits 1 on any difference.

    python bench/identity_check.py [DATASET] [--kernel NAME ...]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _diff(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _diff(a.get(k), b.get(k), f"{path}.{k}" if path else k)
        return out
    return [] if a == b else [(path, a, b)]


def main() -> int:
    from perfmodel.gpu.accuracy import _kernels_beside
    from perfmodel.sampling import DEFAULT_SAMPLE_BLOCKS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", nargs="?", default=str(ROOT / "validation" / "h100.json"))
    ap.add_argument("--kernel", nargs="*", default=[])
    args = ap.parse_args()
    data = json.loads(Path(args.dataset).read_text())
    device = data.get("profile") or "h100"
    with _kernels_beside(Path(args.dataset)):     # the dataset's own kernels (validation/kernels) by name
        bad = _compare(data["cases"], device, args.kernel, DEFAULT_SAMPLE_BLOCKS)
    print("all identical" if not bad else f"{bad} case(s) differ")
    return 1 if bad else 0


def _compare(cases, device, kernels, sample_blocks) -> int:
    from perfmodel.analysis import analyze
    from perfmodel.errors import PerfmodelError

    bad = 0
    print(f"{'case':<58}{'mode':<22}{'fast s':>8}{'all s':>8}  counts")
    for case in cases:
        if kernels and case["kernel"] not in kernels:
            continue
        params = dict(case.get("overrides") or {})
        regs = (case.get("function") or {}).get("num_regs")
        t0 = time.perf_counter()
        fast = analyze(case["kernel"], device, params, regs=regs, check=False)
        t1 = time.perf_counter()
        # the same mode with everything executed: exact for an exact run, the same sample for a sampled one
        try:
            full = analyze(case["kernel"], device, params, regs=regs, check=False, execute_all=True,
                           sample=sample_blocks if fast.sim.sampled else 0)
        except PerfmodelError as err:
            t2 = time.perf_counter()
            print(f"{case['kernel'] + ' ' + str(params):<58.57}{'-':<22}{t1 - t0:>8.2f}{t2 - t1:>8.2f}  "
                  f"not compared: {str(err)[:90]}", flush=True)
            continue
        t2 = time.perf_counter()
        mode = "sampled" if fast.sim.sampled else "exact"
        if fast.sim.replication.get("proved"):
            mode += f"+{fast.sim.replication['classes']}cls"
        if "loop iterations were counted" in (fast.sim.correct_detail or ""):
            mode += "+loops"
        d = _diff(fast.sim.counts, full.sim.counts)
        bad += bool(d)
        name = f"{case['kernel']} {params}"[:57]
        print(f"{name:<58}{mode:<22}{t1 - t0:>8.2f}{t2 - t1:>8.2f}  {'identical' if not d else d[:3]}", flush=True)
    return bad


if __name__ == "__main__":
    sys.exit(main())
