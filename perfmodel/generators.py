"""Named, seeded input generators that kernel specs refer to (``init: {generator: {name: ..., ...}}``).

Every generator is deterministic: the same keyword arguments give the same arrays, so every run of a spec is
reproducible. A generator either returns one 1-D array, or (``fields=...``) a dict of named 1-D arrays from
which a spec picks one with ``field:`` - e.g. ``csr_matrix`` returns ``data``, ``col_index`` and ``row_ptr`` of
one matrix, and the three kernel args each name their field.

Keyword arguments annotated ``int``/``float`` are written in specs as expressions over the params
(``num_rows: num_rows``, ``rows: m``); those annotated ``str`` are taken literally.

To add one::

    @generator("ramp")
    def ramp(*, length: int, step: float = 1.0) -> np.ndarray: ...

``length`` (the arg's evaluated length expression, when the spec gives one) is passed if the function
accepts it.
"""
from __future__ import annotations

from collections import OrderedDict

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perfmodel.errors import SpecError


@dataclass(frozen=True)
class Generator:
    name: str
    function: Callable[..., Any]
    description: str
    fields: tuple[str, ...] = ()
    # kwarg name -> "expr" (evaluated over params) or "str" (literal)
    kinds: dict[str, str] = field(default_factory=dict)
    required: frozenset[str] = frozenset()
    takes_length: bool = False


GENERATORS: dict[str, Generator] = {}


def generator(name: str, *, fields: tuple[str, ...] = ()):
    """Register ``function`` as the generator ``name``."""

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(function)
        kinds: dict[str, str] = {}
        required = set()
        takes_length = False
        for parameter in signature.parameters.values():
            if parameter.name == "length":
                takes_length = True
                continue
            annotation = parameter.annotation
            text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
            kinds[parameter.name] = "str" if text == "str" else "expr"
            if parameter.default is inspect.Parameter.empty:
                required.add(parameter.name)
        doc = (inspect.getdoc(function) or "").split("\n\n")[0].replace("\n", " ")
        GENERATORS[name] = Generator(name, function, doc, fields, kinds, frozenset(required), takes_length)
        return function

    return register


def get_generator(name: str) -> Generator:
    try:
        return GENERATORS[name]
    except KeyError:
        raise SpecError(f"unknown generator {name!r} (known: {', '.join(sorted(GENERATORS))})") from None


# --------------------------------------------------------------------------------------------------------------
# Dense matrices and images

# The seed slides' worked example (lecture "matrix multiplication with one block"): a 2x3 times a 3x3 int matrix
# gives [[23, 28, 34], [87, 84, 76]].
SEED_MATMUL_A = np.array([[2, 3, 1], [4, 5, 7]], dtype=np.int32)
SEED_MATMUL_B = np.array([[1, 8, 5], [4, 2, 7], [9, 6, 3]], dtype=np.int32)


@generator("matmul_example")
def matmul_example(*, matrix: str, rows: int, cols: int, seed: int = 0, low: int = 0, high: int = 10) -> np.ndarray:
    """The seed slides' 2x3 (``matrix: a``) / 3x3 (``matrix: b``) int example when the shape matches it,
    otherwise seeded random ints in [low, high), row-major."""
    example = {"a": SEED_MATMUL_A, "b": SEED_MATMUL_B}.get(matrix)
    if example is None:
        raise SpecError(f"generator 'matmul_example': matrix must be 'a' or 'b', got {matrix!r}")
    if example.shape == (rows, cols):
        return example.reshape(-1).copy()
    rng = np.random.default_rng(seed)
    return rng.integers(low, high, size=rows * cols, dtype=np.int32)


@generator("image")
def image(*, rows: int, cols: int, seed: int = 0, noise: float = 0.1) -> np.ndarray:
    """A rows x cols float32 picture (row-major): a smooth 2-D gradient plus seeded noise, values in [0, 1)."""
    rng = np.random.default_rng(seed)
    y = np.linspace(0.0, 1.0, rows, endpoint=False)[:, None]
    x = np.linspace(0.0, 1.0, cols, endpoint=False)[None, :]
    picture = (0.5 * y + 0.5 * x) * (1.0 - noise) + noise * rng.random((rows, cols))
    return picture.astype(np.float32).reshape(-1)


