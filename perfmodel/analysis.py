"""``analyze``: run a kernel spec through the simulator and the models, for one device.

The pipeline (docs/architecture.md): spec -> Launch -> compile -> simulate (exact, or a stratified sample of
blocks for large grids) -> counts; registers (flag > spec > ptxas > estimate) and shared memory -> occupancy;
counts -> the seed CGMA model and the bottleneck model -> :class:`Analysis`.

The simulation does not depend on the device, so :func:`simulate_launch` is cached per (spec, params, sample)
and ``compare`` / ``sweep`` reuse it across devices.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel.errors import OccupancyError, RunawayKernel, SimulationError
from perfmodel.features import missing_notes, used_features
from perfmodel.model.bottleneck import BottleneckResult, bottleneck_model, device_rates
from perfmodel.model.mlp import (ilp_by_line, ilp_mix, load_round_lines, loads_in_flight_by_line, round_miss_factor,
                                 weighted_loads_in_flight)
from perfmodel.model.seed import SeedModel, seed_model
from perfmodel.model.traffic import SECTOR_BYTES, estimate_traffic, with_local
from perfmodel.ptx.ir import Module
from perfmodel.registers import Registers, resolve_registers
from perfmodel.sampling import DEFAULT_SAMPLE_BLOCKS, BlockSample, block_spread, extrapolate_counts, stratified_blocks

# Exact simulation is the default while the whole grid is expected to take at most this many warp instructions
# (estimated from one block simulated alone x the number of blocks) and has at most EXACT_BUDGET_THREADS threads.
# Measured on the 2-core machine with the PTX executor: ~1.5e7 SASS warp instructions per second for the tiled
# matmul (W=1024: 1.07e8 in ~7 s), ~3e6 for the global-load-bound naive one (W=512: 2.4e7 in ~8 s), ~1e6 threads
# per second for huge streaming grids; these limits keep an exact analysis within a few seconds.
EXACT_BUDGET_WARP_INSTRUCTIONS = 1e7
EXACT_BUDGET_THREADS = 1 << 21
# An exact run asked for (--sample 0) is refused above this many estimated warp instructions unless a --timeout
# bounds it: ~1 minute at the executor's best rate, far more at its worst (the tiled matmul at Width=2048 is 8.6e8).
EXACT_REFUSE_WARP_INSTRUCTIONS = 1e9
# Above this estimate (warp instructions of the whole grid, ~0.3 s of simulation) an exact run first tries to prove
# that all blocks do the same work (perfmodel.sim.replicate) and then simulates one block per class of identical
# blocks: the same counts, a fraction of the time; outputs are checked on the blocks that ran.
REPLICATE_MIN_WARP_INSTRUCTIONS = 1e6
# Above this estimate (~2 s of full execution) an exact run also counts long uniform loops from a few iterations
# (perfmodel.sim.loops): the same counts, but the values of the skipped iterations - so the outputs - are not
# computed.
FAST_LOOPS_MIN_WARP_INSTRUCTIONS = 2e6
# The block simulated alone first (the pilot) gets this many basic-block executions when the whole grid is small
# (at most PILOT_RETRY_WHOLE_MAX_THREADS threads): one that runs away alone may be waiting for other blocks' writes
# (HeCBench mis: every block iterates until no block changes a node), and is run again with the whole grid.
# 1/16 of the default limit: a few seconds, where the default takes 20-40 s to give up.
PILOT_SHORT_STEPS = (3 << 18) // 16
PILOT_RETRY_WHOLE_MAX_THREADS = 1 << 16


def _skipped_detail(n: int) -> str:
    return (f"{n:,} loop iterations were counted from identical iterations that ran, not executed, so the outputs "
            "were not computed (iterations of the compiled loop, whose body may hold several of the source's, run by "
            "a batch of warps together; a run this long does that; --execute-all executes everything)")
HOT_LINES = 6


@dataclass
class SimOutcome:
    """What the simulation of one launch gave (device independent)."""

    kernel: str
    params: dict
    counts: dict
    sampled: bool
    sample: BlockSample | None
    blocks_simulated: int
    total_blocks: int
    spread: dict
    correct: bool | None
    correct_detail: str
    lines: dict
    source_lines: list[str]
    static_shared_bytes: int
    param_bytes: int
    block_load_sectors: float | None
    block_footprint_sectors: float | None
    per_block_idle: dict
    sim_seconds: float
    sample_reason: str = ""
    round_miss_factor: float | None = None    # a load round's L1 misses over its loads' own (mlp.round_miss_factor)
    compile: dict = field(default_factory=dict)   # arch, arch_note, registers, spills, local bytes (compiler)
    replication: dict = field(default_factory=dict)   # an exact run from one block per class (sim.replicate)
    grid_sync: bool = False   # the kernel synchronises the grid: a cooperative launch, all its blocks resident
    notes: list = field(default_factory=list)     # the simulator's notes (SimResult.notes)
    # "path:line" -> aggregates for the lines of the headers the kernel's file includes (SimResult.header_lines),
    # and each such line's text
    header_lines: dict = field(default_factory=dict)
    header_source: dict = field(default_factory=dict)
    # the args after the run, in order (only with keep_args=True: the Python API writes them back)
    final_args: list | None = field(default=None, repr=False)
    # keep_args: the __device__ variables after the run, by name (a sampled run: where its blocks wrote)
    final_symbols: dict | None = field(default=None, repr=False)


@dataclass
class Analysis:
    kernel: str
    device: Any
    launch: Any
    sim: SimOutcome
    registers: Registers
    shared_memory_per_block: int
    occupancy: Any
    seed: SeedModel
    model: BottleneckResult
    advice: list[str] = field(default_factory=list)
    hot_lines: list[dict] = field(default_factory=list)

    # ---- headline figures -----------------------------------------------------------------------------------
    @property
    def counts(self) -> dict:
        return self.sim.counts

    @property
    def flops(self) -> float:
        return float(self.counts.get("flops", 0))

    @property
    def predicted_time_s(self) -> float:
        return self.model.predicted_time_s

    @property
    def predicted_gflops(self) -> float:
        return self.flops / self.predicted_time_s / 1e9 if self.predicted_time_s > 0 else 0.0

    @property
    def bound(self) -> str:
        return self.model.bound

    @property
    def cgma(self) -> float | None:
        return self.seed.cgma

    @property
    def achievable_gflops(self) -> float:
        return self.seed.achievable_gflops

    @property
    def correct(self) -> bool | None:
        """True: the outputs match the reference; False: they do not; None: no reference, not checked."""
        return self.sim.correct

    def to_dict(self) -> dict:
        """The ``perfmodel analyze --json`` document (the same keys: ``correct``, ``predicted_time_s``, ...)."""
        from perfmodel.report.jsonout import to_jsonable

        return to_jsonable(self.to_json())

    def to_rows(self) -> list[dict]:
        """DataFrame-ready rows: one flat row per analysis (kernel, device, launch, headline figures, occupancy,
        correctness and the main counts). ``pandas.DataFrame(a.to_rows() + b.to_rows())`` tabulates several."""
        from perfmodel.report.analyze_view import analysis_rows

        return analysis_rows(self.to_dict())

    def __rich__(self):
        from perfmodel.report.analyze_view import analysis_renderable

        return analysis_renderable(self.to_dict())

    def _repr_html_(self) -> str:
        from perfmodel.report.analyze_view import analysis_html

        return analysis_html(self.to_dict())

    def __repr__(self) -> str:
        correct = {True: "correct", False: "WRONG", None: "not checked"}[self.correct]
        return (f"<Analysis {self.kernel} on {self.device.id}: {self.predicted_time_s:.3g} s, bound "
                f"{self.bound}, occupancy {self.occupancy.occupancy:.0%}, outputs {correct}>")

    def to_json(self) -> dict:
        dev = self.device
        launch = self.launch
        model = self.model.to_json()
        resources = model.pop("resources")
        return {
            "kernel": self.kernel,
            "device": dev.id,
            "device_name": dev.name,
            "compute_capability": dev.compute_capability,
            "params": dict(launch.params),
            "launch": {
                "grid": list(launch.grid),
                "block": list(launch.block),
                "total_blocks": launch.total_blocks,
                "threads_per_block": launch.threads_per_block,
                "dynamic_shared_bytes": launch.dynamic_shared_bytes,
                "static_shared_bytes": self.sim.static_shared_bytes,
                "param_bytes": self.sim.param_bytes,
                "defines": dict(launch.defines),
            },
            "counts": copy.deepcopy(self.counts),   # the simulation is cached: never hand out its dicts
            "correct": self.sim.correct,
            "correct_detail": self.sim.correct_detail,
            "checked_outputs": [o.arg for o in launch.outputs],   # empty: no reference, correct is null
            "cgma": self.seed.cgma,
            "cgma_with_stores": self.seed.cgma_with_stores,
            "achievable_gflops": self.seed.achievable_gflops,
            "predicted_gflops": self.predicted_gflops,
            "predicted_time_s": self.predicted_time_s,
            "bound": self.bound,
            "seed_model": self.seed.to_json(),
            "occupancy": self.occupancy.to_json(),
            "registers_per_thread": self.registers.per_thread,
            "registers_source": self.registers.source,
            "registers_note": self.registers.note,
            "shared_memory_per_block": self.shared_memory_per_block,
            "resources": resources,
            "model": model,
            "sampled": self.sim.sampled,
            "sample": None if self.sim.sample is None else {**self.sim.sample.to_json(),
                                                             "reason": self.sim.sample_reason},
            "blocks_simulated": self.sim.blocks_simulated,
            "replication": dict(self.sim.replication) or None,
            "spread": copy.deepcopy(self.sim.spread),
            "idle": dict(self.sim.per_block_idle),
            "hot_lines": self.hot_lines,
            "advice": self.advice,
            "simulation_seconds": self.sim.sim_seconds,
            "compile": dict(self.sim.compile),
            "simulation_notes": list(self.sim.notes),
        }


# ---------------------------------------------------------------------------------------------------------
# Simulation (device independent, cached)

_SIM_CACHE: dict[tuple, SimOutcome] = {}
_SIM_CACHE_MAX = 64


def _spec(kernel):
    from perfmodel.spec import KernelSpec, load_spec

    return kernel if isinstance(kernel, KernelSpec) else load_spec(kernel)


def _counts_json(counts) -> dict:
    from perfmodel.report.jsonout import to_jsonable

    return to_jsonable(counts.to_json() if hasattr(counts, "to_json") else counts)


def _array_sectors(launch) -> float:
    total = 0
    for arg in launch.args:
        if arg.kind in ("array", "struct"):
            total += sum(math.ceil(a.nbytes / SECTOR_BYTES) for a in arg.arrays().values())
        elif arg.kind in ("texture", "surface"):
            total += math.ceil(arg.value.data.nbytes / SECTOR_BYTES)
    return float(total)


def _claims_work(program) -> bool:
    """Whether the kernel uses the value a global atomic returns (``t = atomicAdd(next, 1)``): blocks may then
    share work out among themselves. A histogram's atomicAdd, whose result is dropped, does not."""
    from perfmodel.ptx.ir import Reg

    module = program.module
    for name in [program.entry, *module.callees(program.entry)]:
        f = module.functions.get(name)
        if f is None:
            continue
        results = {ins.operands[0].name for ins in f.instrs if ins.opcode == "atom" and "shared" not in ins.mods
                   and ins.operands and isinstance(ins.operands[0], Reg)}
        if results and any(isinstance(o, Reg) and o.name in results for ins in f.instrs for o in ins.operands[1:]):
            return True
    return False


