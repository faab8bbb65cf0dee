"""Run tests/data/video_scalar.cu (the PTX scalar video instructions vadd, vsub, vabsdiff, vmin, vmax, vshl, vshr
with their .sat, .clamp/.wrap and .add/.min/.max forms) on a GPU with CuPy (nvcc, as a user's build) and save
inputs and outputs, which tests/test_lane_integer_ops.py compares perfmodel's executor with:

    python validation/microbench/video_scalar.py validation/video_scalar_h200.npz     # on the GPU machine
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
ROWS = 19


def inputs(n: int = 1024) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a, c: random 32-bit words with the edge values among them; b: shift counts 0-40 for a quarter, random words
    (and edges) for the rest."""
    rng = np.random.default_rng(11)
    edges = np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 31, 32, 33], np.uint64)
    a, b, c = (rng.integers(0, 2 ** 32, n, dtype=np.uint64) for _ in range(3))
    b[: n // 4] = rng.integers(0, 41, n // 4)
    for k, arr in enumerate((a, b, c)):
        arr[n // 2: n // 2 + len(edges) ** 2] = np.repeat(edges, len(edges)) if k != 1 else np.tile(edges, len(edges))
    return tuple(x.astype(np.uint32) for x in (a, b, c))


def main(out: str) -> int:
    import cupy as cp

    mod = cp.RawModule(code=(ROOT / "tests" / "data" / "video_scalar.cu").read_text(), backend="nvcc",
                       options=("-DSATURATING_SHIFT",))
    a, b, c = inputs()
    n = a.size
    o = cp.zeros(ROWS * n, cp.uint32)
    mod.get_function("video")(((n + 255) // 256,), (256,), (o, cp.asarray(a), cp.asarray(b), cp.asarray(c),
                                                            np.int32(n)))
    np.savez_compressed(out, a=a, b=b, c=c, o=o.get(),
                        device=np.array(cp.cuda.runtime.getDeviceProperties(0)["name"].decode()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "video_scalar.npz"))
