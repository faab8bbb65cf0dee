"""Block- and warp-level instructions: barriers, shuffles, votes, match, redux, activemask, fences.

Lanes are laid out (rows, padded threads per block) with warps as consecutive groups of 32, so a warp view is a
reshape to (rows, warps, 32) and every warp-level operation is one numpy expression over all warps at once.
"""
from __future__ import annotations

import numpy as np

from perfmodel.ptx.ir import PredPair
from perfmodel.sim.alu import Unsupported
from perfmodel.sim.values import DT


def _full(st, v, dtype=None):
    rows = st.nB if (v.shape[0] != 1 or (st.mask is not None and st.mask.shape[0] != 1)) else 1
    out = np.broadcast_to(v, (rows, st.Tp))
    return out if dtype is None else out.astype(dtype, copy=False)


def _active(st, rows):
    m = st.mask
    if m is None:
        return np.ones((rows, st.Tp), bool)
    return np.broadcast_to(m, (rows, st.Tp)) if m.shape[0] == rows else np.broadcast_to(m, (st.nB, st.Tp))


def b_bar(ins, ops):
    """bar.sync / barrier.sync / bar.arrive / bar.red.{popc,and,or} / bar.warp.sync."""
    if ins.has("warp"):
        return lambda st, fr: None                     # __syncwarp: the lanes of a warp run together here
    arrive = ins.has("arrive")
    red = ins.opcode == "bar" and ins.has("red") or ins.opcode == "barrier" and ins.has("red")
    counted = len(ins.operands) > 1 and not red       # bar.sync a, b: b threads take part (named barriers)
    idx = ins.index
    if red:
        op = next(m for m in ins.mods if m in ("popc", "and", "or"))
        w = ops.writer(ins.operands[0])
        gp = ops.reader(ins.operands[-1], "pred")

        def bar_red(st, fr):
            st.barrier(idx, check=True)
            p = _full(st, gp(st, fr)) & _active(st, st.nB if st.mask is None or st.mask.shape[0] != 1 else 1)
            p = np.broadcast_to(p, (st.nB, st.Tp))
            if op == "popc":
                r = np.count_nonzero(p, axis=1).astype(np.uint32)[:, None]
            elif op == "and":
                act = np.broadcast_to(_active(st, st.nB), (st.nB, st.Tp))
                r = (~(act & ~p)).all(axis=1)[:, None]
            else:
                r = p.any(axis=1)[:, None]
            w(st, fr, r)
        return bar_red

    def bar(st, fr):
        st.barrier(idx, check=not (arrive or counted))
    return bar


def b_membar(ins, ops):
    return lambda st, fr: None


def _lane(st):
    return st.special("%laneid").astype(np.int64)


def b_shfl(ins, ops):
    mode = next((m for m in ins.mods if m in ("up", "down", "bfly", "idx")), None)
    if mode is None:
        raise Unsupported("shfl without .up/.down/.bfly/.idx")
    t = ins.type or "b32"
    dst = ins.operands[0]
    if isinstance(dst, PredPair):
        wd, wp = ops.writer(dst.first), ops.writer(dst.second)
    else:
        wd, wp = ops.writer(dst), None
    ga = ops.reader(ins.operands[1], t)
    gb = ops.reader(ins.operands[2], "u32")
    gc = ops.reader(ins.operands[3], "u32")

    def shfl(st, fr):
        a = ga(st, fr)
        b = gb(st, fr).astype(np.int64) & 0x1F          # the lane / delta / mask operand's low 5 bits
        c = gc(st, fr).astype(np.int64)
        rows = st.nB if (a.shape[0] != 1 or b.shape[0] != 1 or c.shape[0] != 1) else 1
        lane = _lane(st)
        cval = c & 0x1F
        segmask = (c >> 8) & 0x1F
        max_lane = (lane & segmask) | (cval & ~segmask)
        min_lane = lane & segmask
        if mode == "up":
            j = lane - b
            pval = j >= max_lane
        elif mode == "down":
            j = lane + b
            pval = j <= max_lane
        elif mode == "bfly":
            j = lane ^ b
            pval = j <= max_lane
        else:
            j = min_lane | (b & ~segmask)
            pval = j <= max_lane
        j = np.where(pval, j, lane)
        base = np.arange(st.Tp, dtype=np.int64).reshape(1, -1) - lane     # first lane of each lane's warp
        src = np.broadcast_to(base + j, (rows, st.Tp))
        src = np.clip(src, 0, st.Tp - 1)
        av = np.broadcast_to(a, (rows, st.Tp))
        d = np.take_along_axis(av, src, axis=1)
        wd(st, fr, d)
        if wp is not None:
            wp(st, fr, np.broadcast_to(pval, (rows, st.Tp)))
    return shfl


