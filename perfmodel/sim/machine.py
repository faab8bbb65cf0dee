"""The executor: one batch of blocks runs as a single wide SIMT "warp" over numpy lanes.

Control flow follows a reconvergence stack (as in GPGPU-Sim): a conditional branch whose lanes disagree pushes
both paths with the branch's immediate post-dominator as their reconvergence point; lanes that return are removed
from every path. Every executed basic block adds its lanes and warps to per-block counters, so instruction counts
cost nothing per instruction; memory instructions count requests, sectors, wavefronts and lines as they run.
"""
from __future__ import annotations

import time

import numpy as np

from perfmodel.errors import Location, SimulationError
from perfmodel.sim import memops as M
from perfmodel.sim.space import CONST_BASE, GLOBAL_BASE, LOCAL_BASE, SHARED_BASE, WINDOW
from perfmodel.sim.values import DT, Frame, as_type

SPACE_OF_WINDOW = ((LOCAL_BASE, "local"), (SHARED_BASE, "shared"), (CONST_BASE, "const"))


class Counters:
    """Totals over every simulated block."""

    def __init__(self, n_instr: int, n_blocks: int):
        self.threads = [0] * n_instr      # lanes that executed each memory/guarded instruction
        self.requests = [0] * n_instr     # warp-level requests (memory instructions)
        self.units = [0] * n_instr        # sectors (global), wavefronts (shared, constant)
        self.lines = [0] * n_instr        # distinct 128-byte lines (global)
        self.bytes = [0] * n_instr
        self.conflicts = [0] * n_instr    # atomics: largest same-address lane count per warp, summed
        self.block_execs = [0] * n_instr  # barriers: (block, barrier) pairs
        self.array_threads: dict = {}     # (instruction, global array) -> lanes that accessed it
        self.generic_split: dict = {}     # generic instruction -> {space: [threads, requests, units, lines, bytes]}
        self.bb_warps: dict = {}          # (function, block) -> warps that executed it
        self.bb_threads: dict = {}
        self.div_warps: dict = {}         # (function, block) -> divergent warps at its branch
        self.fp = dict(add=0, mul=0, fma=0, div=0, special=0)
        self.fp64 = 0
        self.flops = 0
        self.int_ops = 0
        self.per_block = {k: np.zeros(n_blocks, np.int64) for k in (
            "flops", "global_loads", "global_stores", "global_load_sectors", "global_store_sectors",
            "shared_wavefronts", "idle_threads", "threads")}

    def grow(self, n_instr: int):
        for name in ("threads", "requests", "units", "lines", "bytes", "conflicts", "block_execs"):
            lst = getattr(self, name)
            if len(lst) < n_instr:
                lst.extend([0] * (n_instr - len(lst)))


