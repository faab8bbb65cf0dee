"""What atomics cost beyond their requests: the operations the memory system really performs, and how many of
them land on the hottest 128-byte line of global memory (operations on one line are serialised at its L2 slice).

Integer additions are aggregated per warp on the GPUs measured here: a warp whose active lanes add to one address
costs one operation, not 32 (H100: 4 Mi ``atomicAdd(&bins[0], 1u)`` take 99 us, the same with ``1.0f`` 7.4 ms;
validation/h100_fidelity.json, docs/model.md "Atomics"). Every other atomic is one operation per active lane.
"""
from __future__ import annotations

import numpy as np

AGGREGATED_OPS = ("add", "inc")
_BIG = np.iinfo(np.int64).max


def operations(off, mb, dt, op):
    """The operations one atomic instruction performs: ``(warp, offset, lanes)`` arrays, one entry per operation:
    every active lane's, or for an integer addition one per distinct address per warp (``lanes`` = how many lanes
    it stands for). ``off`` broadcastable to ``mb`` (blocks x padded threads)."""
    o = np.broadcast_to(np.asarray(off, np.int64), mb.shape).reshape(-1, 32)
    act = np.ascontiguousarray(mb).reshape(-1, 32)
    if not (np.dtype(dt).kind in "iu" and op in AGGREGATED_OPS):
        warp = np.broadcast_to(np.arange(o.shape[0]).reshape(-1, 1), o.shape)[act]
        return warp, o[act], np.ones(int(act.sum()), np.int64)
    w = np.sort(np.where(act, o, _BIG), axis=1)
    valid = w != _BIG
    first = valid.copy()
    first[:, 1:] &= w[:, 1:] != w[:, :-1]
    # lanes per distinct address: positions of the firsts and of the end of each run
    rows, cols = np.nonzero(first)
    ends = np.empty_like(cols)
    nxt = np.r_[cols[1:], 0]
    same_row = np.r_[rows[1:] == rows[:-1], False]
    ends = np.where(same_row, nxt, valid.sum(axis=1)[rows])
    return rows, w[first], ends - cols


def tally(store: dict, space: str, off, mb, dt, op, heap_bytes: int = 0) -> None:
    """Add one atomic instruction to ``store``: ``{space}_ops``, and for global memory the L2 work per 128-byte
    line: ``line_sectors`` (distinct sectors per warp and line), ``line_repeats`` (a warp's operations beyond the
    first on one address) and ``line_agg_ops`` (integer additions that merged two or more lanes of a warp)."""
    warp, addr, lanes = operations(off, mb, dt, op)
    store[f"{space}_ops"] = store.get(f"{space}_ops", 0) + int(addr.size)
    if space != "global" or addr.size == 0:
        return
    size = max(1, heap_bytes // 128 + 1)
    for kind in ("line_sectors", "line_repeats", "line_agg_ops"):
        if kind not in store:
            store[kind] = np.zeros(size, np.int64)
    merged = lanes >= 2
    if merged.any():
        u, c = np.unique(addr[merged] >> 7, return_counts=True)
        store["line_agg_ops"][u] += c
    single = ~merged
    if single.any():
        w, a = warp[single], addr[single]
        low = (1 << 34) - 1
        ops_line = np.unique(a >> 7, return_counts=True)
        sec = np.unique(w * (1 << 34) + (a >> 5))
        sec_line = np.unique((sec & low) >> 2, return_counts=True)
        adr = np.unique(w * (1 << 34) + a)
        adr_line = np.unique((adr & low) >> 7, return_counts=True)
        store["line_sectors"][sec_line[0]] += sec_line[1]
        store["line_repeats"][ops_line[0]] += ops_line[1]
        store["line_repeats"][adr_line[0]] -= adr_line[1]


def add_counts(counts_global: dict, counts_shared: dict, store: dict) -> None:
    """The totals into the ``global``/``shared`` counts: ``atomic_ops``, and the busiest 128-byte line's L2 work
    (the line with the most sectors + repeats + aggregated operations): ``atomic_hot_line_sectors`` (distinct
    sectors per warp request), ``atomic_hot_line_repeats`` (operations beyond the first on one address in a warp
    request) and ``atomic_hot_line_aggregated_ops``."""
    if not store:
        return
    counts_global["atomic_ops"] = store.get("global_ops", 0)
    counts_shared["atomic_ops"] = store.get("shared_ops", 0)
    parts = [store.get(k) for k in ("line_sectors", "line_repeats", "line_agg_ops")]
    if parts[0] is None:
        return
    hot = int(np.argmax(parts[0] + parts[1] + parts[2]))
    for key, part in zip(("atomic_hot_line_sectors", "atomic_hot_line_repeats", "atomic_hot_line_aggregated_ops"),
                         parts):
        counts_global[key] = int(part[hot])
