"""``perfmodel occupancy --best-block`` against NVIDIA's own ``cudaOccMaxPotentialOccupancyBlockSize``
(``cuda_occupancy.h``, compiled into tests/oracle/blocksize_oracle.cpp), with shared memory as a function of the
block size (``blockSizeToDynamicSMemSize``) and a kernel-side block limit (``__launch_bounds__``)."""
from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import pytest

from perfmodel.blocksize import best_block_size
from tests.test_occupancy_oracle import CUDA_INCLUDE, HEADER, _compiler, _device_line, _modern_devices

HARNESS = Path(__file__).parent / "oracle" / "blocksize_oracle.cpp"
REGISTERS = [8, 16, 24, 32, 40, 48, 64, 72, 96, 128, 168, 255]
SMEM_BASE = [0, 1000, 4096, 20000]
SMEM_PER_THREAD = [0, 4, 8, 16, 36, 64, 100]
LIMITS = [0, 96, 256, 500, 1024]


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    if not HEADER.is_file():
        pytest.skip(f"{HEADER} not found (no CUDA toolkit or nvidia-cuda-runtime wheel)")
    compiler = _compiler()
    if compiler is None:
        pytest.skip("no C++ compiler (g++, c++ or clang++)")
    binary = tmp_path_factory.mktemp("blocksize") / "blocksize_oracle"
    subprocess.run([compiler, "-O1", "-std=c++11", f"-I{CUDA_INCLUDE}", "-o", str(binary), str(HARNESS)],
                   check=True, capture_output=True, text=True)

    def run(lines: list[str]) -> list[list[int]]:
        done = subprocess.run([str(binary)], input="\n".join(lines) + "\n", check=True, capture_output=True,
                              text=True)
        return [[int(x) for x in line.split()] for line in done.stdout.splitlines()]

    return run


@pytest.mark.parametrize("device", _modern_devices(), ids=lambda d: d.id)
def test_best_block_agrees_with_cuda_occupancy_h(device, oracle):
    cases = list(itertools.product(REGISTERS, SMEM_BASE, SMEM_PER_THREAD, LIMITS))
    lines = [f"{_device_line(device, -1)} {r} {b} {p} {lim or device.max_threads_per_block}"
             for r, b, p, lim in cases]
    mismatches = []
    agreed = 0
    for (r, b, p, lim), (status, min_grid, block) in zip(cases, oracle(lines)):
        assert status == 0
        try:
            ours = best_block_size(device, lambda t: r, lambda t: b + p * t, block_size_limit=lim)
            got = (ours.min_grid_size, ours.block_size)
        except Exception as err:  # noqa: BLE001 - NVIDIA's 0/0 is "nothing launches": ours must refuse
            got = (0, 0) if type(err).__name__ == "OccupancyError" else ("error", str(err))
        if got != (min_grid, block):
            mismatches.append(f"regs={r} smem={b}+{p}*threads limit={lim}: NVIDIA (minGrid {min_grid}, block "
                              f"{block}), ours {got}")
        else:
            agreed += 1
    assert not mismatches, f"{device.id}: {len(mismatches)} of {len(cases)} differ, e.g.\n" + "\n".join(mismatches[:8])
    assert agreed == len(cases) > 1000


def test_best_block_cli(cli):
    code, out, err = cli("occupancy", "--device", "h100", "--best-block", "--regs", "32", "--smem", "8*threads",
                         "--json")
    assert code == 0, err
    doc = json.loads(out)
    # H100: 2,048 threads and 64K registers per SM; 32 regs x 1,024 threads = 32K: two 1,024-thread blocks fit
    assert doc["block_size"] == 1024 and doc["blocks_per_sm"] == 2 and doc["min_grid_size"] == 2 * 132
    code, out, err = cli("occupancy", "--device", "g80", "--best-block", "--kernel", "matmul_tiled", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["kernel"]["name"] == "matmul_tiled" and doc["block_size"] % 32 == 0
    for args in (["--regs", "32", "--smem", "8*nope"], ["--regs", "32", "--threads", "256"], []):
        code, out, err = cli("occupancy", "--device", "h100", "--best-block", *args, "--json")
        assert code == 2 and "error" in json.loads(out), args
