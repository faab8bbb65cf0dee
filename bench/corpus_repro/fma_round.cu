__global__ void k(const float *a, const float *b, const float *c, float *out)
{
    int i = threadIdx.x;
    out[i] = __fmaf_rn(a[i], b[i], c[i]);      // fma.rn.f32: one rounding on the GPU
}
