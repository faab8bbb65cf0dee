// What the GPU's fp8 conversions return (cuda_fp8.h on CC 8.9+: cvt.rn.satfinite.{e4m3x2,e5m2x2}.{f32,f16x2} and
// cvt.rn.f16x2.{e4m3x2,e5m2x2}), for perfmodel/sim/moves.py: float32 values around every edge of the formats
// (rounding ties, the largest finite values and beyond, subnormals, infinities, NaN) converted to both fp8
// formats, from float32 and from half2, and every fp8 byte converted back to half. Prints one JSON document.
//
//     nvcc -O2 -arch=sm_90 -o fp8_convert validation/microbench/fp8_convert.cu && ./fp8_convert > out.json
#include <cstdio>
#include <cstring>
#include <cmath>
#include <vector>
#include <cuda_fp8.h>
#include <cuda_fp16.h>

__global__ void f32_to(const float2 *s, unsigned short *e4, unsigned short *e5, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __nv_fp8x2_e4m3 a(s[i]);
    __nv_fp8x2_e5m2 b(s[i]);
    e4[i] = a.__x;
    e5[i] = b.__x;
}

__global__ void h2_to(const __half2 *s, unsigned short *e4, unsigned short *e5, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __nv_fp8x2_e4m3 a(s[i]);
    __nv_fp8x2_e5m2 b(s[i]);
    e4[i] = a.__x;
    e5[i] = b.__x;
}

__global__ void back(const unsigned short *bytes, __half2 *h4, __half2 *h5, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __nv_fp8x2_e4m3 a;
    __nv_fp8x2_e5m2 b;
    a.__x = bytes[i];
    b.__x = bytes[i];
    h4[i] = __half2(a);
    h5[i] = __half2(b);
}

int main()
{
    std::vector<float> v;
    const float edges[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.1f, 0.3f, 2.5f, 3.5f, 17.25f, 240.0f, 448.0f, 449.0f, 463.9f,
                           464.0f, 464.1f, 480.0f, 500.0f, 1e6f, -1e9f, 57344.0f, 61439.0f, 61440.0f, 61441.0f, 65504.0f,
                           1e-3f, 1e-6f, 1.9531250e-3f, 9.765625e-4f, 1.52587890625e-05f, 7.62939453125e-06f, 1e-9f,
                           INFINITY, -INFINITY, NAN};
    for (float e : edges) v.push_back(e);
    unsigned state = 7;
    for (int k = 0; k < 430; ++k) {       // random magnitudes over the whole range, both signs
        state = state * 1664525u + 1013904223u;
        float m = (state >> 8) / 16777216.0f;
        state = state * 1664525u + 1013904223u;
        float ex = (float)((int)(state >> 24) % 44) - 22.0f;
        v.push_back((state & 1 ? -1.0f : 1.0f) * m * std::ldexp(1.0f, (int)ex));
    }
    if (v.size() % 2) v.push_back(0.75f);
    int n = v.size() / 2;
    std::vector<__half2> h(n);
    for (int i = 0; i < n; ++i) h[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
    float2 *ds; __half2 *dh; unsigned short *e4, *e5, *he4, *he5, *bytes; __half2 *b4, *b5;
    cudaMalloc(&ds, n * 8); cudaMalloc(&dh, n * 4); cudaMalloc(&e4, n * 2); cudaMalloc(&e5, n * 2);
    cudaMalloc(&he4, n * 2); cudaMalloc(&he5, n * 2); cudaMalloc(&bytes, 128 * 2); cudaMalloc(&b4, 128 * 4);
    cudaMalloc(&b5, 128 * 4);
    cudaMemcpy(ds, v.data(), n * 8, cudaMemcpyHostToDevice);
    cudaMemcpy(dh, h.data(), n * 4, cudaMemcpyHostToDevice);
    std::vector<unsigned short> all(128);
    for (int i = 0; i < 128; ++i) all[i] = (unsigned short)((2 * i) | ((2 * i + 1) << 8));
    cudaMemcpy(bytes, all.data(), 256, cudaMemcpyHostToDevice);
    f32_to<<<(n + 127) / 128, 128>>>(ds, e4, e5, n);
    h2_to<<<(n + 127) / 128, 128>>>(dh, he4, he5, n);
    back<<<1, 128>>>(bytes, b4, b5, 128);
    std::vector<unsigned short> o4(n), o5(n), p4(n), p5(n);
    std::vector<unsigned> q4(128), q5(128);
    cudaMemcpy(o4.data(), e4, n * 2, cudaMemcpyDeviceToHost); cudaMemcpy(o5.data(), e5, n * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(p4.data(), he4, n * 2, cudaMemcpyDeviceToHost); cudaMemcpy(p5.data(), he5, n * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(q4.data(), b4, 512, cudaMemcpyDeviceToHost); cudaMemcpy(q5.data(), b5, 512, cudaMemcpyDeviceToHost);
    cudaError_t err = cudaDeviceSynchronize();
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("{\"device\": \"%s\", \"error\": \"%s\",\n \"f32_bits\": [", prop.name, cudaGetErrorString(err));
    for (size_t i = 0; i < v.size(); ++i) { unsigned u; memcpy(&u, &v[i], 4); printf("%s%u", i ? ", " : "", u); }
    printf("],\n \"e4m3x2_from_f32\": [");
    for (int i = 0; i < n; ++i) printf("%s%u", i ? ", " : "", o4[i]);
    printf("],\n \"e5m2x2_from_f32\": [");
    for (int i = 0; i < n; ++i) printf("%s%u", i ? ", " : "", o5[i]);
    printf("],\n \"e4m3x2_from_half2\": [");
    for (int i = 0; i < n; ++i) printf("%s%u", i ? ", " : "", p4[i]);
    printf("],\n \"e5m2x2_from_half2\": [");
    for (int i = 0; i < n; ++i) printf("%s%u", i ? ", " : "", p5[i]);
    printf("],\n \"half2_from_e4m3x2\": [");
    for (int i = 0; i < 128; ++i) printf("%s%u", i ? ", " : "", q4[i]);
    printf("],\n \"half2_from_e5m2x2\": [");
    for (int i = 0; i < 128; ++i) printf("%s%u", i ? ", " : "", q5[i]);
    printf("]}\n");
    return 0;
}
