"""Local memory (a thread's run-time indexed array) against an H200's measurements of
validation/microbench/local_memory.cu (validation/local_memory_h200.json: CUDA-event medians, L2 flushed;
validation/local_memory_h200_ncu.csv: Nsight Compute). S floats a thread, 1,056 blocks of 256 threads: the resident
threads' arrays 64 KB to 16 MB a SM. Before, local accesses cost load/store-unit requests only (a 16 MB footprint
predicted 137 us against 695), and a loop whose only memory access was local read ptxas's further unrolling as
extra instructions on every iteration (81 M warp instructions against ncu's 14 M)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SIZES = (8, 32, 128, 512, 2048)


def _ncu() -> dict:
    rows = list(csv.reader((ROOT / "validation" / "local_memory_h200_ncu.csv").open()))
    header = next(r for r in rows if r and r[0] == "ID")
    out: dict = {}
    for r in rows[rows.index(header) + 1:]:
        if len(r) == len(header):
            d = dict(zip(header, r))
            size = int(d["Kernel Name"].split("<")[1].split(">")[0])
            out.setdefault(size, {})[d["Metric Name"]] = float(d["Metric Value"].replace(",", ""))
    return out


@pytest.mark.parametrize("size", SIZES)
def test_local_memory_against_the_h200(cli, size):
    measured = {c["S"]: c for c in json.loads((ROOT / "validation" / "local_memory_h200.json").read_text())["cases"]}
    ncu = _ncu()[size]
    code, out, err = cli("analyze", str(ROOT / "validation" / "microbench" / "local_memory.cu"), "--kernel",
                         f"local_array<{size}>", "--grid", "1056", "--block", "256", "--arg",
                         "seed=int32[270336]:random(0,1048576)", "--arg", "out=float32[270336]", "--arg", "iters=256",
                         "--device", "h200", "--json")
    assert code == 0, err
    doc = json.loads(out)
    counts, traffic = doc["counts"], doc["model"]["traffic"]
    # the same loads, in warp requests; the issue count within 5% of the GPU's
    assert counts["local"]["load_requests"] == ncu["l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum"]
    assert abs(counts["warp_instructions"] / ncu["smsp__inst_executed.sum"] - 1) < 0.05
    # bytes: 4-byte words, a warp's 128 coalesced bytes, as the GPU's 32-byte sectors
    assert counts["local"]["load_bytes"] == 32 * ncu["l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"]
    hit = ncu["l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_hit.sum"] / \
        ncu["l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"]
    assert abs(traffic["local_l1_hit_rate"] - hit) < 0.05, (traffic["local_l1_hit_rate"], hit)
    # DRAM writes: what outgrows L2 is written back (within 5%, or 11 MB: at 34.6 MB, under the 60 MB L2, the
    # H200 wrote 10.8 MB back, the model none)
    dram_write = ncu["dram__bytes_write.sum"]
    assert abs(traffic["local_dram_write_bytes"] - dram_write) < max(11e6, 0.05 * dram_write)
    ratio = doc["predicted_time_s"] / measured[size]["cold_median_s"]
    assert 0.8 < ratio < 1.25, ratio
