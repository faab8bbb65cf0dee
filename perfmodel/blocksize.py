"""The block size with the highest occupancy: ``cudaOccMaxPotentialOccupancyBlockSize`` of NVIDIA's
``cuda_occupancy.h``, with registers per thread and shared memory per block as functions of the block size
(``blockSizeToDynamicSMemSize``).

The search is the header's: every multiple of the warp size from the largest block the device allows down to
one warp (the largest size itself first when it is not a multiple), keeping the first size with the most resident
threads per SM (blocks per SM x block size) and stopping early at the SM's thread limit. A size that cannot launch
(too many registers or too much shared memory) counts as 0 blocks. The suggested minimum grid is that many
blocks on every SM.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from perfmodel.errors import OccupancyError


@dataclass
class Trial:
    threads: int
    registers_per_thread: int
    shared_memory_per_block: int
    blocks_per_sm: int
    occupancy: float
    limiters: list[str]
    error: str | None = None

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class BestBlock:
    device: str
    block_size: int
    blocks_per_sm: int
    threads_per_sm: int
    occupancy: float
    min_grid_size: int
    trials: list[Trial] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"device": self.device, "block_size": self.block_size, "blocks_per_sm": self.blocks_per_sm,
                "threads_per_sm": self.threads_per_sm, "occupancy": self.occupancy,
                "min_grid_size": self.min_grid_size, "trials": [t.to_json() for t in self.trials]}


def best_block_size(device, registers_of: Callable[[int], int], shared_memory_of: Callable[[int], int], *,
                    block_size_limit: int = 0, carveout=None) -> BestBlock:
    """``registers_of(threads)`` and ``shared_memory_of(threads)`` (bytes per block, static + dynamic) give the
    kernel's resources at each block size; ``block_size_limit`` caps the block (0: the device's limit)."""
    from perfmodel.devices import Device, load_device
    from perfmodel.occupancy import occupancy

    dev = device if isinstance(device, Device) else load_device(device)
    limit = int(dev.max_threads_per_block)
    if block_size_limit:
        if block_size_limit < 1:
            raise OccupancyError(f"--block-size-limit {block_size_limit}: expected a positive number of threads")
        limit = min(limit, int(block_size_limit))
    granularity = int(dev.warp_size)
    occupancy_limit = int(dev.max_threads_per_sm)
    aligned = -(-limit // granularity) * granularity
    best = (0, 0, 0)   # (block size, blocks per SM, threads per SM)
    trials: list[Trial] = []
    for size_aligned in range(aligned, 0, -granularity):
        threads = min(limit, size_aligned)
        regs = int(registers_of(threads))
        smem = int(shared_memory_of(threads))
        try:
            occ = occupancy(dev, threads, regs, smem, carveout=carveout)
            blocks, fraction, limiters, error = occ.blocks_per_sm, occ.occupancy, list(occ.limiters), None
        except OccupancyError as err:
            blocks, fraction, limiters, error = 0, 0.0, [], str(err)
        trials.append(Trial(threads, regs, smem, blocks, fraction, limiters, error))
        if threads * blocks > best[2]:
            best = (threads, blocks, threads * blocks)
        if best[2] == occupancy_limit:
            break
    if best[0] == 0:
        raise OccupancyError(f"no block size from 1 to {limit} threads can launch on {dev.name}: "
                             + (trials[-1].error or "no resources") if trials else "no block size to try")
    chosen = next(t for t in trials if t.threads == best[0])
    return BestBlock(device=dev.id, block_size=best[0], blocks_per_sm=best[1], threads_per_sm=best[2],
                     occupancy=chosen.occupancy, min_grid_size=best[1] * int(dev.sm_count),
                     trials=trials)
