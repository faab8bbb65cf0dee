"""Texture and surface objects: PTX ``tex`` (``tex1D``, ``tex2D``, ``tex3D``, ``tex1Dfetch``, the layered
``tex1DLayered`` / ``tex2DLayered``) and ``suld.b`` / ``sust.b`` (``surf1Dread``, ``surf2Dwrite``, ...).

A kernel argument of type ``cudaTextureObject_t`` is given as a :class:`Texture`: its texels and the texture
description the host passes to ``cudaCreateTextureObject`` (filter mode, address mode per dimension, normalized
coordinates, read mode); a ``cudaSurfaceObject_t`` as a :class:`Surface`. The launch places the texels in the global
heap, row-major, and passes a handle; ``tex`` looks the handle up and fetches as the CUDA C++ Programming Guide's
appendix "Texture Fetching" defines it:

* coordinates: ``x`` in texels, or ``x * N`` with normalized coordinates (N texels along that dimension; the
  normalized coordinate is first truncated to 21 fractional bits: the one width that fits every fetch measured on
  an H200 and an H100, widths 3 to 4,000 texels, validation/raw/h200_texture_fetch.json and
  h100_texture_fetch.json);
* nearest-point filtering: the texel ``i = floor(x)``;
* linear filtering: ``xB = x - 0.5``, ``i = floor(xB)``, ``alpha = frac(xB)`` held in 9-bit fixed point with 8
  fractional bits; the result is ``(1 - alpha) T[i] + alpha T[i + 1]`` (in 2-D and 3-D the same along y and z:
  four or eight texels);
* out-of-range indices follow the address mode: clamp to the edge texel, border (a zero texel), wrap (``i mod N``)
  or mirror. The CUDA Runtime API (``cudaTextureDesc``) switches wrap and mirror to clamp when the coordinates are
  not normalized; a layered texture's layer is an integer, clamped to the layers there are;
* read mode: the element type, or (8- and 16-bit integer texels) a float in [0, 1] (unsigned: ``v / (2^n - 1)``) or
  [-1, 1] (signed: ``max(v / (2^(n-1) - 1), -1)``). Linear filtering needs a float result;
* ``tex.1d`` with integer coordinates (``tex1Dfetch`` on linear memory): the texel at that index, zero outside;
* components a texel does not have read as 0.

A surface access addresses x in bytes and y, z in rows and slices; its boundary mode decides out-of-range accesses
(trap: an error; clamp: the nearest element; zero: reads 0, stores dropped). The run writes the surface's texels.

Counted as global loads and stores of the texels (each fetch one load of the texel's channels, a linearly filtered
one its 2 x 2 or 2 x 2 x 2 footprint), from the row-major layout. Not modelled: the texture cache's own behaviour,
and a CUDA array's memory layout (NVIDIA's undocumented block-linear tiling, which keeps 2-D neighbours closer than
a row-major layout does). Checked against an H200 and an H100: validation/microbench/texture_fetch.cu and
texture3d_surface.cu, tests/test_texture.py.
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
NORMALIZED_SCALE = 2.0 ** 21


@dataclass(frozen=True)
class _Texels:
    """What textures and surfaces share: their texels. ``data``: ``(width, channels)`` for 1-D, ``(height, width,
    channels)`` for 2-D, ``(depth, height, width, channels)`` for 3-D, of one of :data:`CHANNEL_DTYPES`; with
    ``layered``, the first axis is the layer (a 1-D or 2-D layered object)."""
    data: np.ndarray
    layered: bool = False
    what = "texture"

    def __post_init__(self) -> None:
        d, what = self.data, self.what
        shapes = ("(layers, width, channels) or (layers, height, width, channels)" if self.layered else
                  "(width, channels), (height, width, channels) or (depth, height, width, channels)")
        if not isinstance(d, np.ndarray) or d.ndim not in ((3, 4) if self.layered else (2, 3, 4)):
            raise SimulationError(f"a {'layered ' if self.layered else ''}{what}'s data is {shapes}")
        if d.dtype.name not in CHANNEL_DTYPES:
            raise SimulationError(f"{what} texels of dtype {d.dtype} are not supported (supported: "
                                  f"{', '.join(CHANNEL_DTYPES)})")
        if d.shape[-1] not in (1, 2, 4) or 0 in d.shape:
            raise SimulationError(f"a {what} has 1, 2 or 4 channels and at least one texel; got shape {d.shape}")

    @property
    def dims(self) -> int:
        return self.data.ndim - 1 - int(self.layered)

    @property
    def channels(self) -> int:
        return self.data.shape[-1]

    @property
    def texel_bytes(self) -> int:
        return self.data.dtype.itemsize * self.channels

    def __array__(self, dtype=None, copy=None):
        return self.data if dtype is None else self.data.astype(dtype)

    def _shape_text(self) -> str:
        shape = "x".join(str(n) for n in self.data.shape[int(self.layered):-1][::-1])
        layers = f"{self.data.shape[0]} layers of " if self.layered else ""
        return f"{layers}{shape} texels of {self.channels} x {self.data.dtype}"


@dataclass(frozen=True)
class Texture(_Texels):
    """A texture object's texels (:class:`_Texels`) and description; ``address``: one mode, or one per dimension
    (x first)."""
    filter: str = "point"
    address: tuple = ("clamp", "clamp", "clamp")
    normalized_coords: bool = False
    read_mode: str = "element"

    def __post_init__(self) -> None:
        super().__post_init__()
        d = self.data
        address = (self.address,) if isinstance(self.address, str) else tuple(self.address)
        address = (address + (address[-1],) * 3)[:3]
        for mode in address:
            if mode not in ADDRESS_MODES:
                raise SimulationError(f"texture address mode {mode!r}: expected one of {', '.join(ADDRESS_MODES)}")
        object.__setattr__(self, "address", address)
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

    def describe(self) -> str:
        return (f"{self._shape_text()}, {self.filter} filter, address {'/'.join(self.address[:self.dims])}, "
                f"{'normalized' if self.normalized_coords else 'texel'} coordinates, {self.read_mode} read")


SURFACE_MODES = ("trap", "clamp", "zero")


@dataclass(frozen=True)
class Surface(_Texels):
    """A surface object (``cudaSurfaceObject_t``): a CUDA array read and written with ``surf*read`` /
    ``surf*write`` (PTX ``suld.b`` / ``sust.b``), x addressed in bytes. The run writes its texels in place (it is
    an output the spec can check)."""
    what = "surface"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.data.flags.c_contiguous:
            raise SimulationError("a surface's data must be C-contiguous (it is written in place)")

    def describe(self) -> str:
        return f"surface of {self._shape_text()}"


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


_GEOMS = {"1d": (1, False, 1), "2d": (2, False, 2), "3d": (3, False, 4), "a1d": (1, True, 2),
          "a2d": (2, True, 4)}      # tex/suld/sust geometry -> (dims, layered, coordinate vector length)


def _resource(st, gid, handle, what: str):
    """(object, heap address) of the texture or surface the lanes' handle names (one per instruction)."""
    m = st.mask_full()
    live = np.broadcast_to(handle, m.shape)[m]
    if live.size == 0:
        return None
    first = int(live[0])
    if not (live == first).all():
        st.fault_where(m, f"{what}: the lanes of one instruction use different objects (not supported)", gid)
    found = st.launch.textures.get(first)
    if found is None:
        kind = "texture" if what == "tex" else "surface"
        why = (f"; a handle of 0 is most often a {kind} object held in a __device__ or __constant__ variable (which "
               f"holds zeros, or what --symbol gives it): perfmodel takes {kind} objects as kernel parameters only"
               if first == 0 else "")
        st.fault_where(m, f"{what}: {first:#x} is not a {kind} object of this launch (a cudaTextureObject_t / "
                          f"cudaSurfaceObject_t argument is given as a Texture / Surface){why}", gid)
    return found


