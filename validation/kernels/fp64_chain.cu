// Double-precision FMA microbenchmark (perfmodel validation, issue 13 item 5: issue cost per pipe). Each thread
// runs CHAINS independent chains of ITERS dependent fma() in double precision: with enough warps the SMs' FP64
// units are the limit (NVIDIA's arithmetic-throughput table: 64 results per clock per SM on the H100), with few the
// DFMA latency is.
#define ITERS 4096
#define CHAINS 4

__global__ void fp64_fma_chain(double *out, double b, double c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double a[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j)
        a[j] = i * 1e-9 + j;
    for (int k = 0; k < ITERS; ++k) {
#pragma unroll
        for (int j = 0; j < CHAINS; ++j)
            a[j] = fma(a[j], b, c);
    }
    double s = 0.0;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j)
        s += a[j];
    out[i] = s;
}
