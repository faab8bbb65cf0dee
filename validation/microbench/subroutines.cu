// Kernels whose SASS calls subroutines (validation/microbench/subroutines.py measures their warp instructions with
// Nsight Compute; tests/test_kernel_counts.py compares perfmodel's count): 64-bit integer division with operands
// that fit in 32 bits (NVVM's div.u32 fast path runs; darknet's upsample_kernel) and with operands that do not
// (ptxas's __cuda_sm20_div_u64 / rem_u64 subroutines run), and pow() on doubles (__internal_accurate_pow).
extern "C" __global__ void div64_small(unsigned long long n, const float *x, int w, float *out)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int col = i % w;
    size_t row = i / w;
    out[i] = x[row] + col;
}

extern "C" __global__ void div64_large(unsigned long long n, unsigned long long w, unsigned long long *out)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long v = (1ull << 40) + i * 7919ull;
    out[i] = v / w + v % (w + 2);
}

extern "C" __global__ void pow_double(const double *x, double *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = pow(x[i], 3.5);
}
