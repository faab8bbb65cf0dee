"""The occupancy calculator: the seed slides' G80 statements, the reference's worked checks, impossible
launches, waves and the "impact of varying" sweeps. (Agreement with cuda_occupancy.h over thousands of
configurations for CC >= 3.0 is in test_occupancy_oracle.py.)"""
from __future__ import annotations

import pytest

from perfmodel import load_device, occupancy
from perfmodel.errors import OccupancyError
from perfmodel.occupancy import (kernel_shared_memory_bytes, sweep_registers, sweep_shared_memory,
                                 sweep_threads)


@pytest.fixture(scope="module")
def g80():
    return load_device("g80")


# ---- the seed slides, on G80 ---------------------------------------------------------------------------

def test_tile_width_16_gives_3_blocks_and_768_threads(g80):
    # "TILE_WIDTH of 16 gives each SM 3 blocks, 768 threads (full capacity)": 8 warps per block, 24 warp slots.
    occ = occupancy(g80, 16 * 16, 10, 2048)
    assert occ.blocks_per_sm == 3
    assert occ.threads_per_sm == 768
    assert occ.warps_per_sm == 24
    assert occ.occupancy == 1.0
    assert "warps" in occ.limiters


def test_11_registers_with_256_thread_blocks_leave_2_blocks(g80):
    # 10 registers x 768 threads fit the 8K register file (3 blocks x 2560 = 7680). With 11, one block needs
    # ceil(8 warps x 32 x 11, 256) = 2816 registers and 3 blocks would need 8448 > 8192: only 2 blocks fit,
    # 512 threads, 16 of 24 warps - registers are allocated per block, so the SM loses a whole block (256
    # threads) for one extra register per thread.
    ten = occupancy(g80, 256, 10, 0)
    eleven = occupancy(g80, 256, 11, 0)
    assert ten.blocks_per_sm == 3
    assert eleven.registers_per_block == 2816
    assert eleven.blocks_per_sm == 2
    assert eleven.threads_per_sm == 512
    assert eleven.warps_per_sm == 16
    assert eleven.occupancy == pytest.approx(2 / 3)
    assert eleven.limiters == ["registers"]


def test_5_kb_of_shared_memory_per_block_allows_3_blocks(g80):
    # 16 KB / 5 KB: 3 blocks (15 KB); a fourth would need 20 KB. Small blocks so that only shared memory limits.
    occ = occupancy(g80, 64, 4, 5 * 1024)
    assert occ.limits["shared_memory"] == 3
    assert occ.blocks_per_sm == 3
    assert occ.limiters == ["shared_memory"]
    # With the CC 1.x system area the kernel really takes 5 KB + 16 B -> 5.5 KB allocated -> only 2 blocks.
    real = occupancy(g80, 64, 4, kernel_shared_memory_bytes(g80, 5 * 1024, 0, 0))
    assert real.shared_memory_per_block_allocated == 5632
    assert real.blocks_per_sm == 2


def test_tile_width_16_vs_32_shared_memory(g80):
    # TILE_WIDTH 16: 2 x 256 x 4 B = 2 KB per block; shared memory alone would allow 8 blocks, but the
    # threading model limits the SM to 3, "so shared memory is not the limiting factor here".
    tile16 = occupancy(g80, 256, 10, 2 * 16 * 16 * 4)
    assert tile16.limits["shared_memory"] == 8
    assert tile16.blocks_per_sm == 3
    assert "shared_memory" not in tile16.limiters
    # TILE_WIDTH 32: 2 x 32 x 32 x 4 B = 8 KB per block "allowing only up to two thread blocks" (shared memory
    # limit 2), though the 32 x 32 block itself cannot launch on G80 (see the next test).
    tile32_smem = occupancy(g80, 128, 10, 2 * 32 * 32 * 4)
    assert tile32_smem.limits["shared_memory"] == 2
    # What the hardware really allocates on CC 1.x adds the parameters (Md, Nd, Pd, Width: 16 B on the 32-bit
    # G80) and the 16 B system area: 2080 B -> 2560 allocated -> 6 blocks; 8224 B -> 8704 -> 1 block.
    assert occupancy(g80, 256, 10, kernel_shared_memory_bytes(g80, 2048, 0, 16)).limits["shared_memory"] == 6
    assert occupancy(g80, 128, 10, kernel_shared_memory_bytes(g80, 8192, 0, 16)).limits["shared_memory"] == 1


