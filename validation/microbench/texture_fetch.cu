// What the texture unit returns, for perfmodel's tex.1d / tex.2d semantics (perfmodel/sim/texture.py): every
// filter mode, address mode and coordinate kind, float / uchar4 (normalized-float read) / uint texels, CUDA arrays
// and linear memory, fetched at points that include texel centres and edges, out-of-range coordinates and
// sub-texel steps of 1/1024 (which show how the linear filter's 8-bit weights are rounded). Prints one JSON
// document: the texels, the coordinates and the four components returned per point.
//
//     nvcc -O2 -arch=sm_90 -o texture_fetch validation/microbench/texture_fetch.cu && ./texture_fetch > out.json
#include <cstdio>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "texture_fetch_kernels.cuh"

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)

static unsigned state = 12345u;
static float rnd() { state = state * 1664525u + 1013904223u; return (state >> 8) / 16777216.0f; }

enum Fmt { F1, UC4, U1 };
struct Cfg { const char *name; Fmt fmt; int dims; int w, h; cudaTextureFilterMode filter;
             cudaTextureAddressMode addr; int norm; cudaTextureReadMode read; int linear_mem; };

static const char *filter_name(cudaTextureFilterMode f) { return f == cudaFilterModePoint ? "point" : "linear"; }
static const char *addr_name(cudaTextureAddressMode a) {
    return a == cudaAddressModeClamp ? "clamp" : a == cudaAddressModeBorder ? "border"
         : a == cudaAddressModeWrap ? "wrap" : "mirror";
}

