"""Loops that ptxas unrolled further than the PTX: their memory counts grouped as the SASS issues them.

NVVM may unroll a data-dependent ``for`` loop into a PTX self-loop block; ptxas may then unroll that block again
by R (:class:`perfmodel.kernel.UnrolledLoop`, recognised from the cubin): its SASS loop holds R copies of the block
and runs while at least R PTX iterations remain, and what remains runs as straight-line chunks of R/2, R/4, ..., 1
copies, each when its bit of the remainder is set, with the warp's lanes reconverged between them. A warp whose
lanes have different trip counts ``t_l`` therefore issues the main loop ``max_l(t_l // R)`` times and each chunk
once if any lane needs it, and lanes reach a chunk at different PTX iteration indices: lane iteration
``k < R * (t_l // R)`` lands in main-loop slot ``(k // R, k % R)``; the remaining ``t_l % R`` iterations land in
the chunks' slots by the binary decomposition of ``t_l % R`` (largest chunk first). The executor still runs the
PTX per lane (values are unchanged); :func:`run_loop` runs the loop to its end and then replaces what its memory
instructions counted - requests, sectors and lines (global), wavefronts (shared) - by the counts of the SASS
slots, and records how many PTX-block copies the SASS issued (``Counters.sass_copies``) for the warp-instruction
estimate. With one trip count per warp the slots are the PTX iterations and nothing changes.

Iterations are buffered R at a time: a lane active at the last iteration of a group of R is in that group's main
slots; one that stops inside the group has all its remaining iterations there, so the group's addresses are all
its chunk slots need. Not regrouped (documented in docs/semantics.md): CC 1.x transactions (sim/coalesce.py).
"""
from __future__ import annotations

import numpy as np

from perfmodel.sim import memops as M
from perfmodel.sim import warps as W

# The executor leaves a regrouped loop's global sectors and lines to the slots (counted once, from the trace): a
# group that a lane leaves recounts them anyway (False: the executor counts them too; tests/test_regroup.py).
DEFER_GLOBAL_COUNTS = True

_PB = {("global", False): "global_load_sectors", ("global", True): "global_store_sectors",
       ("shared", False): "shared_wavefronts", ("shared", True): "shared_wavefronts"}


def loop_of(st, cf, pc: int):
    """The recognised further-unrolled loop at block ``pc`` of the kernel's entry function, or None."""
    if st.depth != 0:
        return None
    program = st.launch.program
    loops = getattr(program, "sass_loops", None)
    if not loops or cf.func.name != program.entry:
        return None
    loop = loops.get(pc)
    if loop is None or loop.factor < 2 or cf.blocks[pc].ipdom != cf.blocks[pc].fall:
        return None
    return loop


def _mem_gids(cf, pc: int) -> list[int]:
    from perfmodel.kernel import _ptx_memory_key

    blk = cf.func.blocks[pc]
    return [ins.index for ins in cf.func.instrs[blk.start:blk.end] if _ptx_memory_key(ins)]


