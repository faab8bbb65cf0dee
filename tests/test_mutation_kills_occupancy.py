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


def test_waves_of_a_grid_one_and_a_half_waves_on_h100(cli):
    # H100: 2,048 threads per SM -> 8 blocks of 256 threads (few registers, no shared memory) x 132 SMs = 1,056
    # blocks a wave; 1,584 blocks = 1.5 waves, run as 2, so half of the second wave's SM slots are idle: 75%
    code, out, err = cli("occupancy", "--device", "h100", "--threads", "256", "--regs", "16", "--grid-blocks",
                         "1584", "--json")
    assert code == 0, err
    waves = json.loads(out)["waves"]
    assert waves["blocks_per_wave"] == 1056
    assert waves["waves"] == pytest.approx(1.5)
    assert waves["wave_count"] == 2 and waves["full_waves"] == 1 and waves["tail_blocks"] == 528
    assert waves["tail_fraction"] == pytest.approx(0.5)
    assert waves["efficiency"] == pytest.approx(0.75)


def test_too_many_registers_per_block_says_what_to_change(cli):
    # 1,024 x 255 = 261,120 registers, rounded up per warp to 256-register units: 262,144 > 65,536 per block
    code, out, err = cli("occupancy", "--device", "h100", "--threads", "1024", "--regs", "255", "--json")
    assert code == 2
    message = json.loads(out)["error"]["message"]
    assert "65536 registers per block" in message
    assert "fewer threads per block or fewer registers per thread" in message


def test_shared_memory_over_48_kib_needs_the_opt_in(cli):
    code, out, err = cli("occupancy", "--device", "h100", "--threads", "256", "--regs", "32", "--smem", "65536",
                         "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["requires_shared_memory_optin"] is True
    assert any("opt in" in note and "cudaFuncAttributeMaxDynamicSharedMemorySize" in note for note in doc["notes"])


def test_a_kernel_with_no_registers_is_not_register_limited(cli):
    # 256 threads on H100: 2,048 threads per SM -> 8 blocks, limited by warps; zero registers limit nothing
    code, out, err = cli("occupancy", "--device", "h100", "--threads", "256", "--regs", "0", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["blocks_per_sm"] == 8
    assert doc["limiters"] == ["warps"]
    assert doc["limits"]["registers"] >= 32          # at least the 32-block limit


def test_block_limits_are_whole_numbers():
    """NVIDIA's calculator gives whole blocks per SM for every limit (floor divisions): H100, 256 threads x 32
    registers: 65,536 / 4 partitions = 16,384 registers each, 32 x 32 = 1,024 per warp -> 16 warps per partition,
    64 warps per SM / 8 warps per block = 8 blocks, an int, like every other limit."""
    from perfmodel.occupancy import occupancy

    occ = occupancy("h100", 256, 32, 0)
    assert occ.limits["registers"] == 8
    assert all(type(v) is int for v in occ.limits.values()), occ.limits
    assert type(occ.blocks_per_sm) is int


def test_register_sweep_covers_one_to_the_device_maximum_and_zeroes_what_cannot_run():
    # Hopper: at most 255 registers per thread and 65,536 per block (CUDA C++ Programming Guide, "Technical
    # Specifications per Compute Capability"). 1,024 threads: up to 64 registers fit (65,536 / 1,024); from 65 on
    # (allocated in units of 8 per thread: 72 x 1,024 = 73,728) the block cannot launch - no blocks, no warps
    from perfmodel.occupancy import sweep_registers

    pts = sweep_registers("h100", 1024, 0)
    assert [p.x for p in pts] == list(range(1, 256))
    fits = {p.x: p for p in pts}
    assert (fits[64].blocks_per_sm, fits[64].warps_per_sm, fits[64].error) == (1, 32, None)
    assert "73728" in fits[65].error
    for r in (65, 128, 255):
        assert (fits[r].blocks_per_sm, fits[r].warps_per_sm, fits[r].occupancy) == (0, 0, 0.0)


def test_shared_memory_messages_name_the_figures_a_user_acts_on():
    # NVIDIA's figures for CC 9.0 (CUDA C++ Programming Guide, compute capability 9.0: shared memory carveouts of
    # 0, 8, 16, 32, 64, 100, 132, 164, 196 and 228 KB; 48 KB per block unless the kernel opts in with
    # cudaFuncAttributeMaxDynamicSharedMemorySize)
    from perfmodel.devices import load_device
    from perfmodel.errors import OccupancyError
    from perfmodel.occupancy import occupancy

    h100 = load_device("h100")
    with pytest.raises(OccupancyError) as err:
        occupancy(h100, 256, 32, 1000, carveout="300 KB")
    assert "carveouts: 0 B, 8 KiB, 16 KiB, 32 KiB, 64 KiB, 100 KiB, 132 KiB, 164 KiB, 196 KiB, 228 KiB" in str(err.value)
    big = occupancy(h100, 256, 32, 60000)
    assert "more than the default 48 KiB per block: the kernel must opt in " \
           "(cudaFuncAttributeMaxDynamicSharedMemorySize)" in big.notes
    # 40,000 bytes do not fit an 8 KB carveout: the driver takes the smallest that holds a block, 64 KB
    small = occupancy(h100, 256, 32, 40000, carveout="8 KB")
    assert "carveout 8 KiB is too small for one block; the driver uses 64 KiB" in small.notes
    assert small.blocks_per_sm == 1
    assert not any("too small" in n for n in occupancy(h100, 256, 32, 40000).notes)
