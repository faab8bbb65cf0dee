// A deliberately wrong SAXPY (it subtracts y): its outputs must fail the reference, and `perfmodel check`.
__global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] - y[i];
    }
}
