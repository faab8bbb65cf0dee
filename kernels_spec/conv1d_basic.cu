// convolution_1D_basic_kernel - Kirk/Hwu ECE408 slides, "Constant Memory and Caching" (first version): the mask M is passed as
// a pointer to global memory. One thread per output element P[i]; ghost elements (N_start_point + j outside
// 0..Width-1) are skipped by the bounds test, i.e. taken as 0.
// Fix: the slide stores P[i] unconditionally; with a grid rounded up to whole blocks the last block's extra
// threads would write past the end of P, so the store has the missing bounds check.

__global__ void convolution_1D_basic_kernel(float *N, float *M, float *P,
    int Mask_Width, int Width) {

    int i = blockIdx.x*blockDim.x + threadIdx.x;

    float Pvalue = 0;
    int N_start_point = i - (Mask_Width/2);
    for (int j = 0; j < Mask_Width; j++) {
        if (N_start_point + j >= 0 && N_start_point + j < Width) {
            Pvalue += N[N_start_point + j] * M[j];
        }
    }
    if (i < Width)   // fix: bounds check missing on the slide
        P[i] = Pvalue;
}
