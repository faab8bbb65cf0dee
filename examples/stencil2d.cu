// A 2D 5-point stencil (Laplacian-like update) over an nx x ny grid, zero outside the grid. Each block loads a
// TILE x TILE tile plus a one-element halo on each side into shared memory, then every thread reads its four
// neighbours from the tile:  out = 0.25 * (left + right + up + down) - centre.
// Launch: block (TILE, TILE), grid (cdiv(nx, TILE), cdiv(ny, TILE)).
#ifndef TILE
#define TILE 16
#endif

__global__ void stencil5(const float *in, float *out, int nx, int ny)
{
    __shared__ float tile[TILE + 2][TILE + 2];
    const int gx = blockIdx.x * TILE + threadIdx.x;
    const int gy = blockIdx.y * TILE + threadIdx.y;
    const int lx = threadIdx.x + 1;
    const int ly = threadIdx.y + 1;
    const bool inside = gx < nx && gy < ny;

    tile[ly][lx] = inside ? in[gy * nx + gx] : 0.0f;
    // the halo: the edge threads of the block load the neighbouring tiles' edge elements
    if (threadIdx.x == 0)
        tile[ly][0] = (gx > 0 && gy < ny) ? in[gy * nx + gx - 1] : 0.0f;
    if (threadIdx.x == TILE - 1)
        tile[ly][TILE + 1] = (gx + 1 < nx && gy < ny) ? in[gy * nx + gx + 1] : 0.0f;
    if (threadIdx.y == 0)
        tile[0][lx] = (gy > 0 && gx < nx) ? in[(gy - 1) * nx + gx] : 0.0f;
    if (threadIdx.y == TILE - 1)
        tile[TILE + 1][lx] = (gy + 1 < ny && gx < nx) ? in[(gy + 1) * nx + gx] : 0.0f;
    __syncthreads();

    if (inside) {
        out[gy * nx + gx] = 0.25f * (tile[ly][lx - 1] + tile[ly][lx + 1] + tile[ly - 1][lx] + tile[ly + 1][lx])
                            - tile[ly][lx];
    }
}
