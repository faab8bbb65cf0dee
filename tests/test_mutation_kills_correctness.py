"""Tests written against the mutants of the sampled run (perfmodel/analyze.py ``_sampled``) the suite let survive:
its extrapolated idle blocks, against a kernel whose busy, half-idle and fully idle blocks are known by hand."""
from __future__ import annotations

import pytest

from perfmodel.analyze import analyze

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
