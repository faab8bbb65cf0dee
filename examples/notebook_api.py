"""The five example kernels from Python, notebook style, with perfmodel's CuPy-shaped API.

Each cell launches a kernel on numpy arrays with ``RawKernel`` / ``RawModule``, checks the outputs the simulator
wrote back into the arrays with numpy, and keeps the analysis (in a notebook, a cell ending in ``result``
renders the report; ``result.to_rows()`` feeds a DataFrame).

    python examples/notebook_api.py [path/to/cuda-samples/.../matrixMul.cu] [--small]

Without a path, matrixMul.cu is the copy vendored under tests/data (BSD licence header intact).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import perfmodel

HERE = Path(__file__).resolve().parent
MATRIXMUL = HERE.parent / "validation" / "kernels" / "cuda-samples" / "Samples" / "0_Introduction" / "matrixMul" / "matrixMul.cu"


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def run(matrixmul: Path = MATRIXMUL, small: bool = False, device: str = "h100") -> list:
    rng = np.random.default_rng(0)
    results = []

    # %% 1. SAXPY from source text, as with cupy.RawKernel
    saxpy = perfmodel.RawKernel((HERE / "saxpy.cu").read_text(), "saxpy")
    n = 4096 if small else 1 << 20
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    y0 = y.copy()
    result = saxpy((cdiv(n, 256),), (256,), (n, np.float32(2.0), x, y), device=device)
    np.testing.assert_allclose(y, 2.0 * x + y0, rtol=1e-6)      # y was written back
    assert result.correct is None                                # nothing named a reference: not checked
    results.append(result)
    # the same kernel on another device, in the same process: y accumulates as on a GPU
    result = saxpy((cdiv(n, 256),), (256,), (n, np.float32(2.0), x, y), device="a100")
    np.testing.assert_allclose(y, 4.0 * x + y0, rtol=1e-6)
    results.append(result)

    # %% 2. 2D 5-point stencil with a shared-memory tile and halo, from a file
    stencil = perfmodel.RawModule(path=HERE / "stencil2d.cu").get_function("stencil5")
    nx, ny = (40, 24) if small else (512, 384)
    grid_in = rng.random((ny, nx), dtype=np.float32)
    out = np.zeros_like(grid_in)
    result = stencil((cdiv(nx, 16), cdiv(ny, 16)), (16, 16), (grid_in, out, nx, ny), device=device)
    padded = np.pad(grid_in.astype(np.float64), 1)
    expect = 0.25 * (padded[1:-1, :-2] + padded[1:-1, 2:] + padded[:-2, 1:-1] + padded[2:, 1:-1]) - grid_in
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-6)
    results.append(result)

    # %% 3. __shfl_down_sync reduction with one atomicAdd per block; this call also names its expected output
    reduce_sum = perfmodel.RawModule(path=HERE / "reduce_shfl.cu").get_function("reduce_sum")
    n = 10_000 if small else 1_000_000
    values = rng.random(n, dtype=np.float32)
    total = np.zeros(1, np.float32)
    expected = np.array([values.astype(np.float64).sum()])
    result = reduce_sum((8 if small else 64,), (256,), (values, total, n), device=device,
                        expected={"out": expected}, rtol=1e-4)
    np.testing.assert_allclose(total, expected, rtol=1e-4)
    assert result.correct is True
    results.append(result)

    # %% 4. cuda-samples matrixMul.cu, MatrixMulCUDA<32>, launched as its host code does:
    #       block 32x32, grid (wB/32, hA/32), args (C, A, B, wA, wB)
    module = perfmodel.RawModule(path=matrixmul, name_expressions=["MatrixMulCUDA<32>"])
    matmul = module.get_function("MatrixMulCUDA<32>")
    hA, wA, wB = (64, 64, 96) if small else (320, 320, 640)        # dimsA 320x320, dimsB 640x320 in main()
    A = rng.random((hA, wA), dtype=np.float32)
    B = rng.random((wA, wB), dtype=np.float32)
    C = np.zeros((hA, wB), np.float32)
    result = matmul((wB // 32, hA // 32), (32, 32), (C, A, B, wA, wB), device=device)
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)
    results.append(result)

    # %% 5. a kernel template with float4 loads, instantiated by a name expression
    module = perfmodel.RawModule(path=HERE / "vec4_scale.cu", name_expressions=["scale_vec4<float, 2>"])
    scale = module.get_function("scale_vec4<float, 2>")
    n = 4096 if small else 1 << 20
    src = rng.random(n, dtype=np.float32)
    dst = np.zeros(n, np.float32)
    result = scale((cdiv(n // 4, 2 * 256),), (256,), (src, dst, np.float32(3.0), n // 4), device=device)
    np.testing.assert_allclose(dst, 3.0 * src, rtol=1e-6)
    results.append(result)
    return results


def main(argv: list[str]) -> None:
    small = "--small" in argv
    paths = [a for a in argv if not a.startswith("--")]
    results = run(Path(paths[0]) if paths else MATRIXMUL, small=small)
    print(f"{'kernel':24} {'device':7} {'predicted':>12} {'GFLOPS':>9}  {'bound':10} correct")
    for row in (r for result in results for r in result.to_rows()):
        print(f"{row['kernel']:24} {row['device']:7} {row['predicted_time_s'] * 1e6:10.2f} µs "
              f"{row['predicted_gflops']:9.1f}  {row['bound']:10} {row['correct']}")
    print("all outputs checked with numpy")


if __name__ == "__main__":
    main(sys.argv[1:])
