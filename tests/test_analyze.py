"""`perfmodel analyze`: the seed slides' figures through the real pipeline, occupancy inside analyze, registers,
sampled mode, and the JSON contract."""
from __future__ import annotations

import json
from pathlib import Path
import time

import pytest

from perfmodel.analysis import analyze, simulate_launch
from perfmodel.devices import load_device
from perfmodel.errors import OccupancyError
from perfmodel.occupancy import occupancy


def analyze_json(cli, *args) -> dict:
    code, out, err = cli("analyze", *args, "--json")
    assert code == 0, err
    return json.loads(out)


# ---- the seed slides' figures, through `perfmodel analyze` ---------------------------------------------

def test_g80_naive_matmul_cgma_1_bound_21_6(cli):
    doc = analyze_json(cli, "matmul_naive", "--device", "g80", "-D", "Width=64")
    assert doc["cgma"] == pytest.approx(1.0)
    assert doc["achievable_gflops"] == pytest.approx(21.6)
    assert doc["correct"] is True
    # the bottleneck model beside it is below the seed bound's compute peak
    assert 0 < doc["predicted_gflops"] < 346.5


def test_a_define_may_be_an_expression_over_the_defines_before_it(cli):
    """-D takes an expression over the -D names given before it (safe evaluator, never eval): Width = 4 x 16."""
    doc = analyze_json(cli, "matmul_tiled", "--device", "g80", "-D", "TILE_WIDTH=16", "-D", "Width=4*TILE_WIDTH")
    assert doc["params"]["Width"] == 64 and doc["launch"]["grid"][:2] == [4, 4] and doc["correct"] is True
    for value, says in (("Width=4*W", "uses W, which no -D before it defines"),
                        ("Width=__import__('os')", "the call \"__import__('os')\" is not allowed"),
                        ("Width=16>2", "is not a number")):
        code, out, err = cli("analyze", "matmul_tiled", "--device", "g80", "-D", value)
        assert code == 2 and says in err, err


def test_a_define_of_a_cuda_file_may_be_a_type(cli, tmp_path):
    """A build line's -DMINIFE_SCALAR=double: for a CUDA file, a -D VALUE that is a type (and names no -D) is text
    for the preprocessor, as nvcc takes it - x is then double*, doubled (numpy); the saved spec keeps it under
    `macros:` and runs again the same. A name that is another -D's is still an expression (and wrong in order)."""
    import numpy as np

    (tmp_path / "t.cu").write_text("#ifndef SCALAR\n#define SCALAR float\n#endif\n"
                                   "__global__ void scale(SCALAR *x, int n) { int i = blockIdx.x * blockDim.x + "
                                   "threadIdx.x; if (i < n) x[i] *= 2; }\n")
    (tmp_path / "ref.py").write_text("import numpy as np\ndef x(**kw):\n    return 2 * np.arange(32.0)\n")
    base = ("analyze", str(tmp_path / "t.cu"), "--grid", "1", "--block", "32", "--arg", "x=float64[32]:arange",
            "--arg", "n=32", "--device", "h100", "--check", f"x={tmp_path / 'ref.py'}:x")
    code, out, err = cli(*base, "-D", "SCALAR=unsigned long long")
    assert code == 2 and "elements are uint64, not float64" in err, err
    doc = analyze_json(cli, *base[1:], "-D", "SCALAR=double", "--save-spec", str(tmp_path / "t.yaml"))
    assert doc["correct"] is True and doc["counts"]["fp64_flops"] == 32
    assert "macros: {SCALAR: double}" in (tmp_path / "t.yaml").read_text()
    again = analyze_json(cli, str(tmp_path / "t.yaml"), "--device", "h100")
    assert again["correct"] is True and again["counts"]["fp64_flops"] == 32
    code, out, err = cli(*base, "-D", "T=N", "-D", "N=4")
    assert code == 2 and "uses N, which no -D before it defines" in err, err


def test_latency_advice_counts_the_warps_the_grid_puts_on_an_sm(cli):
    """A one-block kernel has one block's 8 warps on its SM, whatever the occupancy would allow (64 warps at 256
    threads on an H100): the advice said "1 wave(s) of 64 warps/SM" and blamed the occupancy."""
    doc = analyze_json(cli, "matmul_colwise", "--device", "h100", "-D", "ha=64", "-D", "wa=64", "-D", "wb=256")
    tip = next(t for t in doc["advice"] if t.startswith("Latency-bound"))
    assert "with 8 warps on a busy SM (1 block(s) of 8 warps: the grid's 1 block over 132 SMs; the occupancy " \
           "would allow 64)" in tip, tip
    assert "occupancy is limited by" not in tip


