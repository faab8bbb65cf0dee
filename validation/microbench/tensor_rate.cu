// Tensor-core throughput of wmma.mma per SM and clock (validation/microbench/tensor_rate.py runs it).
// Each warp keeps ACC independent accumulators and runs `iters` rounds of ACC wmma::mma_sync on fragments loaded
// once; clock64() around the loop (after a barrier) gives each block's cycles. The lat_* kernels keep one
// accumulator: each mma waits for the one before (the dependent-issue latency of a wmma.mma).
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

template <typename T, int M, int N, int K, typename C, int ACC = 8>
__device__ void tc_loop(const T* a, const T* b, C* out, int iters, long long* cycles) {
    wmma::fragment<wmma::matrix_a, M, N, K, T, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, T, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, M, N, K, C> acc[ACC];
    wmma::load_matrix_sync(fa, a, K);
    wmma::load_matrix_sync(fb, b, K);
#pragma unroll
    for (int j = 0; j < ACC; j++) wmma::fill_fragment(acc[j], (C)0);
    __syncthreads();
    long long t0 = clock64();
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int j = 0; j < ACC; j++) wmma::mma_sync(acc[j], fa, fb, acc[j]);
    }
    __syncthreads();
    long long t1 = clock64();
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
#pragma unroll
    for (int j = 1; j < ACC; j++)
        for (int e = 0; e < acc[0].num_elements; e++) acc[0].x[e] += acc[j].x[e];
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    wmma::store_matrix_sync(out + (size_t)w * M * N, acc[0], N, wmma::mem_row_major);
}

extern "C" __global__ void tc_f16_f32(const half* a, const half* b, float* o, int it, long long* c) { tc_loop<half, 16, 16, 16, float>(a, b, o, it, c); }
extern "C" __global__ void tc_f16_f16(const half* a, const half* b, half* o, int it, long long* c) { tc_loop<half, 16, 16, 16, half>(a, b, o, it, c); }
extern "C" __global__ void tc_bf16_f32(const __nv_bfloat16* a, const __nv_bfloat16* b, float* o, int it, long long* c) { tc_loop<__nv_bfloat16, 16, 16, 16, float>(a, b, o, it, c); }
extern "C" __global__ void tc_s8_s32(const signed char* a, const signed char* b, int* o, int it, long long* c) { tc_loop<signed char, 16, 16, 16, int>(a, b, o, it, c); }
extern "C" __global__ void tc_f64_f64(const double* a, const double* b, double* o, int it, long long* c) { tc_loop<double, 8, 8, 4, double>(a, b, o, it, c); }
extern "C" __global__ void lat_f16_f32(const half* a, const half* b, float* o, int it, long long* c) { tc_loop<half, 16, 16, 16, float, 1>(a, b, o, it, c); }
extern "C" __global__ void lat_f64_f64(const double* a, const double* b, double* o, int it, long long* c) { tc_loop<double, 8, 8, 4, double, 1>(a, b, o, it, c); }

#define ACC 8
extern "C" __global__ void tc_tf32_f32(const float* a, const float* b, float* o, int it, long long* c) {
    using namespace nvcuda::wmma;
    fragment<matrix_a, 16, 16, 8, precision::tf32, row_major> fa;
    fragment<matrix_b, 16, 16, 8, precision::tf32, col_major> fb;
    fragment<accumulator, 16, 16, 8, float> acc[ACC];
    load_matrix_sync(fa, a, 8);
    load_matrix_sync(fb, b, 8);
    for (int e = 0; e < fa.num_elements; e++) fa.x[e] = __float_to_tf32(fa.x[e]);
    for (int e = 0; e < fb.num_elements; e++) fb.x[e] = __float_to_tf32(fb.x[e]);
#pragma unroll
    for (int j = 0; j < ACC; j++) fill_fragment(acc[j], 0.0f);
    __syncthreads();
    long long t0 = clock64();
    for (int i = 0; i < it; i++) {
#pragma unroll
        for (int j = 0; j < ACC; j++) mma_sync(acc[j], fa, fb, acc[j]);
    }
    __syncthreads();
    long long t1 = clock64();
    if (threadIdx.x == 0) c[blockIdx.x] = t1 - t0;
#pragma unroll
    for (int j = 1; j < ACC; j++)
        for (int e = 0; e < acc[0].num_elements; e++) acc[0].x[e] += acc[j].x[e];
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    store_matrix_sync(o + (size_t)w * 256, acc[0], 16, mem_row_major);
}
