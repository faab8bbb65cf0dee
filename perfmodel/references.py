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


def load_npy(path, where: str) -> np.ndarray:
    """A numeric array from a ``.npy`` file (never a pickle), refused over the input size limit."""
    from pathlib import Path

    from perfmodel.limits import human, memory_budget

    path = Path(path)
    try:
        size = path.stat().st_size
        if size > memory_budget():
            raise SpecError(f"{where}: {path} is {human(size)}, over the memory budget of {human(memory_budget())} "
                            "($PERFMODEL_MAX_MEMORY)")
        array = np.load(path, allow_pickle=False)
    except SpecError:
        raise
    except (OSError, ValueError) as err:
        raise SpecError(f"{where}: cannot read {path} as a .npy array ({err})") from None
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "biuf":
        raise SpecError(f"{where}: {path} does not hold a numeric array (dtype {getattr(array, 'dtype', '?')})")
    return array


def _npy_reference(text: str, base_dir) -> Reference:
    from pathlib import Path

    path = (Path(base_dir) / Path(text).expanduser()).resolve()
    if not path.is_file():
        raise SpecError(f"no such .npy file {text!r} (looked at {path})")

    def expected(ctx: ReferenceContext) -> np.ndarray:
        return load_npy(path, f"reference {text}")

    return Reference(text, expected, f"expected values in {path.name}", ())


_IMPORTED: dict[str, tuple] = {}      # path of a reference .py -> ((mtime, size), its module)


def _import_callable(text: str, base_dir) -> Callable[..., Any]:
    """``module:function`` (importable, or a module beside the spec) or ``path/to/file.py:function``."""
    import importlib
    import importlib.util
    import sys
    from pathlib import Path

    target, _, attr = text.rpartition(":")
    if not target or not attr.isidentifier():
        raise SpecError(f"reference {text!r}: expected module:function or path/to/file.py:function")
    if target.endswith(".py"):
        path = (Path(base_dir) / Path(target).expanduser()).resolve()
        if not path.is_file():
            raise SpecError(f"reference {text!r}: no such Python file {path}")
        stat = path.stat()
        known = _IMPORTED.get(str(path))
        if known is not None and known[0] == (stat.st_mtime_ns, stat.st_size):
            module = known[1]           # imported once for every output it checks (unless the file changed)
            function = getattr(module, attr, None)
            if not callable(function):
                raise SpecError(f"reference {text!r}: module {target!r} has no function {attr!r}")
            return function
        name = f"_perfmodel_reference_{abs(hash(str(path)))}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        # its own folder first on sys.path while it imports, as Python runs a script: a reference that imports a
        # helper module beside it (from xslib import ...) works from any folder
        folder = str(path.parent)
        sys.path.insert(0, folder)
        try:
            spec.loader.exec_module(module)
        except Exception as err:  # noqa: BLE001 - the user's module failed to import: say so, once
            raise SpecError(f"reference {text!r}: importing {path} failed: {type(err).__name__}: {err}") from None
        finally:
            if folder in sys.path:
                sys.path.remove(folder)
        _IMPORTED[str(path)] = ((stat.st_mtime_ns, stat.st_size), module)
    else:
        if not all(part.isidentifier() for part in target.split(".")):
            raise SpecError(f"reference {text!r}: {target!r} is not a module name")
        added = str(Path(base_dir).resolve())
        sys.path.insert(0, added)
        try:
            module = importlib.import_module(target)
        except ImportError as err:
            raise SpecError(f"reference {text!r}: cannot import module {target!r} ({err}); it is looked for "
                            f"beside the spec (or the current folder) and on sys.path") from None
        except Exception as err:  # noqa: BLE001
            raise SpecError(f"reference {text!r}: importing {target!r} failed: {type(err).__name__}: {err}") from None
        finally:
            if added in sys.path:
                sys.path.remove(added)
    function = getattr(module, attr, None)
    if not callable(function):
        raise SpecError(f"reference {text!r}: module {target!r} has no function {attr!r}")
    return function


