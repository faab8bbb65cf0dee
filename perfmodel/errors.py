"""One error family for everything a user can get wrong.

Every error carries where it happened (file:line:col, and for simulation errors the thread and block).
The CLI catches ``PerfmodelError`` once, prints ``str(err)`` as one paragraph and exits with code 2.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    file: str | None = None
    line: int | None = None
    col: int | None = None

    def __str__(self) -> str:
        parts = [self.file or "<unknown>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.col is not None:
                parts.append(str(self.col))
        return ":".join(parts)


class PerfmodelError(Exception):
    """Base class: a problem with the user's input (exit code 2)."""

    exit_code = 2
    #: The ``kind`` of the ``--json`` error document (``{"error": {"kind": ..., "message": ...}}``).
    kind = "input"

    def __init__(self, message: str, *, location: Location | None = None,
                 thread: tuple[int, ...] | None = None, block: tuple[int, ...] | None = None):
        self.message = message
        self.location = location
        self.thread = thread
        self.block = block
        super().__init__(self.__str__())

    def __str__(self) -> str:
        text = self.message
        if self.location is not None and str(self.location) not in text:
            text = f"{self.location}: {text}"
        return text


class DeviceError(PerfmodelError):
    """A device profile is missing, malformed or inconsistent."""

    kind = "device"


class OccupancyError(PerfmodelError):
    """An impossible launch configuration (too many threads, registers or shared memory)."""

    kind = "occupancy"


class SpecError(PerfmodelError):
    """A kernel spec is missing, malformed, or one of its expressions is invalid."""

    kind = "spec"


class SimulationError(PerfmodelError):
    """Execution failed: out-of-bounds access, barrier divergence, runaway loop, ..."""

    kind = "simulation"


class RunawayKernel(SimulationError):
    """A batch of blocks ran past its step or time limit (a loop that does not end, or ends only when other blocks
    write what it waits for)."""


class LockstepStuck(RunawayKernel):
    """A batch of several blocks came back to a loop with every register, mask and memory as before: threads spin
    on what a thread of another block would write once past the point where the batch's threads reconverge (a
    lock between blocks), which the blocks' lockstep run never reaches; one block a batch runs it."""


class BudgetError(PerfmodelError):
    """A `perfmodel check` budget or baseline file is invalid."""

    kind = "budget"


class GpuError(PerfmodelError):
    """A real-GPU run could not be made (no CuPy, no device, launch failure)."""

    kind = "gpu"


class OutputError(PerfmodelError):
    """An output file (--junit, --csv, --markdown, --out, the baseline) cannot be written where it was asked."""

    kind = "output"


class CompileError(PerfmodelError):
    """A CUDA source does not compile with NVRTC, a kernel or name expression is unknown, or NVRTC is missing."""

    kind = "compile"
