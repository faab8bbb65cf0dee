// A per-thread array indexed at run time lives in local memory (per thread, interleaved word by word across a warp's
// lanes): S floats a thread, written once, then read ITERS times at an index the same for every lane of a warp
// (a warp request of 32 consecutive words: 4 sectors), so the traffic is the array's footprint against L1 and L2.
// The launches, timing and the ncu command: validation/microbench/local_memory.py
template <int S>
__global__ void local_array(const int *seed, float *out, int iters)
{
    float buf[S];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int s = seed[i];
    for (int k = 0; k < S; k++) buf[k] = (float)(k ^ s);
    float acc = 0.f;
    unsigned x = (unsigned)(blockIdx.x * 977 + (threadIdx.x >> 5) * 131);   // uniform over a warp
    for (int k = 0; k < iters; k++) {
        x = x * 1664525u + 1013904223u;
        acc += buf[(x >> 8) & (S - 1)];
    }
    out[i] = acc;
}
