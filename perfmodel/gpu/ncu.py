"""Hardware counters through the Nsight Compute CLI (``ncu``).

One ``ncu`` process profiles many cases: it runs :mod:`perfmodel.gpu.ncu_driver`, which launches each case's
kernel exactly once, and profiles only kernels whose names are the cases' entries (CuPy's own helper kernels
are filtered out by ``-k``). Profiled launches come back in launch order, which the driver's manifest maps to
the cases. ``--cache-control all`` (ncu's default: caches flushed before each replay pass) matches the runner's
``cold`` timing; ``--clock-control none`` leaves the card at its own clocks (we never lock or change them).
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from perfmodel.errors import GpuError

# name in our records -> ncu metric. The list first, then what the model's resources need.
METRICS: dict[str, str] = {
    # global memory: requests (warp-level instructions) and 32-byte sectors, as our simulator counts them
    "global_load_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "global_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global_store_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "global_store_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "global_load_instructions": "smsp__inst_executed_op_global_ld.sum",
    "global_store_instructions": "smsp__inst_executed_op_global_st.sum",
    # shared memory: instructions and wavefronts
    "shared_load_instructions": "smsp__inst_executed_op_shared_ld.sum",
    "shared_store_instructions": "smsp__inst_executed_op_shared_st.sum",
    "shared_load_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared_store_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "shared_load_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "shared_store_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    # DRAM and caches
    "dram_bytes_read": "dram__bytes_read.sum",
    "dram_bytes_write": "dram__bytes_write.sum",
    "l2_sectors_from_l1_read": "lts__t_sectors_srcunit_tex_op_read.sum",
    "l1_hit_rate_pct": "l1tex__t_sector_hit_rate.pct",
    "l1_global_load_hit_rate_pct": "l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct",
    "l2_hit_rate_pct": "lts__t_sector_hit_rate.pct",
    # occupancy
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
    "registers_per_thread": "launch__registers_per_thread",
    "static_shared_bytes": "launch__shared_mem_per_block_static",
    "occupancy_limit_blocks": "launch__occupancy_limit_blocks",
    "occupancy_limit_registers": "launch__occupancy_limit_registers",
    "occupancy_limit_shared_mem": "launch__occupancy_limit_shared_mem",
    "occupancy_limit_warps": "launch__occupancy_limit_warps",
    "waves_per_sm": "launch__waves_per_multiprocessor",
    # time, clocks, throughput (speed of light)
    "duration_s": "gpu__time_duration.sum",
    "sm_clock_hz": "sm__cycles_elapsed.avg.per_second",
    "dram_clock_hz": "dram__cycles_elapsed.avg.per_second",
    "elapsed_cycles": "sm__cycles_elapsed.max",
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "memory_throughput_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_throughput_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1_throughput_pct": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l2_throughput_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    # instructions and FP32 work
    "warp_instructions": "smsp__inst_executed.sum",
    "thread_ffma": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "thread_fadd": "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "thread_fmul": "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
}

# ncu collects the metrics in three runs of their own. The global and shared counts that our simulator's counts
# are compared with exactly come from a run with only those eight metrics: in a run with many metrics (several
# replay passes) the global store-sector count came out a little off and different from run to run (matmul_naive
# Width 1024: 131,088 and 131,050 instead of 131,072; validation/raw/h100_repeat_counters.log shows the exact,
# repeatable values from a small metric list). Metrics that need SASS patching (ncu instruments the kernel's
# code) also get a run of their own.
EXACT_COUNT_KEYS = ("global_load_requests", "global_load_sectors", "global_store_requests", "global_store_sectors",
                    "shared_load_instructions", "shared_store_instructions", "shared_load_wavefronts",
                    "shared_store_wavefronts")
EXACT_COUNT_METRICS = {k: METRICS[k] for k in EXACT_COUNT_KEYS}
SASS_METRICS = {k: v for k, v in METRICS.items() if v.startswith("smsp__sass_")}
COUNTER_METRICS = {k: v for k, v in METRICS.items() if k not in SASS_METRICS and k not in EXACT_COUNT_METRICS}
METRIC_RUNS = {"counts": EXACT_COUNT_METRICS, "counters": COUNTER_METRICS, "sass": SASS_METRICS}

# The units row of the CSV (with --print-units base: "nsecond", "cycle/second", "byte"): convert to seconds, Hz, B.
_TIME_UNITS = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3,
               "second": 1.0, "s": 1.0}
_RATE_UNITS = {"cycle/second": 1.0, "cycle/nsecond": 1e9, "cycle/usecond": 1e6, "cycle/msecond": 1e3,
               "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}
_BYTE_UNITS = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "kibyte": 1024, "mibyte": 1024 ** 2}


def ncu_path() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for candidate in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu")) + [Path("/usr/local/cuda/bin/ncu")]:
        if candidate.exists():
            return str(candidate)
    return None


def available_metrics(ncu: str) -> set[str] | None:
    """Base metric names the installed ncu knows for this GPU (None if the query fails)."""
    try:
        out = subprocess.run([ncu, "--query-metrics", "--csv"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = set()
    for line in out.stdout.splitlines():
        first = line.split(",")[0].strip().strip('"')
        if "__" in first:
            names.add(first)
    return names or None


def _number(text: str) -> float | str | None:
    text = text.strip()
    if text in ("", "n/a", "N/A"):
        return None
    cleaned = text.replace(",", "")
    try:
        value = float(cleaned)
    except ValueError:
        return text
    return int(value) if value.is_integer() and "." not in cleaned and "e" not in cleaned.lower() else value


def _convert(value, unit: str):
    if not isinstance(value, (int, float)):
        return value
    unit = (unit or "").strip().lower()
    for table in (_TIME_UNITS, _RATE_UNITS, _BYTE_UNITS):
        if unit in table:
            factor = table[unit]
            return value * factor if factor != 1 else value
    return value


def parse_csv(text: str) -> list[dict[str, Any]]:
    """Parse ``ncu --csv --page raw`` output: one row per profiled kernel, a units row under the header."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header = rows[0]
    if "ID" not in header:
        raise GpuError(f"unexpected ncu CSV header: {header[:6]}")
    units = None
    kernels = []
    for row in rows[1:]:
        record = dict(zip(header, row))
        if not record.get("ID", "").strip().isdigit():
            units = record
            continue
        parsed: dict[str, Any] = {"id": int(record["ID"]), "kernel_name": record.get("Kernel Name"),
                                  "grid_size": record.get("Grid Size"), "block_size": record.get("Block Size")}
        metrics = {}
        for column, raw in record.items():
            if "__" not in column:
                continue
            unit = units.get(column, "") if units else ""
            metrics[column] = _convert(_number(raw), unit)
        parsed["metrics"] = metrics
        kernels.append(parsed)
    return kernels