def _shares_work(program, launch, rep: int, pilot, limits, cc1_counts) -> bool:
    """Whether blocks share their work through a counter: two blocks run together each do at most 2/3 of what
    one did alone (a block's own work does not change with its neighbours)."""
    total = launch.total_blocks
    other = (rep + 1) % total
    alone = float(pilot.counts.warp_instructions)
    if alone <= 0:
        return False
    try:
        pair, _ = _run(program, launch, [rep, other], limits, fast_loops=False, cc1_counts=cc1_counts, outputs=False)
    except SimulationError:
        return False
    return float(pair.counts.warp_instructions) / 2 < alone * 2 / 3


def _working_block(program, launch, pilot, pilot_counts: dict, rep: int, limits, cc1_counts):
    """The centre block's run, unless its threads all idled (no flop, no memory access); then block 0's, where that
    one loads (grid-stride loops give their work to the first blocks), run alone as the centre one was."""
    threads = float(pilot_counts.get("threads", 0) or 0)
    if rep == 0 or not threads or float(pilot_counts.get("idle_threads", 0) or 0) < threads:
        return pilot
    try:
        first, _ = _run(program, launch, [0], limits, cc1_counts=cc1_counts, outputs=False, first_touch=True)
    except SimulationError:
        return pilot
    return first if float(_counts_json(first.counts).get("global", {}).get("loads", 0) or 0) > 0 else pilot


def _representative_block(grid: tuple[int, int, int]) -> int:
    """The block at the centre of the grid (an interior block wherever there is one)."""
    gx, gy, gz = grid
    x, y, z = gx // 2, gy // 2, gz // 2
    return int(x + gx * (y + gy * z))


class RunArgs(list):
    """A run's arguments in order, and its ``__device__`` variables after it by name (``symbols``)."""
    symbols: dict


