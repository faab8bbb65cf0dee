"""Human units in device profiles: "16 KiB", "86.4 GB/s", "1.35 GHz", "19.5 TFLOPS", or plain numbers.

Convention (NVIDIA's documents' own: "KB" = 1024 B for memory sizes, GB/s and GFLOPS decimal):

- **Memory sizes** are binary whichever way they are spelt: ``K``/``KB``/``KiB`` = 1024, ``M``/``MB``/``MiB`` =
  1024**2, ``G``/``GB``/``GiB`` = 1024**3. NVIDIA's documents say "16 KB shared memory" and "40 MB L2" and mean
  16384 and 41943040 bytes.
- **Rates are decimal**: ``GB/s`` = 1e9 B/s, ``GHz`` = 1e9 Hz, ``GFLOPS`` = 1e9 FLOP/s. A binary rate can still be
  written explicitly as ``GiB/s`` (2**30 B/s).
- **Counts** (registers, threads, ...) are plain integers; ``8K`` / ``64K`` mean 8192 / 65536 as in "8K registers".

Every parser also accepts a plain number (int or float, or a numeric string), which is taken to be in the base
unit (bytes, B/s, Hz, FLOP/s).
"""
from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Literal

Kind = Literal["bytes", "bandwidth", "frequency", "flops", "count"]

_BINARY = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_DECIMAL = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}

_NUMBER = r"(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_QUANTITY = re.compile(_NUMBER + r"\s*(?P<unit>[A-Za-z/]*)\s*$")

# unit text (lower case, "i" of KiB kept) -> (kind, prefix letter, binary?)
_BYTE_UNITS = {"b": "", "byte": "", "bytes": ""}
_RATE_SUFFIXES = ("b/s", "bps")
_FREQUENCY_SUFFIX = "hz"
_FLOPS_SUFFIXES = ("flops", "flop/s")

EXAMPLES: dict[str, str] = {
    "bytes": '"16 KiB", "16 KB", "48K", "1.5 MB", or a plain number of bytes',
    "bandwidth": '"86.4 GB/s", "3.35 TB/s", or a plain number of bytes per second',
    "frequency": '"1.35 GHz", "1350 MHz", or a plain number of Hz',
    "flops": '"346.5 GFLOPS", "19.5 TFLOPS", or a plain number of FLOP/s',
    "count": 'an integer such as 8192, or "8K"',
}


class UnitError(ValueError):
    """A value could not be read as the expected kind of quantity."""


def _split(text: str) -> tuple[Decimal, str]:
    match = _QUANTITY.match(text.strip())
    if not match:
        raise UnitError(f"{text!r} is not a number with a unit")
    return Decimal(match["number"]), match["unit"]


def _prefix(unit: str, suffixes: tuple[str, ...], binary: bool) -> float | None:
    """Multiplier of ``unit`` = <prefix><suffix>, or None if it does not end in one of the suffixes."""
    low = unit.lower()
    for suffix in suffixes:
        if low.endswith(suffix):
            head = low[: len(low) - len(suffix)]
            if head.endswith("i") and len(head) == 2:  # KiB/s, GiB/s: explicitly binary
                return _BINARY.get(head[0])
            table = _BINARY if binary else _DECIMAL
            return table.get(head)
    return None


def parse_quantity(value: object, kind: Kind) -> float:
    """Read ``value`` (a number or a string with a unit) as a quantity of ``kind`` in its base unit.

    >>> parse_quantity("16 KB", "bytes"), parse_quantity("86.4 GB/s", "bandwidth")
    (16384.0, 86400000000.0)
    """
    if isinstance(value, bool):
        raise UnitError(f"expected {EXAMPLES[kind]}, got {value!r}")
    if isinstance(value, (int, float)):
        number = float(value)
        if not math.isfinite(number):
            raise UnitError(f"expected a finite number, got {value!r}")
        return number
    if not isinstance(value, str):
        raise UnitError(f"expected {EXAMPLES[kind]}, got {value!r}")
    try:
        number, unit = _split(value)
    except UnitError:
        raise UnitError(f"expected {EXAMPLES[kind]}, got {value!r}") from None
    if not unit:
        return _finite(float(number), value)
    scale: float | None
    if kind == "bytes":
        low = unit.lower()
        if low in _BYTE_UNITS:
            scale = 1
        elif low.endswith("ib") and len(low) == 3:
            scale = _BINARY.get(low[0])
        elif low.endswith("b") and len(low) == 2:
            scale = _BINARY.get(low[0])
        else:
            scale = _BINARY.get(low) if len(low) == 1 else None
    elif kind == "bandwidth":
        scale = _prefix(unit, _RATE_SUFFIXES, binary=False)
    elif kind == "frequency":
        scale = _prefix(unit, (_FREQUENCY_SUFFIX,), binary=False)
    elif kind == "flops":
        scale = _prefix(unit, _FLOPS_SUFFIXES, binary=False)
    else:  # count: "8K" registers
        scale = _BINARY.get(unit.lower()) if len(unit) == 1 else None
    if scale is None:
        raise UnitError(f"expected {EXAMPLES[kind]}, got {value!r} (unknown unit {unit!r})")
    # Decimal arithmetic so that "66.9 TFLOPS" is exactly 66.9e12, not 66900000000000.01.
    return _finite(float(number * Decimal(str(scale)) if isinstance(scale, float) else number * scale), value)


def _finite(number: float, value: object) -> float:
    if not math.isfinite(number):
        raise UnitError(f"expected a finite number, got {value!r}")
    return number


def parse_int_quantity(value: object, kind: Kind) -> int:
    """Like :func:`parse_quantity`, for quantities that must be whole (bytes, counts)."""
    number = parse_quantity(value, kind)
    if number != int(number):
        raise UnitError(f"expected a whole number, got {value!r} (= {number:g})")
    return int(number)


def format_bytes(value: float | int | None) -> str:
    """16384 -> "16 KiB", 233472 -> "228 KiB", 52428800 -> "50 MiB", 1000 -> "1000 B"."""
    if value is None:
        return "-"
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= scale and value % (scale / 4) == 0:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"


def _format_decimal(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def format_bandwidth(value: float | None) -> str:
    return _format_decimal(value, "B/s")


def format_frequency(value: float | None) -> str:
    return _format_decimal(value, "Hz")


def format_flops(value: float | None) -> str:
    return _format_decimal(value, "FLOPS")
