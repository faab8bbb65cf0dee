"""What atomics cost beyond their requests: the operations the memory system really performs, and how many of
them land on the hottest 128-byte line of global memory (operations on one line are serialised at its L2 slice).

Global memory: ptxas combines the lanes of a warp into one operation for a 32-bit integer add, min, max, and, or
or xor whose address every lane shares by construction (perfmodel/sim/uniform.py); every other global atomic is
one operation per active lane, lanes on one address or not. Shared memory: an integer add or increment of the
lanes of a warp on one address is one operation (the SM's ``ATOMS.POPC.INC``). Measured: docs/model.md "Atomics".
"""
from __future__ import annotations

import numpy as np

SHARED_MERGED_OPS = ("add", "inc")
_BIG = np.iinfo(np.int64).max
_KEYS = ("sectors_int", "sectors_float", "repeats_int", "repeats_float")


def operations(off, mb, merge: bool):
    """The operations one atomic instruction performs: ``(warp, offset, lanes)`` arrays, one entry per operation:
    every active lane's, or with ``merge`` one per distinct address per warp (``lanes`` = how many lanes it stands
    for). ``off`` broadcastable to ``mb`` (blocks x padded threads)."""
    o = np.broadcast_to(np.asarray(off, np.int64), mb.shape).reshape(-1, 32)
    act = np.ascontiguousarray(mb).reshape(-1, 32)
    if not merge:
        warp = np.broadcast_to(np.arange(o.shape[0]).reshape(-1, 1), o.shape)[act]
        return warp, o[act], np.ones(int(act.sum()), np.int64)
    w = np.sort(np.where(act, o, _BIG), axis=1)
    valid = w != _BIG
    first = valid.copy()
    first[:, 1:] &= w[:, 1:] != w[:, :-1]
    # lanes per distinct address: positions of the firsts and of the end of each run
    rows, cols = np.nonzero(first)
    nxt = np.r_[cols[1:], 0]
    same_row = np.r_[rows[1:] == rows[:-1], False]
    ends = np.where(same_row, nxt, valid.sum(axis=1)[rows])
    return rows, w[first], ends - cols


def merges(space: str, dt, op: str, combined: bool) -> bool:
    """Whether the lanes of a warp on one address are one operation: on global memory the compiler's combining
    (``combined``: the address is warp-uniform by construction, perfmodel/sim/uniform.py) of a 32-bit integer
    add/min/max/and/or/xor; on shared memory an integer add or increment."""
    dt = np.dtype(dt)
    if dt.kind not in "iu":
        return False
    if space == "shared":
        return op in SHARED_MERGED_OPS
    from perfmodel.sim.uniform import COMBINED_OPS

    return combined and dt.itemsize == 4 and op in COMBINED_OPS


def tally(store: dict, space: str, off, mb, dt, op, heap_bytes: int = 0, combined: bool = False) -> None:
    """Add one atomic instruction to ``store``: ``{space}_ops``, and for global memory the L2 work per 128-byte
    line, integer and floating-point apart: ``sectors_*`` (distinct sectors per warp and line: one L2 atomic
    transaction each), ``repeats_*`` (per warp and sector, the most operations on one of its addresses beyond the
    first: a further pass each),
    and the line's distinct addresses over the run (``line_addr``: the first seen, ``line_multi``: more than one)."""
    warp, addr, _lanes = operations(off, mb, merges(space, dt, op, combined))
    store[f"{space}_ops"] = store.get(f"{space}_ops", 0) + int(addr.size)
    if space != "global" or addr.size == 0:
        return
    size = max(1, heap_bytes // 128 + 1)
    for kind in _KEYS:
        if kind not in store:
            store[kind] = np.zeros(size, np.int64)
    if "line_addr" not in store:
        store["line_addr"] = np.full(size, -1, np.int64)
        store["line_multi"] = np.zeros(size, bool)
    kind = "float" if np.dtype(dt).kind == "f" else "int"
    low = (1 << 34) - 1
    # per warp request and sector: one transaction, and as many further passes as the most lanes on one of its
    # addresses beyond the first - the sector's other addresses ride along (validation/atomic_bins_h200.json: 2 to
    # 8 bins of one sector cost what their fullest bin's lanes do, not every lane's)
    adr, mult = np.unique(warp * (1 << 34) + addr, return_counts=True)
    sec_key = (adr >> 34) * (1 << 34) + ((adr & low) >> 5)          # sorted as adr is
    sec, first = np.unique(sec_key, return_index=True)
    passes = np.maximum.reduceat(mult, first) - 1
    sec_lines = (sec & low) >> 2
    lines, at = np.unique(sec_lines, return_inverse=True)
    store[f"sectors_{kind}"][lines] += np.bincount(at)
    store[f"repeats_{kind}"][lines] += np.bincount(at, weights=passes).astype(np.int64)
    # distinct addresses per line over the run: more than one makes the line's transactions switch address
    pairs = np.unique(addr)
    lines, first_of_line = np.unique(pairs >> 7, return_index=True)
    per_line = np.diff(np.r_[first_of_line, pairs.size])
    seen = store["line_addr"]
    new = seen[lines] < 0
    seen[lines[new]] = pairs[first_of_line[new]]
    store["line_multi"][lines] |= (per_line > 1) | (seen[lines] != pairs[first_of_line])


def add_counts(counts_global: dict, counts_shared: dict, store: dict) -> None:
    """The totals into the ``global``/``shared`` counts: ``atomic_ops``, and the busiest 128-byte line's L2 work
    (the line with the most transactions + passes). A line of several addresses: ``atomic_hot_line_sectors`` (its
    transactions: distinct sectors per warp request) and ``atomic_hot_line_repeats_int`` / ``_float`` (operations
    beyond the first on one address in a warp request). A line whose every operation is on one address:
    ``atomic_hot_line_one_address_int`` / ``_float`` (all its operations). Each figure is a count of work, so it
    scales with the blocks a sampled or replicated run stands for."""
    if not store:
        return
    counts_global["atomic_ops"] = store.get("global_ops", 0)
    counts_shared["atomic_ops"] = store.get("shared_ops", 0)
    parts = [store.get(k) for k in _KEYS]
    if parts[0] is None:
        return
    hot = int(np.argmax(sum(parts)))
    si, sf, ri, rf = (int(part[hot]) for part in parts)
    multi = bool(store["line_multi"][hot])
    counts_global["atomic_hot_line_sectors"] = si + sf if multi else 0
    counts_global["atomic_hot_line_repeats_int"] = ri if multi else 0
    counts_global["atomic_hot_line_repeats_float"] = rf if multi else 0
    counts_global["atomic_hot_line_one_address_int"] = 0 if multi else si + ri
    counts_global["atomic_hot_line_one_address_float"] = 0 if multi else sf + rf
