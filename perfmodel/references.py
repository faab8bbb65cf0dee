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


# ==============================================================================================================
# cuda-samples corpus references (bench/corpus_specs/*.yaml). Each mirrors the sample's own host-side check
# (computeGold & co.), in float64 / int64.

def _corpus_int(ctx: ReferenceContext, value) -> int:
    return int(ctx.number(value))


@reference("corpus_matmul")
def corpus_matmul(ctx: ReferenceContext, *, a: str = "A", b: str = "B", ha: str = "hA", wa: str = "wA",
                  wb: str = "wB") -> np.ndarray:
    """C (ha x wb) = A (ha x wa) . B (wa x wb), float, row-major (matrixMul, globalToShmemAsyncCopy)."""
    rows, inner, cols = _corpus_int(ctx, ha), _corpus_int(ctx, wa), _corpus_int(ctx, wb)
    return ctx.array(a)[:rows * inner].reshape(rows, inner) @ ctx.array(b)[:inner * cols].reshape(inner, cols)


@reference("corpus_scaled")
def corpus_scaled(ctx: ReferenceContext, *, input: str = "g_idata", factor: str | float = 1.0) -> np.ndarray:
    """out = factor x input (template, simpleTemplates: g_odata = num_threads x g_idata)."""
    return float(ctx.number(factor)) * ctx.array(input)


@reference("corpus_lane_id")
def corpus_lane_id(ctx: ReferenceContext, *, length: str = "N") -> np.ndarray:
    """out[i] = i % 32 (inlinePTX: %laneid)."""
    return np.arange(_corpus_int(ctx, length)) % 32


@reference("corpus_atomics")
def corpus_atomics(ctx: ReferenceContext, *, threads: str = "N", initial: str = "g_odata") -> np.ndarray:
    """simpleAtomicIntrinsics' computeGold. The atomicExch [2] and atomicCAS [7] results depend on the order the
    threads run in (the sample accepts any value in [0, len)); this reference assumes the threads apply their
    atomics in thread-id order, so [2] = [7] = len - 1."""
    n = _corpus_int(ctx, threads)
    start = ctx.array(initial, np.int64)
    out = start.copy()
    tid = np.arange(n, dtype=np.int64)
    out[0] = start[0] + 10 * n
    out[1] = start[1] - 10 * n
    out[2] = n - 1
    out[3] = max(start[3], n - 1)
    out[4] = min(start[4], 0)
    val = int(start[5])
    for _ in range(n):
        val = 0 if val >= 17 else val + 1
    out[5] = val
    val = int(start[6])
    for _ in range(n):
        val = 137 if (val == 0 or val > 137) else val - 1
    out[6] = val
    val = int(start[7])
    for i in range(n):
        if val == i - 1:
            val = i
    out[7] = val
    out[8] = int(np.bitwise_and.reduce(np.concatenate([[start[8]], 2 * tid + 7])))
    bits = 0
    for i in range(n):
        bits |= (1 << (i % 32))     # 1 << tid: the shift count wraps mod 32 in PTX shl.b32
    out[9] = np.int64(np.uint32(bits | (int(start[9]) & 0xffffffff)).astype(np.int32))
    out[10] = int(np.bitwise_xor.reduce(np.concatenate([[start[10]], tid])))
    return out


@reference("corpus_vote")
def corpus_vote(ctx: ReferenceContext, *, input: str = "input", mode: str = "any") -> np.ndarray:
    """result[tx] = __any_sync / __all_sync of (input != 0) over tx's warp (simpleVoteIntrinsics 1 and 2)."""
    values = ctx.array(input, np.int64) != 0
    warps = values.reshape(-1, 32)
    vote = warps.any(axis=1) if mode == "any" else warps.all(axis=1)
    return np.repeat(vote, 32).astype(np.int64)


@reference("corpus_vote3")
def corpus_vote3(ctx: ReferenceContext, *, warp_size: str = "warp_size") -> np.ndarray:
    """VoteAnyKernel3: info[3 tx + 0] = any(tx >= 3w/2) over the warp, [3 tx + 1] = tx >= 3w/2,
    [3 tx + 2] = all(tx >= 3w/2) over the warp (left 0 otherwise)."""
    w = _corpus_int(ctx, warp_size)
    tx = np.arange(3 * w)
    cond = tx >= (w * 3) // 2
    warps = cond.reshape(-1, w)
    out = np.zeros((3 * w, 3), dtype=np.int64)
    out[:, 0] = np.repeat(warps.any(axis=1), w)
    out[:, 1] = cond
    out[:, 2] = np.repeat(warps.all(axis=1), w)
    return out.reshape(-1)


@reference("corpus_block_min")
def corpus_block_min(ctx: ReferenceContext, *, input: str = "input", blocks: str = "NUM_BLOCKS") -> np.ndarray:
    """clock's timedReduction: every block writes the minimum of the (shared) input."""
    return np.full(_corpus_int(ctx, blocks), ctx.array(input).min())


@reference("corpus_dot_products")
def corpus_dot_products(ctx: ReferenceContext, *, a: str = "d_A", b: str = "d_B", vectors: str = "VECTOR_N",
                        elements: str = "ELEMENT_N") -> np.ndarray:
    """scalarProd: C[v] = sum_i A[v, i] B[v, i] for vectors x elements float arrays."""
    nv, ne = _corpus_int(ctx, vectors), _corpus_int(ctx, elements)
    return (ctx.array(a)[:nv * ne].reshape(nv, ne) * ctx.array(b)[:nv * ne].reshape(nv, ne)).sum(axis=1)


