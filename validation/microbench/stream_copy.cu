// Streaming-copy microbenchmark: DRAM bandwidth as the model's roof (bytes read + bytes written per second).
// Each kernel walks the arrays with a grid-stride loop over a grid of a few blocks per SM, so the figure is the
// memory system's, not the launch's. The buffers (1 GiB each) are 40x the H100's 50 MB L2.

extern "C" __global__ void copy_float4(const float4 *__restrict__ in, float4 *__restrict__ out, long long n4)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride)
        out[i] = in[i];
}

extern "C" __global__ void copy_float(const float *__restrict__ in, float *__restrict__ out, long long n)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = in[i];
}

// One element per thread, no loop: the shape of the seed kernels (vec_add, picture_scale).
extern "C" __global__ void copy_float_1x(const float *__restrict__ in, float *__restrict__ out, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i];
}

// Read-only: sums a float4 stream (one atomicAdd per block keeps the sum live).
extern "C" __global__ void read_float4(const float4 *__restrict__ in, float *__restrict__ sink, long long n4)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = in[i];
        acc += v.x + v.y + v.z + v.w;
    }
    if (acc == 12345.678f)  // practically never: keeps the loads without a store per thread
        atomicAdd(sink, acc);
}
