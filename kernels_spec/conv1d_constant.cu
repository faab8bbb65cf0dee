// convolution_1D_basic_kernel with the mask in constant memory - Kirk/Hwu ECE408 slides, "Constant Memory and Caching"
// (revised kernel). The host copies Mask_Width floats with cudaMemcpyToSymbol(M, h_M, Mask_Width*sizeof(float));
// the spec's constant initialiser plays that role (elements past Mask_Width stay 0).
// Fixes: the slide's kernel name is garbled ("convolution_1D_ba sic_kernel"), and P[i] is stored without the
// bounds check a rounded-up grid needs.

#define MAX_MASK_WIDTH 10
__constant__ float M[MAX_MASK_WIDTH];

__global__ void convolution_1D_basic_kernel(float *N, float *P, int Mask_Width,
    int Width) {

    int i = blockIdx.x*blockDim.x + threadIdx.x;

    float Pvalue = 0;
    int N_start_point = i - (Mask_Width/2);
    for (int j = 0; j < Mask_Width; j++) {
        if (N_start_point + j >= 0 && N_start_point + j < Width) {
            Pvalue += N[N_start_point + j]*M[j];
        }
    }
    if (i < Width)   // fix: bounds check missing on the slide
        P[i] = Pvalue;
}