@reference("corpus_block_scan")
def corpus_block_scan(ctx: ReferenceContext, *, data: str = "data", block: str = "blockSize",
                      totals: bool = False) -> np.ndarray:
    """shfl_scan_test: an inclusive prefix sum within each block of ``block`` ints (int32 wraparound);
    ``totals``: the per-block sums instead (partial_sums)."""
    values = ctx.array(data, np.int64)
    n = _corpus_int(ctx, block)
    scanned = np.cumsum(values.reshape(-1, n), axis=1)
    out = scanned[:, -1] if totals else scanned.reshape(-1)
    return out.astype(np.int32)


@reference("corpus_uniform_add")
def corpus_uniform_add(ctx: ReferenceContext, *, data: str = "data", partial_sums: str = "partial_sums",
                       block: str = "blockSize") -> np.ndarray:
    """shfl_scan's uniform_add: data[id] += partial_sums[id // block] (int32)."""
    values = ctx.array(data, np.int64)
    n = _corpus_int(ctx, block)
    adds = np.repeat(ctx.array(partial_sums, np.int64), n)[:values.size]
    return (values + adds).astype(np.int32)


def _corpus_compare(keys: np.ndarray, vals: np.ndarray, lo: np.ndarray, hi: np.ndarray, ddd) -> None:
    """sortingNetworks' Comparator on index pairs, vectorised: swap where (key[lo] > key[hi]) == dir."""
    ka, kb = keys[lo], keys[hi]
    swap = (ka > kb) == np.asarray(ddd, dtype=bool)
    va, vb = vals[lo], vals[hi]
    keys[lo], keys[hi] = np.where(swap, kb, ka), np.where(swap, ka, kb)
    vals[lo], vals[hi] = np.where(swap, vb, va), np.where(swap, va, vb)


def _corpus_pick(keys, vals, output):
    return (keys if output == "keys" else vals).astype(np.int64)


@reference("corpus_sorted_chunks")
def corpus_sorted_chunks(ctx: ReferenceContext, *, keys: str = "d_SrcKey", vals: str = "d_SrcVal",
                         chunk: str = "arrayLength", dir: str | int = "dir", alternate: bool = False,
                         output: str = "keys") -> np.ndarray:
    """Each ``chunk`` of keys sorted (dir 1: ascending, 0: descending; ``alternate``: chunk b uses dir b & 1, as
    bitonicSortShared1 does), with the values moved along (the keys must be distinct for the values to be
    determined)."""
    k = ctx.array(keys, np.int64)
    v = ctx.array(vals, np.int64)
    n = _corpus_int(ctx, chunk)
    k2, v2 = k.reshape(-1, n), v.reshape(-1, n)
    order = np.argsort(k2, axis=1, kind="stable")
    for b in range(k2.shape[0]):
        d = (b & 1) if alternate else _corpus_int(ctx, dir)
        if not d:
            order[b] = order[b][::-1]
    sk = np.take_along_axis(k2, order, axis=1).reshape(-1)
    sv = np.take_along_axis(v2, order, axis=1).reshape(-1)
    return _corpus_pick(sk, sv, output)


@reference("corpus_bitonic_merge")
def corpus_bitonic_merge(ctx: ReferenceContext, *, keys: str = "d_SrcKey", vals: str = "d_SrcVal",
                         length: str = "arrayLength", size: str = "size", stride: str | int = "stride",
                         dir: str = "dir", shared: int = 0, output: str = "keys") -> np.ndarray:
    """One bitonicMergeGlobal step (stride), or with ``shared`` = SHARED_SIZE_LIMIT the bitonicMergeShared steps
    (strides shared/2 .. 1 inside each shared-sized chunk), on uint keys with values."""
    k = ctx.array(keys, np.int64).copy()
    v = ctx.array(vals, np.int64).copy()
    L, sz, d = _corpus_int(ctx, length), _corpus_int(ctx, size), _corpus_int(ctx, dir)
    i = np.arange(k.size // 2)
    comparator = i & (L // 2 - 1)
    ddd = d ^ ((comparator & (sz // 2)) != 0)
    strides = [_corpus_int(ctx, stride)] if not shared else [shared >> s for s in range(1, 64) if shared >> s]
    for st in strides:
        pos = 2 * i - (i & (st - 1))
        _corpus_compare(k, v, pos, pos + st, ddd)
    return _corpus_pick(k, v, output)


@reference("corpus_odd_even_merge")
def corpus_odd_even_merge(ctx: ReferenceContext, *, keys: str = "d_SrcKey", vals: str = "d_SrcVal",
                          size: str = "size", stride: str = "stride", dir: str = "dir",
                          output: str = "keys") -> np.ndarray:
    """One oddEvenMergeGlobal step."""
    k = ctx.array(keys, np.int64).copy()
    v = ctx.array(vals, np.int64).copy()
    sz, st, d = _corpus_int(ctx, size), _corpus_int(ctx, stride), _corpus_int(ctx, dir)
    i = np.arange(k.size // 2)
    pos = 2 * i - (i & (st - 1))
    if st < sz // 2:
        sel = (i & (sz // 2 - 1)) >= st
        _corpus_compare(k, v, pos[sel] - st, pos[sel], d)
    else:
        _corpus_compare(k, v, pos, pos + st, d)
    return _corpus_pick(k, v, output)
