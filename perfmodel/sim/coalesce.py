"""Global-memory coalescing per GPU generation: how many memory transactions (and bytes) one warp-level load or
store becomes, from the byte address of every lane.

The rules are NVIDIA's, from the CUDA C Programming Guide (v3.2 appendix G.3.2 / G.4.2, v4.2 appendix F.3.2 /
F.4.2 / F.5.2, and the same text in later guides' "Compute Capability 1.x/2.x/3.x" sections; the source list is in
docs/model.md, "Memory transactions per generation"):

``cc1.0`` (compute capability 1.0 and 1.1: G80, G92). Per **half-warp** (16 lanes). The access coalesces when
    the word size is 4, 8 or 16 bytes, the 16 words lie in one 64-byte segment (4-byte words), one 128-byte segment
    (8-byte words) or two consecutive 128-byte segments (16-byte words), and the k-th lane accesses the k-th word;
    lanes that do not take part (a divergent warp) do not break it. A coalesced half-warp is one 64-byte, one
    128-byte or two 128-byte transactions. Otherwise it is a separate 32-byte transaction for every lane ("16
    separate 32-byte memory transactions").
``cc1.2`` (compute capability 1.2 and 1.3: GT200). Per half-warp: take the active lane with the lowest id, the
    segment holding its address (32 bytes for 1-byte words, 64 bytes for 2-byte words, 128 bytes for 4-, 8- and
    16-byte words), serve every active lane whose address lies in that segment with one transaction, halve the
    transaction while only its lower or upper half is used (128 -> 64 -> 32 bytes), and repeat for the lanes left.
``fermi`` (compute capability 2.x, loads cached in L1). Per warp, in 128-byte L1 lines: a request of 8-byte
    words is split into two half-warp requests and of 16-byte words into four quarter-warp requests, issued
    independently; each is one transaction per distinct 128-byte line.
``kepler`` (compute capability 3.x: global loads cached in L2 only) and ``sectors`` (Maxwell and later; Volta+
    L1 works in 32-byte sectors): per warp, one 32-byte transaction per distinct 32-byte segment.

The functions are pure: addresses in, counts out; the simulator calls :func:`cc1_counts` on every global access
(``perfmodel/sim/memory.py``) so that the analyzer can use the CC 1.x transactions as the DRAM traffic of those
devices (``perfmodel/model``), where nothing caches global memory.
"""
from __future__ import annotations

import numpy as np

RULES = ("cc1.0", "cc1.2", "fermi", "kepler", "sectors")
CC1_RULES = ("cc1.0", "cc1.2")
_BIG = np.iinfo(np.int64).max


def _rows(addr, active, lanes: int):
    """(R, lanes) int64 addresses and bool activity, R = every group of ``lanes`` consecutive lanes (a row whose
    length is not a multiple of ``lanes`` is padded with inactive lanes)."""
    a = np.atleast_2d(np.asarray(addr, np.int64))
    act = (np.ones(a.shape, bool) if active is None
           else np.broadcast_to(np.atleast_2d(np.asarray(active, bool)), a.shape))
    pad = (-a.shape[-1]) % lanes
    if pad:
        a = np.pad(a, ((0, 0), (0, pad)))
        act = np.pad(act, ((0, 0), (0, pad)))
    return a.reshape(-1, lanes), np.ascontiguousarray(act).reshape(-1, lanes)


def _groups(keys, act):
    """Distinct keys per row: sorted keys (inactive lanes last), the mask of each run's first element and of its
    last element."""
    k = np.where(act, keys, _BIG)
    k.sort(axis=1)
    valid = k != _BIG
    first = valid.copy()
    first[:, 1:] &= k[:, 1:] != k[:, :-1]
    last = valid.copy()
    last[:, :-1] &= k[:, :-1] != k[:, 1:]
    return k, first, last


def _cc10(a, act, size: int):
    """Transactions and bytes per half-warp row under the CC 1.0/1.1 rule."""
    n_act = act.sum(axis=1)
    if size not in (4, 8, 16):
        return n_act, 32 * n_act
    base = a - np.arange(a.shape[1], dtype=np.int64) * size
    lo = np.where(act, base, _BIG).min(axis=1)
    hi = np.where(act, base, -_BIG).max(axis=1)
    ok = (n_act > 0) & (lo == hi) & (lo % (16 * size) == 0)
    tx_ok, bytes_ok = {4: (1, 64), 8: (1, 128), 16: (2, 256)}[size]
    tx = np.where(ok, tx_ok, n_act)
    return tx, np.where(ok, bytes_ok, 32 * n_act)


