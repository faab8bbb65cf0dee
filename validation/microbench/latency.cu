// Latency and launch microbenchmarks: the constants of the model's latency and launch terms.
//
// pointer_chase: one thread follows a random cyclic permutation (next = chain[next]) through an array of a
// given footprint; cycles per hop (clock64) is the load-to-use latency of the level the footprint lives in
// (L1 for a few KB, L2 for a few MB, DRAM for 1 GiB). The chain is random so no prefetcher helps.
extern "C" __global__ void pointer_chase(const unsigned int *__restrict__ chain, int hops, unsigned int start,
                                         long long *cycles_out, unsigned int *sink)
{
    unsigned int next = start;
    // warm the path once (TLB, instruction cache), then time
    for (int i = 0; i < 64; ++i)
        next = chain[next];
    long long t0 = clock64();
    for (int i = 0; i < hops; ++i)
        next = chain[next];
    long long t1 = clock64();
    cycles_out[0] = t1 - t0;
    sink[0] = next;
}

// empty: launch overhead (1 block) and block-scheduling rate (many small blocks doing nothing but one store
// from thread 0, so the blocks are real).
extern "C" __global__ void empty(int *out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0x7fffffff)
        out[0] = 1;
}