def _run(program, launch, block_ids=None, limits: dict | None = None, replicate=False, fast_loops=False,
         cc1_counts: bool = True, outputs: bool = True, first_touch: bool = False, track=()):
    """One simulation of ``launch``; ``outputs=False``: nobody reads the arrays after the run, so the run reads
    the launch's own arrays (no copy) and writes nothing back (the returned args are the initial values)."""
    from perfmodel.sim import simulate

    limits = dict(limits or {})
    deadline = limits.pop("deadline", None)
    if deadline is not None:
        limits["timeout"] = max(1e-3, deadline - time.perf_counter())
    args = RunArgs(launch.arg_values(copy=outputs))
    symbols = launch.constant_values()
    args.symbols = launch.symbols_after(symbols)      # written back by the run
    result = simulate(program, launch.grid, launch.block, args, symbols,
                      dynamic_shared_bytes=launch.dynamic_shared_bytes,
                      block_ids=None if block_ids is None else np.asarray(block_ids, dtype=np.int64),
                      replicate=replicate, fast_loops=fast_loops, blank_inputs=getattr(launch, "blank", False),
                      cc1_counts=cc1_counts, write_back=outputs, first_touch=first_touch,
                      pointer_offsets=launch.pointer_offsets(), track_writes=track, **limits)
    return result, args


def _written(name, before, after, written) -> np.ndarray:
    """The elements of output ``name`` a run of some of the blocks wrote: those it stored to or an atomic updated
    (``SimResult.written``, tracked element by element), and those whose value changed (a write by a path that is not
    tracked)."""
    b = np.asarray(before).reshape(-1)
    a = np.asarray(after).reshape(-1)
    wrote = a != b
    if np.issubdtype(a.dtype, np.floating):
        wrote &= ~(np.isnan(a) & np.isnan(b))
    if name in written:
        stored, updated = written[name]
        if stored.size == wrote.size:
            wrote |= stored | updated
    return wrote


def _check_replicated(launch, args, replication, written=None):
    """(correct, detail) of a replicated run: the elements the blocks that ran wrote, checked."""
    if not launch.outputs:
        unchecked = launch.check_outputs(args)
        return unchecked.correct, unchecked.message
    if replication.overlapping_writes:
        return None, ("exact counts from one block per class of identical blocks; outputs not checked (several "
                      "blocks write or accumulate into the same elements, and only some blocks ran)")
    outputs = {o.arg for o in launch.outputs}
    before = {name: v for a in launch.args for name, v in a.arrays().items() if name in outputs}
    before.update({name: v for name, v in launch.symbol_arrays().items() if name in outputs})
    after = {name: v for a, value in zip(launch.args, args) for name, v in a.arrays(value).items()}
    after.update(getattr(args, "symbols", {}))
    changed = {name: _written(name, b, after[name], written or {}) for name, b in before.items()}
    checked = int(sum(int(m.sum()) for m in changed.values()))
    runs = len(replication.rep_ids)
    if not checked:
        return None, (f"exact counts with {runs:,} of {launch.total_blocks:,} blocks run (the others proved identical "
                      "to one of them); they wrote no output element, so outputs are not checked")
    check = launch.check_outputs(after, elements=changed)
    total = int(sum(m.size for m in changed.values()))
    return check.correct, (f"exact counts with {runs:,} of {launch.total_blocks:,} blocks run (the others proved "
                           f"identical to one of them); checked the {checked:,} of {total:,} output elements they "
                           f"wrote - {check.message}")


def _idle_summary(per_block: dict, threads_per_block: int, total_blocks: int) -> dict:
    """Blocks with some (partially idle) or all (fully idle) threads doing no work, e.g. picture_scale's edge
    blocks that overhang the picture."""
    idle = per_block.get("idle_threads") if per_block else None
    if idle is None:
        return {}
    arr = np.asarray(idle)
    partial = int(((arr > 0) & (arr < threads_per_block)).sum())
    full = int((arr >= threads_per_block).sum())
    out = {"partially_idle_blocks": partial, "fully_idle_blocks": full, "blocks": total_blocks,
           "extrapolated": False}
    if per_block.get("idle_warps") is not None:
        # warps none of whose threads worked, the fully idle blocks' included (per block simulated)
        out["idle_warps"] = int(np.asarray(per_block["idle_warps"]).sum())
    return out


def _hash_params(params: dict) -> tuple:
    return tuple(sorted((str(k), float(v)) for k, v in params.items()))


