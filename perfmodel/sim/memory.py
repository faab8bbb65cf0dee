"""Loads, stores and atomics on global, shared, constant and local memory, with their counting.

Global: one request per warp with an active lane; sectors = distinct 32-byte sectors per request, lines =
distinct 128-byte lines per request (the L1's tag granule; array bases are 256-byte aligned, so offsets from the
base give the same sectors and lines as absolute addresses).
Shared: wavefronts = per warp, the largest number of distinct 4-byte words in one of the 32 banks (same word =
broadcast). Constant: wavefronts = distinct addresses per warp request (serialisation). Local: lane-level counts.
"""
from __future__ import annotations

import numpy as np

from perfmodel.sim import warps as W
from perfmodel.sim.runtime import Ctx, value_at

# Wavefronts of one block's (pattern, mask), keyed by their exact bytes; shared by all runs (exact, bounded).
_WAVEFRONT_MEMO: dict = {}


def is_lanes(v) -> bool:
    """Whether a value varies over the lanes (a lane array) rather than being one scalar for all of them."""
    return isinstance(v, np.ndarray) and v.ndim > 0


def check_index(ctx: Ctx, site, mem, idx, what: str):
    """Raise on an active lane indexing out of bounds; return an index that is safe for inactive lanes too."""
    n = mem.size
    m = ctx.mask
    if not is_lanes(idx):
        if 0 <= idx < n:
            return idx
        ctx.error(f"out-of-bounds {mem_space(mem)} {what}: {mem.name}[{int(idx)}] but {mem.name} has {n} elements",
                  site, np.ones((1, 1, 1, 1), bool) if m is None else m)
    if m is None:
        if idx.min() >= 0 and idx.max() < n:
            return idx
        bad = (idx < 0) | (idx >= n)
        ctx.error(f"out-of-bounds {mem_space(mem)} {what}: {mem.name}[{int(value_at(idx, bad, ctx))}] but "
                  f"{mem.name} has {n} elements", site, bad)
    bad = (idx < 0) | (idx >= n)
    if not bad.any():
        return idx
    bad_active = bad & m
    if bad_active.any():
        ctx.error(f"out-of-bounds {mem_space(mem)} {what}: {mem.name}[{int(value_at(idx, bad_active, ctx))}] but "
                  f"{mem.name} has {n} elements", site, bad_active)
    return np.where(bad, 0, idx)


def mem_space(mem) -> str:
    return getattr(mem, "space", None) or ("constant" if type(mem).__name__ == "ConstArray" else "global")


def _rows(ctx: Ctx, keys, m):
    """Lanes of ``keys`` and of the mask as (rows, T) arrays, and the block multiplicity of each row."""
    if keys.shape[0] == 1 and (m is None or m.shape[0] == 1):
        k2, f = ctx.lanes2d(keys)
        m2 = None if m is None else ctx.lanes2d(m)[0]
        return k2, m2, f
    k2 = np.broadcast_to(keys, ctx.shape).reshape(ctx.nB, ctx.T)
    m2 = None if m is None else np.broadcast_to(m, ctx.shape).reshape(ctx.nB, ctx.T)
    return k2, m2, 1


def _per_block(ctx, per_row, f):
    return np.broadcast_to(per_row, (ctx.nB,)) if f > 1 else per_row


# ---------------------------------------------------------------- counting -----------------------------------
def _count_access(ctx: Ctx, site: int, itemsize: int):
    """Count one load/store at `site` for the active lanes (threads, warps, bytes) and mark them as having
    worked; returns ctx.stats(), or None when no lane is active (then nothing is counted)."""
    st = ctx.stats()
    n, nw = st[0], st[1]
    if n == 0:
        return None
    c = ctx.counters
    c.threads[site] += n
    c.warps[site] += nw
    c.bytes[site] += n * itemsize
    ctx.mark_worked()
    return st


