"""Every shipped kernel spec runs at a small size on every shipped device profile, and its outputs match the
numpy reference.

The device does not change the simulation (counts are a property of the kernel and its launch), so each spec is
simulated once per size; what is per device is the device loading and the occupancy check of the launch - the
path `perfmodel analyze` takes before it models anything.
"""
from __future__ import annotations

from functools import cache

import pytest

from perfmodel.devices import list_devices, load_device
from perfmodel.occupancy import kernel_shared_memory_bytes, occupancy
from perfmodel.registers import resolve_registers
from perfmodel.spec import list_specs, load_spec, run

# Small cases: sizes that exercise the bounds checks (sizes that are not a multiple of the block) but run fast.
SMALL: dict[str, list[dict]] = {
    "matmul_rowwise": [{}, {"ha": 5, "wa": 7, "wb": 4}],
    "matmul_colwise": [{}, {"ha": 5, "wa": 7, "wb": 4}],
    "matmul_elementwise": [{}, {"ha": 5, "wa": 7, "wb": 4}],
    "matmul_naive": [{"Width": 40, "BLOCK_WIDTH": 16}],
    "matmul_tiled": [{"Width": 32, "TILE_WIDTH": 16}, {"Width": 24, "TILE_WIDTH": 8}],
    "vec_add": [{"N": 1000, "BLOCK_SIZE": 128}],
    "picture_scale": [{}],
    "conv1d_basic": [{"Width": 200, "BLOCK_SIZE": 32}],
    "conv1d_constant": [{"Width": 200, "BLOCK_SIZE": 32}],
    "conv1d_tiled": [{"Width": 200, "BLOCK_SIZE": 32}, {"Width": 64, "BLOCK_SIZE": 32, "Mask_Width": 9}],
    "conv1d_tiled_alt": [{"Width": 200, "BLOCK_SIZE": 32}, {"Width": 64, "BLOCK_SIZE": 32, "MASK_WIDTH": 3}],
    "conv1d_tiled_cache": [{"Width": 200, "BLOCK_SIZE": 32}],
    "conv2d_tiled": [{"Width": 30, "TILE_WIDTH": 12}],
    "spmv_csr": [{}, {"matrix": 1, "num_rows": 100, "num_cols": 80, "seed": 3},
                 {"matrix": 2, "num_rows": 70, "half_bandwidth": 3}],
}

DEVICES = [device.id for device in list_devices()]
SPECS = [spec.name for spec in list_specs()]
CASES = [(name, i) for name in SPECS for i in range(len(SMALL.get(name, [{}])))]


@cache
def _run(name: str, case: int):
    return run(name, SMALL.get(name, [{}])[case])


def test_every_shipped_spec_has_a_small_case():
    assert set(SPECS) <= set(SMALL), "add a small case for every shipped spec"


