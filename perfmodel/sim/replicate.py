"""Exact counts for a whole grid from one block of each class of identical blocks.

When :mod:`perfmodel.sim.invariance` proves that every block runs the same instructions and that each of its
addresses moves by a whole-warp shift ``k . blockIdx`` from block to block, a block's counts depend only on those
shifts modulo 128 bytes: the 32-byte sector, the 128-byte line and the 32 x 4-byte bank of every lane move
together. The blocks therefore fall into classes (same shifts modulo 128 for every address); one block of each
class is simulated and its counts are multiplied by the class's size. That is the exact total, not an estimate.
The distinct sectors of the whole grid (the footprint) are the representative's sectors moved by each member's
shift, a multiple of 32 bytes within a class, so they are exact as well.

Blocks that are not simulated compute no outputs: the result says which blocks ran, and the output check covers
what they wrote (``Replication.rep_ids``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perfmodel.sim.invariance import Probe, analyse, pilot_blocks
from perfmodel.sim.machine import Counters, State, run_function

GRANULE = 128           # bytes: the period of every count: a 128-byte line, 32 banks x 4 bytes ...
WIDE_GRANULE = 256      # ... and with accesses wider than 8 bytes, CC 1.x half-warp segments (sim/coalesce.py)
MAX_CLASSES = 64        # more classes than this: simulating every block is about as cheap
_COMPACT_AT = 1 << 20   # sectors kept per (shift, store) before they are reduced to the distinct ones


@dataclass
class Replication:
    proved: bool
    reason: str = ""
    classes: int = 0
    rep_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))   # blocks that ran (outputs)
    pilot_blocks: int = 0
    overlapping_writes: bool = False      # several blocks store or accumulate to one address

    def to_json(self) -> dict:
        return {"proved": self.proved, "reason": self.reason, "classes": self.classes,
                "blocks_run": int(len(self.rep_ids)), "pilot_blocks": self.pilot_blocks,
                "overlapping_writes": self.overlapping_writes}


class _Replica:
    """What a representative's run needs: each memory instruction's shifts in order, and its class's members."""

    def __init__(self, shifts: dict, global_gids: set, offsets: np.ndarray):
        self.shifts = {gid: _RunLength(ks) for gid, ks in shifts.items() if gid in global_gids}
        self.offsets = offsets               # (members, 3): member block index - representative block index
        self.touched: dict = {}              # (k, store) -> [sector arrays of the representative, their size]

    def footprint(self, gid: int, store: bool, sectors: np.ndarray) -> None:
        rl = self.shifts.get(gid)
        self._keep(rl.next() if rl is not None else (0, 0, 0), store, sectors)

    def footprint_skipped(self, gid: int, store: bool, base: np.ndarray, step: int, js: np.ndarray,
                          ends=(0,)) -> None:
        """The executions of global access ``gid`` in the iterations ``js`` of a loop the representative counted
        from a few iterations (perfmodel.sim.loops): iteration j touches the sectors of ``base + j * step`` (the
        active lanes' byte addresses of iteration 0, plus each of ``ends``); each iteration is one execution, with
        its shift, as :meth:`footprint` would have had it."""
        rl = self.shifts.get(gid)
        pos = 0
        for k, count in (rl.take(js.size) if rl is not None else [((0, 0, 0), js.size)]):
            part = js[pos:pos + count]
            pos += count
            chunk = max(1, (1 << 20) // max(base.size, 1))      # about 8 MB of addresses at a time
            for i in range(0, part.size, chunk):
                moved = base[None, :] + (part[i:i + chunk] * step)[:, None]
                for e in ends:
                    self._keep(k, store, np.unique((moved + e) >> 5))

    def _keep(self, k, store: bool, sectors: np.ndarray) -> None:
        entry = self.touched.setdefault((k, store), [[], 0])
        entry[0].append(sectors)
        entry[1] += sectors.size
        if entry[1] > _COMPACT_AT:
            # keep the distinct sectors only, now and then rather than per access (np.unique per access was most
            # of the bookkeeping's time)
            merged = np.unique(np.concatenate(entry[0]))
            entry[0], entry[1] = [merged], merged.size

    def mark(self, heap) -> None:
        for (k, store), (parts, _size) in self.touched.items():
            sectors = np.unique(np.concatenate(parts))
            shifts = np.unique(self.offsets @ np.asarray(k, np.int64))
            bitmap = heap.stored if store else heap.loaded
            if shifts.size == 1 and shifts[0] == 0:
                bitmap[sectors] = True
                continue
            step = max(1, (1 << 24) // max(sectors.size, 1))
            for i in range(0, shifts.size, step):
                sh = shifts[i:i + step] >> 5
                bitmap[(sectors[:, None] + sh[None, :]).reshape(-1)] = True

    def consistent(self) -> bool:
        return all(rl.done() for rl in self.shifts.values())


class _RunLength:
    def __init__(self, runs: list):
        self.runs = runs
        self.i = 0
        self.left = runs[0][1] if runs else 0

    def next(self):
        while self.left == 0 and self.i + 1 < len(self.runs):
            self.i += 1
            self.left = self.runs[self.i][1]
        if self.left == 0:
            return (0, 0, 0)
        self.left -= 1
        return self.runs[self.i][0]

    def take(self, n: int) -> list:
        """``n`` executions at once, as ``n`` calls of :meth:`next`: [(shift, executions), ...]."""
        out = []
        while n > 0:
            while self.left == 0 and self.i + 1 < len(self.runs):
                self.i += 1
                self.left = self.runs[self.i][1]
            if self.left == 0:
                out.append(((0, 0, 0), n))
                break
            t = min(n, self.left)
            self.left -= t
            n -= t
            out.append((self.runs[self.i][0], t))
        return out

    def done(self) -> bool:
        return self.left == 0 and self.i == len(self.runs) - 1 or not self.runs


def proof_for(program):
    proof = getattr(program, "_invariance", None)
    if proof is None:
        proof = analyse(program.module.functions[program.entry])
        try:
            program._invariance = proof
        except AttributeError:       # pragma: no cover - a frozen program object
            pass
    return proof


def _boxes(grid):
    """The boxes to try: the whole grid, then its interior (the blocks off every boundary, where bounds checks
    and halos usually give all blocks the same outcome); the blocks outside the box are simulated one by one."""
    full = ((0, 0, 0), tuple(g - 1 for g in grid))
    yield full
    lo = tuple(1 if g >= 3 else 0 for g in grid)
    hi = tuple(g - 2 if g >= 3 else g - 1 for g in grid)
    if (lo, hi) != full:
        yield lo, hi


def replicated_counters(launch, builder, cf, program, total_blocks: int, max_lanes: int = 1 << 17):
    """(Counters over the whole grid, Replication), or (None, Replication) when the proof does not hold (nothing
    of the launch is changed then: the caller simulates every block)."""
    proof = proof_for(program)
    if not proof.ok:
        return None, Replication(False, proof.reason)
    grid = launch.grid
    gx, gy, _gz = grid
    all_ids = np.arange(total_blocks, dtype=np.int64)
    coords = np.stack([all_ids % gx, (all_ids // gx) % gy, all_ids // (gx * gy)], axis=1)
    reason = ""
    pilots = 0
    for lo, hi in _boxes(grid):
        in_box = np.all((coords >= np.asarray(lo)) & (coords <= np.asarray(hi)), axis=1)
        box_ids = all_ids[in_box]
        ids, unit_rows = pilot_blocks(grid, lo, hi)
        if len(ids) * 2 >= len(box_ids):
            reason = reason or "the grid is hardly larger than the blocks needed for the proof"
            continue
        probe = _pilot(launch, builder, cf, proof, grid, ids, unit_rows)
        pilots += len(ids)
        if probe.failed:
            reason = reason or probe.failed
            continue
        out = _replicate(launch, builder, cf, probe, coords, box_ids, all_ids[~in_box], total_blocks, max_lanes)
        if isinstance(out, str):
            reason = reason or out
            continue
        total, rep, n_classes = out
        return total, Replication(True, "", classes=n_classes, rep_ids=rep, pilot_blocks=pilots,
                                  overlapping_writes=probe.shared_writes)
    return None, Replication(False, reason, pilot_blocks=pilots)


def _pilot(launch, builder, cf, proof, grid, ids, unit_rows) -> Probe:
    """Run the pilot blocks with the probe on; the heap is left as it was."""
    from perfmodel.sim.values import Frame

    restore = launch.checkpoint()
    probe = Probe(grid, ids, unit_rows)
    st = State(launch, builder, Counters(len(builder.instrs), len(ids)), ids, 0)
    st.probe = probe
    _wrap_checked(cf, {cf.func.instrs[k].index for k in proof.checked}, builder)
    try:
        run_function(st, cf, Frame(cf.nregs), st.mask)
    finally:
        restore()
    return probe


def _replicate(launch, builder, cf, probe, coords, box_ids, rest_ids, total_blocks, max_lanes):
    """Counters of the whole grid: one block per class of the box, weighted, plus every block outside the box;
    or why not (a string)."""
    from perfmodel.sim import _finish_batch
    from perfmodel.sim.values import Frame

    granule = WIDE_GRANULE if probe.widest > 8 else GRANULE
    residues = sorted({tuple(kd % granule for kd in k) for runs in probe.shifts.values() for k, _n in runs}
                      - {(0, 0, 0)})
    box_coords = coords[box_ids]
    if residues:
        sig = (box_coords @ np.asarray(residues, np.int64).T) % granule
        _, first, inverse = np.unique(sig, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
    else:
        first, inverse = np.zeros(1, np.int64), np.zeros(len(box_ids), np.int64)
    if len(first) > MAX_CLASSES:
        return (f"the blocks' addresses fall into {len(first)} classes by their {granule}-byte residues (more than "
                f"{MAX_CLASSES}: simulating every block is about as cheap)")
    restore = launch.checkpoint()
    total = Counters(len(builder.instrs), total_blocks)
    reps = []
    for c in range(len(first)):
        members = box_ids[inverse == c]
        rep = int(members[0])
        reps.append(rep)
        counters = Counters(len(builder.instrs), 1)
        st = State(launch, builder, counters, np.array([rep], np.int64), 0)
        replica = st.replica = _Replica(probe.shifts, probe.global_gids, coords[members] - coords[rep])
        run_function(st, cf, Frame(cf.nregs), st.mask)
        _finish_batch(st, counters)
        if not replica.consistent():
            restore()
            return ("a representative block ran its memory instructions a different number of times than the "
                    "pilot blocks")
        replica.mark(launch.heap)
        _add_scaled(total, counters, len(members), members)
    if len(rest_ids):
        counters = Counters(len(builder.instrs), len(rest_ids))
        per_batch = launch.batch_blocks(max_lanes)
        for start in range(0, len(rest_ids), per_batch):
            st = State(launch, builder, counters, rest_ids[start:start + per_batch], start)
            run_function(st, cf, Frame(cf.nregs), st.mask)
            _finish_batch(st, counters)
        _add_scaled(total, counters, 1, rest_ids)
    ran = np.sort(np.concatenate([np.asarray(reps, np.int64), rest_ids]))
    return total, ran, len(first)


def _wrap_checked(cf, gids: set, builder) -> None:
    """Let every comparison of affine values report its operands and outcome to the probe (once per compiled
    function)."""
    if not gids or getattr(cf, "_probed", False):
        return
    from perfmodel.ptx.ir import PredPair, Reg
    from perfmodel.sim.alu import _compare_parts
    from perfmodel.sim.values import Operands

    ops = Operands(cf.func, builder.symbols)
    for blk in cf.blocks:
        for pos, gid in enumerate(blk.gids):
            if gid not in gids:
                continue
            ins = cf.func.instrs[gid - cf.gid0]
            cmp, _boolop, t = _compare_parts(ins)
            dst = ins.operands[0]
            regs = [dst] if isinstance(dst, Reg) else [dst.first, dst.second] if isinstance(dst, PredPair) else []
            slots = [cf.slots[r.name] for r in regs]
            ga, gb = ops.reader(ins.operands[1], t), ops.reader(ins.operands[2], t)
            blk.body[pos] = _checked(blk.body[pos], slots, gid, ga, gb, cmp, not t.startswith("s"))
    cf._probed = True


def _checked(fn, slots, gid, ga, gb, cmp, unsigned):
    def checked(st, fr):
        fn(st, fr)
        if st.probe is not None:
            st.probe.compare(st, ga(st, fr), gb(st, fr), cmp, unsigned, gid)
            for s in slots:
                v = fr.r[s]
                if v is not None:
                    st.probe.predicate(st, v, gid)
    return checked





def _add_scaled(total, c, w: int, members: np.ndarray) -> None:
    for name in Counters.PER_INSTRUCTION:
        dst, src = getattr(total, name), getattr(c, name)
        for i, v in enumerate(src):
            if v:
                dst[i] += v * w
    for key, v in c.array_threads.items():
        total.array_threads[key] = total.array_threads.get(key, 0) + v * w
    for gid, spaces in c.generic_split.items():
        dst = total.generic_split.setdefault(gid, {})
        for space, vals in spaces.items():
            acc = dst.setdefault(space, [0] * len(vals))
            for i, v in enumerate(vals):
                acc[i] += v * w
    for name in ("bb_warps", "bb_threads", "div_warps"):
        dst_d, src_d = getattr(total, name), getattr(c, name)
        for fname, vals in src_d.items():
            acc = dst_d.setdefault(fname, [0] * len(vals))
            for i, v in enumerate(vals):
                acc[i] += v * w
    for key, v in c.sass_copies.items():     # further-unrolled loops' SASS copies (sim/regroup.py)
        total.sass_copies[key] = total.sass_copies.get(key, 0) + v * w
    for gid, vals in c.cc1.items():          # CC 1.x transactions and bytes per instruction (sim/coalesce.py)
        acc = total.cc1.setdefault(gid, [0] * len(vals))
        for i, v in enumerate(vals):
            acc[i] += v * w
    for key, v in c.atomic_ops.items():      # atomic operations and per-line work (sim/atomic_count.py): every
        # block aims at the same lines (the probe refuses global atomics that move), so they scale; which
        # addresses each line has seen does not (merged below)
        if key not in ("line_addr", "line_multi"):
            total.atomic_ops[key] = total.atomic_ops[key] + v * w if key in total.atomic_ops else v * w
    if "line_addr" in c.atomic_ops:
        seen, multi = c.atomic_ops["line_addr"], c.atomic_ops["line_multi"]
        if "line_addr" not in total.atomic_ops:
            total.atomic_ops["line_addr"], total.atomic_ops["line_multi"] = seen.copy(), multi.copy()
        else:
            old = total.atomic_ops["line_addr"]
            total.atomic_ops["line_multi"] = (total.atomic_ops["line_multi"] | multi
                                              | ((old >= 0) & (seen >= 0) & (old != seen)))
            total.atomic_ops["line_addr"] = np.where(old >= 0, old, seen)
    for k, v in c.fp.items():
        total.fp[k] = total.fp.get(k, 0) + v * w
    total.fp64 += c.fp64 * w
    total.fp64_flops += c.fp64_flops * w
    total.flops += c.flops * w
    total.int_ops += c.int_ops * w
    for key, arr in c.per_block.items():
        total.per_block[key][members] = arr if len(arr) == len(members) else arr[0]