class _Slots:
    """Counts of the SASS slots of one run of the loop, fed one PTX iteration at a time."""

    def __init__(self, st, loop, gids):
        self.st = st
        self.R = loop.factor
        self.chunks = loop.chunks
        self.gids = gids
        self.shape = (st.nB, st.Tp)
        self.buf: list = []                      # (trace, full mask) of the current group's iterations
        n_slots = sum(self.chunks)
        self.chunk_mask = [np.zeros(self.shape, bool) for _ in range(n_slots)]
        self.chunk_addr: list[dict] = [{} for _ in range(n_slots)]
        self.requests = dict.fromkeys(gids, 0)
        self.units = dict.fromkeys(gids, 0)
        self.lines = dict.fromkeys(gids, 0)
        self.per_block: dict = {}
        self.copies = 0                          # PTX-block copies the SASS issued, summed over warps
        self.meta: dict = {}                     # gid -> (space, nbytes, store)

    def add(self, trace: dict, mask, counted=None, uncounted=None) -> None:
        """One PTX iteration: its address trace, its mask, what the executor counted for it (or None), and the
        global accesses whose sectors it left out, with their masks (``{gid: mask}``: counted here when the
        executor's figures are taken)."""
        full = np.ones(self.shape, bool) if mask is None else np.broadcast_to(mask, self.shape)
        for gid, (a, space, nbytes, store) in trace.items():
            self.meta[gid] = (space, nbytes, store)
        self.buf.append((trace, full, counted, uncounted or {}))
        if len(self.buf) == self.R:
            self._group(complete=True)

    def _group(self, complete: bool) -> None:
        buf, self.buf = self.buf, []
        if not buf:
            return
        end = buf[-1][1] if complete else np.zeros(self.shape, bool)
        rem = buf[0][1] & ~end
        leaving = rem.any()
        if end.any():
            warps = int(np.count_nonzero(W.warp_any(end)))
            self.copies += self.R * warps
            for trace, _m, counted, uncounted in buf:
                if not leaving and counted is not None:
                    # no lane leaves in this group: its main-loop slots are the PTX iterations the executor counted
                    self._take(counted)
                    for gid, m in uncounted.items():
                        self._global_sectors(gid, trace[gid][0], m)
                    continue
                for gid in self.gids:
                    if gid in trace:
                        self._count(gid, trace[gid][0], end, warps)
        if not leaving:
            return
        n = np.zeros(self.shape, np.int64)
        for _t, m, _c, _u in buf:
            n += m
        n = np.where(rem, n, 0)
        offset = np.zeros(self.shape, np.int64)
        slot = 0
        for size in self.chunks:
            has = rem & ((n & size) != 0)
            if has.any():
                for i in range(size):
                    lanes = self.chunk_mask[slot + i]
                    lanes |= has
                    it = offset + i               # the lane's iteration within the group for this slot
                    addrs = self.chunk_addr[slot + i]
                    for r, (trace, _m, _c, _u) in enumerate(buf):
                        sel = has & (it == r)
                        if not sel.any():
                            continue
                        for gid in self.gids:
                            if gid not in trace:
                                continue
                            dst = addrs.get(gid)
                            if dst is None:
                                dst = addrs[gid] = np.zeros(self.shape, np.int64)
                            src = np.broadcast_to(trace[gid][0], self.shape)
                            np.copyto(dst, src, where=sel, casting="unsafe")
                offset = np.where(has, offset + size, offset)
            slot += size

    def _count(self, gid: int, addr, mask: np.ndarray, warps: int) -> None:
        space, nbytes, store = self.meta[gid]
        st = self.st
        self.requests[gid] += warps
        key = _PB[(space, store)]
        if space == "global" and nbytes <= 32 and nbytes & (nbytes - 1) == 0 and st.Tp % 32 == 0:
            # only the warps with a lane in the slot: (warps, 32) sector numbers
            m = mask.reshape(-1, 32)
            sel = np.flatnonzero(m.any(axis=1))
            sec = (np.broadcast_to(np.asarray(addr, np.int64), self.shape).reshape(-1, 32)[sel]) >> 5
            s, ln = W.distinct_sectors_lines(sec, m[sel])
            self.units[gid] += int(s.sum())
            self.lines[gid] += int(ln.sum())
            per_block = np.bincount(sel // st.nw, weights=s[:, 0], minlength=st.nB).astype(np.int64)
            self.per_block[key] = self.per_block.get(key, 0) + per_block
            return
        if space == "global":
            self._global_sectors(gid, addr, mask)
            return
        wf, f = st.shared_load_wavefronts(gid, np.asarray(addr, np.int64), mask, nbytes, not store)
        self.units[gid] += wf.sum().item() * f
        self.per_block[key] = self.per_block.get(key, 0) + (wf if f == 1 else wf[0])

    def _global_sectors(self, gid: int, addr, m) -> None:
        """The sectors, lines and per-block sectors of one global access under mask ``m``, counted as the executor
        counts them (perfmodel.sim.memory ``_global``, which leaves them out here: ``uncounted``)."""
        st = self.st
        _space, nbytes, store = self.meta[gid]
        sec, lines, f = M.sectors_lines(np.asarray(addr, np.int64), m, st.nB, st.Tp, nbytes)
        self.units[gid] += int(sec.sum()) * f
        self.lines[gid] += int(lines.sum()) * f
        key = _PB[("global", store)]
        self.per_block[key] = self.per_block.get(key, 0) + (sec if f == 1 else int(sec[0]))

    def _take(self, counted) -> None:
        requests, units, lines, per_block = counted
        for gid in self.gids:
            if gid in requests:
                self.requests[gid] += requests[gid]
                self.units[gid] += units[gid]
                self.lines[gid] += lines[gid]
        for key, v in per_block.items():
            self.per_block[key] = self.per_block.get(key, 0) + v

    def finish(self) -> None:
        self._group(complete=False)
        for lanes, addrs in zip(self.chunk_mask, self.chunk_addr):
            if not lanes.any():
                continue
            warps = int(np.count_nonzero(W.warp_any(lanes)))
            self.copies += warps
            for gid in self.gids:
                if gid in addrs:
                    self._count(gid, addrs[gid], lanes, warps)


def run_loop(st, cf, fr, pc: int, m, bbw, bbt, divw, loop) -> None:
    """Run the recognised loop at ``pc`` from its first iteration until every lane has left it (the driver then
    goes on at its fall-through block under ``m``), counting as the executor does, and regroup its memory counts
    and issued copies by the SASS slots (see the module docstring)."""
    from perfmodel.sim.machine import _divergent_warps, branch_split, execute_block, fast_loops_here

    blk = cf.blocks[pc]
    fname = cf.func.name
    c = st.counters
    gids = _mem_gids(cf, pc)
    before = ({g: (c.requests[g], c.units[g], c.lines[g]) for g in gids},
              {k: c.per_block[k][st.sl].copy() for k in set(_PB.values())}, bbw[pc])
    slots = _Slots(st, loop, gids)
    fast = fast_loops_here(st)
    executed = False
    if fast:
        from perfmodel.sim.loops import fast_forward

        st.loop_resume = None
        how = fast_forward(st, cf, fr, pc, m, bbw, bbt, keep_traces=True)
        if how == "done":          # one trip count for every lane: the SASS grouping is the PTX one
            st.mask = m
            return
        if how == "resume":        # its iterations all ran under m; their traces come back
            for trace in st.loop_resume:
                slots.add(trace, m)
            executed = True
        st.loop_resume = None

    keys = sorted(set(_PB.values()))

    deferred = set(gids) if DEFER_GLOBAL_COUNTS else None

    def iteration(mask):
        st.mask = mask
        st.loop_trace = {}
        # the executor leaves the global accesses' sectors to the slots: a group a lane leaves recounts them
        st.defer_counts, st.loop_masks = deferred, ({} if deferred is not None else None)
        r0 = {g: (c.requests[g], c.units[g], c.lines[g]) for g in gids}
        p0 = {k: c.per_block[k][st.sl].copy() for k in keys}
        try:
            execute_block(st, cf, fr, pc, blk, bbw, bbt)
        finally:
            trace, st.loop_trace = st.loop_trace, None
            uncounted, st.defer_counts, st.loop_masks = st.loop_masks, None, None
        counted = ({g: c.requests[g] - r0[g][0] for g in gids}, {g: c.units[g] - r0[g][1] for g in gids},
                   {g: c.lines[g] - r0[g][2] for g in gids},
                   {k: c.per_block[k][st.sl] - p0[k] for k in keys if (c.per_block[k][st.sl] != p0[k]).any()})
        slots.add(trace, mask, counted, uncounted)
        st.mask = mask

    cur = m
    if not executed:
        iteration(cur)
    while True:                    # the driver's conditional branch, as run_function takes it
        taken, nt = branch_split(fr, blk, cur)
        if not taken.any():
            break
        if nt.any():
            divw[pc] += _divergent_warps(st, taken, nt)
            cur = taken
        iteration(cur)
    slots.finish()
    for g in gids:
        r0, u0, l0 = before[0][g]
        if g in slots.meta:
            c.requests[g] = r0 + slots.requests[g]
            c.units[g] = u0 + slots.units[g]
            c.lines[g] = l0 + slots.lines[g]
    for k, v in before[1].items():
        if k in slots.per_block:
            c.per_block[k][st.sl] = v + slots.per_block[k]
    delta = slots.copies - (bbw[pc] - before[2])
    if delta:
        c.sass_copies[(fname, pc)] = c.sass_copies.get((fname, pc), 0) + delta
    st.mask = m
