// Matrix transposes (perfmodel validation, issue 13 item 3): out = in^T for a rows x cols float matrix, one
// thread per element, TILE x TILE blocks. transpose_naive reads rows (coalesced) and writes columns: each warp's
// store touches 32 sectors. transpose_read_scattered does the opposite. transpose_shared goes through a padded
// shared-memory tile so both sides are coalesced.
#define TILE 32

__global__ void transpose_naive(const float* in, float* out, int rows, int cols)
{
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    if (x < cols && y < rows)
        out[x * rows + y] = in[y * cols + x];
}

__global__ void transpose_read_scattered(const float* in, float* out, int rows, int cols)
{
    int x = blockIdx.x * TILE + threadIdx.x;   // column of out = row of in
    int y = blockIdx.y * TILE + threadIdx.y;
    if (x < rows && y < cols)
        out[y * rows + x] = in[x * cols + y];
}

__global__ void transpose_shared(const float* in, float* out, int rows, int cols)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    if (x < cols && y < rows)
        tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    if (x < rows && y < cols)
        out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}
