"""Named numpy reference functions that kernel specs check their outputs against.

A spec's output names a reference (``reference: matmul`` or ``reference: {name: conv1d, mask: Mc}``). The
function gets a :class:`ReferenceContext` - the launch's *initial* args by name, the ``__constant__`` values and
the resolved params - plus the literal options from the spec, and returns the expected contents of the output
array (any shape; it is compared flattened). References compute in float64 (int64 for int kernels) so the
tolerance in the spec covers only the kernel's float32 rounding.

To add one::

    @reference("saxpy")
    def saxpy(ctx, *, x="x", y="y"):
        return ctx.params["a"] * ctx.array(x) + ctx.array(y)
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfmodel.errors import SpecError


@dataclass(frozen=True)
class ReferenceContext:
    args: Mapping[str, Any]          # initial arg values by name (arrays: read-only views of the initial data)
    constants: Mapping[str, np.ndarray]
    params: Mapping[str, int | float]
    output: str                      # the arg being checked

    def value(self, name: str) -> Any:
        """An arg, a constant or a param, by name."""
        for source in (self.args, self.constants, self.params):
            if name in source:
                return source[name]
        raise SpecError(f"reference for output {self.output!r}: no arg, constant or param named {name!r}")

    def array(self, name: str, dtype=np.float64) -> np.ndarray:
        return np.asarray(self.value(name)).reshape(-1).astype(dtype)

    def number(self, name_or_value: str | int | float) -> int | float:
        if isinstance(name_or_value, (int, float)):
            return name_or_value
        value = self.value(name_or_value)
        return value.item() if isinstance(value, np.generic) else value


@dataclass(frozen=True)
class Reference:
    name: str
    function: Callable[..., np.ndarray]
    description: str
    options: tuple[str, ...]


REFERENCES: dict[str, Reference] = {}


def reference(name: str):
    def register(function: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
        parameters = list(inspect.signature(function).parameters.values())[1:]
        doc = (inspect.getdoc(function) or "").split("\n\n")[0].replace("\n", " ")
        REFERENCES[name] = Reference(name, function, doc, tuple(p.name for p in parameters))
        return function

    return register


def get_reference(name: str) -> Reference:
    try:
        return REFERENCES[name]
    except KeyError:
        raise SpecError(f"unknown reference {name!r} (known: {', '.join(sorted(REFERENCES))})") from None


# --------------------------------------------------------------------------------------------------------------

@reference("matmul_int")
def matmul_int(ctx: ReferenceContext, *, a: str = "a", b: str = "b", ha: str = "ha", wa: str = "wa",
               wb: str = "wb") -> np.ndarray:
    """c (ha x wb) = a (ha x wa) . b (wa x wb), int32 with C wraparound (the seed's one-block int kernels)."""
    rows, inner, cols = int(ctx.number(ha)), int(ctx.number(wa)), int(ctx.number(wb))
    left = ctx.array(a, np.int64).reshape(rows, inner)
    right = ctx.array(b, np.int64).reshape(inner, cols)
    return (left @ right).astype(np.int32)


@reference("matmul")
def matmul(ctx: ReferenceContext, *, M: str = "d_M", N: str = "d_N", Width: str = "Width") -> np.ndarray:
    """P = M . N for square Width x Width float matrices (row-major)."""
    width = int(ctx.number(Width))
    return ctx.array(M).reshape(width, width) @ ctx.array(N).reshape(width, width)


@reference("vec_add")
def vec_add(ctx: ReferenceContext, *, A: str = "A", B: str = "B") -> np.ndarray:
    """C = A + B, element by element."""
    return ctx.array(A) + ctx.array(B)


@reference("scale")
def scale(ctx: ReferenceContext, *, input: str = "d_Pin", factor: float = 2.0) -> np.ndarray:
    """output = factor x input (pictureKernel scales every pixel by 2.0)."""
    return factor * ctx.array(input)


@reference("conv1d")
def conv1d(ctx: ReferenceContext, *, input: str = "N", mask: str = "M", mask_width: str = "Mask_Width",
           width: str = "Width") -> np.ndarray:
    """P[i] = sum_j N[i - r + j] * M[j], r = mask_width // 2, ghost elements outside N are 0."""
    n_width, m_width = int(ctx.number(width)), int(ctx.number(mask_width))
    data = ctx.array(input)[:n_width]
    weights = ctx.array(mask)[:m_width]
    radius = m_width // 2
    padded = np.concatenate([np.zeros(radius), data, np.zeros(m_width)])
    out = np.zeros(n_width)
    for j in range(m_width):
        out += padded[j:j + n_width] * weights[j]
    return out


@reference("conv2d")
def conv2d(ctx: ReferenceContext, *, input: str = "N", mask: str = "Mc", mask_width: str = "MASK_WIDTH",
           width: str = "Width") -> np.ndarray:
    """P[r][c] = sum_ij Mc[i][j] * N[r - R + i][c - R + j] on a square Width x Width image, R = mask_width // 2,
    ghost cells 0."""
    n_width, m_width = int(ctx.number(width)), int(ctx.number(mask_width))
    data = ctx.array(input).reshape(n_width, n_width)
    weights = ctx.array(mask)[:m_width * m_width].reshape(m_width, m_width)
    radius = m_width // 2
    padded = np.zeros((n_width + m_width, n_width + m_width))
    padded[radius:radius + n_width, radius:radius + n_width] = data
    out = np.zeros((n_width, n_width))
    for i in range(m_width):
        for j in range(m_width):
            out += weights[i, j] * padded[i:i + n_width, j:j + n_width]
    return out


@reference("spmv_csr")
def spmv_csr(ctx: ReferenceContext, *, data: str = "data", col_index: str = "col_index", row_ptr: str = "row_ptr",
             x: str = "x", num_rows: str = "num_rows") -> np.ndarray:
    """y = A . x for A in CSR form (rows with no nonzero give 0)."""
    rows = int(ctx.number(num_rows))
    values = ctx.array(data)
    columns = ctx.array(col_index, np.int64)
    pointers = ctx.array(row_ptr, np.int64)
    vector = ctx.array(x)
    products = values * vector[columns] if values.size else values
    out = np.zeros(rows)
    lengths = np.diff(pointers[:rows + 1])
    row_of = np.repeat(np.arange(rows), lengths)
    np.add.at(out, row_of, products[:row_of.size])
    return out
