// Warp-level matrix instructions written as real code writes them (inline PTX): ldmatrix and mma.sync, whose
// fragment layouts the PTX ISA specifies ("Warp-level matrix fragment layouts": groupID = laneid >> 2,
// threadID_in_group = laneid % 4). The fragments are built and read with the PTX ISA's formulas, so the outputs say
// whether those formulas hold. validation/microbench/mma_sync.py ran these on an H200 (validation/mma_sync_h200.npz);
// tests/test_mma_sync.py runs them on perfmodel's executor and compares.
#include <cstdint>

__device__ __forceinline__ unsigned smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned pack16(const unsigned short *m, int i, int j) {   // elements i, j: low, high
    return (unsigned)m[i] | ((unsigned)m[j] << 16);
}

// ---- ldmatrix: every lane writes the registers it received --------------------------------------------------------
// src: 4 matrices of 8 x 8 16-bit elements, 512 values; in shared memory row r of matrix q sits at
// q * 128 + ((3 r) % 8) * 16 halves (rows 32 B apart, in a permuted order, each row's own 8 elements contiguous).
// Lane l gives the address of row l % 8 of matrix l / 8.
#define LDM_PROLOGUE                                                                                   \
    __shared__ __align__(16) unsigned short s[512];                                                    \
    for (int i = threadIdx.x; i < 512; i += 32) s[i] = 0xFFFF;                                         \
    __syncthreads();                                                                                   \
    for (int i = threadIdx.x; i < 256; i += 32) {                                                      \
        int q = i / 64, r = (i / 8) % 8, c = i % 8;                                                    \
        s[q * 128 + ((3 * r) % 8) * 16 + c] = src[i];                                                  \
    }                                                                                                  \
    __syncthreads();                                                                                   \
    int lane = threadIdx.x;                                                                            \
    unsigned addr = smem(s + (lane / 8) * 128 + ((3 * (lane % 8)) % 8) * 16);

extern "C" __global__ void ldm_x1(const unsigned short *src, unsigned *out) {
    LDM_PROLOGUE
    unsigned r0;
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r0) : "r"(addr));
    out[lane] = r0;
}
extern "C" __global__ void ldm_x2(const unsigned short *src, unsigned *out) {
    LDM_PROLOGUE
    unsigned r0, r1;
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
    out[2 * lane] = r0; out[2 * lane + 1] = r1;
}
extern "C" __global__ void ldm_x4(const unsigned short *src, unsigned *out) {
    LDM_PROLOGUE
    unsigned r0, r1, r2, r3;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
    out[4 * lane] = r0; out[4 * lane + 1] = r1; out[4 * lane + 2] = r2; out[4 * lane + 3] = r3;
}
extern "C" __global__ void ldm_x1_trans(const unsigned short *src, unsigned *out) {
    LDM_PROLOGUE
    unsigned r0;
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r0) : "r"(addr));
    out[lane] = r0;
}
extern "C" __global__ void ldm_x2_trans(const unsigned short *src, unsigned *out) {
    LDM_PROLOGUE
    unsigned r0, r1;
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
    out[2 * lane] = r0; out[2 * lane + 1] = r1;
}
extern "C" __global__ void ldm_x4_trans(const unsigned short *src, unsigned *out) {
    LDM_PROLOGUE
    unsigned r0, r1, r2, r3;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
    out[4 * lane] = r0; out[4 * lane + 1] = r1; out[4 * lane + 2] = r2; out[4 * lane + 3] = r3;
}

// ---- stmatrix (sm_90): register q of lane l holds (l << 8 | q << 4 | h) in half h; lane l gives the address of row
// l % 8 of matrix l / 8 in the ldmatrix layout above; the whole shared array is written out
#define STM_PROLOGUE                                                                                   \
    __shared__ __align__(16) unsigned short s[512];                                                    \
    for (int i = threadIdx.x; i < 512; i += 32) s[i] = 0xFFFF;                                         \
    __syncthreads();                                                                                   \
    int lane = threadIdx.x;                                                                            \
    unsigned addr = smem(s + (lane / 8) * 128 + ((3 * (lane % 8)) % 8) * 16);                          \
    unsigned v[4];                                                                                     \
    for (int q = 0; q < 4; ++q) v[q] = (unsigned)((lane << 8) | (q << 4)) | ((unsigned)((lane << 8) | (q << 4) | 1) << 16);
#define STM_EPILOGUE                                                                                   \
    __syncthreads();                                                                                   \
    for (int i = threadIdx.x; i < 512; i += 32) out[i] = s[i];

extern "C" __global__ void stm_x1(unsigned short *out) {
    STM_PROLOGUE
    asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};\n" :: "r"(addr), "r"(v[0]));
    STM_EPILOGUE
}
extern "C" __global__ void stm_x2_trans(unsigned short *out) {
    STM_PROLOGUE
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};\n" :: "r"(addr), "r"(v[0]), "r"(v[1]));
    STM_EPILOGUE
}
extern "C" __global__ void stm_x4(unsigned short *out) {
    STM_PROLOGUE
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
                 :: "r"(addr), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3]));
    STM_EPILOGUE
}
extern "C" __global__ void stm_x4_trans(unsigned short *out) {
    STM_PROLOGUE
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n"
                 :: "r"(addr), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3]));
    STM_EPILOGUE
}