def _warp_view(x, rows, Tp):
    return np.broadcast_to(x, (rows, Tp)).reshape(rows, Tp // 32, 32)


_LANE_BITS = np.uint32(1) << np.arange(32, dtype=np.uint32)


def _membermask(ins, ops):
    """The reader of a ``.sync`` warp instruction's ``membermask`` operand (its last source), or None."""
    if not ins.has("sync") or len(ins.operands) < 3:
        return None
    return ops.reader(ins.operands[2], "u32")


def _members(st, gm, fr, act, rows):
    """Which lanes each lane's warp operation takes in, for a ``.sync`` form: None when every lane's membermask
    holds its whole warp's active lanes (the usual full mask or ``__activemask()``: the active lanes are the
    members); else a (rows, warps, 32 lanes, 32 members) array, lane i taking the active lanes of its own mask.
    Groups of one warp that run the instruction together with different masks (cooperative groups'
    ``labeled_partition``, ``tiled_partition`` of a coalesced group) each reduce, vote or match among their own
    lanes (PTX ISA, redux.sync / vote.sync / match.sync: the threads named by membermask)."""
    if gm is None:
        return None
    m = gm(st, fr)
    mv = _warp_view(m.astype(np.uint32, copy=False), rows, st.Tp)
    actbits = (act * _LANE_BITS).sum(axis=2, dtype=np.uint64).astype(np.uint32)[..., None]     # (rows, warps, 1)
    if not ((mv & actbits) != actbits)[act].any():
        return None
    return ((mv[..., :, None] & _LANE_BITS) != 0) & act[..., None, :]


def b_vote(ins, ops):
    mode = next((m for m in ins.mods if m in ("all", "any", "uni", "ballot")), None)
    gp = ops.reader(ins.operands[1], "pred")
    w = ops.writer(ins.operands[0])
    gm = _membermask(ins, ops)

    def vote(st, fr):
        p = gp(st, fr)
        rows = st.nB if (p.shape[0] != 1 or (st.mask is not None and st.mask.shape[0] != 1)) else 1
        act = _warp_view(_active(st, rows), rows, st.Tp)
        pv = _warp_view(p, rows, st.Tp)
        sel = _members(st, gm, fr, act, rows)
        if sel is not None:
            # each lane votes among its own membermask's lanes: (rows, warps, lane, member)
            pm = np.broadcast_to(pv[..., None, :], sel.shape)
            if mode == "ballot":
                r = ((pm & sel) * _LANE_BITS).sum(axis=3, dtype=np.uint64).astype(np.uint32)
            elif mode == "all":
                r = (~sel | pm).all(axis=3)
            elif mode == "any":
                r = (sel & pm).any(axis=3)
            else:
                r = (~sel | pm).all(axis=3) | (~sel | ~pm).all(axis=3)
            w(st, fr, r.reshape(rows, st.Tp))
            return
        if mode == "ballot":
            bits = (np.uint32(1) << np.arange(32, dtype=np.uint32))
            r = ((pv & act) * bits).sum(axis=2, dtype=np.uint64).astype(np.uint32)
        elif mode == "all":
            r = (~act | pv).all(axis=2)
        elif mode == "any":
            r = (act & pv).any(axis=2)
        else:
            r = (~act | pv).all(axis=2) | (~act | ~pv).all(axis=2)
        w(st, fr, np.repeat(r, 32, axis=1))
    return vote


def b_activemask(ins, ops):
    w = ops.writer(ins.operands[0])

    def activemask(st, fr):
        rows = 1 if st.mask is None or st.mask.shape[0] == 1 else st.nB
        act = _warp_view(_active(st, rows), rows, st.Tp)
        bits = (np.uint32(1) << np.arange(32, dtype=np.uint32))
        r = (act * bits).sum(axis=2, dtype=np.uint64).astype(np.uint32)
        w(st, fr, np.repeat(r, 32, axis=1))
    return activemask


def b_match(ins, ops):
    mode = next((m for m in ins.mods if m in ("any", "all")), None)
    t = ins.type
    dst = ins.operands[0]
    if isinstance(dst, PredPair):
        wd, wp = ops.writer(dst.first), ops.writer(dst.second)
    else:
        wd, wp = ops.writer(dst), None
    ga = ops.reader(ins.operands[1], t)
    gm = _membermask(ins, ops)

    def match(st, fr):
        a = ga(st, fr)
        rows = st.nB if (a.shape[0] != 1 or (st.mask is not None and st.mask.shape[0] != 1)) else 1
        act = _warp_view(_active(st, rows), rows, st.Tp)
        av = _warp_view(a, rows, st.Tp)
        sel = _members(st, gm, fr, act, rows)
        members = (act[..., None, :] & act[..., :, None]) if sel is None else sel
        eq = (av[..., :, None] == av[..., None, :]) & members
        bits = (np.uint64(1) << np.arange(32, dtype=np.uint64))
        same = (eq * bits).sum(axis=3, dtype=np.uint64).astype(np.uint32)      # (rows, warps, 32)
        if mode == "any":
            wd(st, fr, same.reshape(rows, st.Tp))
        else:
            if sel is None:
                actbits = (act * bits.astype(np.uint32)).sum(axis=2, dtype=np.uint64).astype(np.uint32)[..., None]
            else:   # each lane's own members
                actbits = (sel * bits.astype(np.uint32)).sum(axis=3, dtype=np.uint64).astype(np.uint32)
            allsame = (same == actbits)
            res = np.where(allsame, actbits, 0).astype(np.uint32)
            wd(st, fr, res.reshape(rows, st.Tp))
            if wp is not None:
                wp(st, fr, allsame.reshape(rows, st.Tp))
    return match


def b_redux(ins, ops):
    op = next((m for m in ins.mods if m in ("add", "min", "max", "and", "or", "xor")), None)
    t = ins.type
    ga = ops.reader(ins.operands[1], t)
    w = ops.writer(ins.operands[0])
    dt = DT[t]
    gm = _membermask(ins, ops)

    def redux(st, fr):
        a = ga(st, fr)
        rows = st.nB if (a.shape[0] != 1 or (st.mask is not None and st.mask.shape[0] != 1)) else 1
        act = _warp_view(_active(st, rows), rows, st.Tp)
        av = _warp_view(a, rows, st.Tp).astype(np.int64 if dt.kind == "i" else np.uint64)
        sel = _members(st, gm, fr, act, rows)
        if sel is not None:     # each lane reduces over its own membermask's lanes: (rows, warps, lane, member)
            act, av, axis = sel, np.broadcast_to(av[..., None, :], sel.shape), 3
        else:
            axis = 2
        if op == "add":
            r = np.where(act, av, 0).sum(axis=axis)
        elif op == "min":
            r = np.where(act, av, np.iinfo(dt).max).min(axis=axis)
        elif op == "max":
            r = np.where(act, av, np.iinfo(dt).min).max(axis=axis)
        elif op == "and":
            r = np.bitwise_and.reduce(np.where(act, av, ~np.uint64(0) if av.dtype == np.uint64 else -1), axis=axis)
        elif op == "or":
            r = np.bitwise_or.reduce(np.where(act, av, 0), axis=axis)
        else:
            r = np.bitwise_xor.reduce(np.where(act, av, 0), axis=axis)
        r = (r & 0xFFFFFFFF).astype(np.uint32).view(dt) if dt.itemsize == 4 else r.astype(dt)
        w(st, fr, r.reshape(rows, st.Tp) if sel is not None else np.repeat(r, 32, axis=1))
    return redux

