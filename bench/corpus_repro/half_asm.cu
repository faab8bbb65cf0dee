#include <cuda_fp16.h>
__global__ void k(float *out) { half2 h = __float2half2_rn(1.5f); out[threadIdx.x] = __low2float(h); }
