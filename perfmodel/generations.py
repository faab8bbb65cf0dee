"""What every GPU of one compute capability shares, as data: the per-generation rules that a profile needs and that
device attributes (``cudaGetDeviceProperties``) cannot give, and the norms ``devices validate`` compares a profile
with.

One table keyed by compute capability, never ``if cc == ...`` in code. ``perfmodel devices probe`` fills the
fields the driver does not report from it (FP32/FP64/SFU lanes, schedulers, the occupancy allocation rules, the
carveouts, the L1 + shared memory total); :func:`perfmodel.plausibility.check_device` warns where a profile differs
from it. Each value names its source (keys of :data:`SOURCES`; ``docs/devices.md`` gives titles and sections).
"""
from __future__ import annotations

from typing import Any

KB = 1024

# Primary public sources of the table. docs/devices.md lists them with sections and addresses.
SOURCES: dict[str, str] = {
    "PG12.8": ("NVIDIA CUDA C++ Programming Guide (CUDA 12.8 and later), 'Compute Capabilities': table 'Technical "
           "Specifications per Compute Capability' and the sections 'Compute Capability 7.x / 8.x / 9.0 / 10.0 / "
           "12.0' (https://docs.nvidia.com/cuda/cuda-c-programming-guide/#compute-capabilities)"),
    "PG-ARITH": ("NVIDIA CUDA C++ Programming Guide 12.8, 'Arithmetic Instructions', table 'Throughput of Native "
                      "Arithmetic Instructions (Operations per Clock Cycle per Multiprocessor)' "
                      "(https://docs.nvidia.com/cuda/cuda-c-programming-guide/#arithmetic-instructions)"),
    "OCC13": "include/cuda_occupancy.h of the CUDA 13.0 toolkit (__CUDA_OCC_MAJOR__ 12), the occupancy calculator",
    "SM-DIAGRAM": ("the SM block diagram of the generation's NVIDIA architecture whitepaper (Volta, Turing, "
                   "Ampere GA100/GA102, Ada, Hopper, Blackwell): LD/ST units drawn per SM sub-partition"),
}

# Fields every generation from Volta on shares (CUDA 13 cuda_occupancy.h and the Programming Guide).
_COMMON: dict[str, tuple[Any, str]] = {
    "warp_size": (32, "PG12.8"),
    "max_threads_per_block": (1024, "PG12.8"),
    "max_block_dim": ([1024, 1024, 64], "PG12.8"),
    "max_grid_dim": ([2147483647, 65535, 65535], "PG12.8"),
    "registers_per_sm": (65536, "PG12.8"),
    "max_registers_per_block": (65536, "PG12.8"),
    "max_registers_per_thread": (255, "PG12.8"),
    "register_allocation": ("warp", "OCC13"),
    "register_allocation_unit": (256, "OCC13"),
    "register_allocation_unit_overrides": ({}, "OCC13"),
    "warp_allocation_granularity": (1, "OCC13"),
    "register_sub_partitions": (4, "OCC13"),
    "warp_schedulers_per_sm": (4, "PG12.8"),
    "sfu_per_sm": (16, "PG-ARITH"),
    "shared_memory_carveout_fallback": ("smallest", "OCC13"),
    "shared_memory_per_block": (48 * KB, "PG12.8"),
    "shared_memory_system_bytes": (0, "PG12.8"),
    "kernel_params_in_shared_memory": (False, "PG12.8"),
    "shared_memory_banks": (32, "PG12.8"),
    "shared_memory_bank_width_bytes": (4, "PG12.8"),
    "constant_memory_bytes": (64 * KB, "PG12.8"),
    "constant_cache_bytes": (8 * KB, "PG12.8"),
    "occupancy_rules": ("OCC13", "OCC13"),
}

_CARVEOUTS_100 = [0, 8 * KB, 16 * KB, 32 * KB, 64 * KB, 100 * KB]
_CARVEOUTS_164 = _CARVEOUTS_100 + [132 * KB, 164 * KB]
_CARVEOUTS_228 = _CARVEOUTS_164 + [196 * KB, 228 * KB]


