__global__ void k(int *counter) { atomicAdd(&counter[0], 10); }
