"""Long uniform loops counted from a few iterations.

A loop whose body is one basic block that branches back to itself (what nvcc makes of a simple ``for`` loop,
unrolled or not) executes the same instructions under the same mask in every iteration when its trip count is
the same for all active lanes. Its counts then differ from iteration to iteration only through its addresses, and
when every address moves by one whole-warp step ``k`` per iteration (an induction variable), the sector, line and
bank pattern of iteration ``j`` depends only on ``j * k`` modulo 128 bytes: on ``j`` modulo a period ``P`` (the
least common multiple of ``128 / gcd(k, 128)`` over the loop's addresses). So :func:`fast_forward` runs the
first ``max(P, 2)`` iterations for real, solves the exit comparison (linear in ``j``) for the trip count ``T``,
adds each remaining iteration's counts from the executed iteration of its class, marks the sectors they touch,
and sets the induction variables to their values after iteration ``T - 1``. Exact counts, not estimates.

What it cannot give is the values the skipped iterations compute (a running sum, say): the kernel must be one
whose data never reaches a branch, a guard or an address (:mod:`perfmodel.sim.invariance`, with the block index
counted as data-free), so that the counts after the loop do not depend on them either; the run then reports its
outputs as not computed. It is only used when the caller asks (``fast_loops``, for runs too long to execute).

Static conditions (:func:`plan_loop`): no calls, returns or guarded instructions in the body except guards the
body does not compute; every register the body carries from one iteration to the next is an induction
(``add``/``sub r, r, x`` with ``x`` loop-invariant) or data; addresses and the exit comparison are affine in the
iteration. Run-time conditions: the steps of every address are the same in every lane, the exit comparison gives
every active lane the same trip count, and addresses follow ``base + j * k`` in every executed iteration.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perfmodel.ptx.ir import Addr, PredPair, Reg, Vec
from perfmodel.sim.invariance import AFFINE, UNIFORM, VARIANT, _dests, _result, analyse
from perfmodel.sim.machine import Counters, execute_block

_INT = {"b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64"}
MIN_ITERATIONS = 16        # shorter loops are simply executed
_COUNTED = {"ld", "ldu", "st", "atom", "red", "bar", "barrier", "shfl", "vote", "match", "redux", "activemask"}
GRANULE = 128              # bytes: the period of every count (a line, 32 banks x 4 bytes) ...
WIDE_GRANULE = 256         # ... with accesses wider than 8 bytes, CC 1.x segments (sim/coalesce.py)


@dataclass
class LoopPlan:
    ok: bool
    reason: str = ""
    carried: tuple = ()           # frame slots of the body's registers, with their class (AFFINE: follow j)
    setp_gid: int = -1            # the exit comparison
    cmp: str = ""
    cmp_type: str = ""
    a_slot: int | None = None     # its operands: a frame slot, or None for an immediate (then a_imm)
    b_slot: int | None = None
    a_imm: int = 0
    b_imm: int = 0
    mem_gids: tuple = ()
    counted_gids: tuple = ()      # instructions with per-instruction counters (memory, barriers, warp-level)


def _uses(ins) -> list:
    out = []
    srcs = ins.operands[1:] if _dests(ins) else ins.operands
    for op in srcs:
        if isinstance(op, Reg):
            out.append(op.name)
        elif isinstance(op, Addr) and isinstance(op.base, Reg):
            out.append(op.base.name)
        elif isinstance(op, Vec):
            out += [x.name for x in op.items if isinstance(x, Reg)]
        elif isinstance(op, PredPair):
            out += [op.first.name, op.second.name]
    if ins.guard is not None:
        out.append(ins.guard.name)
    return out


def plan_loop(cf, pc: int, kernel_ok: bool) -> LoopPlan:
    func = cf.func
    blk = func.blocks[pc]
    instrs = func.instrs[blk.start:blk.end]
    if not kernel_ok:
        return LoopPlan(False, "data reaches a branch, a guard or an address")
    body, term = instrs[:-1], instrs[-1]
    if term.opcode != "bra" or term.guard is None:
        return LoopPlan(False, "not a conditional back branch")
    defined_in_body: dict[str, list] = {}
    for ins in body:
        if ins.opcode in ("call", "ret", "exit", "trap", "atom", "red", "cp", "wmma", "mma", "ldmatrix", "stmatrix",
                          "mbarrier"):
            return LoopPlan(False, f"'{ins.opcode}' in the loop")
        if "async" in ins.mods:     # a cp.async's copy: its data lands at a later wait (sim/async_copy.py)
            return LoopPlan(False, "an asynchronous copy in the loop")
        for d in _dests(ins):
            defined_in_body.setdefault(d.name, []).append(ins)
    for ins in body:
        if ins.guard is not None and ins.guard.name in defined_in_body:
            return LoopPlan(False, "a guard computed in the loop")
    # registers carried from one iteration to the next: used before the body (re)defines them
    seen: set = set()
    carried: set = set()
    for ins in instrs:
        for u in _uses(ins):
            if u in defined_in_body and u not in seen:
                carried.add(u)
        for d in _dests(ins):
            seen.add(d.name)
    kernel_classes = cf.__dict__.get("_kernel_classes", {})
    candidates: set = set()
    cls: dict[str, int] = {}
    for r in carried:
        defs = defined_in_body[r]
        d = defs[0]
        if len(defs) == 1 and d.opcode in ("add", "sub", "mov") and d.guard is None and \
                all(t in _INT for t in d.types):
            candidates.add(r)     # maybe r = r + x with x the same every iteration (through temporaries)
        elif kernel_classes.get(r, VARIANT) == VARIANT:
            cls[r] = VARIANT      # data: never reaches control or addresses (kernel_ok)
        else:
            return LoopPlan(False, f"{r} changes from iteration to iteration other than by a fixed step")

    class _C:
        def of(self, op):
            if isinstance(op, Reg):
                if op.name in cls:
                    return cls[op.name]
                return UNIFORM if op.name not in defined_in_body else VARIANT
            if isinstance(op, Addr):
                return self.of(op.base)
            if isinstance(op, Vec):
                return max((self.of(x) for x in op.items), default=UNIFORM)
            if isinstance(op, PredPair):
                return max(self.of(op.first), self.of(op.second))
            return UNIFORM          # immediates, symbols, special registers (the same every iteration)
    C = _C()
    while True:
        for r in candidates:
            cls[r] = AFFINE
        base_of = {r: r for r in candidates}     # register -> the carried value it is (value + fixed terms)
        for ins in body:         # straight-line: one pass in order gives every temporary its class
            ds = _dests(ins)
            if not ds:
                continue
            c = _result(ins, C)
            if ins.opcode in ("ld", "ldu") and "param" not in ins.mods and c == UNIFORM:
                c = VARIANT      # memory may change between iterations
            base = None
            if ins.opcode in ("add", "sub", "mov", "cvta") and ins.guard is None and len(ds) == 1:
                srcs = ins.operands[1:]
                based = [base_of.get(x.name) if isinstance(x, Reg) else None for x in srcs]
                others = [C.of(x) for x, b in zip(srcs, based) if b is None]
                if sum(b is not None for b in based) == 1 and all(o == UNIFORM for o in others) and \
                        not (ins.opcode == "sub" and based[0] is None):
                    base = next(b for b in based if b is not None)
            for d in ds:
                if d.name in carried:
                    base_of[d.name] = base if base == d.name else None
                else:
                    cls[d.name] = c
                    if base is not None:
                        base_of[d.name] = base
                    else:
                        base_of.pop(d.name, None)
        bad = [r for r in candidates if base_of.get(r) != r]
        if not bad:
            break
        for r in bad:            # not r + a fixed step after all
            candidates.discard(r)
            if kernel_classes.get(r, VARIANT) != VARIANT:
                return LoopPlan(False, f"{r} changes from iteration to iteration other than by a fixed step")
            cls[r] = VARIANT
    for r in defined_in_body:
        if cls.get(r, UNIFORM) == VARIANT and kernel_classes.get(r, VARIANT) != VARIANT:
            # neither data (whose skipped values cannot matter) nor linear in the iteration (which is moved on):
            # its value after a skipped run would be stale, and it may reach an address after the loop
            return LoopPlan(False, f"{r} is computed in the loop non-linearly from the iteration")
    for ins in body:
        if ins.opcode in ("setp", "set") and ins.index != (defined_in_body.get(term.guard.name, [None])[-1] or
                                                             ins).index and cls.get(_dests(ins)[0].name) == AFFINE:
            return LoopPlan(False, "a comparison in the loop other than its exit test follows the iteration")
    mem = []
    for ins in body:
        if ins.opcode in ("ld", "ldu", "st", "atom", "red") and "param" not in ins.mods:
            addr = next((op for op in ins.operands if isinstance(op, Addr)), None)
            if addr is not None and C.of(addr) > AFFINE:
                return LoopPlan(False, f"an address in the loop (line {ins.line}) is not affine in the iteration")
            mem.append(ins.index)
    # the exit comparison: the last definition of the branch's predicate, a setp of affine integers
    guard = term.guard.name
    setp = defined_in_body.get(guard, [None])[-1]
    if setp is None or setp.opcode != "setp" or isinstance(setp.operands[0], PredPair) or len(setp.operands) != 3:
        return LoopPlan(False, "the loop's exit test is not a single comparison")
    t = setp.type
    if t not in _INT:
        return LoopPlan(False, "the exit test compares floats")
    after = instrs[instrs.index(setp) + 1:]
    ops = setp.operands[1:]
    slots, imms = [], []
    for op in ops:
        if isinstance(op, Reg):
            if any(op.name in [d.name for d in _dests(i)] for i in after):
                return LoopPlan(False, "the exit test's operands change after it")
            if C.of(op) > AFFINE:
                return LoopPlan(False, "the exit test depends on data")
            slots.append(cf.slots[op.name])
            imms.append(0)
        elif hasattr(op, "value") and not getattr(op, "is_float", False):
            slots.append(None)
            imms.append(int(op.value))
        else:
            return LoopPlan(False, "the exit test has an operand of another kind")
    carried_slots = tuple((cf.slots[r], c) for r, c in cls.items() if r in seen and c != UNIFORM)
    counted = tuple(sorted(i.index for i in body if i.opcode in _COUNTED or i.guard is not None))
    return LoopPlan(True, "", carried_slots, setp.index, setp.mods[0], t, slots[0], slots[1], imms[0], imms[1],
                    tuple(mem), counted)


def _plan(st, cf, pc):
    plans = cf.__dict__.setdefault("_loop_plans", {})
    plan = plans.get(pc)
    if plan is None:
        if "_kernel_ok" not in cf.__dict__:
            proof = analyse(cf.func, block_index_class=UNIFORM, classes_out=cf.__dict__.setdefault(
                "_kernel_classes", {}))
            cf._kernel_ok = proof.ok
        plan = plans[pc] = plan_loop(cf, pc, cf._kernel_ok)
    return plan


# ---- run time -------------------------------------------------------------------------------------------------




def _snapshot(st, gids, fname, pc):
    c = st.counters
    return ([tuple(getattr(c, n)[g] for g in gids) for n in Counters.PER_INSTRUCTION],
            {k: v for k, v in c.array_threads.items() if k[0] in gids},
            {g: {s: list(v) for s, v in c.generic_split.get(g, {}).items()} for g in gids},
            (c.bb_warps[fname][pc], c.bb_threads[fname][pc], c.div_warps[fname][pc]),
            dict(c.fp), (c.fp64, c.fp64_flops), c.flops, c.int_ops,
            {k: v[st.sl].copy() for k, v in c.per_block.items()},
            {g: list(c.cc1[g]) for g in gids if g in c.cc1})


def _delta(a, b):
    lists = [tuple(y - x for x, y in zip(la, lb)) for la, lb in zip(a[0], b[0])]
    arr = {k: b[1][k] - a[1].get(k, 0) for k in b[1]}
    gen = {g: {s: [y - (a[2].get(g, {}).get(s, [0] * len(v))[i]) for i, y in enumerate(v)]
               for s, v in sp.items()} for g, sp in b[2].items()}
    bb = tuple(y - x for x, y in zip(a[3], b[3]))
    fp = {k: b[4][k] - a[4].get(k, 0) for k in b[4]}
    cc1 = {g: [y - x for x, y in zip(a[9].get(g, [0] * len(v)), v)] for g, v in b[9].items()}
    return (lists, arr, gen, bb, fp, (b[5][0] - a[5][0], b[5][1] - a[5][1]), b[6] - a[6], b[7] - a[7],
            {k: b[8][k] - a[8][k] for k in b[8]}, cc1)


def _add(st, gids, fname, pc, d, times: int):
    if times <= 0:
        return
    c = st.counters
    for n, vals in zip(Counters.PER_INSTRUCTION, d[0]):
        lst = getattr(c, n)
        for g, v in zip(gids, vals):
            lst[g] += v * times
    for k, v in d[1].items():
        c.array_threads[k] = c.array_threads.get(k, 0) + v * times
    for g, sp in d[2].items():
        dst = c.generic_split.setdefault(g, {})
        for s, vals in sp.items():
            acc = dst.setdefault(s, [0] * len(vals))
            for i, v in enumerate(vals):
                acc[i] += v * times
    c.bb_warps[fname][pc] += d[3][0] * times
    c.bb_threads[fname][pc] += d[3][1] * times
    c.div_warps[fname][pc] += d[3][2] * times
    for k, v in d[4].items():
        c.fp[k] = c.fp.get(k, 0) + v * times
    c.fp64 += d[5][0] * times
    c.fp64_flops += d[5][1] * times
    c.flops += d[6] * times
    c.int_ops += d[7] * times
    for k, v in d[8].items():
        c.per_block[k][st.sl] += v * times
    for g, vals in d[9].items():
        acc = c.cc1.setdefault(g, [0] * len(vals))
        for i, v in enumerate(vals):
            acc[i] += v * times


def _lanes(v, m, rows, lanes):
    """Active lanes of a (rows|1, lanes|1) array, flattened (the mask is the same in every iteration)."""
    b = np.broadcast_to(v, (rows, lanes))
    if m is None:
        return b.reshape(-1)
    return b[np.broadcast_to(m, (rows, lanes))]


_TESTS = {"lt": lambda x: x < 0, "le": lambda x: x <= 0, "gt": lambda x: x > 0, "ge": lambda x: x >= 0,
          "lo": lambda x: x < 0, "ls": lambda x: x <= 0, "hi": lambda x: x > 0, "hs": lambda x: x >= 0,
          "eq": lambda x: x == 0, "ne": lambda x: x != 0}


_NEGATED = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "lo": "hs", "ls": "hi", "hi": "ls", "hs": "lo",
            "eq": "ne", "ne": "eq"}


def _trip_count(cmp, bits, unsigned, a0, da, b0, db, neg):
    """Iterations ``T`` of a loop that goes on after iteration j while cmp(a0 + j da, b0 + j db) holds (its
    negation when ``neg``), per lane; None when a lane never stops or a value would leave its type's range."""
    if neg:
        cmp = _NEGATED.get(cmp, "")
    test = _TESTS.get(cmp)
    if test is None:
        return None
    d0, dd = a0 - b0, da - db

    def cont(j):
        return test(d0 + j * dd)
    if not (cont(0).all() and cont(1).all()) or (dd == 0).any():
        return None
    if cmp in ("eq", "ne"):
        # ne goes on until a - b reaches 0 (eq cannot go on past two iterations with dd != 0)
        q, r = np.divmod(-d0, dd)
        if cmp == "eq" or (r != 0).any() or (q < 2).any():
            return None
        stop = q
    else:
        # monotone in j: the first j where the test fails, near the crossing of a - b through 0
        stop = np.maximum(np.floor(-d0 / dd).astype(np.int64) - 1, 2)
        for _ in range(4):
            stop = np.where(cont(stop), stop + 1, stop)
        if cont(stop).any() or (~cont(np.maximum(stop - 1, 1)) & (stop > 2)).any():
            return None
    T = stop + 1
    lo, hi = (0, 1 << bits) if unsigned else (-(1 << (bits - 1)), 1 << (bits - 1))
    for v0, dv in ((a0, da), (b0, db)):
        for end in (v0, v0 + T * dv):
            if (end < lo).any() or (end >= hi).any():
                return None
    return T


