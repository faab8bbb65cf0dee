// multiplyKernel_rowwise - Kirk/Hwu ECE408 slides, "Each row of resultant matrix to be computed by one thread".
// a (ha x wa) * b (wa x wb) -> c (ha x wb), int matrices, row-major; one block of ha threads:
//     multiplyKernel_rowwise<<<1, ha>>>(d_a, d_b, d_c, wa, wb);
// Taken verbatim from the slide except for one fix marked below.

__global__ void multiplyKernel_rowwise(int * a, int * b, int * c, int wa, int wb)
{
    int ridA = threadIdx.x;
    int sum;
    for(int cidB = 0; cidB < wb; cidB++)
    {
        sum= 0;
        for(int k = 0; k< wa; k++)   // fix: the slide's `for(k = 0; ...)` uses k without declaring it
        {
            sum += (a[ridA * wa + k] * b[k * wb + cidB]);
        }
        c[ridA * wb+ cidB] = sum;
    }
}