def simulate_launch(kernel, params: dict | None = None, sample: int | None = None, *,
                    exact_budget: float = EXACT_BUDGET_WARP_INSTRUCTIONS, launch=None,
                    check: bool = True, arch: str = "sm_90",
                    limits: dict | None = None, keep_args: bool = False,
                    execute_all: bool = False, cc1_counts: bool = True) -> tuple[Any, SimOutcome]:
    """Instantiate ``kernel`` with ``params``, compile and simulate it. Returns (launch, SimOutcome).

    ``sample=None``: exact unless the grid's estimated work exceeds ``exact_budget`` warp instructions (then a
    stratified sample of :data:`DEFAULT_SAMPLE_BLOCKS` blocks); ``sample=N``: a stratified sample of about N
    blocks; ``sample=0``: always exact. ``check=False`` (counts only) skips the comparison of the outputs with
    the reference (the reference computes the whole output, which can cost more than the run) and, for a kernel
    whose data reaches no branch, guard or address, drawing the inputs (:func:`analyze`).
    ``keep_args=True`` (the Python API: its arrays are the user's, so nothing is cached) keeps the args after the
    run in ``SimOutcome.final_args``; a sampled run holds the elements its simulated blocks wrote.

    An exact run of a large grid whose blocks are proved to do identical work (perfmodel.sim.replicate) simulates
    one block per class of identical blocks - the same counts; its outputs are checked where those blocks wrote;
    ``execute_all=True`` simulates every block instead (and checks every output); ``keep_args=True`` implies it
    (the caller gets every output)."""
    from perfmodel.kernel import load_kernel

    spec = _spec(kernel)
    if launch is None:
        launch = spec.instantiate(dict(params or {}))
    key = None if keep_args else (str(spec.path), spec.fingerprint, Path(spec.source_path).stat().st_mtime_ns,
                                  _hash_params(launch.params), sample, exact_budget, check, arch,
                                  spec.input_files_state(), execute_all, cc1_counts)
    if key is not None and key in _SIM_CACHE:
        return launch, _SIM_CACHE[key]
    started = time.perf_counter()
    program = load_kernel(spec.source_path, entry=spec.entry, defines=dict(launch.defines), arch=arch,
                          include_dirs=spec.include_dirs)
    total = launch.total_blocks
    if limits and limits.get("timeout"):
        # --timeout bounds the whole simulation: the pilot block, the retry with the grid and the run itself
        # share one deadline (each had its own, so a 5 s limit ran 14 s)
        limits = {**limits, "deadline": time.perf_counter() + float(limits["timeout"])}

    # one interior block on its own: its footprint (for the L1 reuse estimate) and a cost estimate; a kernel that
    # synchronises the whole grid runs every block at once (as a cooperative launch must), exactly
    from perfmodel.sim import grid_sync

    whole = total == 1 or grid_sync(program)
    rep = _representative_block(launch.grid)
    fast = allowed = not (execute_all or keep_args)
    outputs = check or keep_args      # whether any run's outputs are read
    alone = total == 1 or not whole                     # one block ran alone: its per-block figures count
    # a block that waits for what other blocks write (a spin on a volatile flag, an iteration until no block
    # changes anything) never ends alone: with a small grid, a block that runs away alone within a short budget is
    # run again with all the others, as the GPU runs them
    short = not whole and "max_steps" not in (limits or {}) and \
        launch.total_threads <= PILOT_RETRY_WHOLE_MAX_THREADS
    # blocks that take their work from a global counter (`t = atomicAdd(next, 1)` deciding what, and whether, a
    # block runs: chai's task queues, persistent threads) share it out among themselves: one block alone takes all
    claims = not whole and _claims_work(program)
    try:
        pilot, pilot_args = _run(program, launch, None if whole else [rep],
                                 {**(limits or {}), "max_steps": PILOT_SHORT_STEPS} if short else limits,
                                 fast_loops=fast, cc1_counts=cc1_counts, outputs=outputs and whole, first_touch=alone)
    except SimulationError as err:
        # a block that runs away alone, or - where blocks claim work from a counter - one that overflows what
        # its block was sized for, doing every block's work (a per-block queue): the whole grid, as the GPU runs it
        if not short or not (isinstance(err, RunawayKernel) or claims):
            raise
        whole, alone = True, False
        pilot, pilot_args = _run(program, launch, None, limits, fast_loops=fast, cc1_counts=cc1_counts,
                                 outputs=outputs, first_touch=False)
    dynamic = claims and not whole and _shares_work(program, launch, rep, pilot, limits, cc1_counts)
    if pilot.skipped_iterations and check and \
            pilot.counts.warp_instructions * (1 if whole else total) <= FAST_LOOPS_MIN_WARP_INSTRUCTIONS:
        pilot, pilot_args = _run(program, launch, None if whole else [rep], limits,    # short: outputs too
                                 cc1_counts=cc1_counts, outputs=outputs and whole, first_touch=alone)
    pilot_counts = _counts_json(pilot.counts)
    # the block whose loads stand for every block's (its footprint, its L1 reuse): the centre one, unless it has
    # nothing to load - a grid-stride kernel launched with more blocks than its work (pytorch3d's rasterizer at
    # 1,024 blocks for 48 blocks' work) left the centre idle, and its 0% L1 hits predicted 3x the time
    footprint = _working_block(program, launch, pilot, pilot_counts, rep, limits, cc1_counts) \
        if alone and not whole and total > 1 else pilot
    pg = _counts_json(footprint.counts).get("global", {}) if footprint is not pilot else pilot_counts.get("global", {})
    block_load_sectors = float(pg.get("load_sectors", 0))
    block_footprint = float(pg.get("unique_load_sectors", block_load_sectors))
    # a round of loads waits for its slowest: the one block's per-line L1 misses, over the rounds of the compiled code
    miss_factor = round_miss_factor(footprint.load_reuse_by_line, load_round_lines(program.module, program.entry))
    if not alone:
        block_load_sectors = block_footprint = None      # no block ran alone: no per-block footprint
    # blocks sharing a counter's work: the one block alone did (nearly) all of the grid's
    estimated_work = float(pilot_counts.get("warp_instructions", 0)) * (1 if whole or dynamic else total)
    if not whole:
        pilot = pilot_args = None     # only a whole-grid pilot is the run itself: free its arrays
    if whole and total > 1:
        sample = 0                    # the grid-sync kernel ran exactly above: no sample, no replication

    sample_reason = ""
    wants_exact = sample is None or sample == 0 or sample >= total
    if dynamic and sample is not None and 0 < sample < total:
        raise SimulationError(
            f"{spec.name}: its blocks take their work from a global counter (an atomic's result decides what a block "
            "does: run alone, one block did the work of several), so a sample of blocks would do the others' work "
            "and its counts cannot be scaled up; run it exactly (--sample 0)")
    if sample is not None and sample > 0 and sample < total:
        sample_reason = f"--sample {sample}"
    elif sample is None and not execute_all and total > DEFAULT_SAMPLE_BLOCKS and (
            estimated_work > exact_budget or launch.total_threads > EXACT_BUDGET_THREADS * exact_budget
            / EXACT_BUDGET_WARP_INSTRUCTIONS):
        sample = DEFAULT_SAMPLE_BLOCKS
        sample_reason = (f"the exact run would take ~{estimated_work:.2g} warp instructions over "
                         f"{launch.total_threads:,} threads, over the time budget of the exact mode")
    # outputs that nobody checks need not be computed: then the shortcuts apply at any size
    fast = fast and (estimated_work > FAST_LOOPS_MIN_WARP_INSTRUCTIONS or not check)
    replicated = None
    if wants_exact and not whole and not (execute_all or keep_args) and total > 1 and \
            (estimated_work > REPLICATE_MIN_WARP_INSTRUCTIONS or not check):
        from perfmodel.sim.replicate import proof_for

        if proof_for(program).ok:
            result, args = _run(program, launch, limits=limits, replicate="required", fast_loops=fast,
                                cc1_counts=cc1_counts, outputs=outputs,
                                track=[o.arg for o in launch.outputs] if check else ())
            if result.replication is not None and result.replication.proved:
                replicated = (result, args)
                sample_reason = ""
    if replicated is None and not sample_reason and not whole and estimated_work > EXACT_REFUSE_WARP_INSTRUCTIONS \
            and not (limits or {}).get("timeout"):
        raise SimulationError(
            f"{spec.name}: the exact run would execute ~{estimated_work:.2g} warp instructions (one block simulated "
            f"alone x {total:,} blocks), minutes to hours of simulation; "
            + ("drop --execute-all (identical blocks and loop iterations are then counted from one that ran, or a "
               "stratified sample of blocks extrapolated)" if execute_all else
               "leave --sample unset (a stratified sample of blocks, counts extrapolated)")
            + ", or pass --timeout SECONDS to run it exactly anyway")
    if replicated is None and sample_reason:
        # the sampled blocks' own work decides (their outputs are checked where they wrote)
        per_block = estimated_work / max(total, 1)
        outcome = _sampled(spec, launch, program, sample, sample_reason, check, limits, keep_args,
                           allowed and (per_block * sample > FAST_LOOPS_MIN_WARP_INSTRUCTIONS or not check),
                           cc1_counts=cc1_counts)
    else:
        if replicated is not None:
            result, args = replicated
            if check:
                correct, detail = _check_replicated(launch, args, result.replication, result.written)
            else:
                correct, detail = None, _unchecked_detail(launch, "outputs not checked (check=False)")
        else:
            if whole:
                result, args = pilot, pilot_args
            else:
                result, args = _run(program, launch, limits=limits, fast_loops=fast, cc1_counts=cc1_counts,
                                    outputs=outputs)
            if result.skipped_iterations and launch.outputs:
                correct, detail = None, _skipped_detail(result.skipped_iterations)
            elif not check and launch.outputs:
                correct, detail = None, _unchecked_detail(launch, "outputs not checked (check=False)")
            else:
                output_check = launch.check_outputs(args)
                correct, detail = output_check.correct, output_check.message
        if result.skipped_iterations and launch.outputs and check:
            correct, detail = None, _skipped_detail(result.skipped_iterations)
        counts = _counts_json(result.counts)
        per_block = getattr(result, "per_block", {}) or {}
        outcome = SimOutcome(
            kernel=spec.name, params=dict(launch.params), counts=counts, sampled=False, sample=None,
            blocks_simulated=total, total_blocks=total, spread=block_spread(per_block),
            correct=correct, correct_detail=detail, lines=_lines_json(result),
            header_lines=_lines_json(result, "header_lines"),
            source_lines=list(getattr(program, "source_lines", []) or []),
            static_shared_bytes=int(program.static_shared_bytes), param_bytes=int(program.param_bytes),
            block_load_sectors=None, block_footprint_sectors=None,
            per_block_idle=_idle_summary(per_block, launch.threads_per_block, total),
            sim_seconds=0.0, final_args=args if keep_args else None, notes=list(result.notes),
            final_symbols=dict(getattr(args, "symbols", {})) if keep_args else None)
    outcome.compile = {"arch": program.arch, "arch_note": program.arch_note, "registers": program.registers,
                       "spill_stores": program.spill_stores, "spill_loads": program.spill_loads,
                       "local_bytes": program.local_bytes, "shared_bytes": program.ptxas_shared_bytes,
                       "loads_in_flight_by_line": loads_in_flight_by_line(program.module, program.entry),
                       "ilp_by_line": ilp_by_line(program.module, program.entry),
                       "sass_loops": list(getattr(program, "sass_loop_notes", [])),   # docs/semantics.md
                       "printf_calls": _printf_calls(program),
                       "features": used_features(program.module, program.entry)}
    if replicated is not None:
        outcome.replication = replicated[0].replication.to_json()
    outcome.block_load_sectors = block_load_sectors
    outcome.block_footprint_sectors = block_footprint
    outcome.round_miss_factor = miss_factor
    outcome.grid_sync = grid_sync(program)
    outcome.header_source = _header_source(program, outcome.header_lines)
    outcome.sim_seconds = time.perf_counter() - started
    if key is None:
        return launch, outcome
    if len(_SIM_CACHE) >= _SIM_CACHE_MAX:
        _SIM_CACHE.pop(next(iter(_SIM_CACHE)))
    _SIM_CACHE[key] = outcome
    return launch, outcome


