"""The measured H100 dataset (validation/h100.json) and the GPU tooling that needs no GPU: the runner's source
preparation, ncu CSV parsing, and `perfmodel validate` without CuPy."""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

from perfmodel.gpu.ncu import METRICS, named, parse_csv
from perfmodel.errors import GpuError
from perfmodel.gpu.runner import TimeStats, define_options, strip_defines

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "validation" / "h100.json"
PROBE_CSV = ROOT / "validation" / "raw" / "h200_probe_probe_ncu.csv"


@pytest.fixture(scope="module")
def data():
    return json.loads(DATASET.read_text())


# --- the runner's helpers -------------------------------------------------------------------------------------

def test_strip_defines_blanks_overridden_defines_keeping_line_numbers():
    source = "#define TILE_WIDTH 16\n#define OTHER 3\n  #  define TILE_WIDTH_2 5\nint x = TILE_WIDTH;\n"
    stripped = strip_defines(source, ["TILE_WIDTH"])
    lines = stripped.split("\n")
    assert len(lines) == len(source.split("\n"))
    assert not lines[0].lstrip().startswith("#")  # the overridden define is gone
    assert lines[1] == "#define OTHER 3"  # others stay
    assert "TILE_WIDTH_2 5" in lines[2]  # a longer name with the same prefix stays
    assert lines[3] == "int x = TILE_WIDTH;"


def test_strip_defines_multiline_define():
    source = "#define M(a) \\\n  (a + 1)\nint y;\n"
    lines = strip_defines(source, ["M"]).split("\n")
    assert lines[0].startswith("//") and lines[1].startswith("//") and lines[2] == "int y;"


def test_define_options():
    assert define_options({"TILE_WIDTH": 32, "B": 2.0, "C": 0.5}) == ["-DB=2", "-DC=0.5", "-DTILE_WIDTH=32"]


def test_time_stats():
    stats = TimeStats.of([5.0, 1.0, 3.0, 2.0, 4.0])
    assert stats.median_s == 3.0 and stats.min_s == 1.0 and stats.max_s == 5.0 and stats.repeats == 5


# --- ncu output parsing (a real ncu 2025.3 CSV from the first device call) --------------------------------------

