// Histogram / atomics microbenchmarks (perfmodel validation, issue 13 item 2). One thread per input element.
// NBINS = 1 makes every thread of the grid add to one address (contended); a large NBINS with uniform random
// input spreads the adds. Global variants add straight into bins[]; shared variants build a per-block histogram
// in shared memory first (NBINS <= 4096) and then add each block's non-zero bins to global memory.
#define NBINS 256

__global__ void hist_global_u32(const int* in, unsigned int* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&bins[in[i] % NBINS], 1u);
}

__global__ void hist_global_f32(const int* in, float* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&bins[in[i] % NBINS], 1.0f);
}
