// Tensor-core kernels for tests/test_wmma.py: one wmma tile per warp (warp w reads tile w of each operand),
// across the operand types and layouts the executor supports. c = a . b + 2 c (tf32: a . b + 0.5).
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;
template <typename T, int M, int N, int K, typename LA, typename LB, typename ACC>
__device__ void body(const T* a, const T* b, ACC* c, int lda, int ldb, int ldc, bool colc) {
  wmma::fragment<wmma::matrix_a, M, N, K, T, LA> fa;
  wmma::fragment<wmma::matrix_b, M, N, K, T, LB> fb;
  wmma::fragment<wmma::accumulator, M, N, K, ACC> fc;
  int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  wmma::load_matrix_sync(fa, a + w * M * K, lda); wmma::load_matrix_sync(fb, b + w * K * N, ldb);
  wmma::load_matrix_sync(fc, c + w * M * N, ldc, colc ? wmma::mem_col_major : wmma::mem_row_major);
  for (int i = 0; i < fc.num_elements; i++) fc.x[i] = fc.x[i] * (ACC)2;
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c + w * M * N, fc, ldc, colc ? wmma::mem_col_major : wmma::mem_row_major);
}
extern "C" __global__ void h_rr(const half* a, const half* b, float* c) { body<half,16,16,16,wmma::row_major,wmma::row_major,float>(a,b,c,16,16,16,false); }
extern "C" __global__ void h_cc_colc(const half* a, const half* b, float* c) { body<half,16,16,16,wmma::col_major,wmma::col_major,float>(a,b,c,16,16,16,true); }
extern "C" __global__ void h32_rc(const half* a, const half* b, half* c) { body<half,32,8,16,wmma::row_major,wmma::col_major,half>(a,b,c,16,16,8,false); }
extern "C" __global__ void bf_cr(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c) { body<__nv_bfloat16,8,32,16,wmma::col_major,wmma::row_major,float>(a,b,c,8,32,8,true); }
extern "C" __global__ void s8_rc(const signed char* a, const signed char* b, int* c) { body<signed char,16,16,16,wmma::row_major,wmma::col_major,int>(a,b,c,16,16,16,false); }
extern "C" __global__ void u8_rr(const unsigned char* a, const unsigned char* b, int* c) { body<unsigned char,32,8,16,wmma::row_major,wmma::row_major,int>(a,b,c,16,8,8,false); }
extern "C" __global__ void f64_rc(const double* a, const double* b, double* c) { body<double,8,8,4,wmma::row_major,wmma::col_major,double>(a,b,c,4,4,8,true); }
extern "C" __global__ void tf32_rr(const float* a, const float* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
  int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  wmma::load_matrix_sync(fa, a + w*128, 8); wmma::load_matrix_sync(fb, b + w*128, 16);
  for (int i = 0; i < fa.num_elements; i++) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
  for (int i = 0; i < fb.num_elements; i++) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
  wmma::fill_fragment(fc, 0.5f);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c + w*256, fc, 16, wmma::mem_row_major);
}
