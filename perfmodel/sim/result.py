"""Counts (the JSON contract), per-line aggregates, and the simulation result, from the executor's counters."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perfmodel.ptx.ir import Module
from perfmodel.sim import atomic_count as ATOM
from perfmodel.sim import coalesce as COAL
from perfmodel.sim.alu import FP_KIND
from perfmodel.sim.issue import ptx_class
from perfmodel.sim.tensor import flops_per_warp, input_type


@dataclass
class Counts:
    flops: int = 0
    int_ops: int = 0
    fp_ops: dict = field(default_factory=lambda: dict(add=0, mul=0, fma=0, div=0, special=0, packed=0))
    fp64_ops: int = 0
    fp64_flops: int = 0                 # the double-precision part of flops
    fp64_pipe_ops: int = 0              # FP64-pipe instructions (per thread): a division's Newton steps each count
    global_: dict = field(default_factory=lambda: dict(
        loads=0, stores=0, load_requests=0, store_requests=0, load_sectors=0, store_sectors=0, load_bytes=0,
        store_bytes=0, atomics=0, atomic_requests=0, atomic_same_address=0, unique_load_sectors=0,
        unique_store_sectors=0, load_lines=0, store_lines=0))
    shared: dict = field(default_factory=lambda: dict(
        loads=0, stores=0, load_requests=0, store_requests=0, load_wavefronts=0, store_wavefronts=0, atomics=0,
        atomic_requests=0, atomic_same_address=0, load_bytes=0, store_bytes=0))
    constant: dict = field(default_factory=lambda: dict(loads=0, load_requests=0, load_wavefronts=0, load_bytes=0))
    local: dict = field(default_factory=lambda: dict(loads=0, stores=0, load_requests=0, store_requests=0,
                                                     load_bytes=0, store_bytes=0))
    # tensor cores (wmma.mma, mma.sync): warp instructions, and 2 M N K flops per warp instruction by A/B operand type
    tensor: dict = field(default_factory=lambda: dict(mma=0, flops={}))
    barriers: int = 0
    barrier_warps: int = 0
    branches: int = 0
    divergent_branches: int = 0
    simt_efficiency: float = 1.0
    warp_instructions: int = 0          # SASS-level estimate (PTX weighted per source line), else PTX
    ptx_warp_instructions: int = 0
    ptx_classes: dict = field(default_factory=dict)   # PTX warp instructions per class (perfmodel.sim.issue)
    thread_instructions: int = 0
    threads: int = 0
    warps: int = 0
    blocks: int = 0
    idle_threads: int = 0

    def to_json(self) -> dict:
        return {
            "flops": self.flops, "int_ops": self.int_ops, "fp_ops": dict(self.fp_ops), "fp64_ops": self.fp64_ops,
            "fp64_flops": self.fp64_flops, "fp64_pipe_ops": self.fp64_pipe_ops,
            "global": dict(self.global_), "shared": dict(self.shared), "constant": dict(self.constant),
            "local": dict(self.local), "tensor": {"mma": self.tensor["mma"], "flops": dict(self.tensor["flops"])},
            "barriers": self.barriers, "barrier_warps": self.barrier_warps,
            "branches": self.branches, "divergent_branches": self.divergent_branches,
            "simt_efficiency": self.simt_efficiency, "warp_instructions": self.warp_instructions,
            "ptx_warp_instructions": self.ptx_warp_instructions, "ptx_classes": dict(self.ptx_classes),
            "thread_instructions": self.thread_instructions,
            "threads": self.threads, "warps": self.warps, "blocks": self.blocks, "idle_threads": self.idle_threads,
        }


@dataclass
class SimResult:
    counts: Counts
    lines: dict            # source line -> aggregates (the kernel's own file)
    per_block: dict        # metric -> np.ndarray over simulated blocks
    block_ids: np.ndarray
    blocks_simulated: int
    total_blocks: int
    instructions: list = field(repr=False, default_factory=list)   # per executed PTX instruction rows
    args: list = field(repr=False, default_factory=list)
    replication: object = None     # perfmodel.sim.replicate.Replication when the run tried to replicate blocks
    skipped_iterations: int = 0    # loop iterations counted from identical executed ones (sim.loops): their
                                   # values were not computed, so neither were the outputs
    # source line -> (global load sectors, of them first touches: sectors no earlier load of the run touched);
    # only from a run with first_touch=True
    load_reuse_by_line: dict | None = None
    notes: list = field(default_factory=list)     # what the run did that the user should know (messages)
    # track_writes: name -> (elements the run stored to, elements its atomics updated), boolean masks
    written: dict = field(default_factory=dict)
    # "path:line" -> aggregates for the lines of other files (headers the kernel's file includes: a CUB block
    # reduction, a helper's device function), the same figures as ``lines``
    header_lines: dict = field(default_factory=dict)

    @property
    def sampled(self) -> bool:
        return self.blocks_simulated < self.total_blocks


def _new_line():
    return dict(flops=0, int_ops=0, global_loads=0, global_stores=0, global_requests=0, global_sectors=0,
                global_lines=0, shared_loads=0, shared_stores=0, shared_wavefronts=0, constant_loads=0,
                constant_wavefronts=0, local_accesses=0, atomics=0, barriers=0, divergent_branches=0,
                warp_instructions=0, ptx_warp_instructions=0)


def _line_slot(key, lines: dict, header_lines: dict) -> dict | None:
    """The per-line aggregate for a line key (:meth:`perfmodel.ptx.ir.Module.line_key`): ``lines`` for the kernel's
    own file, ``header_lines`` for another's ``"path:line"``; None for code tied to no line."""
    if key is None:
        return None
    into = header_lines if isinstance(key, str) else lines
    ln = into.get(key)
    if ln is None:
        ln = into[key] = _new_line()
    return ln


