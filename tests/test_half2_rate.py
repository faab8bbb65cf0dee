"""Packed half precision (HFMA2) against an H200 (validation/microbench/half2_rate.cu: 8 independent FMA chains a
thread, the same instruction count in float and in half2; validation/half2_rate_h200.json, _ncu.csv). The GPU
issues HFMA2 at 0.91x the FFMA rate (342 against 312 us), two results each: a packed lane takes one FP32 lane slot
(devices/h100.yaml, h200.yaml ``fp16x2_lane_slots``). Each half counted as an FP32 lane operation, the half2 kernel
was predicted at about 530 us, FP32-bound."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARGS = {"ffma_chains": ("out=float32[270336]", "a=0.999", "b=0.001"),
        "hfma2_chains": ("out=uint32[270336]", "a=0.999,0.999", "b=0.001,0.001")}


def _ncu(kernel: str) -> dict:
    rows = list(csv.reader((ROOT / "validation" / "half2_rate_h200_ncu.csv").open()))
    header = next(r for r in rows if r and r[0] == "ID")
    return {d["Metric Name"]: float(d["Metric Value"].replace(",", ""))
            for d in (dict(zip(header, r)) for r in rows[rows.index(header) + 1:] if len(r) == len(header))
            if d["Kernel Name"] == kernel}


@pytest.mark.parametrize("kernel", sorted(ARGS))
def test_half2_and_float_fma_chains_against_the_h200(cli, kernel):
    measured = {c["kernel"]: c["median_s"]
                for c in json.loads((ROOT / "validation" / "half2_rate_h200.json").read_text())["cases"]}
    ncu = _ncu(kernel)
    args = [x for a in ARGS[kernel] for x in ("--arg", a)]
    code, out, err = cli("analyze", str(ROOT / "validation" / "microbench" / "half2_rate.cu"), "--kernel", kernel,
                         "--grid", "1056", "--block", "256", *args, "--arg", "iters=4096", "--device", "h200", "--json")
    assert code == 0, err
    doc = json.loads(out)
    fp = doc["counts"]["fp_ops"]
    # the packed lanes are the HFMA2 thread instructions the GPU executed, within 8 a thread: ncu's metric counts
    # HFMA alone, not the final sum's 7 HADD2 (811,008 apart: 3 a thread, ptxas folding some), and ptxas adds one
    # HFMA to the float kernel's setup (270,336)
    assert abs(fp["packed"] - ncu["smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"]) <= 8 * 1056 * 256
    assert abs(doc["counts"]["warp_instructions"] / ncu["smsp__inst_executed.sum"] - 1) < 0.05
    ratio = doc["predicted_time_s"] / measured[kernel]
    assert 0.85 < ratio < 1.2, ratio
