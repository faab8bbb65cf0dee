"""The executor: one batch of blocks runs as a single wide SIMT "warp" over numpy lanes.

Control flow follows a reconvergence stack (as in GPGPU-Sim): a conditional branch whose lanes disagree pushes
both paths with the branch's immediate post-dominator as their reconvergence point; lanes that return are removed
from every path. Every executed basic block adds its lanes and warps to per-block counters, so instruction counts
cost nothing per instruction; memory instructions count requests, sectors, wavefronts and lines as they run.
"""
from __future__ import annotations

import time

import numpy as np

from perfmodel.errors import Location, LockstepStuck, RunawayKernel, SimulationError
from perfmodel.sim import regroup
from perfmodel.sim.memory import MemoryMixin
from perfmodel.sim.values import Frame, as_type


_TIMERS = ("%clock", "%globaltimer")      # special registers that change while a kernel runs


class BarrierWait(Exception):
    """A path stopped at a bar.sync that threads of its sibling path have yet to reach (State.barrier)."""


class Counters:
    """Totals over every simulated block."""

    PER_INSTRUCTION = ("threads", "requests", "units", "lines", "bytes", "conflicts", "block_execs")

    def __init__(self, n_instr: int, n_blocks: int):
        self.threads = [0] * n_instr      # lanes that executed each memory/guarded instruction
        self.requests = [0] * n_instr     # warp-level requests (memory instructions)
        self.units = [0] * n_instr        # sectors (global), wavefronts (shared, constant)
        self.lines = [0] * n_instr        # distinct 128-byte lines (global)
        self.bytes = [0] * n_instr
        self.conflicts = [0] * n_instr    # atomics: largest same-address lane count per warp, summed
        self.block_execs = [0] * n_instr  # barriers: (block, barrier) pairs
        self.array_threads: dict = {}     # (instruction, global array) -> lanes that accessed it
        self.atomic_ops: dict = {}        # atomic operations and per-line counts (atomic_count.py)
        self.first_touch: dict = {}       # global load -> sectors no earlier load touched (first_touch runs)
        self.cc1: dict = {}               # global instruction -> CC 1.0 / 1.2 transactions and bytes (coalesce.py)
        self.generic_split: dict = {}     # generic instruction -> {space: [threads, requests, units, lines, bytes]}
        self.sass_copies: dict = {}       # (function, block) -> PTX-block copies the SASS issued minus the warps that
                                          # executed the block (further-unrolled loops, sim/regroup.py)
        self.bb_warps: dict = {}          # (function, block) -> warps that executed it
        self.bb_threads: dict = {}
        self.div_warps: dict = {}         # (function, block) -> divergent warps at its branch
        # packed: lanes of packed-half instructions (f16x2, bf16x2), whose two results the kinds count
        self.fp = dict(add=0, mul=0, fma=0, div=0, special=0, packed=0)
        self.fp64 = 0
        self.fp64_flops = 0
        self.flops = 0
        self.int_ops = 0
        self.per_block = {k: np.zeros(n_blocks, np.int64) for k in (
            "flops", "global_loads", "global_stores", "global_load_sectors", "global_store_sectors",
            "idle_threads", "idle_warps", "threads")}
        # a shared load merged into a wider SASS load counts a share of its wavefronts (memory.py)
        self.per_block["shared_wavefronts"] = np.zeros(n_blocks)

    def grow(self, n_instr: int):
        for name in self.PER_INSTRUCTION:
            lst = getattr(self, name)
            if len(lst) < n_instr:
                lst.extend([0] * (n_instr - len(lst)))


