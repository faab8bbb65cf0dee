// convolution_1D_tiled_kernel, Strategy 1 - ECE408/CS483 Spring 2023 lecture 8 ("Tiled Convolution"; also the Kirk/Hwu ECE408 slides):
// the block covers the output tile; the left halo, the core and the right halo of the input tile are loaded
// into shared memory (the halo by the last / first `radius` threads), then each thread computes one P element.
// The mask is in constant memory. TILE_SIZE sizes N_ds and equals the block size (BLOCK_SIZE in the spec).
// Fixes: (1) the slide loads the core with an unguarded `N_ds[radius + threadIdx.x] = N[i];  // bounds check is
// needed` - past the end of N in a partial last block; the slide's own guarded version ("Loading the internal
// elements") is used instead. (2) P[i] is stored only for i < Width.

#define TILE_SIZE 64
#define MAX_MASK_WIDTH 10
__constant__ float M[MAX_MASK_WIDTH];

__global__ void convolution_1D_tiled_kernel(float *N, float *P, int Mask_Width, int Width) {

    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int radius = Mask_Width / 2;

    __shared__ float  N_ds[TILE_SIZE + MAX_MASK_WIDTH - 1];

    int halo_index_left = (blockIdx.x - 1) * blockDim.x + threadIdx.x;
    if (threadIdx.x >= (blockDim.x - radius)) {
        N_ds[threadIdx.x - (blockDim.x - radius)] =
            (halo_index_left < 0) ? 0 : N[halo_index_left];
    }

    // fix: bounds check (the slide's "bounds check is needed")
    if (i < Width)
        N_ds[radius + threadIdx.x] = N[i];
    else
        N_ds[radius + threadIdx.x] = 0.0f;

    int halo_index_right = (blockIdx.x + 1) * blockDim.x + threadIdx.x;
    if (threadIdx.x < radius) {
        N_ds[radius + blockDim.x + threadIdx.x] =
            (halo_index_right >= Width) ? 0 : N[halo_index_right];
    }

    __syncthreads();

    float Pvalue = 0;
    for(int j = 0; j < Mask_Width; j++) {
        Pvalue += N_ds[threadIdx.x + j]*M[j];
    }
    if (i < Width)   // fix: bounds check missing on the slide
        P[i] = Pvalue;
}
