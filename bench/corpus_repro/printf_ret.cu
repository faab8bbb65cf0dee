#include <cstdio>
__global__ void k(int *out) { if (threadIdx.x == 0) printf("hello %d\n", out[0]); out[threadIdx.x] = 1; }