int main()
{
    std::vector<Cfg> cfgs;
    const cudaTextureFilterMode filters[] = {cudaFilterModePoint, cudaFilterModeLinear};
    const cudaTextureAddressMode addrs[] = {cudaAddressModeClamp, cudaAddressModeBorder, cudaAddressModeWrap,
                                            cudaAddressModeMirror};
    for (auto f : filters)
        for (auto a : addrs)
            for (int norm = 0; norm < 2; ++norm)
                cfgs.push_back({"float", F1, 2, 5, 4, f, a, norm, cudaReadModeElementType, 0});
    cfgs.push_back({"uchar4", UC4, 2, 3, 2, cudaFilterModePoint, cudaAddressModeClamp, 0, cudaReadModeNormalizedFloat, 0});
    cfgs.push_back({"uchar4", UC4, 2, 3, 2, cudaFilterModeLinear, cudaAddressModeClamp, 0, cudaReadModeNormalizedFloat, 0});
    cfgs.push_back({"uchar4", UC4, 2, 3, 2, cudaFilterModeLinear, cudaAddressModeWrap, 1, cudaReadModeNormalizedFloat, 0});
    cfgs.push_back({"uint", U1, 2, 5, 4, cudaFilterModePoint, cudaAddressModeClamp, 0, cudaReadModeElementType, 0});
    cfgs.push_back({"float", F1, 1, 7, 1, cudaFilterModeLinear, cudaAddressModeClamp, 0, cudaReadModeElementType, 0});
    cfgs.push_back({"float", F1, 1, 9, 1, cudaFilterModePoint, cudaAddressModeClamp, 0, cudaReadModeElementType, 1});
    // widths that are not powers of two, normalized coordinates (added 2026-11-27, measured on an H100): how many
    // fractional bits of a normalized coordinate survive before it is scaled by the width
    cfgs.push_back({"float", F1, 2, 200, 150, cudaFilterModeLinear, cudaAddressModeMirror, 1, cudaReadModeElementType, 0});
    cfgs.push_back({"float", F1, 2, 200, 150, cudaFilterModeLinear, cudaAddressModeClamp, 1, cudaReadModeElementType, 0});
    cfgs.push_back({"float", F1, 2, 257, 3, cudaFilterModeLinear, cudaAddressModeWrap, 1, cudaReadModeElementType, 0});
    cfgs.push_back({"float", F1, 2, 4000, 2, cudaFilterModeLinear, cudaAddressModeClamp, 1, cudaReadModeElementType, 0});
    cfgs.push_back({"float", F1, 2, 4000, 2, cudaFilterModePoint, cudaAddressModeClamp, 1, cudaReadModeElementType, 0});
    cfgs.push_back({"float", F1, 2, 1000, 3, cudaFilterModePoint, cudaAddressModeWrap, 1, cudaReadModeElementType, 0});

    const int n = 64;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("{\"device\": \"%s\", \"configs\": [\n", prop.name);
    for (size_t c = 0; c < cfgs.size(); ++c) {
        const Cfg &g = cfgs[c];
        int texels = g.w * g.h, channels = g.fmt == UC4 ? 4 : 1;
        std::vector<float> fdata(texels);
        std::vector<unsigned char> cdata(texels * 4);
        std::vector<unsigned> udata(texels);
        for (int i = 0; i < texels; ++i) {
            fdata[i] = (float)(int)(rnd() * 2000.0f - 1000.0f) / 8.0f;
            udata[i] = (unsigned)(rnd() * 4294967040.0f);
            for (int k = 0; k < 4; ++k) cdata[4 * i + k] = (unsigned char)(rnd() * 256.0f);
        }
        // coordinates in texels: centres, edges, out of range and steps of 1/1024 across a texel
        std::vector<float> xs(n), ys(n);
        for (int i = 0; i < n; ++i) {
            float x, y;
            if (i < 17) { x = 1.0f + i / 1024.0f; y = 0.5f + i / 512.0f; }
            else if (i < 24) { x = (float)(i - 19); y = (float)(i - 20) + 0.5f; }
            else if (i < 32) { x = (float)(i - 26) + 0.5f; y = (float)(i - 28); }
            else if (g.w > 16 && i < 48) {     // wide textures: texel centres anywhere along x
                x = (float)(int)(rnd() * g.w) + 0.5f; y = (float)(int)(rnd() * g.h) + 0.5f;
            } else if (g.w > 16) {              // and texel edges (where a nearest-point fetch changes texel)
                x = (float)(int)(rnd() * g.w); y = (float)(int)(rnd() * g.h) + 0.5f;
            }
            else { x = rnd() * (g.w + 4) - 2.0f; y = rnd() * (g.h + 4) - 2.0f; }
            if (g.linear_mem) { x = (float)(int)(rnd() * (g.w + 6)) - 3.0f; }
            if (g.norm) { x /= g.w; y /= g.h; }
            xs[i] = x; ys[i] = y;
        }
        cudaChannelFormatDesc desc = g.fmt == F1 ? cudaCreateChannelDesc<float>()
                                   : g.fmt == U1 ? cudaCreateChannelDesc<unsigned>()
                                   : cudaCreateChannelDesc(8, 8, 8, 8, cudaChannelFormatKindUnsigned);
        const void *host = g.fmt == F1 ? (const void *)fdata.data() : g.fmt == U1 ? (const void *)udata.data()
                         : (const void *)cdata.data();
        size_t texel_bytes = g.fmt == UC4 ? 4 : 4;
        cudaResourceDesc res;
        memset(&res, 0, sizeof(res));
        cudaArray_t arr = nullptr;
        void *lin = nullptr;
        if (g.linear_mem) {
            CHECK(cudaMalloc(&lin, texels * texel_bytes));
            CHECK(cudaMemcpy(lin, host, texels * texel_bytes, cudaMemcpyHostToDevice));
            res.resType = cudaResourceTypeLinear;
            res.res.linear.devPtr = lin;
            res.res.linear.desc = desc;
            res.res.linear.sizeInBytes = texels * texel_bytes;
        } else {
            CHECK(cudaMallocArray(&arr, &desc, g.w, g.dims == 2 ? g.h : 0));
            CHECK(cudaMemcpy2DToArray(arr, 0, 0, host, g.w * texel_bytes, g.w * texel_bytes, g.h,
                                      cudaMemcpyHostToDevice));
            res.resType = cudaResourceTypeArray;
            res.res.array.array = arr;
        }
        cudaTextureDesc td;
        memset(&td, 0, sizeof(td));
        td.addressMode[0] = td.addressMode[1] = g.addr;
        td.filterMode = g.filter;
        td.readMode = g.read;
        td.normalizedCoords = g.norm;
        cudaTextureObject_t tex;
        CHECK(cudaCreateTextureObject(&tex, &res, &td, nullptr));
        float *dx, *dy;
        void *dout;
        CHECK(cudaMalloc(&dx, n * 4));
        CHECK(cudaMalloc(&dy, n * 4));
        CHECK(cudaMalloc(&dout, n * 16));
        CHECK(cudaMemcpy(dx, xs.data(), n * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(dy, ys.data(), n * 4, cudaMemcpyHostToDevice));
        const char *kernel;
        if (g.linear_mem) { kernel = "fetch1dfetch_f"; fetch1dfetch_f<<<1, n>>>((float4 *)dout, dx, dy, n, tex); }
        else if (g.dims == 1) { kernel = "fetch1d_f"; fetch1d_f<<<1, n>>>((float4 *)dout, dx, dy, n, tex); }
        else if (g.fmt == U1) { kernel = "fetch2d_u"; fetch2d_u<<<1, n>>>((uint4 *)dout, dx, dy, n, tex); }
        else { kernel = "fetch2d_f"; fetch2d_f<<<1, n>>>((float4 *)dout, dx, dy, n, tex); }
        CHECK(cudaGetLastError());
        std::vector<unsigned> out(4 * n);
        CHECK(cudaMemcpy(out.data(), dout, n * 16, cudaMemcpyDeviceToHost));
        printf("{\"kernel\": \"%s\", \"format\": \"%s\", \"dims\": %d, \"width\": %d, \"height\": %d, "
               "\"channels\": %d, \"filter\": \"%s\", \"address\": \"%s\", \"normalized_coords\": %s, "
               "\"read_mode\": \"%s\", \"linear_memory\": %s,\n \"data\": [", kernel, g.name, g.dims, g.w, g.h,
               channels, filter_name(g.filter), addr_name(g.addr), g.norm ? "true" : "false",
               g.read == cudaReadModeElementType ? "element" : "normalized_float", g.linear_mem ? "true" : "false");
        for (int i = 0; i < texels * channels; ++i) {
            if (g.fmt == F1) printf("%s%.9g", i ? ", " : "", fdata[i]);
            else if (g.fmt == U1) printf("%s%u", i ? ", " : "", udata[i]);
            else printf("%s%u", i ? ", " : "", (unsigned)cdata[i]);
        }
        printf("],\n \"xs\": [");
        for (int i = 0; i < n; ++i) printf("%s%.9g", i ? ", " : "", xs[i]);
        printf("],\n \"ys\": [");
        for (int i = 0; i < n; ++i) printf("%s%.9g", i ? ", " : "", ys[i]);
        printf("],\n \"out_bits\": [");      // the 4 x 32 result bits per point (float or uint)
        for (int i = 0; i < 4 * n; ++i) printf("%s%u", i ? ", " : "", out[i]);
        printf("]}%s\n", c + 1 < cfgs.size() ? "," : "");
        cudaDestroyTextureObject(tex);
        if (arr) cudaFreeArray(arr);
        if (lin) cudaFree(lin);
        cudaFree(dx); cudaFree(dy); cudaFree(dout);
    }
    printf("]}\n");
    return 0;
}
