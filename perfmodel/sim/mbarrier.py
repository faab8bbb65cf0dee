"""Shared-memory barrier objects (``mbarrier``) and the copies that complete on them: ``cp.async.mbarrier.arrive`` and
``cp.async.bulk ... .mbarrier::complete_tx::bytes`` (PTX ISA, "Parallel Synchronization and Communication
Instructions: mbarrier"; CUDA's ``cuda::barrier``, ``cuda::pipeline`` with shared state and ``cuda::memcpy_async``
compile to them).

An mbarrier has a phase, an expected arrival count, a pending arrival count and a transaction count (bytes still to
arrive). ``init`` sets both counts to its operand and the phase to 0. ``arrive`` takes one arrival per thread (or
``count``), ``arrive_drop`` also lowers the expected count of later phases, ``expect_tx`` adds bytes to wait for,
``complete_tx`` and a bulk copy's completion take them off; when both the pending arrivals and the transaction count
reach zero the phase completes: the phase number goes up by one and the pending count starts again from the
expected count. ``arrive`` returns a state token (the phase it arrived on); ``test_wait`` / ``try_wait`` with that
token, or with a phase parity (``.parity``), are true once that phase has completed. ``inval`` ends the object.

The executor keeps each block's barriers beside its shared memory, keyed by address. A block's threads run in
lockstep, so the usual patterns - every thread arrives then waits (``arrive_and_wait``), producers that are also the
consumers - complete without spinning. Where the threads of a block split into roles (a warp-specialised pipeline:
producer warps in one branch, consumer warps in the other, as ``cuda::pipeline`` with ``pipeline_role`` makes
them), the executor runs the branches one after the other; when every thread of the running branch fails a wait,
it switches to the other branch (machine.py ``run_function``) and comes back when that one finishes or waits in
turn; if neither branch can go on (no barrier phase completed since the last switch) the kernel deadlocks, an
error naming the waiting thread. Copies complete at once: a bulk copy reads and writes its bytes where it is issued
(its global side counted as 16-byte global loads; its shared side is written by the copy engine, not the load/store
unit, and is not counted as shared stores) and then completes its bytes on the barrier; a
``cp.async.mbarrier.arrive`` first lands every ``cp.async`` its thread has issued (so a read that races with such a
copy, before the wait, is not detected, as it is for ``cp.async.wait_group``). More arrivals than expected, a
barrier used before its ``init`` and a wait with a token of a phase not yet begun stop with an error naming the
thread.
"""
from __future__ import annotations

import numpy as np

from perfmodel.ptx.ir import Addr
from perfmodel.sim.alu import Unsupported
from perfmodel.sim.memops import address_getter
from perfmodel.sim.space import SHARED_BASE, WINDOW


class Barriers:
    """The mbarriers of one batch of blocks: address -> per-block arrays (expected, pending, tx, phase, live)."""

    def __init__(self, nB: int):
        self.nB = nB
        self.table: dict[int, dict] = {}

    def record(self, addr: int) -> dict:
        r = self.table.get(addr)
        if r is None:
            z = np.zeros(self.nB, np.int64)
            r = self.table[addr] = {"expected": z.copy(), "pending": z.copy(), "tx": z.copy(), "phase": z.copy(),
                                    "live": np.zeros(self.nB, bool)}
        return r


def _barriers(st) -> Barriers:
    b = getattr(st, "mbarriers", None)
    if b is None:
        b = st.mbarriers = Barriers(st.nB)
    return b


def _shared_offsets(st, a: np.ndarray, generic: bool) -> np.ndarray:
    if not generic:
        return a
    m = np.broadcast_to(st.mask_full(), np.broadcast_shapes(a.shape, st.mask_full().shape))
    inside = (a >= SHARED_BASE) & (a < SHARED_BASE + WINDOW)
    if (m & ~np.broadcast_to(inside, m.shape)).any():
        raise Unsupported("an mbarrier outside shared memory")
    return a - SHARED_BASE


def _groups(st, a: np.ndarray):
    """(address, (nB, Tp) lanes at it) for each address the active lanes name."""
    m = np.broadcast_to(st.mask_full(), (st.nB, st.Tp))
    full = np.broadcast_to(a, (st.nB, st.Tp))
    for addr in np.unique(full[m]):
        yield int(addr), m & (full == addr)


def _need_live(st, r, lanes, gid, what):
    rows = lanes.any(axis=1)
    if (rows & ~r["live"]).any():
        st.fault_where(lanes & ~r["live"][:, None], f"{what} on an mbarrier that is not initialised (mbarrier.init "
                       "must come first, and a barrier after mbarrier.inval is gone)", gid)