def _cc12(a, act, size: int):
    """Transactions and bytes per half-warp row under the CC 1.2/1.3 rule."""
    seg = 32 if size == 1 else 64 if size == 2 else 128
    segs, first, last = _groups(np.where(act, a // seg, 0), act)
    tx = first.sum(axis=1)
    # the byte range each segment's lanes use: sort the addresses themselves (a segment's lanes are contiguous)
    srt = np.where(act, a, _BIG)
    srt.sort(axis=1)
    lo = srt[first] % seg
    hi = srt[last] % seg + size - 1
    row = np.nonzero(first)[0]
    tsize = np.full(lo.shape, seg, np.int64)
    start = np.zeros(lo.shape, np.int64)
    for _ in range(2):
        half = tsize // 2
        can = tsize > 32
        lower = can & (hi - start < half)
        upper = can & ~lower & (lo - start >= half)
        start = np.where(upper, start + half, start)
        tsize = np.where(lower | upper, half, tsize)
    nbytes = np.bincount(row, weights=tsize, minlength=a.shape[0]).astype(np.int64)
    return tx, nbytes


def _distinct(a, act, unit: int):
    _k, first, _l = _groups(np.where(act, a // unit, 0), act)
    tx = first.sum(axis=1)
    return tx, tx * unit


def transactions(addr, size: int, active=None, rule: str = "sectors"):
    """Memory transactions and bytes of warp-level accesses under ``rule`` (one of :data:`RULES`).

    ``addr``: byte addresses, shape (lanes,) or (warps..., lanes) with lanes a multiple of 32 (one row per warp,
    or several warps per row, in lane order); ``size``: bytes each lane accesses (1, 2, 4, 8 or 16; a vector
    access ``ld.v4.f32`` is 16); ``active``: bool mask of the lanes that take part (None: all).
    Returns ``(transactions, bytes)`` as int arrays, one entry per warp (32 consecutive lanes)."""
    if rule not in RULES:
        raise ValueError(f"unknown coalescing rule {rule!r} (expected one of {', '.join(RULES)})")
    if rule in CC1_RULES:
        a, act = _rows(addr, active, 16)
        tx, nb = (_cc10 if rule == "cc1.0" else _cc12)(a, act, int(size))
        return tx.reshape(-1, 2).sum(axis=1), nb.reshape(-1, 2).sum(axis=1)
    if rule == "fermi":
        lanes = 32 if size <= 4 else 16 if size == 8 else 8
        a, act = _rows(addr, active, lanes)
        tx, nb = _distinct(a, act, 128)
        per = 32 // lanes
        return tx.reshape(-1, per).sum(axis=1), nb.reshape(-1, per).sum(axis=1)
    a, act = _rows(addr, active, 32)
    return _distinct(a, act, 32)


def _cc1_rows(a, act, size: int) -> np.ndarray:
    """(rows, 4): per row, CC 1.0 transactions and bytes, CC 1.2 transactions and bytes."""
    rows, lanes = a.shape
    out = np.empty((rows, 4), np.int64)
    for i, rule in enumerate(CC1_RULES):
        ah, acth = _rows(a, act, 16)
        tx, nb = (_cc10 if rule == "cc1.0" else _cc12)(ah, acth, int(size))
        out[:, 2 * i] = tx.reshape(rows, -1).sum(axis=1)
        out[:, 2 * i + 1] = nb.reshape(rows, -1).sum(axis=1)
    return out


_MEMO: dict = {}
_MEMO_MAX = 4096


def cc1_counts(addr, active, size: int, lanes: int, weight=1) -> tuple[int, int, int, int]:
    """The simulator's hook: totals over every warp of one global access under both CC 1.x rules,
    ``(cc1.0 transactions, cc1.0 bytes, cc1.2 transactions, cc1.2 bytes)``. ``addr``/``active`` are the executor's
    arrays, broadcastable to (rows, ``lanes``) (``lanes``: threads per block padded to whole warps; ``active``
    None = every lane); ``weight`` (a number, or one per row) multiplies each row's counts (a row that stands for
    several blocks). A few rows are memoised by their pattern modulo 256 bytes (every rule's alignment divides
    256), so a loop's accesses cost one count each."""
    a = np.asarray(addr, np.int64)
    rows = max(a.shape[0] if a.ndim == 2 else 1, np.shape(active)[0] if active is not None and np.ndim(active) == 2
               else 1)
    a = np.broadcast_to(np.atleast_2d(a), (rows, lanes))
    act = None if active is None else np.broadcast_to(np.atleast_2d(active), (rows, lanes))
    if rows <= 4:
        norm = a - (a[:, :1] & ~255)
        key = (int(size), norm.tobytes(), None if act is None else np.ascontiguousarray(act).tobytes(), rows)
        per_row = _MEMO.get(key)
        if per_row is None:
            if len(_MEMO) >= _MEMO_MAX:
                _MEMO.clear()
            per_row = _MEMO[key] = _cc1_rows(norm, act, size)
    else:
        per_row = _cc1_rows(a, act, size)
    w = np.asarray(weight, np.int64).reshape(-1, 1) if np.ndim(weight) else int(weight)
    return tuple(int(x) for x in (per_row * w).sum(axis=0))


def tally(totals: dict, gid: int, addr, active, weight, size: int, lanes: int) -> None:
    """Add one global access's :func:`cc1_counts` to ``totals[gid]`` (a list of the four numbers)."""
    got = cc1_counts(addr, active, size, lanes, weight)
    have = totals.get(gid)
    totals[gid] = list(got) if have is None else [x + y for x, y in zip(have, got)]


COUNT_KEYS = ("cc10_{}_transactions", "cc10_{}_bytes", "cc12_{}_transactions", "cc12_{}_bytes")


def add_to_global(g: dict, load: bool, got) -> None:
    """Add one instruction's CC 1.x tallies to the ``global`` counts (keys ``cc10_load_transactions`` ...)."""
    if not got:
        return
    kind = "load" if load else "store"
    for key, value in zip(COUNT_KEYS, got):
        g[key.format(kind)] = g.get(key.format(kind), 0) + value
