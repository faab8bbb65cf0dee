"""Loads, stores and atomics of the executor, on every state space, with their counting (a mixin of
:class:`perfmodel.sim.machine.State`; the rules are in docs/semantics.md).

Global: one request per warp with an active lane; sectors = distinct 32-byte sectors a warp touches, lines =
distinct 128-byte lines. Shared: wavefronts = per warp, the largest number of distinct 4-byte words in one bank.
Constant: one wavefront per distinct address in a warp. Atomics run as if the lanes went one after another.
"""
from __future__ import annotations

import numpy as np

from perfmodel.errors import SimulationError
from perfmodel.sim import atomic_count as ATOM
from perfmodel.sim import coalesce as COAL
from perfmodel.sim import memops as M
from perfmodel.sim.space import CONST_BASE, GLOBAL_BASE, LOCAL_BASE, NO_ARRAY, SHARED_BASE, WINDOW

SPACE_OF_WINDOW = ((LOCAL_BASE, "local"), (SHARED_BASE, "shared"), (CONST_BASE, "const"))


class MemoryMixin:
    """Memory access of a :class:`~perfmodel.sim.machine.State` (uses its mask, stats, counters and spaces)."""

    def mem_access(self, gid, space, a, size, vec, dt, values, defer=False):
        """``defer``: a shared store of ``cp.async``, counted now, written when its group completes
        (:mod:`perfmodel.sim.async_copy`)."""
        if space == "generic":
            return self._generic(gid, a, size, vec, dt, values)
        nbytes = size * vec
        c = self.counters
        st = self.stats()
        n, nw = st[0], st[1]
        if n == 0:
            return [np.zeros((1, 1), dt)] * vec if values is None else None
        if values is not None:
            self.writes += 1
        if self.probe is not None:
            self.probe.address(self, gid, a, space, values is not None, nbytes)
        if self.loop_trace is not None:
            self.loop_trace[gid] = (a - GLOBAL_BASE if space == "global" else a, space, nbytes, values is not None)
        c.threads[gid] += n
        c.requests[gid] += nw
        c.bytes[gid] += n * nbytes
        self.mark_worked()
        if space == "global":
            uncounted = self.defer_counts is not None and gid in self.defer_counts and not self.launch.count_cc1
            if uncounted:
                self.loop_masks[gid] = self.mask
            return self._global(gid, a - GLOBAL_BASE, size, vec, dt, values, nbytes, st, uncounted)
        if space == "shared":
            return self._shared(gid, a, size, vec, dt, values, nbytes, defer)
        if space == "local":
            return self._local(gid, a, size, vec, dt, values)
        if space == "const":
            return self._const(gid, a, size, vec, dt, values)
        raise SimulationError(f"memory space {space} is not supported")

    def _check(self, gid, off, lo, hi, what, also=None):
        """Raise if an active lane's [off, off+size) leaves [lo, hi) (and, where given, the second range ``also``,
        the same kind of bounds); return indices safe for every lane."""
        m = self.mask
        if off.size == 1:
            v = int(off.reshape(-1)[0])
            if not (lo <= v < hi) and not (also is not None and also[0] <= v < also[1]):
                self.fault_where(self.mask_full(), self._out_of_bounds(what, v, lo, hi), gid)
            return off
        bad = (off < lo) | (off >= hi)
        if also is not None:
            bad &= (off < also[0]) | (off >= also[1])
        if not bad.any():
            return off
        badm = bad if m is None else (bad & m)
        if badm.any():
            v = int(np.broadcast_to(off, badm.shape)[badm].reshape(-1)[0])
            self.fault_where(badm, self._out_of_bounds(what, v, lo, hi), gid)
        return np.where(bad, lo, off)

    def _reserved(self, nbytes):
        """The offsets an access of ``nbytes`` may start at inside the reserved shared memory, or None."""
        r = self.launch.reserved_shared
        return None if r is None else (r[0], r[1] - nbytes + 1)

    def _out_of_bounds(self, what, v, lo, hi) -> str:
        valid = f"valid: {lo}..{hi - 1}" if hi > lo else "the access does not fit at any offset"
        msg = f"out-of-bounds {what} at offset {v} ({valid})"
        L = self.launch
        if what == "kernel-parameter load":
            msg += f": {L.param_at(v)}"
        if what.startswith("shared"):
            msg += (f"; the block has {L.static_shared_bytes:,} bytes of static shared memory and "
                    f"{L.dynamic_shared_bytes:,} of dynamic shared memory")
            if L.extern_shared and not L.dynamic_shared_bytes:
                msg += (f" - the kernel's extern __shared__ {', '.join(L.extern_shared)} takes its size from the "
                        "launch: give it with --smem BYTES (perfmodel analyze FILE.cu) or dynamic_shared_memory in "
                        "the spec")
        return msg

    def _global(self, gid, off, size, vec, dt, values, nbytes, st, uncounted=False):
        """``uncounted``: leave out the sectors and lines (and their per-block figures): a loop that regroups its
        counts by the SASS slots (:mod:`perfmodel.sim.regroup`) counts them from the access's address and mask."""
        heap = self.heap
        m = self.mask
        # bounds: the fast path is every active lane inside one allocation
        if off.size == 1:
            sel = off.reshape(-1)
        else:
            sel = off if m is None else _masked(off, m)
        lo_v, hi_v = int(sel.min()), int(sel.max())
        if values is None and CONST_BASE - GLOBAL_BASE <= lo_v and hi_v < CONST_BASE - GLOBAL_BASE + WINDOW:
            # every lane addresses constant memory by its generic address: `__ldg()` of a `__constant__` array
            # (ethminer's keccak round constants) is cvta.const, cvta.to.global and an ld.global.nc, a load of the
            # global memory that backs the constant bank
            return self._global_const(gid, off - (CONST_BASE - GLOBAL_BASE), size, vec, dt, nbytes, st, uncounted)
        k = heap.owner(lo_v)
        mine = self._pointer_block(gid)
        if not (lo_v >= heap.offsets[k] and hi_v + nbytes <= heap.offsets[k] + heap.sizes[k]) or \
                (mine is not None and k != mine):
            full = np.broadcast_to(off, np.broadcast_shapes(off.shape, (1, 1)))
            ok = heap.valid(full, nbytes)
            if mine is not None:
                # inside another array is out of bounds of the one the pointer points into (a[400] of a 256-element
                # array that lands in the array after it)
                ok = ok & (full >= heap.offsets[mine]) & (full + nbytes <= heap.offsets[mine] + heap.sizes[mine])
            badm = ~ok if m is None else (~ok & m)
            if badm.any():
                v = int(np.broadcast_to(off, badm.shape)[badm].reshape(-1)[0])
                self._null_fault(gid, v, badm, "store" if values is not None else "load")
                j = self._array_of(gid, v)
                before = self.launch.block_pointer_offsets.get(j, 0)    # the pointer is this far into its array
                elem = (v - heap.offsets[j] - before) // size
                n_el = heap.sizes[j] // size
                kind = "store" if values is not None else "load"
                arrays = self.launch.arg_arrays
                own = arrays[j].dtype if j < len(arrays) and hasattr(arrays[j], "dtype") else None
                if (v - heap.offsets[j]) % size:
                    msg = f"misaligned global access to {heap.names[j]} (byte {v - heap.offsets[j]})"
                elif own is not None and own.itemsize != size:
                    # the access is wider or narrower than the array's elements (a uint8 array read as words, a
                    # double4 pointer given float32 data): say it in bytes and in the array's own elements
                    msg = (f"out-of-bounds global {kind}: {size} bytes at byte {v - heap.offsets[j]:,} of "
                           f"{heap.names[j]}, which has {heap.sizes[j]:,} bytes ({heap.sizes[j] // own.itemsize:,} "
                           f"elements of {own})")
                else:
                    width = f" (a {nbytes}-byte vector {kind} of elements {elem}..{elem + vec - 1})" if vec > 1 else ""
                    msg = (f"out-of-bounds global {kind}: "
                           f"{heap.names[j]}[{elem}]{width} but {heap.names[j]} has {n_el} elements of {size} bytes")
                    if before:
                        msg += f", the pointer at element {before // size} of them"
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
        rowinv = None if uncounted else _row_invariant(off, m)
        if uncounted:
            if size > 1 and off.size > 1 and (sel & (size - 1)).any() or (lo_v % size):
                self.fault_where(self.mask_full(), "misaligned global access", gid)
            per_block_sec = 0
        elif rowinv is not None:
            # every block's lanes see one pattern shifted by whole sectors: count one block per 128-byte residue
            reps, m0, weights = rowinv
            if size > 1 and (reps & (size - 1)).any():
                self.fault_where(self.mask_full(), "misaligned global access", gid)
            sec_r, lines_r, _f = M.sectors_lines(reps, m0, len(reps), self.Tp, nbytes)
            c.units[gid] += int((sec_r * weights).sum())
            c.lines[gid] += int((lines_r * weights).sum())
            per_block_sec = sec_r[_residue_rows(off)] if len(reps) > 1 else int(sec_r[0])
            # CC 1.x transactions (coalesce.py); 16-byte words need the shift modulo 256, so count every row
            if self.launch.count_cc1:
                COAL.tally(c.cc1, gid, *((off, m, 1) if nbytes > 8 else (reps, m0, weights)), nbytes, self.Tp)
        else:
            if size > 1 and off.size > 1 and (sel & (size - 1)).any() or (lo_v % size):
                self.fault_where(self.mask_full(), "misaligned global access", gid)
            sec, lines, f = M.sectors_lines(off, m, self.nB, self.Tp, nbytes)
            c.units[gid] += int(sec.sum()) * f
            c.lines[gid] += int(lines.sum()) * f
            per_block_sec = sec if f == 1 else int(sec[0])
            if self.launch.count_cc1:
                COAL.tally(c.cc1, gid, off, m, f, nbytes, self.Tp)   # CC 1.x transactions (coalesce.py)
        pb = c.per_block
        pb["global_stores" if store else "global_loads"][self.sl] += (self.T if st[2] is None else st[2])
        pb["global_store_sectors" if store else "global_load_sectors"][self.sl] += per_block_sec
        # footprint bitmaps (unique sectors touched)
        bitmap = heap.stored if store else heap.loaded
        s = off >> 5
        first_touch = not store and self.launch.count_first_touch
        touched = _active_sectors(s, off, m, nbytes) if first_touch or self.replica is not None else None
        if first_touch:
            # the distinct sectors no earlier load of the run touched (its L1 misses when the run is one block
            # on its SM: the model's per-line miss shares, perfmodel.model.mlp.round_miss_factor)
            new = touched[~bitmap[touched]]
            if new.size:
                c.first_touch[gid] = c.first_touch.get(gid, 0) + (np.unique(new).size if new.size > 1 else 1)
        if m is None:
            bitmap[s] = True
            if nbytes > 32:
                bitmap[(off + nbytes - 1) >> 5] = True
        else:
            bitmap[_masked(s, m)] = True
        if self.replica is not None:
            # the blocks this one stands for touch its sectors moved by their shifts
            self.replica.footprint(gid, store, touched)
        view = heap.view(dt)
        idx = off >> _LOG2[size]            # the element index (sizes are 1, 2, 4, 8 or 16 bytes)
        if not store:
            return [view[idx + j] if j else view[idx] for j in range(vec)]
        self._scatter(view, idx, values, m)
        if self.launch.tracked:
            self._mark_written(off, size * vec, m, atomic=False)
        return None

    def _mark_written(self, off, nbytes: int, m, atomic: bool) -> None:
        """Flag the elements that the bytes ``[off, off + nbytes)`` of the active lanes touch in the tracked arrays
        (LaunchState.track_writes): 1 stored, 2 updated by an atomic."""
        lanes = np.asarray(off if m is None else _masked(off, m)).reshape(-1)
        flag = 2 if atomic else 1
        for start, size, flags in self.launch.tracked.values():
            o = lanes - start
            o = o[(o >= 0) & (o < flags.size * size)]
            if o.size:
                last = flags.size - 1
                for j in sorted({*range(0, nbytes, size), nbytes - 1}):
                    flags[np.minimum((o + j) // size, last)] |= flag

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

    def _shared(self, gid, a, size, vec, dt, values, nbytes, defer=False):
        m = self.mask
        memo = self.shared_memo.get(gid)
        if memo is not None and memo[0] is a and memo[1] is m:
            # the same address array under the same mask as this instruction's last run (a lane-only address
            # reused, memops.address_getter): the same bounds check, wavefronts and word indices
            _a, _m, off, units, per_block, idx, cols = memo
        else:
            off = self._check(gid, a, 0, self.launch.shared_bytes - nbytes + 1, "shared-memory access",
                              self._reserved(nbytes))
            wf, f = self.shared_load_wavefronts(gid, off, m, nbytes, values is None)
            units, per_block = wf.sum().item() * f, (wf if f == 1 else wf[0])
            idx = off // size
            cols = None
            if idx.shape[0] == 1:
                cols = [idx[0] + j for j in range(vec)]    # the word of each lane, per vector element
                if a.shape[0] == 1 and (m is None or m.shape[0] == 1):
                    self.shared_memo[gid] = (a, m, off, units, per_block, idx, cols)
        if self.async_copies is not None and self.async_copies.pending and not defer:
            self._no_copy_in_flight(gid, off, nbytes, values is not None)
        c = self.counters
        c.units[gid] += units
        c.per_block["shared_wavefronts"][self.sl] += per_block
        view = self.shared.view(dt)
        if values is None:
            if cols is not None:
                return [view.take(col, axis=1) for col in cols]
            return [np.take_along_axis(view, np.broadcast_to(idx + j, (self.nB, idx.shape[1])), axis=1)
                    for j in range(vec)]
        if defer:
            self._async_copies().issue(self.mask_full(), dt, idx, values, gid)
            return None
        self._scatter(view, idx, values, m, rows=np.arange(self.nB).reshape(-1, 1))
        return None

    def shared_load_wavefronts(self, gid, off, m, nbytes, load):
        """(wavefronts per row, multiplicity) of a shared access. A load that ptxas merged with its neighbours
        into LDS.64 / LDS.128 (:func:`perfmodel.kernel._shared_load_widths`) counts its share of the wide load's
        wavefronts: its lanes' pattern read at the wider width, over the number of PTX loads merged."""
        mix = self.shared_widths.get(gid) if load else None
        if mix is None:
            return M.shared_wavefronts(off, m, self.nB, self.Tp, nbytes, load)
        total, f = 0.0, 1
        for width, share in mix:
            wf, f = M.shared_wavefronts(off, m, self.nB, self.Tp, width, True)
            total = total + wf * (share * nbytes / width)
        return total, f

    # ---- cp.async groups (perfmodel/sim/async_copy.py) ----------------------------------------------------------
    def _async_copies(self):
        if self.async_copies is None:
            from perfmodel.sim.async_copy import AsyncCopies

            self.async_copies = AsyncCopies(self.nB, self.Tp)
        return self.async_copies

    def _no_copy_in_flight(self, gid, off, nbytes, store: bool) -> None:
        """An ordinary shared access to words a cp.async in flight will write is a data race: an error naming the
        access and the copy (perfmodel/sim/async_copy.py)."""
        shape = (self.nB, self.Tp)
        hit = self.async_copies.racing(np.broadcast_to(off, shape) // 4, (nbytes + 3) // 4,
                                       np.broadcast_to(self.mask_full(), shape), self.shared.bytes.shape[1] // 4)
        if hit is None:
            return
        copy, bad = hit
        where = self.builder._location(self.builder.instrs[copy])
        self.fault_where(bad, f"data race: a shared-memory {'store' if store else 'load'} of words that the "
                         f"cp.async at {where} has not finished writing (no cp.async.wait_group / wait_all has "
                         "completed its group yet)", gid)

    def cp_async_commit(self) -> None:
        # before a lane's first copy its commits close empty groups: skipping them shifts that lane's group numbers
        # and its commit count alike, so no wait decides differently
        if self.async_copies is not None:
            self.async_copies.commit(self.mask_full())

    def cp_async_wait(self, newest_left: int) -> None:
        if self.async_copies is None:
            return
        rows = np.arange(self.nB).reshape(-1, 1)
        self.async_copies.wait(self.mask_full(), newest_left,
                               lambda dt, idx, values, lanes: self._scatter(self.shared.view(dt), idx, values,
                                                                            lanes, rows=rows))

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

    def _global_const(self, gid, off, size, vec, dt, nbytes, st, uncounted=False):
        """A global load of constant memory (its generic address, :meth:`_global`): the constant bank's bytes,
        counted as the global load the SASS issues (requests, sectors, lines by the addresses' pattern; ``uncounted`` as
        :meth:`_global`'s)."""
        m = self.mask
        off = self._check(gid, off, 0, len(self.const.bytes) - nbytes + 1, "load of constant memory through "
                          "its global address (__ldg of a __constant__ variable)")
        c = self.counters
        pb = c.per_block
        pb["global_loads"][self.sl] += (self.T if st[2] is None else st[2])
        if not uncounted:
            sec, lines, f = M.sectors_lines(off, m, self.nB, self.Tp, nbytes)
            c.units[gid] += int(sec.sum()) * f
            c.lines[gid] += int(lines.sum()) * f
            pb["global_load_sectors"][self.sl] += sec if f == 1 else int(sec[0])
        view = self.const.view(dt)
        idx = off // size
        return [view[idx + j] for j in range(vec)]

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
    def atomic(self, gid, space, a, size, dt, op, b, cval, parts: int = 1):
        """``parts`` > 1: each lane's access holds that many consecutive elements of ``dt`` (``size`` bytes each),
        each updated on its own (f16x2 halves, ``atom.add.v4.f32``); ``b`` is then a list of one operand per part
        and so is the result."""
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
        if self.probe is not None:
            self.probe.address(self, gid, a, f"atom.{space}", True)
        if self.loop_trace is not None:
            self.loop_trace[gid] = (a, f"atom.{space}", size, True)
        c = self.counters
        c.threads[gid] += n
        c.requests[gid] += nw
        c.bytes[gid] += n * size * parts
        self.mark_worked()
        shape = (self.nB, self.Tp)      # every active lane performs its own atomic, same operands or not
        mb = np.ones(shape, bool) if m is None else np.broadcast_to(m, shape)
        if space == "global":
            off = a - GLOBAL_BASE
            self._global_bounds_atomic(gid, off, size * parts, mb)
            view = self.heap.view(dt)
            flat = np.broadcast_to(off // size, shape)
            conf, f = M.max_same_address(off, m, self.nB, self.Tp)
        else:
            off = self._check(gid, a, 0, self.launch.shared_bytes - size * parts + 1, "shared-memory atomic",
                              self._reserved(size * parts))
            view = self.shared.view(dt).reshape(-1)
            words = self.shared.view(dt).shape[1]
            flat = np.broadcast_to(np.arange(self.nB).reshape(-1, 1) * words + off // size, shape)
            conf, f = M.max_same_address(off + np.arange(self.nB).reshape(-1, 1) * (1 << 32), m, self.nB, self.Tp)
        c.units[gid] += int(conf.sum()) * f
        c.conflicts[gid] += int(conf.sum()) * f
        if op == "inc" and np.all(np.asarray(b) == np.iinfo(dt).max):
            op_kind = "add"                 # inc with the largest limit is an add of 1 (the compiler combines it)
        else:
            op_kind = op
        ATOM.tally(c.atomic_ops, space, off, mb, dt, op_kind, len(self.heap.bytes),
                   combined=self._combined(gid))                                # atomic_count.py, uniform.py
        idx = flat[mb]
        if parts > 1:
            # the parts are separate addresses: one pass over all of them keeps each address's lanes in lane order
            k = idx.size
            idx = np.concatenate([idx + p for p in range(parts)])
            bv = np.concatenate([np.broadcast_to(bp, shape)[mb].astype(dt, copy=False) for bp in b])
        else:
            bv = np.broadcast_to(b, shape)[mb].astype(dt, copy=False)
        cv = None if cval is None else np.broadcast_to(cval, shape)[mb].astype(dt, copy=False)
        before = view[idx]
        old = _apply_atomic(view, idx, bv, cv, op, dt)
        if not np.array_equal(before, view[idx]):
            self.writes += 1            # memory changed (a failed compare-and-swap changes none)
        if space == "global":
            self.heap.atomic_dirty[(idx * dt.itemsize) >> 5] = True
            if self.launch.tracked:
                self._mark_written(idx * dt.itemsize, dt.itemsize, None, atomic=True)
        if parts > 1:
            out = []
            for p in range(parts):
                res = np.zeros(shape, dt)
                res[mb] = old[p * k:(p + 1) * k]
                out.append(res)
            return out
        res = np.zeros(shape, dt)
        res[mb] = old
        return res

    def _null_fault(self, gid, v: int, bad, kind: str) -> None:
        """An access below every array (heap offset < 0: an address under the heap's base, a NULL pointer plus an
        offset) or where the launch has no array at all: say so, naming the parameter given NULL, or the
        __constant__ data given no values that pointers may have been read from."""
        launch = self.launch
        # a NULL pointer plus an index lands far below the heap's base; just below it is the first array's [-1]
        far_below = v < 0 and v + GLOBAL_BASE < NULL_REACH
        if not far_below and launch.heap.names != [NO_ARRAY]:
            return
        names = {launch.param_names.get(p, p) for p, _off in self.builder.address_params(gid)}
        null = sorted(names & launch.null_pointers) or sorted(launch.null_pointers)
        where = f"address {v + GLOBAL_BASE:#x}"
        if null:
            why = f"{' or '.join(null)} was given NULL, and the kernel dereferences it"
        elif launch.unset_constants:
            unset = [n for n, _ in launch.unset_constants]
            why = (f"a NULL pointer? __constant__ {', '.join(unset)} {'was' if len(unset) == 1 else 'were'} given no "
                   "values, so pointers read from there are 0")
            layouts = getattr(launch.program, "variable_layouts", None) or {}
            structs = [(n, layouts[n]) for n in unset if n in layouts and layouts[n].error is None]
            if structs:
                from perfmodel.adhoc_args import _struct_example

                n, layout = structs[0]
                why += f"; give a struct's fields, e.g. --symbol '{n}={_struct_example(layout)}'"
            pointers = getattr(launch.program, "pointer_variables", None) or {}
            pointed = [n for n in unset if n in pointers]
            if pointed and not structs:
                from perfmodel.adhoc_args import _pointee_name
                from perfmodel.compile.signature import dtype_of

                n = pointed[0]
                element = _pointee_name(dtype_of(pointers[n], False)) or "uint8"
                why += (f"; {n} is a pointer the host sets to a device array (cudaMemcpyToSymbol of its address): "
                        f"give that array, e.g. --symbol {n}={element}[N]:random")
        else:
            why = "a NULL or uninitialised pointer"
        if far_below:
            self.fault_where(bad, f"global {kind} through a null pointer ({where}, below every array): {why}", gid)
        self.fault_where(bad, f"global {kind} at {where}, where the launch has no array ({why})", gid)

    def _pointer_block(self, gid) -> int | None:
        """The heap array global access ``gid``'s address is computed from, where the PTX's dataflow names exactly
        one pointer parameter (or struct pointer field) and no other array; None otherwise (a pointer loaded from
        memory, chosen between two, a __device__ variable)."""
        cache = self.launch.pointer_blocks
        if gid not in cache:
            launch = self.launch
            names = {launch.struct_pointers.get((launch.param_names.get(p, p), off), launch.param_names.get(p, p))
                     for p, off in self.builder.address_params(gid)}
            blocks = {launch.output_blocks[n] for n in names if n in launch.output_blocks}
            cache[gid] = next(iter(blocks)) if len(blocks) == 1 and len(names) == 1 else None
        return cache[gid]

    def _array_of(self, gid, v: int) -> int:
        """The heap array an out-of-bounds global address belongs to: the one pointer its address is computed from
        (the PTX's dataflow), else the array nearest below it."""
        heap = self.heap
        launch = self.launch
        names = {launch.struct_pointers.get((launch.param_names.get(p, p), off), launch.param_names.get(p, p))
                 for p, off in self.builder.address_params(gid)}
        hits = [j for j, name in enumerate(heap.names) if name in names]
        return hits[0] if len(hits) == 1 else heap.owner(v)

    def _combined(self, gid) -> bool:
        """Whether atomic ``gid``'s address is the same for every lane of a warp by construction (uniform.py)."""
        from perfmodel.sim.uniform import combined_atomics

        b = self.builder
        func = self.launch.program.module.functions[b.func_of[gid]]
        return gid - func.instrs[0].index in combined_atomics(func)

    def _global_bounds_atomic(self, gid, off, size, mb):
        heap = self.heap
        ok = heap.valid(np.broadcast_to(off, mb.shape), size)
        badm = ~ok & mb
        if badm.any():
            v = int(np.broadcast_to(off, badm.shape)[badm][0])
            self._null_fault(gid, v, badm, "atomic")
            j = self._array_of(gid, v)
            self.fault_where(badm, f"out-of-bounds global atomic on {heap.names[j]} "
                                   f"(element {(v - heap.offsets[j]) // size} of {heap.sizes[j] // size})", gid)


_LOG2 = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4}


# addresses below this are a NULL pointer plus an index (1 TiB: any array's reach), not an array's negative index
NULL_REACH = 1 << 40


def _masked(a, m):
    """The elements of ``a`` where the mask ``m`` is set, both broadcast to their common shape (flat)."""
    if a.shape == m.shape:
        return a[m]
    shape = np.broadcast_shapes(a.shape, m.shape)
    return np.broadcast_to(a, shape)[np.broadcast_to(m, shape)]


def _active_sectors(s, off, m, nbytes):
    """The sectors an access's active lanes touch (with the last byte's sector of one wider than a sector), flat."""
    parts = [s] if nbytes <= 32 else [s, (off + nbytes - 1) >> 5]
    if m is not None:
        parts = [_masked(p, m) for p in parts]
    return np.concatenate([np.asarray(p).reshape(-1) for p in parts])


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
    old = np.empty(idx.size, dt)
    order = np.argsort(idx, kind="stable")
    si = idx[order]
    start = np.flatnonzero(np.r_[True, si[1:] != si[:-1]])
    ends = np.r_[start[1:], si.size]
    if (ends - start).max() > min(64, len(start)) and len(start) <= 4096:
        # few addresses with many lanes each (more lanes on one than there are addresses): each address's lanes
        # in lane order, one scan per address
        scan = {"min": np.minimum, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
                "xor": np.bitwise_xor}.get(op)
        for s0, e0 in zip(start.tolist(), ends.tolist()):
            lanes = order[s0:e0]
            i = int(si[s0])
            v = b[lanes].astype(dt, copy=False)
            if scan is not None:
                acc = scan.accumulate(np.r_[view[i:i + 1], v].astype(dt, copy=False))
                old[lanes], view[i] = acc[:-1], acc[-1]
            elif op == "exch":
                old[lanes] = np.r_[view[i:i + 1], v[:-1]].astype(dt, copy=False)
                view[i] = v[-1]
            elif op == "cas":
                old[lanes], view[i] = _cas_in_order(view[i], v, c[lanes].astype(dt, copy=False), dt)
            elif op in ("inc", "dec"):
                cur = view[i].item()
                outs = []
                for x in v.tolist():
                    outs.append(cur)
                    if op == "inc":
                        cur = 0 if cur >= x else cur + 1
                    else:
                        cur = x if (cur == 0 or cur > x) else cur - 1
                old[lanes] = np.array(outs).astype(dt)
                view[i] = np.array(cur).astype(dt)
            else:
                raise SimulationError(f"atomic operation {op} is not supported")
        return old
    # the other operations: rounds of one lane per address (in lane order); rounds = the largest multiplicity
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


def _cas_in_order(cur, compare, swap, dt, scans: int = 64):
    """The compare-and-swaps of one address's lanes, in lane order: each lane gets the value before it, and the
    value changes to ``swap[k]`` where it equals ``compare[k]``. Each success is found by one vectorised search for
    the next lane whose compare matches (a CAS loop's lanes mostly fail: one or a few succeed per call); past
    ``scans`` successes the rest goes lane by lane. Returns (old values, final value)."""
    n = compare.size
    old = np.empty(n, dt)
    cur = np.asarray(cur, dt)[()]
    k = 0
    for _ in range(scans):
        hits = np.flatnonzero(compare[k:] == cur)
        if not hits.size:
            old[k:] = cur
            return old, cur
        j = k + int(hits[0])
        old[k:j + 1] = cur
        cur = swap[j]
        k = j + 1
        if k == n:
            return old, cur
    cur_py, cs, xs = cur.item(), swap[k:].tolist(), compare[k:].tolist()
    outs = []
    for x, c in zip(xs, cs):
        outs.append(cur_py)
        cur_py = c if cur_py == x else cur_py
    old[k:] = np.array(outs).astype(dt)
    return old, np.asarray(cur_py).astype(dt)[()]


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


