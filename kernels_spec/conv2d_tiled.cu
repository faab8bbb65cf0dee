// 2D tiled convolution, Strategy 2 - ECE408/CS483 Spring 2023 lecture 8 ("Parallelizing Tile Loading"): the block
// covers the *input* tile, (TILE_WIDTH + MASK_WIDTH - 1)^2 threads; every thread loads one input element
// (ghost cells outside the Width x Width image load 0), then only the TILE_WIDTH x TILE_WIDTH threads of the
// output tile compute, with the 2D mask Mc in constant memory:
//     dim3 dimBlock(TILE_WIDTH + (MASK_WIDTH-1), TILE_WIDTH + (MASK_WIDTH-1), 1);
//     dim3 dimGrid(ceil(P.width/(1.0*TILE_WIDTH)), ceil(P.height/(1.0*TILE_WIDTH)), 1);
// Assembled from the slide's fragments; changes: the slide hard-codes MASK_WIDTH = 5 (`row_o-2`, `i < 5`), which
// is written MASK_WIDTH/2 and MASK_WIDTH here; the loop counters i and j, undeclared on the slide, are declared;
// the kernel signature and the shared tile declaration, not shown on the slide, are added.

#define TILE_WIDTH 12
#define MASK_WIDTH 5
__constant__ float Mc[MASK_WIDTH][MASK_WIDTH];

__global__ void convolution_2D_tiled_kernel(float *N, float *P, int Width) {

    __shared__ float tile[TILE_WIDTH + MASK_WIDTH - 1][TILE_WIDTH + MASK_WIDTH - 1];

    int tx = threadIdx.x;
    int ty = threadIdx.y;

    int row_o = blockIdx.y * TILE_WIDTH + ty;
    int col_o = blockIdx.x * TILE_WIDTH + tx;

    int row_i = row_o - MASK_WIDTH / 2;   // slide: row_o-2 (MASK_WIDTH 5)
    int col_i = col_o - MASK_WIDTH / 2;

    float Pvalue = 0.0f;
    if((row_i >= 0) && (row_i < Width) &&
        (col_i >= 0) && (col_i < Width)) {
        tile[ty][tx] = N[row_i*Width + col_i];
    } else {
        tile[ty][tx] = 0.0f;
    }
    __syncthreads (); // wait for tile

    if (ty < TILE_WIDTH && tx < TILE_WIDTH) {
        for (int i = 0; i < MASK_WIDTH; i++) {
            for (int j = 0; j < MASK_WIDTH; j++) {
                Pvalue += Mc[i][j] * tile[i+ty][j+tx];
            }
        }
        if(row_o < Width && col_o < Width)
            P[row_o * Width + col_o] = Pvalue;
    } // end of if selecting output tile threads
}
