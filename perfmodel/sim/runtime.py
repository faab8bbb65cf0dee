"""Execution state of one batch of blocks, memory spaces, and the counting of every executed site.

Lane values are numpy arrays that broadcast to the batch's lane shape ``(blocks, blockDim.z, blockDim.y,
blockDim.x)``: ``threadIdx.x`` is ``(1, 1, 1, bx)``, ``blockIdx.x`` is ``(blocks, 1, 1, 1)``, a loop counter that
every lane shares is a numpy scalar. Values only grow to the full shape when they really vary that much, and
counts over a value that does not depend on the block are computed on one block and multiplied.
Masks follow the same rule; ``None`` means every lane of the batch is active.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel.errors import Location, SimulationError
from perfmodel.sim import warps as W


@dataclass(frozen=True)
class Site:
    file: str
    line: int
    col: int
    kind: str            # "fp add", "global load", "shared store", "branch", "barrier", "int op", ...
    detail: str = ""     # array name, function name, operator

    @property
    def location(self) -> Location:
        return Location(self.file, self.line, self.col)


class Counters:
    """Totals over every simulated block: per site, and per block for the analyzer's spread and idle report."""

    def __init__(self, n_sites: int, n_blocks: int):
        self.threads = [0] * n_sites     # thread-level executions (ops, accesses, lanes at a branch)
        self.warps = [0] * n_sites       # warp-level instructions / requests
        self.units = [0] * n_sites       # sectors (global), wavefronts (shared, constant), divergent warps (branch)
        self.lines = [0] * n_sites       # global: distinct 128-byte lines per warp request, summed
        self.block_execs = [0] * n_sites  # barriers: (block, barrier) pairs
        self.bytes = [0] * n_sites
        self.per_block = {k: np.zeros(n_blocks, np.int64) for k in (
            "flops", "global_loads", "global_stores", "global_load_sectors", "global_store_sectors",
            "shared_wavefronts", "idle_threads", "threads")}


class GlobalArray:
    """A kernel argument array in global memory; base addresses are 256-byte aligned, like cudaMalloc's."""

    def __init__(self, name: str, data: np.ndarray, base: int):
        self.name = name
        self.data = data
        self.base = base
        self.size = data.shape[0]
        self.itemsize = data.dtype.itemsize
        nsec = (self.size * self.itemsize + 31) // 32 + 1
        self.loaded = np.zeros(nsec, bool)
        self.stored = np.zeros(nsec, bool)


class BatchArray:
    """Shared memory (one row per block of the batch) or a thread's local array (one row per lane)."""

    def __init__(self, name: str, space: str, data: np.ndarray, word_offset: int = 0):
        self.name = name
        self.space = space
        self.data = data          # (rows, n)
        self.size = data.shape[1]
        self.itemsize = data.dtype.itemsize
        self.word_offset = word_offset


class ConstArray:
    def __init__(self, name: str, data: np.ndarray):
        self.name = name
        self.data = data
        self.size = data.shape[0]
        self.itemsize = data.dtype.itemsize