def test_parse_ncu_csv_from_the_probe_run():
    kernels = parse_csv(PROBE_CSV.read_text())
    assert len(kernels) == 3
    first = named(kernels[0]["metrics"])
    # tiled matmul, Width 1024, TILE_WIDTH 32: 2*W^2*(W/T) thread loads = 2,097,152 warp requests of 4 sectors
    assert kernels[0]["grid_size"] == "(32, 32, 1)"
    assert first["global_load_requests"] == 2 * 1024 ** 2 * (1024 // 32) // 32
    assert first["global_load_sectors"] == 4 * first["global_load_requests"]
    assert first["registers_per_thread"] == 32
    assert 1e-4 < first["duration_s"] < 1e-3  # ncu's nanoseconds converted to seconds
    assert 1.0e9 < first["sm_clock_hz"] < 2.1e9


def test_metric_names_are_unique():
    assert len(set(METRICS.values())) == len(METRICS)


# --- validate without CuPy -----------------------------------------------------------------------------------

@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed here")
def test_validate_without_cupy_exits_2_with_a_clear_message():
    from typer.testing import CliRunner

    from perfmodel.cli.main import app

    result = CliRunner().invoke(app, ["validate", "matmul_tiled"])
    assert result.exit_code != 0
    from perfmodel.errors import GpuError
    from perfmodel.gpu.env import require_cupy

    with pytest.raises(GpuError, match="CuPy"):
        require_cupy()


def test_validate_without_cupy_cli_exit_code(tmp_path):
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed here")
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "perfmodel.cli.main", "validate", "matmul_tiled"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert "CuPy" in proc.stderr


# --- the committed dataset ----------------------------------------------------------------------------------

def test_dataset_was_measured_on_an_h100(data):
    assert data["profile"] == "h100"
    assert "H100" in data["device"]["name"]
    assert data["device"]["compute_capability"] == "9.0"
    assert data["device"]["multiProcessorCount"] == 132
    for key in ("cupy", "nvidia_driver", "ncu", "cuda_runtime"):
        assert data["versions"].get(key), key


def test_dataset_covers_every_shipped_kernel_with_at_least_40_cases(data):
    from perfmodel.spec import list_specs

    shipped = {s.name if hasattr(s, "name") else s for s in list_specs()}
    measured = {c["kernel"] for c in data["cases"]}
    assert shipped <= measured, f"not measured: {sorted(shipped - measured)}"
    assert len(data["cases"]) >= 40


def test_matmuls_measured_from_256_to_4096(data):
    for kernel in ("matmul_naive", "matmul_tiled"):
        widths = {c["params"]["Width"] for c in data["cases"] if c["kernel"] == kernel}
        assert {256, 512, 1024, 2048, 4096} <= widths, (kernel, widths)
    tiles = {c["params"]["TILE_WIDTH"] for c in data["cases"] if c["kernel"] == "matmul_tiled"}
    assert len(tiles) >= 3


# The four Width=4096 float matmuls (naive and tiled, both block widths) fail the spec's rtol = atol = 1e-4 on 2
# of 16,777,216 elements (max abs error 3.8e-4 on a value of 0.306): a float32 sum of 4096 products, accumulated
# with FMAs in the source's order, rounds that far from the float64 reference. Not a kernel or runner bug (all
# other elements agree, and naive and tiled give the same values); reported to the kernels engineer as a
# tolerance too tight for large Width.
FLOAT32_ROUNDING = {"matmul_naive/Width=4096,BLOCK_WIDTH=16", "matmul_naive/Width=4096,BLOCK_WIDTH=32",
                    "matmul_tiled/Width=4096,TILE_WIDTH=16", "matmul_tiled/Width=4096,TILE_WIDTH=32"}


def _rounding_only(case) -> bool:
    outputs = case["check"]["outputs"]
    differing = int(re.search(r"(\d+) of \d+ elements differ", case["check"]["message"]).group(1))
    return all(o["max_abs_error"] < 1e-3 for o in outputs) and differing <= 10


def test_every_case_is_correct_timed_and_profiled(data):
    for case in data["cases"]:
        if case["id"] in FLOAT32_ROUNDING:
            assert case["correct"] is True or _rounding_only(case), case["id"]
        else:
            assert case["correct"] is True, case["id"]
        assert case["time_s"] > 0 and case["time"]["cold"]["repeats"] >= 5, case["id"]
        assert case["function"]["num_regs"] > 0, case["id"]
        assert case["occupancy_api"]["blocks_per_sm"] >= 1, case["id"]
        ncu = case.get("ncu")
        assert ncu, f"{case['id']}: no ncu counters"
        assert "ncu_mapping_warning" not in case, case["id"]
        for key in ("global_load_requests", "global_load_sectors", "global_store_requests",
                    "global_store_sectors", "dram_bytes_read", "l2_hit_rate_pct", "achieved_occupancy_pct"):
            assert ncu.get(key) is not None, (case["id"], key)
        # ncu's registers and grid are those of the timed run (the mapping of profiled kernels to cases holds).
        # ncu reports the registers allocated, at least 16 on this GPU (10, 12 and 15 read as 16).
        assert ncu["registers_per_thread"] == max(16, case["function"]["num_regs"]), case["id"]
        assert ncu["ncu_grid_size"] == "(" + ", ".join(str(g) for g in case["grid"]) + ")", case["id"]


def test_dataset_is_compact():
    assert DATASET.stat().st_size < 3_000_000


def test_microbenchmarks_and_device_profile_agree(data):
    from perfmodel.devices import load_device

    from perfmodel.units import parse_quantity

    micro = data["microbench"]["summary"]
    device = load_device("h100")
    measured = device.measured
    assert measured, "devices/h100.yaml has no measured: section"
    bw = parse_quantity(measured["dram_bandwidth_bytes_per_s"]["value"], "bandwidth")
    fp = parse_quantity(measured["peak_fp32_flops"]["value"], "flops")
    assert measured["dram_bandwidth_bytes_per_s"]["how"] and measured["peak_fp32_flops"]["how"]
    assert bw == pytest.approx(micro["dram_copy_gb_per_s"] * 1e9, rel=0.01)
    assert fp == pytest.approx(micro["fp32_gflops"] * 1e9, rel=0.01)
    # below the datasheet roofs, as a measurement must be
    assert bw < device.dram_bandwidth_bytes_per_s
    assert fp <= device.peak_fp32_flops * 1.01


# --- the runner end to end, on a stand-in for CuPy (CI has no GPU) ------------------------------------------

class _FakeArray:
    def __init__(self, host):
        self.host = np.array(host, copy=True)
        self.nbytes = self.host.nbytes


class _FakeKernel:
    """Runs vec_add's semantics on the host and records what it was launched with."""

    attributes = {"num_regs": 12, "shared_size_bytes": 0, "local_size_bytes": 0}

    def __init__(self, log):
        self.log = log

    def __call__(self, grid, block, args, shared_mem=0):
        self.log.append((grid, block, [type(a).__name__ if isinstance(a, _FakeArray) else a for a in args]))
        a, b, c, n = args
        c.host[:int(n)] = a.host[:int(n)] + b.host[:int(n)]


class _FakeEvent:
    clock = [0.0]

    def record(self):
        _FakeEvent.clock[0] += 1e-6
        self.t = _FakeEvent.clock[0]

    def synchronize(self):
        pass


def _fake_cupy(log, modules):
    import types

    class RawModule:
        def __init__(self, code=None, options=(), name_expressions=(), path=None):
            loaded = None if path is None else open(path, "rb").read()
            modules.append({"code": code, "options": options, "names": name_expressions, "cubin": loaded})

        def get_function(self, name):
            modules[-1]["got"] = name
            return _FakeKernel(log)

    class Device:
        compute_capability = "90"

        def __init__(self, index=0):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    cuda = types.SimpleNamespace(
        Device=Device,
        Event=_FakeEvent,
        get_elapsed_time=lambda a, b: (b.t - a.t) * 1e3,
        runtime=types.SimpleNamespace(deviceSynchronize=lambda: None,
                                      getDeviceProperties=lambda i: {"l2CacheSize": 1 << 20}),
    )

    class _Flush:
        def __init__(self, n, dtype=None):
            self.nbytes = n
            self.data = types.SimpleNamespace(memset_async=lambda value, size: None)

    return types.SimpleNamespace(RawModule=RawModule, asarray=_FakeArray, asnumpy=lambda d: d.host.copy(),
                                 cuda=cuda, empty=_Flush, uint8=np.uint8)


def test_runner_compiles_launches_checks_and_times_on_a_stand_in(monkeypatch):
    from perfmodel.gpu import env, runner

    monkeypatch.setenv("PERFMODEL_GPU_COMPILE", "cupy")         # CuPy's NVRTC, as the older cases were built
    log, modules = [], []
    monkeypatch.setattr(env, "require_cupy", lambda: _fake_cupy(log, modules))
    monkeypatch.setattr(runner, "occupancy_blocks_per_sm", lambda kernel, threads, dyn: 8)
    run = runner.run_kernel("vec_add", {"N": 1000, "BLOCK_SIZE": 128}, max_repeats=7)
    assert run.correct is True
    assert run.grid == (8, 1, 1) and run.block == (128, 1, 1)
    # the scalar went in with the kernel parameter's C type (int -> int32), the arrays as device arrays
    grid, block, args = log[0]
    assert args[:3] == ["_FakeArray"] * 3 and isinstance(args[3], np.int32) and args[3] == 1000
    assert modules[0]["names"] == ["VecAdd"] and "-std=c++17" in modules[0]["options"]
    assert run.function["num_regs"] == 12 and run.occupancy_api == {"blocks_per_sm": 8}
    assert run.time_cold.repeats == run.time_warm.repeats == 7
    assert run.time_s == pytest.approx(1e-6)
    record = run.to_json()
    json.dumps(record)
    assert record["time"]["cold"]["median_s"] == pytest.approx(1e-6)


def test_runner_loads_the_cubin_the_analysis_reads_by_default(monkeypatch):
    """Without PERFMODEL_GPU_COMPILE the runner loads perfmodel's own compile (the cubin whose SASS the analysis
    reads), not CuPy's NVRTC build: the bytes CuPy is given are NVRTC's cubin of the spec for the GPU's
    architecture, the function is the entry's mangled symbol, and the record names both (docs/validation.md,
    "Compiler")."""
    import hashlib

    from perfmodel.compile import compile_cuda, nvrtc
    from perfmodel.gpu import env, runner
    from perfmodel.spec import load_spec

    monkeypatch.delenv("PERFMODEL_GPU_COMPILE", raising=False)
    before = nvrtc.sdk_include_dirs
    log, modules = [], []
    monkeypatch.setattr(env, "require_cupy", lambda: _fake_cupy(log, modules))
    monkeypatch.setattr(runner, "occupancy_blocks_per_sm", lambda kernel, threads, dyn: 8)
    run = runner.run_kernel("vec_add", {"N": 1000, "BLOCK_SIZE": 128}, max_repeats=5)
    assert run.correct is True
    spec = load_spec("vec_add")
    # a fresh compile, as the runner's (a cached one may come from the test seed, made in another folder: the cubin
    # names its source file)
    ours = compile_cuda(path=str(spec.source_path), arch="sm_90", name_expressions=[spec.entry],
                        defines=dict(spec.instantiate({"N": 1000, "BLOCK_SIZE": 128}).defines), cache=False)
    assert modules[0]["code"] is None and modules[0]["cubin"] == ours.cubin == run.cubin
    assert modules[0]["got"] == ours.kernel("VecAdd").mangled == "_Z6VecAddPfS_S_i"
    record = run.to_json()
    assert record["cubin_sha256"] == hashlib.sha256(ours.cubin).hexdigest()
    assert record["entry_symbol"] == "_Z6VecAddPfS_S_i" and "cubin" not in record
    assert record["compile_options"][-1].startswith("(perfmodel compile_cuda cubin, NVRTC ")
    # with NVIDIA's header wheels installed the options are the analysis's own, and nothing stays changed after
    assert record["compile_options"][:-1] == list(ours.options)
    assert nvrtc.sdk_include_dirs is before
    monkeypatch.setenv("PERFMODEL_GPU_COMPILE", "nvcc")
    with pytest.raises(GpuError, match="PERFMODEL_GPU_COMPILE='nvcc'"):
        runner.run_kernel("vec_add", {"N": 1000, "BLOCK_SIZE": 128}, max_repeats=5)


def test_runner_overrides_a_define_by_blanking_it(monkeypatch):
    from perfmodel.gpu import env, runner

    monkeypatch.setenv("PERFMODEL_GPU_COMPILE", "cupy")
    modules = []
    monkeypatch.setattr(env, "require_cupy", lambda: _fake_cupy([], modules))
    monkeypatch.setattr(runner, "occupancy_blocks_per_sm", lambda kernel, threads, dyn: 2)
    try:
        runner.run_kernel("matmul_tiled", {"Width": 64, "TILE_WIDTH": 32}, time_it=False, check=False)
    except Exception:  # noqa: BLE001 - the stand-in kernel only knows vec_add's arguments
        pass
    code, options = modules[0]["code"], modules[0]["options"]
    assert "-DTILE_WIDTH=32" in options
    assert not re.search(r"^\s*#\s*define\s+TILE_WIDTH\b", code, re.MULTILINE)
    original = (ROOT / "kernels_spec" / "matmul_tiled.cu").read_text()
    assert code.count("\n") == original.count("\n")


def test_ncu_filter_takes_template_kernels_by_their_base_name():
    """ncu's ``-k`` sees a template kernel's base name (``sgemm1DBlocktiling``): a filter of the full name
    expression profiled 2 of the SGEMM tutorial's 24 launches (validation/raw/h100_sgemm_cases.json's ncu_info)."""
    import re

    from perfmodel.gpu.ncu import kernel_filter

    f = kernel_filter(["sgemm1DBlocktiling<64, 64, 8, 8>", "sgemm_naive"])
    assert f.startswith("regex:")
    pattern = re.compile(f[len("regex:"):])
    assert pattern.match("sgemm1DBlocktiling") and pattern.match("sgemm1DBlocktiling<64, 64, 8, 8>")
    assert pattern.match("sgemm_naive") and not pattern.match("sgemm_naive_v2") and not pattern.match("vectorAdd")


@pytest.mark.parametrize("name,profile,profiled", [("h100_sgemm", "h100", False), ("h200_sgemm", "h200", True)])
def test_sgemm_datasets_are_correct_and_timed(name, profile, profiled):
    """The SGEMM tutorial's timings (docs/validation.md): every case computed C = A B on the GPU and was timed both
    ways; the H200 run, made after the ncu filter took template kernels (above), has every launch's counters, with
    ncu's grid the timed run's."""
    data = json.loads((ROOT / "validation" / f"{name}.json").read_text())
    assert data["profile"] == profile and len(data["cases"]) == 24
    for case in data["cases"]:
        assert case["correct"] is True, case["id"]
        assert case["time"]["cold"]["median_s"] > 0 and case["time"]["warm"]["median_s"] > 0, case["id"]
        if profiled:
            assert case["ncu"]["shared_load_instructions"] >= 0, case["id"]
            assert "ncu_mapping_warning" not in case, case["id"]
            assert case["ncu"]["ncu_grid_size"] == "(" + ", ".join(str(g) for g in case["grid"]) + ")", case["id"]
        else:
            assert "ncu" not in case, case["id"]


def test_compiler_check_reads_a_cubin_cut_short_or_followed_by_more():
    """validation/compiler_check.py: CuPy's NVRTC wrapper hands back a cubin without its last byte (a zero, the end
    of the program header table); ``_elf`` recovers the image nvdisasm reads, byte for byte, from the ELF header's
    own table offsets, and leaves out anything after it."""
    import importlib.util

    from perfmodel.compile import compile_cuda

    spec = importlib.util.spec_from_file_location("compiler_check", ROOT / "validation" / "compiler_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cubin = compile_cuda(source="__global__ void k(float *a) { a[threadIdx.x] = 1.0f; }\n", arch="sm_90").cubin
    assert cubin[-1] == 0
    assert module._elf(cubin[:-1]) == cubin
    assert module._elf(cubin + b"bytes after the image") == cubin
    functions = module._functions(module._elf(cubin[:-1]))
    assert list(functions) == ["_Z1kPf"] and functions["_Z1kPf"].get("STG.E") == 1
