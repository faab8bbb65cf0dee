"""``cp.async``'s copies from global to shared memory: issued, grouped and completed per thread, as the PTX ISA
defines them ("Data Movement and Conversion Instructions: cp.async", ``cp.async.commit_group``,
``cp.async.wait_group``, ``cp.async.wait_all``).

The parser lowers a copy to a global load and a shared store marked ``async`` (:func:`perfmodel.ptx.parse.
lower_cp_async`). Both are counted where the copy is issued, as the hardware's LDGSTS issues them; the load reads
the source there (the program may not change it before the copy completes). The store's data lands in shared memory
only when the thread completes the copy's group: at a ``cp.async.wait_group N`` that leaves at most N newer
committed groups pending, or at ``cp.async.wait_all``. That is the latest completion the ISA allows; a program that
reads a destination before the wait covering it has a data race, and sees the old contents here, as it mostly does
on the GPU, where a copy takes hundreds of cycles to land.

Groups are per thread: each lane counts its own commits, and a copy belongs to the group its lane had open when
it issued it.
"""
from __future__ import annotations

import numpy as np


class AsyncCopies:
    """The pending copies of one batch of blocks (``nB`` blocks of ``Tp`` lanes)."""

    def __init__(self, nB: int, Tp: int):
        self.shape = (nB, Tp)
        self.commits = np.zeros(self.shape, np.int64)     # per lane: groups committed so far
        self.pending: list = []                           # [group per lane (-1: none), dtype, word index, values]

    def issue(self, mask: np.ndarray, dt, idx: np.ndarray, values: list) -> None:
        """A copy issued by the lanes of ``mask``: it joins each lane's open (uncommitted) group."""
        group = np.where(np.broadcast_to(mask, self.shape), self.commits, -1)
        self.pending.append([group, dt, idx, [np.array(v, copy=True) for v in values]])

    def commit(self, mask: np.ndarray) -> None:
        self.commits += np.broadcast_to(mask, self.shape)

    def wait(self, mask: np.ndarray, newest_left: int, scatter) -> None:
        """``cp.async.wait_group newest_left`` by the lanes of ``mask``: complete, in issue order, every copy of
        theirs in a committed group older than their ``newest_left`` most recent ones. ``scatter(dt, idx, values,
        lanes)`` writes a copy's data for the lanes given."""
        m = np.broadcast_to(mask, self.shape)
        limit = self.commits - newest_left
        left = []
        for entry in self.pending:
            group, dt, idx, values = entry
            done = m & (group >= 0) & (group < limit)
            if done.any():
                scatter(dt, idx, values, done)
                group = np.where(done, -1, group)
                entry[0] = group
            if (group >= 0).any():
                left.append(entry)
        self.pending = left