class State(MemoryMixin):
    """One batch of blocks executing together."""

    def __init__(self, launch, builder, counters: Counters, block_ids: np.ndarray, batch_offset: int):
        self.launch = launch
        self.builder = builder
        self.counters = counters
        self.nB = nB = len(block_ids)
        self.T = launch.T
        self.Tp = Tp = launch.Tp
        self.nw = Tp // 32
        self.block_ids = block_ids
        self.sl = slice(batch_offset, batch_offset + nB)
        self.heap = launch.heap
        self.const = launch.const
        self.shared = launch.new_shared(nB)
        self.local = launch.new_local(nB)
        self.mask = launch.initial_mask       # None: every lane active
        self.exited = None if launch.initial_mask is None else ~np.broadcast_to(launch.initial_mask, (nB, Tp))
        self._stats_key = None
        self._stats = None
        self.worked = None
        self.worked_full = False
        self.steps = 0
        self.writes = 0           # stores and atomics that changed memory: a loop that made none made no progress
        self.stuck_next = STUCK_FIRST_CHECK     # steps at which the next no-progress check runs (_check_stuck)
        self.stuck_seen: dict = {}
        self.max_steps = launch.max_steps
        self.deadline = launch.deadline
        self.depth = 0
        self._special: dict = {}
        self.probe = None       # perfmodel.sim.invariance.Probe on the pilot blocks of a replicated run
        self.replica = None     # perfmodel.sim.replicate._Replica on a class representative's run
        self.fast_loops = launch.fast_loops   # count long uniform loops from a few iterations (sim.loops)
        self.loop_trace = None  # gid -> address array, while perfmodel.sim.loops traces an iteration
        self.loop_resume = None  # the traces of the iterations a fast-forward attempt ran before giving up
        self.defer_counts = None  # global accesses whose sectors a regrouped loop counts itself (sim.regroup) ...
        self.loop_masks = None    # ... from their addresses and these masks: gid -> the access's mask
        self.async_copies = None  # cp.async copies issued and not yet completed (perfmodel.sim.async_copy)
        self.mbarriers = None     # mbarrier objects of the batch (perfmodel.sim.mbarrier)
        self.mbar_blocked = None  # the mbarrier wait (instruction id) that no active lane passed, if one just did
        # (nB, Tp) threads whose path reached a block that only returns (they leave the kernel without running
        # anything else) while the others go on: a barrier counts them as arrived, as the GPU counts exited threads
        self.exiting = None
        self.bar_waiting = None   # (nB, Tp) threads stopped at a bar.sync until the other branch's threads arrive
        self.bar_wait_gid = -1    # that bar.sync
        self.can_suspend = False  # run_function's path has a sibling path to run while this one waits
        self.mbar_epoch = 0       # mbarrier phases completed so far
        # identity memos of lane-only (one-row) addresses, for this launch only: register offset -> address
        # (perfmodel.sim.memops.address_getter) and shared access -> its checked words and wavefronts (memory.py)
        self.addr_memo: dict = {}
        self.shared_memo: dict = {}
        facts = getattr(launch.program, "sass_facts", None)
        self.shared_widths: dict = facts().shared_widths if facts is not None else {}
        gx, gy, _gz = launch.grid
        ids = block_ids.astype(np.int64)
        self._ctaid = (ids % gx, (ids // gx) % gy, ids // (gx * gy))

    # ---- special registers ---------------------------------------------------------------------------------
    def special(self, name: str) -> np.ndarray:
        v = self._special.get(name)
        if v is None:
            v = self._make_special(name)
            if not name.startswith(_TIMERS):     # the clocks move on: read afresh each time
                self._special[name] = v
        return v

    def _make_special(self, name: str) -> np.ndarray:
        L = self.launch
        bx, by, bz = L.block
        lane = np.arange(self.Tp, dtype=np.int64).reshape(1, -1)
        base, _, comp = name[1:].partition(".")
        axis = "xyz".index(comp) if comp else 0
        u32 = np.uint32
        if base == "tid":
            v = (lane % bx, (lane // bx) % by, lane // (bx * by))[axis]
        elif base == "ntid":
            v = np.full((1, 1), L.block[axis])
        elif base == "ctaid":
            v = self._ctaid[axis].reshape(-1, 1)
        elif base == "nctaid":
            v = np.full((1, 1), L.grid[axis])
        elif base == "laneid":
            v = lane % 32
        elif base == "warpid":
            v = lane // 32
        elif base == "nwarpid":
            v = np.full((1, 1), self.nw)
        elif base.startswith("lanemask_"):
            ln = lane % 32
            kind = base[9:]
            bit = np.left_shift(np.int64(1), ln)
            v = {"eq": bit, "lt": bit - 1, "le": (bit << 1) - 1, "gt": (0xFFFFFFFF ^ ((bit << 1) - 1)),
                 "ge": 0xFFFFFFFF ^ (bit - 1)}[kind] & 0xFFFFFFFF
        elif base in ("clock", "clock64", "globaltimer", "globaltimer_lo", "clock_hi"):
            # not the GPU's cycles: 4 per basic block the batch has executed and 1 per reading, so that every
            # reading is later than the one before (two in one basic block too: stop - start > 0) and a loop that
            # waits for the clock ends (docs/semantics.md)
            self._clock_reads = getattr(self, "_clock_reads", 0) + 1
            return np.full((1, 1), self.steps * 4 + self._clock_reads, np.uint64 if base != "clock" else np.uint32)
        elif base in ("smid", "gridid", "is_explicit_cluster", "cluster_ctarank"):
            v = np.zeros((1, 1))
        elif base in ("nsmid",):
            v = np.full((1, 1), 132)
        elif base in ("dynamic_smem_size",):
            v = np.full((1, 1), L.dynamic_shared_bytes)
        elif base in ("total_smem_size", "aggr_smem_size"):
            v = np.full((1, 1), L.shared_bytes)
        elif base.startswith("reserved_smem_offset_") and L.reserved_shared is not None:
            # the reserved region's bounds and size; _0 and _1 split it in two halves (NVIDIA does not publish its
            # layout; cooperative groups need 288 bytes from _1, cooperative_groups/details/memory.h)
            begin, end = L.reserved_shared
            half = (end - begin) // 2
            v = np.full((1, 1), {"begin": begin, "end": end, "cap": end - begin, "0": begin,
                                 "1": begin + half}[base[len("reserved_smem_offset_"):]])
        elif base in ("nclusterid", "cluster_nctaid", "cluster_nctarank", "clusterid", "cluster_ctaid"):
            v = np.full((1, 1), 1 if base.startswith("n") or "nct" in base else 0)
        elif base in ("envreg1", "envreg2") and L.grid_workspace is not None:
            # the grid-sync workspace pointer of a cooperative launch: high word in envreg1, low in envreg2
            v = np.full((1, 1), (L.grid_workspace >> 32) if base == "envreg1" else L.grid_workspace & 0xFFFFFFFF)
        else:
            raise SimulationError(f"special register {name} is not supported")
        return np.asarray(v).astype(u32 if base not in ("clock64", "globaltimer") else np.uint64).reshape(
            np.asarray(v).shape if np.asarray(v).ndim == 2 else (1, 1))

    # ---- masks and their counts -------------------------------------------------------------------------------
    def mask_full(self) -> np.ndarray:
        return np.ones((1, self.Tp), bool) if self.mask is None else self.mask

    def stats(self):
        """(active lanes, active warps, lanes per block or None, warps per block or None) of the mask."""
        m = self.mask
        if m is self._stats_key and self._stats is not None:
            return self._stats
        if m is None:
            st = (self.nB * self.T, self.nB * self.launch.nw_real, None, None)
        else:
            rows = m.shape[0]
            m2 = np.broadcast_to(m, (rows, self.Tp))
            per_row = np.count_nonzero(m2, axis=1)
            warps_row = np.count_nonzero(m2.reshape(rows, self.nw, 32).any(axis=2), axis=1)
            f = self.nB if rows == 1 else 1
            n = int(per_row.sum()) * f
            nwarps = int(warps_row.sum()) * f
            if f > 1:
                per_row = np.broadcast_to(per_row, (self.nB,))
                warps_row = np.broadcast_to(warps_row, (self.nB,))
            st = (n, nwarps, per_row, warps_row)
        self._stats_key = m
        self._stats = st
        return st

    def mark_worked(self):
        m = self.mask
        if m is None:
            self.worked_full = True
        elif not self.worked_full:
            full = np.broadcast_to(m, (self.nB, self.Tp))
            self.worked = full.copy() if self.worked is None else (self.worked | full)

    def count_guarded_flops(self, m, kind, flops, ops, is64):
        rows = m.shape[0]
        per_row = np.count_nonzero(np.broadcast_to(m, (rows, self.Tp)), axis=1)
        n = int(per_row.sum()) * (self.nB if rows == 1 else 1)
        c = self.counters
        c.fp[kind] += n * ops
        if ops == 2:
            c.fp["packed"] += n
        c.flops += n * flops
        if is64:
            c.fp64 += n * ops
            c.fp64_flops += n * flops
        pb = c.per_block["flops"][self.sl]
        pb += per_row * flops if rows == self.nB else int(per_row.sum()) * flops
        self.mark_worked()

    # ---- faults ---------------------------------------------------------------------------------------------
    def first_lane(self, bad: np.ndarray):
        bad = np.broadcast_to(bad, (self.nB, self.Tp))
        r, lane = np.unravel_index(int(np.argmax(bad)), bad.shape)
        bx, by, _bz = self.launch.block
        thread = (lane % bx, (lane // bx) % by, lane // (bx * by))
        block = tuple(int(a[r]) for a in self._ctaid)
        return (int(thread[0]), int(thread[1]), int(thread[2])), block

    def fault_where(self, bad, message: str, gid: int | None = None, loc: Location | None = None):
        if self.mask is not None:
            bad = bad & self.mask
        thread, block = self.first_lane(bad)
        if loc is None and gid is not None:
            loc = self.builder._location(self.builder.instrs[gid])
        where = f"{loc}: " if loc else ""
        if gid is not None and (loc is None or not loc.line):
            # .loc line 0: code the compiler moved (hoisted out of a loop, merged) is tied to no source line
            text = " ".join(self.builder.instrs[gid].text.split())
            message += (f", in `{text}`, which the compiler tied to no source line "
                        "(code it moved, e.g. out of a loop)")
        raise SimulationError(f"{where}{message} (thread {thread}, block {block})", location=loc, thread=thread,
                              block=block)

    # ---- barriers -----------------------------------------------------------------------------------------
    def barrier(self, gid, check=True):
        m = self.mask
        c = self.counters
        st = self.stats()
        if st[0] == 0:
            return
        c.requests[gid] += st[1]
        if m is None:
            c.block_execs[gid] += self.nB
            return
        mb = np.broadcast_to(m, (self.nB, self.Tp))
        blocks_active = mb.any(axis=1)
        waiting = self.bar_waiting
        if waiting is not None and check:
            # the threads of another branch wait at a bar.sync: this one completes it if every live thread is
            # then there (the hardware counts arrivals at barrier 0, from whichever bar.sync instruction)
            arrived = waiting | mb
            live = self._live()
            if not (live & ~arrived & arrived.any(axis=1)[:, None]).any():
                self._note_early_exit(arrived, gid)
                self.bar_waiting = None
                return
            mb = arrived
            blocks_active = mb.any(axis=1)
        else:
            c.block_execs[gid] += int(blocks_active.sum())
        if not check:
            return
        live = self._live()
        missing = live & ~mb & blocks_active[:, None]
        if not missing.any():
            self._note_early_exit(mb, gid)
        if missing.any() and self.can_suspend:
            # a branch of the block reached a barrier the other branch has yet to reach (warp-specialised code:
            # each half of the block syncs in its own branch): wait here, run the other branch (run_function)
            self.bar_waiting = mb.copy()
            self.bar_wait_gid = gid
            raise BarrierWait
        if missing.any():
            self.bar_waiting, self.bar_wait_gid = mb, gid
            self.barrier_divergence()

    def _live(self) -> np.ndarray:
        """Threads a barrier waits for: those that have not left the kernel and are not on their way out."""
        live = np.ones((self.nB, self.Tp), bool) if self.exited is None else ~self.exited
        return live if self.exiting is None else live & ~self.exiting

    def _note_early_exit(self, arrived, gid) -> None:
        """Remember the first barrier that completed with threads of its blocks on their way out (for the note)."""
        if self.exiting is not None and self.launch.early_exit_barrier is None and \
                (self.exiting & ~arrived & arrived.any(axis=1)[:, None]).any():
            self.launch.early_exit_barrier = gid

    def barrier_divergence(self):
        """The threads of ``bar_waiting`` reached barrier ``bar_wait_gid`` and the others of their block never do."""
        mb, gid = self.bar_waiting, self.bar_wait_gid
        live = self._live()
        missing = live & ~mb & mb.any(axis=1)[:, None]
        thread, block = self.first_lane(missing if missing.any() else mb)
        ins = self.builder.instrs[gid]
        loc = self.builder._location(ins)
        called = ""
        if self.depth > 0:
            called = ("; this barrier is inside a called (__noinline__) function, and perfmodel pairs the barriers "
                      "of a block's two branches only in the kernel's own code, not across a call, even where the "
                      "other branch syncs as often (a GPU since Volta would complete them)")
        raise SimulationError(
            f"{loc}: barrier divergence: __syncthreads() (bar.sync) reached by only some threads of block "
            f"{block}; thread {thread} of that block takes another path (a barrier inside a condition that "
            f"is not uniform across the block){called}", location=loc, thread=thread, block=block)

    # ---- parameters and calls -----------------------------------------------------------------------------
    def param_read(self, fr, name, off, dt):
        store = fr.params.get(name)
        if store is not None:
            v = store.get(off)
            if v is None:
                raise SimulationError(f"ld.param [{name}+{off}]: nothing was stored there")
            return as_type(v, dt)
        return self.launch.kernel_param(name, off, dt)

    def param_write(self, fr, name, off, v):
        store = fr.params.setdefault(name, {})
        old = store.get(off)
        if self.mask is not None and old is not None:
            if old.dtype != v.dtype:
                old = as_type(old, v.dtype)
            v = np.where(self.mask, v, old)
        store[off] = v

    def call(self, callee, fr, arg_names, ret_names):
        if self.depth > 64:
            raise SimulationError(f"call depth over 64 in {callee.func.name}: recursion is not supported")
        nfr = Frame(callee.nregs)
        for p, a in zip(callee.param_names, arg_names):
            nfr.params[p] = fr.params.setdefault(a, {})
        for p, r in zip(callee.ret_names, ret_names):
            nfr.params[p] = fr.params.setdefault(r, {})
        saved = self.mask
        self.depth += 1
        try:
            run_function(self, callee, nfr, saved)
        finally:
            self.depth -= 1
            self.mask = saved
            self._stats_key = None


# ---- the SIMT driver ---------------------------------------------------------------------------------------

def _and_not(m, done):
    if done is None:
        return m
    if m is None:
        return ~done
    return m & ~done


def resume_block(st: State, fr: Frame, blk, start: int) -> int | None:
    """Run the instructions of ``blk`` from ``start`` (a path that stopped at a barrier goes on after it); the
    index to resume from if it stops at a barrier again, else None."""
    body = blk.body
    for k in range(start, len(body)):
        try:
            body[k](st, fr)
        except BarrierWait:
            return k + 1
    return None


def execute_block(st: State, cf, fr: Frame, pc: int, blk, bbw, bbt) -> None:
    """Count one execution of basic block ``pc`` under ``st.mask`` (lanes and warps once, every instruction of
    it) and run its instructions."""
    c = st.counters
    s = st.stats()
    n, nw = s[0], s[1]
    bbw[pc] += nw
    bbt[pc] += n
    if blk.flop_total:
        for k, v in blk.flops.items():
            c.fp[k] += n * v
        c.flops += n * blk.flop_total
        c.fp64 += n * blk.fp64
        c.fp64_flops += n * blk.fp64_flops
        c.per_block["flops"][st.sl] += (s[2] * blk.flop_total) if s[2] is not None else (st.T * blk.flop_total)
    if blk.int_ops:
        c.int_ops += n * blk.int_ops
    if blk.works:
        st.mark_worked()
    st.steps += 1
    # the clock is read every 64 basic blocks (a read costs ~0.1 us, a block some us; a block of a wide batch
    # with atomics can take ms, so 1,024 of them overran a --timeout by seconds)
    if st.steps > st.max_steps or (st.steps & 63 == 0 and time.perf_counter() > st.deadline):
        _runaway(st, cf, pc)
    if st.steps >= st.stuck_next:
        _check_stuck(st, cf, fr, pc)
    if st.can_suspend:
        return resume_block(st, fr, blk, 0)
    for fn in blk.body:
        fn(st, fr)
    return None


def fast_loops_here(st: State) -> bool:
    """Whether this run may count a long uniform loop from a few iterations (perfmodel.sim.loops): not on the
    pilot blocks of a replicated run (the probe checks every access); on a class representative only when its
    outputs are not written back (a replicated run's outputs are checked on its representatives) and no first
    touches are counted (those of the iterations not executed would go to the representative only)."""
    L = st.launch
    return st.fast_loops and st.probe is None and (st.replica is None or not (L.keep_outputs or L.count_first_touch))


def run_function(st: State, cf, fr: Frame, mask) -> None:
    blocks = cf.blocks
    c = st.counters
    fname = cf.func.name
    bbw = c.bb_warps.setdefault(fname, [0] * len(blocks))
    bbt = c.bb_threads.setdefault(fname, [0] * len(blocks))
    divw = c.div_warps.setdefault(fname, [0] * len(blocks))
    stack = [[0, -1, mask]]
    is_kernel = st.depth == 0
    switched_at = None
    while stack:
        if st.mbar_blocked is not None:
            switched_at = _switch_path(st, stack, switched_at, st.mbar_blocked)
            st.mbar_blocked = None
        top = stack[-1]
        pc, rpc, m = top[0], top[1], top[2]
        if pc == rpc or pc < 0:
            if is_kernel and 0 <= pc < len(blocks) and blocks[pc].term == "ret" and not blocks[pc].body:
                # these threads wait at a block that only returns: they leave the kernel without running anything
                # else (an early `return` in front of a __syncthreads(): NVVM sends it to the kernel's one ret block)
                full = np.broadcast_to(np.ones((1, 1), bool) if m is None else m, (st.nB, st.Tp))
                st.exiting = full.copy() if st.exiting is None else (st.exiting | full)
            stack.pop()
            continue
        done = st.exited if is_kernel else _or(st.exited, fr.done)
        if done is not None:
            m = _and_not(m, done)
            if not m.any():
                stack.pop()
                continue
            top[2] = m
        st.mask = m
        blk = blocks[pc]
        if len(top) > 3:
            # a path that stopped at a barrier: its sibling has run; go on after the barrier
            if st.bar_waiting is not None and (st.bar_waiting & np.broadcast_to(
                    np.ones((1, 1), bool) if m is None else m, st.bar_waiting.shape)).any():
                waiting = st.bar_waiting
                if (st._live() & ~waiting & waiting.any(axis=1)[:, None]).any():
                    st.barrier_divergence()       # its barrier never completed: the sibling went past without it
                # the sibling left the kernel instead (a persistent-threads loop's `return` once the work runs out,
                # nvdiffrast's antialias kernels): threads that exited count as arrived, and the barrier completes
                st._note_early_exit(waiting, st.bar_wait_gid)
                st.bar_waiting = None
            resume_at = top.pop()
            if _suspendable(st, stack, top, is_kernel, lambda: resume_block(st, fr, blk, resume_at)):
                continue
            st.mask = m
            _advance(st, fr, blk, top, stack, m, is_kernel, divw, pc, rpc)
            continue
        loop = regroup.loop_of(st, cf, pc) if blk.term == "cbra" and blk.target == pc else None
        if loop is not None:
            # a loop ptxas unrolled further: run it whole and count it as the SASS issues it (sim/regroup.py)
            regroup.run_loop(st, cf, fr, pc, m, bbw, bbt, divw, loop)
            st.mask = m
            top[0] = blk.fall
            continue
        if blk.term == "cbra" and blk.target == pc and fast_loops_here(st):
            from perfmodel.sim.loops import fast_forward

            how = fast_forward(st, cf, fr, pc, m, bbw, bbt)
            if how == "done":
                st.mask = m
                top[0] = blk.fall
                continue
            if how != "resume":
                execute_block(st, cf, fr, pc, blk, bbw, bbt)
        elif _suspendable(st, stack, top, is_kernel, lambda: execute_block(st, cf, fr, pc, blk, bbw, bbt)):
            continue
        st.mask = m
        _advance(st, fr, blk, top, stack, m, is_kernel, divw, pc, rpc)
    st.mask = mask


def _has_sibling(stack) -> bool:
    """The running path (the stack's top) has a sibling below it: the other side of the same branch, which
    reconverges at the same point and can run while this one waits."""
    return len(stack) >= 2 and stack[-2][1] == stack[-1][1]


def _suspendable(st, stack, top, is_kernel, run) -> bool:
    """``run()`` a block's body, letting a bar.sync stop the path where it has a sibling path (the other side of
    the same branch) to run meanwhile: True when it stopped (the path, with its resume index, then waits under its
    sibling)."""
    st.can_suspend = is_kernel and _has_sibling(stack)
    try:
        stopped = run()
    finally:
        st.can_suspend = False
    if stopped is None:
        return False
    top.append(stopped)
    stack[-1], stack[-2] = stack[-2], stack[-1]
    return True


def _advance(st, fr, blk, top, stack, m, is_kernel, divw, pc, rpc) -> None:
    """The block's terminator: the path's next block, a return, or a divergent branch's two paths."""
    term = blk.term
    if term == "fall":
        top[0] = blk.fall
    elif term == "bra":
        top[0] = blk.target
    elif term == "ret":
        full = np.broadcast_to(np.ones((1, 1), bool) if m is None else m, (st.nB, st.Tp))
        if is_kernel:
            st.exited = full.copy() if st.exited is None else (st.exited | full)
        else:
            fr.done = full.copy() if fr.done is None else (fr.done | full)
        stack.pop()
    else:   # conditional branch
        taken, nt = branch_split(fr, blk, m)
        if not taken.any():
            top[0] = blk.fall
            return
        if not nt.any():
            top[0] = blk.target
            return
        divw[pc] += _divergent_warps(st, taken, nt)
        rc = blk.ipdom
        if rc == rpc:
            stack.pop()
        else:
            top[0] = rc
        # full-shape masks from here on (both paths are real subsets)
        stack.append([blk.fall, rc, nt])
        stack.append([blk.target, rc, taken])


def _switch_path(st, stack, switched_at, gid):
    """Every thread of the running path failed an mbarrier wait (perfmodel/sim/mbarrier.py): run its sibling path
    (the one below it with the same reconvergence point) first, and come back to this one after. Two switches with no
    barrier phase completed between them are a deadlock."""
    if not _has_sibling(stack):
        if len(stack) == 1 and st.depth == 0:    # nothing else of the kernel can run: no thread will arrive
            switched_at = st.mbar_epoch
        else:
            return switched_at
    if switched_at == st.mbar_epoch:
        m = stack[-1][2]
        st.fault_where(np.broadcast_to(np.ones((1, 1), bool) if m is None else m, (st.nB, st.Tp)),
                       "deadlock: these threads wait on an mbarrier phase that no thread can complete any more (every "
                       "thread that could run waits too, and no barrier phase completed since)", gid)
    stack[-1], stack[-2] = stack[-2], stack[-1]
    return st.mbar_epoch


def _or(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a | b


def branch_split(fr, blk, m):
    """(taken, not taken): the lanes of mask ``m`` (None: all) on each side of the block's conditional branch."""
    p = fr.r[blk.guard_slot]
    if p is None:
        p = np.zeros((1, 1), bool)
    if blk.guard_neg:
        p = ~p
    return (p, ~p) if m is None else (m & p, m & ~p)


def _divergent_warps(st, taken, nt) -> int:
    rows = max(taken.shape[0], nt.shape[0])
    t = np.broadcast_to(taken, (rows, st.Tp)).reshape(rows, st.nw, 32).any(axis=2)
    f = np.broadcast_to(nt, (rows, st.Tp)).reshape(rows, st.nw, 32).any(axis=2)
    return int(np.count_nonzero(t & f)) * (st.nB if rows == 1 else 1)


STUCK_FIRST_CHECK = 1 << 10    # basic blocks of a batch before the first no-progress check
STUCK_EVERY = 1 << 10          # and between checks


def _check_stuck(st: State, cf, fr: Frame, pc: int) -> None:
    """A batch back at the same basic block of the same function activation with the same active lanes, the
    same registers and no memory changed since the last time it was seen there runs the same steps again, for
    ever (the executor is deterministic). With several blocks in the batch that is the lockstep run's doing - a
    thread spinning on a lock that a thread of another block holds while it waits where the batch's threads
    reconverge - and the batch is run again one block at a time (LockstepStuck); a single block is a runaway."""
    import hashlib

    st.stuck_next = st.steps + STUCK_EVERY
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((st.mbar_epoch, st.depth)).encode())
    for part in (st.mask, st.exited, st.bar_waiting, fr.done, fr.carry, *fr.r):
        if part is None:
            h.update(b"-")
        elif isinstance(part, np.ndarray):
            h.update(str(part.shape).encode() + part.dtype.str.encode())
            h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(repr(part).encode())
    h.update(str(st.writes).encode())
    key = (id(fr), pc)
    digest = h.digest()
    if st.stuck_seen.get(key) != digest:
        if len(st.stuck_seen) > 256:
            st.stuck_seen.clear()
        st.stuck_seen[key] = digest
        return
    blk = cf.func.blocks[pc]
    loc = st.builder._location(cf.func.instrs[blk.start])
    thread, block = st.first_lane(st.mask_full())
    if st.nB > 1:
        raise LockstepStuck(f"{loc}: threads of a batch of {st.nB} blocks spin here with nothing changing "
                            f"(thread {thread}, block {block})", location=loc, thread=thread, block=block)
    raise RunawayKernel(
        f"{loc}: runaway kernel: thread {thread} of block {block} loops at this line with nothing changing - the "
        "same registers, no store or atomic changing memory - and would for ever. If it spins on a lock or flag "
        "that another thread of its block sets after this loop, the simulator runs a block's threads in lockstep, "
        "as GPUs before Volta did (whose threads deadlock there too); a Volta or later GPU schedules them "
        "independently and would go on", location=loc, thread=thread, block=block)


def _runaway(st: State, cf, pc: int):
    blk = cf.func.blocks[pc]
    ins = cf.func.instrs[blk.start]
    loc = st.builder._location(ins)
    thread, block = st.first_lane(st.mask_full())
    if st.steps > st.max_steps:
        raise RunawayKernel(f"{loc}: runaway kernel: more than {st.max_steps:,} basic-block executions in one batch "
                            f"of blocks, still looping at this line (thread {thread}, block {block}); raise "
                            "--max-steps / --timeout if the loop is meant to run that long",
                            location=loc, thread=thread, block=block)
    raise RunawayKernel(f"{loc}: the simulation ran past its time limit (--timeout), here at this line (thread "
                        f"{thread}, block {block}), not done; raise --timeout, or --sample fewer blocks",
                        location=loc, thread=thread, block=block)

