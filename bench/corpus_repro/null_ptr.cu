__global__ void k(float *out, const unsigned *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in ? (float)in[i] : (float)i;    // the host passes in = NULL
}