# ---------------------------------------------------------------- global -------------------------------------
def global_count(ctx: Ctx, site: int, mem, idx, store: bool):
    st = _count_access(ctx, site, mem.itemsize)
    if st is None:
        return
    _n, nw, _pb, warps_pb = st
    c = ctx.counters
    m = ctx.mask
    bitmap = mem.stored if store else mem.loaded
    pb_acc = ctx.pb["global_stores" if store else "global_loads"]
    pb_sec = ctx.pb["global_store_sectors" if store else "global_load_sectors"]
    pb_acc += ctx.T if _pb is None else _pb
    if not is_lanes(idx):
        bitmap[(int(idx) * mem.itemsize) >> 5] = True
        c.units[site] += nw
        c.lines[site] += nw
        pb_sec += ctx.nw if warps_pb is None else warps_pb
        return
    sec = (idx.astype(np.int64) * mem.itemsize) >> 5 if mem.size * mem.itemsize >= 2 ** 31 else \
        (idx * mem.itemsize) >> 5
    k2, m2, f = _rows(ctx, sec, m)
    sec_w, line_w = W.distinct_sectors_lines(k2, m2)
    per_row = sec_w.sum(axis=1)
    c.units[site] += int(per_row.sum()) * f
    c.lines[site] += int(line_w.sum()) * f
    pb_sec += _per_block(ctx, per_row, f)
    bitmap[k2 if m2 is None else k2[m2]] = True


def global_load(ctx: Ctx, site: int, mem, idx):
    idx = check_index(ctx, ctx.program.sites[site], mem, idx, "load")
    global_count(ctx, site, mem, idx, False)
    return mem.data[idx]


def global_store(ctx: Ctx, site: int, mem, idx, value):
    idx = check_index(ctx, ctx.program.sites[site], mem, idx, "store")
    global_count(ctx, site, mem, idx, True)
    _scatter(mem.data, idx, value, ctx.mask)


def _scatter(data, idx, value, m, rows=None):
    """data[idx] = value for the active lanes; the highest lane (x fastest) wins when lanes collide."""
    arrays = [idx, value] + ([] if m is None else [m]) + ([] if rows is None else [rows])
    shape = np.broadcast_shapes(*[np.shape(a) for a in arrays])
    if m is None and rows is None and np.shape(idx) == shape:
        data[idx] = value
        return
    if m is None and rows is not None:
        data[np.broadcast_to(rows, shape), np.broadcast_to(idx, shape)] = np.broadcast_to(value, shape)
        return
    sel = np.broadcast_to(m, shape) if m is not None else np.ones(shape, bool)
    i = np.broadcast_to(idx, shape)[sel]
    v = np.broadcast_to(value, shape)[sel]
    if rows is None:
        data[i] = v
    else:
        data[np.broadcast_to(rows, shape)[sel], i] = v


