#include <cuda_fp16.h>
__global__ void k(const half *a, float *out) { out[threadIdx.x] = __half2float(a[threadIdx.x]); }
