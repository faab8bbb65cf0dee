// SAXPY, y = a*x + y: the smallest "bring your own kernel" example for perfmodel.
// The host code below is a complete CUDA program; perfmodel sets it aside and analyses the kernel as it is:
//   perfmodel analyze examples/saxpy.cu --kernel saxpy --grid 'cdiv(n,256)' --block 256 -D n=1048576 \
//       --arg a=2.0 --arg x=float32[n]:random --arg y=float32[n]:random --device h100
#include <cstdio>
#include <cuda_runtime.h>

__global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}

int main()
{
    const int n = 1 << 20;
    float *x, *y;
    cudaMallocManaged(&x, n * sizeof(float));
    cudaMallocManaged(&y, n * sizeof(float));
    for (int i = 0; i < n; ++i) { x[i] = 1.0f; y[i] = 2.0f; }
    saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
    cudaDeviceSynchronize();
    printf("y[0] = %f (expected 4.0)\n", y[0]);
    cudaFree(x);
    cudaFree(y);
    return 0;
}
