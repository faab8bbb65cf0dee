// Atomic-operation microbenchmarks (perfmodel validation, issue 13 item 2): what one contended address costs per
// operation kind, and whether the cost is per warp request or per lane.
//
// atomic_same_u32: every thread of the grid applies OP to target[0]. The address is the same for every lane and
// known to be so when compiling, so ptxas (sm_80 and later) combines a warp's lanes into one operation for the
// kinds its warp-reduction instruction has (REDUX: add, min, max, and, or, xor) and issues one per lane for the
// others (exch, cas, inc).
//   OP 0: atomicAdd(+1)   1: atomicMax(i)   2: atomicOr(bit)   3: atomicExch(i)   4: atomicCAS   5: atomicInc
//   6: atomicAdd(i)
// atomic_gather_u32 / _f32: the lanes below LANES of each warp add to target[idx[i]]; idx holds zeros, so every
// operation lands on one address, but the address comes from memory and ptxas cannot combine the lanes.
#define OP 0
#define LANES 32

__global__ void atomic_same_u32(unsigned int* target, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
#if OP == 0
    atomicAdd(target, 1u);
#elif OP == 1
    atomicMax(target, (unsigned int)i);
#elif OP == 2
    atomicOr(target, 1u << (i & 31));
#elif OP == 3
    atomicExch(target, (unsigned int)i);
#elif OP == 4
    atomicCAS(target, (unsigned int)i, (unsigned int)i + 1u);
#elif OP == 5
    atomicInc(target, 0xffffffffu);
#else
    atomicAdd(target, (unsigned int)i);
#endif
}

__global__ void atomic_gather_u32(const int* idx, unsigned int* target, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && (threadIdx.x & 31) < LANES)
        atomicAdd(&target[idx[i]], 1u);
}

__global__ void atomic_gather_f32(const int* idx, float* target, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && (threadIdx.x & 31) < LANES)
        atomicAdd(&target[idx[i]], 1.0f);
}
