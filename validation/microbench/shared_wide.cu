// One warp, one shared-memory load per launch, of 4, 8 or 16 bytes per lane: each lane's element index comes from
// idx[lane], so ncu's wavefront count for the launch is that address pattern's (validation/microbench/shared_wide.py).
template <typename T>
__device__ void load_once(const int* __restrict__ idx, T* out) {
    __shared__ T s[1024];
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) {
        s[i] = T{};
    }
    __syncthreads();
    out[threadIdx.x] = s[idx[threadIdx.x]];
}

extern "C" __global__ void lds32(const int* __restrict__ idx, float* out) { load_once<float>(idx, out); }
extern "C" __global__ void lds64(const int* __restrict__ idx, float2* out) { load_once<float2>(idx, out); }
extern "C" __global__ void lds128(const int* __restrict__ idx, float4* out) { load_once<float4>(idx, out); }
