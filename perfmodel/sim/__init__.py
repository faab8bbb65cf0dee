"""Vectorised counting SIMT simulator: runs a compiled CUDA C kernel on numpy lanes and counts what it does.

``simulate(program, grid, block, args, constants=None, dynamic_shared_bytes=0, block_ids=None, max_steps=None,
max_lanes=None) -> SimResult``. Semantics and counting rules: docs/semantics.md.
"""
from __future__ import annotations

import numpy as np

from perfmodel.errors import SimulationError
from perfmodel.sim.result import Counts, SimResult, build_result
from perfmodel.sim.runtime import BatchArray, ConstArray, Counters, Ctx, GlobalArray

__all__ = ["simulate", "SimResult", "Counts"]

DEFAULT_MAX_LANES = 1 << 20          # lanes per batch: ~1M keeps every lane array at a few MB
DEFAULT_MAX_STEPS = 1 << 20          # iterations of one loop execution before it is called runaway
LOCAL_BUDGET = 256 << 20            # bytes of thread-local arrays per batch
_GLOBAL_BASE = 0x7F0000000000        # first cudaMalloc-like address (256-byte aligned)


def _dim3(v, what) -> tuple:
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3 or any(x < 1 for x in v):
        raise SimulationError(f"{what} must be 1 to 3 positive integers, got {v}")
    return v + (1,) * (3 - len(v))


def simulate(program, grid, block, args, constants=None, dynamic_shared_bytes: int = 0, block_ids=None,
             max_steps: int | None = None, max_lanes: int | None = None) -> SimResult:
    grid = _dim3(grid, "grid")
    block = _dim3(block, "block")
    total_blocks = grid[0] * grid[1] * grid[2]
    tpb = block[0] * block[1] * block[2]
    if len(args) != len(program.params):
        raise SimulationError(f"{program.name} takes {len(program.params)} arguments "
                              f"({', '.join(p.name for p in program.params)}), {len(args)} given")
    globals_ = []
    base = _GLOBAL_BASE
    for p, a in zip(program.params, args):
        if p.is_pointer:
            if not isinstance(a, np.ndarray):
                raise SimulationError(f"argument {p.name} ({p.ctype}) must be a numpy array")
            if a.dtype != p.dtype:
                raise SimulationError(f"argument {p.name} is {p.ctype} but the array has dtype {a.dtype}")
            if not a.flags.c_contiguous:
                raise SimulationError(f"argument {p.name}: the array must be C-contiguous (it is written in place)")
            g = GlobalArray(p.name, a.reshape(-1), base)
            base += (a.nbytes + 255) // 256 * 256 + 256
            globals_.append(g)
        else:
            if isinstance(a, np.ndarray) and a.ndim > 0:
                raise SimulationError(f"argument {p.name} ({p.ctype}) must be a scalar")
            globals_.append(None)
    consts = []
    constants = constants or {}
    unknown = set(constants) - {c.name for c in program.constants}
    if unknown:
        raise SimulationError(f"unknown __constant__ symbol(s) {sorted(unknown)}; the kernel declares "
                              f"{[c.name for c in program.constants]}")
    for decl, t in zip(program.constants, program.const_types):
        n = t.elems
        data = np.zeros(n, decl.dtype)
        if decl.name in constants:
            src = np.asarray(constants[decl.name]).reshape(-1)
            if src.size > n:
                raise SimulationError(f"__constant__ {decl.name} holds {n} elements; {src.size} given")
            data[:src.size] = src.astype(decl.dtype)
        consts.append(ConstArray(decl.name, data))

    scalars = {}
    for p, slot, a in zip(program.params, program.param_slots, args):
        if not p.is_pointer:
            try:     # C conversion of the host value to the parameter's type (-1 -> 0xffffffff for unsigned)
                scalars[slot] = np.asarray(a).astype(p.dtype)[()]
            except (TypeError, ValueError):
                raise SimulationError(f"argument {p.name} ({p.ctype}) must be a number, got {a!r}") from None

    if block_ids is None:
        ids = np.arange(total_blocks, dtype=np.int64)
    else:
        ids = np.asarray(block_ids, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= total_blocks):
            raise SimulationError(f"block_ids must lie in [0, {total_blocks})")
    max_lanes = max_lanes or DEFAULT_MAX_LANES
    per_batch = max(1, max_lanes // tpb)
    if program.local_bytes:     # thread-local arrays live per lane: keep them under LOCAL_BUDGET per batch
        per_batch = max(1, min(per_batch, LOCAL_BUDGET // (program.local_bytes * tpb)))
    counters = Counters(len(program.sites), len(ids))
    shared_layout = _shared_layout(program, dynamic_shared_bytes)
    max_steps = max_steps or DEFAULT_MAX_STEPS

    with np.errstate(all="ignore"):
        for start in range(0, len(ids), per_batch):
            batch = ids[start:start + per_batch]
            ctx = Ctx(program, counters, batch, start, grid, block, max_steps)
            ctx.globals = globals_
            ctx.consts = consts
            ctx.shared = [BatchArray(name, "shared", np.zeros((len(batch), n), dt), word_off)
                          for name, dt, n, word_off in shared_layout]
            for p, slot, a in zip(program.params, program.param_slots, args):
                if not p.is_pointer:
                    ctx.vals[slot] = scalars[slot]
            if program.body is not None:
                program.body(ctx)
            _finish_batch(ctx, counters, start)
    per_block = counters.per_block
    return build_result(program, counters, globals_, per_block, ids, total_blocks, tpb, list(args))


def _shared_layout(program, dynamic_bytes):
    """(name, dtype, elements, word offset) per __shared__ declaration, in declaration order."""
    out = []
    off = 0
    for decl, t in zip(program.shared, program.shared_types):
        isz = decl.dtype.itemsize
        if decl.shape == (None,):
            n = dynamic_bytes // isz
        else:
            n = t.elems
        align = max(isz, 4)
        off = (off + align - 1) // align * align
        out.append((decl.name, decl.dtype, n, off // 4))
        off += n * isz
    return out


def _finish_batch(ctx: Ctx, counters: Counters, start: int):
    sl = slice(start, start + ctx.nB)
    pb = counters.per_block
    pb["flops"][sl] += ctx.pb_flops + ctx.flops_full * ctx.T
    pb["threads"][sl] += ctx.T
    if ctx.worked_full:
        idle = 0
    elif ctx.worked is None:
        idle = ctx.T
    else:
        idle = ctx.T - np.count_nonzero(ctx.worked.reshape(ctx.nB, -1), axis=1)
    pb["idle_threads"][sl] += idle