def test_g80_tiled_16_cgma_16_bound_345_6(cli):
    doc = analyze_json(cli, "matmul_tiled", "--device", "g80", "-D", "TILE_WIDTH=16", "-D", "Width=64")
    assert doc["cgma"] == pytest.approx(16.0)
    assert doc["achievable_gflops"] == pytest.approx(345.6)
    assert doc["seed_model"]["peak_gflops"] == pytest.approx(346.5)
    # the slides: TILE_WIDTH 16 gives each SM 3 blocks, 768 threads
    assert doc["occupancy"]["blocks_per_sm"] == 3
    assert doc["occupancy"]["threads_per_sm"] == 768
    # shared memory per block on CC 1.x: 2 x 16 x 16 x 4 B static + 28 B of params + the 16 B system area
    assert doc["shared_memory_per_block"] == 2048 + 28 + 16
    assert doc["correct"] is True


def test_tiling_16_reduces_global_loads_by_16():
    naive = analyze("matmul_naive", "g80", {"Width": 128, "BLOCK_WIDTH": 16})
    tiled = analyze("matmul_tiled", "g80", {"Width": 128, "TILE_WIDTH": 16})
    assert naive.counts["global"]["loads"] / tiled.counts["global"]["loads"] == pytest.approx(16.0)
    assert naive.flops == tiled.flops == 2 * 128**3


def test_one_tile_phase_is_512_loads_for_8192_mul_add():
    # "Each thread block performs 2 x 256 = 512 float loads from global memory for 256 x (2 x 16) = 8,192
    # mul/add operations" - per tile phase; with Width = TILE_WIDTH a block runs exactly one phase
    one_phase = analyze("matmul_tiled", "g80", {"Width": 16, "TILE_WIDTH": 16})
    assert one_phase.launch.total_blocks == 1
    assert one_phase.counts["global"]["loads"] == 512
    assert one_phase.flops == 8192


def test_g80_1024_tiled_4096_blocks(cli):
    # W = 1024, TILE_WIDTH 16: 4,096 blocks, 64 phases of 512 loads / 8,192 mul-adds each per block
    doc = analyze_json(cli, "matmul_tiled", "--device", "g80", "-D", "Width=1024", "--sample", "24")
    assert doc["launch"]["total_blocks"] == 4096
    per_block_loads = doc["counts"]["global"]["loads"] / 4096
    per_block_flops = doc["counts"]["flops"] / 4096
    assert per_block_loads == pytest.approx(512 * 64)
    assert per_block_flops == pytest.approx(8192 * 64)
    assert doc["cgma"] == pytest.approx(16.0)
    assert doc["sampled"] is True


def test_required_cgma_on_g80():
    a = analyze("matmul_naive", "g80", {"Width": 32})
    assert a.seed.required_cgma == pytest.approx(346.5 / 21.6)


# ---- JSON contract ---------------------------------------------------------------------------------------

def test_json_keys_and_occupancy_object_matches_the_occupancy_command(cli):
    doc = analyze_json(cli, "matmul_tiled", "--device", "h100", "-D", "Width=64", "--regs", "32")
    for key in ("counts", "correct", "cgma", "achievable_gflops", "predicted_gflops", "predicted_time_s", "bound",
                "occupancy", "resources", "launch", "registers_source", "sampled", "kernel", "device", "params",
                "hot_lines", "advice"):
        assert key in doc, key
    h100 = load_device("h100")
    direct = occupancy(h100, 256, 32, doc["shared_memory_per_block"], grid_blocks=16).to_json()
    assert set(doc["occupancy"]) == set(direct)
    assert doc["occupancy"]["blocks_per_sm"] == direct["blocks_per_sm"]
    assert doc["bound"] in doc["resources"]
    for resource in doc["resources"].values():
        assert resource["time_s"] >= 0 and 0 <= resource["share_of_peak"] <= 1.0 + 1e-9
    assert doc["predicted_time_s"] >= max(r["time_s"] for r in doc["resources"].values())
    assert doc["predicted_gflops"] == pytest.approx(doc["counts"]["flops"] / doc["predicted_time_s"] / 1e9)
    assert doc["counts"]["global"]["load_sectors"] > 0