// ---- mma.sync: fragments built from row-major A (M x K), B (K x N), C (M x N) by the PTX ISA's formulas ----------
// g = groupID, t = threadID_in_group; D is written back with C's formula.
extern "C" __global__ void mma_m16n8k16_f16_f32(const unsigned short *A, const unsigned short *B, const float *C,
                                                float *D) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    unsigned short bt[4] = {B[(2 * t) * 8 + g], B[(2 * t + 1) * 8 + g], B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g]};
    unsigned a0 = pack16(A, g * 16 + 2 * t, g * 16 + 2 * t + 1), a1 = pack16(A, (g + 8) * 16 + 2 * t, (g + 8) * 16 + 2 * t + 1);
    unsigned a2 = pack16(A, g * 16 + 2 * t + 8, g * 16 + 2 * t + 9), a3 = pack16(A, (g + 8) * 16 + 2 * t + 8, (g + 8) * 16 + 2 * t + 9);
    unsigned b0 = pack16(bt, 0, 1), b1 = pack16(bt, 2, 3);
    float c0 = C[g * 8 + 2 * t], c1 = C[g * 8 + 2 * t + 1], c2 = C[(g + 8) * 8 + 2 * t], c3 = C[(g + 8) * 8 + 2 * t + 1];
    float d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%10, %11, %12, %13};\n"
                 : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
    D[g * 8 + 2 * t] = d0; D[g * 8 + 2 * t + 1] = d1; D[(g + 8) * 8 + 2 * t] = d2; D[(g + 8) * 8 + 2 * t + 1] = d3;
}

extern "C" __global__ void mma_m16n8k16_bf16_f32(const unsigned short *A, const unsigned short *B, const float *C,
                                                 float *D) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    unsigned short bt[4] = {B[(2 * t) * 8 + g], B[(2 * t + 1) * 8 + g], B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g]};
    unsigned a0 = pack16(A, g * 16 + 2 * t, g * 16 + 2 * t + 1), a1 = pack16(A, (g + 8) * 16 + 2 * t, (g + 8) * 16 + 2 * t + 1);
    unsigned a2 = pack16(A, g * 16 + 2 * t + 8, g * 16 + 2 * t + 9), a3 = pack16(A, (g + 8) * 16 + 2 * t + 8, (g + 8) * 16 + 2 * t + 9);
    unsigned b0 = pack16(bt, 0, 1), b1 = pack16(bt, 2, 3);
    float c0 = C[g * 8 + 2 * t], c1 = C[g * 8 + 2 * t + 1], c2 = C[(g + 8) * 8 + 2 * t], c3 = C[(g + 8) * 8 + 2 * t + 1];
    float d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%10, %11, %12, %13};\n"
                 : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
    D[g * 8 + 2 * t] = d0; D[g * 8 + 2 * t + 1] = d1; D[(g + 8) * 8 + 2 * t] = d2; D[(g + 8) * 8 + 2 * t + 1] = d3;
}

// m16n8k8, f16 accumulator: A 16 x 8, B 8 x 8, C / D 16 x 8 as f16x2 pairs (c0 c1 | c2 c3)
extern "C" __global__ void mma_m16n8k8_f16_f16(const unsigned short *A, const unsigned short *B, const unsigned short *C,
                                               unsigned short *D) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    unsigned short bt[2] = {B[(2 * t) * 8 + g], B[(2 * t + 1) * 8 + g]};
    unsigned a0 = pack16(A, g * 8 + 2 * t, g * 8 + 2 * t + 1), a1 = pack16(A, (g + 8) * 8 + 2 * t, (g + 8) * 8 + 2 * t + 1);
    unsigned b0 = pack16(bt, 0, 1);
    unsigned c0 = pack16(C, g * 8 + 2 * t, g * 8 + 2 * t + 1), c1 = pack16(C, (g + 8) * 8 + 2 * t, (g + 8) * 8 + 2 * t + 1);
    unsigned d0, d1;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3}, {%4}, {%5, %6};\n"
                 : "=r"(d0), "=r"(d1) : "r"(a0), "r"(a1), "r"(b0), "r"(c0), "r"(c1));
    D[g * 8 + 2 * t] = d0 & 0xFFFF; D[g * 8 + 2 * t + 1] = d0 >> 16;
    D[(g + 8) * 8 + 2 * t] = d1 & 0xFFFF; D[(g + 8) * 8 + 2 * t + 1] = d1 >> 16;
}