def _printf_calls(program) -> int:
    """printf calls in the kernel's code - its PTX and the functions it calls, not the file's other kernels (a
    checking kernel's printf was put on the kernel analysed) - which the executor does not print."""
    module = program.module
    return sum(1 for name in (program.entry, *module.callees(program.entry)) if name in module.functions
               for ins in module.functions[name].instrs
               if ins.opcode == "call" and len(ins.operands) > 1 and getattr(ins.operands[1], "name", "") == "vprintf")


def _lines_json(result, field: str = "lines") -> dict:
    from perfmodel.report.jsonout import to_jsonable

    lines = getattr(result, field, None) or {}
    return {(int(k) if field == "lines" else str(k)): to_jsonable(v) for k, v in lines.items()}


def _header_source(program, keys) -> dict[str, str]:
    """"path:line" -> that line's text, from the headers the compile read (the kernel's own file aside), or for
    NVIDIA's headers (curand_kernel.h, which NVRTC reads itself), from the installed file."""
    from perfmodel.compile import nvrtc

    files = program.source_files
    sdk = [str(d).rstrip("/") + "/" for d in nvrtc.sdk_include_dirs()]
    out = {}
    for key in keys:
        path, n = Module.split_line_key(key)
        if path and path not in files and any(path.startswith(d) for d in sdk):
            try:
                files[path] = Path(path).read_text(errors="replace")
            except OSError:
                files[path] = None
        text = files.get(path)
        if text is not None and n:
            rows = text.splitlines()
            out[key] = rows[n - 1].strip() if 0 < n <= len(rows) else ""
    return out


def _scale_lines(lines_weighted: list[tuple[dict, float]]) -> dict:
    out: dict[int, dict] = {}
    for lines, weight in lines_weighted:
        for line, agg in lines.items():
            slot = out.setdefault(line, {})
            for k, v in agg.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    slot[k] = slot.get(k, 0.0) + float(v) * weight
                else:
                    slot.setdefault(k, v)
    return out