def named(metrics: dict[str, Any]) -> dict[str, Any]:
    """Raw ncu metric dict -> our names."""
    return {ours: metrics.get(theirs) for ours, theirs in METRICS.items() if theirs in metrics}


def kernel_filter(entries) -> str:
    """ncu's ``-k`` filter for the cases' entries. ncu matches it against the kernel's base function name,
    which has no template arguments (``sgemm1DBlocktiling`` for ``sgemm1DBlocktiling<64, 64, 8, 8>``): a template
    entry is matched by its base name, with its arguments optional. Instantiations of one template all pass the
    filter; the driver's manifest, in launch order, tells them apart."""
    bases = sorted({e.split("<", 1)[0].strip() for e in entries})
    return "regex:^(" + "|".join(re.escape(b) for b in bases) + r")(<.*>)?$"


def collect(cases: list[dict[str, Any]], *, device_index: int = 0, metrics: list[str] | None = None,
            workdir: str | None = None, timeout: float = 540.0,
            extra_args: tuple[str, ...] = ()) -> tuple[list[dict[str, Any] | None], dict[str, Any]]:
    """Profile each case (``{"kernel": name, "overrides": {...}}``) once under ncu, collecting ``metrics``
    (default: :data:`EXACT_COUNT_METRICS`; :func:`collect_all` makes the three runs of :data:`METRIC_RUNS`).

    Returns (per-case named metrics or None where the kernel was not profiled, info about the ncu run)."""
    ncu = ncu_path()
    if ncu is None:
        raise GpuError("--ncu needs Nsight Compute's `ncu` on the PATH")
    wanted = list(metrics or EXACT_COUNT_METRICS.values())
    known = available_metrics(ncu)
    dropped = []
    if known is not None:
        keep = [m for m in wanted if m.split(".")[0] in known]
        dropped = [m for m in wanted if m not in keep]
        wanted = keep
    from perfmodel.spec import load_spec

    entries = sorted({load_spec(c["kernel"]).entry for c in cases})
    work = Path(workdir or tempfile.mkdtemp(prefix="perfmodel-ncu-"))
    work.mkdir(parents=True, exist_ok=True)
    cases_file, manifest_file, log_file = work / "cases.json", work / "manifest.json", work / "ncu.csv"
    cases_file.write_text(json.dumps(cases))
    regex = kernel_filter(entries)
    cmd = [ncu, "--csv", "--page", "raw", "--print-units", "base", "--clock-control", "none",
           "--cache-control", "all", "--metrics", ",".join(wanted), "-k", regex, "--log-file", str(log_file),
           *extra_args, sys.executable, "-m", "perfmodel.gpu.ncu_driver", str(cases_file), str(manifest_file),
           "--device-index", str(device_index)]
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    info: dict[str, Any] = {"command": " ".join(cmd[:14]) + " ...", "returncode": proc.returncode,
                            "dropped_metrics": dropped, "metrics": wanted}
    if proc.returncode != 0 or not log_file.exists():
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise GpuError(f"ncu failed (exit {proc.returncode}): {tail}")
    profiled = parse_csv(log_file.read_text())
    manifest = json.loads(manifest_file.read_text()) if manifest_file.exists() else []
    # manifest: one entry per case in order, each with "launched": True/False
    results: list[dict[str, Any] | None] = []
    position = 0
    for entry in manifest:
        if not entry.get("launched"):
            results.append(None)
            continue
        if position < len(profiled):
            kernel = profiled[position]
            record = named(kernel["metrics"])
            others = {k: v for k, v in kernel["metrics"].items() if k in wanted and k not in METRICS.values()}
            if others:  # metrics we have no name for: keep ncu's own names
                record["raw"] = others
            record["ncu_kernel_name"] = kernel["kernel_name"]
            record["ncu_grid_size"] = kernel["grid_size"]
            record["ncu_block_size"] = kernel["block_size"]
            results.append(record)
        else:
            results.append(None)
        position += 1
    info["profiled_kernels"] = len(profiled)
    info["launched_cases"] = sum(1 for e in manifest if e.get("launched"))
    if info["profiled_kernels"] != info["launched_cases"]:
        info["warning"] = "profiled kernel count differs from launched cases: mapping may be off"
    return results, info


def collect_all(cases: list[dict[str, Any]], **options) -> tuple[list[dict[str, Any] | None], dict[str, Any]]:
    """The three profiling runs of :data:`METRIC_RUNS` (exact counts, other counters, SASS-patched instruction
    counts). Returns per-case merged metrics (a later run never overwrites an earlier run's metric) and each
    run's info."""
    workdir = options.pop("workdir", None)
    merged: list[dict[str, Any] | None] = [None] * len(cases)
    infos = {}
    for run, group in METRIC_RUNS.items():
        found, infos[run] = collect(cases, metrics=list(group.values()),
                                    workdir=f"{workdir}_{run}" if workdir else None, **options)
        for i, record in enumerate(found):
            if record is None:
                continue
            if merged[i] is None:
                merged[i] = dict(record)
            else:
                for key, value in record.items():
                    merged[i].setdefault(key, value)
    return merged, infos
