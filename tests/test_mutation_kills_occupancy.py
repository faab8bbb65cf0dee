"""Tests written against the occupancy mutants the suite let survive: the JSON of `perfmodel occupancy`, checked
against the seed slides' G80 example (256 threads x 11 registers: 2,816 registers a block, 8,192 per SM, so 2
blocks, 16 of 24 warps, occupancy 2/3; 16 KB of shared memory per SM)."""
from __future__ import annotations

import json

import pytest


def test_occupancy_json_g80_eleven_registers_two_blocks(cli):
    code, out, err = cli("occupancy", "--device", "g80", "--threads", "256", "--regs", "11", "--smem", "2048",
                         "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["registers_per_block"] == 256 * 11
    assert doc["blocks_per_sm"] == 2                      # 8,192 // 2,816
    assert doc["warps_per_sm"] == 16 and doc["threads_per_sm"] == 512
    assert doc["max_warps_per_sm"] == 24                  # 768 threads per SM on CC 1.0
    assert doc["occupancy"] == pytest.approx(2 / 3)
    assert doc["shared_memory_per_sm"] == 16 * 1024
    assert doc["shared_memory_per_block_allocated"] == 2048   # already a multiple of the 512-byte unit
    assert doc["warps_per_block"] == 8
