// Block-sum reductions launched with few blocks (perfmodel validation, issue 13 item 3): each block strides over
// the whole input (grid-stride loop), then reduces its BLOCK_SIZE partial sums in shared memory and writes one
// value. reduce_interleaved_mod is the textbook first version (interleaved addressing with %, divergent warps);
// reduce_sequential the conflict-free one.
#define BLOCK_SIZE 256

__global__ void reduce_sequential(const float* in, float* out, int n)
{
    __shared__ float s[BLOCK_SIZE];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        sum += in[i];
    s[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride)
            s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = s[0];
}

__global__ void reduce_interleaved_mod(const float* in, float* out, int n)
{
    __shared__ float s[BLOCK_SIZE];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        sum += in[i];
    s[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = 1; stride < blockDim.x; stride *= 2) {
        if (threadIdx.x % (2 * stride) == 0)
            s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = s[0];
}
