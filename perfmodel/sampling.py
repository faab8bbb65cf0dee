"""Stratified block sampling for large grids.

A grid's blocks fall into strata that behave alike: **corners** (blocks on two or more grid boundaries - they
see the bounds checks and halos of both edges), **edges** (on one boundary; a stratum per face of the grid) and
the **interior**. The sampled
mode simulates every corner block, an evenly spread selection of edge blocks and of interior blocks, then
extrapolates each stratum's counts by ``stratum size / blocks simulated in it`` and adds the strata up.

Counts that are not sums (``simt_efficiency``) are averaged, weighted by each stratum's warp instructions.
``unique_*`` sectors (distinct sectors over the whole run) are not additive over blocks: the sampled figure is
scaled like the others and then capped by the grid's extrapolated sector total and by the bytes of the arrays
the kernel was given (a sector is counted once however many blocks touch it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

STRATA = ("corner", "edge", "interior")
NON_ADDITIVE = {"simt_efficiency"}
DEFAULT_SAMPLE_BLOCKS = 48


@dataclass(frozen=True)
class Stratum:
    name: str
    size: int                    # blocks of the grid in this stratum
    block_ids: np.ndarray        # linear ids (x fastest) chosen to simulate

    @property
    def weight(self) -> float:
        return self.size / len(self.block_ids) if len(self.block_ids) else 0.0


@dataclass(frozen=True)
class BlockSample:
    grid: tuple[int, int, int]
    strata: list[Stratum] = field(default_factory=list)

    @property
    def block_ids(self) -> np.ndarray:
        ids = [s.block_ids for s in self.strata if len(s.block_ids)]
        return np.sort(np.concatenate(ids)) if ids else np.zeros(0, dtype=np.int64)

    @property
    def blocks_simulated(self) -> int:
        return int(sum(len(s.block_ids) for s in self.strata))

    @property
    def total_blocks(self) -> int:
        return int(np.prod(self.grid))

    def to_json(self) -> dict:
        return {"grid": list(self.grid), "blocks_simulated": self.blocks_simulated,
                "total_blocks": self.total_blocks,
                "strata": [{"name": s.name, "blocks": s.size, "simulated": int(len(s.block_ids)),
                            "weight": s.weight} for s in self.strata]}


def classify_blocks(grid: tuple[int, int, int]) -> np.ndarray:
    """Stratum index (0 corner, 1 edge, 2 interior) of every linear block id of ``grid``."""
    gx, gy, gz = (int(v) for v in grid)
    ids = np.arange(gx * gy * gz, dtype=np.int64)
    coords = (ids % gx, (ids // gx) % gy, ids // (gx * gy))
    boundaries = np.zeros(ids.shape, dtype=np.int64)
    for coord, extent in zip(coords, (gx, gy, gz)):
        if extent > 1:
            boundaries += (coord == 0) | (coord == extent - 1)
    active_dims = sum(1 for extent in (gx, gy, gz) if extent > 1)
    stratum = np.full(ids.shape, 2, dtype=np.int8)
    stratum[boundaries >= 1] = 1
    # a 1-D grid's corners are its two end blocks; in 2-D/3-D, blocks on >= 2 boundaries
    stratum[boundaries >= min(2, max(active_dims, 1))] = 0
    return stratum


def _spread(ids: np.ndarray, n: int) -> np.ndarray:
    """``n`` ids spread evenly over ``ids`` (all of them when there are at most ``n``): the middle of each of ``n``
    equal runs (a centred systematic sample). The runs' ends would take the stratum's first and last blocks, which
    in a 1-D grid laid over a 2-D mesh are its halo rows: CloverLeaf's ideal_gas on 3,840^2 sampled 2 fully idle
    blocks of 46, each standing for 1,255, and its loads came out 4.2% low."""
    if n <= 0 or len(ids) == 0:
        return ids[:0]
    if len(ids) <= n:
        return ids
    positions = np.unique(((np.arange(n) + 0.5) * len(ids) / n).astype(np.int64))
    return ids[positions]


def _faces(grid: tuple[int, int, int], edges: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """The edge blocks by the boundary they lie on (``x=0``, ``x=7``, ``y=0`` ...): a grid's two ends along one axis
    often differ (the last blocks of cuda-convnet2's filterActs cover 4 of 32 images, the first all 32), and one
    stratum for both scaled a sample of unequal shares (stores 2.3% high)."""
    gx, gy, gz = grid
    coords = (edges % gx, (edges // gx) % gy, edges // (gx * gy))
    out = []
    for axis, coord, extent in zip("xyz", coords, grid):
        if extent <= 1:
            continue
        for at in (0, extent - 1):
            on = edges[coord == at]
            if len(on):
                out.append((f"{axis}={at}", on))
    return out


def stratified_blocks(grid: tuple[int, int, int], n: int = DEFAULT_SAMPLE_BLOCKS) -> BlockSample:
    """Every corner block, about a quarter of ``n`` edge blocks - shared among the grid's faces by their sizes, at
    least one each - and the rest interior blocks."""
    grid = tuple(int(v) for v in (tuple(grid) + (1, 1, 1))[:3])
    stratum = classify_blocks(grid)
    ids = np.arange(stratum.size, dtype=np.int64)
    corners = ids[stratum == 0]
    edges = ids[stratum == 1]
    interior = ids[stratum == 2]
    n = max(int(n), len(corners) + 2)
    n_edges = min(len(edges), max(1, (n - len(corners)) // 4)) if len(edges) else 0
    n_interior = max(0, n - len(corners) - n_edges)
    if len(interior) == 0:
        n_edges = min(len(edges), n - len(corners))
    strata = [Stratum("corner", len(corners), corners)] if len(corners) else []
    for face, on in _faces(grid, edges):          # an edge block lies on exactly one boundary
        take = min(len(on), max(1, round(n_edges * len(on) / len(edges))))
        strata.append(Stratum(f"edge ({face})", len(on), _spread(on, take)))
    if len(interior):
        strata.append(Stratum("interior", len(interior), _spread(interior, n_interior)))
    return BlockSample(grid, strata)


def _scale(value, weight: float):
    if isinstance(value, dict):
        return {k: _scale(v, weight) for k, v in value.items()}
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return value
    return float(value) * weight


def _add(a, b):
    if isinstance(a, dict):
        return {k: _add(a[k], b.get(k, 0)) if k in b else a[k] for k in a} | {k: v for k, v in b.items() if k not in a}
    if isinstance(a, (int, float, np.integer, np.floating)) and isinstance(b, (int, float, np.integer, np.floating)):
        return float(a) + float(b)
    return a


def extrapolate_counts(per_stratum: list[tuple[dict, float]], *, array_sectors: float | None = None) -> dict:
    """Sum ``counts x weight`` over strata. ``per_stratum``: (counts of the stratum's simulated blocks, weight).

    Additive counts scale; ``simt_efficiency`` is a warp-instruction-weighted mean; ``unique_*`` sectors are
    capped (see the module docstring)."""
    total: dict = {}
    efficiency_num = efficiency_den = 0.0
    for counts, weight in per_stratum:
        scaled = _scale({k: v for k, v in counts.items() if k not in NON_ADDITIVE}, weight)
        total = scaled if not total else _add(total, scaled)
        if "simt_efficiency" in counts and counts["simt_efficiency"] is not None:
            w = float(counts.get("warp_instructions", 1) or 1) * weight
            efficiency_num += float(counts["simt_efficiency"]) * w
            efficiency_den += w
    if efficiency_den > 0:
        total["simt_efficiency"] = efficiency_num / efficiency_den
    g = total.get("global")
    if isinstance(g, dict):
        for unique, all_key in (("unique_load_sectors", "load_sectors"), ("unique_store_sectors", "store_sectors")):
            if unique in g:
                cap = g.get(all_key, g[unique])
                if array_sectors is not None:
                    cap = min(cap, array_sectors)
                g[unique] = min(g[unique], cap)
    return _round_integral(total)


def _round_integral(value):
    """Extrapolated sums are reported as numbers with at most 1e-9 relative noise removed."""
    if isinstance(value, dict):
        return {k: _round_integral(v) for k, v in value.items()}
    if isinstance(value, float) and math.isfinite(value) and abs(value - round(value)) < 1e-6 * max(1.0, abs(value)):
        return float(round(value))
    return value


def block_spread(per_block: dict) -> dict:
    """min / mean / max / coefficient of variation of each per-block metric over the simulated blocks."""
    spread = {}
    for name, values in (per_block or {}).items():
        arr = np.asarray(values, dtype=np.float64)
        if arr.size == 0 or arr.ndim != 1:
            continue
        mean = float(arr.mean())
        spread[name] = {"min": float(arr.min()), "mean": mean, "max": float(arr.max()),
                        "cv": float(arr.std() / mean) if mean else 0.0}
    return spread