def test_terminal_report_has_every_section(cli):
    code, out, err = cli("analyze", "matmul_tiled", "--device", "g80", "-D", "Width=64")
    assert code == 0, err
    for text in ("matmul_tiled", "GFLOPS", "bound", "Launch & occupancy", "Counts", "CGMA", "Per-resource bounds",
                 "Hottest source lines"):
        assert text in out, text


def test_a_kernel_without_floating_point_work_heads_with_its_effective_bandwidth(cli):
    """A transpose does no arithmetic: the headline quotes its effective bandwidth, as the CUDA samples' transpose
    does - 2 x rows x cols x 4 bytes (read once, written once) over the predicted time - not GFLOPS or the
    addressing's integer operations."""
    import re

    kernel = str(Path(__file__).resolve().parent.parent / "validation" / "kernels" / "transpose_shared.yaml")
    args = ("analyze", kernel, "--device", "h100", "-D", "rows=256", "-D", "cols=512")
    code, out, err = cli(*args)
    assert code == 0, err
    doc = analyze_json(cli, *args[1:])
    rate = float(re.search(r"([\d,.]+) GB/s effective", out).group(1).replace(",", ""))
    assert rate == pytest.approx(2 * 256 * 512 * 4 / doc["predicted_time_s"] / 1e9, abs=0.06)
    assert "GFLOPS in" not in out and "Gop/s" not in out
    assert "DRAM peak" not in out       # 2 x 512 KiB over the predicted time is under the H100's 3,352 GB/s


def test_an_effective_bandwidth_above_the_dram_peak_says_where_the_bytes_came_from(cli, tmp_path):
    """Every thread reads the same 64 ints: 262,144 x 65 x 4 bytes requested (68 MB) in microseconds is several times
    the H100's 3,352 GB/s DRAM peak (its datasheet), which is right for requested bytes (L1 serves the re-reads) but
    reads as impossible unless the headline says so."""
    import re

    (tmp_path / "reread.cu").write_text(
        "__global__ void reread(const int *in, int *out, int n)\n{\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n    int acc = 0;\n"
        "    for (int j = 0; j < 64; j++) acc += in[j];\n    out[i] = acc ^ i;\n}\n")
    code, out, err = cli("analyze", str(tmp_path / "reread.cu"), "--device", "h100", "--grid", "1024", "--block",
                         "256", "--arg", "n=262144", "--arg", "in=int32[64]", "--arg", "out=int32[262144]")
    assert code == 0, err
    rate = float(re.search(r"([\d,.]+) GB/s effective", out).group(1).replace(",", ""))
    assert rate > 3352
    assert "above the 3,352 GB/s DRAM peak" in " ".join(out.split())


# ---- registers --------------------------------------------------------------------------------------------

def test_registers_flag_beats_the_estimate():
    estimate = analyze("matmul_tiled", "g80", {"Width": 32})
    assert estimate.registers.source == "estimate"
    assert any("estimate" in tip for tip in estimate.advice)
    flagged = analyze("matmul_tiled", "g80", {"Width": 32}, regs=11)
    assert flagged.registers.source == "flag" and flagged.registers.per_thread == 11
    # 11 registers x 256 threads: per-block allocation leaves 2 blocks per SM (seed slides)
    assert flagged.occupancy.blocks_per_sm == 2


def test_registers_come_from_the_compiler_and_match_the_gpu():
    """The compile's ptxas figure equals what CUDA reported for the same kernels on the H100 (cudaFuncAttributes
    num_regs, validation/h100.json) where CuPy's NVRTC 13.0 built them - an independent compiler run of the same
    source. (conv1d_tiled, where 13.0 allocated 16 registers against 25 here, was measured again from perfmodel's
    own compile - equal by construction, its SASS checked in tests/test_measured_cubins.py.)"""
    from perfmodel.kernel import load_kernel
    from perfmodel.spec import load_spec

    data = json.loads((Path(__file__).resolve().parent.parent / "validation" / "h100.json").read_text())
    seen = {}
    for case in data["cases"]:
        key = (case["kernel"], tuple(sorted(case["defines"].items())))
        if "compiler" in case:
            assert case["function"]["num_regs"] == 25 and case["kernel"] == "conv1d_tiled", case["id"]
            continue
        if key not in seen:
            spec = load_spec(case["kernel"])
            program = load_kernel(spec.source_path, entry=spec.entry, defines=case["defines"], arch="sm_90")
            seen[key] = (program.registers, case["function"]["num_regs"])
    differ = {k: v for k, v in seen.items() if v[0] != v[1]}
    assert not differ and len(seen) == 23, (differ, len(seen))
    # and analyze uses that figure on the device NVRTC compiled for
    a = analyze("vec_add", "h100", {"N": 4096})
    assert a.registers.source == "compiler" and a.registers.per_thread == seen[("vec_add", ())][1]