def _complete(st, r, lanes, gid) -> None:
    """Phases whose pending arrivals and transactions are both done complete (in every block)."""
    if (r["pending"] < 0).any():
        bad = (r["pending"] < 0)[:, None] & lanes
        st.fault_where(bad if bad.any() else np.broadcast_to((r["pending"] < 0)[:, None], lanes.shape),
                       "more arrivals on an mbarrier than its expected count in one phase (undefined in the PTX ISA)",
                       gid)
    done = r["live"] & (r["pending"] == 0) & (r["tx"] == 0)
    if done.any():
        r["phase"] += done
        r["pending"] = np.where(done, r["expected"], r["pending"])
        st.mbar_epoch += 1


def _per_row_sum(lanes, value) -> np.ndarray:
    v = np.broadcast_to(value, lanes.shape).astype(np.int64)
    return np.where(lanes, v, 0).sum(axis=1)


def _addr_parts(ins, k):
    op = ins.operands[k]
    if not isinstance(op, Addr):
        raise Unsupported("an mbarrier operand that is not an address")
    generic = not any(m.split("::")[0] == "shared" for m in ins.mods)
    return op, generic


def b_mbarrier(ins, ops):
    kind = ins.mods[0]
    gid = ins.index
    if kind == "init":
        addr, generic = _addr_parts(ins, 0)
        ga, gc = address_getter(addr, ops), ops.reader(ins.operands[1], "u32")

        def init(st, fr):
            a = _shared_offsets(st, ga(st, fr), generic)
            count = gc(st, fr)
            b = _barriers(st)
            for ad, lanes in _groups(st, a):
                rows = lanes.any(axis=1)
                first = np.argmax(lanes, axis=1)
                c = np.broadcast_to(count, lanes.shape)[np.arange(st.nB), first].astype(np.int64)
                r = b.record(ad)
                for key, v in (("expected", c), ("pending", c), ("tx", 0), ("phase", 0)):
                    r[key] = np.where(rows, v, r[key])
                r["live"] |= rows
        return init
    if kind == "inval":
        addr, generic = _addr_parts(ins, 0)
        ga = address_getter(addr, ops)

        def inval(st, fr):
            b = _barriers(st)
            for ad, lanes in _groups(st, _shared_offsets(st, ga(st, fr), generic)):
                b.record(ad)["live"] &= ~lanes.any(axis=1)
        return inval
    if kind in ("arrive", "arrive_drop"):
        return _b_arrive(ins, ops, drop=kind == "arrive_drop")
    if kind in ("expect_tx", "complete_tx"):
        addr, generic = _addr_parts(ins, 0)
        ga, gn = address_getter(addr, ops), ops.reader(ins.operands[1], "u32")
        sign = 1 if kind == "expect_tx" else -1

        def tx(st, fr):
            b = _barriers(st)
            n = gn(st, fr)
            for ad, lanes in _groups(st, _shared_offsets(st, ga(st, fr), generic)):
                r = b.record(ad)
                _need_live(st, r, lanes, gid, f"mbarrier.{kind}")
                r["tx"] += sign * _per_row_sum(lanes, n)
                _complete(st, r, lanes, gid)
        return tx
    if kind in ("test_wait", "try_wait"):
        return _b_wait(ins, ops)
    raise Unsupported(f"mbarrier.{kind}")


def _b_arrive(ins, ops, drop: bool):
    mods = ins.mods
    addr, generic = _addr_parts(ins, 1)
    ga = address_getter(addr, ops)
    w = ops.writer(ins.operands[0])
    expect = "expect_tx" in mods
    extra = ops.reader(ins.operands[2], "u32") if len(ins.operands) > 2 else None
    gid = ins.index
    what = f"mbarrier.{mods[0]}"

    def arrive(st, fr):
        b = _barriers(st)
        a = _shared_offsets(st, ga(st, fr), generic)
        value = extra(st, fr) if extra is not None else None
        token = np.zeros((st.nB, st.Tp), np.uint64)
        groups = list(_groups(st, a))
        for ad, lanes in groups:
            r = b.record(ad)
            _need_live(st, r, lanes, gid, what)
            token = np.where(lanes, r["phase"][:, None].astype(np.uint64), token)
            count = 1 if (value is None or expect) else value
            if expect:
                r["tx"] += _per_row_sum(lanes, value)
            arrivals = _per_row_sum(lanes, count)
            r["pending"] -= arrivals
            if drop:
                r["expected"] -= arrivals
            _complete(st, r, lanes, gid)
        w(st, fr, token)
    return arrive


