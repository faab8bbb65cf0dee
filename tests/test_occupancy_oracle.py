"""Agreement with NVIDIA's own occupancy calculator, ``cuda_occupancy.h`` of the installed CUDA toolkit.

One C++ harness (tests/oracle/occupancy_oracle.cpp) is compiled once and fed every case on stdin; each shipped
profile of compute capability 3.0 or higher fills a ``cudaOccDeviceProp``. For every (threads, registers,
shared memory[, carveout]) case the number of blocks per SM must agree exactly, and so must each resource's
own limit and the allocated registers and shared memory per block. Where NVIDIA's calculator returns 0 blocks
(an impossible launch), perfmodel must raise ``OccupancyError`` instead. Skipped where the header or a C++
compiler is missing. The header comes from ``$CUDA_HOME/include`` (default /usr/local/cuda) or, with no toolkit
installed, from NVIDIA's ``nvidia-cuda-runtime`` wheel (``pip install nvidia-cuda-runtime``: site-packages
``nvidia/cu13/include`` or ``nvidia/cuda_runtime/include``), so CI needs no system CUDA.
"""
from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from perfmodel.devices import Device, list_devices
from perfmodel.errors import OccupancyError
from perfmodel.occupancy import occupancy

HARNESS = Path(__file__).parent / "oracle" / "occupancy_oracle.cpp"


def _cuda_include() -> Path:
    """The first folder holding cuda_occupancy.h: the toolkit's, else the nvidia-cuda-runtime wheel's."""
    candidates = [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"]
    try:
        import nvidia  # namespace package of NVIDIA's CUDA wheels

        for root in getattr(nvidia, "__path__", []):
            candidates += [Path(root) / "cu13" / "include", Path(root) / "cuda_runtime" / "include"]
    except ImportError:
        pass
    for folder in candidates:
        if (folder / "cuda_occupancy.h").is_file():
            return folder
    return candidates[0]


CUDA_INCLUDE = _cuda_include()
HEADER = CUDA_INCLUDE / "cuda_occupancy.h"

THREADS = sorted(set(range(32, 1025, 32)) | {1, 17, 31, 33, 63, 65, 100, 129, 200, 255, 257, 300, 500, 513,
                                              700, 999, 1023})
REGISTERS = [0, 1, 8, 16, 21, 24, 32, 33, 40, 48, 63, 64, 65, 72, 96, 128, 129, 168, 232, 255]
SHARED_KIB = [0, 1, 2, 4, 8, 16, 32, 47, 48, 49, 64, 96, 100, 128, 132, 163, 164, 196, 227, 228]
SHARED = sorted({k * 1024 for k in SHARED_KIB} | {1, 1000, 1025, 12345, 49153, 50000})
CARVEOUT_PERCENT = [0, 10, 25, 50, 75, 100]


def _compiler() -> str | None:
    for name in ("g++", "c++", "clang++"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    if not HEADER.is_file():
        pytest.skip(f"{HEADER} not found (no CUDA toolkit)")
    compiler = _compiler()
    if compiler is None:
        pytest.skip("no C++ compiler (g++, c++ or clang++)")
    binary = tmp_path_factory.mktemp("oracle") / "occupancy_oracle"
    subprocess.run([compiler, "-O1", "-std=c++11", f"-I{CUDA_INCLUDE}", "-o", str(binary), str(HARNESS)],
                   check=True, capture_output=True, text=True)

    def run(lines: list[str]) -> list[list[int]]:
        done = subprocess.run([str(binary)], input="\n".join(lines) + "\n", check=True, capture_output=True,
                              text=True)
        rows = [[int(x) for x in line.split()] for line in done.stdout.splitlines()]
        assert len(rows) == len(lines)
        return rows

    return run


def _device_line(d: Device, carveout_percent: int) -> str:
    major, minor = d.cc
    return " ".join(str(v) for v in (
        major, minor, d.max_threads_per_block, d.max_threads_per_sm, d.max_registers_per_block, d.registers_per_sm,
        d.warp_size, d.shared_memory_per_block, d.shared_memory_per_sm, d.sm_count, d.shared_memory_per_block_optin,
        d.reserved_shared_memory_per_block, carveout_percent))


def _modern_devices() -> list[Device]:
    return [d for d in list_devices() if d.cc >= (3, 0)]


def _compare(device: Device, cases: list[tuple[int, int, int, int]], oracle) -> int:
    lines = [f"{_device_line(device, c)} {t} {r} {s}" for t, r, s, c in cases]
    mismatches = []
    for (t, r, s, c), row in zip(cases, oracle(lines)):
        status, blocks, lim_warps, lim_regs, lim_smem, lim_blocks, regs_alloc, smem_alloc = row
        assert status == 0, f"{device.id}: cuda_occupancy.h error {status} for T={t} R={r} S={s}"
        carveout = None if c < 0 else f"{c}%"
        try:
            ours = occupancy(device, t, r, s, carveout=carveout)
        except OccupancyError as err:
            if blocks != 0:
                mismatches.append(f"T={t} R={r} S={s} carveout={carveout}: NVIDIA {blocks} blocks, ours raised {err}")
            continue
        if blocks == 0:
            mismatches.append(f"T={t} R={r} S={s} carveout={carveout}: NVIDIA 0 blocks (impossible), ours "
                              f"{ours.blocks_per_sm}")
            continue
        expected = {"blocks_per_sm": blocks, "warps": lim_warps, "blocks": lim_blocks,
                    "registers_per_block": regs_alloc, "shared_memory_per_block_allocated": smem_alloc}
        got = {"blocks_per_sm": ours.blocks_per_sm, "warps": ours.limits["warps"], "blocks": ours.limits["blocks"],
               "registers_per_block": ours.registers_per_block,
               "shared_memory_per_block_allocated": ours.shared_memory_per_block_allocated}
        if r > 0:  # NVIDIA reports INT_MAX for a resource that is not used; perfmodel the blocks cap
            expected["registers"], got["registers"] = lim_regs, ours.limits["registers"]
        if smem_alloc > 0:
            expected["shared_memory"], got["shared_memory"] = lim_smem, ours.limits["shared_memory"]
        if expected != got:
            mismatches.append(f"T={t} R={r} S={s} carveout={carveout}: NVIDIA {expected}, ours {got}")
    assert not mismatches, f"{device.id}: {len(mismatches)} of {len(cases)} cases differ, e.g.\n" + "\n".join(
        mismatches[:10])
    return len(cases)


@pytest.mark.parametrize("device", _modern_devices(), ids=lambda d: d.id)
def test_blocks_per_sm_agree_with_cuda_occupancy_h(device, oracle):
    cases = [(t, r, s, -1) for t, r, s in itertools.product(THREADS, REGISTERS, SHARED)]
    assert _compare(device, cases, oracle) > 20000


@pytest.mark.parametrize("device", [d for d in _modern_devices() if d.cc >= (7, 0)], ids=lambda d: d.id)
def test_carveout_preference_agrees_with_cuda_occupancy_h(device, oracle):
    threads = [64, 128, 256, 512, 1024]
    registers = [16, 32, 64]
    cases = [(t, r, s, c) for t, r, s, c in itertools.product(threads, registers, SHARED, CARVEOUT_PERCENT)]
    assert _compare(device, cases, oracle) > 1000