def test_regs_auto_and_the_estimate_on_devices_nvrtc_cannot_target():
    h100 = analyze("matmul_tiled", "h100", {"Width": 64, "TILE_WIDTH": 32}, regs="auto")
    assert h100.registers.source == "compiler" and h100.registers.per_thread == 32
    # G80 (CC 1.0) is below NVRTC 13's oldest target: by default the flagged estimate, and the reason
    g80 = analyze("matmul_tiled", "g80", {"Width": 64})
    assert g80.registers.source == "estimate" and "sm_75" in g80.registers.note
    # --regs auto takes the nearest architecture's figure and says so (8x8 blocks: sm_75's figure fits CC 1.0's
    # 8192 registers per block, where 16x16 blocks would not)
    auto = analyze("matmul_tiled", "g80", {"Width": 64, "TILE_WIDTH": 8}, regs="auto")
    assert auto.registers.source == "compiler" and "sm_75" in auto.registers.note


# ---- launches that cannot run ------------------------------------------------------------------------------

def test_1024_threads_on_g80_is_an_error_with_the_reason(cli):
    with pytest.raises(OccupancyError, match="1,024 threads"):
        analyze("matmul_tiled", "g80", {"TILE_WIDTH": 32, "Width": 64})
    code, out, err = cli("analyze", "matmul_tiled", "--device", "g80", "-D", "TILE_WIDTH=32", "-D", "Width=64")
    assert code == 2 and "1,024" in err


# ---- sampled mode ------------------------------------------------------------------------------------------

def _flat(d, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}.")
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            yield f"{prefix}{k}", float(v)


@pytest.mark.parametrize("kernel,params", [
    ("matmul_tiled", {"Width": 512, "TILE_WIDTH": 16}),     # 1,024 blocks (the W=1024 headline: bench/)
    ("matmul_naive", {"Width": 256, "BLOCK_WIDTH": 16}),
])
def test_sampled_counts_agree_with_exact_within_1_percent(kernel, params):
    _, exact = simulate_launch(kernel, params, sample=0)
    _, sampled = simulate_launch(kernel, params, sample=24)
    assert not exact.sampled and sampled.sampled
    assert sampled.blocks_simulated < exact.blocks_simulated
    exact_counts = dict(_flat(exact.counts))
    for key, value in _flat(sampled.counts):
        if key.startswith("global.unique") or key not in exact_counts:
            continue
        reference = exact_counts[key]
        assert value == pytest.approx(reference, rel=0.01, abs=1e-9), key
    assert sampled.correct is True and "sampled run" in sampled.correct_detail


@pytest.mark.parametrize("kernel", ["matmul_tiled", "matmul_naive"])
def test_w4096_is_counted_exactly_from_a_few_blocks(kernel):
    # counts only (the time it takes is bench/bench_speed.py's business, not a unit test's)
    a = analyze(kernel, "h100", {"Width": 4096}, regs=32, check=False)
    # 65,536 blocks: every block is proved to do the same work, so the run is exact from a few blocks
    assert not a.sim.sampled and a.sim.replication["proved"]
    assert a.flops == 2 * 4096**3
    assert a.to_json()["counts"]["global"]["store_requests"] == 4096 * 4096 // 32


def test_picture_scale_reports_partially_idle_blocks():
    a = analyze("picture_scale", "g80")
    doc = a.to_json()
    # 76 x 62 picture in 16 x 16 blocks: the right column and bottom row of blocks are partly idle
    assert doc["counts"]["idle_threads"] == 80 * 64 - 76 * 62
    assert doc["idle"]["partially_idle_blocks"] == 5 + 4 - 1


