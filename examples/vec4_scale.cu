// out = alpha * in, with 16-byte float4 loads and stores: a kernel template over the element type and the
// number of float4s each thread handles. Analyse one instantiation with a name expression:
//   --kernel 'scale_vec4<float, 2>'   (n4 = n / 4 float4 elements; grid cdiv(n4, 2 * block))
#include <cuda_runtime.h>

template <typename T, int PER_THREAD>
__global__ void scale_vec4(const T *__restrict__ in, T *__restrict__ out, T alpha, int n4)
{
    const float4 *in4 = reinterpret_cast<const float4 *>(in);
    float4 *out4 = reinterpret_cast<float4 *>(out);
    int i = blockIdx.x * blockDim.x * PER_THREAD + threadIdx.x;
#pragma unroll
    for (int k = 0; k < PER_THREAD; ++k, i += blockDim.x) {
        if (i < n4) {
            float4 v = in4[i];
            v.x *= alpha;
            v.y *= alpha;
            v.z *= alpha;
            v.w *= alpha;
            out4[i] = v;
        }
    }
}

// the host's instantiation, as a program would launch it
void launch(const float *in, float *out, float alpha, int n)
{
    const int n4 = n / 4, block = 256;
    scale_vec4<float, 2><<<(n4 + 2 * block - 1) / (2 * block), block>>>(in, out, alpha, n4);
}
