// A loop of double divisions (div.rn.f64: Newton steps in DFMA, a slow path for rare operands) and the same loop in
// float, for the SASS-level issue count (tests/test_fp64_pipe.py against validation/fp64_div_h200_ncu.csv):
// the launches and the ncu command: validation/microbench/fp64_div.py
extern "C" __global__ void div_f64(double *x, int iters)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v = x[i];
    for (int k = 0; k < iters; k++) v = v / 1.037 + 1.0;
    x[i] = v;
}

extern "C" __global__ void div_f32(float *x, int iters)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    for (int k = 0; k < iters; k++) v = v / 1.037f + 1.0f;
    x[i] = v;
}
