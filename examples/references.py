"""numpy references for the example kernels, for ``perfmodel analyze ... --check NAME=examples/references.py:FN``
(and spec ``outputs:``). Each function gets the kernel's *initial* arguments by parameter name and returns the
expected contents of the output array."""
import numpy as np


def saxpy(a, x, y):
    return a * x.astype(np.float64) + y


def stencil5(nx, ny, **args):
    return _stencil5(args["in"], nx, ny)       # "in" is a Python keyword: it comes through **args


def _stencil5(grid, nx, ny):
    g = np.zeros((ny + 2, nx + 2))
    g[1:-1, 1:-1] = np.asarray(grid, dtype=np.float64).reshape(ny, nx)
    return (0.25 * (g[1:-1, :-2] + g[1:-1, 2:] + g[:-2, 1:-1] + g[2:, 1:-1]) - g[1:-1, 1:-1]).reshape(-1)


def reduce_sum(**args):
    return np.array([np.asarray(args["in"], dtype=np.float64).sum() + args["out"][0]])


def scale_vec4(alpha, n4, **args):
    expected = np.asarray(args["out"], dtype=np.float64).copy()
    expected[:4 * n4] = alpha * np.asarray(args["in"], dtype=np.float64)[:4 * n4]
    return expected


def matmul(A, B, wA, wB):
    hA = A.size // wA
    return (A.reshape(hA, wA).astype(np.float64) @ B.reshape(wA, wB).astype(np.float64)).reshape(-1)
