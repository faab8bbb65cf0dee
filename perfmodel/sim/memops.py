"""Loads, stores and atomics on every state space, with their counting.

Global: one request per warp with an active lane; sectors = distinct 32-byte sectors a warp touches, lines =
distinct 128-byte lines (the L1's tag granule). Shared: wavefronts = per warp, the largest number of distinct
4-byte words in one of the 32 banks (the same word is a broadcast); 64- and 128-bit accesses touch 2 or 4 words
per thread. Constant: one wavefront per distinct address in a warp (serialisation). Local: lane and warp counts.
Atomics also count, per warp request, the largest number of lanes on one address (same-address serialisation).
"""
from __future__ import annotations

import numpy as np

from perfmodel.ptx.ir import TYPES, Addr, Imm, Sym, Vec
from perfmodel.sim import warps as W
from perfmodel.sim.alu import Unsupported
from perfmodel.sim.values import DT, as_type

SPACES = ("global", "shared", "local", "const", "param")


def _space_of(mods, spaces, default):
    """The state space among an instruction's modifiers; ``.shared::cta`` is ``.shared`` (``::cluster``, distributed
    shared memory, is not modelled and is rejected)."""
    for m in mods:
        base, _, scope = m.partition("::")
        if base in spaces:
            if scope and scope != "cta":
                raise Unsupported(f".{m} (distributed shared memory / cluster scope)")
            return base
    return default


def access_parts(ins):
    space = _space_of(ins.mods, SPACES, "generic")
    vec = 1
    for m in ins.mods:
        if m in ("v2", "v4", "v8"):
            vec = int(m[1:])
    t = ins.type
    return space, vec, t


def address_getter(addr: Addr, ops):
    """g(st, fr) -> int64 address array (the space's own addresses)."""
    off = addr.offset
    base = addr.base
    if isinstance(base, Imm):
        a = np.full((1, 1), int(base.value) + off, np.int64)
        return lambda st, fr: a
    if isinstance(base, Sym):
        a = np.full((1, 1), ops.symbols.address(base.name) + off, np.int64)
        return lambda st, fr: a
    s = ops.slot(base)
    key = object()

    def reg_addr(st, fr):
        v = fr.r[s]
        if v is None:
            return np.full((1, 1), off, np.int64)
        if v.dtype == np.int64 and not off:
            return v
        if v.shape[0] != 1:
            return (v.astype(np.int64) if v.dtype != np.int64 else v) + off
        # a lane-only address (one row): registers are never written in place, so the same register value gives
        # the same address array - the same object, which lets memory.py reuse its bounds check and counts
        hit = st.addr_memo.get(key)
        if hit is not None and hit[0] is v:
            return hit[1]
        a = (v.astype(np.int64) if v.dtype != np.int64 else v) + off
        st.addr_memo[key] = (v, a)
        return a
    return reg_addr


def _dest_regs(op):
    if isinstance(op, Vec):
        return list(op.items)
    return [op]


# ---- the builders --------------------------------------------------------------------------------------------

def b_ld(ins, ops):
    space, vec, t = access_parts(ins)
    if t is None:
        raise Unsupported("ld without a type")
    if space == "param":
        return _param_load(ins, ops, vec, t)
    ga = address_getter(ins.operands[1], ops)
    dests = _dest_regs(ins.operands[0])
    writers = [ops.writer(d) for d in dests]
    size = TYPES[t][1]
    idx = ins.index
    dt = DT[t]
    if t == "b128":
        raise Unsupported("128-bit scalar loads (.b128)")

    def ld(st, fr):
        a = ga(st, fr)
        vals = st.mem_access(idx, space, a, size, vec, dt, None)
        for w, v in zip(writers, vals):
            w(st, fr, v)
    return ld


def b_st(ins, ops):
    space, vec, t = access_parts(ins)
    if space == "param":
        return _param_store(ins, ops, vec, t)
    ga = address_getter(ins.operands[0], ops)
    srcs = _dest_regs(ins.operands[1])
    getters = [ops.reader(s, t) for s in srcs]
    size = TYPES[t][1]
    idx = ins.index
    dt = DT[t]
    if "async" in ins.mods:         # the shared store of a cp.async (perfmodel.ptx.parse.lower_cp_async)
        def st_async(st, fr):
            st.mem_access(idx, space, ga(st, fr), size, vec, dt, [g(st, fr) for g in getters], defer=True)
        return st_async

    def st_(st, fr):
        a = ga(st, fr)
        st.mem_access(idx, space, a, size, vec, dt, [g(st, fr) for g in getters])
    return st_


