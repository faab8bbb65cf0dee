"""Resource limits that keep a bad size from blowing up the machine: a memory budget checked before large
allocations (argument arrays, simulator memory), with a message saying what the launch would need."""
from __future__ import annotations

import os

from perfmodel.errors import PerfmodelError
from perfmodel.units import UnitError, parse_int_quantity

DEFAULT_FRACTION = 0.5        # of physical memory, when PERFMODEL_MAX_MEMORY is not set


def memory_budget() -> int:
    """Bytes perfmodel may allocate for one launch: ``$PERFMODEL_MAX_MEMORY`` (e.g. ``8 GiB``), else half of the
    machine's physical memory."""
    text = os.environ.get("PERFMODEL_MAX_MEMORY")
    if text:
        try:
            return parse_int_quantity(text, "bytes")
        except UnitError as err:
            raise PerfmodelError(f"PERFMODEL_MAX_MEMORY={text!r}: {err}") from None
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") * DEFAULT_FRACTION)
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"