def _sampled(spec, launch, program, n: int, reason: str, check_outputs: bool = True, limits: dict | None = None,
             keep_args: bool = False, fast_loops: bool = False, cc1_counts: bool = True) -> SimOutcome:
    sample = stratified_blocks(launch.grid, n)
    skipped = 0
    notes: list[str] = []
    per_stratum = []
    lines_weighted = []
    headers_weighted = []
    per_block_all: dict[str, list] = {}
    idle_partial = idle_full = idle_warps = 0.0
    changed_elements: dict[str, np.ndarray] = {}
    accumulated: dict[str, np.ndarray] = {}        # output elements an atomic updated: left out of the check
    merged: dict[str, np.ndarray] = {}
    outputs = {o.arg for o in launch.outputs}
    # the values the strata wrote are kept only for the output check and for the caller's arrays
    initial = {name: np.asarray(v) for a in launch.args
               for name, v in (a.arrays() if a.kind != "surface" else {a.name: a.value}).items()
               if keep_args or (check_outputs and name in outputs)}
    initial.update({name: v for name, v in launch.symbol_arrays().items()
                    if keep_args or (check_outputs and name in outputs)})
    for stratum in sample.strata:
        if not len(stratum.block_ids):
            continue
        result, args = _run(program, launch, stratum.block_ids, limits, fast_loops=fast_loops, cc1_counts=cc1_counts,
                            outputs=bool(initial), track=list(initial))
        skipped += result.skipped_iterations
        notes += [n for n in result.notes if n not in notes]
        counts = _counts_json(result.counts)
        per_stratum.append((counts, stratum.weight))
        lines_weighted.append((_lines_json(result), stratum.weight))
        headers_weighted.append((result.header_lines, stratum.weight))
        per_block = getattr(result, "per_block", {}) or {}
        for name, values in per_block.items():
            per_block_all.setdefault(name, []).extend(np.asarray(values).tolist())
        summary = _idle_summary(per_block, launch.threads_per_block, stratum.size)
        if summary:
            idle_partial += summary["partially_idle_blocks"] * stratum.weight
            idle_full += summary["fully_idle_blocks"] * stratum.weight
            idle_warps += summary.get("idle_warps", 0) * stratum.weight
        by_name = {a.name: v for a, v in zip(launch.args, args)}
        for a, v in zip(launch.args, args):
            if a.kind == "struct":
                by_name.update(a.arrays(v))
        by_name.update(args.symbols)
        for name, before in initial.items():
            before = before.reshape(-1)
            after = np.asarray(by_name[name]).reshape(-1)
            wrote = _written(name, before, after, result.written)
            # each stratum runs on fresh inputs: keep the values every stratum wrote for one final check
            merged[name] = np.where(wrote, after, merged.get(name, before))
            changed_elements[name] = changed_elements.get(name, np.zeros(after.size, bool)) | wrote
            if name in result.written and result.written[name][1].any():
                # an element an atomic updated holds what the simulated blocks added to it, not what every
                # block does: it cannot be checked against the whole launch's reference
                accumulated[name] = accumulated.get(name, np.zeros(after.size, bool)) | result.written[name][1]
    counts = extrapolate_counts(per_stratum, array_sectors=_array_sectors(launch))
    left_out = 0
    for name, mask in accumulated.items():
        if name in changed_elements and mask.size == changed_elements[name].size:
            left_out += int((changed_elements[name] & mask).sum()) if name in outputs else 0
            changed_elements[name] = changed_elements[name] & ~mask
    checked = int(sum(int(m.sum()) for name, m in changed_elements.items() if name in outputs))
    atomics_note = (f"; {left_out:,} element{'s' if left_out != 1 else ''} that atomics add to left out (every "
                    "block adds to them, and only some ran)") if left_out else ""
    if not launch.outputs:
        from perfmodel.spec import NOT_CHECKED

        correct, detail = None, NOT_CHECKED
    elif not check_outputs:
        correct, detail = None, _unchecked_detail(launch, "sampled run: outputs not checked (check=False)")
    elif skipped:
        correct, detail = None, "sampled run: " + _skipped_detail(skipped)
    elif merged and checked:
        check = launch.check_outputs({k: v for k, v in merged.items() if k in outputs},
                                     elements={k: v for k, v in changed_elements.items() if k in outputs})
        correct = check.correct
        total_out = int(sum(m.size for name, m in changed_elements.items() if name in outputs))
        detail = (f"sampled run: checked the {checked:,} of {total_out:,} output elements the "
                  f"{sample.blocks_simulated} simulated blocks wrote{atomics_note} - {check.message}")
    elif left_out:
        correct, detail = None, (f"sampled run: the simulated blocks wrote only elements that atomics add to "
                                 f"({left_out:,}), which every block adds to and only some ran; outputs not checked")
    else:
        correct, detail = None, "sampled run: the simulated blocks wrote no output element; outputs not checked"
    spread = block_spread({k: np.asarray(v) for k, v in per_block_all.items()})
    idle = {}
    if idle_partial or idle_full or per_block_all.get("idle_threads") is not None:
        idle = {"partially_idle_blocks": round(idle_partial), "fully_idle_blocks": round(idle_full),
                "idle_warps": round(idle_warps), "blocks": launch.total_blocks, "extrapolated": True}
    return SimOutcome(
        notes=notes,
        kernel=spec.name, params=dict(launch.params), counts=counts, sampled=True, sample=sample,
        blocks_simulated=sample.blocks_simulated, total_blocks=launch.total_blocks, spread=spread,
        correct=correct, correct_detail=detail, lines=_scale_lines(lines_weighted),
        header_lines=_scale_lines(headers_weighted),
        source_lines=list(getattr(program, "source_lines", []) or []),
        static_shared_bytes=int(program.static_shared_bytes), param_bytes=int(program.param_bytes),
        block_load_sectors=None, block_footprint_sectors=None, per_block_idle=idle, sim_seconds=0.0,
        sample_reason=reason,
        final_symbols={name: np.array(merged.get(name, v)) for name, v in launch.symbol_arrays().items()}
        if keep_args else None,
        final_args=[np.array(merged.get(a.name, a.value)) if a.kind in ("array", "surface") else
                    a.with_arrays({k: np.array(v) for k, v in merged.items()}) if a.kind == "struct" else a.value
                    for a in launch.args] if keep_args else None)


# ---------------------------------------------------------------------------------------------------------
# The models for one device

def analyze(kernel, device, params: dict | None = None, regs: int | str | None = None,
            sample: int | None = None, *, exact_budget: float = EXACT_BUDGET_WARP_INSTRUCTIONS,
            check: bool = True, max_steps: int | None = None, timeout: float | None = None,
            execute_all: bool = False, l2: str = "cold") -> Analysis:
    """Analyse ``kernel`` (a shipped spec name, a spec path or a KernelSpec) on ``device`` (name, path or Device).

    ``params`` override the spec's params (and the ``#define``\\ s they name); ``regs`` is registers per thread
    (an int) or ``"auto"`` (local ptxas); ``sample`` is the number of blocks to simulate (None: automatic,
    0: exact); ``check=False`` counts only: outputs are not compared with the reference, and a kernel whose
    data reaches no branch, guard or address runs on zero inputs (the same counts); ``max_steps`` (basic-block
    executions of one batch of blocks) and ``timeout`` (seconds of simulation) end a runaway kernel. Raises OccupancyError when
    the launch cannot run on the device. ``l2``: ``cold`` (nothing resident) or ``warm`` (a previous identical
    launch left what fits in L2), see perfmodel.model.traffic.resident_fraction."""
    from perfmodel.devices import Device, load_device

    dev = device if isinstance(device, Device) else load_device(device)
    spec = _spec(kernel)
    launch = spec.instantiate(dict(params or {}), values=check or execute_all)
    _check_launch_fits(dev, launch)
    _check_cooperative_before_simulating(spec, launch, dev, regs)
    if launch.blank and not _data_blind(spec, launch, device_arch(dev)):
        launch = spec.instantiate(dict(params or {}))
    limits = {k: v for k, v in (("max_steps", max_steps), ("timeout", timeout)) if v is not None}
    launch, sim = simulate_launch(spec, params, sample, exact_budget=exact_budget, launch=launch, check=check,
                                  arch=device_arch(dev), limits=limits, execute_all=execute_all,
                                  cc1_counts=_counts_cc1(dev))
    return model_launch(spec, launch, sim, dev, regs=regs, l2=l2)