def callable_reference(function: Callable[..., Any], name: str) -> Reference:
    """Wrap a user's Python function as a reference.

    The function is called with the launch's *initial* values as keyword arguments - each kernel argument by its
    parameter name (arrays as read-only numpy arrays of the kernel's dtype, scalars as numbers), then the
    ``-D``/spec params - but only those it declares (all of them if it takes ``**kwargs``); spec options are
    passed too. It returns the expected contents of the output checked, or a dict of output name -> array."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        signature = None

    def expected(ctx: ReferenceContext, **options: Any) -> Any:
        available = {**dict(ctx.params), **dict(ctx.constants), **dict(ctx.args), **options}
        if signature is None or any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
            kwargs = available
        else:
            kwargs = {}
            for p in signature.parameters.values():
                if p.kind in (p.VAR_POSITIONAL,):
                    continue
                if p.name in available:
                    kwargs[p.name] = available[p.name]
                elif p.default is p.empty:
                    raise SpecError(f"reference {name!r} needs {p.name!r}, which is not a kernel argument or "
                                    f"param (available: {', '.join(available) or 'none'})")
        try:
            return function(**kwargs)
        except SpecError:
            raise
        except Exception as err:  # noqa: BLE001 - the user's reference raised: a problem with the input
            raise SpecError(f"reference {name!r} raised {type(err).__name__}: {err}") from None

    doc = (inspect.getdoc(function) or "").split("\n\n")[0].replace("\n", " ")
    return Reference(name, expected, doc, ("*",))


def resolve_reference(text: str, base_dir=".") -> Reference:
    """A reference as a spec or the command line names it: a built-in name (``matmul``), a Python callable
    (``module:function`` or ``path/to/file.py:function``, relative to ``base_dir``) or a ``.npy`` file of
    expected values."""
    if text.endswith(".npy"):
        return _npy_reference(text, base_dir)
    if ":" in text:
        return callable_reference(_import_callable(text, base_dir), text)
    return get_reference(text)


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
    lengths = np.diff(pointers[:rows + 1])
    row_of = np.repeat(np.arange(rows), lengths)
    return np.bincount(row_of, weights=products[:row_of.size], minlength=rows)


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


@reference("corpus_tensor_gemm")
def corpus_tensor_gemm(ctx: ReferenceContext, *, a: str = "A", b: str = "B", c: str = "C", alpha: str = "alpha",
                       beta: str = "beta", m: str = "MG", n: str = "NG", k: str = "KG") -> np.ndarray:
    """D = alpha A B + beta C (cudaTensorCoreGemm's matMultiplyOnHost): A m x k row-major, B stored column by
    column (B[j k + kk] is row kk of column j), C and D m x n row-major."""
    rows, cols, inner = _corpus_int(ctx, m), _corpus_int(ctx, n), _corpus_int(ctx, k)
    A = ctx.array(a)[:rows * inner].astype(np.float64).reshape(rows, inner)
    B = ctx.array(b)[:cols * inner].astype(np.float64).reshape(cols, inner)
    C = ctx.array(c)[:rows * cols].astype(np.float64).reshape(rows, cols)
    return (float(ctx.number(alpha)) * (A @ B.T) + float(ctx.number(beta)) * C).reshape(-1)


@reference("corpus_scaled")
def corpus_scaled(ctx: ReferenceContext, *, input: str = "g_idata", factor: str | float = 1.0) -> np.ndarray:
    """out = factor x input (template, simpleTemplates: g_odata = num_threads x g_idata)."""
    return float(ctx.number(factor)) * ctx.array(input)


@reference("corpus_binomial")
def corpus_binomial(ctx: ReferenceContext, *, options: str = "d_OptionData", count: str = "optN",
                    steps: str | int = 2048) -> np.ndarray:
    """European call values by a binomial tree (binomialOptions' binomialOptionsCPU), from the preprocessed option
    data the kernel reads: per option S, X, vDt, puByDf, pdByDf; the expiry values max(S e^(vDt (2i - steps)) - X,
    0), then ``steps`` backward steps call[j] = puByDf call[j + 1] + pdByDf call[j]."""
    n, m = _corpus_int(ctx, count), _corpus_int(ctx, steps)
    data = ctx.array(options)[:5 * n].reshape(n, 5)
    out = np.zeros(n)
    for k, (s, x, vdt, pu, pd) in enumerate(data):
        call = np.maximum(s * np.exp(vdt * (2.0 * np.arange(m + 1) - m)) - x, 0.0)
        for i in range(m, 0, -1):
            call = pu * call[1:i + 1] + pd * call[:i]
        out[k] = call[0]
    return out


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


@reference("corpus_fp16_scalar_product")
def corpus_fp16_scalar_product(ctx: ReferenceContext, *, a: str = "a", b: str = "b", size: str = "size",
                               blocks: str = "NUM_OF_BLOCKS", threads: str = "NUM_OF_THREADS") -> np.ndarray:
    """fp16ScalarProduct: half2 arrays packed in uint32 (low half = .x). Each thread accumulates a[i] * b[i] over
    i = tid + blockDim + blockIdx, step gridDim * blockDim (the sample's own start index) in half2 fma, then the
    block reduces its half2 values in shared memory in the sample's tree order; results[block] = low + high."""
    n, nb, nt = _corpus_int(ctx, size), _corpus_int(ctx, blocks), _corpus_int(ctx, threads)

    def halves(name):
        packed = ctx.array(name, np.int64).astype(np.uint32)[:n]
        low = (packed & 0xffff).astype(np.uint16).view(np.float16)
        high = (packed >> 16).astype(np.uint16).view(np.float16)
        return low, high

    (alo, ahi), (blo, bhi) = halves(a), halves(b)
    stride = nb * nt
    results = np.zeros(nb)
    for block in range(nb):
        acc = np.zeros((nt, 2), np.float16)
        for t in range(nt):
            lo = hi = np.float16(0)
            for i in range(t + nt + block, n, stride):
                # fma: one rounding of the exact a*b + acc (float64 holds it exactly for halves)
                lo = np.float16(float(alo[i]) * float(blo[i]) + float(lo))
                hi = np.float16(float(ahi[i]) * float(bhi[i]) + float(hi))
            acc[t] = (lo, hi)
        width = nt // 2
        while width >= 1:
            acc[:width] = (acc[:width].astype(np.float32) + acc[width:2 * width].astype(np.float32)).astype(np.float16)
            width //= 2
        results[block] = float(np.float32(acc[0, 0]) + np.float32(acc[0, 1]))
    return results


@reference("corpus_quasirandom")
def corpus_quasirandom(ctx: ReferenceContext, *, table: str = "c_Table", seed: str = "seed", n: str = "N",
                       dimensions: int = 3, resolution: int = 31) -> np.ndarray:
    """quasirandomGeneratorKernel: out[d][pos] = (float)(XOR of table[d][bit] over the set bits of seed + pos,
    + 1) * INT_SCALE, float32 as the kernel computes it."""
    count = _corpus_int(ctx, n)
    tab = ctx.array(table, np.int64).astype(np.uint32).reshape(dimensions, resolution)
    data = (np.arange(count, dtype=np.uint64) + np.uint64(_corpus_int(ctx, seed))).astype(np.uint32)
    out = np.zeros((dimensions, count), np.float32)
    scale = np.float32(1.0) / np.float32(0x80000001)
    for d in range(dimensions):
        result = np.zeros(count, np.uint32)
        for bit in range(resolution):
            result ^= np.where((data >> np.uint32(bit)) & np.uint32(1), tab[d, bit], np.uint32(0)).astype(np.uint32)
        out[d] = (result + np.uint32(1)).astype(np.float32) * scale
    return out.reshape(-1)


@reference("corpus_inverse_cnd")
def corpus_inverse_cnd(ctx: ReferenceContext, *, path_n: str = "pathN") -> np.ndarray:
    """inverseCNDKernel with d_Input = NULL: Moro's inverse normal CDF of (pos + 1) * (0xffffffff / (pathN + 1))."""
    count = _corpus_int(ctx, path_n)
    distance = np.uint32(0xffffffff // (count + 1))
    x = ((np.arange(count, dtype=np.uint64) + 1) * np.uint64(distance)).astype(np.uint32).astype(np.int64)
    negate = x >= 0x80000000
    x = np.where(negate, 0xffffffff - x, x).astype(np.float64)
    x1 = 1.0 / 0xffffffff
    p1 = x * x1 + x1 / 2
    p2 = p1 - 0.5
    a = (2.50662823884, -18.61500062529, 41.39119773534, -25.44106049637)
    b = (-8.4735109309, 23.08336743743, -21.06224101826, 3.13082909833)
    c = (0.337475482272615, 0.976169019091719, 0.160797971491821, 2.76438810333863E-02, 3.8405729373609E-03,
         3.951896511919E-04, 3.21767881768E-05, 2.888167364E-07, 3.960315187E-07)
    z2 = p2 * p2
    central = p2 * (((a[3] * z2 + a[2]) * z2 + a[1]) * z2 + a[0]) / \
        ((((b[3] * z2 + b[2]) * z2 + b[1]) * z2 + b[0]) * z2 + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.log(-np.log(p1))
    tail = c[8]
    for coefficient in reversed(c[:8]):
        tail = coefficient + t * tail
    z = np.where(p2 > -0.42, central, -tail)
    return np.where(negate, -z, z)


@reference("corpus_sobol")
def corpus_sobol(ctx: ReferenceContext, *, directions: str = "d_directions", n_vectors: str = "n_vectors",
                 n_dimensions: str = "n_dimensions", n_directions: int = 32) -> np.ndarray:
    """sobolGPU_kernel: out[d][i] = (float)(XOR of v[d][k] over the set bits k of gray(i)) * 2^-32."""
    nv, nd = _corpus_int(ctx, n_vectors), _corpus_int(ctx, n_dimensions)
    v = ctx.array(directions, np.int64).astype(np.uint32).reshape(-1, n_directions)[:nd]
    i = np.arange(nv, dtype=np.uint32)
    gray = i ^ (i >> np.uint32(1))
    out = np.zeros((nd, nv), np.float32)
    for d in range(nd):
        x = np.zeros(nv, np.uint32)
        for k in range(n_directions):
            x ^= np.where((gray >> np.uint32(k)) & np.uint32(1), v[d, k], np.uint32(0)).astype(np.uint32)
        out[d] = x.astype(np.float32) * np.float32(2.3283064E-10)
    return out.reshape(-1)


@reference("corpus_init_value")
def corpus_init_value(ctx: ReferenceContext, *, array: str = "od", count: str = "count",
                      value: str | float = "value") -> np.ndarray:
    """dwtHaar1D's initValue: the first ``count`` elements set to ``value``, the rest unchanged."""
    out = ctx.array(array).copy()
    out[:_corpus_int(ctx, count)] = float(ctx.number(value))
    return out


@reference("corpus_haar")
def corpus_haar(ctx: ReferenceContext, *, input: str = "id", od: str = "od", approx: str = "approx_final",
                blocks: str = "grid", bdim: str = "bdim", dlevels: str = "dlevels", output: str = "od") -> np.ndarray:
    """dwtHaar1D, one launch: each block transforms 2 * bdim samples over ``dlevels`` Haar levels; the level-L
    details go to od[(bdim >> (L-1)) * (gdim + bid) + k], the last approximation to approx_final[bid]."""
    gdim, n, levels = _corpus_int(ctx, blocks), _corpus_int(ctx, bdim), _corpus_int(ctx, dlevels)
    inv = float(np.float32(0.70710678118654752440))
    approx_now = ctx.array(input)[:gdim * 2 * n].reshape(gdim, 2 * n)
    out = ctx.array(od).copy()
    final = ctx.array(approx).copy()
    for level in range(1, levels + 1):
        count = n >> (level - 1)
        even, odd = approx_now[:, 0::2], approx_now[:, 1::2]
        detail = (even - odd) * inv
        start = count * gdim
        out[start:start + gdim * count] = detail.reshape(-1)
        approx_now = (even + odd) * inv
    if levels > 1:
        final[:gdim] = approx_now[:, 0]
    return out if output == "od" else final


@reference("corpus_fdtd3d")
def corpus_fdtd3d(ctx: ReferenceContext, *, input: str = "input", stencil: str = "stencil", dimx: str = "dimx",
                  dimy: str = "dimy", dimz: str = "dimz", radius: int = 4, output: str = "output") -> np.ndarray:
    """FDTD3d's FiniteDifferencesKernel, one step: the interior dimx x dimy x dimz points of a volume padded by
    ``radius`` on every side get stencil[0] * centre + sum_i stencil[i] * (the 6 neighbours at distance i); the
    rest of the output keeps its initial values."""
    nx, ny, nz, r = _corpus_int(ctx, dimx), _corpus_int(ctx, dimy), _corpus_int(ctx, dimz), radius
    vol = ctx.array(input).reshape(nz + 2 * r, ny + 2 * r, nx + 2 * r)
    c = ctx.array(stencil)
    out = ctx.array(output).reshape(vol.shape).copy()
    core = (slice(r, r + nz), slice(r, r + ny), slice(r, r + nx))
    value = c[0] * vol[core]
    for i in range(1, r + 1):
        value = value + c[i] * (vol[r + i:r + i + nz, r:r + ny, r:r + nx] + vol[r - i:r - i + nz, r:r + ny, r:r + nx]
                                + vol[r:r + nz, r + i:r + i + ny, r:r + nx] + vol[r:r + nz, r - i:r - i + ny, r:r + nx]
                                + vol[r:r + nz, r:r + ny, r + i:r + i + nx] + vol[r:r + nz, r:r + ny, r - i:r - i + nx])
    out[core] = value
    return out.reshape(-1)


@reference("corpus_transpose")
def corpus_transpose(ctx: ReferenceContext, *, input: str = "idata", width: str = "width",
                     height: str = "height", dtype: str = "float") -> np.ndarray:
    """odata (width x height) = transpose of idata (height x width), row-major."""
    w, h = _corpus_int(ctx, width), _corpus_int(ctx, height)
    kind = np.int64 if dtype == "int" else np.float64
    return ctx.array(input, kind)[:w * h].reshape(h, w).T.reshape(-1)


_CORPUS_DCT_Q = np.array([32, 33, 51, 81, 66, 39, 34, 17, 33, 36, 48, 47, 28, 23, 12, 12, 51, 48, 47, 28, 23, 12,
                          12, 12, 81, 47, 28, 23, 12, 12, 12, 12, 66, 28, 23, 12, 12, 12, 12, 12, 39, 23, 12, 12,
                          12, 12, 12, 12, 34, 12, 12, 12, 12, 12, 12, 12, 17, 12, 12, 12, 12, 12, 12, 12],
                         dtype=np.int64).reshape(8, 8)   # dct8x8_kernel_quantization.cuh's __constant__ Q


def _corpus_blocks8(ctx, name, width, height, stride, kind=np.float64):
    w, h, s = _corpus_int(ctx, width), _corpus_int(ctx, height), _corpus_int(ctx, stride)
    plane = ctx.array(name, kind)[:h * s].reshape(h, s)
    return plane, w, h


@reference("corpus_dct8x8")
def corpus_dct8x8(ctx: ReferenceContext, *, input: str = "src", width: str = "width", height: str = "height",
                  stride: str = "stride", inverse: bool = False, rounded: bool = False) -> np.ndarray:
    """Orthonormal 2D DCT-II (or its inverse) of every 8x8 block of a width x height plane with row stride
    ``stride`` (columns past ``width`` are kept); ``rounded``: rounded to integers (the short kernels)."""
    plane, w, h = _corpus_blocks8(ctx, input, width, height, stride)
    n = np.arange(8)
    basis = np.sqrt(2 / 8) * np.cos((2 * n[None, :] + 1) * n[:, None] * np.pi / 16)
    basis[0] /= np.sqrt(2)
    out = plane.copy()
    blocks = plane[:h, :w].reshape(h // 8, 8, w // 8, 8).transpose(0, 2, 1, 3)
    if inverse:
        result = np.einsum("ki,abkl,lj->abij", basis, blocks, basis)
    else:
        result = np.einsum("ik,abkl,jl->abij", basis, blocks, basis)
    out[:h, :w] = result.transpose(0, 2, 1, 3).reshape(h, w)
    if rounded:
        out = np.floor(out + 0.5)
    return out.reshape(-1)


@reference("corpus_quantize")
def corpus_quantize(ctx: ReferenceContext, *, input: str = "SrcDst", width: str = "width", height: str = "height",
                    stride: str = "stride", short: bool = False) -> np.ndarray:
    """dct8x8's quantization: every coefficient c of an 8x8 block becomes roundf(c / Q) * Q (floats), or for
    shorts sign(c) * ((|c| + (Q >> 1)) / Q) * Q with C's truncating division."""
    plane, w, h = _corpus_blocks8(ctx, input, width, height, stride, np.int64 if short else np.float64)
    q = np.tile(_CORPUS_DCT_Q, (h // 8, w // 8))
    out = plane.copy()
    c = plane[:h, :w]
    if short:
        magnitude = ((np.abs(c) + (q >> 1)) // q)
        value = np.where(c < 0, -magnitude, magnitude) * q
        out[:h, :w] = ((value + 32768) % 65536) - 32768
    else:
        ratio = (c.astype(np.float32) / q.astype(np.float32)).astype(np.float64)
        out[:h, :w] = np.sign(ratio) * np.floor(np.abs(ratio) + 0.5) * q
    return out.reshape(-1)


@reference("corpus_box_filter")
def corpus_box_filter(ctx: ReferenceContext, *, input: str = "id", width: str = "w", height: str = "h",
                      radius: str = "r", axis: str = "x") -> np.ndarray:
    """boxFilter's d_boxfilter_{x,y}_global: the mean over a (2r + 1) window along rows (x) or columns (y),
    edge pixels repeated."""
    w, h, r = _corpus_int(ctx, width), _corpus_int(ctx, height), _corpus_int(ctx, radius)
    image = ctx.array(input)[:w * h].reshape(h, w)
    if axis == "y":
        image = image.T
    n = image.shape[1]
    padded = np.concatenate([np.repeat(image[:, :1], r, axis=1), image, np.repeat(image[:, -1:], r, axis=1)], axis=1)
    sums = np.cumsum(np.concatenate([np.zeros((image.shape[0], 1)), padded], axis=1), axis=1)
    out = (sums[:, 2 * r + 1:2 * r + 1 + n] - sums[:, :n]) / (2 * r + 1)
    return (out.T if axis == "y" else out).reshape(-1)


@reference("corpus_texture_convolution")
def corpus_texture_convolution(ctx: ReferenceContext, *, texture: str = "texSrc", kernel: str = "c_Kernel",
                               width: str = "imageW", height: str = "imageH", axis: str = "x") -> np.ndarray:
    """convolutionTexture's convolutionRowsKernel / convolutionColumnsKernel: out[y, x] = sum over i of
    T[y, x + R - i] c[i] (rows; columns along y), R = (len(c) - 1) / 2. The kernel fetches at texel centres, where a
    linear filter returns the texel itself, and the texture clamps at the edges (its wrap mode is switched to clamp
    for texel coordinates)."""
    w, h = _corpus_int(ctx, width), _corpus_int(ctx, height)
    image = ctx.array(texture)[:w * h].reshape(h, w)
    c = ctx.array(kernel)
    r = (c.size - 1) // 2
    if axis == "y":
        image = image.T
    n = image.shape[1]
    out = np.zeros_like(image)
    for i in range(c.size):
        out += image[:, np.clip(np.arange(n) + r - i, 0, n - 1)] * c[i]
    return (out.T if axis == "y" else out).reshape(-1)


@reference("corpus_texel_zero")
def corpus_texel_zero(ctx: ReferenceContext, *, texture: str = "tex", width: str = "width",
                      height: str = "height") -> np.ndarray:
    """boxFilter's d_boxfilter_{x,y}_tex on its normalized-coordinate, wrapping, point-filtered texture, fetched at
    texel coordinates: every fetch wraps to texel (0, 0) (the GPU does the same, docs/semantics.md "Texture
    fetches"), so every output is the mean of 2r + 1 copies of it: texel (0, 0) itself."""
    return np.full(_corpus_int(ctx, width) * _corpus_int(ctx, height), ctx.array(texture)[0])


@reference("corpus_stereo_disparity")
def corpus_stereo_disparity(ctx: ReferenceContext, *, left: str = "g_img0", right: str = "g_img1", width: str = "w",
                            height: str = "h", low: str = "minDisparity", high: str = "maxDisparity",
                            radius: int = 8) -> np.ndarray:
    """stereoDisparity's cpu_gold_stereo, vectorised: per pixel and disparity d, the sum over a (2r + 1)^2 window of
    the four byte channels' absolute differences between left[yy, xx] and right[yy, xxd] (yy = y + i, xx = x + j,
    xxd = x + j + d, each clamped to the image); the output is d + 8 for the first d of least cost."""
    w, h = _corpus_int(ctx, width), _corpus_int(ctx, height)
    lo, hi = _corpus_int(ctx, low), _corpus_int(ctx, high)
    a = ctx.array(left, np.int64).astype(np.uint32)[:w * h].reshape(h, w).view(np.uint8).reshape(h, w, 4)
    b = ctx.array(right, np.int64).astype(np.uint32)[:w * h].reshape(h, w).view(np.uint8).reshape(h, w, 4)
    ys = np.clip(np.arange(h + 2 * radius) - radius, 0, h - 1)
    xs = np.arange(w + 2 * radius) - radius
    a_pad = a.astype(np.int64)[ys][:, np.clip(xs, 0, w - 1)]
    best_cost = np.full((h, w), np.iinfo(np.int64).max)
    best = np.zeros((h, w), np.int64)
    n = 2 * radius + 1
    for d in range(lo, hi + 1):
        sad = np.abs(a_pad - b.astype(np.int64)[ys][:, np.clip(xs + d, 0, w - 1)]).sum(axis=2)
        c = np.zeros((sad.shape[0] + 1, sad.shape[1] + 1), np.int64)
        c[1:, 1:] = sad.cumsum(axis=0).cumsum(axis=1)
        cost = c[n:, n:] - c[:-n, n:] - c[n:, :-n] + c[:-n, :-n]
        better = cost < best_cost
        best_cost = np.where(better, cost, best_cost)
        best = np.where(better, d + 8, best)
    return (best % 2 ** 32).reshape(-1)          # the kernel stores d + 8 as an unsigned int


@reference("corpus_box_filter_rgba_y")
def corpus_box_filter_rgba_y(ctx: ReferenceContext, *, input: str = "id", width: str = "w", height: str = "h",
                             radius: str = "r") -> np.ndarray:
    """boxFilter's d_boxfilter_rgba_y on RGBA8 pixels packed in uint32: the kernel's own float32 sliding-window
    sum down each column, in its operation order and with the contraction NVRTC applies (the PTX has
    ``t += c * (1/255)`` as fma.rn.f32, ``t -= c * (1/255)`` as mul.f32 then sub.f32), requantised with
    __saturatef and (unsigned)(x * 255)."""
    w, h, r = _corpus_int(ctx, width), _corpus_int(ctx, height), _corpus_int(ctx, radius)
    packed = ctx.array(input, np.int64).astype(np.uint32)[:w * h].reshape(h, w)
    f32 = np.float32
    k = f32(0.003921568627)
    counts = np.stack([((packed >> np.uint32(8 * c)) & np.uint32(0xff)).astype(f32) for c in range(4)], axis=-1)
    scale = f32(1.0) / f32(2 * r + 1)

    def add(t, y):          # fma.rn.f32: one rounding (exact in float64 here: 8-bit x 24-bit product)
        return (counts[y].astype(np.float64) * np.float64(k) + t.astype(np.float64)).astype(f32)

    def sub(t, y):
        return t - counts[y] * k

    def pack(t):
        v = np.clip(t * scale, f32(0), f32(1))
        q = (v * f32(255.0)).astype(np.uint32)
        return q[..., 0] | (q[..., 1] << np.uint32(8)) | (q[..., 2] << np.uint32(16)) | (q[..., 3] << np.uint32(24))

    out = np.zeros((h, w), np.uint32)
    t = (counts[0] * k) * f32(r)
    for y in range(r + 1):
        t = add(t, y)
    out[0] = pack(t)
    for y in range(1, r + 1):
        t = add(t, y + r)
        t = sub(t, 0)
        out[y] = pack(t)
    for y in range(r + 1, h - r):
        t = add(t, y + r)
        t = sub(t, y - r - 1)
        out[y] = pack(t)
    for y in range(h - r, h):
        t = add(t, h - 1)
        t = sub(t, y - r - 1)
        out[y] = pack(t)
    return out.astype(np.int64).reshape(-1)


@reference("corpus_sample_ranks")
def corpus_sample_ranks(ctx: ReferenceContext, *, keys: str = "d_SrcKey", stride: str = "stride", n: str = "N",
                        sample_stride: int = 128, output: str = "A") -> np.ndarray:
    """mergeSort's generateSampleRanksKernel<1> for sorted segment pairs (A, B) of ``stride`` keys: the ranks of
    every SAMPLE_STRIDE-th key of A in A and (exclusively) in B, and of every SAMPLE_STRIDE-th key of B in B and
    (inclusively) in A; laid out as the kernel does (A's samples first, then B's, per segment pair)."""
    k = ctx.array(keys, np.int64)
    st, total = _corpus_int(ctx, stride), _corpus_int(ctx, n)
    ranks_a = np.zeros(total // sample_stride, np.int64)
    ranks_b = np.zeros(total // sample_stride, np.int64)
    per = st // sample_stride
    for base in range(0, total, 2 * st):
        a, b = k[base:base + st], k[base + st:base + 2 * st]
        first = base // sample_stride
        samples = np.arange(per) * sample_stride
        ranks_a[first:first + per] = samples
        ranks_b[first:first + per] = np.searchsorted(b, a[samples], side="left")
        ranks_b[first + per:first + 2 * per] = samples
        ranks_a[first + per:first + 2 * per] = np.searchsorted(a, b[samples], side="right")
    return ranks_a if output == "A" else ranks_b


@reference("corpus_merge_limits")
def corpus_merge_limits(ctx: ReferenceContext, *, ranks: str = "d_Ranks", stride: str = "stride", n: str = "N",
                        sample_stride: int = 128) -> np.ndarray:
    """mergeSort's mergeRanksAndIndicesKernel: per segment pair, the A-sample ranks and B-sample ranks (each
    sorted) merged into one sorted list of interval limits (A's before B's on ties), as the kernel's
    exclusive/inclusive binary searches place them."""
    r = ctx.array(ranks, np.int64)
    st, total = _corpus_int(ctx, stride), _corpus_int(ctx, n)
    per = st // sample_stride
    out = np.zeros(total // sample_stride, np.int64)
    for first in range(0, total // sample_stride, 2 * per):
        a, b = r[first:first + per], r[first + per:first + 2 * per]
        i = np.arange(per)
        out[first + np.searchsorted(b, a, side="left") + i] = a
        out[first + np.searchsorted(a, b, side="right") + i] = b
    return out


@reference("corpus_matmul_large_chunk_as_written")
def corpus_matmul_large_chunk_as_written(ctx: ReferenceContext, *, a: str = "A", b: str = "B", ha: str = "hA",
                                         wa: str = "wA", wb: str = "wB", block: int = 16) -> np.ndarray:
    """globalToShmemAsyncCopy's MatrixMulNaiveLargeChunk, MatrixMulAsyncCopyLargeChunk and
    MatrixMulAsyncCopyMultiStageLargeChunk as written: they load the B tile with A's indexing
    (``&B[a + wA * threadIdx.y + t4x]``, ``aStage`` in the multi-stage one), so
    C[16 by + ty, 16 bx + tx] = sum_kt sum_k A[16 by + ty, 16 kt + k] * B[16 by + k, 16 kt + tx] (B read as a
    wA-wide matrix; the sample's own check passes only because it fills A and B with constants)."""
    rows, inner, cols = _corpus_int(ctx, ha), _corpus_int(ctx, wa), _corpus_int(ctx, wb)
    left = ctx.array(a)[:rows * inner].reshape(rows, inner)
    right = ctx.array(b).reshape(-1, inner)
    out = np.zeros((rows, cols))
    for by in range(rows // block):
        rs = slice(by * block, (by + 1) * block)
        tile = np.zeros((block, block))
        for kt in range(inner // block):
            ks = slice(kt * block, (kt + 1) * block)
            tile += left[rs, ks] @ right[rs, ks]
        out[rs, :] = np.tile(tile, (1, cols // block))
    return out.reshape(-1)


@reference("corpus_simple_recursive_rgba")
def corpus_simple_recursive_rgba(ctx: ReferenceContext, *, input: str = "id", width: str = "w", height: str = "h",
                                 a: str | float = "a") -> np.ndarray:
    """recursiveGaussian's d_simpleRecursive_rgba on RGBA8 pixels packed in uint32, down each column: a forward
    pass yc = xc + a (yp - xc) written out, then a backward pass writing (forward + backward) * 0.5; float32 in
    the kernel's order with the contraction in its PTX (``xc + a * (yp - xc)`` is sub.f32 then fma.rn.f32;
    c / 255.0f is div.rn.f32), requantised with __saturatef and uint(x * 255)."""
    w, h = _corpus_int(ctx, width), _corpus_int(ctx, height)
    alpha = np.float32(ctx.number(a))
    f32 = np.float32
    packed = ctx.array(input, np.int64).astype(np.uint32)[:w * h].reshape(h, w)

    def unpack(p):
        return np.stack([((p >> np.uint32(8 * c)) & np.uint32(0xff)).astype(f32) / f32(255.0) for c in range(4)],
                        axis=-1)

    def pack(t):
        q = (np.clip(t, f32(0), f32(1)) * f32(255.0)).astype(np.uint32)
        return q[..., 0] | (q[..., 1] << np.uint32(8)) | (q[..., 2] << np.uint32(16)) | (q[..., 3] << np.uint32(24))

    def step(yp, xc):        # fma.rn.f32(yp - xc, a, xc), one rounding (exact in float64 before it)
        return ((yp - xc).astype(np.float64) * np.float64(alpha) + xc.astype(np.float64)).astype(f32)

    x = unpack(packed)
    out = np.zeros((h, w), np.uint32)
    yp = x[0]
    for y in range(h):
        yp = step(yp, x[y])
        out[y] = pack(yp)
    yp = x[h - 1]
    for y in range(h - 1, -1, -1):
        yp = step(yp, x[y])
        out[y] = pack((unpack(out[y]) + yp) * f32(0.5))
    return out.astype(np.int64).reshape(-1)


@reference("corpus_recursive_gaussian_rgba")
def corpus_recursive_gaussian_rgba(ctx: ReferenceContext, *, input: str = "id", width: str = "w",
                                   height: str = "h") -> np.ndarray:
    """recursiveGaussian's d_recursiveGaussian_rgba (CLAMP_TO_EDGE) on RGBA8 pixels packed in uint32, down each
    column: the causal pass written out, then the anti-causal pass added to it; float32 in the kernel's order with
    the contraction in its PTX (``a0 * xc + a1 * xp - b1 * yp - b2 * yb`` is fma(xp, a1, xc * a0) then two
    sub.f32 of rounded products; likewise with a2, a3 going back), requantised with __saturatef and
    uint(x * 255). The coefficients are the args a0, a1, a2, a3, b1, b2, coefp, coefn."""
    w, h = _corpus_int(ctx, width), _corpus_int(ctx, height)
    f32 = np.float32
    c = {name: f32(ctx.number(name)) for name in ("a0", "a1", "a2", "a3", "b1", "b2", "coefp", "coefn")}
    packed = ctx.array(input, np.int64).astype(np.uint32)[:w * h].reshape(h, w)

    def unpack(p):
        return np.stack([((p >> np.uint32(8 * k)) & np.uint32(0xff)).astype(f32) / f32(255.0) for k in range(4)],
                        axis=-1)

    def pack(t):
        q = (np.clip(t, f32(0), f32(1)) * f32(255.0)).astype(np.uint32)
        return q[..., 0] | (q[..., 1] << np.uint32(8)) | (q[..., 2] << np.uint32(16)) | (q[..., 3] << np.uint32(24))

    def fma(x, k, addend):   # one rounding; exact in float64 before it
        return (x.astype(np.float64) * np.float64(k) + addend.astype(np.float64)).astype(f32)

    x = unpack(packed)
    out = np.zeros((h, w), np.uint32)
    xp = x[0]
    yb = c["coefp"] * xp
    yp = yb
    for y in range(h):
        xc = x[y]
        yc = (fma(xp, c["a1"], xc * c["a0"]) - yp * c["b1"]) - yb * c["b2"]
        out[y] = pack(yc)
        xp, yb, yp = xc, yp, yc
    xn = xa = x[h - 1]
    yn = c["coefn"] * xn
    ya = yn
    for y in range(h - 1, -1, -1):
        xc = x[y]
        yc = (fma(xn, c["a2"], xa * c["a3"]) - yn * c["b1"]) - ya * c["b2"]
        xa, xn, ya, yn = xn, xc, yn, yc
        out[y] = pack(unpack(out[y]) + yc)
    return out.astype(np.int64).reshape(-1)