def b_cp_async_group(ins, ops):
    """``cp.async.commit_group``, ``cp.async.wait_group N``, ``cp.async.wait_all`` (perfmodel/sim/async_copy.py)."""
    kind = ins.mods[1]
    if kind == "commit_group":
        return lambda st, fr: st.cp_async_commit()
    if kind == "wait_all":
        def wait_all(st, fr):
            st.cp_async_commit()
            st.cp_async_wait(0)
        return wait_all
    if len(ins.operands) != 1 or not isinstance(ins.operands[0], Imm):
        raise Unsupported("cp.async.wait_group without a constant group count")
    n = int(ins.operands[0].value)
    return lambda st, fr: st.cp_async_wait(n)


def _param_load(ins, ops, vec, t):
    addr = ins.operands[1]
    if isinstance(addr, Addr) and not isinstance(addr.base, Sym) and ops.func.is_entry:
        return _kernel_param_gather(ins, ops, addr, vec, t)
    if not isinstance(addr, Addr) or not isinstance(addr.base, Sym):
        raise Unsupported("ld.param through a register address outside the kernel's own parameters")
    name, off = addr.base.name, addr.offset
    writers = [ops.writer(d) for d in _dest_regs(ins.operands[0])]
    size = TYPES[t][1]
    dt = DT[t]

    def ldp(st, fr):
        for k, w in enumerate(writers):
            w(st, fr, st.param_read(fr, name, off + k * size, dt))
    return ldp


def _kernel_param_gather(ins, ops, addr, vec, t):
    """``ld.param`` of the kernel's parameters through a register (``mov.u64 %rd, param; ld.param [%rd + i]``: a
    struct parameter indexed at run time): each thread reads the launch's packed parameter bytes at its own
    offset, bounds-checked against the parameter buffer."""
    ga = address_getter(addr, ops)
    writers = [ops.writer(d) for d in _dest_regs(ins.operands[0])]
    size = TYPES[t][1]
    dt = DT[t]
    gid = ins.index

    def ldp_gather(st, fr):
        buf = np.frombuffer(st.launch.param_buf, np.uint8)
        a = ga(st, fr)
        off = st._check(gid, a, 0, len(buf) - size * len(writers) + 1, "kernel-parameter load")
        for k, w in enumerate(writers):
            raw = buf[off[..., None] + (k * size + np.arange(size))]
            w(st, fr, np.ascontiguousarray(raw).view(dt)[..., 0])
    return ldp_gather


def _param_store(ins, ops, vec, t):
    addr = ins.operands[0]
    if not isinstance(addr, Addr) or not isinstance(addr.base, Sym):
        raise Unsupported("st.param through a register address")
    name, off = addr.base.name, addr.offset
    getters = [ops.reader(s, t) for s in _dest_regs(ins.operands[1])]
    size = TYPES[t][1]

    def stp(st, fr):
        for k, g in enumerate(getters):
            st.param_write(fr, name, off + k * size, g(st, fr))
    return stp


ATOM_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")


def b_atom(ins, ops):
    red = ins.opcode == "red"
    space = _space_of(ins.mods, ("global", "shared"), "generic")
    op = next((m for m in ins.mods if m in ATOM_OPS), None)
    if op is None:
        raise Unsupported(f"{ins.opcode} with modifiers {'.'.join(ins.mods)}")
    vec = next((int(m[1:]) for m in ins.mods if m in ("v2", "v4", "v8")), 1)
    t = ins.type
    if t in ("f16x2", "bf16x2", "f16", "bf16") or vec > 1:
        return _atom_parts(ins, ops, red, space, op, t, vec)
    operands = ins.operands if red else ins.operands[1:]
    ga = address_getter(operands[0], ops)
    gb = ops.reader(operands[1], t)
    gc = ops.reader(operands[2], t) if op == "cas" else None
    w = None if red else ops.writer(ins.operands[0])
    idx = ins.index
    dt = DT[t]
    size = TYPES[t][1]

    def atom(st, fr):
        a = ga(st, fr)
        b = gb(st, fr)
        c = gc(st, fr) if gc is not None else None
        old = st.atomic(idx, space, a, size, dt, op, b, c)
        if w is not None and old is not None:
            w(st, fr, old)
    return atom


