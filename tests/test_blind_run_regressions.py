"""Bugs a blind run found: every kernel of NVIDIA's cuda-samples (all 175 .cu files of commit c94ff366, 287 kernels
compiled) launched with generic arguments (2 blocks of 64 threads, zeroed arrays, small scalars). Each of these
gave a Python traceback instead of a result or a one-paragraph error; the kernels below reduce each to its cause."""
import numpy as np
import pytest

from perfmodel.errors import SimulationError
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

SRC = r"""
// oceanFFT's generateSpectrumKernel: a product of two values the same in every thread plus a per-thread value,
// contracted to one fma whose multiplicands are uniform (shape (1, 1)) and whose addend is not
__global__ void uniform_product(float a, float b, const float *x, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = a * b + x[i];
}
// LargeKernelParameter: a struct parameter indexed at run time (ld.param through a register)
struct Table { int v[64]; float scale; };
__global__ void pick(Table t, const int *idx, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = t.v[idx[i]] * t.scale;
}
// bindlessTexture / vulkanImageCUDA: a mipmapped fetch (tex.level), which the executor does not run
__global__ void lod(cudaTextureObject_t tex, float *out) {
    out[threadIdx.x] = tex2DLod<float4>(tex, 0.5f, 0.5f, 1.0f).x;
}
"""


def test_fma_of_a_uniform_product_and_a_per_thread_addend():
    x = np.random.default_rng(0).uniform(-1, 1, 128).astype(np.float32)
    out = np.zeros(128, np.float32)
    a, b = np.float32(1.0000001), np.float32(3.0000002)
    simulate(load_kernel(source=SRC, entry="uniform_product"), (2, 1, 1), (64, 1, 1), [a, b, x, out])
    # fma: a * b exact in float64, one rounding of the sum (the float64 sum of these is exact: no tie to fix)
    assert np.array_equal(out, (np.float64(a) * np.float64(b) + x.astype(np.float64)).astype(np.float32))


def test_struct_parameter_indexed_at_run_time():
    v = np.arange(64, dtype=np.int32) * 3
    table = v.tobytes() + np.float32(0.5).tobytes()
    idx = np.random.default_rng(1).integers(0, 64, 128).astype(np.int32)
    out = np.zeros(128, np.float32)
    simulate(load_kernel(source=SRC, entry="pick"), (2, 1, 1), (64, 1, 1), [table, idx, out])
    assert np.array_equal(out, v[idx] * np.float32(0.5))


def test_struct_parameter_index_out_of_bounds_is_an_error():
    v = np.arange(64, dtype=np.int32)
    idx = np.full(128, 1000, np.int32)                   # far past the 260-byte parameter
    with pytest.raises(SimulationError, match="out-of-bounds kernel-parameter load"):
        simulate(load_kernel(source=SRC, entry="pick"), (2, 1, 1), (64, 1, 1),
                 [v.tobytes() + np.float32(1).tobytes(), idx, np.zeros(128, np.float32)])


def test_mipmapped_fetch_is_an_unsupported_instruction_error():
    with pytest.raises(SimulationError, match=r"mipmapped texture fetches \(tex.level"):
        simulate(load_kernel(source=SRC, entry="lod"), (1, 1, 1), (32, 1, 1), [np.uint64(16), np.zeros(32, np.float32)])
