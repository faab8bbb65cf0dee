"""A struct passed by value, given as a dict of its fields (``{"n": 32, "in.b": [1, 2, 3, 4], "data": array}``):
checked against the layout the compile found (perfmodel/compile/structs.py), its pointer fields' arrays placed in
global memory like pointer arguments', and packed into the parameter's bytes."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from perfmodel.compile.signature import array_fits
from perfmodel.errors import SimulationError


def fields_text(layout) -> str:
    return layout.describe() if layout is not None and layout.error is None else "unknown"


def normalise(p, value, where: str | None = None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(the number fields' values, each an array of its leaf's dtype and count; the pointer fields' arrays) of
    the struct argument ``value`` for parameter ``p`` (or a struct-typed __constant__ variable: ``where`` names
    it); a SimulationError names the field that is wrong."""
    layout = getattr(p, "layout", None)
    where = where or f"argument {p.name} ({p.ctype})"
    if layout is None or layout.error is not None:
        why = layout.error if layout is not None else ("it is not a struct passed by value" if p.ctype else
                                                       "it is not a variable of a struct type perfmodel laid out")
        raise SimulationError(f"{where} cannot take a dict of fields: {why}")
    if not isinstance(value, Mapping):
        raise SimulationError(f"{where} is a struct passed by value: give a dict of its fields, {layout.describe()}")
    unknown = [k for k in value if not isinstance(k, str) or layout.leaf(k) is None]
    if unknown:
        raise SimulationError(f"{where} has no field {unknown[0]!r}; its fields are {layout.describe()}")
    missing = [f.path for f in layout.leaves if f.path not in value]
    if missing:
        raise SimulationError(f"{where}: no value for field{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                              f"(every field needs one; its fields are {layout.describe()})")
    numbers: dict[str, np.ndarray] = {}
    arrays: dict[str, np.ndarray] = {}
    for f in layout.leaves:
        v = value[f.path]
        at = f"{where}, field {f.path}"
        if f.pointer and v is None:
            numbers[f.path] = np.zeros(1, np.uint64)      # NULL: address 0, no array
            continue
        if f.pointer:
            if not isinstance(v, np.ndarray):
                raise SimulationError(f"{at} is a pointer ({f.ctype}): give it a numpy array (or None for NULL), got "
                                      f"{type(v).__name__}")
            if f.pointee is not None and not array_fits(np.dtype(f.pointee), v.dtype):
                raise SimulationError(f"{at} points to {f.pointee}; the array holds {v.dtype}")
            if not v.flags.c_contiguous:
                raise SimulationError(f"{at}: the array must be C-contiguous (it is written in place)")
            arrays[f.path] = v
            continue
        if isinstance(v, np.ndarray) and v.size > 1 and v.dtype.kind not in "biuf":
            raise SimulationError(f"{at}: expected numbers, got an array of {v.dtype}")
        try:
            data = np.asarray(v)
        except (TypeError, ValueError):
            data = np.asarray(None)
        if data.dtype.kind not in "biuf" or data.size == 0:
            raise SimulationError(f"{at} ({f.ctype}): expected {'a number' if not f.shape else f'{f.count} numbers'}, "
                                  f"got {v!r}")
        if data.size == 1:
            data = np.broadcast_to(data.reshape(()), (f.count,))
        elif data.size != f.count:
            raise SimulationError(f"{at} ({f.ctype}) holds {f.count} numbers; {data.size} given")
        data = data.reshape(-1)
        target = np.dtype(f.dtype)
        if target.kind in "iu":
            if data.dtype.kind == "f" and not bool(np.all(np.isfinite(data) & (data == np.floor(data)))):
                raise SimulationError(f"{at} is {f.dtype}, an integer; got {v!r}")
            info = np.iinfo(target)
            if data.size and (data.min() < info.min or data.max() > info.max):
                raise SimulationError(f"{at}: {v!r} does not fit in {f.dtype}")
        numbers[f.path] = data.astype(target)
    return numbers, arrays


def pack(layout, numbers: dict[str, np.ndarray], addresses: dict[str, int]) -> bytes:
    """The parameter's bytes: the numbers, and each pointer field the address of its array."""
    values = dict(numbers)
    for path, address in addresses.items():
        values[path] = np.array([address], np.uint64)
    return layout.pack(values)
