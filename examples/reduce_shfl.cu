// A sum reduction: a grid-stride loop per thread, a warp reduction with __shfl_down_sync, one shared-memory
// slot per warp, a second warp reduction in warp 0, and one atomicAdd per block into *out (which must start at 0).
// Launch: any grid, a block of a multiple of 32 threads up to 1024.

__inline__ __device__ float warp_sum(float v)
{
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    return v;
}

__global__ void reduce_sum(const float *in, float *out, int n)
{
    __shared__ float warp_sums[32];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        sum += in[i];
    sum = warp_sum(sum);

    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    if (lane == 0)
        warp_sums[warp] = sum;
    __syncthreads();

    if (warp == 0) {
        sum = (lane < blockDim.x / warpSize) ? warp_sums[lane] : 0.0f;
        sum = warp_sum(sum);
        if (lane == 0)
            atomicAdd(out, sum);
    }
}