def _atom_parts(ins, ops, red, space, op, t, vec):
    """Float atomic adds on 16-bit halves (``atom.add.noftz.f16 / .bf16``, and ``.f16x2 / .bf16x2``: both halves of
    a word, each on its own) and vector atomic adds (``atom.global.add.v2.f32 / .v4.f32``, CC 9.0: each element on
    its own), each element rounded to its type after every add, as the GPU does (PTX ISA, atom). One request per
    warp for the whole access."""
    import ml_dtypes

    BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
    if op != "add" or (vec > 1 and t not in ("f32", "f16x2", "bf16x2", "f16", "bf16")):
        raise Unsupported(f"{ins.opcode}.{op}{'.v' + str(vec) if vec > 1 else ''}.{t}")
    elem = {"f16": np.dtype(np.float16), "f16x2": np.dtype(np.float16), "bf16": BFLOAT16, "bf16x2": BFLOAT16,
            "f32": np.dtype(np.float32)}[t]
    halves = 2 if t in ("f16x2", "bf16x2") else 1
    operands = ins.operands if red else ins.operands[1:]
    ga = address_getter(operands[0], ops)
    srcs = list(operands[1].items) if isinstance(operands[1], Vec) else [operands[1]]
    dests = [] if red else (list(ins.operands[0].items) if isinstance(ins.operands[0], Vec) else [ins.operands[0]])
    if len(srcs) != vec or (dests and len(dests) != vec):
        raise Unsupported(f"{ins.opcode} with {len(srcs)} values for .v{vec}")
    readers = [ops.reader(r, t) for r in srcs]
    writers = [ops.writer(d) for d in dests]
    idx = ins.index

    def parts_of(v):
        """A register's elements, as ``elem``: the two halves of an x2 word, a 16-bit float's bits."""
        v = np.ascontiguousarray(v)
        if halves == 2:
            v = v.astype(np.uint32, copy=False).view(np.uint16)
            return [v[..., 0::2].view(elem), v[..., 1::2].view(elem)]
        return [as_type(v, elem)]

    def atom(st, fr):
        a = ga(st, fr)
        b = [p for g in readers for p in parts_of(g(st, fr))]
        if len(b) == 1:
            old = st.atomic(idx, space, a, elem.itemsize, elem, op, b[0], None)
            old = None if old is None else [old]
        else:
            old = st.atomic(idx, space, a, elem.itemsize, elem, op, b, None, parts=len(b))
        if not writers or old is None:
            return
        for k, wr in enumerate(writers):
            if halves == 2:
                lo, hi = (np.ascontiguousarray(o).view(np.uint16).astype(np.uint32) for o in old[2 * k:2 * k + 2])
                wr(st, fr, lo | (hi << 16))
            else:
                wr(st, fr, old[k])
    return atom


# ---- the counting helpers used by the executor state ---------------------------------------------------------

def rows2d(a: np.ndarray, m, nB: int, Tp: int):
    """Lanes of ``a`` and of the mask as (rows, Tp) arrays plus the block multiplicity of each row."""
    if a.shape[0] == 1 and (m is None or m.shape[0] == 1):
        k2 = np.broadcast_to(a, (1, Tp))
        m2 = None if m is None else np.broadcast_to(m, (1, Tp))
        return k2, m2, nB
    return np.broadcast_to(a, (nB, Tp)), (None if m is None else np.broadcast_to(m, (nB, Tp))), 1


def sectors_lines(addr_off: np.ndarray, m, nB, Tp, nbytes: int):
    if addr_off.shape[0] <= 4 and addr_off.shape[1] > 1 and (m is None or m.shape[0] == 1):
        # sectors and lines do not change when a row moves by whole 128-byte lines: memoise the pattern
        norm = addr_off - (addr_off[:, :1] & ~127)
        s, ln, _f = _memo(("sl", Tp, nbytes), (norm, m), lambda: _sectors_lines(norm, m, norm.shape[0], Tp, nbytes))
        return s, ln, (nB if addr_off.shape[0] == 1 else 1)
    return _sectors_lines(addr_off, m, nB, Tp, nbytes)


def _sectors_lines(addr_off: np.ndarray, m, nB, Tp, nbytes: int):
    """(sectors per row, lines per row, multiplicity): distinct 32-byte sectors / 128-byte lines per warp."""
    if nbytes <= 32 and nbytes & (nbytes - 1) == 0:
        sec = addr_off >> 5
        k2, m2, f = rows2d(sec, m, nB, Tp)
        s, ln = W.distinct_sectors_lines(np.ascontiguousarray(k2), None if m2 is None else np.ascontiguousarray(m2))
        return s.sum(axis=1), ln.sum(axis=1), f
    # an access wider than a sector (or unaligned): every sector it covers
    nsec = (nbytes + 31) // 32
    parts = [((addr_off + 32 * j) >> 5) for j in range(nsec)]
    k2s = [rows2d(p, m, nB, Tp) for p in parts]
    f = k2s[0][2]
    rows = k2s[0][0].shape[0]
    keys = np.stack([k[0] for k in k2s], axis=2).reshape(rows, -1)
    m2 = k2s[0][1]
    act = None if m2 is None else np.repeat(m2, nsec, axis=1)
    ds = W.distinct_per_warp(keys, None if act is None else act[:, ::nsec], lanes_per_thread=nsec)
    dl = W.distinct_per_warp(keys >> 2, None if act is None else act[:, ::nsec], lanes_per_thread=nsec)
    return ds.sum(axis=1), dl.sum(axis=1), f


