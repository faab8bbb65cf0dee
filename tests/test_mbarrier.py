"""mbarrier objects (perfmodel/sim/mbarrier.py) as libcu++'s cuda::barrier, cuda::memcpy_async and cuda::pipeline use
them: results against numpy, a bulk copy's counts by hand, a warp-specialised pipeline, and the errors."""
import numpy as np
import pytest

from perfmodel.errors import SimulationError
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

SRC = r"""
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// every thread adds its neighbour's value through shared memory, 4 rounds, one cuda::barrier
__global__ void rounds(const float *in, float *out) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ float s[256];
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    float v = in[blockIdx.x * blockDim.x + threadIdx.x];
    for (int r = 0; r < 4; r++) {
        s[threadIdx.x] = v;
        bar.arrive_and_wait();
        v = v + s[(threadIdx.x + 1) % blockDim.x];
        bar.arrive_and_wait();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
// a 1 KB tile copied with cuda::memcpy_async on the barrier (cp.async.bulk on sm_90), then read reversed
__global__ void bulk(const float4 *in, float *out) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ alignas(16) float4 s[64];
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    if (threadIdx.x < 64)
        cuda::memcpy_async(&s[threadIdx.x], &in[blockIdx.x * 64 + threadIdx.x],
                           cuda::aligned_size_t<16>(sizeof(float4)), bar);
    bar.arrive_and_wait();
    const float *f = reinterpret_cast<const float *>(s);
    out[blockIdx.x * 256 + threadIdx.x] = f[255 - threadIdx.x];
}
// warp-specialised: warp 0 produces (copies tiles into a 2-stage pipeline), warps 1-2 consume (sum them)
__global__ void specialised(const float *in, float *out, int tiles) {
    constexpr int stages = 2;
    __shared__ float buf[stages][64];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, stages> state;
    auto block = cg::this_thread_block();
    const bool producer = threadIdx.x < 32;
    auto pipe = cuda::make_pipeline(block, &state,
                                    producer ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer);
    float acc = 0;
    for (int t = 0; t < tiles; t++) {
        if (producer) {
            pipe.producer_acquire();
            for (int i = threadIdx.x; i < 64; i += 32)
                cuda::memcpy_async(&buf[t % stages][i], &in[t * 64 + i], sizeof(float), pipe);
            pipe.producer_commit();
        } else {
            pipe.consumer_wait();
            acc += buf[t % stages][threadIdx.x - 32];
            pipe.consumer_release();
        }
    }
    if (!producer) out[threadIdx.x - 32] = acc;
}
// the barrier expects one thread more than the block has: nobody completes the phase
__global__ void stuck(float *out) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, blockDim.x + 1);
    __syncthreads();
    bar.arrive_and_wait();
    out[threadIdx.x] = 1;
}
// the barrier expects one thread; the whole block arrives
__global__ void too_many(float *out) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, 1);
    __syncthreads();
    bar.arrive_and_wait();
    out[threadIdx.x] = 1;
}
"""


def _kernel(entry):
    return load_kernel(source=SRC, entry=entry)


def test_barrier_rounds_against_numpy():
    x = np.random.default_rng(0).integers(0, 10, 512).astype(np.float32)
    out = np.zeros(512, np.float32)
    simulate(_kernel("rounds"), (2, 1, 1), (256, 1, 1), [x, out])
    v = x.reshape(2, 256).astype(np.float64)
    for _ in range(4):
        v = v + np.roll(v, -1, axis=1)
    assert np.array_equal(out.reshape(2, 256), v)


def test_bulk_copy_on_a_barrier_and_its_counts():
    """2 blocks, 64 threads each copy 16 bytes (cp.async.bulk): per block 2 warps' requests of 512 contiguous bytes
    (16 sectors each); the copy engine's shared writes are not shared stores; 256 4-byte stores per block."""
    x = np.random.default_rng(1).integers(0, 10, 512).astype(np.float32)
    out = np.zeros(512, np.float32)
    counts = simulate(_kernel("bulk"), (2, 1, 1), (256, 1, 1), [x, out]).counts
    assert np.array_equal(out.reshape(2, 256), x.reshape(2, 256)[:, ::-1])
    g = counts.global_
    assert (g["load_requests"], g["load_sectors"], g["load_bytes"]) == (4, 64, 2048)
    assert (g["store_requests"], g["store_sectors"]) == (16, 64)
    assert counts.shared["store_requests"] == 0


def test_warp_specialised_pipeline_against_numpy():
    """The producer warp and the consumer warps are two branches of one block; the executor switches between
    them when one waits (10 tiles through 2 stages: each side waits on the other repeatedly)."""
    tiles = 10
    x = np.random.default_rng(2).integers(0, 10, tiles * 64).astype(np.float32)
    out = np.zeros(64, np.float32)
    simulate(_kernel("specialised"), (1, 1, 1), (96, 1, 1), [x, out, tiles])
    assert np.array_equal(out, x.reshape(tiles, 64).sum(axis=0))


def test_deadlock_is_an_error_at_the_users_line():
    """The wait is code inlined from libcu++'s headers; the error names the kernel's own arrive_and_wait line."""
    with pytest.raises(SimulationError, match="deadlock") as err:
        simulate(_kernel("stuck"), (1, 1, 1), (64, 1, 1), [np.zeros(64, np.float32)])
    lines = SRC.split("\n")
    start = next(k for k, text in enumerate(lines) if "void stuck" in text)
    line = next(k for k in range(start, len(lines)) if "arrive_and_wait" in lines[k]) + 1
    assert f"kernel.cu:{line}:" in str(err.value) and "thread (0, 0, 0)" in str(err.value)


def test_more_arrivals_than_expected_is_an_error():
    with pytest.raises(SimulationError, match="more arrivals on an mbarrier than its expected count"):
        simulate(_kernel("too_many"), (1, 1, 1), (64, 1, 1), [np.zeros(64, np.float32)])
