"""64- and 128-bit shared-memory loads: wavefronts against ncu, and loads that ptxas merges.

validation/raw/h200_shared_wide.json was measured with ``python validation/microbench/shared_wide.py`` on an H200:
one warp, one LDS / LDS.64 / LDS.128 per launch, 107 lane -> element patterns per width (named broadcast, half-,
quarter-warp and strided shapes, 40 random draws, 48 with lanes sharing addresses in pairs or quads).
"""
import json
from pathlib import Path

import numpy as np
import pytest

from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate
from perfmodel.sim import warps as W

ROOT = Path(__file__).resolve().parent.parent
MEASURED = json.loads((ROOT / "validation/raw/h200_shared_wide.json").read_text())["cases"]
KERNEL = ROOT / "validation/microbench/shared_wide.cu"


def _rule(case) -> int:
    lanes = case["bytes"] // 4
    elements = np.array(case["elements"], np.int64)
    if lanes == 1:
        return int(W.wavefronts_per_warp(elements[None, :], None)[0, 0])
    return int(W.wide_load_wavefronts((elements * lanes)[None, :], None, lanes)[0, 0])


def test_every_measured_pattern_matches_the_rule():
    assert len(MEASURED) == 321
    wrong = [(c["kernel"], c["pattern"], c["wavefronts"], _rule(c)) for c in MEASURED if _rule(c) != c["wavefronts"]]
    assert wrong == []


def test_the_old_whole_warp_bank_rule_did_not_match_wide_loads():
    """The bank rule over all 32 lanes (what 64/128-bit loads were counted with before): wrong on most wide
    patterns, so the test above can tell the rules apart."""
    wrong = 0
    for c in MEASURED:
        lanes = c["bytes"] // 4
        if lanes > 1:
            el = np.array(c["elements"], np.int64) * lanes
            words = (el[:, None] + np.arange(lanes)).reshape(1, -1)
            wrong += int(W.wavefronts_per_warp(words, None, lanes_per_thread=lanes)[0, 0]) != c["wavefronts"]
    assert wrong > 100


@pytest.mark.parametrize("kernel,pattern", [
    ("lds128", "same"), ("lds128", "halves"), ("lds128", "interleave4"), ("lds128", "seq"),
    ("lds128", "random0_31"), ("lds128", "pairdup0"), ("lds128", "half_pairdup0"),
    ("lds64", "interleave2"), ("lds64", "interleave4"), ("lds64", "random3_16"), ("lds32", "stride2"),
])
def test_the_executor_counts_the_measured_wavefronts(kernel, pattern):
    case = next(c for c in MEASURED if c["kernel"] == kernel and c["pattern"] == pattern)
    program = load_kernel(KERNEL, entry=kernel)
    out = np.zeros(32 * case["bytes"] // 4, np.float32)
    r = simulate(program, 1, 32, [np.array(case["elements"], np.int32), out])
    assert r.counts.shared["load_requests"] == case["instructions"] == 1
    assert r.counts.shared["load_wavefronts"] == case["wavefronts"]
