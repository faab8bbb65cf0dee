// FMA-chain microbenchmark: FP32 peak as the model's roof. Each thread runs CHAINS independent dependent chains
// a = a * b + c (one FFMA each, 2 flops), enough to hide the FMA latency at full occupancy. Thread 0 of block 0
// reads the SM cycle counter and the global nanosecond timer around its loop: their ratio is the SM clock during
// the run (we never set clocks; this reads what the card runs at).
#ifndef CHAINS
#define CHAINS 8
#endif

extern "C" __global__ void fma_chain(float *out, float b, float c, int iterations, long long *clock_out)
{
    float a[CHAINS];
#pragma unroll
    for (int k = 0; k < CHAINS; ++k)
        a[k] = threadIdx.x * 1e-3f + k;
    long long c0 = 0, t0 = 0;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        c0 = clock64();
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    }
    // unrolled so the loop's own integer instructions take few issue slots beside the FFMAs
#pragma unroll 16
    for (int i = 0; i < iterations; ++i) {
#pragma unroll
        for (int k = 0; k < CHAINS; ++k)
            a[k] = fmaf(a[k], b, c);
    }
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < CHAINS; ++k)
        sum += a[k];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        long long c1 = clock64(), t1;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
        clock_out[0] = c1 - c0;
        clock_out[1] = t1 - t0;
    }
}
