"""Counts (the JSON contract), per-site and per-line aggregates, and the simulation result."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

_FLOPS = {"fp add": 1, "fp mul": 1, "fp fma": 2, "fp div": 1, "fp special": 1}


@dataclass
class Counts:
    flops: int = 0
    int_ops: int = 0
    fp_ops: dict = field(default_factory=lambda: dict(add=0, mul=0, fma=0, div=0, special=0))
    fp64_ops: int = 0
    global_: dict = field(default_factory=lambda: dict(
        loads=0, stores=0, load_requests=0, store_requests=0, load_sectors=0, store_sectors=0, load_bytes=0,
        store_bytes=0, atomics=0, atomic_requests=0, unique_load_sectors=0, unique_store_sectors=0,
        load_lines=0, store_lines=0))
    shared: dict = field(default_factory=lambda: dict(
        loads=0, stores=0, load_requests=0, store_requests=0, load_wavefronts=0, store_wavefronts=0, atomics=0,
        load_bytes=0, store_bytes=0))
    constant: dict = field(default_factory=lambda: dict(loads=0, load_requests=0, load_wavefronts=0, load_bytes=0))
    local: dict = field(default_factory=lambda: dict(loads=0, stores=0, load_requests=0, store_requests=0))
    barriers: int = 0
    barrier_warps: int = 0
    branches: int = 0
    divergent_branches: int = 0
    simt_efficiency: float = 1.0
    warp_instructions: int = 0
    threads: int = 0
    warps: int = 0
    blocks: int = 0
    idle_threads: int = 0

    def to_json(self) -> dict:
        return {
            "flops": self.flops, "int_ops": self.int_ops, "fp_ops": dict(self.fp_ops), "fp64_ops": self.fp64_ops,
            "global": dict(self.global_), "shared": dict(self.shared), "constant": dict(self.constant),
            "local": dict(self.local), "barriers": self.barriers, "barrier_warps": self.barrier_warps,
            "branches": self.branches, "divergent_branches": self.divergent_branches,
            "simt_efficiency": self.simt_efficiency, "warp_instructions": self.warp_instructions,
            "threads": self.threads, "warps": self.warps, "blocks": self.blocks, "idle_threads": self.idle_threads,
        }


@dataclass
class SimResult:
    counts: Counts
    sites: list            # one dict per source site with counters
    lines: dict            # line -> aggregates
    per_block: dict        # metric -> np.ndarray over simulated blocks
    block_ids: np.ndarray
    blocks_simulated: int
    total_blocks: int
    args: list = field(repr=False, default_factory=list)

    @property
    def sampled(self) -> bool:
        return self.blocks_simulated < self.total_blocks


def build_result(program, counters, globals_, per_block, block_ids, total_blocks, threads_per_block, args):
    c = Counts()
    site_rows = []
    lines: dict = {}
    for i, s in enumerate(program.sites):
        th, wp, un, by, be = (counters.threads[i], counters.warps[i], counters.units[i], counters.bytes[i],
                              counters.block_execs[i])
        li = counters.lines[i]
        kind = s.kind
        base = kind.replace(" f64", "")
        row = {"file": s.file, "line": s.line, "col": s.col, "kind": kind, "detail": s.detail, "threads": th,
               "warp_instructions": wp}
        ln = lines.setdefault(s.line, dict(flops=0, int_ops=0, global_loads=0, global_stores=0,
                                           global_requests=0, global_sectors=0, global_lines=0, shared_loads=0,
                                           shared_stores=0, shared_wavefronts=0, constant_loads=0,
                                           constant_wavefronts=0, local_accesses=0, atomics=0, barriers=0, divergent_branches=0,
                                           warp_instructions=0))
        ln["warp_instructions"] += wp
        c.warp_instructions += wp
        if base in _FLOPS:
            f = _FLOPS[base] * th
            c.flops += f
            c.fp_ops[base[3:]] += th
            ln["flops"] += f
            row["flops"] = f
            if kind.endswith("f64"):
                c.fp64_ops += th
        elif base == "int op":
            c.int_ops += th
            ln["int_ops"] += th
        elif base in ("global load", "global store"):
            ld = base == "global load"
            g = c.global_
            g["loads" if ld else "stores"] += th
            g["load_requests" if ld else "store_requests"] += wp
            g["load_sectors" if ld else "store_sectors"] += un
            g["load_bytes" if ld else "store_bytes"] += by
            g["load_lines" if ld else "store_lines"] += li
            ln["global_loads" if ld else "global_stores"] += th
            ln["global_requests"] += wp
            ln["global_sectors"] += un
            ln["global_lines"] += li
            row.update(requests=wp, sectors=un, lines=li, bytes=by)
        elif base in ("shared load", "shared store"):
            ld = base == "shared load"
            sh = c.shared
            sh["loads" if ld else "stores"] += th
            sh["load_requests" if ld else "store_requests"] += wp
            sh["load_wavefronts" if ld else "store_wavefronts"] += un
            sh["load_bytes" if ld else "store_bytes"] += by
            ln["shared_loads" if ld else "shared_stores"] += th
            ln["shared_wavefronts"] += un
            row.update(requests=wp, wavefronts=un, bytes=by)
        elif base == "constant load":
            c.constant["loads"] += th
            c.constant["load_requests"] += wp
            c.constant["load_wavefronts"] += un
            c.constant["load_bytes"] += by
            ln["constant_loads"] += th
            ln["constant_wavefronts"] += un
            row.update(requests=wp, wavefronts=un)
        elif base in ("local load", "local store"):
            ld = base == "local load"
            c.local["loads" if ld else "stores"] += th
            c.local["load_requests" if ld else "store_requests"] += wp
            ln["local_accesses"] += th
        elif base == "global atomic":
            c.global_["atomics"] += th
            c.global_["atomic_requests"] += wp
            ln["atomics"] += th
        elif base == "shared atomic":
            c.shared["atomics"] += th
            ln["atomics"] += th
        elif base == "barrier":
            c.barriers += be
            c.barrier_warps += wp
            ln["barriers"] += be
            row["blocks"] = be
        elif base == "branch":
            c.branches += wp
            c.divergent_branches += un
            ln["divergent_branches"] += un
            row["divergent_warps"] = un
        site_rows.append(row)
    total_threads = sum(counters.threads)
    c.simt_efficiency = (total_threads / (32.0 * c.warp_instructions)) if c.warp_instructions else 1.0
    for g in globals_:
        if g is not None:
            c.global_["unique_load_sectors"] += int(np.count_nonzero(g.loaded))
            c.global_["unique_store_sectors"] += int(np.count_nonzero(g.stored))
    nb = len(block_ids)
    c.blocks = nb
    c.threads = nb * threads_per_block
    c.warps = nb * ((threads_per_block + 31) // 32)
    c.idle_threads = int(per_block["idle_threads"].sum())
    return SimResult(counts=c, sites=site_rows, lines=dict(sorted(lines.items())), per_block=per_block,
                     block_ids=block_ids, blocks_simulated=nb, total_blocks=total_blocks, args=args)