def _generation(architecture: str, **fields: tuple[Any, str]) -> dict[str, tuple[Any, str]]:
    table = dict(_COMMON)
    table["architecture_family"] = (architecture, "PG12.8")
    table.update(fields)
    return table


# compute capability -> field -> (value, source key). ``l1_shared_bytes`` is the combined L1 + shared memory SRAM
# per SM (the profile's l1_cache_bytes is that minus the largest carveout); ``architecture_family`` names the
# generation (a profile's ``architecture`` adds the chip).
GENERATIONS: dict[str, dict[str, tuple[Any, str]]] = {
    "7.0": _generation(
        "Volta",
        fp32_lanes_per_sm=(64, "PG-ARITH"), fp64_lanes_per_sm=(32, "PG-ARITH"),
        lsu_per_sm=(32, "SM-DIAGRAM"),
        max_threads_per_sm=(2048, "PG12.8"), max_blocks_per_sm=(32, "PG12.8, OCC13"),
        shared_memory_per_sm=(96 * KB, "PG12.8"), shared_memory_per_block_optin=(96 * KB, "PG12.8"),
        reserved_shared_memory_per_block=(0, "PG12.8"),
        shared_memory_carveouts=([0, 8 * KB, 16 * KB, 32 * KB, 64 * KB, 96 * KB], "PG12.8, OCC13"),
        shared_memory_allocation_unit=(256, "OCC13"), l1_shared_bytes=(128 * KB, "PG12.8")),
    "7.5": _generation(
        "Turing",
        fp32_lanes_per_sm=(64, "PG-ARITH"), fp64_lanes_per_sm=(2, "PG-ARITH"),
        lsu_per_sm=(16, "SM-DIAGRAM"),
        max_threads_per_sm=(1024, "PG12.8"), max_blocks_per_sm=(16, "PG12.8, OCC13"),
        shared_memory_per_sm=(64 * KB, "PG12.8"), shared_memory_per_block_optin=(64 * KB, "PG12.8"),
        reserved_shared_memory_per_block=(0, "PG12.8"),
        shared_memory_carveouts=([32 * KB, 64 * KB], "PG12.8, OCC13"),
        shared_memory_allocation_unit=(256, "OCC13"), l1_shared_bytes=(96 * KB, "PG12.8")),
    "8.0": _generation(
        "Ampere",
        fp32_lanes_per_sm=(64, "PG-ARITH"), fp64_lanes_per_sm=(32, "PG-ARITH"),
        lsu_per_sm=(32, "SM-DIAGRAM"),
        max_threads_per_sm=(2048, "PG12.8"), max_blocks_per_sm=(32, "PG12.8, OCC13"),
        shared_memory_per_sm=(164 * KB, "PG12.8"), shared_memory_per_block_optin=(163 * KB, "PG12.8"),
        reserved_shared_memory_per_block=(1 * KB, "PG12.8"),
        shared_memory_carveouts=(_CARVEOUTS_164, "PG12.8, OCC13"),
        shared_memory_allocation_unit=(128, "OCC13"), l1_shared_bytes=(192 * KB, "PG12.8")),
    "8.6": _generation(
        "Ampere",
        fp32_lanes_per_sm=(128, "PG-ARITH"), fp64_lanes_per_sm=(2, "PG-ARITH"),
        lsu_per_sm=(16, "SM-DIAGRAM"),
        max_threads_per_sm=(1536, "PG12.8"), max_blocks_per_sm=(16, "PG12.8, OCC13"),
        shared_memory_per_sm=(100 * KB, "PG12.8"), shared_memory_per_block_optin=(99 * KB, "PG12.8"),
        reserved_shared_memory_per_block=(1 * KB, "PG12.8"),
        shared_memory_carveouts=(_CARVEOUTS_100, "PG12.8, OCC13"),
        shared_memory_allocation_unit=(128, "OCC13"), l1_shared_bytes=(128 * KB, "PG12.8")),
    "8.9": _generation(
        "Ada Lovelace",
        fp32_lanes_per_sm=(128, "PG-ARITH"), fp64_lanes_per_sm=(2, "PG-ARITH"),
        lsu_per_sm=(16, "SM-DIAGRAM"),
        max_threads_per_sm=(1536, "PG12.8"), max_blocks_per_sm=(24, "PG12.8, OCC13"),
        shared_memory_per_sm=(100 * KB, "PG12.8"), shared_memory_per_block_optin=(99 * KB, "PG12.8"),
        reserved_shared_memory_per_block=(1 * KB, "PG12.8"),
        shared_memory_carveouts=(_CARVEOUTS_100, "PG12.8, OCC13"),
        shared_memory_allocation_unit=(128, "OCC13"), l1_shared_bytes=(128 * KB, "PG12.8")),
    "9.0": _generation(
        "Hopper",
        fp32_lanes_per_sm=(128, "PG-ARITH"), fp64_lanes_per_sm=(64, "PG-ARITH"),
        lsu_per_sm=(32, "SM-DIAGRAM"),
        max_threads_per_sm=(2048, "PG12.8"), max_blocks_per_sm=(32, "PG12.8, OCC13"),
        shared_memory_per_sm=(228 * KB, "PG12.8"), shared_memory_per_block_optin=(227 * KB, "PG12.8"),
        reserved_shared_memory_per_block=(1 * KB, "PG12.8"),
        shared_memory_carveouts=(_CARVEOUTS_228, "PG12.8, OCC13"),
        shared_memory_allocation_unit=(128, "OCC13"), l1_shared_bytes=(256 * KB, "PG12.8")),
    "10.0": _generation(
        "Blackwell",
        fp32_lanes_per_sm=(128, "PG-ARITH"), fp64_lanes_per_sm=(64, "PG-ARITH"),
        lsu_per_sm=(32, "SM-DIAGRAM"),
        max_threads_per_sm=(2048, "PG12.8"), max_blocks_per_sm=(32, "PG12.8, OCC13"),
        shared_memory_per_sm=(228 * KB, "PG12.8"), shared_memory_per_block_optin=(227 * KB, "PG12.8"),
        reserved_shared_memory_per_block=(1 * KB, "PG12.8"),
        shared_memory_carveouts=(_CARVEOUTS_228, "PG12.8, OCC13"),
        shared_memory_allocation_unit=(128, "OCC13"), l1_shared_bytes=(256 * KB, "PG12.8")),
    "12.0": _generation(
        "Blackwell",
        fp32_lanes_per_sm=(128, "PG-ARITH"), fp64_lanes_per_sm=(2, "PG-ARITH"),
        lsu_per_sm=(16, "SM-DIAGRAM"),
        max_threads_per_sm=(1536, "PG12.8"), max_blocks_per_sm=(24, "OCC13"),
        shared_memory_per_sm=(100 * KB, "PG12.8"), shared_memory_per_block_optin=(99 * KB, "PG12.8"),
        reserved_shared_memory_per_block=(1 * KB, "PG12.8"),
        shared_memory_carveouts=(_CARVEOUTS_100, "PG12.8, OCC13"),
        shared_memory_allocation_unit=(128, "OCC13"), l1_shared_bytes=(128 * KB, "PG12.8")),
}

# Fields a profile keeps as they are but that validate compares with the generation's norm (a difference is a
# warning: a cut-down part or a typo). The rest of the table is rules a profile should not differ from.
NORM_FIELDS = (
    "fp32_lanes_per_sm", "fp64_lanes_per_sm", "warp_schedulers_per_sm", "max_threads_per_sm", "max_blocks_per_sm",
    "registers_per_sm", "max_registers_per_block", "max_threads_per_block", "shared_memory_per_sm",
    "shared_memory_per_block", "shared_memory_per_block_optin", "reserved_shared_memory_per_block",
    "shared_memory_carveouts", "shared_memory_allocation_unit", "register_allocation_unit",
    "register_sub_partitions", "shared_memory_banks", "warp_size",
)


def generation(compute_capability: str) -> dict[str, tuple[Any, str]] | None:
    """The table row of ``compute_capability`` ("8.6"), or None where perfmodel has none."""
    return GENERATIONS.get(compute_capability)


def value(compute_capability: str, field: str) -> Any:
    row = GENERATIONS.get(compute_capability)
    if row is None or field not in row:
        return None
    return row[field][0]
