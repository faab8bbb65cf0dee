// Histogram / atomics microbenchmarks (perfmodel validation, issue 13 item 2). One thread per input element.
// NBINS = 1 makes every thread of the grid add to one address (contended); a large NBINS with uniform random
// input spreads the adds. Global variants add straight into bins[]; shared variants build a per-block histogram
// in shared memory first (NBINS <= 4096) and then add each block's non-zero bins to global memory.
#define NBINS 256

__global__ void hist_shared_u32(const int* in, unsigned int* bins, int n)
{
    __shared__ unsigned int local[NBINS];
    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&local[in[i] % NBINS], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        if (local[b])
            atomicAdd(&bins[b], local[b]);
}

__global__ void hist_shared_f32(const int* in, float* bins, int n)
{
    __shared__ float local[NBINS];
    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        local[b] = 0.0f;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&local[in[i] % NBINS], 1.0f);
    __syncthreads();
    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        if (local[b] != 0.0f)
            atomicAdd(&bins[b], local[b]);
}