// m16n8k8 tf32: A 16 x 8 (a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)), B 8 x 8 (b0 (t, g), b1 (t + 4, g))
extern "C" __global__ void mma_m16n8k8_tf32_f32(const float *A, const float *B, const float *C, float *D) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    unsigned a0 = __float_as_uint(A[g * 8 + t]), a1 = __float_as_uint(A[(g + 8) * 8 + t]);
    unsigned a2 = __float_as_uint(A[g * 8 + t + 4]), a3 = __float_as_uint(A[(g + 8) * 8 + t + 4]);
    unsigned b0 = __float_as_uint(B[t * 8 + g]), b1 = __float_as_uint(B[(t + 4) * 8 + g]);
    float c0 = C[g * 8 + 2 * t], c1 = C[g * 8 + 2 * t + 1], c2 = C[(g + 8) * 8 + 2 * t], c3 = C[(g + 8) * 8 + 2 * t + 1];
    float d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%10, %11, %12, %13};\n"
                 : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
    D[g * 8 + 2 * t] = d0; D[g * 8 + 2 * t + 1] = d1; D[(g + 8) * 8 + 2 * t] = d2; D[(g + 8) * 8 + 2 * t + 1] = d3;
}

// m16n8k32 s8: A 16 x 32 (a_i: row g for i < 4 or 8 <= i < 12, else g + 8; col 4 t + (i & 3), + 16 for i >= 8),
// B 32 x 8 (b_i: row 4 t + (i & 3), + 16 for i >= 4; col g), C / D s32 as the f32 accumulator
extern "C" __global__ void mma_m16n8k32_s8_s32(const signed char *A, const signed char *B, const int *C, int *D) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    unsigned a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
    for (int i = 0; i < 16; ++i) {
        int row = (i < 4 || (i >= 8 && i < 12)) ? g : g + 8;
        int col = 4 * t + (i & 3) + (i >= 8 ? 16 : 0);
        a[i / 4] |= (unsigned)(unsigned char)A[row * 32 + col] << (8 * (i % 4));
    }
    for (int i = 0; i < 8; ++i) {
        int row = 4 * t + (i & 3) + (i >= 4 ? 16 : 0);
        b[i / 4] |= (unsigned)(unsigned char)B[row * 8 + g] << (8 * (i % 4));
    }
    int c0 = C[g * 8 + 2 * t], c1 = C[g * 8 + 2 * t + 1], c2 = C[(g + 8) * 8 + 2 * t], c3 = C[(g + 8) * 8 + 2 * t + 1];
    int d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%10, %11, %12, %13};\n"
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c0), "r"(c1), "r"(c2), "r"(c3));
    D[g * 8 + 2 * t] = d0; D[g * 8 + 2 * t + 1] = d1; D[(g + 8) * 8 + 2 * t] = d2; D[(g + 8) * 8 + 2 * t + 1] = d3;
}

// m8n8k4 f64: A 8 x 4 (a0 (g, t)), B 4 x 8 (b0 (t, g)), C / D 8 x 8 (c0 (g, 2 t), c1 (g, 2 t + 1))
extern "C" __global__ void mma_m8n8k4_f64(const double *A, const double *B, const double *C, double *D) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    double a0 = A[g * 4 + t], b0 = B[t * 8 + g], c0 = C[g * 8 + 2 * t], c1 = C[g * 8 + 2 * t + 1], d0, d1;
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%4, %5};\n"
                 : "=d"(d0), "=d"(d1) : "d"(a0), "d"(b0), "d"(c0), "d"(c1));
    D[g * 8 + 2 * t] = d0; D[g * 8 + 2 * t + 1] = d1;
}

// ---- a tile GEMM as tutorials write it: ldmatrix.x4 for A, ldmatrix.x2.trans for B, mma.sync, C by formula -----
// C (M x N, f32) = A (M x K, f16, row-major) B (K x N, f16, row-major); one warp per 16 x 8 tile of C, K in steps
// of 16 staged in padded shared tiles.
extern "C" __global__ void hgemm_ldmatrix_mma(const unsigned short *A, const unsigned short *B, float *C, int M, int N,
                                              int K) {
    __shared__ __align__(16) unsigned short sA[16][16 + 8];
    __shared__ __align__(16) unsigned short sB[16][8 + 8];
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    int row0 = blockIdx.y * 16, col0 = blockIdx.x * 8;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = lane; i < 256; i += 32) sA[i / 16][i % 16] = A[(row0 + i / 16) * K + k0 + i % 16];
        for (int i = lane; i < 128; i += 32) sB[i / 8][i % 8] = B[(k0 + i / 8) * N + col0 + i % 8];
        __syncthreads();
        unsigned a0, a1, a2, a3, b0, b1;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(smem(&sA[lane % 16][(lane / 16) * 8])));
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                     : "=r"(b0), "=r"(b1) : "r"(smem(&sB[lane % 16][0])));
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                     "{%0, %1, %2, %3};\n"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        __syncthreads();
    }
    C[(row0 + g) * N + col0 + 2 * t] = acc[0];
    C[(row0 + g) * N + col0 + 2 * t + 1] = acc[1];
    C[(row0 + g + 8) * N + col0 + 2 * t] = acc[2];
    C[(row0 + g + 8) * N + col0 + 2 * t + 1] = acc[3];
}
