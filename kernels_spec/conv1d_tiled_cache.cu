// convolution_1D_tiled_cache_kernel, Strategy 3 - ECE408/CS483 Spring 2023 lecture 8: the block covers the output
// tile, only the core of the input tile goes into shared memory, and the halo cells are read from global
// memory (through the cache) inside the convolution loop. The mask M is in constant memory.
// Naming: the slide sizes N_ds with TILE_WIDTH; it is TILE_SIZE here, the library's name for a 1D tile, set to
// the block size (BLOCK_SIZE in the spec).
// Fixes: (1) the core load `N_ds[threadIdx.x] = N[i];` reads past the end of N in a partial last block: guarded
// (the element is never used then, because N_index < Width fails for it). (2) P[i] is stored only for i < Width.

#define TILE_SIZE 64
#define MAX_MASK_WIDTH 10
__constant__ float M[MAX_MASK_WIDTH];

__global__
void convolution_1D_tiled_cache_kernel(float *N, float *P, int Mask_Width, int Width) {

    int i = blockIdx.x * blockDim.x + threadIdx.x;

    __shared__ float  N_ds[TILE_SIZE];

    if (i < Width)   // fix: bounds check
        N_ds[threadIdx.x] = N[i];
    else
        N_ds[threadIdx.x] = 0.0f;

    __syncthreads();

    int radius = Mask_Width / 2;
    int This_tile_start_point = blockIdx.x * blockDim.x;
    int Next_tile_start_point = (blockIdx.x + 1) * blockDim.x;
    int N_start_point = i - radius;

    float Pvalue = 0;
    for (int j = 0; j < Mask_Width; j++) {
        int N_index = N_start_point + j;
        if (N_index >= 0  && N_index < Width) {
            if ((N_index >= This_tile_start_point) && (N_index < Next_tile_start_point))
                Pvalue += N_ds[threadIdx.x-radius+j] * M[j];
            else
                Pvalue += N[N_index] * M[j];
        }
    }
    if (i < Width)   // fix: bounds check missing on the slide
        P[i] = Pvalue;
}
