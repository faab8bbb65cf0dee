__global__ void k(const int *partial, int *out)
{
    __shared__ int buf;                       // one shared word (shfl_scan's uniform_add)
    if (threadIdx.x == 0)
        buf = partial[blockIdx.x];            // a lane-uniform address, stored under a mask
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = buf;
}
