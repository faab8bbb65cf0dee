"""Memory spaces of one simulated launch: global heap, per-block shared memory, per-thread local memory, the
constant bank, and the address windows that generic addressing uses.

Addresses are the ones the PTX computes. Global arrays sit in one byte heap at ``GLOBAL_BASE`` (256-byte aligned,
like cudaMalloc). Shared, local and constant addresses are offsets in their own space; their generic addresses
(``cvta``) add the window bases below, so a generic load can tell the spaces apart as the hardware does.
"""
from __future__ import annotations

import bisect

import numpy as np

GLOBAL_BASE = 0x7F0000000000
SHARED_BASE = 1 << 48
LOCAL_BASE = 2 << 48
CONST_BASE = 3 << 48
WINDOW = 1 << 48


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


class ByteSpace:
    """A flat little-endian byte space with typed views (the views share memory with the bytes)."""

    def __init__(self, nbytes: int):
        self.bytes = np.zeros(_align(max(nbytes, 16), 16), np.uint8)
        self._views: dict = {}

    def view(self, dtype) -> np.ndarray:
        """The bytes as ``dtype`` elements along the last axis (cached per dtype)."""
        dt = np.dtype(dtype)
        v = self._views.get(dt)
        if v is None:
            v = self._views[dt] = self.bytes.view(dt)
        return v


NO_ARRAY = "(no array)"


class GlobalHeap(ByteSpace):
    """Kernel argument arrays and module ``.global`` variables, each 256-byte aligned from ``GLOBAL_BASE``."""

    def __init__(self, blocks: list[tuple[str, int]]):
        # blocks: (name, nbytes); returns offsets through self.offsets. A launch with no global memory at all (a
        # kernel taking no pointer, reading its data through pointers held in __constant__ memory) gets one empty
        # block, so that every access is out of bounds like any other
        off = 0
        blocks = blocks or [(NO_ARRAY, 0)]
        self.names: list[str] = []
        self.offsets: list[int] = []
        self.sizes: list[int] = []
        for name, nbytes in blocks:
            self.names.append(name)
            self.offsets.append(off)
            self.sizes.append(nbytes)
            off = _align(off + max(nbytes, 1), 256) + 256     # a gap between arrays catches overruns
        super().__init__(off)
        self.starts = np.asarray(self.offsets, np.int64)
        self.ends = self.starts + np.asarray(self.sizes, np.int64)
        nsec = len(self.bytes) // 32 + 1
        self.loaded = np.zeros(nsec, bool)
        self.stored = np.zeros(nsec, bool)
        self.atomic_dirty = np.zeros(nsec, bool)     # sectors atomics changed (for a checkpoint's restore)

    def address(self, i: int) -> int:
        return GLOBAL_BASE + self.offsets[i]

    def write(self, i: int, data: np.ndarray | bytes) -> None:
        if isinstance(data, (bytes, bytearray)):
            raw = np.frombuffer(bytes(data), np.uint8)
        else:
            raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        o = self.offsets[i]
        self.bytes[o:o + raw.size] = raw

    def checkpoint(self, sources: list):
        """A restore function that puts back the heap as it is now: the sectors written since (stores and
        atomics) are copied back from ``sources`` - the pristine bytes of allocation i, or None to keep a copy of
        that allocation now - and the footprint bitmaps are reset. Cheaper than copying the whole heap."""
        kept = {i: self.bytes[self.offsets[i]:self.offsets[i] + self.sizes[i]].copy()
                for i, src in enumerate(sources) if src is None}
        stored, loaded, dirty = self.stored.copy(), self.loaded.copy(), self.atomic_dirty.copy()

        def restore():
            changed = np.flatnonzero((self.stored & ~stored) | (self.atomic_dirty & ~dirty))
            for i, (o, n) in enumerate(zip(self.offsets, self.sizes)):
                lo, hi = np.searchsorted(changed, [o >> 5, (o + n + 31) >> 5])
                if lo == hi:
                    continue
                src = kept[i] if i in kept else np.ascontiguousarray(sources[i]).reshape(-1).view(np.uint8)
                b = ((changed[lo:hi] << 5) - o)[:, None] + np.arange(32)
                b = b[(b >= 0) & (b < n)]
                self.bytes[o + b] = src[b]
            self.stored[...] = stored
            self.loaded[...] = loaded
            self.atomic_dirty[...] = dirty
        return restore

    def read(self, i: int, dtype, count: int) -> np.ndarray:
        o = self.offsets[i]
        return self.bytes[o:o + count * np.dtype(dtype).itemsize].view(dtype)

    def owner(self, off: int) -> int:
        """Index of the allocation nearest below byte offset ``off`` (for messages)."""
        return max(bisect.bisect_right(self.offsets, off) - 1, 0)

    def valid(self, off: np.ndarray, size: int) -> np.ndarray:
        """Per-lane: does [off, off+size) lie inside one allocation?"""
        k = np.searchsorted(self.starts, off, side="right") - 1
        k = np.clip(k, 0, len(self.starts) - 1)
        return (k >= 0) & (off >= self.starts[k]) & (off + size <= self.ends[k])


class BlockSpace(ByteSpace):
    """Per-row byte memory: shared memory (one row per block) or local memory (one row per lane)."""

    def __init__(self, rows: int, nbytes: int):
        self.nbytes = nbytes
        self.bytes = np.zeros((rows, _align(max(nbytes, 16), 16)), np.uint8)
        self._views = {}