_MEMO: dict = {}
_MEMO_MAX = 4096


def _memo(kind, key_arrays, compute):
    """Counting of small (one-row) address patterns is pure in the pattern: memoise it by the exact bytes."""
    key = (kind,) + tuple(None if a is None else (a.shape, a.dtype.str, a.tobytes()) for a in key_arrays)
    hit = _MEMO.get(key)
    if hit is None:
        hit = compute()
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        _MEMO[key] = hit
    return hit


def _small(a, m):
    return a.shape[0] == 1 and (m is None or m.shape[0] == 1)


def shared_wavefronts(addr: np.ndarray, m, nB, Tp, nbytes: int, load: bool = False):
    """(wavefronts per row, multiplicity). ``load``: 64- and 128-bit loads follow the measured grouping of
    :func:`perfmodel.sim.warps.wide_load_wavefronts`; stores and other widths the bank rule over the warp."""
    if _small(addr, m):
        wf, _f = _memo(("wf", nB, Tp, nbytes, load), (addr, m),
                       lambda: _shared_wavefronts(addr, m, 1, Tp, nbytes, load))
        return wf, nB
    return _shared_wavefronts(addr, m, nB, Tp, nbytes, load)


def _shared_wavefronts(addr: np.ndarray, m, nB, Tp, nbytes: int, load: bool = False):
    words = addr >> 2
    lpt = max(1, nbytes // 4)
    if load and lpt in (2, 4):
        k2, m2, f = rows2d(words, m, nB, Tp)
        return W.wide_load_wavefronts(k2, m2, lpt).sum(axis=1), f
    if lpt > 1:
        words = np.stack([words + j for j in range(lpt)], axis=-1)
        k2s = rows2d(words[..., 0], m, nB, Tp)
        f = k2s[2]
        rows = k2s[0].shape[0]
        full = np.broadcast_to(words, (rows, Tp, lpt)).reshape(rows, Tp * lpt)
        wf = W.wavefronts_per_warp(full, k2s[1], lanes_per_thread=lpt)
    else:
        k2, m2, f = rows2d(words, m, nB, Tp)
        wf = W.wavefronts_per_warp(k2, m2)
    return wf.sum(axis=1), f


def distinct_addresses(addr: np.ndarray, m, nB, Tp):
    if _small(addr, m):
        d, _f = _memo(("da", Tp), (addr, m), lambda: _distinct_addresses(addr, m, 1, Tp))
        return d, nB
    return _distinct_addresses(addr, m, nB, Tp)


def _distinct_addresses(addr: np.ndarray, m, nB, Tp):
    k2, m2, f = rows2d(addr, m, nB, Tp)
    return W.distinct_per_warp(np.ascontiguousarray(k2), None if m2 is None else np.ascontiguousarray(m2)) \
        .sum(axis=1), f


def max_same_address(addr: np.ndarray, m, nB, Tp):
    """Per warp, the largest number of active lanes on one address (1 when all differ); summed per row."""
    k2, m2, f = rows2d(addr, m, nB, Tp)
    rows = k2.shape[0]
    nw = Tp // 32
    k = np.ascontiguousarray(k2).reshape(rows * nw, 32)
    act = np.ones(k.shape, bool) if m2 is None else np.ascontiguousarray(m2).reshape(rows * nw, 32)
    lanes = act.sum(axis=1)
    best = np.minimum(lanes, 1)         # no lane: 0; one lane: 1
    several = np.flatnonzero(lanes > 1)  # only warps with two or more active lanes can share an address
    if several.size:
        big = np.iinfo(np.int64).max
        k = np.where(act[several], k[several], big)     # inactive lanes sort last and are not counted
        k = np.sort(k, axis=1)
        same = (k[:, 1:] == k[:, :-1]) & (k[:, 1:] != big)
        # longest run of equal keys per warp
        run = np.ones(k.shape, np.int64)
        for j in range(1, 32):
            run[:, j] = np.where(same[:, j - 1], run[:, j - 1] + 1, 1)
        best[several] = run.max(axis=1)
    return best.reshape(rows, nw).sum(axis=1), f

