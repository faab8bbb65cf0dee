// convolution_1D_tiled_kernel, alternative Strategy 1 - ECE408/CS483 Spring 2023 lecture 8: the block covers the
// output tile and loads the TILE_SIZE + MASK_WIDTH - 1 input tile in two steps - every thread loads
// N[i - radius], then the first MASK_WIDTH - 1 threads load TILE_SIZE further on (`start += TILE_SIZE`).
// The mask Mc is in constant memory; MASK_WIDTH and TILE_SIZE are #defines (TILE_SIZE = the block size).
// Fix: P[i] is stored only for i < Width (missing bounds check on the slide).

#define TILE_SIZE 64
#define MASK_WIDTH 5
__constant__ float Mc[MASK_WIDTH];

__global__ void convolution_1D_tiled_kernel(float *N, float *P, int Width) {

    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int radius = MASK_WIDTH / 2;
    int start = i - radius;

    __shared__ float N_ds[TILE_SIZE + MASK_WIDTH - 1];

    if (0 <= start && Width > start) {          // all threads
        N_ds[threadIdx.x] = N[start];
    } else {
        N_ds[threadIdx.x] = 0.0f;
    }

    if (MASK_WIDTH - 1 > threadIdx.x) {        // some threads
        start += TILE_SIZE;
        if (Width > start) {
            N_ds[threadIdx.x + TILE_SIZE] = N[start];
        } else {
            N_ds[threadIdx.x + TILE_SIZE] = 0.0f;
        }
    }

    __syncthreads();

    float Pvalue = 0.0f;
    for (int j = 0; MASK_WIDTH > j; j++) {
        Pvalue += N_ds[threadIdx.x + j] * Mc[j];
    }
    if (i < Width)   // fix: bounds check missing on the slide
        P[i] = Pvalue;
}
