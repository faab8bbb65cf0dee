// FP32 FFMA against packed-half HFMA2 throughput: 8 independent chains a thread, ITERS iterations, the same
// instruction count in both (validation/microbench/half2_rate.py)
#include <cuda_fp16.h>
extern "C" __global__ void ffma_chains(float *out, float a, float b, int iters)
{
    float x[8];
    for (int k = 0; k < 8; k++) x[k] = threadIdx.x * 0.001f + k;
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int k = 0; k < 8; k++) x[k] = fmaf(x[k], a, b);
    }
    float s = 0.f;
    for (int k = 0; k < 8; k++) s += x[k];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

extern "C" __global__ void hfma2_chains(__half2 *out, __half2 a, __half2 b, int iters)
{
    __half2 x[8];
    for (int k = 0; k < 8; k++) x[k] = __float2half2_rn(threadIdx.x * 0.001f + k);
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int k = 0; k < 8; k++) x[k] = __hfma2(x[k], a, b);
    }
    __half2 s = __float2half2_rn(0.f);
    for (int k = 0; k < 8; k++) s = __hadd2(s, x[k]);
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