def test_a_launch_over_the_memory_budget_is_refused_before_allocating(cli, monkeypatch):
    # Width=100000: d_M alone is 1e10 float32 = 37.25 GiB, refused before numpy allocates anything (the process
    # would otherwise die in numpy); the budget can be set, and the message says what the launch needs
    code, _out, err = cli("analyze", "matmul_tiled", "--device", "h100", "-D", "Width=100000")
    assert code == 2 and "37.3 GiB" in err and "memory budget" in err
    monkeypatch.setenv("PERFMODEL_MAX_MEMORY", "1 MiB")
    code, out, _err = cli("analyze", "vec_add", "--device", "h100", "-D", "N=1000000", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["error"]["kind"] == "spec" and "3.8 MiB" in doc["error"]["message"]
    monkeypatch.setenv("PERFMODEL_MAX_MEMORY", "8 MiB")        # 3 x 3.8 MiB: the third array is refused
    code, _out, err = cli("analyze", "vec_add", "--device", "h100", "-D", "N=1000000")
    assert code == 2 and "args[2]" in err and "11.4 MiB" in err


RUNAWAY_CU = """__global__ void k(float *a, int n) {
    int i = threadIdx.x;
    for (;;) { a[i] += 1.0f; if (a[i] < -1.0f) break; }
}
"""
RUNAWAY_SPEC = """name: runaway
description: "an endless loop (a[i] only grows)"
source: runaway.cu
entry: k
params:
  N: {default: 32}
grid: [1]
block: [N]
args:
  - {name: a, dtype: float32, length: N, init: zeros}
  - {name: n, dtype: int32, value: N}
outputs: []
"""


@pytest.mark.parametrize("option, says", [(("--max-steps", "1000"), "runaway kernel"),
                                          (("--timeout", "0.5"), "ran past its time limit (--timeout)")])
def test_runaway_kernel_ends_with_its_loop_line_thread_and_block(cli, tmp_path, option, says):
    (tmp_path / "runaway.cu").write_text(RUNAWAY_CU)
    (tmp_path / "runaway.yaml").write_text(RUNAWAY_SPEC)
    started = time.perf_counter()
    code, _out, err = cli("analyze", str(tmp_path / "runaway.yaml"), "--device", "h100", *option)
    assert code == 2 and time.perf_counter() - started < 10
    assert "runaway.cu:3:" in err and says in err
    assert "thread (0, 0, 0), block (0, 0, 0)" in err


def test_timeout_bounds_the_whole_simulation_not_each_run(cli, tmp_path):
    """A runaway kernel's pilot block, then its retry with the whole grid, each had the full --timeout (and the clock
    was read every 1,024 basic blocks, seconds apart for a wide batch of atomics): `--timeout 5` ended after 14 s
    (the Professional CUDA C book's atomic-ordering loop). Now they share one deadline."""
    (tmp_path / "spin.cu").write_text("__global__ void spin(int *p, int iters)\n"
                                      "{ for (int i = 0; i < iters; i++) atomicAdd(p, 1); }\n")
    args = ("analyze", str(tmp_path / "spin.cu"), "--grid", "4", "--block", "32", "--arg", "p=int32[1]",
            "--arg", "iters=100000000", "--device", "h100", "--timeout", "2")
    cli(*args[:-2], "--timeout", "0.01")               # compiled before the clock
    started = time.perf_counter()
    code, _out, err = cli(*args)
    elapsed = time.perf_counter() - started
    assert code == 2 and "ran past its time limit (--timeout)" in err and "spin.cu:2" in err, err
    assert elapsed < 2 + 1.5, elapsed


def test_an_exact_run_of_hours_is_refused_with_its_estimate_cli(cli):
    code, _out, err = cli("analyze", "matmul_naive", "--device", "h100", "-D", "Width=4096", "--sample", "0",
                          "--execute-all")
    assert code == 2 and "exact run would execute" in err and "--timeout" in err


def test_execute_all_executes_every_block_even_past_the_exact_modes_budget(cli, tmp_path):
    """--execute-all says it executes every block: with no --sample it did not, past the exact mode's budget
    (256 blocks of 1,024 threads, 256 iterations each: ~1.2e7 warp instructions) it sampled 48 blocks and checked
    their part. Now every block runs and every output element is checked; the refusal line still applies and
    says to drop --execute-all."""
    import numpy as np

    (tmp_path / "spin.cu").write_text(
        "__global__ void spin(float *out, int K) {\n"
        "  int r = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = (float)r;\n"
        "  for (int k = 0; k < K; ++k) s = s * 0.5f + 1.0f;\n"
        "  out[r] = s;\n"
        "}\n")
    want = np.arange(1 << 18, dtype=np.float32)
    for _ in range(256):
        want = want * np.float32(0.5) + np.float32(1.0)      # s * 0.5 is exact: an FMA rounds as this does
    np.save(tmp_path / "want.npy", want)
    code, out, err = cli("analyze", str(tmp_path / "spin.cu"), "--grid", "256", "--block", "1024",
                         "--arg", "out=float32[262144]", "--arg", "K=256", "--check", f"out={tmp_path / 'want.npy'}",
                         "--device", "h100", "--execute-all")
    assert code == 0, err
    assert "sampled" not in out and "outputs match" in out, out
    code, _out, err = cli("analyze", "matmul_naive", "--device", "h100", "-D", "Width=4096", "--execute-all")
    assert code == 2 and "drop --execute-all" in err and "--timeout" in err


def test_an_exact_run_of_hours_is_refused_with_its_estimate():
    # naive matmul at Width=4096 with 16x16 blocks: 65,536 blocks of 8 warps, each warp running 4,096 loop
    # iterations (~20 SASS instructions per 4 unrolled iterations) - ~1e10 in all, over the 1e9 refusal line.
    # Every block provably does the same work, so the exact run replicates a few blocks; executing all of them
    # (execute_all=True) is what would take hours, and is refused
    from perfmodel.errors import SimulationError

    with pytest.raises(SimulationError, match="exact run would execute.*--timeout"):
        analyze("matmul_naive", "h100", {"Width": 4096}, sample=0, execute_all=True)


def test_a_fault_caused_by_a_define_the_kernel_does_not_see_carries_the_note(cli, tmp_path):
    """-D N for a file whose N is a `const` (olcf's reductions.cu): the kernel keeps N = 2^20 and reads past the
    1,024-element buffer the -D sized. The note that says so came only with a successful run; the fault carries it
    too, naming the declaration - not a comment that mentions `const` and N (it quoted one)."""
    import re

    (tmp_path / "r.cu").write_text("// -D N=... where N is a `const` in the source: the kernel keeps N\n"
                                   "const unsigned long long N = 1ULL << 20;\n"
                                   "__global__ void k(const float *in, float *out) {\n"
                                   "  unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x;\n  float s = 0.f;\n"
                                   "  for (; i < N; i += gridDim.x * blockDim.x) s += in[i];\n"
                                   "  out[blockIdx.x * blockDim.x + threadIdx.x] = s;\n}\n")
    code, out, err = cli("analyze", str(tmp_path / "r.cu"), "--grid", "4", "--block", "256", "-D", "N=1024",
                         "--arg", "in=float32[1024]", "--arg", "out=float32[1024]", "--device", "h100")
    assert code == 2
    text = " ".join(err.split())
    assert "out-of-bounds global load: in[" in text
    assert re.search(r"Note: -D N: \S*r\.cu:2 declares N as a constant \(`const unsigned long long N = 1ULL << 20;`\)",
                     text), text


def test_a_grid_that_divides_inexactly_says_how_c_truncates(cli, tmp_path):
    """Host code's `ny / 128 + 1` is C's integer division; '/' in an expression is exact, and the hint named only
    rounding up (cdiv), which gives another grid: it names `//` first."""
    (tmp_path / "g.cu").write_text("__global__ void k(float *a, int ny) { int i = blockIdx.x * blockDim.x + "
                                   "threadIdx.x; if (i < ny) a[i] = i; }\n")
    code, out, err = cli("analyze", str(tmp_path / "g.cu"), "--grid", "NY/128+1", "--block", "128", "-D", "NY=1000",
                         "--arg", "a=float32[1000]", "--arg", "ny=NY", "--device", "h100")
    assert code == 2 and "a // b truncates as C's integer division does" in " ".join(err.split())
    doc = analyze_json(cli, str(tmp_path / "g.cu"), "--grid", "NY//128+1", "--block", "128", "-D", "NY=1000",
                       "--arg", "a=float32[1000]", "--arg", "ny=NY", "--device", "h100")
    assert doc["launch"]["grid"][0] == 8


def test_the_atomics_row_gives_the_lanes_per_request_on_its_busiest_address(cli, tmp_path):
    """Counted by hand: 64 threads, 2 warp requests; atomicAdd(&c[0]) puts all 32 lanes of each on one address,
    atomicAdd(&c[i]) one lane on each. The row said '2 lanes ... summed' for the second (the sum over requests),
    which read as contention; it gives the mean per request."""
    (tmp_path / "a.cu").write_text("__global__ void one(int *c) { atomicAdd(&c[0], 1); }\n"
                                   "__global__ void spread(int *c) { atomicAdd(&c[threadIdx.x], 1); }\n")
    for kernel, mean in (("one", "32"), ("spread", "1")):
        code, out, err = cli("analyze", str(tmp_path / "a.cu"), "--kernel", kernel, "--grid", "1", "--block", "64",
                             "--arg", "c=int32[64]", "--device", "h100")
        assert code == 0, err
        row = next(line for line in out.splitlines() if "global atomics" in line)
        assert f"{mean} lanes per request on its busiest address" in row, row


def test_hot_lines_keep_a_headers_name_whole(cli, tmp_path):
    """A hot line in a header is named file:line; with a long header name (CUB's block_scan_warp_scans.cuh) the
    table cut the name (`block_scan_war...`) to make room for the source, which is what gives way now."""
    name = "a_rather_long_header_name_for_block_scans.cuh"
    (tmp_path / name).write_text("__device__ float twice_plus(const float* x, int i) { return 2.0f * x[i] + 1.0f; }\n")
    (tmp_path / "k.cu").write_text(f'#include "{name}"\n__global__ void k(const float* x, float* y, int n) {{\n'
                                   "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                   "  if (i < n) y[i] = twice_plus(x, i) * twice_plus(x, i) + twice_plus(y, i);\n}\n")
    code, out, err = cli("analyze", str(tmp_path / "k.cu"), "--grid", "4", "--block", "256", "--arg", "n=1024",
                         "--arg", "x=float32[1024]", "--arg", "y=float32[1024]", "--device", "h100")
    assert code == 0, err
    hot = out[out.index("Hottest source lines"):]
    assert f"{name}:1" in hot, hot


def test_a_reference_returning_every_output_runs_once(cli, tmp_path):
    """A reference may return a dict of every output (docs/spec.md); it was imported again and called again for
    each output checked (a slow reference - the 3D Gaussian Splatting renderer's - ran once per output). A log the
    module writes counts: one import, one call for two outputs."""
    (tmp_path / "k.cu").write_text("__global__ void k(float *a, float *b) { a[threadIdx.x] = 1.0f; "
                                   "b[threadIdx.x] = 2.0f; }\n")
    log = tmp_path / "log.txt"
    (tmp_path / "ref.py").write_text(
        "import numpy as np\n"
        f"open({str(log)!r}, 'a').write('import\\n')\n"
        "def both(**kw):\n"
        f"    open({str(log)!r}, 'a').write('call\\n')\n"
        "    return {'a': np.ones(32), 'b': np.full(32, 2.0)}\n")
    doc = analyze_json(cli, str(tmp_path / "k.cu"), "--grid", "1", "--block", "32", "--arg", "a=float32[32]",
                       "--arg", "b=float32[32]", "--device", "h100", "--check", f"a={tmp_path / 'ref.py'}:both",
                       "--check", f"b={tmp_path / 'ref.py'}:both")
    assert doc["correct"] is True
    assert log.read_text().split() == ["import", "call"]


def test_a_data_stage_bound_filled_by_global_lines_is_not_called_shared_memory_bound(cli, tmp_path):
    """L1TEX's data stage serves shared memory and the lines of global requests. Here 16 strided loads a thread
    (stride 64 floats: 32 lines a warp request, by hand) against a 32-float shared table read as a broadcast: the
    stage is bound by the global lines, and the advice said 'Shared-memory bound ... register tiling' with the hot
    lines ranked by shared wavefronts. It names the lines, and ranks by the stage's whole work."""
    (tmp_path / "d.cu").write_text(
        "__global__ void strided(const float* in, float* out, int n, int stride)\n{\n"
        "    __shared__ float s[32];\n    if (threadIdx.x < 32) s[threadIdx.x] = 1.0f + threadIdx.x;\n"
        "    __syncthreads();\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    float acc = 0.f;\n"
        "    for (int k = 0; k < 16; k++)\n        acc += in[((size_t)i * stride + k) % n] * s[k];\n"
        "    out[i] = acc;\n}\n")
    doc = analyze_json(cli, str(tmp_path / "d.cu"), "--kernel", "strided", "--grid", "cdiv(m,256)", "--block",
                       "256", "-D", "m=65536", "-D", "n=4194304", "--arg", "in=float32[n]:random",
                       "--arg", "out=float32[m]", "--arg", "n=n", "--arg", "stride=64", "--device", "h100")
    assert doc["bound"] == "shared"
    tip = doc["advice"][0]
    assert tip.startswith("L1 data-stage bound") and "32.0 lines per load request" in tip, tip
    assert not any(t.startswith("Shared-memory bound") for t in doc["advice"])
    assert doc["hot_lines"][0]["metric"] == "data_stage" and doc["hot_lines"][0]["line"] == 9


def test_a_define_the_code_uses_but_no_directive_names_reaches_the_compiler(cli, tmp_path):
    """A library that compiles its kernels with NVRTC passes their sizes on its own build line (ArrayFire's
    `-DTILE_DIM=32`): no #if or #define of the file names TILE, so -D TILE=32 stayed a param of the launch's
    expressions and the compile failed ('identifier "TILE" is undefined'). It goes to the compiler too, and a
    saved spec keeps it (compile_params). The reversal by numpy."""
    (tmp_path / "r.cu").write_text("__global__ void rev(float *x) {\n    __shared__ float s[TILE];\n"
                                   "    s[threadIdx.x] = x[threadIdx.x];\n    __syncthreads();\n"
                                   "    x[threadIdx.x] = s[TILE - 1 - threadIdx.x];\n}\n")
    (tmp_path / "ref.py").write_text("import numpy as np\ndef x(x, **kw):\n    return np.asarray(x)[::-1]\n")
    doc = analyze_json(cli, str(tmp_path / "r.cu"), "--grid", "1", "--block", "32", "-D", "TILE=32", "--arg",
                       "x=float32[32]:arange", "--device", "h100", "--check", f"x={tmp_path / 'ref.py'}:x",
                       "--save-spec", str(tmp_path / "r.yaml"))
    assert doc["correct"] is True and doc["shared_memory_per_block"] == 128
    assert "compile_params: [TILE]" in (tmp_path / "r.yaml").read_text()
    again = analyze_json(cli, str(tmp_path / "r.yaml"), "--device", "h100")
    assert again["correct"] is True


def test_an_effective_bandwidth_mostly_from_the_caches_says_what_dram_moves(cli, tmp_path):
    """FFmpeg's to_jpeg reads two small tables per pixel: 'GB/s effective' counted those re-reads (16.7 MB against
    4.2 MB of pixels) and read as 80% of the DRAM peak for a latency-bound kernel. By hand here: 65,536 threads read
    8 ints of a 32-int table and write one int, 2.36 MB requested, 0.26 MB of it through DRAM (the writes, and the
    table once): the headline gives the DRAM rate beside it, which is the DRAM bytes over the predicted time."""
    import re

    (tmp_path / "t.cu").write_text("__global__ void lut(const int *t, int *out, int n)\n{\n"
                                   "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n"
                                   "    int acc = 0;\n    for (int j = 0; j < 8; j++) acc += t[(i + j) & 31];\n"
                                   "    out[i] = acc;\n}\n")
    args = (str(tmp_path / "t.cu"), "--grid", "256", "--block", "256", "--arg", "n=65536", "--arg", "t=int32[32]",
            "--arg", "out=int32[65536]", "--device", "h100")
    code, out, err = cli("analyze", *args)
    assert code == 0, err
    doc = analyze_json(cli, *args)
    head = " ".join(out.split())
    m = re.search(r"([\d,.]+) GB/s of it from DRAM: L1/L2 serve re-reads", head)
    assert m, head
    dram = doc["model"]["traffic"]["dram_bytes"]
    assert dram == pytest.approx(65536 * 4 + 128, rel=0.01)
    assert float(m.group(1).replace(",", "")) == pytest.approx(dram / doc["predicted_time_s"] / 1e9, abs=0.06)
