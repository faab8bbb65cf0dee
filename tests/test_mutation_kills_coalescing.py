"""Mutation-testing kills for the coalescing and atomic-contention counts (issue 18, item 4; docs/testing.md).

Every expected figure is derived by hand in the test from the rule it checks: NVIDIA's coalescing rules per
generation (CUDA C Programming Guide, quoted in perfmodel/sim/coalesce.py) and the atomic counting rule of
perfmodel/sim/atomic_count.py's docstring (the lanes of a warp merged into one operation where the compiler combines
them - a 32-bit integer add/min/max/and/or/xor on an address every lane shares by construction - or, on shared
memory, an integer add; every other atomic is one operation per active lane; validation/h100_fidelity.json measured
the difference)."""
from __future__ import annotations

import numpy as np

from perfmodel.sim import atomic_count


def _one_warp(offsets, active=None):
    off = np.asarray(offsets, np.int64).reshape(1, 32)
    mb = np.ones((1, 32), bool) if active is None else np.asarray(active, bool).reshape(1, 32)
    return off, mb


def test_merged_lanes_of_a_whole_warp_on_one_address_are_one_operation():
    off, mb = _one_warp([0] * 32)
    warp, addr, lanes = atomic_count.operations(off, mb, True)
    assert warp.tolist() == [0] and addr.tolist() == [0] and lanes.tolist() == [32]


def test_which_atomics_merge_lanes():
    # global: only what the compiler combines (an address the same for every lane by construction, 32-bit integer
    # add/min/max/and/or/xor); shared: integer add and increment
    assert atomic_count.merges("global", np.uint32, "add", combined=True)
    assert atomic_count.merges("global", np.int32, "max", combined=True)
    assert not atomic_count.merges("global", np.uint32, "add", combined=False)
    assert not atomic_count.merges("global", np.uint32, "exch", combined=True)
    assert not atomic_count.merges("global", np.float32, "add", combined=True)
    assert not atomic_count.merges("global", np.uint64, "add", combined=True)
    assert atomic_count.merges("shared", np.uint32, "add", combined=False)
    assert not atomic_count.merges("shared", np.uint32, "max", combined=False)
    assert not atomic_count.merges("shared", np.float32, "add", combined=False)


def test_float_add_to_one_address_is_one_operation_per_lane():
    off, mb = _one_warp([64] * 32)
    warp, addr, lanes = atomic_count.operations(off, mb, False)
    assert warp.tolist() == [0] * 32 and addr.tolist() == [64] * 32 and lanes.tolist() == [1] * 32


def test_one_address_hot_line_counts_by_hand():
    # 32 float adds of one warp to byte 64: the line's only address, so all 32 operations count at the
    # same-address rate (1 transaction + 31 passes)
    store: dict = {}
    off, mb = _one_warp([64] * 32)
    atomic_count.tally(store, "global", off, mb, np.float32, "add", heap_bytes=256)
    g, s = {}, {}
    atomic_count.add_counts(g, s, store)
    assert g == {"atomic_ops": 32, "atomic_hot_line_sectors": 0, "atomic_hot_line_repeats_int": 0,
                 "atomic_hot_line_repeats_float": 0, "atomic_hot_line_one_address_int": 0,
                 "atomic_hot_line_one_address_float": 32}
    assert s == {"atomic_ops": 0}


def test_fermi_8_byte_words_of_two_warps_by_hand():
    """Compute capability 2.x: a warp of 8-byte words is two half-warp requests, each one transaction per distinct
    128-byte line. Two warps, lane i reads bytes 8 i .. 8 i + 7: each half-warp covers exactly one line, so every
    warp is 2 transactions of 128 bytes."""
    from perfmodel.sim.coalesce import transactions

    tx, nbytes = transactions(np.arange(64) * 8, 8, rule="fermi")
    assert tx.tolist() == [2, 2] and nbytes.tolist() == [256, 256]
    # the second warp shifted by 64 bytes straddles lines in both halves: 2 lines per half-warp
    addr = np.r_[np.arange(32) * 8, 64 + np.arange(32) * 8 + 256]
    tx, nbytes = transactions(addr, 8, rule="fermi")
    assert tx.tolist() == [2, 4] and nbytes.tolist() == [256, 512]