def _shift_invariant(a, space: str, nbytes: int, k: int) -> bool:
    """Do this access's counts stay the same when all its lanes move by ``k`` bytes? Shared memory: any
    word-aligned move rotates the 32 banks (the per-bank counts are permuted); constant memory counts distinct
    addresses; local memory counts lanes; global memory when the accesses are aligned, within one sector, and
    at least 128 bytes apart (each in its own sector and line wherever they move) or all the same address."""
    if "shared" in space:
        return k % 4 == 0
    if space in ("const", "local"):
        return True
    if nbytes > 32 or k % nbytes or (a % nbytes).any():
        return False
    u = np.unique(a)
    return u.size == 1 or bool((np.diff(u) >= 128).all())


def _ints(v, unsigned=False):
    v = np.asarray(v)
    if v.dtype == np.bool_:
        return v.astype(np.int64)
    if v.dtype.kind == "u" and (not unsigned or v.dtype.itemsize == 8):
        v = v.view(np.dtype(f"i{v.dtype.itemsize}"))
    return v.astype(np.int64)


def fast_forward(st, cf, fr, pc: int, m, bbw, bbt, keep_traces: bool = False):
    """Run the self-loop at ``pc`` to its end executing only a few iterations: ``"done"``; ``"resume"`` when
    iterations were executed but the rest must run as usual (the driver goes on from the branch; with
    ``keep_traces``, their address traces are left in ``st.loop_resume``); None when nothing was executed."""
    traces: list = []
    how = _fast_forward(st, cf, fr, pc, m, bbw, bbt, traces)
    if how == "resume" and keep_traces:
        st.loop_resume = traces
    return how


