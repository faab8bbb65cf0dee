// Oracle for tests/test_occupancy_oracle.py: NVIDIA's own occupancy calculator (cuda_occupancy.h from the
// installed CUDA toolkit), fed from stdin, one case per line:
//   major minor maxThreadsPerBlock maxThreadsPerSM regsPerBlock regsPerSM warpSize sharedMemPerBlock
//   sharedMemPerSM numSms sharedMemPerBlockOptin reservedSharedMemPerBlock carveoutPercent
//   threadsPerBlock regsPerThread dynamicSmemBytes
// prints one line per case:
//   status blocks limitWarps limitRegs limitSmem limitBlocks allocatedRegsPerBlock allocatedSmemPerBlock
// The kernel is described as cudaFuncGetAttributes would describe it for a launch that opted in to the
// device's maximum dynamic shared memory (cudaFuncAttributeMaxDynamicSharedMemorySize), with no static shared
// memory and one block barrier (__syncthreads), which is what perfmodel's calculator assumes.
#include <cstdio>
#include <climits>
#include "cuda_occupancy.h"

int main() {
    cudaOccDeviceProp prop;
    long long major, minor, maxTpb, maxTpsm, regsPerBlock, regsPerSm, warpSize, smemPerBlock, smemPerSm, numSms,
        optin, reserved, carveout, threads, regs, smem;
    while (std::scanf("%lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld", &major,
                      &minor, &maxTpb, &maxTpsm, &regsPerBlock, &regsPerSm, &warpSize, &smemPerBlock, &smemPerSm,
                      &numSms, &optin, &reserved, &carveout, &threads, &regs, &smem) == 16) {
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
        attr.maxThreadsPerBlock = (int)maxTpb;
        attr.numRegs = (int)regs;
        attr.sharedSizeBytes = 0;
        attr.partitionedGCConfig = PARTITIONED_GC_OFF;
        attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
        attr.maxDynamicSharedSizeBytes = (size_t)optin;
        attr.numBlockBarriers = 1;

        cudaOccDeviceState state;
        state.carveoutConfig = (int)carveout;  // -1 = default

        cudaOccResult result;
        cudaOccError status = cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state, (int)threads,
                                                                      (size_t)smem);
        if (status != CUDA_OCC_SUCCESS) {
            std::printf("%d 0 0 0 0 0 0 0\n", (int)status);
            continue;
        }
        std::printf("0 %d %d %d %d %d %d %lld\n", result.activeBlocksPerMultiprocessor, result.blockLimitWarps,
                    result.blockLimitRegs, result.blockLimitSharedMem, result.blockLimitBlocks,
                    result.allocatedRegistersPerBlock, (long long)result.allocatedSharedMemPerBlock);
    }
    return 0;
}