# ---------------------------------------------------------------- shared -------------------------------------
def shared_count(ctx: Ctx, site: int, mem, idx):
    st = _count_access(ctx, site, mem.itemsize)
    if st is None:
        return
    _n, nw, _pb, _wpb = st
    c = ctx.counters
    isz = mem.itemsize
    lpt = max(1, isz // 4)         # 4-byte words each lane touches (an 8-byte double: two)
    if not is_lanes(idx):
        c.units[site] += nw * lpt
        ctx.pb["shared_wavefronts"] += (_wpb if _wpb is not None else ctx.nw) * lpt
        return
    m = ctx.mask
    words = mem.word_offset + ((idx.astype(np.int64) * isz) >> 2)
    if lpt == 1:
        k2, m2, f = _rows(ctx, words, m)
    else:
        words = words[..., None] + np.arange(lpt).reshape((1,) * words.ndim + (lpt,))
        full_shape = ctx.shape + (lpt,)
        if words.shape[0] == 1 and (m is None or m.shape[0] == 1):
            k2 = np.broadcast_to(words, (1,) + full_shape[1:]).reshape(1, ctx.T * lpt)
            m2 = None if m is None else ctx.lanes2d(m)[0]
            f = ctx.nB
        else:
            k2 = np.broadcast_to(words, full_shape).reshape(ctx.nB, ctx.T * lpt)
            m2 = None if m is None else np.broadcast_to(m, ctx.shape).reshape(ctx.nB, ctx.T)
            f = 1
    if k2.shape[0] == 1:
        # One block's pattern stands for every block: memoise it by its exact bytes (loops revisit patterns).
        key = (k2.tobytes(), None if m2 is None else m2.tobytes(), lpt, k2.dtype.str)
        memo = _WAVEFRONT_MEMO
        per_row = memo.get(key)
        if per_row is None:
            per_row = W.wavefronts_per_warp(k2, m2, lpt).sum(axis=1)
            if len(memo) > 65536:
                memo.clear()
            memo[key] = per_row
    else:
        per_row = W.wavefronts_per_warp(k2, m2, lpt).sum(axis=1)
    c.units[site] += int(per_row.sum()) * f
    ctx.pb["shared_wavefronts"] += _per_block(ctx, per_row, f)


def shared_load(ctx: Ctx, site: int, mem, idx):
    idx = check_index(ctx, ctx.program.sites[site], mem, idx, "load")
    shared_count(ctx, site, mem, idx)
    if is_lanes(idx):
        if idx.shape[0] == 1:      # the same offsets in every block: one gather along the row axis
            return np.take(mem.data, idx.reshape(-1), axis=1).reshape((ctx.nB,) + idx.shape[1:])
        return mem.data[ctx.brow, idx.astype(np.intp, copy=False)]
    return mem.data[:, idx].reshape(ctx.nB, 1, 1, 1)


def shared_store(ctx: Ctx, site: int, mem, idx, value):
    idx = check_index(ctx, ctx.program.sites[site], mem, idx, "store")
    shared_count(ctx, site, mem, idx)
    if ctx.mask is None and is_lanes(idx) and idx.shape[0] == 1 and _is_identity(ctx, idx, mem.size):
        # every thread writes its own linear slot (tile[ty][tx] = ...): a plain copy per block
        mem.data[:, :ctx.T] = np.broadcast_to(value, ctx.shape).reshape(ctx.nB, ctx.T)
        return
    _scatter(mem.data, idx, value, ctx.mask, rows=ctx.brow)


def _is_identity(ctx, idx, size) -> bool:
    if size < ctx.T:
        return False
    flat = np.broadcast_to(idx, (1,) + ctx.shape[1:]).reshape(-1)
    return bool(flat[0] == 0 and (np.diff(flat) == 1).all())


# ---------------------------------------------------------------- constant / local ----------------------------
def constant_load(ctx: Ctx, site: int, mem, idx):
    idx = check_index(ctx, ctx.program.sites[site], mem, idx, "load")
    st = _count_access(ctx, site, mem.itemsize)
    if st is not None:
        c = ctx.counters
        if is_lanes(idx):
            k2, m2, f = _rows(ctx, idx, ctx.mask)
            c.units[site] += int(W.distinct_per_warp(k2, m2).sum()) * f
        else:
            c.units[site] += st[1]
    return mem.data[idx]


def local_load(ctx: Ctx, site: int, mem, idx):
    idx = check_index(ctx, ctx.program.sites[site], mem, idx, "load")
    ctx.count_op(site)
    ctx.mark_worked()
    return mem.data[ctx.lane_rows(), idx]


def local_store(ctx: Ctx, site: int, mem, idx, value):
    idx = check_index(ctx, ctx.program.sites[site], mem, idx, "store")
    ctx.count_op(site)
    ctx.mark_worked()
    _scatter(mem.data, idx, value, ctx.mask, rows=ctx.lane_rows())


# ---------------------------------------------------------------- atomics ------------------------------------
def atomic(ctx: Ctx, site: int, mem, idx, op: str, value, compare=None):
    """Apply an atomic read-modify-write for every active lane; colliding lanes are serialised in lane order
    (block by block, then linear thread id). Returns every lane's old value."""
    space = mem_space(mem)
    idx = check_index(ctx, ctx.program.sites[site], mem, idx, "atomic")
    n, nw, _pb, _wpb = ctx.stats()
    dtype = mem.data.dtype
    result = np.zeros(ctx.shape, dtype)
    if n == 0:
        return result
    c = ctx.counters
    c.threads[site] += n
    c.warps[site] += nw
    ctx.mark_worked()
    sel = np.ones(ctx.shape, bool) if ctx.mask is None else np.broadcast_to(ctx.mask, ctx.shape)
    i = np.broadcast_to(idx, ctx.shape)[sel].astype(np.int64)
    if space == "shared":
        i = np.broadcast_to(ctx.brow, ctx.shape)[sel] * mem.size + i
        flat = mem.data.reshape(-1)
    else:
        flat = mem.data
    v = np.broadcast_to(value, ctx.shape)[sel].astype(dtype)
    cmp = None if compare is None else np.broadcast_to(compare, ctx.shape)[sel].astype(dtype)
    order = np.argsort(i, kind="stable")
    ks, vs = i[order], v[order]
    start = np.ones(len(ks), bool)
    start[1:] = ks[1:] != ks[:-1]
    seg = np.cumsum(start) - 1
    init = flat[ks[start]]
    old_sorted = np.empty(len(ks), dtype)
    if op in ("add", "sub"):
        if op == "sub":
            vs = (-vs.astype(np.int64)).astype(dtype) if dtype.kind in "iu" else -vs
        cs = np.cumsum(vs, dtype=dtype)
        excl = cs - vs
        base = excl[start]
        old_sorted[:] = init[seg] + (excl - base[seg])
        last = np.ones(len(ks), bool)
        last[:-1] = start[1:]
        flat[ks[last]] = old_sorted[last] + vs[last]
    elif op in ("min", "max") and dtype.kind in "iu" and dtype.itemsize <= 4:
        # segmented running max (min = max of negated values): shift each address's segment above the previous
        sign = 1 if op == "max" else -1
        w = sign * vs.astype(np.int64)
        iw = sign * init.astype(np.int64)
        offset = seg.astype(np.int64) << 34
        pm = np.maximum.accumulate(w + offset) - offset           # running max within the segment, inclusive
        excl = np.empty_like(pm)
        excl[1:] = pm[:-1]
        excl[start] = np.iinfo(np.int64).min // 4
        old_w = np.maximum(iw[seg], excl)
        old_sorted[:] = (sign * old_w).astype(dtype)
        last = np.ones(len(ks), bool)
        last[:-1] = start[1:]
        flat[ks[last]] = (sign * np.maximum(old_w[last], w[last])).astype(dtype)
    elif op == "exch":
        old_sorted[1:] = vs[:-1]
        old_sorted[start] = init
        last = np.ones(len(ks), bool)
        last[:-1] = start[1:]
        flat[ks[last]] = vs[last]
    else:
        # min, max, cas, and/or/xor/inc/dec: rounds, one lane per address per round, in lane order.
        pos = np.arange(len(ks)) - np.flatnonzero(start)[seg]
        cs = None if cmp is None else cmp[order]
        for r in range(int(pos.max()) + 1):
            sel_r = pos == r
            kr = ks[sel_r]
            old = flat[kr]
            old_sorted[sel_r] = old
            vr = vs[sel_r]
            if op == "min":
                new = np.minimum(old, vr)
            elif op == "max":
                new = np.maximum(old, vr)
            elif op == "cas":
                new = np.where(old == cs[sel_r], vr, old)
            elif op == "and":
                new = old & vr
            elif op == "or":
                new = old | vr
            elif op == "xor":
                new = old ^ vr
            elif op == "inc":
                new = np.where(old >= vr, 0, old + 1).astype(dtype)
            elif op == "dec":
                new = np.where((old == 0) | (old > vr), vr, old - 1).astype(dtype)
            else:
                raise AssertionError(op)
            flat[kr] = new
    old_lane = np.empty(len(ks), dtype)
    old_lane[order] = old_sorted
    result[sel] = old_lane
    return result