def b_tex(ins, ops):
    """``tex.{1d,2d,3d,a1d,a2d}.v4.{f32,s32,u32}.{f32,s32} {d0, d1, d2, d3}, [handle, {coordinates}]`` (a layered
    geometry's first coordinate is the layer; 3d and a2d carry a fourth, unused coordinate)."""
    from perfmodel.sim.numeric import Unsupported

    geom = next((m for m in ins.mods if m in _GEOMS), None)
    if ins.has("level", "grad") or len(ins.operands) != 2:
        raise Unsupported(f"mipmapped texture fetches (tex.level, tex.grad) and tex with a depth-compare or "
                          f"offset operand ({ins.text.strip()})")
    if geom is None or "v4" not in ins.mods or len(ins.types) != 2:
        raise Unsupported(f"texture fetches other than tex.1d/2d/3d/a1d/a2d .v4 ({ins.text.strip()})")
    dst_t, crd_t = ins.types
    if dst_t not in ("f32", "s32", "u32") or crd_t not in ("f32", "s32"):
        raise Unsupported(f"tex with {dst_t} results from {crd_t} coordinates")
    dims, layered, n_coords = _GEOMS[geom]
    dests, src = ins.operands
    handle_op, coords = src.items
    if len(coords.items) != n_coords:
        raise Unsupported(f"tex.{geom} with {len(coords.items)} coordinates")
    items = list(coords.items)
    get_layer = ops.reader(items.pop(0), "s32") if layered else None
    get_handle = ops.reader(handle_op, "u64")
    get_coords = [ops.reader(c, crd_t) for c in items[:dims]]
    writers = [ops.writer(d) for d in dests.items]
    gid = ins.index
    out_dt = np.dtype({"f32": np.float32, "s32": np.int32, "u32": np.uint32}[dst_t])

    def tex(st, fr):
        found = _resource(st, gid, get_handle(st, fr), "tex")
        if found is None:
            return
        texture, base = found
        m = st.mask_full()
        if not isinstance(texture, Texture):
            st.fault_where(m, f"tex on a surface object ({texture.describe()})", gid)
        if texture.dims != dims or texture.layered != layered:
            st.fault_where(m, f"tex.{geom} on a {'layered ' if texture.layered else ''}{texture.dims}-D texture",
                           gid)
        if texture.returns_float != (dst_t == "f32"):
            st.fault_where(m, f"tex with {dst_t} results on a texture that returns "
                              f"{'floats' if texture.returns_float else 'integers'} ({texture.describe()})", gid)
        layer = None if get_layer is None else get_layer(st, fr)
        values = fetch(st, gid, texture, base, [g(st, fr) for g in get_coords], crd_t, layer)
        for c, w in enumerate(writers):
            w(st, fr, (values[c] if c < len(values) else np.zeros_like(values[0])).astype(out_dt, copy=False))
    return tex


