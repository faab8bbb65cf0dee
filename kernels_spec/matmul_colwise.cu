// multiplyKernel_colwise - Kirk/Hwu ECE408 slides, "Each column of resultant matrix to be computed by one thread".
// a (ha x wa) * b (wa x wb) -> c (ha x wb), int matrices, row-major; one block of wb threads:
//     multiplyKernel_colwise<<<1, wb>>>(d_a, d_b, d_c, ha, wa);
// Taken verbatim from the slide except for one fix marked below.

__global__ void multiplyKernel_colwise(int * a, int * b, int * c, int ha, int wa)
{
    int cidB = threadIdx.x;
    int wb = blockDim.x;
    int sum, k;
    for(int ridA = 0; ridA < ha; ridA++)   // fix: the slide's `for(ridA = 0; ...)` never declares ridA
    {
        sum = 0;
        for( k=0; k< wa; k++)
        {
            sum += (a[ridA * wa + k] * b[k * wb + cidB]);
        }
        c[ridA * wb + cidB] =sum;
    }
}