def test_32x32_block_rejected_on_g80_accepted_on_fermi(g80):
    with pytest.raises(OccupancyError, match="1024 threads per block is more than g80's maximum of 512"):
        occupancy(g80, 32 * 32, 10, 8192)
    fermi = occupancy("fermi", 32 * 32, 10, 8192)
    assert fermi.blocks_per_sm == 1  # 32 warps of 48
    assert fermi.limiters == ["warps"]


# ---- worked checks from NVIDIA's occupancy calculators (docs/devices.md) -------------------------------

def test_reference_g80_worked_check(g80):
    occ = occupancy(g80, 256, 10, 2072)  # ptxas "5 registers, 8+16 bytes smem" + 2048 dynamic
    assert occ.registers_per_block == 2560
    assert occ.shared_memory_per_block_allocated == 2560
    assert occ.limits == {"warps": 3, "registers": 3, "shared_memory": 6, "blocks": 8}
    assert occ.blocks_per_sm == 3


def test_g80_warp_limit_uses_warps_rounded_to_2_as_nvidias_header(g80):
    # T=96: 3 warps allocated as 4. CUDA 7.0 cuda_occupancy.h: 24 / 4 = 6 blocks (the v2.3 spreadsheet says 8).
    occ = occupancy(g80, 96, 4, 0)
    assert occ.warps_allocated_per_block == 4
    assert occ.limits["warps"] == 6
    assert occ.blocks_per_sm == 6
    assert occ.warps_per_sm == 18  # 6 blocks x 3 real warps
    assert occ.occupancy == 0.75


def test_reference_fermi_worked_check():
    occ = occupancy("fermi", 256, 16, 4096)
    assert occ.limits == {"warps": 6, "registers": 8, "shared_memory": 12, "blocks": 8}
    assert occ.blocks_per_sm == 6


def test_fermi_register_unit_128_for_the_listed_counts():
    # CUDA 7.0 header: 22 registers/thread allocate ceil(22 x 32, 128) = 768 per warp (not 704): 16384 / 768 =
    # 21 warps per sub-partition, 42 per SM, 3 blocks of 11 warps (the 64-register unit would give 4).
    occ = occupancy("fermi", 352, 22, 0)
    assert occ.registers_per_block == 768 * 11
    assert occ.limits["registers"] == 3
    assert occupancy("fermi", 352, 23, 0).registers_per_block == 768 * 11  # 23 x 32 = 736 -> 768 with unit 64


def test_reference_h100_48_kb_dynamic():
    occ = occupancy("h100", 256, 32, 48 * 1024)
    assert occ.shared_memory_per_block_allocated == 49152 + 1024  # the 1 KB reserved per block
    assert occ.limits["shared_memory"] == 4  # 233472 // 50176
    assert occ.blocks_per_sm == 4
    assert occ.occupancy == 0.5


def test_opt_in_shared_memory_and_carveout():
    big = occupancy("a100", 256, 32, 100 * 1024)
    assert big.requires_shared_memory_optin
    assert big.blocks_per_sm == 1
    with pytest.raises(OccupancyError, match="more than a100's maximum of 163 KiB"):
        occupancy("a100", 256, 32, 164 * 1024)
    # V100, 10 KB per block with an 8 KB carveout requested: the driver takes the smallest carveout that fits
    # one block (16 KB) -> 1 block; the default (96 KB) allows 9, capped by the 8 warps limit.
    small = occupancy("v100", 256, 32, 10 * 1024, carveout="8 KB")
    assert small.shared_memory_per_sm == 16 * 1024
    assert small.blocks_per_sm == 1
    assert occupancy("v100", 256, 32, 10 * 1024).limits["shared_memory"] == 9
    assert occupancy("v100", 256, 32, 10 * 1024, carveout="50%").shared_memory_per_sm == 64 * 1024


# ---- impossible launches are errors, never "0 blocks" -----------------------------------------------------

@pytest.mark.parametrize("device, threads, regs, smem, reason", [
    ("g80", 513, 10, 0, "threads per block"),
    ("g80", 256, 125, 0, "registers per thread"),
    ("g80", 256, 33, 0, "registers per block"),  # ceil(8 x 32 x 33, 256) = 8448 > 8192
    ("g80", 64, 4, 16 * 1024 + 1, "shared memory per block"),
    ("fermi", 256, 64, 0, "registers per thread"),
    ("h100", 1024, 255, 0, "registers per block"),
    ("h100", 288, 255, 0, "register sub-partitions"),  # 9 warps allocated as 12 x 8192 registers
    ("h100", 128, 32, 228 * 1024, "shared memory per block"),
    ("h100", 0, 32, 0, "must be positive"),
])
def test_impossible_launches_raise(device, threads, regs, smem, reason):
    with pytest.raises(OccupancyError, match=reason):
        occupancy(device, threads, regs, smem)


