// SpMV_CSR - Kirk/Hwu ECE408 slides, "Parallel SpMV using CSR": one thread per row of the sparse matrix in CSR form
// (data, col_index, row_ptr), y = A x. Trip counts of the inner loop are the row lengths, so warps diverge on
// irregular matrices. Verbatim from the slide (line numbers dropped). The sequential version on the slide before
// it has the `introw` / `intelem` typos (missing spaces); this parallel kernel does not.

__global__ void SpMV_CSR(int num_rows, float *data, int *col_index,
    int *row_ptr, float *x, float *y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < num_rows) {
        float dot = 0;
        int row_start = row_ptr[row];
        int row_end = row_ptr[row+1];
        for (int elem = row_start; elem < row_end; elem++) {
            dot += data[elem] * x[col_index[elem]];
        }
        y[row] = dot;
    }
}