class State:
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
        self.max_steps = launch.max_steps
        self.deadline = launch.deadline
        self.depth = 0
        self._special: dict = {}
        gx, gy, _gz = launch.grid
        ids = block_ids.astype(np.int64)
        self._ctaid = (ids % gx, (ids // gx) % gy, ids // (gx * gy))

    # ---- special registers ---------------------------------------------------------------------------------
    def special(self, name: str) -> np.ndarray:
        v = self._special.get(name)
        if v is None:
            v = self._special[name] = self._make_special(name)
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
            return np.full((1, 1), self.steps * 4, np.uint64 if base != "clock" else np.uint32)
        elif base in ("smid", "gridid", "is_explicit_cluster", "cluster_ctarank"):
            v = np.zeros((1, 1))
        elif base in ("nsmid",):
            v = np.full((1, 1), 132)
        elif base in ("dynamic_smem_size",):
            v = np.full((1, 1), L.dynamic_shared_bytes)
        elif base in ("total_smem_size", "aggr_smem_size"):
            v = np.full((1, 1), L.shared_bytes)
        elif base in ("nclusterid", "cluster_nctaid", "cluster_nctarank", "clusterid", "cluster_ctaid"):
            v = np.full((1, 1), 1 if base.startswith("n") or "nct" in base else 0)
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
        c.flops += n * flops
        if is64:
            c.fp64 += n * ops
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
        raise SimulationError(f"{where}{message} (thread {thread}, block {block})", location=loc, thread=thread,
                              block=block)

    # ---- memory ---------------------------------------------------------------------------------------------
    def _active_any(self, m):
        return True if m is None else bool(m.any())

    def mem_access(self, gid, space, a, size, vec, dt, values):
        if space == "generic":
            return self._generic(gid, a, size, vec, dt, values)
        m = self.mask
        nbytes = size * vec
        c = self.counters
        st = self.stats()
        n, nw = st[0], st[1]
        if n == 0:
            return [np.zeros((1, 1), dt)] * vec if values is None else None
        c.threads[gid] += n
        c.requests[gid] += nw
        c.bytes[gid] += n * nbytes
        self.mark_worked()
        if space == "global":
            return self._global(gid, a - GLOBAL_BASE, size, vec, dt, values, nbytes, st)
        if space == "shared":
            return self._shared(gid, a, size, vec, dt, values, nbytes)
        if space == "local":
            return self._local(gid, a, size, vec, dt, values)
        if space == "const":
            return self._const(gid, a, size, vec, dt, values)
        raise SimulationError(f"memory space {space} is not supported")

    def _check(self, gid, off, lo, hi, what):
        """Raise if an active lane's [off, off+size) leaves [lo, hi); return indices safe for every lane."""
        m = self.mask
        if off.size == 1:
            v = int(off.reshape(-1)[0])
            if not (lo <= v < hi):
                self.fault_where(self.mask_full(), f"out-of-bounds {what} at offset {v} (valid: {lo}..{hi - 1})",
                                 gid)
            return off
        bad = (off < lo) | (off >= hi)
        if not bad.any():
            return off
        badm = bad if m is None else (bad & m)
        if badm.any():
            v = int(np.broadcast_to(off, badm.shape)[badm].reshape(-1)[0])
            self.fault_where(badm, f"out-of-bounds {what} at offset {v} (valid: {lo}..{hi - 1})", gid)
        return np.where(bad, lo, off)

    def _global(self, gid, off, size, vec, dt, values, nbytes, st):
        heap = self.heap
        m = self.mask
        # bounds: the fast path is every active lane inside one allocation
        if off.size == 1:
            sel = off.reshape(-1)
        else:
            sel = off if m is None else np.broadcast_to(off, np.broadcast_shapes(off.shape, m.shape))[
                np.broadcast_to(m, np.broadcast_shapes(off.shape, m.shape))]
        lo_v, hi_v = int(sel.min()), int(sel.max())
        k = heap.owner(lo_v)
        if not (lo_v >= heap.offsets[k] and hi_v + nbytes <= heap.offsets[k] + heap.sizes[k]):
            ok = heap.valid(np.broadcast_to(off, np.broadcast_shapes(off.shape, (1, 1))), nbytes)
            badm = ~ok if m is None else (~ok & m)
            if badm.any():
                v = int(np.broadcast_to(off, badm.shape)[badm].reshape(-1)[0])
                j = heap.owner(v)
                elem = (v - heap.offsets[j]) // size
                n_el = heap.sizes[j] // size
                if (v - heap.offsets[j]) % size:
                    msg = f"misaligned global access to {heap.names[j]} (byte {v - heap.offsets[j]})"
                else:
                    msg = (f"out-of-bounds global {'store' if values is not None else 'load'}: "
                           f"{heap.names[j]}[{elem}] but {heap.names[j]} has {n_el} elements of {size} bytes")
                self.fault_where(badm, msg, gid)
            off = np.where(ok, off, heap.offsets[k])
            # lanes spread over several arrays: attribute them to each
            lanes = off if m is None else np.broadcast_to(off, badm.shape)[np.broadcast_to(m, badm.shape)]
            owners = np.searchsorted(heap.starts, np.asarray(lanes).reshape(-1), side="right") - 1
            for j, n_j in enumerate(np.bincount(owners, minlength=len(heap.names)).tolist()):
                if n_j:
                    key = (gid, heap.names[j])
                    self.counters.array_threads[key] = self.counters.array_threads.get(key, 0) + n_j * (
                        self.nB if off.shape[0] == 1 and (m is None or m.shape[0] == 1) else 1)
            k = -1
        elif m is not None and off.size > 1:
            # inactive lanes may hold anything: keep their indices in range
            bad = (off < 0) | (off + nbytes > len(heap.bytes))
            if bad.any():
                off = np.where(bad, heap.offsets[k], off)
        c = self.counters
        if k >= 0:
            key = (gid, heap.names[k])
            c.array_threads[key] = c.array_threads.get(key, 0) + st[0]
        store = values is not None
        rowinv = _row_invariant(off, m)
        if rowinv is not None:
            # every block's lanes see one pattern shifted by whole sectors: count one block per 128-byte residue
            reps, m0, weights = rowinv
            if size > 1 and (reps & (size - 1)).any():
                self.fault_where(self.mask_full(), "misaligned global access", gid)
            sec_r, lines_r, _f = M.sectors_lines(reps, m0, len(reps), self.Tp, nbytes)
            c.units[gid] += int((sec_r * weights).sum())
            c.lines[gid] += int((lines_r * weights).sum())
            per_block_sec = sec_r[_residue_rows(off)] if len(reps) > 1 else int(sec_r[0])
        else:
            if size > 1 and off.size > 1 and (sel & (size - 1)).any() or (lo_v % size):
                self.fault_where(self.mask_full(), "misaligned global access", gid)
            sec, lines, f = M.sectors_lines(off, m, self.nB, self.Tp, nbytes)
            c.units[gid] += int(sec.sum()) * f
            c.lines[gid] += int(lines.sum()) * f
            per_block_sec = sec if f == 1 else int(sec[0])
        pb = c.per_block
        pb["global_stores" if store else "global_loads"][self.sl] += (self.T if st[2] is None else st[2])
        pb["global_store_sectors" if store else "global_load_sectors"][self.sl] += per_block_sec
        # footprint bitmaps (unique sectors touched)
        bitmap = heap.stored if store else heap.loaded
        s = off >> 5
        if m is None:
            bitmap[s] = True
            if nbytes > 32:
                bitmap[(off + nbytes - 1) >> 5] = True
        else:
            bitmap[np.broadcast_to(s, np.broadcast_shapes(s.shape, m.shape))[
                np.broadcast_to(m, np.broadcast_shapes(s.shape, m.shape))]] = True
        view = heap.view(dt)
        idx = off // size
        if not store:
            return [view[idx + j] for j in range(vec)]
        self._scatter(view, idx, values, m)
        return None

    def _scatter(self, view, idx, values, m, rows=None):
        if rows is not None and idx.shape[0] == 1 and rows.shape == (self.nB, 1) and (m is None or m.shape[0] == 1):
            # the same columns in every row (shared memory, a lane-only address): one column assignment
            lanes = max([idx.shape[1], 1 if m is None else m.shape[1]] + [v.shape[1] for v in values])
            cols = np.broadcast_to(idx, (1, lanes))[0]
            sel = None if m is None else np.broadcast_to(m, (1, lanes))[0]
            if sel is not None:
                cols = cols[sel]
            for j, v in enumerate(values):
                v = v.astype(view.dtype, copy=False) if v.dtype != view.dtype else v
                vb = np.broadcast_to(v, (self.nB, lanes))
                view[:, cols + j] = vb if sel is None else vb[:, sel]
            return
        for j, v in enumerate(values):
            v = v.astype(view.dtype, copy=False) if v.dtype != view.dtype else v
            shape = np.broadcast_shapes(idx.shape, v.shape, (1, 1) if m is None else m.shape,
                                        (1, 1) if rows is None else rows.shape)
            ib = np.broadcast_to(idx + j, shape)
            vb = np.broadcast_to(v, shape)
            if rows is not None:
                rb = np.broadcast_to(rows, shape)
            if m is None:
                if rows is None:
                    view[ib] = vb
                else:
                    view[rb, ib] = vb
            else:
                mb = np.broadcast_to(m, shape)
                if rows is None:
                    view[ib[mb]] = vb[mb]
                else:
                    view[rb[mb], ib[mb]] = vb[mb]

    def _shared(self, gid, a, size, vec, dt, values, nbytes):
        m = self.mask
        off = self._check(gid, a, 0, self.launch.shared_bytes - nbytes + 1, "shared-memory access")
        c = self.counters
        wf, f = M.shared_wavefronts(off, m, self.nB, self.Tp, nbytes)
        c.units[gid] += int(wf.sum()) * f
        c.per_block["shared_wavefronts"][self.sl] += wf if f == 1 else int(wf[0])
        view = self.shared.view(dt)
        idx = off // size
        if values is None:
            out = []
            for j in range(vec):
                ij = idx + j
                if ij.shape[0] == 1:
                    out.append(np.take(view, ij[0], axis=1))
                else:
                    out.append(np.take_along_axis(view, np.broadcast_to(ij, (self.nB, ij.shape[1])), axis=1))
            return out
        self._scatter(view, idx, values, m, rows=np.arange(self.nB).reshape(-1, 1))
        return None

    def _local(self, gid, a, size, vec, dt, values):
        m = self.mask
        nbytes = size * vec
        off = self._check(gid, a, 0, self.launch.local_bytes - nbytes + 1, "local-memory access")
        view = self.local.view(dt)              # (nB * Tp, words)
        idx = np.broadcast_to(off // size, (self.nB, self.Tp))
        lanes = np.arange(self.nB * self.Tp).reshape(self.nB, self.Tp)
        if values is None:
            return [view[lanes, idx + j] for j in range(vec)]
        self._scatter(view, idx, values, m, rows=lanes)
        return None

    def _const(self, gid, a, size, vec, dt, values):
        if values is not None:
            self.fault_where(self.mask_full(), "a store to constant memory", gid)
        m = self.mask
        nbytes = size * vec
        off = self._check(gid, a, 0, len(self.const.bytes) - nbytes + 1, "constant-memory load")
        d, f = M.distinct_addresses(off, m, self.nB, self.Tp)
        self.counters.units[gid] += int(d.sum()) * f
        view = self.const.view(dt)
        idx = off // size
        return [view[idx + j] for j in range(vec)]

    def _generic(self, gid, a, size, vec, dt, values):
        """A generic address: split the lanes by window (global / shared / local / const)."""
        a = a.astype(np.int64)
        m = self.mask
        shape = np.broadcast_shapes(a.shape, (1, 1) if m is None else m.shape)
        space_of = np.zeros(shape, np.int8)
        for k, (base, _name) in enumerate(SPACE_OF_WINDOW, 1):
            space_of = np.where((a >= base) & (a < base + WINDOW), k, space_of)
        spaces = np.unique(space_of if m is None else np.broadcast_to(space_of, shape)[np.broadcast_to(m, shape)])
        if len(spaces) == 1:
            k = int(spaces[0])
            if k == 0:
                return self._counted_part(gid, "global", a, size, vec, dt, values)
            base, name = SPACE_OF_WINDOW[k - 1]
            return self._counted_part(gid, name, a - base, size, vec, dt, values)
        # mixed spaces in one instruction: run each part under its own mask and merge the loads
        saved = m
        out = None
        try:
            for k in spaces.tolist():
                sub = (space_of == k) if saved is None else ((space_of == k) & saved)
                self.mask = sub
                if k == 0:
                    part = self._counted_part(gid, "global", a, size, vec, dt, values)
                else:
                    base, name = SPACE_OF_WINDOW[k - 1]
                    part = self._counted_part(gid, name, a - base, size, vec, dt, values)
                if part is not None:
                    out = part if out is None else [np.where(sub, p, o) for p, o in zip(part, out)]
        finally:
            self.mask = saved
        return out

    def _counted_part(self, gid, space, a, size, vec, dt, values):
        """One space's lanes of a generic access, with what they added to the counters recorded per space."""
        c = self.counters
        before = (c.threads[gid], c.requests[gid], c.units[gid], c.lines[gid], c.bytes[gid])
        out = self.mem_access(gid, space, a, size, vec, dt, values)
        after = (c.threads[gid], c.requests[gid], c.units[gid], c.lines[gid], c.bytes[gid])
        split = c.generic_split.setdefault(gid, {})
        acc = split.setdefault(space, [0, 0, 0, 0, 0])
        for i, (x, y) in enumerate(zip(before, after)):
            acc[i] += y - x
        return out

    # ---- atomics ---------------------------------------------------------------------------------------------
    def atomic(self, gid, space, a, size, dt, op, b, cval):
        m = self.mask
        st = self.stats()
        n, nw = st[0], st[1]
        if n == 0:
            return None
        a = a.astype(np.int64)
        if space == "generic":
            shared = (a >= SHARED_BASE) & (a < SHARED_BASE + WINDOW)
            anyshared = bool((shared if m is None else (shared & m)).any())
            allshared = bool((shared | (False if m is None else ~m)).all())
            if anyshared and not allshared:
                raise SimulationError("an atomic whose lanes mix shared and global addresses is not supported")
            space = "shared" if anyshared else "global"
            if anyshared:
                a = a - SHARED_BASE
        c = self.counters
        c.threads[gid] += n
        c.requests[gid] += nw
        c.bytes[gid] += n * size
        self.mark_worked()
        shape = (self.nB, self.Tp)      # every active lane performs its own atomic, same operands or not
        mb = np.ones(shape, bool) if m is None else np.broadcast_to(m, shape)
        if space == "global":
            off = a - GLOBAL_BASE
            self._global_bounds_atomic(gid, off, size, mb)
            view = self.heap.view(dt)
            flat = np.broadcast_to(off // size, shape)
            conf, f = M.max_same_address(off, m, self.nB, self.Tp)
        else:
            off = self._check(gid, a, 0, self.launch.shared_bytes - size + 1, "shared-memory atomic")
            view = self.shared.view(dt).reshape(-1)
            words = self.shared.view(dt).shape[1]
            flat = np.broadcast_to(np.arange(self.nB).reshape(-1, 1) * words + off // size, shape)
            conf, f = M.max_same_address(off + np.arange(self.nB).reshape(-1, 1) * (1 << 32), m, self.nB, self.Tp)
        c.units[gid] += int(conf.sum()) * f
        c.conflicts[gid] += int(conf.sum()) * f
        idx = flat[mb]
        bv = np.broadcast_to(b, shape)[mb].astype(dt, copy=False)
        cv = None if cval is None else np.broadcast_to(cval, shape)[mb].astype(dt, copy=False)
        old = _apply_atomic(view, idx, bv, cv, op, dt)
        res = np.zeros(shape, dt)
        res[mb] = old
        return res

    def _global_bounds_atomic(self, gid, off, size, mb):
        heap = self.heap
        ok = heap.valid(np.broadcast_to(off, mb.shape), size)
        badm = ~ok & mb
        if badm.any():
            v = int(np.broadcast_to(off, badm.shape)[badm][0])
            j = heap.owner(v)
            self.fault_where(badm, f"out-of-bounds global atomic on {heap.names[j]} "
                                   f"(element {(v - heap.offsets[j]) // size} of {heap.sizes[j] // size})", gid)

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
        c.block_execs[gid] += int(blocks_active.sum())
        if not check:
            return
        live = np.ones((self.nB, self.Tp), bool) if self.exited is None else ~self.exited
        missing = live & ~mb & blocks_active[:, None]
        if missing.any():
            thread, block = self.first_lane(missing)
            ins = self.builder.instrs[gid]
            loc = self.builder._location(ins)
            raise SimulationError(
                f"{loc}: barrier divergence: __syncthreads() (bar.sync) reached by only some threads of block "
                f"{block}; thread {thread} of that block takes another path (a barrier inside a condition that "
                "is not uniform across the block)", location=loc, thread=thread, block=block)

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


def _row_invariant(off, m):
    """When every row (block) of ``off`` is one lane pattern shifted by a multiple of 32 bytes and the mask is the
    same in every row, per-warp sector and line counts depend only on the shift modulo 128: return one
    representative row per residue present, the mask, and how many rows share each residue. Else None."""
    if off.shape[0] == 1 or off.shape[1] == 1:
        return None
    if m is not None and m.shape[0] != 1:
        return None
    base = off[:, :1]
    shift = base - base[0, 0]
    if (shift & 31).any():
        return None
    d = off - base
    if not (d == d[0]).all():
        return None
    res = ((off[:, 0] - off[0, 0]) & 127) >> 5
    counts = np.bincount(res, minlength=4)
    present = np.flatnonzero(counts)
    reps = [int(np.argmax(res == r)) for r in present]
    return off[reps], m, counts[present]


def _residue_rows(off):
    """Each row's 32-byte shift modulo 128 relative to row 0, as a rank among the residues present."""
    res = ((off[:, 0] - off[0, 0]) & 127) >> 5
    present = np.flatnonzero(np.bincount(res, minlength=4))
    rank = np.zeros(4, np.int64)
    rank[present] = np.arange(len(present))
    return rank[res]


def _apply_atomic(view, idx, b, c, op, dt):
    """Atomics in lane order: returns each lane's old value; the memory ends as if the lanes ran one by one."""
    if idx.size == 0:
        return np.zeros(0, dt)
    if op == "add" and dt.kind == "f":
        return _float_atomic_add(view, idx, b, dt)
    if op == "add":
        order = np.argsort(idx, kind="stable")
        si, sb = idx[order], b[order]
        start = np.ones(si.size, bool)
        start[1:] = si[1:] != si[:-1]
        grp = np.cumsum(start) - 1
        if dt.kind == "f":
            csum = np.cumsum(sb.astype(np.float64))
        else:
            csum = np.cumsum(sb.astype(np.int64 if dt.kind == "i" else np.uint64))
        first_pos = np.flatnonzero(start)
        before = csum - sb - (csum[first_pos] - sb[first_pos])[grp]
        base = view[si]
        old_sorted = (base + before.astype(dt) if dt.kind != "f" else (base.astype(np.float64) + before)
                      .astype(dt))
        totals = np.add.reduceat(sb.astype(np.float64 if dt.kind == "f" else sb.dtype), first_pos)
        uniq = si[first_pos]
        view[uniq] = (view[uniq].astype(np.float64) + totals).astype(dt) if dt.kind == "f" else \
            (view[uniq] + totals.astype(dt)).astype(dt)
        old = np.empty(idx.size, dt)
        old[order] = old_sorted
        return old
    # the other operations: rounds of one lane per address (in lane order); rounds = the largest multiplicity
    old = np.empty(idx.size, dt)
    remaining = np.arange(idx.size)
    while remaining.size:
        _, first = np.unique(idx[remaining], return_index=True)
        take = remaining[np.sort(first)]
        i = idx[take]
        cur = view[i].copy()
        old[take] = cur
        v = b[take]
        if op == "min":
            new = np.minimum(cur, v)
        elif op == "max":
            new = np.maximum(cur, v)
        elif op == "and":
            new = cur & v
        elif op == "or":
            new = cur | v
        elif op == "xor":
            new = cur ^ v
        elif op == "exch":
            new = v
        elif op == "cas":
            new = np.where(cur == v, c[take], cur)
        elif op == "inc":
            new = np.where(cur >= v, 0, cur + 1).astype(dt)
        elif op == "dec":
            new = np.where((cur == 0) | (cur > v), v, cur - 1).astype(dt)
        else:
            raise SimulationError(f"atomic operation {op} is not supported")
        view[i] = new
        keep = np.ones(remaining.size, bool)
        keep[np.searchsorted(remaining, take)] = False
        remaining = remaining[keep]
    return old


def _float_atomic_add(view, idx, b, dt):
    """Float atomic adds in lane order, rounding to the element type after every add as the GPU does: a sequential
    float cumulative sum per address (np.cumsum accumulates in order), or rounds of one lane per address when
    there are many addresses each hit by few lanes."""
    order = np.argsort(idx, kind="stable")
    si, sb = idx[order], b[order].astype(dt)
    start = np.flatnonzero(np.r_[True, si[1:] != si[:-1]])
    ends = np.r_[start[1:], si.size]
    old_sorted = np.empty(si.size, dt)
    if len(start) <= 4096 or (ends - start).max() > 64:
        for s0, e0 in zip(start.tolist(), ends.tolist()):
            seq = np.empty(e0 - s0 + 1, dt)
            seq[0] = view[si[s0]]
            seq[1:] = sb[s0:e0]
            run = np.cumsum(seq, dtype=dt)
            old_sorted[s0:e0] = run[:-1]
            view[si[s0]] = run[-1]
    else:
        rank = np.arange(si.size) - np.repeat(start, ends - start)
        for r in range(int(rank.max()) + 1):
            sel = np.flatnonzero(rank == r)
            cur = view[si[sel]]
            old_sorted[sel] = cur
            view[si[sel]] = (cur + sb[sel]).astype(dt)
    old = np.empty(idx.size, dt)
    old[order] = old_sorted
    return old


# ---- the SIMT driver ---------------------------------------------------------------------------------------

def _and_not(m, done):
    if done is None:
        return m
    if m is None:
        return ~done
    return m & ~done


def run_function(st: State, cf, fr: Frame, mask) -> None:
    blocks = cf.blocks
    c = st.counters
    fname = cf.func.name
    bbw = c.bb_warps.setdefault(fname, [0] * len(blocks))
    bbt = c.bb_threads.setdefault(fname, [0] * len(blocks))
    divw = c.div_warps.setdefault(fname, [0] * len(blocks))
    pb = c.per_block
    sl = st.sl
    stack = [[0, -1, mask]]
    is_kernel = st.depth == 0
    while stack:
        top = stack[-1]
        pc, rpc, m = top
        if pc == rpc or pc < 0:
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
        # count the block: lanes and warps once, every instruction of it
        s = st.stats()
        n, nw = s[0], s[1]
        bbw[pc] += nw
        bbt[pc] += n
        if blk.flop_total:
            for k, v in blk.flops.items():
                c.fp[k] += n * v
            c.flops += n * blk.flop_total
            c.fp64 += n * blk.fp64
            pb["flops"][sl] += (s[2] * blk.flop_total) if s[2] is not None else (st.T * blk.flop_total)
        if blk.int_ops:
            c.int_ops += n * blk.int_ops
        if blk.works:
            st.mark_worked()
        st.steps += 1
        if st.steps > st.max_steps or (st.steps & 1023 == 0 and time.perf_counter() > st.deadline):
            _runaway(st, cf, pc)
        for fn in blk.body:
            fn(st, fr)
        st.mask = m
        term = blk.term
        if term == "fall":
            top[0] = blk.fall
        elif term == "bra":
            top[0] = blk.target
        elif term == "ret":
            if is_kernel:
                full = np.broadcast_to(np.ones((1, 1), bool) if m is None else m, (st.nB, st.Tp))
                st.exited = full.copy() if st.exited is None else (st.exited | full)
            else:
                full = np.broadcast_to(np.ones((1, 1), bool) if m is None else m, (st.nB, st.Tp))
                fr.done = full.copy() if fr.done is None else (fr.done | full)
            stack.pop()
        else:   # conditional branch
            p = fr.r[blk.guard_slot]
            if p is None:
                p = np.zeros((1, 1), bool)
            if blk.guard_neg:
                p = ~p
            taken = p if m is None else (m & p)
            if not taken.any():
                top[0] = blk.fall
                continue
            nt = ~p if m is None else (m & ~p)
            if not nt.any():
                top[0] = blk.target
                continue
            dv = _divergent_warps(st, taken, nt)
            divw[pc] += dv
            rc = blk.ipdom
            if rc == rpc:
                stack.pop()
            else:
                top[0] = rc
            # full-shape masks from here on (both paths are real subsets)
            stack.append([blk.fall, rc, nt])
            stack.append([blk.target, rc, taken])
    st.mask = mask


def _or(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a | b


def _divergent_warps(st, taken, nt) -> int:
    rows = max(taken.shape[0], nt.shape[0])
    t = np.broadcast_to(taken, (rows, st.Tp)).reshape(rows, st.nw, 32).any(axis=2)
    f = np.broadcast_to(nt, (rows, st.Tp)).reshape(rows, st.nw, 32).any(axis=2)
    return int(np.count_nonzero(t & f)) * (st.nB if rows == 1 else 1)


def _runaway(st: State, cf, pc: int):
    blk = cf.func.blocks[pc]
    ins = cf.func.instrs[blk.start]
    loc = st.builder._location(ins)
    thread, block = st.first_lane(st.mask_full())
    reason = (f"more than {st.max_steps:,} basic-block executions" if st.steps > st.max_steps
              else "the simulation time limit")
    raise SimulationError(f"{loc}: runaway kernel: {reason} in one batch of blocks, still looping at this line "
                          f"(thread {thread}, block {block}); raise --max-steps / --timeout if the loop is meant to "
                          "run that long", location=loc, thread=thread, block=block)


__all__ = ["State", "Counters", "run_function", "DT", "Location"]
