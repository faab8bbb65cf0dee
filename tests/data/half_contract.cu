// Half-precision a * b + c through cuda_fp16.h's operators (PTX mul.f16 / add.f16 with no rounding modifier, which
// ptxas contracts into one HFMA2) and through __hmul_rn / __hadd_rn (which it may not contract), in half and half2.
// validation/microbench/half_contract.py ran them on an H200 (validation/half_contract_h200.npz);
// tests/test_contract.py compares perfmodel's outputs bit for bit.
#include <cuda_fp16.h>

extern "C" __global__ void muladd(const __half *a, const __half *b, const __half *c, __half *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a[i] * b[i] + c[i];
}

extern "C" __global__ void muladd_rn(const __half *a, const __half *b, const __half *c, __half *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hadd_rn(__hmul_rn(a[i], b[i]), c[i]);
}

extern "C" __global__ void muladd2(const __half2 *a, const __half2 *b, const __half2 *c, __half2 *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hadd2(__hmul2(a[i], b[i]), c[i]);
}

extern "C" __global__ void dot8(const __half *a, const __half *b, __half *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half s = __float2half(0.0f);
        for (int k = 0; k < 8; ++k) s = s + a[8 * i + k] * b[8 * i + k];
        y[i] = s;
    }
}
