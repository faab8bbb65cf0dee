// The SGEMM tutorial's kernels 11 and 12 (siboehm/SGEMM_CUDA, vendored unchanged in sgemm_cuda/), compiled the way
// the tutorial compiles them: its src/kernels.cuh includes 10_kernel_warptiling.cuh, which defines WARPSIZE, before
// 11_kernel_double_buffering.cuh and 12_kernel_double_buffering.cuh, which use it. The kernels of this file:
//   sgemmDoubleBuffering<BM, BN, BK, WM, WN, WNITER, TM, TN, NUM_THREADS>(M, N, K, alpha, A, B, beta, C)
//   runSgemmDoubleBuffering2<BM, BN, BK, WM, WN, WNITER, TM, TN, NUM_THREADS>(M, N, K, alpha, A, B, beta, C)
#include "sgemm_cuda/src/kernels/10_kernel_warptiling.cuh"
#include "sgemm_cuda/src/kernels/11_kernel_double_buffering.cuh"
#include "sgemm_cuda/src/kernels/12_kernel_double_buffering.cuh"
