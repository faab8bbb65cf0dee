"""The C types the simulator knows, their numpy dtypes, and C's usual arithmetic conversions."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ScalarType:
    name: str
    dtype: np.dtype
    kind: str          # "int" | "float" | "bool"
    rank: int          # conversion rank (bool < char < short < int < long long; float < double)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "bool")

    @property
    def signed(self) -> bool:
        return self.dtype.kind == "i"

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def __str__(self) -> str:
        return self.name


BOOL = ScalarType("bool", np.dtype(np.bool_), "bool", 0)
CHAR = ScalarType("char", np.dtype(np.int8), "int", 1)
UCHAR = ScalarType("unsigned char", np.dtype(np.uint8), "int", 1)
SHORT = ScalarType("short", np.dtype(np.int16), "int", 2)
USHORT = ScalarType("unsigned short", np.dtype(np.uint16), "int", 2)
INT = ScalarType("int", np.dtype(np.int32), "int", 3)
UINT = ScalarType("unsigned int", np.dtype(np.uint32), "int", 3)
LONG = ScalarType("long long", np.dtype(np.int64), "int", 4)
ULONG = ScalarType("unsigned long long", np.dtype(np.uint64), "int", 4)
FLOAT = ScalarType("float", np.dtype(np.float32), "float", 5)
DOUBLE = ScalarType("double", np.dtype(np.float64), "float", 6)


@dataclass(frozen=True)
class ArrayType:
    """An array or pointer in one memory space. ``shape[0]`` may be None (a pointer, or ``extern __shared__ x[]``);
    the trailing dimensions give the strides of multi-dimensional arrays (``tile[i][j]``)."""
    elem: ScalarType
    space: str                    # "global" | "shared" | "constant" | "local"
    shape: tuple

    @property
    def row_elems(self) -> int:
        """Elements stepped over by one unit of the first index."""
        n = 1
        for d in self.shape[1:]:
            n *= d
        return n

    @property
    def elems(self) -> int:
        """Elements in the whole array (every dimension known)."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    def sub(self) -> "ArrayType":
        return ArrayType(self.elem, self.space, self.shape[1:])

    def __str__(self) -> str:
        dims = "".join(f"[{d if d is not None else ''}]" for d in self.shape)
        return f"{self.space} {self.elem}{dims}"


VOID = None

# Spellings (pycparser IdentifierType names, sorted) -> type.
_SPELLINGS = {
    ("bool",): BOOL, ("_Bool",): BOOL,
    ("char",): CHAR, ("char", "signed"): CHAR, ("char", "unsigned"): UCHAR,
    ("short",): SHORT, ("int", "short"): SHORT, ("short", "signed"): SHORT, ("int", "short", "signed"): SHORT,
    ("short", "unsigned"): USHORT, ("int", "short", "unsigned"): USHORT,
    ("int",): INT, ("signed",): INT, ("int", "signed"): INT,
    ("unsigned",): UINT, ("int", "unsigned"): UINT, ("uint",): UINT, ("uint32_t",): UINT,
    ("int32_t",): INT,
    ("long",): LONG, ("int", "long"): LONG, ("long", "long"): LONG, ("int", "long", "long"): LONG,
    ("long", "signed"): LONG, ("long", "long", "signed"): LONG, ("int64_t",): LONG,
    ("long", "unsigned"): ULONG, ("int", "long", "unsigned"): ULONG, ("long", "long", "unsigned"): ULONG,
    ("int", "long", "long", "unsigned"): ULONG, ("uint64_t",): ULONG, ("size_t",): ULONG,
    ("float",): FLOAT, ("double",): DOUBLE, ("double", "long"): DOUBLE,
}


def type_from_names(names) -> ScalarType | None:
    """The scalar type spelled by a pycparser IdentifierType's names, None for ``void``, KeyError if unknown."""
    key = tuple(sorted(names))
    if key == ("void",):
        return None
    return _SPELLINGS[key]


def promote(t: ScalarType) -> ScalarType:
    """C integer promotion: bool, char and short become int."""
    if t.kind in ("int", "bool") and t.rank < INT.rank:
        return INT
    return t


def common_type(a: ScalarType, b: ScalarType) -> ScalarType:
    """C's usual arithmetic conversions (int and long long are 32 and 64 bits, as on the GPU)."""
    if a is DOUBLE or b is DOUBLE:
        return DOUBLE
    if a is FLOAT or b is FLOAT:
        return FLOAT
    a, b = promote(a), promote(b)
    if a is b:
        return a
    if a.rank == b.rank:           # same width, one unsigned: unsigned wins
        return a if not a.signed else b
    hi, lo = (a, b) if a.rank > b.rank else (b, a)
    if hi.signed and not lo.signed and hi.itemsize <= lo.itemsize:
        return ULONG
    return hi