def _fast_forward(st, cf, fr, pc: int, m, bbw, bbt, traces: list):
    plan = _plan(st, cf, pc)
    if not plan.ok:
        return None
    blk = cf.blocks[pc]
    fname = cf.func.name
    gids = plan.counted_gids
    rows, lanes = st.nB, st.Tp
    deltas, regs, tests = [], [], []

    def one_iteration() -> bool:
        """Execute one iteration; True when every active lane goes on to the next."""
        before = _snapshot(st, gids, fname, pc)
        st.loop_trace = {}
        try:
            execute_block(st, cf, fr, pc, blk, bbw, bbt)
        finally:
            trace, st.loop_trace = st.loop_trace, None
        st.mask = m
        deltas.append(_delta(before, _snapshot(st, gids, fname, pc)))
        traces.append(trace)
        regs.append([fr.r[s] for s, _c in plan.carried])
        tests.append(tuple(fr.r[s] if s is not None else np.full((1, 1), imm, np.int64)
                           for s, imm in ((plan.a_slot, plan.a_imm), (plan.b_slot, plan.b_imm))))
        p = fr.r[blk.guard_slot]
        if p is None:
            return False
        if blk.guard_neg:
            p = ~p
        shape = np.broadcast_shapes(p.shape, (1, 1) if m is None else m.shape)
        taken = np.broadcast_to(p if m is None else (m & p), shape)
        want = np.broadcast_to(np.ones((1, 1), bool) if m is None else m, shape)
        return bool(np.array_equal(taken, want))

    for _ in range(2):
        if not one_iteration():
            return "resume"
    unsigned = plan.cmp_type.startswith(("u", "b")) or plan.cmp in ("lo", "ls", "hi", "hs")
    bits = int("".join(ch for ch in plan.cmp_type if ch.isdigit()) or 32)
    a0 = _lanes(_ints(tests[0][0], unsigned), m, rows, lanes)
    b0 = _lanes(_ints(tests[0][1], unsigned), m, rows, lanes)
    da = _lanes(_ints(tests[1][0], unsigned), m, rows, lanes) - a0
    db = _lanes(_ints(tests[1][1], unsigned), m, rows, lanes) - b0
    trips = _trip_count(plan.cmp, bits, unsigned, a0, da, b0, db, blk.guard_neg)
    if trips is None or trips.size == 0 or not (trips == trips[0]).all():
        return "resume"
    T = int(trips[0])
    steps, period = {}, 1
    granule = WIDE_GRANULE if any(e[2] > 8 for e in traces[0].values()) else GRANULE
    for gid, entry in traces[0].items():
        if gid not in traces[1]:
            return "resume"
        k = _lanes(_ints(traces[1][gid][0]), m, rows, lanes) - _lanes(_ints(entry[0]), m, rows, lanes)
        if k.size == 0 or not (k == k[0]).all():
            return "resume"
        steps[gid] = int(k[0])
        r = steps[gid] % granule
        if r and _shift_invariant(_lanes(_ints(entry[0]), m, rows, lanes), entry[1], entry[2], steps[gid]):
            r = 0
        period = math.lcm(period, granule // math.gcd(r, granule) if r else 1)
    executed = max(period, 2)
    if T < max(MIN_ITERATIONS, 2 * executed):
        return "resume"
    for _ in range(executed - 2):
        if not one_iteration():
            return "resume"
    for j, trace in enumerate(traces):
        for gid, k in steps.items():
            if gid not in trace or not np.array_equal(
                    _lanes(_ints(trace[gid][0]), m, rows, lanes),
                    _lanes(_ints(traces[0][gid][0]), m, rows, lanes) + j * k):
                return "resume"
    if not _stays_in_bounds(st, traces[0], steps, T, m, rows, lanes):
        return "resume"       # an iteration not yet run leaves its array: run them, so that the fault is reported
    # the iterations not executed: each counted as the executed iteration of its class
    for c in range(period):
        _add(st, gids, fname, pc, deltas[c], len(range(executed + ((c - executed) % period), T, period)))
    _mark_sectors(st, traces, steps, executed, T, m, rows, lanes)
    # registers after iteration T - 1: those that follow the iteration linearly move on
    for (slot, c), v_last, v0, v1 in zip(plan.carried, regs[executed - 1], regs[0], regs[1]):
        if c == AFFINE and v_last is not None and v0 is not None and v1 is not None and v_last.dtype != np.bool_:
            step = (v1 - v0).astype(v_last.dtype)
            fr.r[slot] = (v_last + step * v_last.dtype.type(T - executed)).astype(v_last.dtype)
    p = fr.r[blk.guard_slot]
    fr.r[blk.guard_slot] = np.zeros((1, 1), bool) if not blk.guard_neg else np.ones((1, 1), bool)
    del p
    st.launch.skipped_iterations += T - executed
    st.steps += T - executed
    return "done"


def _stays_in_bounds(st, trace, steps, T, m, rows, lanes) -> bool:
    """Whether every access of the iterations not executed stays where iteration 0's was: a lane's global
    address in the allocation it started in, a shared or local address inside the block's shared or the thread's
    local memory. Addresses move by a fixed step per iteration, so the last iteration's decides."""
    heap, L = st.heap, st.launch
    for gid, k in steps.items():
        addr, space, nbytes, _store = trace[gid]
        if k == 0:
            continue
        first = np.unique(_lanes(_ints(addr), m, rows, lanes))
        last = first + (T - 1) * k
        if space == "global":
            owner = np.clip(np.searchsorted(heap.starts, first, side="right") - 1, 0, len(heap.starts) - 1)
            lo, hi = heap.starts[owner], heap.ends[owner]
        elif space == "shared":
            lo, hi = 0, L.shared_bytes
        elif space == "local":
            lo, hi = 0, L.local_bytes
        else:
            continue
        if ((last < lo) | (last + nbytes > hi)).any():
            return False
    return True


def _mark_sectors(st, traces, steps, executed, T, m, rows, lanes):
    """The global sectors of the iterations not executed: iteration j's addresses are iteration 0's moved by
    j steps."""
    heap = st.heap
    js = np.arange(executed, T, dtype=np.int64)
    todo = []
    for gid, k in steps.items():
        _a, space, nbytes, store = traces[0][gid]
        if space != "global":
            continue
        base = np.unique(_lanes(_ints(traces[0][gid][0]), m, rows, lanes))
        if st.replica is not None:
            # a class representative (sim/replicate.py): its class's blocks touch these sectors moved by theirs
            st.replica.footprint_skipped(gid, store, base, k, js, (0,) if nbytes <= 32 else (0, nbytes - 1))
        key = (gid, store, k, executed, T, base.tobytes())
        marked = st.launch.__dict__.setdefault("_loop_marks", set())
        if key in marked:         # the same addresses as an earlier run of this loop (an outer loop re-entering)
            continue
        marked.add(key)
        todo.append((gid, k, store, base, (0,) if nbytes <= 32 else (0, nbytes - 1)))
    counted = st.launch.count_first_touch
    if counted:
        _first_touches(st, [t for t in todo if not t[2]], js)     # marks the loads' sectors as it counts them
    for gid, k, store, base, ends in todo:
        if counted and not store:
            continue
        bitmap = heap.stored if store else heap.loaded
        chunk = max(1, (1 << 22) // max(base.size, 1))
        for i in range(0, js.size, chunk):
            moved = base[None, :] + (js[i:i + chunk] * k)[:, None]
            for e in ends:
                bitmap[((moved + e) >> 5).reshape(-1)] = True


def _first_touches(st, loads, js):
    """The first-touch count (memory.py ``_first_touch``) of the loads' iterations not executed, in the order they
    would have run: iteration by iteration, the loads of one iteration in program order; a sector goes to the first
    load that reaches it, unless an earlier load of the run already had; the sectors are marked as loaded."""
    if not loads or not js.size:
        return
    heap = st.heap
    ft = st.counters.first_touch
    order = sorted(range(len(loads)), key=lambda i: loads[i][0])
    rank = np.empty(len(loads), np.int64)
    rank[order] = np.arange(len(loads))
    per_iter = sum(base.size * len(ends) for _g, _k, _s, base, ends in loads)
    chunk = max(1, (1 << 22) // max(per_iter, 1))
    for i in range(0, js.size, chunk):
        j = js[i:i + chunk]
        secs, keys = [], []
        for n, (_gid, k, _store, base, ends) in enumerate(loads):
            moved = base[None, :] + (j * k)[:, None]
            key = np.broadcast_to((np.arange(j.size, dtype=np.int64) * len(loads) + rank[n])[:, None], moved.shape)
            for e in ends:
                secs.append(((moved + e) >> 5).reshape(-1))
                keys.append(key.reshape(-1))
        sec, key = np.concatenate(secs), np.concatenate(keys)
        new = ~heap.loaded[sec]
        sec, key = sec[new], key[new]
        if not sec.size:
            continue
        by = np.lexsort((key, sec))
        sec, key = sec[by], key[by]
        first = np.ones(sec.size, bool)
        first[1:] = sec[1:] != sec[:-1]
        owners = np.bincount(key[first] % len(loads), minlength=len(loads))    # by rank
        for r, cnt in enumerate(owners.tolist()):
            if cnt:
                gid = loads[order[r]][0]
                ft[gid] = ft.get(gid, 0) + cnt
        heap.loaded[sec[first]] = True