def fetch(st, gid, texture: Texture, base: int, coords: list, crd_t: str, layer=None) -> list:
    """The fetched components (one array per channel) for every lane, the texel loads counted."""
    data = texture.data
    spatial = data.shape[int(texture.layered):-1]
    sizes = spatial[::-1]                          # (width[, height[, depth]])
    shape = np.broadcast_shapes(*(c.shape for c in coords), (1, 1) if st.mask is None else st.mask.shape,
                                (1, 1) if layer is None else layer.shape)
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
        modes = [m if texture.normalized_coords or m in ("clamp", "border") else "clamp"
                 for m in texture.address[:len(sizes)]]
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
    texel = texture.texel_bytes
    strides = np.cumprod((1,) + tuple(sizes))       # texels per row, per slice, per layer
    first = 0
    if layer is not None:
        # the layer index is clamped to the layers there are
        first = np.clip(np.broadcast_to(layer.astype(np.int64), shape), 0, data.shape[0] - 1) * strides[-1]
    out = None
    for idx, inside, weight in corners:
        flat = first + sum(j * int(strides[d]) for d, j in enumerate(idx))
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


# ---- surfaces ------------------------------------------------------------------------------------------------

_SURF_TYPES = {"b8": np.uint8, "b16": np.uint16, "b32": np.uint32, "b64": np.uint64}


def _surface_parts(ins):
    from perfmodel.sim.numeric import Unsupported

    if "b" not in ins.mods:
        raise Unsupported(f"formatted surface access (.p) ({ins.text.strip()})")
    geom = next((m for m in ins.mods if m in _GEOMS), None)
    t = next((m for m in ins.mods if m in _SURF_TYPES), None)
    mode = next((m for m in ins.mods if m in SURFACE_MODES), "trap")
    vec = 4 if "v4" in ins.mods else 2 if "v2" in ins.mods else 1
    if geom is None or t is None:
        raise Unsupported(f"surface access {ins.text.strip()}")
    return geom, np.dtype(_SURF_TYPES[t]), mode, vec