def _check_cooperative_before_simulating(spec, launch, dev, regs) -> None:
    """Refuse a cooperative launch the GPU would refuse before simulating its whole grid (model_launch checks it
    again for every device a simulation is modelled on)."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import grid_sync

    program = load_kernel(spec.source_path, entry=spec.entry, defines=dict(launch.defines), arch=device_arch(dev),
                          include_dirs=spec.include_dirs)
    if not grid_sync(program):
        return
    _, _, occ = _launch_occupancy(spec, launch, dev, regs, int(program.static_shared_bytes),
                                  int(program.param_bytes), {"arch": program.arch, "registers": program.registers})
    _check_cooperative_fits(spec, launch, dev, occ)


def device_arch(dev) -> str:
    """The NVRTC target for a device: its own sm_XY, or the nearest NVRTC supports (said in the report)."""
    from perfmodel.compile import nvrtc_arch

    major, minor = dev.cc
    return nvrtc_arch(f"sm_{major}{minor}")[0]


def device_arch_note(dev) -> str:
    from perfmodel.compile import nvrtc_arch

    major, minor = dev.cc
    return nvrtc_arch(f"sm_{major}{minor}")[1]


def _counts_cc1(dev) -> bool:
    """Whether the device's model reads the CC 1.x transaction counts (perfmodel.model.traffic.cc1_traffic)."""
    return str(getattr(dev, "global_memory_rule", "sectors") or "sectors").startswith("cc1")


def _unchecked_detail(launch, detail: str) -> str:
    if getattr(launch, "blank", False):
        from perfmodel.spec.launch import BLANK_NOT_CHECKED

        return BLANK_NOT_CHECKED
    return detail


