"""Vectorised counting PTX executor: runs a compiled kernel's PTX on numpy lanes and counts what it does.

``simulate(program, grid, block, args, constants=None, dynamic_shared_bytes=0, block_ids=None, max_steps=None,
max_lanes=None, timeout=None, replicate=False, fast_loops=False, blank_inputs=False) -> SimResult``; ``program``
is a :class:`perfmodel.kernel.KernelProgram`. Semantics and counting rules: docs/semantics.md.

``cc1_counts=False`` leaves out the compute-capability 1.x transaction counts (``global.cc10_*``, ``cc12_*``),
which only a CC 1.x device's model reads and which cost about a tenth of the run.
``first_touch=True`` counts, per global load instruction, the sectors no earlier load of the run touched
(``SimResult.load_reuse_by_line``: the model's per-line L1 miss shares; the analysis asks it of the one block it
runs alone).
``write_back=False`` leaves the pointer arguments as they were (a caller that needs no outputs can pass its
initial arrays without copying them); with ``fast_loops`` and ``replicate`` it also lets the class
representatives count their long loops from a few iterations (their outputs are then not computed; with
``write_back`` they run every iteration, so that a replicated run's outputs can be checked where they ran).
``blank_inputs=True`` (counts only): the pointer arguments give only their sizes; the simulated heap starts zeroed
and nothing is copied in or written back. Accepted only for a kernel whose data reaches no branch, guard or
address (:func:`data_blind`), whose counts then do not depend on the values.
``pointer_offsets={name: bytes}``: the kernel's pointer parameter ``name`` points that many bytes into its array,
as when the host passes ``d + 1`` (the array holds elements before the pointer, which the kernel may read at
negative indices).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from perfmodel.compile.signature import array_fits
from perfmodel.errors import SimulationError
from perfmodel.sim.result import Counts, SimResult, build_result

__all__ = ["simulate", "data_blind", "SimResult", "Counts"]

DEFAULT_MAX_LANES = 1 << 17          # lanes per batch: 128K keeps a float64 lane array (1 MB) in cache; measured
                                     # on the tiled headline 5.8 s against 11.0 s with 1M-lane batches
DEFAULT_MAX_STEPS = 3 << 18          # basic-block executions of one batch before the kernel is called runaway
                                     # (786,432: a loop of a global load and store stops in ~8 s on 2 cores;
                                     # matmul_rowwise at 1024 needs ~270,000)
DEFAULT_TIMEOUT_S = None


def data_blind(program):
    """The static proof (``invariance.StaticProof``, cached on the program) that the kernel's data - values loaded
    from memory, warp-level results, atomics' returns - reaches no branch, guard or address: then every count is
    the same whatever the input values."""
    proof = getattr(program, "_data_blind", None)
    if proof is None:
        from perfmodel.sim.invariance import UNIFORM, analyse

        proof = analyse(program.module.functions[program.entry], block_index_class=UNIFORM)
        try:
            program._data_blind = proof
        except AttributeError:       # pragma: no cover - a frozen program object
            pass
    return proof


def grid_sync(program) -> bool:
    """Whether the kernel synchronises the whole grid (cooperative groups' ``this_grid().sync()``): it reads the
    grid-sync workspace pointer the driver passes a cooperative launch in ``%envreg1`` / ``%envreg2``. Every block
    of such a launch must run at once, as on the GPU (which refuses a cooperative launch whose blocks cannot all
    be resident)."""
    return _reads_special(program, "_grid_sync", lambda name: name in ("%envreg1", "%envreg2"))


def reserved_shared(program) -> bool:
    """Whether the kernel reads the reserved shared memory's offsets (``%reserved_smem_offset_*``): cooperative
    groups keep the scratch of their multi-warp tiles there on CC 8.0 and later (cooperative_groups/details/
    memory.h, ``reserved_shared_ptr``), in the 1 KB per block the system reserves (CUDA C++ Programming Guide,
    "Technical Specifications": reserved shared memory per thread block, 1 KB on CC 8.0 and later)."""
    return _reads_special(program, "_reserved_shared", lambda name: name.startswith("%reserved_smem_offset"))


def _reads_special(program, memo: str, wanted) -> bool:
    """Whether any instruction of the program's module reads a special register whose name ``wanted`` accepts,
    remembered on the program under ``memo``."""
    found = getattr(program, memo, None)
    if found is None:
        from perfmodel.ptx.ir import Special

        found = any(isinstance(op, Special) and wanted(op.name)
                    for f in program.module.functions.values() for ins in f.instrs for op in ins.operands)
        try:
            setattr(program, memo, found)
        except AttributeError:       # pragma: no cover - a frozen program object
            pass
    return found


def _dim3(v, what) -> tuple:
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3 or any(x < 1 for x in v):
        raise SimulationError(f"{what} must be 1 to 3 positive integers, got {v}")
    return v + (1,) * (3 - len(v))


def simulate(program, grid, block, args, constants=None, dynamic_shared_bytes: int = 0, block_ids=None,
             max_steps: int | None = None, max_lanes: int | None = None, timeout: float | None = None,
             replicate: bool | str = False, fast_loops: bool = False, blank_inputs: bool = False,
             cc1_counts: bool = True, write_back: bool = True, first_touch: bool = False,
             pointer_offsets: dict | None = None, track_writes=()) -> SimResult:
    """Run the kernel on the CPU and count what it does. Blocks run in batches, their threads in lockstep; a batch
    of several blocks that spins with nothing changing (a lock one block holds while it waits where the batch's
    threads reconverge: machine.LockstepStuck) is run again from the start one block a batch, as a GPU may run
    them. The caller's arrays are written only when a run completes."""
    import time as _time

    from perfmodel.errors import LockstepStuck, RunawayKernel

    started = _time.perf_counter()
    options = dict(constants=constants, dynamic_shared_bytes=dynamic_shared_bytes, block_ids=block_ids,
                   max_steps=max_steps, replicate=replicate, fast_loops=fast_loops, blank_inputs=blank_inputs,
                   cc1_counts=cc1_counts, write_back=write_back, first_touch=first_touch,
                   pointer_offsets=pointer_offsets, track_writes=track_writes)
    try:
        return _simulate(program, grid, block, args, max_lanes=max_lanes, timeout=timeout, **options)
    except LockstepStuck:
        if timeout is not None:
            timeout = max(1e-3, timeout - (_time.perf_counter() - started))
        try:
            result = _simulate(program, grid, block, args, max_lanes=1, timeout=timeout, **options)
        except RunawayKernel as err:
            # alone, a block waits for another block too: blocks that take turns (chai's PAD and SC: task t waits
            # for task t - 1's flag, tasks dealt round-robin), which only blocks running side by side finish
            raise RunawayKernel(
                f"{err.location or program.name}: blocks wait on each other here: run together in lockstep, "
                "threads of a batch's blocks spun with nothing changing, and run one block at a time, a block "
                "waits for what a later block writes (a flag or lock that blocks hand on in turn). A GPU runs "
                "the resident blocks side by side and their threads independently, which this simulator does "
                "not (it runs where no block waits for a later one, e.g. one task a block)", location=err.location,
                thread=err.thread, block=err.block) from None
        result.notes.append("a batch of blocks spun with nothing changing (a lock that one block held while it "
                            "waited for the others in lockstep): the blocks ran again one at a time, as a GPU may "
                            "run them")
        return result


def _check_launch_bounds(program, block) -> None:
    """A launch the kernel's own bounds forbid: more threads a block than its ``__launch_bounds__`` maximum
    (PTX ``.maxntid``), or another block shape than its ``.reqntid``; the GPU refuses it (CUDA C++ Programming
    Guide, "Launch Bounds": the launch fails), so the analysis does too."""
    module = getattr(program, "module", None)
    f = module.functions.get(program.entry) if module is not None else None
    directives = getattr(f, "directives", None) or {}
    threads = block[0] * block[1] * block[2]
    most = directives.get("maxntid")
    if most:
        limit = 1
        for d in most:
            limit *= d
        if threads > limit:
            raise SimulationError(f"{program.name}: {threads:,} threads a block exceed the kernel's "
                                  f"__launch_bounds__ maximum of {limit:,} (PTX .maxntid): the GPU refuses this "
                                  "launch (CUDA C++ Programming Guide, Launch Bounds); launch at most that many")
    required = directives.get("reqntid")
    if required and tuple(required) + (1,) * (3 - len(required)) != tuple(block):
        raise SimulationError(f"{program.name}: the kernel requires blocks of {tuple(required)} threads (PTX "
                              f".reqntid), not {tuple(block)}: the GPU refuses this launch")


def _simulate(program, grid, block, args, constants=None, dynamic_shared_bytes: int = 0, block_ids=None,
              max_steps: int | None = None, max_lanes: int | None = None, timeout: float | None = None,
              replicate: bool | str = False, fast_loops: bool = False, blank_inputs: bool = False,
              cc1_counts: bool = True, write_back: bool = True, first_touch: bool = False,
              pointer_offsets: dict | None = None, track_writes=()) -> SimResult:
    from perfmodel.sim.launch import LaunchState
    from perfmodel.sim.machine import Counters, State, run_function
    from perfmodel.sim.values import Frame

    grid = _dim3(grid, "grid")
    block = _dim3(block, "block")
    total_blocks = grid[0] * grid[1] * grid[2]
    _check_launch_bounds(program, block)
    if len(args) != len(program.params):
        raise SimulationError(f"{program.name} takes {len(program.params)} arguments "
                              f"({', '.join(p.name for p in program.params)}), {len(args)} given")
    for p, a in zip(program.params, args):
        if p.is_pointer:
            if a is None:           # NULL: address 0, which the kernel may test but not dereference
                continue
            if not isinstance(a, np.ndarray):
                raise SimulationError(f"argument {p.name} ({p.ctype}) must be a numpy array or None (NULL)")
            if p.dtype is not None and p.dtype.fields is None and not array_fits(p.dtype, a.dtype):
                raise SimulationError(f"argument {p.name} is {p.ctype} but the array has dtype {a.dtype}")
            if p.dtype is not None and p.dtype.fields is not None and a.dtype.fields is None:
                # a CUDA vector type (double4*) given a flat array: elements of its component's size (float32 for
                # float4), or the whole vector's raw bits (uint32 for half2), not a size that splits neither
                parts = {f[0] for f in p.dtype.fields.values()}
                if len(parts) == 1 and a.dtype.itemsize not in (next(iter(parts)).itemsize, p.dtype.itemsize):
                    raise SimulationError(f"argument {p.name} is {p.ctype} ({len(p.dtype.fields)} x "
                                          f"{next(iter(parts))}) but the array has dtype {a.dtype}")
            if not a.flags.c_contiguous:
                raise SimulationError(f"argument {p.name}: the array must be C-contiguous (it is written in place)")
        elif isinstance(a, Mapping) and getattr(p, "layout", None) is None:
            raise SimulationError(f"argument {p.name} ({p.ctype}) is not a struct; a dict of fields is for a struct "
                                  "passed by value")
        elif isinstance(a, np.ndarray) and a.ndim > 0 and a.dtype.fields is None:
            raise SimulationError(f"argument {p.name} ({p.ctype}) must be a scalar")
        elif isinstance(a, np.ndarray) and a.dtype.fields is not None and p.dtype is not None and a.dtype != p.dtype:
            raise SimulationError(f"argument {p.name} is {p.ctype} but the value has dtype {a.dtype}")
    if blank_inputs and not data_blind(program).ok:
        raise SimulationError(f"{program.name}: blank_inputs needs a kernel whose data reaches no branch, guard or "
                              f"address ({data_blind(program).reason})")
    launch = LaunchState(program, grid, block, args, constants, dynamic_shared_bytes,
                         max_steps or DEFAULT_MAX_STEPS, timeout or DEFAULT_TIMEOUT_S, blank_inputs=blank_inputs,
                         count_cc1=cc1_counts, pointer_offsets=pointer_offsets)
    launch.keep_outputs = write_back
    launch.count_first_touch = first_touch
    launch.track_writes(track_writes)
    if block_ids is None:
        ids = np.arange(total_blocks, dtype=np.int64)
    else:
        ids = np.asarray(block_ids, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= total_blocks):
            raise SimulationError(f"block_ids must lie in [0, {total_blocks})")
    launch.fast_loops = fast_loops
    per_batch = launch.batch_blocks(max_lanes or DEFAULT_MAX_LANES)
    if launch.grid_workspace is not None:
        # a grid-wide sync waits for every block: they all run in one batch, never a subset or a replica
        if len(np.unique(ids)) != total_blocks:
            raise SimulationError(f"{program.name} synchronises the whole grid (cooperative groups' grid sync): "
                                  f"every block must run together; {len(np.unique(ids))} of {total_blocks} cannot")
        per_batch = max(per_batch, total_blocks)
        replicate = False
    builder = launch.builder
    cf = builder.get(program.entry)
    for name in program.module.callees(program.entry):
        builder.get(name)
    replication = None
    if replicate and block_ids is None and total_blocks > 1:
        from perfmodel.sim.replicate import replicated_counters

        with np.errstate(all="ignore"):
            counters, replication = replicated_counters(launch, builder, cf, program, total_blocks,
                                                                 max_lanes or DEFAULT_MAX_LANES)
        if counters is None and replicate == "required":
            return _unreplicated(program, launch, replication)
        if counters is not None:
            return _result(program, launch, counters, ids, total_blocks, args, replication)
    counters = Counters(len(builder.instrs), len(ids))
    with np.errstate(all="ignore"):
        for start in range(0, len(ids), per_batch):
            batch = ids[start:start + per_batch]
            st = State(launch, builder, counters, batch, start)
            counters.grow(len(builder.instrs))
            run_function(st, cf, Frame(cf.nregs), st.mask)
            counters.grow(len(builder.instrs))
            _finish_batch(st, counters)
    return _result(program, launch, counters, ids, total_blocks, args, replication)


def _result(program, launch, counters, ids, total_blocks, args, replication) -> SimResult:
    """Write the outputs back into the caller's arrays and total the counters."""
    if launch.keep_outputs:
        launch.write_back()
    result = build_result(launch, counters, counters.per_block, ids, total_blocks, list(args),
                          sass_weights=getattr(program, "sass_weights", None),
                          primary_file=getattr(program, "primary_file", None))
    result.replication = replication
    result.skipped_iterations = launch.skipped_iterations
    result.written = launch.written_elements()
    for name, nbytes in launch.unset_constants:
        result.notes.append(f"__constant__ {name} ({nbytes:,} bytes) was given no values, so it holds zeros (the host's "
                            f"cudaMemcpyToSymbol does not run here): give them with a spec's constants: "
                            f"or --symbol {name}=DTYPE[COUNT]:INIT")
    runtime = getattr(launch.builder, "device_runtime", {})
    if runtime:
        gid = min(runtime)
        loc = launch.builder._location(launch.builder.instrs[gid])
        result.notes.append(f"the kernel calls the CUDA device runtime at {loc} ({runtime[gid][0].split(', which')[0]}) "
                            "on a path no simulated thread took: no child launch is in these figures")
    if launch.early_exit_barrier is not None:
        loc = launch.builder._location(launch.builder.instrs[launch.early_exit_barrier])
        result.notes.append(f"threads of some blocks left the kernel before the __syncthreads() at {loc}, which the "
                            "others reach: the GPU counts exited threads as arrived, and so does perfmodel (CUDA asks "
                            "that a barrier's condition be the same across the block)")
    return result


def _unreplicated(program, launch, replication) -> SimResult:
    """No counts: the proof did not hold and the caller asked for a replicated run only."""
    result = SimResult(counts=Counts(), lines={}, per_block={}, block_ids=np.zeros(0, np.int64), blocks_simulated=0,
                       total_blocks=launch.grid[0] * launch.grid[1] * launch.grid[2])
    result.replication = replication
    return result


def _finish_batch(st, counters):
    pb = counters.per_block
    sl = st.sl
    pb["threads"][sl] += st.T
    warps = -(-st.T // 32)
    if st.worked_full:
        idle = idle_warps = 0
    elif st.worked is None:
        idle, idle_warps = st.T, warps
    else:
        w = st.worked[:, :st.T]
        idle = st.T - np.count_nonzero(w, axis=1)
        # warps none of whose threads did any work (a block whose first warp alone works)
        lanes = np.zeros((w.shape[0], warps * 32), bool)
        lanes[:, :st.T] = w
        idle_warps = warps - np.count_nonzero(lanes.reshape(w.shape[0], warps, 32).any(axis=2), axis=1)
    pb["idle_threads"][sl] += idle
    pb["idle_warps"][sl] += idle_warps
