"""Is ncu's global store-sector count exact and repeatable? Profile a few cases several times (one ncu run each)
with the store metrics and their L2-side twins, and print what changes. Writes OUT_DIR/repeat_counters.json.

    python validation/repeat_counters.py OUT_DIR [REPEATS]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CASES = [
    {"kernel": "matmul_naive", "overrides": {"Width": 1024, "BLOCK_WIDTH": 16}},
    {"kernel": "matmul_naive", "overrides": {"Width": 1024, "BLOCK_WIDTH": 8}},
    {"kernel": "picture_scale", "overrides": {"n": 4096, "m": 4096, "BLOCK_WIDTH": 16}},
    {"kernel": "matmul_rowwise", "overrides": {"ha": 1024, "wa": 64, "wb": 64}},
    {"kernel": "vec_add", "overrides": {"N": 1 << 24, "BLOCK_SIZE": 256}},
    {"kernel": "spmv_csr", "overrides": {"matrix": 2, "num_rows": 1 << 20, "half_bandwidth": 8, "BLOCK_SIZE": 128}},
]
METRICS = [
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_requests_srcunit_tex_op_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "dram__bytes_write.sum",
]


def main(argv):
    from perfmodel.gpu import ncu

    out = Path(argv[0])
    repeats = int(argv[1]) if len(argv) > 1 else 3
    runs = []
    for i in range(repeats):
        found, info = ncu.collect(CASES, metrics=METRICS, workdir=f"/tmp/repeat{i}")
        runs.append([f.get("raw") if f else None for f in found])
        print("run", i, info.get("dropped_metrics"), info.get("warning", ""), flush=True)
    result = {"cases": CASES, "metrics": METRICS, "runs": runs}
    (out / "repeat_counters.json").write_text(json.dumps(result, indent=1))
    for c, case in enumerate(CASES):
        print(case["kernel"], case["overrides"])
        for m in METRICS:
            values = [r[c].get(m) if r[c] else None for r in runs]
            print(f"   {m:50s} {values}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
