// Oracle for tests/test_blocksize_oracle.py: NVIDIA's cudaOccMaxPotentialOccupancyBlockSize (cuda_occupancy.h),
// fed from stdin, one case per line:
//   major minor maxThreadsPerBlock maxThreadsPerSM regsPerBlock regsPerSM warpSize sharedMemPerBlock
//   sharedMemPerSM numSms sharedMemPerBlockOptin reservedSharedMemPerBlock carveoutPercent
//   regsPerThread smemBase smemPerThread funcMaxThreadsPerBlock
// where the kernel's dynamic shared memory is smemBase + smemPerThread x blockSize (blockSizeToDynamicSMemSize);
// prints one line per case: status minGridSize blockSize
#include <cstdio>
#include "cuda_occupancy.h"

static long long g_base = 0, g_per_thread = 0;
static size_t smem_of(int block_size) { return (size_t)(g_base + g_per_thread * block_size); }

int main() {
    cudaOccDeviceProp prop;
    long long major, minor, maxTpb, maxTpsm, regsPerBlock, regsPerSm, warpSize, smemPerBlock, smemPerSm, numSms,
        optin, reserved, carveout, regs, base, perThread, funcMaxTpb;
    while (std::scanf("%lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld",
                      &major, &minor, &maxTpb, &maxTpsm, &regsPerBlock, &regsPerSm, &warpSize, &smemPerBlock,
                      &smemPerSm, &numSms, &optin, &reserved, &carveout, &regs, &base, &perThread,
                      &funcMaxTpb) == 17) {
        prop.computeMajor = (int)major;
        prop.computeMinor = (int)minor;
        prop.maxThreadsPerBlock = (int)maxTpb;
        prop.maxThreadsPerMultiprocessor = (int)maxTpsm;
        prop.regsPerBlock = (int)regsPerBlock;
        prop.regsPerMultiprocessor = (int)regsPerSm;
        prop.warpSize = (int)warpSize;
        prop.sharedMemPerBlock = (size_t)smemPerBlock;
        prop.sharedMemPerMultiprocessor = (size_t)smemPerSm;
        prop.numSms = (int)numSms;
        prop.sharedMemPerBlockOptin = (size_t)optin;
        prop.reservedSharedMemPerBlock = (size_t)reserved;

        cudaOccFuncAttributes attr;
        attr.maxThreadsPerBlock = (int)funcMaxTpb;
        attr.numRegs = (int)regs;
        attr.sharedSizeBytes = 0;
        attr.partitionedGCConfig = PARTITIONED_GC_OFF;
        attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
        attr.maxDynamicSharedSizeBytes = (size_t)optin;
        attr.numBlockBarriers = 1;

        cudaOccDeviceState state;
        state.carveoutConfig = (int)carveout;

        g_base = base;
        g_per_thread = perThread;
        int minGrid = 0, block = 0;
        cudaOccError status = cudaOccMaxPotentialOccupancyBlockSize(&minGrid, &block, &prop, &attr, &state,
                                                                    smem_of, 0);
        std::printf("%d %d %d\n", (int)status, minGrid, block);
    }
    return 0;
}
