// pictureKernel - Kirk/Hwu ECE408 slides, "Mapping Threads to Multidimensional Data": scales every pixel of an n x m picture
// (n pixels in x, m in y, row-major) by 2.0. The seed's case is a 76x62 picture with 16x16 blocks:
//     dim3 dimGrid(ceil(n/16.0), ceil(m/16.0), 1);   // 5, 4, 1 -> 20 blocks, 80x64 threads
//     dim3 dimBlock(16, 16, 1);
// The if statement leaves the 80*64 - 76*62 threads outside the picture idle. Verbatim from the slide.

__global__ void pictureKernel(float* d_Pin, float* d_Pout, int n, int m)
{
    // Calculate the row # of the d_Pin and d_Pout element to process
    int Row = blockIdx.y*blockDim.y + threadIdx.y;
    // Calculate the column # of the d_Pin and d_Pout element to process
    int Col = blockIdx.x*blockDim.x + threadIdx.x;
    // each thread computes one element of d_Pout if in range
    if ((Row < m) && (Col < n))
    {
        d_Pout[Row*n+Col] = 2*d_Pin[Row*n+Col];
    }
}