@generator("conv_mask")
def conv_mask(*, length: int, width: int, seed: int = 0) -> np.ndarray:
    """A convolution mask of ``width`` seeded random weights in [-1, 1), zero-padded to ``length`` elements - what
    ``cudaMemcpyToSymbol(M, h_M, Mask_Width * sizeof(float))`` leaves in a ``__constant__ float M[MAX_MASK_WIDTH]``."""
    if not 0 <= width <= length:
        raise SpecError(f"generator 'conv_mask': width must be in 0..{length} (the array length), got {width}")
    rng = np.random.default_rng(seed)
    mask = np.zeros(length, dtype=np.float32)
    mask[:width] = rng.uniform(-1.0, 1.0, size=width)
    return mask


# --------------------------------------------------------------------------------------------------------------
# Sparse matrices (CSR)

# The seed slides' 4x4 example (SpMV lecture): row 1 is empty.
SEED_CSR = {
    "data": np.array([3, 1, 2, 4, 1, 1, 1], dtype=np.float32),
    "col_index": np.array([0, 2, 1, 2, 3, 0, 3], dtype=np.int32),
    "row_ptr": np.array([0, 2, 2, 5, 7], dtype=np.int32),
}

CSR_KINDS = {0: "seed_example", 1: "random", 2: "banded"}


