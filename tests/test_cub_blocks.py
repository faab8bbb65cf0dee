"""CUB's block- and warp-level primitives (NVIDIA's CCCL headers, as real kernels include them) compiled by NVRTC
and executed: their results against numpy."""
import numpy as np
import pytest

from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

CASES = {
    "block_reduce": (r"""
#include <cub/block/block_reduce.cuh>
__global__ void k(const int *x, int *out) {
    using BR = cub::BlockReduce<int, 128>;
    __shared__ typename BR::TempStorage t;
    int v = BR(t).Sum(x[blockIdx.x * 128 + threadIdx.x]);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}""", 3, 128, lambda rng: [rng.integers(-1000, 1000, 384).astype(np.int32), np.zeros(3, np.int32)],
        lambda a: a[0].reshape(3, 128).sum(axis=1)),
    "block_scan": (r"""
#include <cub/block/block_scan.cuh>
__global__ void k(const int *x, int *out) {
    using BS = cub::BlockScan<int, 128>;
    __shared__ typename BS::TempStorage t;
    int v;
    BS(t).ExclusiveSum(x[threadIdx.x], v);
    out[threadIdx.x] = v;
}""", 1, 128, lambda rng: [rng.integers(0, 100, 128).astype(np.int32), np.zeros(128, np.int32)],
        lambda a: np.concatenate([[0], np.cumsum(a[0])[:-1]])),
    "warp_reduce": (r"""
#include <cub/warp/warp_reduce.cuh>
__global__ void k(const float *x, float *out) {
    using WR = cub::WarpReduce<float>;
    __shared__ typename WR::TempStorage t[4];
    float v = WR(t[threadIdx.x / 32]).Sum(x[threadIdx.x]);
    if (threadIdx.x % 32 == 0) out[threadIdx.x / 32] = v;
}""", 1, 128, lambda rng: [rng.integers(0, 64, 128).astype(np.float32), np.zeros(4, np.float32)],
        lambda a: a[0].reshape(4, 32).sum(axis=1)),
    "block_radix_sort": (r"""
#include <cub/block/block_radix_sort.cuh>
__global__ void k(int *x) {
    using BRS = cub::BlockRadixSort<int, 64, 2>;
    __shared__ typename BRS::TempStorage t;
    int items[2] = {x[2 * threadIdx.x], x[2 * threadIdx.x + 1]};
    BRS(t).Sort(items);
    x[2 * threadIdx.x] = items[0];
    x[2 * threadIdx.x + 1] = items[1];
}""", 1, 64, lambda rng: [rng.integers(-10 ** 6, 10 ** 6, 128).astype(np.int32)], None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cub_primitive_gives_numpys_answer(name):
    src, grid, block, make, expected = CASES[name]
    program = load_kernel(source=src, path=f"cub_{name}.cu")
    args = make(np.random.default_rng(5))
    before = [a.copy() for a in args]
    simulate(program, grid, block, args)
    if expected is None:                      # the radix sort sorts in place
        np.testing.assert_array_equal(args[0], np.sort(before[0]))
    else:
        np.testing.assert_array_equal(args[-1], expected(before).astype(args[-1].dtype))


def test_device_side_thrust_headers_are_kept(tmp_path):
    """Thrust is mostly host code, so its headers are set aside (docs/compile.md) - but not thrust/tuple.h,
    thrust/pair.h and thrust/functional.h, which kernels use on the device and NVRTC compiles."""
    (tmp_path / "thr.cu").write_text(r"""
#include <thrust/tuple.h>
#include <thrust/pair.h>
#include <thrust/functional.h>
#include <thrust/device_vector.h>
__global__ void k(float *o) {
    thrust::tuple<int, float> t(1, 2.0f);
    thrust::pair<int, int> p(3, 4);
    o[threadIdx.x] += thrust::get<1>(t) + p.first + thrust::plus<float>()(1.0f, 2.0f);
}
int main() { thrust::device_vector<float> v(32); return 0; }
""")
    program = load_kernel(tmp_path / "thr.cu", entry="k")
    o = np.zeros(32, np.float32)
    simulate(program, 1, 32, [o])
    assert (o == 8).all()
