__global__ void k(int *out) { out[threadIdx.x] = threadIdx.x % warpSize; }
