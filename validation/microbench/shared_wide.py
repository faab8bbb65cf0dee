"""Shared-memory wavefronts of 32-, 64- and 128-bit loads per address pattern, counted by Nsight Compute.

Each launch is one warp doing one ``LDS`` / ``LDS.64`` / ``LDS.128`` (validation/microbench/shared_wide.cu) with
the lane -> element pattern given, so ncu's ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum`` for the launch
is that one instruction's wavefronts. The named patterns are the broadcast, half-, quarter-warp and strided shapes;
the random ones draw 1-32 distinct elements. Writes one JSON document.

    python validation/microbench/shared_wide.py OUT.json
"""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WIDTHS = {"lds32": 4, "lds64": 8, "lds128": 16}
METRICS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "smsp__inst_executed_op_shared_ld.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")


def patterns(width: int) -> dict[str, list[int]]:
    lane = np.arange(32)
    row = 128 // width                      # elements per 128-byte row of the 32 banks
    p = {"same": 0 * lane, "halves": lane // 16, "halves_same_banks": (lane // 16) * row,
         "quarters": lane // 8, "quarters_same_banks": (lane // 8) * row, "eighths": lane // 4,
         "interleave2": lane % 2, "interleave4": lane % 4, "interleave8": lane % 8, "seq": lane,
         "pairs": lane // 2, "quads": lane // 4, "stride2": lane * 2, "stride_row": lane * row, "rev": 31 - lane,
         "quarter_repeat": (lane // 8) % 2, "half_rows": lane % 16 + 16 * (lane // 16),
         "tiled_rows": (lane // 16) * (64 // width), "half_same_quarter_diff": (lane // 8) % 2 + 2 * (lane // 16)}
    rng = np.random.default_rng(7)
    for k in range(40):
        distinct = int(rng.integers(1, 33))
        pool = rng.choice(1024, size=distinct, replace=False)
        p[f"random{k}_{distinct}"] = rng.choice(pool, size=32)
    # lanes that share an address in pairs or within a 4-lane quad, in all or part of the warp
    rng2 = np.random.default_rng(11)
    for k in range(12):
        p[f"pairdup{k}"] = np.repeat(rng2.integers(0, 1024, 16), 2)
        p[f"quad2_{k}"] = np.concatenate([rng2.choice(rng2.integers(0, 1024, 2), 4) for _ in range(8)])
        free = rng2.integers(0, 1024, 32)
        p[f"half_pairdup{k}"] = np.concatenate([np.repeat(free[:8], 2), free[16:]])
        p[f"quarters_alt{k}"] = np.concatenate([np.repeat(free[:4], 2), free[8:16], np.repeat(free[16:20], 2),
                                                  free[24:]])
    return {k: [int(x) for x in v] for k, v in p.items()}


def launch() -> None:
    import cupy as cp

    module = cp.RawModule(code=(HERE / "shared_wide.cu").read_text(), options=("-std=c++17",))
    for name, width in WIDTHS.items():
        fn = module.get_function(name)
        for pat in patterns(width).values():
            idx = cp.asarray(np.array(pat, np.int32))
            out = cp.zeros(32 * (width // 4), cp.float32)
            fn((1,), (32,), (idx, out))
    cp.cuda.runtime.deviceSynchronize()


def main(argv) -> int:
    if argv and argv[0] == "--launch":
        launch()
        return 0
    out = Path(argv[0])
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    log = out.with_suffix(".csv")
    cmd = [ncu, "--csv", "--page", "raw", "--print-units", "base", "--metrics", ",".join(METRICS),
           "-k", "regex:^lds(32|64|128)$", "--log-file", str(log), sys.executable, __file__, "--launch"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        return 1
    text = log.read_text()
    text = text[text.index('"ID"'):]                # ncu's own messages come first
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r.get("Kernel Name", "").startswith("lds")]
    order = [(name, pname, pat) for name, width in WIDTHS.items() for pname, pat in patterns(width).items()]
    if len(rows) != len(order):
        print(f"{len(rows)} profiled launches for {len(order)} patterns")
        return 1
    result = {"metrics": list(METRICS), "cases": []}
    for (name, pname, pat), row in zip(order, rows):
        assert row["Kernel Name"] == name, (row["Kernel Name"], name)
        result["cases"].append({"kernel": name, "bytes": WIDTHS[name], "pattern": pname, "elements": pat,
                                "wavefronts": float(row[METRICS[0]]), "instructions": float(row[METRICS[1]]),
                                "bank_conflicts": float(row[METRICS[2]])})
    out.write_text(json.dumps(result, indent=1))
    for c in result["cases"]:
        print(c["kernel"], c["pattern"], c["wavefronts"], c["instructions"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
