"""Warp-level figures computed with numpy over all warps at once (never a per-warp Python loop).

Lanes are given as 2-D arrays (rows, threads_per_block) with x fastest; warps are consecutive groups of 32 linear
thread ids, the last one partial when the block size is not a multiple of 32 (padded here with inactive lanes).
"""
from __future__ import annotations

import numpy as np

WARP = 32


def _pad(a: np.ndarray, fill) -> np.ndarray:
    t = a.shape[1]
    rem = (-t) % WARP
    if rem == 0:
        return a
    out = np.empty((a.shape[0], t + rem), dtype=a.dtype)
    out[:, :t] = a
    out[:, t:] = fill
    return out


def _fill_inactive(k: np.ndarray, act: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(warps, width) keys and active flags -> keys with every inactive lane given its warp's first active key (so
    inactive lanes add no distinct value and no bank conflict), and which warps have an active lane at all."""
    any_active = act.any(axis=1)
    first = np.argmax(act, axis=1)
    fill = k[np.arange(k.shape[0]), first]
    return np.where(act, k, fill[:, None]), any_active


def warp_any(active: np.ndarray) -> np.ndarray:
    """(rows, T) bool -> (rows, n_warps) bool: which warps have at least one active lane."""
    a = _pad(active, False)
    return a.reshape(a.shape[0], -1, WARP).any(axis=2)


def distinct_per_warp(keys: np.ndarray, active: np.ndarray | None, lanes_per_thread: int = 1) -> np.ndarray:
    """Distinct key values among the active lanes of each warp.

    keys: (rows, T * lanes_per_thread) integers (a thread may touch several keys, e.g. the two words of a double);
    active: (rows, T) bool or None (all active). Returns (rows, n_warps) counts (0 for a warp with no active lane).
    """
    rows = keys.shape[0]
    width = WARP * lanes_per_thread
    if keys.size <= 64 and keys.shape[1] <= width:
        # one (partial) warp per row and few lanes: a Python set is cheaper than the numpy machinery
        out = np.zeros((rows, 1), np.int64)
        klist = keys.tolist()
        alist = None if active is None else \
            (np.repeat(active, lanes_per_thread, axis=1) if lanes_per_thread > 1 else active).tolist()
        for r in range(rows):
            ks = klist[r] if alist is None else [k for k, a in zip(klist[r], alist[r]) if a]
            out[r, 0] = len(set(ks))
        return out
    if active is None and keys.shape[1] % width == 0:
        k = keys.reshape(-1, width)
        d = np.diff(k, axis=1)
        if not (d >= 0).all():
            d = np.diff(np.sort(k, axis=1), axis=1)
        return (1 + np.count_nonzero(d, axis=1)).reshape(rows, -1)
    if active is None:
        act = np.ones(keys.shape, bool)
    else:
        act = np.repeat(active, lanes_per_thread, axis=1) if lanes_per_thread > 1 else active
    act = _pad(act, False).reshape(-1, width)
    k = _pad(keys, 0).reshape(-1, width)
    k, any_active = _fill_inactive(k, act)
    k = np.sort(k, axis=1)
    n = 1 + np.count_nonzero(np.diff(k, axis=1), axis=1)
    return np.where(any_active, n, 0).reshape(rows, -1)


def distinct_sectors_lines(sectors: np.ndarray, active: np.ndarray | None,
                           sectors_per_line: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Distinct 32-byte sectors and distinct 128-byte lines among the active lanes of each warp, from one sort.

    sectors: (rows, T) sector numbers relative to 256-byte aligned array bases (so ``sector // 4`` is the line,
    the L1's 128-byte tag granule); active: (rows, T) bool or None. Sorting by sector also sorts by line, so both
    counts come from the same sorted keys. Returns two (rows, n_warps) arrays (0 for a warp with no active lane).
    """
    rows = sectors.shape[0]
    shift = sectors_per_line.bit_length() - 1
    if sectors.size <= 64 and sectors.shape[1] <= WARP:
        out_s = np.zeros((rows, 1), np.int64)
        out_l = np.zeros((rows, 1), np.int64)
        klist = sectors.tolist()
        alist = None if active is None else active.tolist()
        for r in range(rows):
            ks = klist[r] if alist is None else [k for k, a in zip(klist[r], alist[r]) if a]
            out_s[r, 0] = len(set(ks))
            out_l[r, 0] = len({k >> shift for k in ks})
        return out_s, out_l
    if active is None and sectors.shape[1] % WARP == 0:
        # boolean comparisons of neighbours rather than np.diff: a byte per lane instead of eight (about half the
        # time on the tiled matmul's 1 M-lane loads)
        k = sectors.reshape(-1, WARP)
        if not (k[:, 1:] >= k[:, :-1]).all():
            k = np.sort(k, axis=1)
        kl = k >> shift
        return ((1 + np.count_nonzero(k[:, 1:] != k[:, :-1], axis=1)).reshape(rows, -1),
                (1 + np.count_nonzero(kl[:, 1:] != kl[:, :-1], axis=1)).reshape(rows, -1))
    act = np.ones(sectors.shape, bool) if active is None else active
    act = _pad(act, False).reshape(-1, WARP)
    k = _pad(sectors, 0).reshape(-1, WARP)
    k, any_active = _fill_inactive(k, act)
    k = np.sort(k, axis=1)
    kl = k >> shift
    n_s = 1 + np.count_nonzero(k[:, 1:] != k[:, :-1], axis=1)
    n_l = 1 + np.count_nonzero(kl[:, 1:] != kl[:, :-1], axis=1)
    return np.where(any_active, n_s, 0).reshape(rows, -1), np.where(any_active, n_l, 0).reshape(rows, -1)