def _b_wait(ins, ops):
    parity = "parity" in ins.mods
    addr, generic = _addr_parts(ins, 1)
    ga = address_getter(addr, ops)
    gs = ops.reader(ins.operands[2], "u32" if parity else "u64")
    w = ops.writer(ins.operands[0])
    gid = ins.index

    def wait(st, fr):
        b = _barriers(st)
        a = _shared_offsets(st, ga(st, fr), generic)
        s = np.broadcast_to(gs(st, fr), (st.nB, st.Tp)).astype(np.int64)
        ok = np.zeros((st.nB, st.Tp), bool)
        for ad, lanes in _groups(st, a):
            r = b.record(ad)
            _need_live(st, r, lanes, gid, f"mbarrier.{ins.mods[0]}")
            phase = r["phase"][:, None]
            if parity:
                done = (phase & 1) != (s & 1)          # the phase of that parity is the one before the current
            else:
                if (lanes & (s > phase)).any():
                    st.fault_where(lanes & (s > phase), "an mbarrier wait with the state token of a phase that has "
                                   "not begun", gid)
                done = s < phase
            ok = np.where(lanes, done, ok)
        if not ok.any():
            st.mbar_blocked = gid         # no lane can go on: the executor may run a sibling path (machine.py)
        w(st, fr, ok)
    return wait


def b_cp_async_arrive(ins, ops):
    """``cp.async.mbarrier.arrive{.noinc}.shared.b64 [mbar]``: the thread's cp.async copies land now; then, with
    ``.noinc``, an arrival (without it the barrier's pending count goes up by one first: no net change)."""
    addr, generic = _addr_parts(ins, 0)
    ga = address_getter(addr, ops)
    noinc = "noinc" in ins.mods
    gid = ins.index

    def arrive(st, fr):
        if st.async_copies is not None:
            rows = np.arange(st.nB).reshape(-1, 1)
            st.async_copies.complete(st.mask_full(), lambda dt, idx, values, lanes: st._scatter(
                st.shared.view(dt), idx, values, lanes, rows=rows))
        b = _barriers(st)
        for ad, lanes in _groups(st, _shared_offsets(st, ga(st, fr), generic)):
            r = b.record(ad)
            _need_live(st, r, lanes, gid, "cp.async.mbarrier.arrive")
            if noinc:
                r["pending"] -= _per_row_sum(lanes, 1)
                _complete(st, r, lanes, gid)
    return arrive


def b_bulk_copy(ins, ops):
    """``cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]``: ``size`` bytes
    (a multiple of 16) from global to shared memory, then ``size`` transaction bytes completed on the barrier."""
    mods = ins.mods
    spaces = [m for m in mods if m.split("::")[0] in ("shared", "global")]
    if spaces[:2] not in (["shared::cta", "global"], ["shared", "global"]) or \
            "mbarrier::complete_tx::bytes" not in mods or len(ins.operands) != 4:
        raise Unsupported("cp.async.bulk other than global to shared::cta with mbarrier::complete_tx::bytes")
    gd, gsrc = address_getter(ins.operands[0], ops), address_getter(ins.operands[1], ops)
    gn = ops.reader(ins.operands[2], "u32")
    gm = address_getter(ins.operands[3], ops)
    gid = ins.index
    u32 = np.dtype(np.uint32)

    def bulk(st, fr):
        n = np.broadcast_to(gn(st, fr), (st.nB, st.Tp)).astype(np.int64)
        active = np.broadcast_to(st.mask_full(), (st.nB, st.Tp))
        if (active & (n % 16 != 0)).any():
            st.fault_where(active & (n % 16 != 0), "cp.async.bulk of a size that is not a multiple of 16 bytes", gid)
        dst, src = gd(st, fr), gsrc(st, fr)           # a shared offset; a global address (mem_access rebases it)
        view = st.shared.view(u32)
        saved = st.mask
        try:
            for k in range(int(n[active].max(initial=0)) // 16):
                lanes = active & (n > 16 * k)
                st.mask = lanes
                # the global side through the counters (this instruction's loads); the shared side is the copy
                # engine's, not the LSU's: written directly, bounds-checked
                vals = st.mem_access(gid, "global", src + 16 * k, 4, 4, u32, None)
                off = st._check(gid, np.broadcast_to(dst + 16 * k, lanes.shape), 0,
                                st.launch.shared_bytes - 16 + 1, "cp.async.bulk shared-memory write")
                rows = np.broadcast_to(np.arange(st.nB).reshape(-1, 1), lanes.shape)[lanes]
                words = (np.broadcast_to(off, lanes.shape)[lanes] // 4)
                for j, v in enumerate(vals):
                    view[rows, words + j] = np.broadcast_to(v, lanes.shape)[lanes]
        finally:
            st.mask = saved
        b = _barriers(st)
        for ad, lanes in _groups(st, gm(st, fr)):
            r = b.record(ad)
            _need_live(st, r, lanes, gid, "cp.async.bulk")
            r["tx"] -= _per_row_sum(lanes, n)
            _complete(st, r, lanes, gid)
    return bulk
