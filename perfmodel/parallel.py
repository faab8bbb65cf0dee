"""Run many analysis points: serially, in parallel processes (``--jobs N``) or on a Dask cluster (``--scheduler``).

The unit of work is a :class:`Task`: one parameter combination of one kernel on one or more devices. A task
simulates the launch once per compiler target and applies each device's model (``perfmodel.analyze`` shares the
simulation between devices of one target), and returns one :class:`Outcome` per device: the analysis document
(``Analysis.to_json()`` after a JSON round trip) or the reason the point cannot run.

The result cache (:mod:`perfmodel.cache`) is consulted by the caller before anything is dispatched, and filled by
the caller with what comes back, so workers (local processes or remote Dask workers) never touch it.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from perfmodel.errors import PerfmodelError


@dataclass
class Task:
    kernel: str                 # the spec file's path (workers load it: on a cluster, a path they can read)
    params: dict                # the full params of the launch (fixed -D values plus this combination)
    devices: list[Any]          # Device objects (pickled to the workers: no device file needed there)
    regs: Any = None
    sample: int | None = None
    exact_budget: float | None = None
    l2: str = "cold"            # the L2 state at launch (perfmodel.model.traffic.resident_fraction)


@dataclass
class Outcome:
    valid: bool
    reason: str = ""
    doc: dict | None = None     # the analysis document when valid
    seconds: float = 0.0
    kind: str = ""              # the error's kind when invalid (``occupancy``, ``spec``, ``simulation``, ...)

    @property
    def cacheable(self) -> bool:
        """Valid points, and points the device or the spec rules out (deterministic); not a simulation that
        ran out of steps, time or memory (those depend on the limits and the machine)."""
        return self.valid or self.kind in ("occupancy", "spec", "compile")


def run_task(task: Task) -> list[Outcome]:
    """Analyse ``task`` on each of its devices (runs in a worker process or a Dask worker)."""
    import time

    from perfmodel.analysis import EXACT_BUDGET_WARP_INSTRUCTIONS, analyze
    from perfmodel.cache import normalise
    from perfmodel.spec import load_spec

    spec = load_spec(task.kernel)
    budget = EXACT_BUDGET_WARP_INSTRUCTIONS if task.exact_budget is None else task.exact_budget
    outcomes = []
    for device in task.devices:
        started = time.perf_counter()
        try:
            analysis = analyze(spec, device, dict(task.params), regs=task.regs, sample=task.sample,
                               exact_budget=budget, l2=task.l2)
            doc = normalise(analysis.to_json())
            outcomes.append(Outcome(valid=True, doc=doc, seconds=time.perf_counter() - started))
        except PerfmodelError as err:
            outcomes.append(Outcome(valid=False, reason=str(err), seconds=time.perf_counter() - started,
                                    kind=getattr(err, "kind", "input")))
    return outcomes


def _fork_context():
    """``fork`` where the platform has it (workers start in milliseconds with everything imported), else the
    default start method."""
    if sys.platform != "win32" and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def run_tasks(tasks: Sequence[Task], *, jobs: int = 1, scheduler: str | None = None,
              on_done: Callable[[int, list[Outcome]], None] | None = None) -> list[list[Outcome]]:
    """Run every task and return their outcomes in task order. ``on_done(index, outcomes)`` is called as each
    task finishes (in completion order), e.g. to advance a progress bar or fill the cache."""
    results: list[list[Outcome] | None] = [None] * len(tasks)

    def done(index: int, outcomes: list[Outcome]) -> None:
        results[index] = outcomes
        if on_done is not None:
            on_done(index, outcomes)

    if not tasks:
        return []
    if scheduler:
        _run_dask(tasks, scheduler, done)
    elif jobs > 1 and len(tasks) > 1:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=_fork_context()) as pool:
            futures = {pool.submit(run_task, task): i for i, task in enumerate(tasks)}
            for future in as_completed(futures):
                done(futures[future], future.result())
    else:
        for i, task in enumerate(tasks):
            done(i, run_task(task))
    return results  # type: ignore[return-value]


def _run_dask(tasks: Sequence[Task], scheduler: str, done: Callable[[int, list[Outcome]], None]) -> None:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise PerfmodelError("--scheduler needs Dask's distributed scheduler: pip install 'perfmodel[distributed]'") \
            from None
    try:
        client = Client(scheduler, timeout=os.environ.get("PERFMODEL_DASK_TIMEOUT", "10s"),
                        set_as_default=False)
    except (OSError, TimeoutError, ValueError) as err:
        raise PerfmodelError(f"--scheduler {scheduler}: cannot connect to a Dask scheduler there ({err}); start one "
                             "with `dask scheduler` and workers with `dask worker ADDRESS` (docs/sweep.md)") from None
    try:
        futures = client.map(run_task, list(tasks), pure=False)
        index = {future.key: i for i, future in enumerate(futures)}
        for future in as_completed(futures, loop=client.loop):
            done(index[future.key], future.result())
    finally:
        client.close()