# ---- results ----------------------------------------------------------------------------------------------

def test_unused_resources_are_not_limiters(g80):
    occ = occupancy(g80, 32, 0, 0)
    assert occ.limits == {"warps": 12, "registers": 8, "shared_memory": 8, "blocks": 8}
    assert occ.limiters == ["blocks"]


def test_waves(g80):
    # 1024 x 1024 matrix, 16 x 16 tiles: 4096 blocks; 3 blocks x 16 SMs = 48 per wave.
    occ = occupancy(g80, 256, 10, 2048, grid_blocks=4096)
    assert occ.waves.blocks_per_wave == 48
    assert occ.waves.waves == pytest.approx(4096 / 48)
    assert (occ.waves.full_waves, occ.waves.tail_blocks, occ.waves.wave_count) == (85, 16, 86)


def test_json_contract(g80):
    doc = occupancy(g80, 256, 11, 2048, grid_blocks=100).to_json()
    for key in ("blocks_per_sm", "warps_per_sm", "threads_per_sm", "occupancy", "limiters", "limits"):
        assert key in doc
    assert set(doc["limits"]) == {"warps", "registers", "shared_memory", "blocks"}
    assert set(doc["limiters"]) <= set(doc["limits"])
    assert 0 <= doc["occupancy"] <= 1
    assert doc["waves"]["grid_blocks"] == 100


def test_kernel_shared_memory_bytes_adds_params_and_system_area_only_on_1x(g80):
    assert kernel_shared_memory_bytes(g80, 2048, 0, 8) == 2048 + 8 + 16
    assert kernel_shared_memory_bytes(load_device("h100"), 2048, 1024, 8) == 3072


def test_sweeps_mark_the_seed_points(g80):
    threads = {p.x: p for p in sweep_threads(g80, 10, 2048)}
    assert threads[256].blocks_per_sm == 3 and threads[512].blocks_per_sm == 1
    assert max(threads) == 512
    regs = {p.x: p for p in sweep_registers(g80, 256, 2048)}
    assert regs[10].blocks_per_sm == 3 and regs[11].blocks_per_sm == 2
    assert regs[33].blocks_per_sm == 0 and "registers per block" in regs[33].error
    smem = {p.x: p for p in sweep_shared_memory(g80, 64, 4)}
    assert smem[5120].blocks_per_sm == 3 and smem[8192].blocks_per_sm == 2 and smem[0].blocks_per_sm == 8


# ---- the `perfmodel occupancy` command ----------------------------------------------------------------------

def test_cli_json_contract(cli):
    import json

    code, out, _ = cli("occupancy", "--device", "g80", "--threads", "256", "--regs", "11",
                       "--smem", "2048", "--grid-blocks", "4096", "--json")
    assert code == 0
    doc = json.loads(out)
    assert (doc["blocks_per_sm"], doc["warps_per_sm"], doc["threads_per_sm"]) == (2, 16, 512)
    assert doc["limiters"] == ["registers"]
    assert doc["limits"] == {"warps": 3, "registers": 2, "shared_memory": 8, "blocks": 8}
    assert doc["occupancy"] == pytest.approx(2 / 3)
    assert doc["waves"]["blocks_per_wave"] == 32
    registers = doc["impact"]["registers"]
    assert registers[0] == {"start": 1, "end": 10, "blocks_per_sm": 3, "warps_per_sm": 24, "occupancy": 1.0,
                            "error": None}


def test_cli_table_marks_the_limiter_and_the_current_point(cli):
    code, out, _ = cli("occupancy", "-d", "g80", "-t", "16x16", "-r", "11", "-s", "2 KiB")
    assert code == 0
    assert "<- limiter" in out
    assert "Impact of varying register count per thread" in out
    assert "here 11: 2 blocks/SM, 67% (same from 11 to 16)" in out


def test_cli_impossible_launch_is_a_user_error(cli):
    code, out, err = cli("occupancy", "--device", "g80", "--threads", "32x32", "--regs", "10")
    assert code == 2
    assert "1024 threads per block is more than g80's maximum of 512" in err
    assert "Traceback" not in err and out == ""


def test_cli_device_path(cli):
    from perfmodel.paths import shipped_dir

    code, out, _ = cli("occupancy", "--device", str(shipped_dir("devices") / "h100.yaml"),
                       "--threads", "256", "--regs", "32", "--smem", "48 KiB", "--json", "--no-sweeps")
    assert code == 0 and '"blocks_per_sm": 4' in out and "impact" not in out
