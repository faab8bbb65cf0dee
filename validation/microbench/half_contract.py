"""Run tests/data/half_contract.cu on a GPU with CuPy (nvcc, as a user's build) and save inputs and outputs:

    python validation/microbench/half_contract.py validation/half_contract_h200.npz     # on the GPU machine
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def main(out: str) -> int:
    import cupy as cp

    mod = cp.RawModule(code=(ROOT / "tests" / "data" / "half_contract.cu").read_text(), backend="nvcc",
                       options=("-std=c++17",))
    rng = np.random.default_rng(7)
    n = 4096
    a, b, c = (rng.uniform(-4, 4, 8 * n).astype(np.float16) for _ in range(3))
    saved = {"a": a, "b": b, "c": c, "device": np.array(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())}
    for name, count in (("muladd", n), ("muladd_rn", n), ("muladd2", n // 2)):
        y = cp.zeros(2 * count if name == "muladd2" else count, cp.float16)
        mod.get_function(name)(((count + 255) // 256,), (256,), (cp.asarray(a), cp.asarray(b), cp.asarray(c), y,
                                                                  np.int32(count)))
        saved[name] = y.get()
    y = cp.zeros(n, cp.float16)
    mod.get_function("dot8")(((n + 255) // 256,), (256,), (cp.asarray(a), cp.asarray(b), y, np.int32(n)))
    saved["dot8"] = y.get()
    np.savez_compressed(out, **saved)
    fused = (a[:n].astype(np.float64) * b[:n] + c[:n]).astype(np.float16)
    print("muladd equals one rounding:", bool((saved["muladd"] == fused).all()),
          "muladd_rn equals one rounding:", bool((saved["muladd_rn"] == fused).all()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "half_contract.npz"))
