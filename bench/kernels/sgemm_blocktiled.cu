// Register-blocked SGEMM: C = alpha * A.B + beta * C, row-major, M x K times K x N.
// Each block computes a BM x BN tile of C with (BM / TM) * (BN / TN) threads; each thread a TM x TN sub-tile held
// in registers. Per step of BK along K, the block stages a BM x BK tile of A and a BK x BN tile of B in shared
// memory. M, N and K must be multiples of BM, BN and BK (no bounds checks, like the usual tutorial kernel).
// Launch: grid (N / BN, M / BM), block ((BM / TM) * (BN / TN)).
template <int BM, int BN, int BK, int TM, int TN>
__global__ void sgemm_blocktiled(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                 float *C) {
    constexpr int THREADS = (BM / TM) * (BN / TN);
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];

    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;
    const int trow = threadIdx.x / (BN / TN);      // this thread's sub-tile row
    const int tcol = threadIdx.x % (BN / TN);

    A += row0 * K;
    B += col0;
    C += row0 * N + col0;

    float acc[TM * TN] = {0.0f};
    float a_reg[TM];
    float b_reg[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += THREADS)
            As[i] = A[(i / BK) * K + i % BK];
        for (int i = threadIdx.x; i < BK * BN; i += THREADS)
            Bs[i] = B[(i / BN) * N + i % BN];
        __syncthreads();
        A += BK;
        B += BK * N;
        for (int k = 0; k < BK; ++k) {
            for (int m = 0; m < TM; ++m)
                a_reg[m] = As[(trow * TM + m) * BK + k];
            for (int n = 0; n < TN; ++n)
                b_reg[n] = Bs[k * BN + tcol * TN + n];
            for (int m = 0; m < TM; ++m)
                for (int n = 0; n < TN; ++n)
                    acc[m * TN + n] += a_reg[m] * b_reg[n];
        }
        __syncthreads();
    }
    for (int m = 0; m < TM; ++m)
        for (int n = 0; n < TN; ++n) {
            float *c = &C[(trow * TM + m) * N + tcol * TN + n];
            *c = alpha * acc[m * TN + n] + beta * *c;
        }
}