class Ctx:
    """One batch of blocks executing together."""

    def __init__(self, program, counters: Counters, block_ids: np.ndarray, batch_offset: int, grid, block,
                 max_steps: int):
        self.program = program
        self.counters = counters
        self.block_ids = block_ids
        self.batch_offset = batch_offset
        self.nB = nB = len(block_ids)
        self.grid = grid
        self.block = block
        bx, by, bz = block
        self.shape = (nB, bz, by, bx)
        self.T = bx * by * bz
        self.nw = (self.T + 31) // 32
        self.nlanes = nB * self.T
        self.max_steps = max_steps
        gx, gy, _gz = grid
        ids = block_ids.astype(np.int64)
        self.bid = (
            (ids % gx).astype(np.int32).reshape(nB, 1, 1, 1),
            ((ids // gx) % gy).astype(np.int32).reshape(nB, 1, 1, 1),
            (ids // (gx * gy)).astype(np.int32).reshape(nB, 1, 1, 1),
        )
        self.tid = (
            np.arange(bx, dtype=np.int32).reshape(1, 1, 1, bx),
            np.arange(by, dtype=np.int32).reshape(1, 1, by, 1),
            np.arange(bz, dtype=np.int32).reshape(1, bz, 1, 1),
        )
        self.bdim = tuple(np.int32(v) for v in block)
        self.gdim = tuple(np.int32(v) for v in grid)
        # CUDA's threadIdx/blockIdx/blockDim/gridDim are unsigned int (uint3, dim3)
        self.tid_u = tuple(a.astype(np.uint32) for a in self.tid)
        self.bid_u = tuple(a.astype(np.uint32) for a in self.bid)
        self.bdim_u = tuple(np.uint32(v) for v in block)
        self.gdim_u = tuple(np.uint32(v) for v in grid)
        self.loops: list = []
        self.empty = False
        self.brow = np.arange(nB).reshape(nB, 1, 1, 1)
        self.vals: list = [None] * program.n_slots
        # this batch's rows of the per-block counters (views)
        self.pb = {k: v[batch_offset:batch_offset + nB] for k, v in counters.per_block.items()}
        self.decl_mask: list = [None] * program.n_slots     # the active mask when each variable was declared
        self.mask = None
        self.live = None                 # lanes that have not returned from the kernel
        self._stats = None
        self.shared: list = []
        self.globals: list = []
        self.consts: list = []
        self.flops_full = 0              # flops executed while every lane was active (per lane)
        self.pb_flops = np.zeros(nB, np.int64)
        self.worked_full = False
        self.worked = None               # lanes that did a memory access or a flop (when not all did)
        self._worked_mask_id = None
        self._lane_rows = None           # lane_rows(), built on first use

    # ---- masks -------------------------------------------------------------------------------------------
    def lanes2d(self, a: np.ndarray):
        """(rows, T) lanes of a broadcastable array, and how many blocks each row stands for."""
        if a.shape[0] == 1:
            return np.broadcast_to(a, (1,) + self.shape[1:]).reshape(1, self.T), self.nB
        return np.broadcast_to(a, self.shape).reshape(self.nB, self.T), 1

    def stats(self):
        """(active lanes, active warps, active lanes per block or None when all) for the current mask."""
        st = self._stats
        if st is None:
            m = self.mask
            if m is None:
                st = (self.nlanes, self.nB * self.nw, None, None)
            else:
                m2, f = self.lanes2d(m)
                per_row = np.count_nonzero(m2, axis=1)
                wa = W.warp_any(m2)
                warps_row = np.count_nonzero(wa, axis=1)
                n = int(per_row.sum()) * f
                nwarps = int(warps_row.sum()) * f
                if f > 1:
                    per_row = np.broadcast_to(per_row, (self.nB,))
                    warps_row = np.broadcast_to(warps_row, (self.nB,))
                st = (n, nwarps, per_row, warps_row)
            self._stats = st
        return st

    # ---- counting -----------------------------------------------------------------------------------------
    def count_op(self, site: int, flops: int = 0):
        n, nw, per_block, _ = self.stats()
        if n == 0:
            return
        c = self.counters
        c.threads[site] += n
        c.warps[site] += nw
        if flops:
            if per_block is None:
                self.flops_full += flops
            else:
                self.pb_flops += per_block * flops
            self.mark_worked()

    def mark_worked(self):
        m = self.mask
        if m is None:
            self.worked_full = True
        elif self._worked_mask_id is not m:
            self._worked_mask_id = m
            full = np.broadcast_to(m, self.shape)
            if self.worked is None:
                self.worked = full.copy()
            else:
                self.worked |= full

    def lane_rows(self) -> np.ndarray:
        """Each lane's row in a local array (one row per lane of the batch), in the lane shape."""
        r = self._lane_rows
        if r is None:
            r = self._lane_rows = np.arange(self.nlanes).reshape(self.shape)
        return r

    # ---- errors -------------------------------------------------------------------------------------------
    def lane_where(self, bad: np.ndarray):
        """Block and thread coordinates of the first lane set in ``bad`` (broadcastable to the lane shape)."""
        full = np.broadcast_to(bad, self.shape)
        flat = int(np.argmax(full.reshape(-1)))
        b, rem = divmod(flat, self.T)
        bx, by, _bz = self.block
        thread = (rem % bx, (rem // bx) % by, rem // (bx * by))
        gx, gy, _ = self.grid
        bid = int(self.block_ids[b])
        blk = (bid % gx, (bid // gx) % gy, bid // (gx * gy))
        return thread, blk, flat

    def error(self, message: str, site: Site | None = None, bad=None):
        thread = blk = None
        if bad is not None:
            thread, blk, _ = self.lane_where(bad)
            message = f"{message} (thread {fmt3(thread)}, block {fmt3(blk)})"
        loc = site.location if site is not None else None
        raise SimulationError(message, location=loc, thread=thread, block=blk)


def fmt3(t) -> str:
    return "(" + ",".join(str(int(v)) for v in t) + ")"


def value_at(value, bad, ctx: Ctx):
    """The value of a lane array at the first lane flagged in ``bad`` (for error messages)."""
    if not isinstance(value, np.ndarray) or value.ndim == 0:
        return value
    full = np.broadcast_to(value, ctx.shape).reshape(-1)
    _, _, flat = ctx.lane_where(bad)
    return full[flat]
