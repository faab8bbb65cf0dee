"""The bottleneck model's inputs for the SGEMM cases of the latency fit part (validation/split.yaml), for the test
that refits the latency constants (tests/test_accuracy.py) without simulating them again: the register-blocked
SGEMMs take 2-70 s each to simulate, too long for the test suite. The test recomputes the cheapest case and checks
it against this file, so an engine change that moves the counts fails there until this is run again.

    python validation/fit_inputs.py        # writes validation/h100_sgemm_fit_inputs.json (~3 minutes on 2 cores)
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "validation" / "h100_sgemm_fit_inputs.json"


def sgemm_fit_part() -> dict:
    split = yaml.safe_load((ROOT / "validation" / "split.yaml").read_text())
    return next(p for p in split["latency"]["fit"] if p["dataset"] == "validation/h100_sgemm.json")


def model_inputs(case: dict) -> dict:
    """The keyword arguments ``analysis.model_launch`` gives ``bottleneck_model`` for one measured case (H100, cold,
    the case's measured registers), with the rates replaced by what they are computed from."""
    import perfmodel.analysis as A
    from perfmodel.gpu.accuracy import _kernels_beside

    seen = {}
    real = A.bottleneck_model

    def capture(counts, **kw):
        seen.update(kw, counts=counts)
        return real(counts, **kw)

    A.bottleneck_model = capture
    try:
        with _kernels_beside(ROOT / "validation" / "h100_sgemm.json"):
            a = A.analyze(case["kernel"], "h100", case["overrides"], regs=case["function"]["num_regs"], check=False)
    finally:
        A.bottleneck_model = real
    rates = seen.pop("rates")
    seen["traffic"] = dataclasses.asdict(seen["traffic"])
    seen["shared_memory_per_sm_used"] = a.occupancy.blocks_per_sm * getattr(
        a.occupancy, "shared_memory_per_block_allocated", a.shared_memory_per_block)
    assert rates.l1_bytes == A.device_rates(a.device, shared_memory_per_sm_used=seen["shared_memory_per_sm_used"]
                                             ).l1_bytes
    return json.loads(json.dumps(seen))


def main() -> int:
    from perfmodel.cache import package_fingerprint
    from perfmodel.gpu.accuracy import case_id, measured_time

    part = sgemm_fit_part()
    data = json.loads((ROOT / part["dataset"]).read_text())
    cases = {case_id(c): c for c in data["cases"]}
    out = {"perfmodel": package_fingerprint(), "dataset": part["dataset"], "cases": {}}
    for cid in part["cases"]:
        c = cases[cid]
        out["cases"][cid] = {"measured_cold_s": measured_time(c, "cold"), **model_inputs(c)}
        print(cid, flush=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
