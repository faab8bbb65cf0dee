// Prints what a perfmodel device profile needs from a real GPU (cudaGetDeviceProperties and attributes), then
// the CUDA runtime's own occupancy (cudaOccupancyMaxActiveBlocksPerMultiprocessor) for the cases given on stdin
// as "threads registers_hint dynamic_smem_bytes" lines (registers are whatever the kernel below compiles to:
// the runtime reports them as numRegs). Used to check a profile against the hardware it names:
//   nvcc -o device_query tests/oracle/device_query.cu && echo "256 0 49152" | ./device_query
#include <cstdio>
#include <cuda_runtime.h>

__global__ void probe(float *out) {
    extern __shared__ float smem[];
    smem[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = smem[blockDim.x - 1 - threadIdx.x];
}

int main() {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
        std::printf("no CUDA device\n");
        return 1;
    }
    int clock_khz = 0, mem_clock_khz = 0, bus_bits = 0, l2 = 0, smem_sm = 0, optin = 0, reserved = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
    cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, 0);
    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0);
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0);
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
    cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0);
    std::printf("name=%s\ncc=%d.%d\nsm_count=%d\nclock_khz=%d\nmem_clock_khz=%d\nbus_bits=%d\n"
                "dram_bandwidth_gbs=%.1f\ntotal_global_mem=%zu\nl2_bytes=%d\nwarp_size=%d\n"
                "max_threads_per_block=%d\nmax_block_dim=%d,%d,%d\nmax_grid_dim=%d,%d,%d\n"
                "max_threads_per_sm=%d\nmax_blocks_per_sm=%d\nregisters_per_sm=%d\nregisters_per_block=%d\n"
                "shared_memory_per_sm=%d\nshared_memory_per_block=%zu\nshared_memory_per_block_optin=%d\n"
                "reserved_shared_memory_per_block=%d\nconstant_memory=%zu\n",
                p.name, p.major, p.minor, p.multiProcessorCount, clock_khz, mem_clock_khz, bus_bits,
                2.0 * mem_clock_khz * 1e3 * (bus_bits / 8) / 1e9, p.totalGlobalMem, l2, p.warpSize,
                p.maxThreadsPerBlock, p.maxThreadsDim[0], p.maxThreadsDim[1], p.maxThreadsDim[2], p.maxGridSize[0],
                p.maxGridSize[1], p.maxGridSize[2], p.maxThreadsPerMultiProcessor, p.maxBlocksPerMultiProcessor,
                p.regsPerMultiprocessor, p.regsPerBlock, smem_sm, p.sharedMemPerBlock, optin, reserved,
                p.totalConstMem);
    cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
    cudaFuncAttributes attr;
    cudaFuncGetAttributes(&attr, probe);
    std::printf("probe_registers=%d\n", attr.numRegs);
    int threads, regs_hint;
    long long smem;
    while (std::scanf("%d %d %lld", &threads, &regs_hint, &smem) == 3) {
        int blocks = -1;
        cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, probe, threads, (size_t)smem);
        std::printf("occupancy threads=%d registers=%d smem=%lld blocks=%d%s\n", threads, attr.numRegs, smem,
                    blocks, err == cudaSuccess ? "" : " (error)");
    }
    return 0;
}