def _surface_access(st, gid, geom, dt, mode, vec, handle, coords, layer, values, what):
    """One suld/sust: the lanes' byte x, element y / z (and layer) -> their addresses, bounds by ``mode``."""
    found = _resource(st, gid, handle, what)
    if found is None:
        return None
    surface, base = found
    m = st.mask_full()
    dims, layered, _n = _GEOMS[geom]
    if not isinstance(surface, Surface):
        st.fault_where(m, f"{what} on a texture object ({surface.describe()})", gid)
    if surface.dims != dims or surface.layered != layered:
        st.fault_where(m, f"{what}.{geom} on a {'layered ' if surface.layered else ''}{surface.dims}-D surface", gid)
    data = surface.data
    sizes = data.shape[int(layered):-1][::-1]
    nbytes = dt.itemsize * vec
    row = sizes[0] * surface.texel_bytes
    shape = np.broadcast_shapes(m.shape, *(c.shape for c in coords), (1, 1) if layer is None else layer.shape)
    m = np.broadcast_to(m, shape)
    x = np.broadcast_to(coords[0].astype(np.int64), shape)
    others = [np.broadcast_to(c.astype(np.int64), shape) for c in coords[1:dims]]
    limits = [row - nbytes + 1] + list(sizes[1:dims])
    parts = [x] + others
    inside = np.ones(shape, bool)
    for v, lim in zip(parts, limits):
        inside &= (v >= 0) & (v < lim)
    lay = None if layer is None else np.broadcast_to(layer.astype(np.int64), shape)
    if lay is not None:
        inside &= (lay >= 0) & (lay < data.shape[0])
    if mode == "trap" and (m & ~inside).any():
        bad = m & ~inside
        k = np.argwhere(bad)[0]
        where = ", ".join(str(int(p[tuple(k)])) for p in parts)
        st.fault_where(bad, f"{what}: out-of-bounds surface access at ({where}) of a {surface.describe()} "
                            "(boundary mode trap)", gid)
    if nbytes > 1 and ((x % nbytes) != 0)[m].any():
        st.fault_where(m & ((x % nbytes) != 0), f"{what}: byte x coordinate not a multiple of the {nbytes}-byte "
                                                "access", gid)
    parts = [np.clip(p, 0, lim - 1) for p, lim in zip(parts, limits)]
    offset = parts[0]
    stride = row
    for p, n in zip(parts[1:], sizes[1:dims]):
        offset = offset + p * stride
        stride *= n
    if lay is not None:
        offset = offset + np.clip(lay, 0, data.shape[0] - 1) * stride
    addr = base + offset
    if mode == "zero" and not inside[m].all():
        saved = st.mask
        st.mask = m & inside
        try:
            out = st.mem_access(gid, "global", addr, dt.itemsize, vec, dt, values)
        finally:
            st.mask = saved
        return None if out is None else [np.where(inside, v, 0) for v in out]
    return st.mem_access(gid, "global", addr, dt.itemsize, vec, dt, values)


def _surface_operands(ins, ops, address_index):
    geom, dt, mode, vec = _surface_parts(ins)
    dims, layered, n = _GEOMS[geom]
    handle_op, coords = ins.operands[address_index].items
    items = list(coords.items) if hasattr(coords, "items") else [coords]
    if len(items) != n:
        from perfmodel.sim.numeric import Unsupported

        raise Unsupported(f"{ins.opcode}.{geom} with {len(items)} coordinates")
    get_layer = ops.reader(items.pop(0), "s32") if layered else None
    return geom, dt, mode, vec, ops.reader(handle_op, "u64"), [ops.reader(c, "s32") for c in items[:dims]], \
        get_layer


def b_suld(ins, ops):
    """``suld.b.{1d,2d,3d,a1d,a2d}{.v2,.v4}.{b8,b16,b32,b64}{.trap,.clamp,.zero} d, [surface, {x, ...}]``: x in
    bytes, y and z in rows and slices; out of bounds: an error (trap), the nearest element (clamp) or 0 (zero)."""
    geom, dt, mode, vec, get_handle, get_coords, get_layer = _surface_operands(ins, ops, 1)
    dests = list(ins.operands[0].items) if hasattr(ins.operands[0], "items") else [ins.operands[0]]
    writers = [ops.writer(d) for d in dests]
    gid = ins.index

    def suld(st, fr):
        vals = _surface_access(st, gid, geom, dt, mode, vec, get_handle(st, fr), [g(st, fr) for g in get_coords],
                               None if get_layer is None else get_layer(st, fr), None, "suld")
        if vals is not None:
            for w, v in zip(writers, vals):
                w(st, fr, v)
    return suld


def b_sust(ins, ops):
    """``sust.b.{geom}{.v2,.v4}.{b8,b16,b32,b64}{.trap,.clamp,.zero} [surface, {x, ...}], {values}``: out of
    bounds: an error (trap), the nearest element (clamp) or dropped (zero)."""
    geom, dt, mode, vec, get_handle, get_coords, get_layer = _surface_operands(ins, ops, 0)
    srcs = list(ins.operands[1].items) if hasattr(ins.operands[1], "items") else [ins.operands[1]]
    t = {1: "b8", 2: "b16", 4: "b32", 8: "b64"}[dt.itemsize]
    getters = [ops.reader(v, t) for v in srcs]
    gid = ins.index

    def sust(st, fr):
        _surface_access(st, gid, geom, dt, mode, vec, get_handle(st, fr), [g(st, fr) for g in get_coords],
                        None if get_layer is None else get_layer(st, fr), [g(st, fr) for g in getters], "sust")
    return sust
