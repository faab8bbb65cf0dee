"""``cp.async``'s copies from global to shared memory: issued, grouped and completed per thread, as the PTX ISA
defines them ("Data Movement and Conversion Instructions: cp.async", ``cp.async.commit_group``,
``cp.async.wait_group``, ``cp.async.wait_all``).

The parser lowers a copy to a global load and a shared store marked ``async`` (:func:`perfmodel.ptx.parse.
lower_cp_async`). Both are counted where the copy is issued, as the hardware's LDGSTS issues them; the load reads
the source there (the program may not change it before the copy completes). The store's data lands in shared memory
only when the thread completes the copy's group: at a ``cp.async.wait_group N`` that leaves at most N newer
committed groups pending, or at ``cp.async.wait_all``.

Between the issue and that wait, the destination belongs to the copy: a program that reads or writes it then
(any thread of the block, with an ordinary access) has a data race, and its result depends on when the copy lands.
The executor stops there with an error naming the access's line, thread and block and the copy's line, as it does
for barrier divergence. Measured on an H200 (2026-11-26, cuda-samples' globalToShmemAsyncCopy on random
1280 x 1280 inputs, three runs): the two multi-stage kernels, which prefetch into the buffer the current stage is
reading, give a different wrong product on every run (largest error 19.6-25.5 against 5e-5 for the race-free
kernels).

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
        self.pending: list = []        # [group per lane (-1: none), dtype, element index, values, store's gid]
        self._in_flight = None         # (nB, shared words) bool: every pending copy's words; None: to recompute

    def issue(self, mask: np.ndarray, dt, idx: np.ndarray, values: list, gid: int) -> None:
        """A copy issued by the lanes of ``mask`` (its shared store is PTX instruction ``gid``): it joins each
        lane's open (uncommitted) group."""
        group = np.where(np.broadcast_to(mask, self.shape), self.commits, -1)
        # the values are the copy's own load results (fresh arrays the executor never writes in place)
        self.pending.append([group, dt, idx, list(values), gid])
        self._in_flight = None

    def commit(self, mask: np.ndarray) -> None:
        self.commits += np.broadcast_to(mask, self.shape)

    def _words(self, entry, shared_words: int) -> np.ndarray:
        """(nB, shared_words) bool: the 4-byte words of shared memory one pending copy will still write (a copy
        is ``len(values)`` 32-bit words from word ``idx``: perfmodel.ptx.parse.lower_cp_async)."""
        group, _dt, idx, values, _gid = entry
        out = np.zeros((self.shape[0], shared_words), bool)
        lanes = group >= 0
        rows = np.broadcast_to(np.arange(self.shape[0]).reshape(-1, 1), self.shape)[lanes]
        first = np.broadcast_to(idx, self.shape)[lanes]
        for j in range(len(values)):
            out[rows, first + j] = True
        return out

    def racing(self, first_word: np.ndarray, nwords: int, lanes: np.ndarray, shared_words: int):
        """An ordinary shared access by ``lanes`` ((nB, Tp) bool) of ``nwords`` 4-byte words from ``first_word``
        ((nB, Tp); in bounds for every lane, as the access's bounds check leaves it): (the PTX index of the oldest
        copy in flight that will write one of them, the lanes that touch them), or None. The words of all pending
        copies are built once per issue or completion, not per access (a race-free pipeline reads shared memory
        many times while its copies are in flight)."""
        if self._in_flight is None:
            self._in_flight = np.zeros((self.shape[0], shared_words), bool)
            for entry in self.pending:
                self._in_flight |= self._words(entry, shared_words)
        if not self._touches(self._in_flight, first_word, nwords, lanes).any():
            return None
        for entry in self.pending:
            bad = self._touches(self._words(entry, shared_words), first_word, nwords, lanes)
            if bad.any():
                return entry[4], bad
        return None

    def _touches(self, words: np.ndarray, first_word: np.ndarray, nwords: int, lanes: np.ndarray) -> np.ndarray:
        rows = np.broadcast_to(np.arange(self.shape[0]).reshape(-1, 1), self.shape)
        bad = np.zeros(self.shape, bool)
        for j in range(nwords):
            bad |= words[rows, first_word + j]
        return bad & lanes

    def wait(self, mask: np.ndarray, newest_left: int, scatter) -> None:
        """``cp.async.wait_group newest_left`` by the lanes of ``mask``: complete, in issue order, every copy of
        theirs in a committed group older than their ``newest_left`` most recent ones. ``scatter(dt, idx, values,
        lanes)`` writes a copy's data for the lanes given."""
        self._land(mask, self.commits - newest_left, scatter)

    def complete(self, mask: np.ndarray, scatter) -> None:
        """Land every pending copy of the lanes of ``mask`` now, committed or not (``cp.async.mbarrier.arrive``:
        perfmodel/sim/mbarrier.py)."""
        self._land(mask, None, scatter)

    def _land(self, mask: np.ndarray, limit, scatter) -> None:
        """Write, in issue order, the copies of the lanes of ``mask`` whose group is below ``limit`` (per lane;
        None: every group, the open one included) and drop them from the pending list."""
        m = np.broadcast_to(mask, self.shape)
        left = []
        for entry in self.pending:
            group, dt, idx, values, _gid = entry
            done = m & (group >= 0) if limit is None else m & (group >= 0) & (group < limit)
            if done.any():
                scatter(dt, idx, values, done)
                entry[0] = group = np.where(done, -1, group)
                self._in_flight = None
            if (group >= 0).any():
                left.append(entry)
        self.pending = left