def test_hot_line_is_the_one_with_the_most_serialised_work():
    """Line 0 (bytes 0-127): a warp's 32 float adds to byte 0 and its 32 integer exchanges on byte 4 - two
    addresses in one sector: 2 transactions, 31 + 31 passes = 64 units of L2 work. Line 1 (bytes 128-255): a
    warp's 32 integer adds to one address, combined into 1 operation. The busiest line is line 0, by 64 to 1; it has
    two addresses, so its work is transactions and passes by type."""
    store: dict = {}
    off, mb = _one_warp([0] * 32)
    atomic_count.tally(store, "global", off, mb, np.float32, "add", heap_bytes=256)
    off, mb = _one_warp([4] * 32)
    atomic_count.tally(store, "global", off, mb, np.int32, "exch", heap_bytes=256)
    off, mb = _one_warp([128] * 32)
    atomic_count.tally(store, "global", off, mb, np.int32, "add", heap_bytes=256, combined=True)
    g: dict = {}
    atomic_count.add_counts(g, {}, store)
    assert g == {"atomic_ops": 65, "atomic_hot_line_sectors": 2, "atomic_hot_line_repeats_int": 31,
                 "atomic_hot_line_repeats_float": 31, "atomic_hot_line_one_address_int": 0,
                 "atomic_hot_line_one_address_float": 0}


def test_cc12_dram_traffic_of_a_misaligned_warp_by_hand():
    """Compute capability 1.2/1.3 (GT200; no shipped profile uses it): one warp copies out[i] = a[i + 1]. Loads,
    per half-warp, from the programming guide's rule (128-byte segments for 4-byte words, halved while only one
    half is used): lanes 0-15 read bytes 4-67, one segment with both halves used: 128 B; lanes 16-31 read bytes
    68-131: bytes 68-127 use the upper half of segment 0 (64 B) and 128-131 the lowest 32 B of segment 1 (32 B).
    224 B in 3 transactions. Stores out[0..31], aligned: 64 B per half-warp, 128 B. Nothing caches global memory
    on 1.x, so these are the DRAM bytes."""
    from perfmodel.analysis import _counts_json
    from perfmodel.kernel import load_kernel
    from perfmodel.model.traffic import Traffic, cc1_traffic
    from perfmodel.sim import simulate

    program = load_kernel(source="__global__ void k(const float *a, float *out) {"
                                 " out[threadIdx.x] = a[threadIdx.x + 1]; }", path="misaligned.cu")
    result = simulate(program, 1, 32, [np.arange(64, dtype=np.float32), np.zeros(32, np.float32)])
    g = _counts_json(result.counts)["global"]
    assert (g["cc12_load_transactions"], g["cc12_load_bytes"]) == (3, 224)
    sectors = Traffic(load_sectors=5, store_sectors=4, l1_hit_rate=0.0, block_reuse=0.0, l2_load_sectors=5,
                      l2_store_sectors=4, l2_hit_rate=0.0, dram_read_bytes=160, dram_write_bytes=128,
                      working_set_bytes=288, footprint_bytes=288)
    t = cc1_traffic(sectors, g, "cc1.2")
    assert (t.dram_read_bytes, t.dram_write_bytes) == (224, 128)
    assert cc1_traffic(sectors, g, "sectors") == sectors


def test_a_short_row_counts_as_a_warp_whose_missing_lanes_are_inactive():
    # 20 lanes given: the same transactions and bytes as the 32-lane warp with lanes 20-31 switched off, under
    # every rule (the half-warp rules see the second half-warp's 4 lanes, Fermi's 8-byte rows their quarter)
    from perfmodel.sim.coalesce import RULES, transactions

    for size in (4, 8):
        addr = np.arange(32, dtype=np.int64) * size * 3 + 1024
        active = np.arange(32) < 20
        for rule in RULES:
            short = transactions(addr[:20], size, rule=rule)
            masked = transactions(addr, size, active=active, rule=rule)
            assert [x.tolist() for x in short] == [x.tolist() for x in masked], (rule, size)