def _data_blind(spec, launch, arch: str) -> bool:
    """Whether the kernel's counts cannot depend on its input values (perfmodel.sim.data_blind): then a run that
    only counts (check=False) needs no inputs drawn, which for large launches is most of the time and memory."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import data_blind

    program = load_kernel(spec.source_path, entry=spec.entry, defines=dict(launch.defines), arch=arch,
                          include_dirs=spec.include_dirs)
    return data_blind(program).ok


def _check_launch_fits(dev, launch) -> None:
    """Reject a launch the device cannot run before simulating it (the occupancy calculator does the rest)."""
    block = launch.block
    for axis, (size, limit) in enumerate(zip(block, dev.max_block_dim)):
        if size > limit:
            raise OccupancyError(f"block dimension {'xyz'[axis]} = {size} exceeds {dev.name}'s limit of {limit}")
    for axis, (size, limit) in enumerate(zip(launch.grid, dev.max_grid_dim)):
        if size > limit:
            raise OccupancyError(f"grid dimension {'xyz'[axis]} = {size} exceeds {dev.name}'s limit of {limit}")
    if launch.threads_per_block > dev.max_threads_per_block:
        raise OccupancyError(f"{launch.threads_per_block:,} threads per block exceed {dev.name}'s limit of "
                             f"{dev.max_threads_per_block:,} (CC {dev.compute_capability})")


def _check_cooperative_fits(spec, launch, dev, occ) -> None:
    """A kernel that synchronises the whole grid runs as a cooperative launch, which the GPU refuses unless every
    block can be resident at once (cudaErrorCooperativeLaunchTooLarge)."""
    most = occ.blocks_per_sm * dev.sm_count
    if launch.total_blocks <= most:
        return
    raise OccupancyError(
        f"{spec.name} synchronises the whole grid (cooperative groups' grid.sync()), so all its blocks must be "
        f"resident at once, but {dev.name} holds at most {most:,} of them ({occ.blocks_per_sm} per SM x "
        f"{dev.sm_count} SMs; per SM limited by {', '.join(occ.limiters) or '-'}) and the grid has "
        f"{launch.total_blocks:,}: cudaLaunchCooperativeKernel refuses this launch "
        "(cudaErrorCooperativeLaunchTooLarge). Launch at most that many blocks (the CUDA samples size the grid with "
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor x the SM count).")


def _launch_occupancy(spec, launch, dev, regs, static_shared_bytes: int, param_bytes: int, compiled: dict):
    """(registers, shared memory per block, occupancy) of a launch on ``dev`` (``compiled``: the compiler's
    figures, perfmodel.registers.resolve_registers)."""
    from perfmodel.occupancy import kernel_shared_memory_bytes, occupancy

    registers = resolve_registers(dev, regs=regs, spec_registers=launch.registers or spec.registers,
                                  compiled={**compiled, "arch_note": device_arch_note(dev)})
    smem = kernel_shared_memory_bytes(dev, static_shared_bytes, launch.dynamic_shared_bytes, param_bytes)
    occ = occupancy(dev, launch.threads_per_block, registers.per_thread, smem, grid_blocks=launch.total_blocks)
    return registers, smem, occ


def compute_peak_flops(counts: dict, dev, rates) -> tuple[float, str]:
    """The compute roof of the seed model and what it is: the FP32 peak, or, for a kernel with double-precision
    flops or tensor-core work (on a device with measured wmma rates), the peak of its mix - all its flops over the
    time the FP32 lanes, the FP64 lanes and the tensor cores need for their shares at their peaks (the mix's
    harmonic peak). The FP64 peak is the profile's ``peak_fp64_flops``, else 2 flops per FP64 lane per clock, else
    1/64 of FP32 (:func:`perfmodel.model.bottleneck.fp64_time`'s fallback)."""
    from perfmodel.model.bottleneck import tensor_time

    peak = float(dev.peak_fp32_flops)
    total = float(counts.get("flops", 0) or 0)
    fp64 = min(total, float(counts.get("fp64_flops", 0) or 0))
    tensor = (counts.get("tensor") or {}).get("flops") or {}
    tensor_seconds, tensor_flops = 0.0, 0.0
    if any(tensor.values()):
        tensor_seconds, untimed = tensor_time(tensor, rates)
        if untimed:                     # no measured rate: its flops count at the FP32 peak
            tensor_seconds = 0.0
        else:
            tensor_flops = float(sum(tensor.values()))
    if fp64 <= 0 and tensor_flops <= 0:
        return peak, "FP32"
    peak64 = float(getattr(dev, "peak_fp64_flops", 0) or 0) or 2.0 * rates.fp64_lane_ops_per_s or peak / 64.0
    seconds = max(0.0, total - tensor_flops - fp64) / peak + fp64 / peak64 + tensor_seconds
    if seconds <= 0:
        return peak, "FP32"
    parts = [name for name, share in (("FP32", total - tensor_flops - fp64), ("FP64", fp64),
                                      ("tensor-core", tensor_flops)) if share > 0]
    return total / seconds, parts[0] if len(parts) == 1 else f"mix of {', '.join(parts[:-1])} and {parts[-1]}"


def model_launch(spec, launch, sim: SimOutcome, dev, *, regs: int | str | None = None, l2: str = "cold") -> Analysis:
    """The device-dependent half of :func:`analyze`: registers, occupancy, the seed and bottleneck models."""
    _check_launch_fits(dev, launch)
    registers, smem, occ = _launch_occupancy(spec, launch, dev, regs, sim.static_shared_bytes, sim.param_bytes,
                                             sim.compile)
    if sim.grid_sync:
        _check_cooperative_fits(spec, launch, dev, occ)
    counts = sim.counts
    g = counts.get("global", {})
    smem_alloc = getattr(occ, "shared_memory_per_block_allocated", smem)
    rates = device_rates(dev, shared_memory_per_sm_used=occ.blocks_per_sm * smem_alloc)
    peak, peak_basis = compute_peak_flops(counts, dev, rates)
    seed = seed_model(float(counts.get("flops", 0)), float(g.get("loads", 0)), float(g.get("stores", 0)),
                      peak, float(dev.dram_bandwidth_bytes_per_s), load_bytes=float(g.get("load_bytes", 0) or 0),
                      peak_basis=peak_basis)
    traffic = estimate_traffic(
        load_sectors=float(g.get("load_sectors", 0)), store_sectors=float(g.get("store_sectors", 0)),
        unique_load_sectors=float(g.get("unique_load_sectors", g.get("load_sectors", 0))),
        unique_store_sectors=float(g.get("unique_store_sectors", g.get("store_sectors", 0))),
        block_load_sectors=sim.block_load_sectors, block_footprint_sectors=sim.block_footprint_sectors,
        wave_blocks=occ.blocks_per_sm * dev.sm_count,
        total_blocks=launch.total_blocks, l1_bytes=rates.l1_bytes, l2_bytes=rates.l2_bytes, l2_state=l2)
    per_sm_threads = occ.blocks_per_sm * launch.threads_per_block
    traffic = with_local(traffic, counts.get("local", {}) or {},
                         bytes_per_thread=float(sim.compile.get("local_bytes", 0) or 0),
                         resident_threads_per_sm=per_sm_threads,
                         resident_threads=min(per_sm_threads * dev.sm_count, launch.total_threads),
                         l1_bytes=rates.l1_bytes, l2_bytes=rates.l2_bytes)
    warps_per_block = math.ceil(launch.threads_per_block / dev.warp_size)
    every_line = {**sim.lines, **sim.header_lines}     # the kernel's file's lines and its headers'
    model = bottleneck_model(counts, rates=rates, traffic=traffic, total_blocks=launch.total_blocks,
                             warps_per_sm=occ.warps_per_sm, blocks_per_sm=occ.blocks_per_sm,
                             warps_per_block=warps_per_block,
                             loads_in_flight=weighted_loads_in_flight(sim.compile.get("loads_in_flight_by_line"),
                                                                      every_line),
                             idle_blocks=float((sim.per_block_idle or {}).get("fully_idle_blocks", 0) or 0),
                             idle_warps=(sim.per_block_idle or {}).get("idle_warps"),
                             ilp=ilp_mix(sim.compile.get("ilp_by_line"), every_line),
                             round_miss_factor=sim.round_miss_factor)
    # device features the kernel uses that this GPU lacks (a float atomicAdd on the G80)
    model.notes.extend(missing_notes(sim.compile.get("features") or [], dev.compute_capability, dev.name))
    analysis = Analysis(kernel=spec.label, device=dev, launch=launch, sim=sim, registers=registers,
                        shared_memory_per_block=smem, occupancy=occ, seed=seed, model=model)
    analysis.hot_lines = hot_lines(sim, model.bound)
    from perfmodel.model.advice import advise

    analysis.advice = advise(analysis)
    return analysis


# which per-line figure ranks the lines for each bounding resource
_LINE_METRIC = {"dram": "global_sectors", "l2": "global_sectors", "l1": "global_lines",
                "lsu": "memory_requests", "latency": "warp_instructions", "shared": "data_stage",
                "fp32": "flops", "fp64": "flops", "sfu": "flops", "tensor": "flops", "issue": "warp_instructions",
                "blocks": "warp_instructions", "atomics": "atomics",
                "launch": "warp_instructions"}


def _kernel_total(counts: dict, metric: str) -> float:
    """The whole kernel's figure a per-line metric adds up to (0 where the counts do not hold it)."""
    g, s = counts.get("global", {}) or {}, counts.get("shared", {}) or {}
    parts = {"warp_instructions": (counts.get("warp_instructions"),),
             "flops": (counts.get("flops"),),
             "global_sectors": (g.get("load_sectors"), g.get("store_sectors")),
             "global_lines": (g.get("load_lines"), g.get("store_lines")),
             "shared_wavefronts": (s.get("load_wavefronts"), s.get("store_wavefronts")),
             "data_stage": (s.get("load_wavefronts"), s.get("store_wavefronts"), g.get("load_lines"),
                            g.get("store_lines")),
             "atomics": (g.get("atomics"), s.get("atomics"))}.get(metric, ())
    return float(sum(float(x or 0) for x in parts))


def hot_lines(sim: SimOutcome, bound: str, limit: int = HOT_LINES) -> list[dict]:
    """The source lines that carry most of the bounding resource's work (global sectors, shared wavefronts or
    flops), each with its share of the kernel total: the kernel's file's lines and its headers' (``file`` names
    the header; None for the kernel's own file)."""
    merged = {(None, int(line)): agg for line, agg in (sim.lines or {}).items()}
    for key, agg in (sim.header_lines or {}).items():
        path, line = Module.split_line_key(key)
        if line:
            merged[(path, line)] = agg
    if not merged:
        return []
    metric = _LINE_METRIC.get(bound, "global_sectors")
    lines = merged
    if metric == "memory_requests":   # the LSU: global requests + shared wavefronts of each line
        lines = {line: {**agg, "memory_requests": float(agg.get("global_requests", 0) or 0)
                        + float(agg.get("shared_wavefronts", 0) or 0)} for line, agg in lines.items()}
    if metric == "data_stage":        # L1TEX's data stage: shared wavefronts + global requests' L1 lines
        lines = {line: {**agg, "data_stage": float(agg.get("shared_wavefronts", 0) or 0)
                        + float(agg.get("global_lines", 0) or 0)} for line, agg in lines.items()}
    available = {k for agg in lines.values() for k in agg}
    if metric not in available:
        for fallback in ("global_sectors", "shared_wavefronts", "flops"):
            if fallback in available:
                metric = fallback
                break
        else:
            return []
    # shares of the kernel's whole figure (code tied to no line counts in it, too)
    total = max(sum(float(agg.get(metric, 0) or 0) for agg in lines.values()), _kernel_total(sim.counts, metric))
    ranked = sorted(lines.items(), key=lambda kv: -float(kv[1].get(metric, 0) or 0))
    out = []
    for (path, line), agg in ranked[:limit]:
        value = float(agg.get(metric, 0) or 0)
        if value <= 0:
            break
        if path is None and line == 0:
            text = "(no source line: code the compiler generated or moved, .loc line 0)"
        elif path is None:
            text = sim.source_lines[line - 1].strip() if 0 < line <= len(sim.source_lines) else ""
        else:
            text = (sim.header_source or {}).get(f"{path}:{line}", "")
        out.append({"line": line, "file": path, "source": text, "metric": metric, "value": value,
                    "share": value / total if total else 0.0,
                    **{k: v for k, v in agg.items() if isinstance(v, (int, float))}})
    return out