def _line_order(item):
    """Sort key of per-line items: the kernel's own lines by number, then the headers' by path and number."""
    path, line = Module.split_line_key(item[0])
    return (0, "", line) if path is None else (1, path, line)


def _space(ins) -> str:
    for m in ins.mods:
        m = m.split("::")[0]          # .shared::cta is .shared
        if m in ("global", "shared", "local", "const", "param"):
            return m
    return "generic"


def build_result(launch, counters, per_block, block_ids, total_blocks, args, sass_weights=None,
                 primary_file: int | None = None) -> SimResult:
    """Totals, per-line aggregates and per-instruction rows from the counters of every batch.

    ``sass_weights``: SASS instructions per PTX instruction of the entry function (see
    :func:`perfmodel.kernel._sass_weights`), which turns executed PTX warp instructions into SASS-level ones."""
    c = Counts()
    builder = launch.builder
    lines: dict = {}
    header_lines: dict = {}    # "path:line" -> aggregates (other files' lines)
    module = launch.program.module
    reuse: dict = {}           # line -> [load sectors, first touches] (first_touch runs)
    rows = []
    cnt = counters
    thread_insts = 0
    tensor_flops = 0
    spins = getattr(launch.program, "sass_spin", None) or {}
    facts = getattr(launch.program, "sass_facts", None)
    widths = facts().shared_widths if facts is not None else {}
    expansion = facts().fp64_expansion if facts is not None else {}
    fp64_pipe_extra = 0.0
    arrays_of: dict = {}            # instruction -> {array: threads}
    for (g_, name), n in cnt.array_threads.items():
        arrays_of.setdefault(g_, {})[name] = n
    for fname, cf in builder.funcs.items():
        bbw = cnt.bb_warps.get(fname)
        if bbw is None:
            continue
        bbt = cnt.bb_threads[fname]
        divw = cnt.div_warps[fname]
        f = cf.func
        for b, blk in enumerate(f.blocks):
            w_b, t_b = bbw[b], bbt[b]
            if not w_b:
                continue
            # the warp executions the SASS issues: a further-unrolled loop regroups its iterations (sim/regroup.py)
            w_sass = w_b + cnt.sass_copies.get((fname, b), 0)
            cblk = cf.blocks[b]
            if cblk.term == "cbra":
                c.branches += w_b
                c.divergent_branches += divw[b]
            for k in range(blk.start, blk.end):
                ins = f.instrs[k]
                gid = ins.index
                c.ptx_warp_instructions += w_b
                pc = ptx_class(ins)
                c.ptx_classes[pc] = c.ptx_classes.get(pc, 0) + w_b
                thread_insts += t_b
                weight = 1.0 if sass_weights is None or fname != launch.program.entry else sass_weights[k]
                if k in expansion and fname == launch.program.entry and ins.guard is None:
                    fp64_pipe_extra += t_b * (expansion[k] - 1.0)
                spin = spins.get(k) if fname == launch.program.entry else None
                if spin and sass_weights is not None:
                    # an atomic that is a compare-and-swap loop in SASS: one round per lane sharing an address
                    sass_extra = cnt.conflicts[gid] * spin
                else:
                    sass_extra = 0
                line_key = module.line_key(ins, primary_file)
                ln = _line_slot(line_key, lines, header_lines)
                if ln is not None:
                    ln["ptx_warp_instructions"] += w_b
                    ln["warp_instructions"] += w_sass * weight + sass_extra
                c.warp_instructions += w_sass * weight + sass_extra
                op = ins.opcode
                parts = []
                if op in ("ld", "ldu", "st", "atom", "red", "tex", "suld", "sust", "wmma", "cp", "ldmatrix",
                          "stmatrix") and cnt.requests[gid]:
                    # texture fetches and surface accesses count as global loads and stores of their texels
                    # (perfmodel/sim/texture.py); a bulk copy (cp.async.bulk: perfmodel/sim/mbarrier.py) as the
                    # global loads of its bytes
                    sp = "global" if op in ("tex", "suld", "sust", "cp") else _space(ins)
                    split = cnt.generic_split.get(gid)
                    if sp == "generic" and split:
                        # a generic access: count each part in the space its lanes' addresses fell in
                        parts = [(space, *vals) for space, vals in split.items()]
                    else:
                        parts = [(sp, cnt.threads[gid], cnt.requests[gid], cnt.units[gid], cnt.lines[gid],
                                  cnt.bytes[gid])]
                for sp, th, rq, un, li, by in parts:
                    load = op in ("ld", "ldu", "tex", "suld", "cp", "ldmatrix") or op == "wmma" and ins.mods[0] == "load"
                    row = {"line": ins.line, "ptx": ins.text.strip(), "kind": f"{sp} {op}", "threads": th,
                           "requests": rq,
                           "arrays": dict(arrays_of.get(gid, ()))}
                    if op in ("atom", "red"):
                        tgt = c.global_ if sp in ("global", "generic") else c.shared
                        tgt["atomics"] += th
                        tgt["atomic_requests"] += rq
                        tgt["atomic_same_address"] += cnt.conflicts[gid]
                        if ln is not None:
                            ln["atomics"] += th
                    elif sp in ("global", "generic"):
                        g = c.global_
                        g["loads" if load else "stores"] += th
                        g["load_requests" if load else "store_requests"] += rq
                        g["load_sectors" if load else "store_sectors"] += un
                        g["load_bytes" if load else "store_bytes"] += by
                        g["load_lines" if load else "store_lines"] += li
                        COAL.add_to_global(g, load, cnt.cc1.get(gid))
                        row.update(sectors=un, lines=li, bytes=by)
                        reuse_key = module.model_line_key(ins, primary_file) if load and ln is not None and \
                            launch.count_first_touch else None
                        if reuse_key is not None:
                            r = reuse.setdefault(reuse_key, [0, 0])
                            r[0] += un
                            r[1] += counters.first_touch.get(gid, 0)
                        if ln is not None:
                            ln["global_loads" if load else "global_stores"] += th
                            ln["global_requests"] += rq
                            ln["global_sectors"] += un
                            ln["global_lines"] += li
                    elif sp == "shared":
                        s = c.shared
                        if load and gid in widths:
                            # merged into wider SASS loads (perfmodel.kernel._shared_load_widths): fewer requests
                            own = by / th if th else 4
                            rq = rq * sum(share * own / width for width, share in widths[gid])
                            row["requests"] = rq
                        s["loads" if load else "stores"] += th
                        s["load_requests" if load else "store_requests"] += rq
                        s["load_wavefronts" if load else "store_wavefronts"] += un
                        s["load_bytes" if load else "store_bytes"] += by
                        row.update(wavefronts=un, bytes=by)
                        if ln is not None:
                            ln["shared_loads" if load else "shared_stores"] += th
                            ln["shared_wavefronts"] += un
                    elif sp == "const":
                        k_ = c.constant
                        k_["loads"] += th
                        k_["load_requests"] += rq
                        k_["load_wavefronts"] += un
                        k_["load_bytes"] += by
                        row.update(wavefronts=un)
                        if ln is not None:
                            ln["constant_loads"] += th
                            ln["constant_wavefronts"] += un
                    elif sp == "local":
                        c.local["loads" if load else "stores"] += th
                        c.local["load_requests" if load else "store_requests"] += rq
                        c.local["load_bytes" if load else "store_bytes"] += by
                        if ln is not None:
                            ln["local_accesses"] += th
                    rows.append(row)
                if op in ("bar", "barrier"):
                    # a barrier instance counts once, at its first bar.sync; a bar.sync that completes one the
                    # other branch of the block started (machine.py BarrierWait) adds its warps only
                    c.barriers += cnt.block_execs[gid]
                    c.barrier_warps += cnt.requests[gid]
                    if ln is not None:
                        ln["barriers"] += cnt.block_execs[gid]
                if (op == "wmma" and ins.mods[:1] == ("mma",)) or op == "mma":
                    tf = flops_per_warp(ins) * w_b
                    c.tensor["mma"] += w_b
                    t_in = input_type(ins) or "other"
                    c.tensor["flops"][t_in] = c.tensor["flops"].get(t_in, 0) + tf
                    tensor_flops += tf
                    if ln is not None:
                        ln["flops"] += tf
                if ln is not None:
                    kind = FP_KIND.get(op)
                    if kind is not None and ins.type in ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2") \
                            and ins.guard is None:
                        ln["flops"] += t_b * (2 if kind == "fma" else 1)
            if cblk.term == "cbra":
                slot = _line_slot(module.line_key(f.instrs[blk.end - 1], primary_file), lines, header_lines)
                if slot is not None:
                    slot["divergent_branches"] += divw[b]
    c.flops = cnt.flops + tensor_flops       # tensor-core flops count as flops (GFLOPS, CGMA), run on their own pipe
    c.fp_ops = dict(cnt.fp)
    c.fp64_ops = cnt.fp64
    c.fp64_flops = cnt.fp64_flops
    c.fp64_pipe_ops = int(round(cnt.fp64 + fp64_pipe_extra))
    c.int_ops = cnt.int_ops
    c.warp_instructions = int(round(c.warp_instructions))
    for k in ("load_requests", "load_wavefronts", "store_wavefronts"):
        c.shared[k] = int(round(c.shared[k]))
    c.thread_instructions = thread_insts
    c.simt_efficiency = thread_insts / (32.0 * c.ptx_warp_instructions) if c.ptx_warp_instructions else 1.0
    heap = launch.heap
    ATOM.add_counts(c.global_, c.shared, counters.atomic_ops)
    c.global_["unique_load_sectors"] = int(np.count_nonzero(heap.loaded))
    c.global_["unique_store_sectors"] = int(np.count_nonzero(heap.stored))
    nb = len(block_ids)
    c.blocks = nb
    c.threads = nb * launch.T
    c.warps = nb * launch.nw_real
    c.idle_threads = int(per_block["idle_threads"].sum())
    for ln in (*lines.values(), *header_lines.values()):
        ln["warp_instructions"] = int(round(ln["warp_instructions"]))
        ln["shared_wavefronts"] = int(round(ln["shared_wavefronts"]))
    if 0 in lines and not any(lines[0].values()):
        del lines[0]          # compiler-generated code (.loc line 0) that did nothing counted
    return SimResult(counts=c, lines=dict(sorted(lines.items())), per_block=per_block, block_ids=block_ids,
                     blocks_simulated=nb, total_blocks=total_blocks, instructions=rows, args=args,
                     load_reuse_by_line={k: tuple(v) for k, v in sorted(reuse.items(), key=_line_order)}
                     if launch.count_first_touch else None, header_lines=dict(sorted(header_lines.items(), key=_line_order)))