def _csr_from_rows(columns_per_row: list[np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
    lengths = np.array([len(c) for c in columns_per_row], dtype=np.int64)
    row_ptr = np.zeros(len(columns_per_row) + 1, dtype=np.int32)
    np.cumsum(lengths, out=row_ptr[1:])
    nnz = int(row_ptr[-1])
    col_index = (np.concatenate(columns_per_row).astype(np.int32) if nnz else np.zeros(0, dtype=np.int32))
    # Values in [0.5, 1.5): away from zero so a missed element shows in the check.
    data = (0.5 + rng.random(nnz)).astype(np.float32)
    return {"data": data, "col_index": col_index, "row_ptr": row_ptr}


@generator("csr_matrix", fields=("data", "col_index", "row_ptr"))
def csr_matrix(*, kind: int, num_rows: int, num_cols: int, seed: int = 0, max_row_length: int = 8,
               half_bandwidth: int = 2) -> dict[str, np.ndarray]:
    """A CSR matrix: kind 0 = the seed's 4x4 example (row 1 empty), 1 = random row lengths uniform in
    [0, max_row_length] with distinct sorted random columns, 2 = banded (columns row-half_bandwidth ..
    row+half_bandwidth clipped to the matrix). Seeded."""
    kind = int(kind)
    if kind not in CSR_KINDS:
        raise SpecError(f"generator 'csr_matrix': kind must be one of "
                        f"{', '.join(f'{k} ({v})' for k, v in CSR_KINDS.items())}, got {kind}")
    if kind == 0:
        if (num_rows, num_cols) != (4, 4):
            raise SpecError(f"generator 'csr_matrix': kind 0 is the seed's 4x4 example, but num_rows={num_rows}, "
                            f"num_cols={num_cols}; use kind 1 (random) or 2 (banded) for other sizes")
        return {name: array.copy() for name, array in SEED_CSR.items()}
    if num_rows < 1 or num_cols < 1:
        raise SpecError(f"generator 'csr_matrix': num_rows and num_cols must be >= 1, got {num_rows}, {num_cols}")
    rng = np.random.default_rng(seed)
    rows: list[np.ndarray] = []
    if kind == 1:
        limit = max(0, min(max_row_length, num_cols))
        lengths = rng.integers(0, limit + 1, size=num_rows)
        for length in lengths.tolist():
            columns = rng.choice(num_cols, size=length, replace=False)
            columns.sort()
            rows.append(columns)
    else:
        # row r holds columns max(0, r - hb) .. min(num_cols - 1, r + hb), built for all rows at once
        row = np.arange(num_rows, dtype=np.int64)
        low = np.maximum(0, row - half_bandwidth)
        lengths = np.maximum(0, np.minimum(num_cols - 1, row + half_bandwidth) - low + 1)
        row_ptr = np.zeros(num_rows + 1, dtype=np.int64)
        np.cumsum(lengths, out=row_ptr[1:])
        nnz = int(row_ptr[-1])
        # element e of row r is column low[r] + (e - row_ptr[r]); int32 like the result (nnz < 2**31 here)
        col_index = np.repeat((low - row_ptr[:-1]).astype(np.int32), lengths)
        col_index += np.arange(nnz, dtype=np.int32)
        # values in [0.5, 1.5), drawn as _csr_from_rows draws them (float64 draws, in chunks: the same stream)
        data = np.empty(nnz, dtype=np.float32)
        for start in range(0, nnz, 1 << 22):
            stop = min(nnz, start + (1 << 22))
            data[start:stop] = 0.5 + rng.random(stop - start)
        return {"data": data, "col_index": col_index, "row_ptr": row_ptr.astype(np.int32)}
    return _csr_from_rows(rows, rng)


# --------------------------------------------------------------------------------------------------------------
# Cache: several args of one spec draw fields from the same generated object.

# The last few generated objects of this process, by generator and arguments (generators are deterministic:
# seeded), so that launches of the same data at other block sizes do not draw it again; callers get copies.
_RECENT: OrderedDict = OrderedDict()
_RECENT_MAX_BYTES = 128 << 20


def _remember(key, produced) -> None:
    arrays = list(produced.values()) if isinstance(produced, dict) else [produced]
    nbytes = sum(np.asarray(a).nbytes for a in arrays)
    if nbytes > _RECENT_MAX_BYTES:
        return
    _RECENT[key] = produced
    while sum(sum(np.asarray(a).nbytes for a in (v.values() if isinstance(v, dict) else [v]))
              for v in _RECENT.values()) > _RECENT_MAX_BYTES:
        _RECENT.popitem(last=False)


def call(name: str, kwargs: dict[str, Any], *, length: int | None, field_name: str | None,
         cache: dict | None = None, where: str = "", validate_only: bool = False) -> np.ndarray | None:
    """Run generator ``name`` with evaluated ``kwargs`` and return one 1-D array.

    ``cache`` (a dict the caller keeps for one instantiation) makes args that draw different fields of the
    same generated object share one call. ``where`` prefixes error messages (file and field).
    ``validate_only``: check the name, arguments and field, generate nothing and return None."""
    gen = get_generator(name)
    prefix = f"{where}: " if where else ""
    unknown = set(kwargs) - set(gen.kinds)
    if unknown:
        raise SpecError(f"{prefix}generator {name!r} has no argument(s) {', '.join(sorted(unknown))} "
                        f"(it takes: {', '.join(gen.kinds) or 'none'})")
    missing = gen.required - set(kwargs)
    if missing:
        raise SpecError(f"{prefix}generator {name!r} needs argument(s) {', '.join(sorted(missing))}")
    if gen.fields:
        if field_name is None:
            raise SpecError(f"{prefix}generator {name!r} makes several arrays; pick one with "
                            f"field: {' | '.join(gen.fields)}")
        if field_name not in gen.fields:
            raise SpecError(f"{prefix}generator {name!r} has no field {field_name!r} "
                            f"(fields: {', '.join(gen.fields)})")
    elif field_name is not None:
        raise SpecError(f"{prefix}generator {name!r} makes one array; remove field: {field_name}")
    if validate_only:
        return None
    call_kwargs = dict(kwargs)
    if gen.takes_length:
        call_kwargs["length"] = length
    key = (name, tuple(sorted((k, repr(v)) for k, v in call_kwargs.items())))
    if cache is not None and key in cache:
        produced = cache[key]
    elif key in _RECENT:
        produced = _RECENT[key]
        _RECENT.move_to_end(key)
    else:
        try:
            produced = gen.function(**call_kwargs)
        except SpecError as err:
            raise SpecError(f"{prefix}{err.message}") from None
        if cache is not None:
            cache[key] = produced
        _remember(key, produced)
    array = produced[field_name] if gen.fields else produced
    array = np.asarray(array).reshape(-1)
    if length is not None and array.size != length:
        raise SpecError(f"{prefix}generator {name!r} made {array.size} elements but the length expression "
                        f"gives {length}")
    return array.copy()