@pytest.mark.parametrize(("name", "case"), CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_outputs_match_reference(name, case, ptx_only):
    """What the kernels compute (the SASS, which only weighs and groups the counts, is not needed)."""
    outcome = _run(name, case)
    assert outcome.check is not None
    assert outcome.check.correct, outcome.check.message
    assert all(output.ok for output in outcome.check.outputs)


@pytest.mark.parametrize("device_id", DEVICES)
@pytest.mark.parametrize("name", SPECS)
def test_runs_on_every_device(name, device_id):
    device = load_device(device_id)
    outcome = _run(name, 0)
    launch, program = outcome.launch, outcome.program
    assert outcome.check.correct, outcome.check.message
    # the launch geometry fits the device ...
    assert launch.threads_per_block <= device.max_threads_per_block
    for size, limit in zip(launch.block, device.max_block_dim):
        assert size <= limit
    for size, limit in zip(launch.grid, device.max_grid_dim):
        assert size <= limit
    # ... and the occupancy calculator accepts it (it raises OccupancyError on an impossible launch)
    # registers as `perfmodel analyze` takes them without --regs: the spec's measured value, else the estimate
    registers = resolve_registers(device, regs=None, spec_registers=launch.registers).per_thread
    shared = kernel_shared_memory_bytes(device, program.static_shared_bytes, launch.dynamic_shared_bytes,
                                        program.param_bytes)
    occ = occupancy(device, launch.threads_per_block, registers, shared, grid_blocks=launch.total_blocks)
    assert occ.blocks_per_sm >= 1
    assert 0 < occ.occupancy <= 1


def test_default_launches_fit_g80():
    """The defaults are small enough for the oldest shipped device (512 threads per block, 16 KB shared)."""
    g80 = load_device("g80")
    for spec in list_specs():
        launch = spec.instantiate()
        assert launch.threads_per_block <= g80.max_threads_per_block, spec.name


def test_default_cases_run_and_match():
    """The shipped defaults themselves (not just the small cases) are correct."""
    for name in ("matmul_elementwise", "picture_scale", "spmv_csr", "conv1d_tiled", "conv2d_tiled"):
        outcome = run(name)
        assert outcome.check.correct, (name, outcome.check.message)


def test_seed_matmul_example_output():
    for name in ("matmul_rowwise", "matmul_colwise", "matmul_elementwise"):
        outcome = _run(name, 0)
        c = outcome.args[[a.name for a in outcome.launch.args].index("c")]
        assert c.reshape(2, 3).tolist() == [[23, 28, 34], [87, 84, 76]], name


def test_seed_spmv_example_output():
    outcome = _run("spmv_csr", 0)
    y = outcome.args[[a.name for a in outcome.launch.args].index("y")]
    assert y.tolist() == [6.0, 0.0, 20.0, 5.0]  # x = {1, 2, 3, 4}; row 1 is empty


def test_tile_width_really_rebuilds():
    """-D TILE_WIDTH=8 reaches the frontend as a #define override: the shared tiles shrink."""
    small = run("matmul_tiled", {"Width": 32, "TILE_WIDTH": 8})
    large = _run("matmul_tiled", 0)
    assert small.check.correct
    assert small.program.static_shared_bytes == 2 * 8 * 8 * 4
    assert large.program.static_shared_bytes == 2 * 16 * 16 * 4


def test_load_by_path(tmp_path):
    spec = load_spec(load_spec("vec_add").path)
    assert spec.name == "vec_add"


def test_sources_compile_with_nvcc(tmp_path):
    """Every shipped .cu is real CUDA: nvcc compiles them all (one translation unit, each file in a namespace of
    its own, its #defines undone after it), for sm_90."""
    import shutil
    import subprocess

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    unit = []
    for spec in list_specs():
        unit.append(f"namespace spec_{spec.name} {{\n#include \"{spec.source_path}\"\n}}")
        unit.extend(f"#undef {name}" for name in spec.source_defines)
    path = tmp_path / "all_kernels.cu"
    path.write_text("\n".join(unit) + "\n")
    process = subprocess.run([nvcc, "--cubin", "-arch=sm_90", "-o", str(tmp_path / "all.cubin"), str(path)],
                             capture_output=True, text=True, timeout=300)
    assert process.returncode == 0, process.stderr


def test_spec_defaults_match_the_source_defines():
    """A param that overrides a #define defaults to the source's own value, so the default case is the source
    as written."""
    import re

    for spec in list_specs():
        for name, value in spec.instantiate().defines.items():
            match = re.search(rf"^\s*#\s*define\s+{name}\s+(\S+)\s*$", spec.source_text, re.MULTILINE)
            assert match, (spec.name, name)
            assert int(match.group(1)) == value, (spec.name, name, match.group(1), value)


def test_run_unpacks_as_the_contract_says():
    launch, program, result, check = _run("vec_add", 0)
    assert check.correct and result.counts.to_json()["global"]["stores"] == launch.params["N"]
    assert program.name == "VecAdd"