def wavefronts_per_warp(words: np.ndarray, active: np.ndarray | None, lanes_per_thread: int = 1,
                        banks: int = 32) -> np.ndarray:
    """Shared-memory wavefronts per warp: the largest number of distinct 4-byte words that fall in one bank.

    Lanes reading the same word are served by one broadcast. words: (rows, T * lanes_per_thread) non-negative word
    indices; returns (rows, n_warps), 0 for warps with no active lane.
    """
    rows = words.shape[0]
    width = WARP * lanes_per_thread
    w = _pad(words.astype(np.int64, copy=False), 0)
    if active is None:
        act = None if words.shape[1] % width == 0 else \
            _pad(np.ones((rows, words.shape[1]), bool), False)
    else:
        act = np.repeat(active, lanes_per_thread, axis=1) if lanes_per_thread > 1 else active
        act = _pad(act, False)
    w = w.reshape(-1, width)
    if act is not None:
        act = act.reshape(-1, width)
    return _bank_max(w, act, banks).reshape(rows, -1)


def _bank_max(w: np.ndarray, act: np.ndarray | None, banks: int = 32) -> np.ndarray:
    """(groups, width) word indices and active flags -> per group the largest number of distinct words in one
    bank (0 for a group with no active lane)."""
    if act is not None:
        w, any_active = _fill_inactive(w, act)
    bank = w % banks
    key = np.sort(bank * (1 << 40) + w // banks, axis=1)
    new_word = np.ones(key.shape, bool)
    new_word[:, 1:] = key[:, 1:] != key[:, :-1]
    sorted_bank = key >> 40
    flat = (np.arange(key.shape[0])[:, None] * banks + sorted_bank).ravel()
    per_bank = np.bincount(flat, weights=new_word.ravel(), minlength=key.shape[0] * banks)
    n = per_bank.reshape(-1, banks).max(axis=1).astype(np.int64)
    if act is not None:
        n = np.where(any_active, n, 0)
    return n


def wide_load_wavefronts(first_words: np.ndarray, active: np.ndarray | None, lanes_per_thread: int) -> np.ndarray:
    """Wavefronts per warp of a 64-bit (``lanes_per_thread`` 2) or 128-bit (4) shared-memory load, measured with
    ncu on an H200 (validation/microbench/shared_wide.py, validation/raw/h200_shared_wide.json: 321 address
    patterns, all matched): the warp is served in groups of 16 (64-bit) or 8 (128-bit) consecutive lanes - 128
    bytes - each group by the bank rule of :func:`wavefronts_per_warp`, and the groups are twice as large when
    every active lane reads the same address as lane ``l ^ 1``, or every one as lane ``l ^ 2`` (broadcast pairs).

    first_words: (rows, T) each lane's first word; active: (rows, T) or None. Returns (rows, n_warps)."""
    rows = first_words.shape[0]
    lpt = lanes_per_thread
    b = _pad(first_words.astype(np.int64, copy=False), 0).reshape(-1, WARP)
    if active is None and first_words.shape[1] % WARP == 0:
        act = None
    else:
        act = _pad(np.ones(first_words.shape, bool) if active is None else active, False).reshape(-1, WARP)
    lane = np.arange(WARP)

    def paired(x: int) -> np.ndarray:
        same = b == b[:, lane ^ x]
        if act is not None:
            same |= ~act | ~act[:, lane ^ x]
        return same.all(axis=1)

    doubled = paired(1) | paired(2)
    words = (b[:, :, None] + np.arange(lpt)).reshape(b.shape[0], WARP * lpt)
    wact = None if act is None else np.repeat(act, lpt, axis=1)
    group = WARP // lpt

    def per_group(g: int) -> np.ndarray:
        n = _bank_max(words.reshape(-1, g * lpt), None if wact is None else wact.reshape(-1, g * lpt))
        return n.reshape(-1, WARP // g).sum(axis=1)

    wf = per_group(group)
    if doubled.any():
        wf = np.where(doubled, per_group(2 * group), wf)
    return wf.reshape(rows, -1)
