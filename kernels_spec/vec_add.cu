// VecAdd - 'Parallel Programming' slides (after Hwu/Kirk, UIUC), "CUDA Program Execution": C = A + B, one thread per element.
// Fix: the slide launches one block (VecAdd<<<1, N>>>) with i = threadIdx.x and no bounds check, which breaks
// for N > 1024 and for a grid that is rounded up; here i spans a 1D grid of BLOCK_SIZE-thread blocks
// (cdiv(N, BLOCK_SIZE) of them), N is passed in, and `if (i < N)` is the missing bounds check.

__global__ void VecAdd(float* A, float* B, float* C, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        C[i] = A[i] + B[i];
}
