// 3-D and layered texture fetches and surface loads and stores at given coordinates (perfmodel validation of
// perfmodel/sim/texture.py). Compiled by nvcc for the GPU run (texture3d_surface.cu) and by perfmodel's NVRTC
// pipeline for the simulator (tests/test_texture.py).
extern "C" __global__ void fetch3d(float4 *out, const float *xs, const float *ys, const float *zs, int n,
                                   cudaTextureObject_t t)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = tex3D<float4>(t, xs[i], ys[i], zs[i]);
}

extern "C" __global__ void fetch2d_layered(float4 *out, const float *xs, const float *ys, const float *zs, int n,
                                           cudaTextureObject_t t)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = tex2DLayered<float4>(t, xs[i], ys[i], (int)zs[i]);
}

// surface reads with each boundary mode (x in bytes, rows in elements) of a 1-channel float surface
extern "C" __global__ void surface_reads(float *out, const int *xs, const int *ys, int n, cudaSurfaceObject_t s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[2 * i] = surf2Dread<float>(s, xs[i], ys[i], cudaBoundaryModeZero);
        out[2 * i + 1] = surf2Dread<float>(s, xs[i], ys[i], cudaBoundaryModeClamp);
    }
}

// surface writes: each thread writes its index + 1 at (xs[i], ys[i]); out of range is clamped (mode 1) or dropped
// (mode 0)
extern "C" __global__ void surface_writes(const int *xs, const int *ys, int n, int mode, cudaSurfaceObject_t s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (mode)
            surf2Dwrite((float)(i + 1), s, xs[i], ys[i], cudaBoundaryModeClamp);
        else
            surf2Dwrite((float)(i + 1), s, xs[i], ys[i], cudaBoundaryModeZero);
    }
}
