"""Tests written against the mutants of the sampled run (perfmodel/analysis.py ``_sampled``) the suite let survive:
its extrapolated idle blocks, against a kernel whose busy, half-idle and fully idle blocks are known by hand."""
from __future__ import annotations

import pytest

from perfmodel.analysis import analyze

PATTERN_CU = """
__global__ void Pattern(float* out)
{
    int b = blockIdx.x, t = threadIdx.x;
    int kind = b % 4;                        // 0 and 3: every thread works; 1: half of them; 2: none
    if (kind == 2) return;
    if (kind == 1 && t >= blockDim.x / 2) return;
    out[b * blockDim.x + t] = 1.0f;
}
"""

PATTERN_SPEC = """
name: idle_pattern
description: "blocks that are busy, half idle or fully idle by their index"
source: idle.cu
entry: Pattern
params:
  B: {default: 64}
grid: [B]
block: [128]
args:
  - {name: out, dtype: float32, length: B * 128, init: zeros}
"""


@pytest.fixture(scope="module")
def pattern(tmp_path_factory):
    folder = tmp_path_factory.mktemp("idle")
    (folder / "idle.cu").write_text(PATTERN_CU)
    (folder / "idle_pattern.yaml").write_text(PATTERN_SPEC)
    return str(folder / "idle_pattern.yaml")


def test_idle_blocks_exact_and_sampled(pattern):
    # 64 blocks: 16 with half their 128 threads idle, 16 with all of them idle
    exact = analyze(pattern, "h100", sample=0).to_json()
    assert exact["idle"]["partially_idle_blocks"] == 16
    assert exact["idle"]["fully_idle_blocks"] == 16
    assert exact["counts"]["idle_threads"] == 16 * 64 + 16 * 128
    sampled = analyze(pattern, "h100", sample=24).to_json()
    assert sampled["sampled"] and sampled["idle"]["extrapolated"]
    # an estimate from 24 of the 64 blocks: within a quarter of the true 16
    assert 12 <= sampled["idle"]["partially_idle_blocks"] <= 20
    assert 12 <= sampled["idle"]["fully_idle_blocks"] <= 20


def test_sampled_check_ignores_nan_outputs_the_sampled_blocks_did_not_write(tmp_path):
    # vec_add with C initialised to NaN: the blocks a sampled run skips leave their NaNs (NaN != NaN, yet nothing
    # was written there), so only the elements the simulated blocks wrote are compared, and A + B is correct
    import shutil

    import yaml

    from perfmodel.paths import shipped_dir

    spec = yaml.safe_load((shipped_dir("kernels_spec") / "vec_add.yaml").read_text())
    n = 16 * 256
    spec["name"] = "vec_add_nan"
    spec["params"]["N"]["default"] = n
    for arg in spec["args"]:
        if arg["name"] == "C":
            arg["init"] = {"values": [float("nan")] * n}
    (tmp_path / "vec_add_nan.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    shutil.copy(shipped_dir("kernels_spec") / "vec_add.cu", tmp_path / "vec_add.cu")
    a = analyze(str(tmp_path / "vec_add_nan.yaml"), "h100", sample=4)
    assert a.sim.sampled and a.sim.blocks_simulated < 16
    assert a.sim.correct is True, a.sim.correct_detail


def test_sampled_report_keeps_hot_lines_reason_and_zero_idle_figures():
    # vec_add, 64 full blocks: a sampled run reports what the exact run does - no idle block, the source line of
    # the add among the hot lines - and says why it sampled
    exact = analyze("vec_add", "h100", {"N": 64 * 256}, sample=0).to_json()
    sampled = analyze("vec_add", "h100", {"N": 64 * 256}, sample=4).to_json()
    assert sampled["sampled"] and "--sample 4" in sampled["sample"]["reason"]
    for doc in (exact, sampled):
        assert doc["idle"]["partially_idle_blocks"] == 0 and doc["idle"]["fully_idle_blocks"] == 0
    add_line = next(i for i, text in enumerate(Path_text("vec_add.cu"), 1) if "C[i] = A[i] + B[i];" in text)
    assert add_line in {h["line"] for h in sampled["hot_lines"]}
    assert {h["line"] for h in sampled["hot_lines"]} == {h["line"] for h in exact["hot_lines"]}


def Path_text(name: str) -> list[str]:
    from perfmodel.paths import shipped_dir

    return (shipped_dir("kernels_spec") / name).read_text().splitlines()


def test_a_kernel_that_writes_nothing_is_never_reported_correct(tmp_path):
    # the vec_add spec pointed at a kernel whose store never runs: the exact run is wrong; a sampled run whose
    # blocks wrote nothing has nothing to check (None), and must not claim the outputs are right
    import shutil

    from perfmodel.paths import shipped_dir

    src = shipped_dir("kernels_spec")
    (tmp_path / "nowrite.cu").write_text((src / "vec_add.cu").read_text().replace("if (i < N)", "if (i < 0)"))
    (tmp_path / "nowrite.yaml").write_text((src / "vec_add.yaml").read_text()
                                           .replace("name: vec_add", "name: nowrite")
                                           .replace("source: vec_add.cu", "source: nowrite.cu"))
    shutil.copy(src / "vec_add.cu", tmp_path / "unused.cu")
    assert analyze(str(tmp_path / "nowrite.yaml"), "h100", {"N": 2048}, sample=0).sim.correct is False
    sampled = analyze(str(tmp_path / "nowrite.yaml"), "h100", {"N": 64 * 256}, sample=4)
    assert sampled.sim.sampled
    assert sampled.sim.correct is not True
