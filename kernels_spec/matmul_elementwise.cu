// multiplyKernel_elementwise - Kirk/Hwu ECE408 slides, "Each element of resultant matrix to be computed by one thread".
// a (ha x wa) * b (wa x wb) -> c (ha x wb), int matrices, row-major; one block, 2D (wb x ha) threads:
//     multiplyKernel_elementwise<<<(1, 1), (wb, ha)>>>(d_a, d_b, d_c, wa);
// The slide's 2x3 . 3x3 example gives [[23,28,34],[87,84,76]]. Verbatim from the slide.

__global__ void multiplyKernel_elementwise(int * a, int * b, int * c, int wa)
{
    int ridA = threadIdx.y;
    int cidB= threadIdx.x;
    int wb = blockDim.x;
    int sum=0, k;

    for( k = 0; k < wa; k++)
    {
        sum += (a[ridA * wa + k] * b[k * wb + cidB]);
    }
    c[ridA * wb + cidB] =sum;
}
