// What the GPU returns for 3-D and layered texture fetches (point and linear, clamp/border/wrap) and for surface
// reads and writes with the zero and clamp boundary modes, for perfmodel/sim/texture.py. Prints one JSON document:
// each configuration's texels, coordinates and results (raw 32-bit words).
//
//     nvcc -O2 -arch=sm_90 -o texture3d_surface validation/microbench/texture3d_surface.cu && ./texture3d_surface
#include <cstdio>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "texture3d_surface_kernels.cuh"

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)

static unsigned state = 777u;
static float rnd() { state = state * 1664525u + 1013904223u; return (state >> 8) / 16777216.0f; }

static void print_floats(const char *name, const std::vector<float> &v, bool last = false)
{
    printf("\"%s\": [", name);
    for (size_t i = 0; i < v.size(); ++i) printf("%s%.9g", i ? ", " : "", v[i]);
    printf("]%s", last ? "" : ", ");
}

static void print_words(const char *name, const void *p, size_t n)
{
    const unsigned *w = (const unsigned *)p;
    printf("\"%s\": [", name);
    for (size_t i = 0; i < n; ++i) printf("%s%u", i ? ", " : "", w[i]);
    printf("]");
}

int main()
{
    const int W = 5, H = 4, D = 3, n = 64;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("{\"device\": \"%s\", \"textures\": [\n", prop.name);
    const cudaTextureFilterMode filters[] = {cudaFilterModePoint, cudaFilterModeLinear};
    const cudaTextureAddressMode addrs[] = {cudaAddressModeClamp, cudaAddressModeBorder, cudaAddressModeWrap};
    bool first = true;
    for (int layered = 0; layered < 2; ++layered)
        for (auto f : filters)
            for (auto a : addrs)
                for (int norm = 0; norm < 2; ++norm) {
                    if (layered && norm) continue;
                    std::vector<float> data(W * H * D);
                    for (auto &x : data) x = (float)(int)(rnd() * 2000.0f - 1000.0f) / 8.0f;
                    std::vector<float> xs(n), ys(n), zs(n);
                    for (int i = 0; i < n; ++i) {
                        xs[i] = rnd() * (W + 4) - 2.0f;
                        ys[i] = rnd() * (H + 4) - 2.0f;
                        zs[i] = layered ? (float)(int)(rnd() * (D + 2) - 1.0f) : rnd() * (D + 4) - 2.0f;
                        if (i < 8) { xs[i] = i + 0.5f; ys[i] = 1.5f; zs[i] = layered ? 1.0f : 1.5f; }
                        if (norm) { xs[i] /= W; ys[i] /= H; zs[i] /= D; }
                    }
                    cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
                    cudaArray_t arr;
                    CHECK(cudaMalloc3DArray(&arr, &desc, make_cudaExtent(W, H, D), layered ? cudaArrayLayered : 0));
                    cudaMemcpy3DParms cp;
                    memset(&cp, 0, sizeof(cp));
                    cp.srcPtr = make_cudaPitchedPtr(data.data(), W * sizeof(float), W, H);
                    cp.dstArray = arr;
                    cp.extent = make_cudaExtent(W, H, D);
                    cp.kind = cudaMemcpyHostToDevice;
                    CHECK(cudaMemcpy3D(&cp));
                    cudaResourceDesc res;
                    memset(&res, 0, sizeof(res));
                    res.resType = cudaResourceTypeArray;
                    res.res.array.array = arr;
                    cudaTextureDesc td;
                    memset(&td, 0, sizeof(td));
                    td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = a;
                    td.filterMode = f;
                    td.readMode = cudaReadModeElementType;
                    td.normalizedCoords = norm;
                    cudaTextureObject_t tex;
                    CHECK(cudaCreateTextureObject(&tex, &res, &td, nullptr));
                    float *dx, *dy, *dz;
                    float4 *dout;
                    CHECK(cudaMalloc(&dx, n * 4)); CHECK(cudaMalloc(&dy, n * 4)); CHECK(cudaMalloc(&dz, n * 4));
                    CHECK(cudaMalloc(&dout, n * 16));
                    CHECK(cudaMemcpy(dx, xs.data(), n * 4, cudaMemcpyHostToDevice));
                    CHECK(cudaMemcpy(dy, ys.data(), n * 4, cudaMemcpyHostToDevice));
                    CHECK(cudaMemcpy(dz, zs.data(), n * 4, cudaMemcpyHostToDevice));
                    if (layered) fetch2d_layered<<<1, n>>>(dout, dx, dy, dz, n, tex);
                    else fetch3d<<<1, n>>>(dout, dx, dy, dz, n, tex);
                    CHECK(cudaGetLastError());
                    std::vector<float4> out(n);
                    CHECK(cudaMemcpy(out.data(), dout, n * 16, cudaMemcpyDeviceToHost));
                    printf("%s{\"kernel\": \"%s\", \"width\": %d, \"height\": %d, \"depth\": %d, \"layered\": %s, "
                           "\"filter\": \"%s\", \"address\": \"%s\", \"normalized_coords\": %s, ", first ? "" : ",\n",
                           layered ? "fetch2d_layered" : "fetch3d", W, H, D, layered ? "true" : "false",
                           f == cudaFilterModePoint ? "point" : "linear",
                           a == cudaAddressModeClamp ? "clamp" : a == cudaAddressModeBorder ? "border" : "wrap",
                           norm ? "true" : "false");
                    first = false;
                    print_floats("data", data); print_floats("xs", xs); print_floats("ys", ys);
                    print_floats("zs", zs);
                    print_words("out_bits", out.data(), 4 * n);
                    printf("}");
                    cudaDestroyTextureObject(tex); cudaFreeArray(arr);
                    cudaFree(dx); cudaFree(dy); cudaFree(dz); cudaFree(dout);
                }
    printf("],\n\"surfaces\": {");
    // one 8 x 4 float surface: reads at byte x in [-8, 40) and rows -1..4, then writes with each mode
    const int SW = 8, SH = 4, m = 60;
    std::vector<float> s0(SW * SH);
    for (int i = 0; i < SW * SH; ++i) s0[i] = (float)(i * 3 + 1);
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    CHECK(cudaMallocArray(&arr, &desc, SW, SH, cudaArraySurfaceLoadStore));
    CHECK(cudaMemcpy2DToArray(arr, 0, 0, s0.data(), SW * 4, SW * 4, SH, cudaMemcpyHostToDevice));
    cudaResourceDesc res;
    memset(&res, 0, sizeof(res));
    res.resType = cudaResourceTypeArray;
    res.res.array.array = arr;
    cudaSurfaceObject_t surf;
    CHECK(cudaCreateSurfaceObject(&surf, &res));
    std::vector<int> rx(m), ry(m);
    for (int i = 0; i < m; ++i) { rx[i] = 4 * ((i % 12) - 2); ry[i] = (i / 12) - 1; }
    int *drx, *dry;
    float *dout;
    CHECK(cudaMalloc(&drx, m * 4)); CHECK(cudaMalloc(&dry, m * 4)); CHECK(cudaMalloc(&dout, 2 * m * 4));
    CHECK(cudaMemcpy(drx, rx.data(), m * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dry, ry.data(), m * 4, cudaMemcpyHostToDevice));
    surface_reads<<<1, m>>>(dout, drx, dry, m, surf);
    CHECK(cudaGetLastError());
    std::vector<float> reads(2 * m);
    CHECK(cudaMemcpy(reads.data(), dout, 2 * m * 4, cudaMemcpyDeviceToHost));
    printf("\"width\": %d, \"height\": %d, ", SW, SH);
    print_floats("data", s0);
    printf("\"read_x\": ["); for (int i = 0; i < m; ++i) printf("%s%d", i ? ", " : "", rx[i]);
    printf("], \"read_y\": ["); for (int i = 0; i < m; ++i) printf("%s%d", i ? ", " : "", ry[i]);
    printf("], ");
    print_floats("reads_zero_clamp", reads, true);
    // writes: 16 in range (rows 0-1) and 4 out of range whose clamped places nobody else writes
    const int wn = 20;
    int wx[wn], wy[wn];
    for (int i = 0; i < 16; ++i) { wx[i] = 4 * (i % 8); wy[i] = i / 8; }
    wx[16] = 40; wy[16] = 2; wx[17] = -8; wy[17] = 3; wx[18] = 8; wy[18] = 9; wx[19] = 100; wy[19] = 3;
    printf(", \"write_x\": ["); for (int i = 0; i < wn; ++i) printf("%s%d", i ? ", " : "", wx[i]);
    printf("], \"write_y\": ["); for (int i = 0; i < wn; ++i) printf("%s%d", i ? ", " : "", wy[i]);
    printf("]");
    for (int mode = 0; mode < 2; ++mode) {
        CHECK(cudaMemcpy2DToArray(arr, 0, 0, s0.data(), SW * 4, SW * 4, SH, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(drx, wx, wn * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(dry, wy, wn * 4, cudaMemcpyHostToDevice));
        surface_writes<<<1, wn>>>(drx, dry, wn, mode, surf);
        CHECK(cudaGetLastError());
        std::vector<float> after(SW * SH);
        CHECK(cudaMemcpy2DFromArray(after.data(), SW * 4, arr, 0, 0, SW * 4, SH, cudaMemcpyDeviceToHost));
        printf(", ");
        print_floats(mode ? "after_writes_clamp" : "after_writes_zero", after, true);
    }
    printf("}}\n");
    return 0;
}
