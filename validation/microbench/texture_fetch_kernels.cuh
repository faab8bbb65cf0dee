// Texture fetches at given coordinates (perfmodel validation of tex.1d / tex.2d, perfmodel/sim/texture.py): each
// thread fetches one point and stores what the texture unit returned. Compiled by nvcc for the GPU run
// (texture_fetch.cu) and by perfmodel's NVRTC pipeline for the simulator (tests/test_texture.py).
extern "C" __global__ void fetch2d_f(float4 *out, const float *xs, const float *ys, int n, cudaTextureObject_t t)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = tex2D<float4>(t, xs[i], ys[i]);
}

extern "C" __global__ void fetch2d_u(uint4 *out, const float *xs, const float *ys, int n, cudaTextureObject_t t)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = tex2D<uint4>(t, xs[i], ys[i]);
}

extern "C" __global__ void fetch1d_f(float4 *out, const float *xs, const float *ys, int n, cudaTextureObject_t t)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = tex1D<float4>(t, xs[i]);
}

extern "C" __global__ void fetch1dfetch_f(float4 *out, const float *xs, const float *ys, int n, cudaTextureObject_t t)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = tex1Dfetch<float4>(t, (int)xs[i]);
}
