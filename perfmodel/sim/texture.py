"""Texture fetches through a texture object: PTX ``tex.1d`` / ``tex.2d`` (``tex1D``, ``tex2D``, ``tex1Dfetch``).

A kernel argument of type ``cudaTextureObject_t`` is given as a :class:`Texture`: its texels and the texture
description the host passes to ``cudaCreateTextureObject`` (filter mode, address mode per dimension, normalized
coordinates, read mode). The launch places the texels in the global heap, row-major, and passes a handle; ``tex``
looks the handle up and fetches as the CUDA C++ Programming Guide's appendix "Texture Fetching" defines it:

* coordinates: ``x`` in texels, or ``x * N`` with normalized coordinates (N texels along that dimension);
* nearest-point filtering: the texel ``i = floor(x)``;
* linear filtering: ``xB = x - 0.5``, ``i = floor(xB)``, ``alpha = frac(xB)`` held in 9-bit fixed point with 8
  fractional bits; the result is ``(1 - alpha) T[i] + alpha T[i + 1]`` (in 2-D the same along y, four texels);
* out-of-range indices follow the address mode: clamp to the edge texel, border (a zero texel), wrap (``i mod N``)
  or mirror. The CUDA Runtime API (``cudaTextureDesc``) switches wrap and mirror to clamp when the coordinates are
  not normalized;
* read mode: the element type, or (8- and 16-bit integer texels) a float in [0, 1] (unsigned: ``v / (2^n - 1)``) or
  [-1, 1] (signed: ``max(v / (2^(n-1) - 1), -1)``). Linear filtering needs a float result;
* ``tex.1d`` with integer coordinates (``tex1Dfetch`` on linear memory): the texel at that index, zero outside;
* components a texel does not have read as 0.

Counted as global loads of the texels (each fetch one load of the texel's channels, a linearly filtered one four:
its 2 x 2 footprint), from the row-major layout. Not modelled: the texture cache's own behaviour, and a CUDA
array's memory layout (NVIDIA's undocumented block-linear tiling, which keeps 2-D neighbours closer than a
row-major layout does).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel.errors import SimulationError

FILTERS = ("point", "linear")
ADDRESS_MODES = ("clamp", "border", "wrap", "mirror")
READ_MODES = ("element", "normalized_float")
CHANNEL_DTYPES = ("float32", "int8", "uint8", "int16", "uint16", "int32", "uint32")
HANDLE_BASE = 0x7E7E_0000_0001      # the first texture's handle (never a heap address)
NORMALIZED_SCALE = 2.0 ** 16


@dataclass(frozen=True)
class Texture:
    """A texture object's texels and description. ``data``: ``(width, channels)`` for 1-D, ``(height, width,
    channels)`` for 2-D, of one of :data:`CHANNEL_DTYPES`; ``address``: one mode, or one per dimension (x first)."""
    data: np.ndarray
    filter: str = "point"
    address: tuple = ("clamp", "clamp")
    normalized_coords: bool = False
    read_mode: str = "element"

    def __post_init__(self) -> None:
        d = self.data
        if not isinstance(d, np.ndarray) or d.ndim not in (2, 3):
            raise SimulationError("a texture's data is (width, channels) or (height, width, channels)")
        if d.dtype.name not in CHANNEL_DTYPES:
            raise SimulationError(f"texture texels of dtype {d.dtype} are not supported (supported: "
                                  f"{', '.join(CHANNEL_DTYPES)})")
        if d.shape[-1] not in (1, 2, 4) or 0 in d.shape:
            raise SimulationError(f"a texture has 1, 2 or 4 channels and at least one texel; got shape {d.shape}")
        address = (self.address,) if isinstance(self.address, str) else tuple(self.address)
        if len(address) == 1:
            address = address * 2
        for mode in address:
            if mode not in ADDRESS_MODES:
                raise SimulationError(f"texture address mode {mode!r}: expected one of {', '.join(ADDRESS_MODES)}")
        object.__setattr__(self, "address", address[:2])
        if self.filter not in FILTERS:
            raise SimulationError(f"texture filter {self.filter!r}: expected one of {', '.join(FILTERS)}")
        if self.read_mode not in READ_MODES:
            raise SimulationError(f"texture read mode {self.read_mode!r}: expected one of {', '.join(READ_MODES)}")
        if self.read_mode == "normalized_float" and d.dtype.name not in ("int8", "uint8", "int16", "uint16"):
            raise SimulationError("the normalized-float read mode is for 8- and 16-bit integer texels "
                                  f"(cudaReadModeNormalizedFloat), not {d.dtype}")
        if self.filter == "linear" and not self.returns_float:
            raise SimulationError("linear filtering needs a float result: float texels or the normalized-float "
                                  "read mode (cudaFilterModeLinear)")
        object.__setattr__(self, "data", np.ascontiguousarray(d))

    @property
    def returns_float(self) -> bool:
        return self.data.dtype == np.float32 or self.read_mode == "normalized_float"

    @property
    def dims(self) -> int:
        return self.data.ndim - 1

    @property
    def channels(self) -> int:
        return self.data.shape[-1]

    def describe(self) -> str:
        shape = "x".join(str(n) for n in self.data.shape[:-1][::-1])
        return (f"{shape} texels of {self.channels} x {self.data.dtype}, {self.filter} filter, address "
                f"{'/'.join(self.address[:self.dims])}, {'normalized' if self.normalized_coords else 'texel'} "
                f"coordinates, {self.read_mode} read")


def _index(i: np.ndarray, n: int, mode: str):
    """(index in [0, n), in range) under an address mode."""
    if mode == "wrap":
        return np.mod(i, n), None
    if mode == "mirror":
        p = np.mod(i, 2 * n)
        return np.where(p < n, p, 2 * n - 1 - p), None
    inside = (i >= 0) & (i < n)
    return np.clip(i, 0, n - 1), (None if mode == "clamp" else inside)


def _normalize(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    if info.min == 0:
        return values.astype(np.float64) / info.max
    return np.maximum(values.astype(np.float64) / info.max, -1.0)


def b_tex(ins, ops):
    """``tex.{1d,2d}.v4.{f32,s32,u32}.{f32,s32} {d0, d1, d2, d3}, [handle, {x[, y]}]``."""
    from perfmodel.sim.numeric import Unsupported

    geom = next((m for m in ins.mods if m in ("1d", "2d")), None)
    if geom is None or "v4" not in ins.mods or len(ins.types) != 2:
        raise Unsupported(f"texture fetches other than tex.1d / tex.2d .v4 ({ins.text.strip()})")
    dst_t, crd_t = ins.types
    if dst_t not in ("f32", "s32", "u32") or crd_t not in ("f32", "s32"):
        raise Unsupported(f"tex with {dst_t} results from {crd_t} coordinates")
    dims = 1 if geom == "1d" else 2
    dests, src = ins.operands
    handle_op, coords = src.items
    if len(coords.items) != dims:
        raise Unsupported(f"tex.{geom} with {len(coords.items)} coordinates")
    get_handle = ops.reader(handle_op, "u64")
    get_coords = [ops.reader(c, crd_t) for c in coords.items]
    writers = [ops.writer(d) for d in dests.items]
    gid = ins.index
    out_dt = np.dtype({"f32": np.float32, "s32": np.int32, "u32": np.uint32}[dst_t])

    def tex(st, fr):
        handle = get_handle(st, fr)
        m = st.mask_full()
        live = np.broadcast_to(handle, m.shape)[m]
        if live.size == 0:
            return
        first = int(live[0])
        if not (live == first).all():
            st.fault_where(m, "tex: the lanes of one fetch use different texture objects (not supported)", gid)
        found = st.launch.textures.get(first)
        if found is None:
            st.fault_where(m, f"tex: {first:#x} is not a texture object of this launch (a cudaTextureObject_t "
                              "argument is given as a Texture)", gid)
        texture, base = found
        if texture.dims != dims:
            st.fault_where(m, f"tex.{geom} on a {texture.dims}-D texture", gid)
        if texture.returns_float != (dst_t == "f32"):
            st.fault_where(m, f"tex with {dst_t} results on a texture that returns "
                              f"{'floats' if texture.returns_float else 'integers'} ({texture.describe()})", gid)
        values = fetch(st, gid, texture, base, [g(st, fr) for g in get_coords], crd_t)
        for c, w in enumerate(writers):
            w(st, fr, (values[c] if c < len(values) else np.zeros_like(values[0])).astype(out_dt, copy=False))
    return tex


def fetch(st, gid, texture: Texture, base: int, coords: list, crd_t: str) -> list:
    """The fetched components (one array per channel) for every lane, the texel loads counted."""
    data = texture.data
    sizes = data.shape[:-1][::-1]                  # (width[, height])
    shape = np.broadcast_shapes(*(c.shape for c in coords), (1, 1) if st.mask is None else st.mask.shape)
    if crd_t == "s32":
        # tex1Dfetch: an integer index, no filtering, zero outside
        i = np.broadcast_to(coords[0].astype(np.int64), shape)
        idx, inside = _index(i, sizes[0], "border")
        corners = [((idx,), inside, 1.0)]
    else:
        xs = []
        for c, n in zip(coords, sizes):
            x = np.clip(np.nan_to_num(np.broadcast_to(c, shape).astype(np.float64), nan=0.0), -1e9, 1e9)
            if texture.normalized_coords:
                x = np.floor(x * NORMALIZED_SCALE) / NORMALIZED_SCALE * n
            xs.append(x)
        modes = [m if texture.normalized_coords or m in ("clamp", "border") else "clamp" for m in texture.address]
        if texture.filter == "point":
            per_dim = [[(np.floor(x).astype(np.int64), 1.0)] for x in xs]
        else:
            per_dim = []
            for x in xs:
                xb = x - 0.5
                i = np.floor(xb)
                alpha = np.round((xb - i) * 256.0) / 256.0      # 1.8 fixed point
                i = i.astype(np.int64)
                per_dim.append([(i, 1.0 - alpha), (i + 1, alpha)])
        corners = []
        for combo in np.ndindex(*(len(p) for p in per_dim)):
            idx, inside, weight = [], None, 1.0
            for d, k in enumerate(combo):
                raw, w = per_dim[d][k]
                j, ok = _index(raw, sizes[d], modes[d])
                idx.append(j)
                weight = weight * w
                if ok is not None:
                    inside = ok if inside is None else (inside & ok)
            corners.append((tuple(idx), inside, weight))
    texel = data.dtype.itemsize * texture.channels
    width = sizes[0]
    out = None
    for idx, inside, weight in corners:
        flat = idx[0] + (idx[1] * width if len(idx) > 1 else 0)
        vals = st.mem_access(gid, "global", base + flat * texel, data.dtype.itemsize, texture.channels,
                             data.dtype, None)
        vals = [np.broadcast_to(v, shape) for v in vals]
        if texture.read_mode == "normalized_float":
            vals = [_normalize(v, data.dtype) for v in vals]
        elif texture.returns_float:
            vals = [v.astype(np.float64) for v in vals]
        if inside is not None:
            vals = [np.where(inside, v, 0) for v in vals]
        if texture.filter == "linear" and crd_t == "f32":
            vals = [v * weight for v in vals]
            out = vals if out is None else [a + b for a, b in zip(out, vals)]
        else:
            out = vals
    if texture.returns_float:
        out = [v.astype(np.float32) for v in out]
    return out
