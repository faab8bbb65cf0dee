// Dependent-issue latency per instruction class (issue 13 item 5: the latency chain of a lone warp).
//
// Each kernel runs one warp through N steps of a chain in which every step needs the previous one's result, so
// clock64() over the steps is the latency of one step: the cycles from an instruction's issue to the issue of the
// next instruction that reads its result. The steps are inline PTX (asm volatile: NVVM keeps each one and in
// order; ptxas keeps the dependence, which is the point), in an unrolled loop of UNROLL steps per trip, so the loop
// counter's own instructions are off the chain (they are independent and issue in the stalls).
//
// Classes (perfmodel.model.mlp.latency_class):
//   fp32    fma.rn.f32 x, x, a, b                          (FFMA)
//   alu     mad.lo.s32 x, x, a, b                          (IMAD)
//   alu_add add.s32 x, x, a  then xor.b32 x, x, b         (IADD3 / LOP3, two steps per PTX pair)
//   fp64    fma.rn.f64 x, x, a, b                          (DFMA)
//   sfu     ex2.approx.ftz.f32 x, x                        (MUFU.EX2)
//   fp_div  div.rn.f32 x, a, x                             (the IEEE division sequence)
//   int_div div.s32 x, a, x                                (the integer division sequence)
//   cvt     cvt.rn.f32.s32 then cvt.rzi.s32.f32            (I2F + F2I: two steps per pair)
//   shared_load  ld.shared.u32 x, [x]                      (LDS pointer chase)
//   const_load   ld.const.u32 x, [tbl + x]                 (LDC pointer chase)
//   warp    shfl.sync.bfly.b32 x, x, 1, 0x1f, -1           (SHFL)
//   setp    setp.ne.s32 p, x, a then selp.s32 x, b, c, p   (ISETP + SEL: two steps per pair)
//   barrier bar.sync 0, back to back, in a block of 1 and of 8 warps (BAR.SYNC)
#define UNROLL 64

__constant__ unsigned int ctable[256];

#define TIMED(setup, step, result)                                                     \
    setup;                                                                              \
    for (int i = 0; i < 4; ++i) {                                                       \
        _Pragma("unroll") for (int u = 0; u < UNROLL; ++u) { step; }                   \
    }                                                                                   \
    long long t0 = clock64();                                                           \
    for (int i = 0; i < trips; ++i) {                                                   \
        _Pragma("unroll") for (int u = 0; u < UNROLL; ++u) { step; }                   \
    }                                                                                   \
    long long t1 = clock64();                                                           \
    if (threadIdx.x == 0) cycles[0] = t1 - t0;                                         \
    sink[threadIdx.x] = (result);

extern "C" __global__ void lat_fp32(int trips, float a, float b, long long *cycles, float *sink)
{
    float x = threadIdx.x;
    TIMED(, asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b)), x)
}

extern "C" __global__ void lat_alu(int trips, int a, int b, long long *cycles, int *sink)
{
    int x = threadIdx.x;
    TIMED(, asm volatile("mad.lo.s32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b)), x)
}

extern "C" __global__ void lat_alu_add(int trips, int a, int b, long long *cycles, int *sink)
{
    int x = threadIdx.x;
    TIMED(, asm volatile("add.s32 %0, %0, %1;\n\txor.b32 %0, %0, %2;" : "+r"(x) : "r"(a), "r"(b)), x)
}

extern "C" __global__ void lat_fp64(int trips, double a, double b, long long *cycles, double *sink)
{
    double x = threadIdx.x;
    TIMED(, asm volatile("fma.rn.f64 %0, %0, %1, %2;" : "+d"(x) : "d"(a), "d"(b)), x)
}

extern "C" __global__ void lat_sfu(int trips, float a, float b, long long *cycles, float *sink)
{
    float x = threadIdx.x * 1e-3f;
    TIMED(, asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x)), x)
}

extern "C" __global__ void lat_fp_div(int trips, float a, float b, long long *cycles, float *sink)
{
    float x = 1.0f + threadIdx.x;
    TIMED(, asm volatile("div.rn.f32 %0, %1, %0;" : "+f"(x) : "f"(a)), x)
}

extern "C" __global__ void lat_int_div(int trips, int a, int b, long long *cycles, int *sink)
{
    int x = 7 + threadIdx.x;
    TIMED(, asm volatile("div.s32 %0, %1, %0;\n\tor.b32 %0, %0, %2;" : "+r"(x) : "r"(a), "r"(b)), x)
}

extern "C" __global__ void lat_cvt(int trips, float a, float b, long long *cycles, int *sink)
{
    int x = threadIdx.x;
    float f = 0.0f;
    TIMED(, asm volatile("cvt.rn.f32.s32 %1, %0;\n\tcvt.rzi.s32.f32 %0, %1;" : "+r"(x), "=f"(f)), x + (int)f)
}

extern "C" __global__ void lat_shared_load(int trips, int a, int b, long long *cycles, unsigned int *sink)
{
    __shared__ unsigned int s[1024];
    for (int i = threadIdx.x; i < 1024; i += blockDim.x)
        s[i] = (unsigned int)(__cvta_generic_to_shared(&s[(i + 1) & 1023]));
    __syncthreads();
    unsigned int x = (unsigned int)__cvta_generic_to_shared(&s[threadIdx.x]);
    TIMED(, asm volatile("ld.shared.u32 %0, [%0];" : "+r"(x)), x)
}

extern "C" __global__ void lat_const_load(int trips, int a, int b, long long *cycles, unsigned int *sink)
{
    // ctable[i] = 4 * ((i + 1) % 256): a byte offset into the table itself
    unsigned long long base = (unsigned long long)ctable;
    unsigned int x = 0;
    TIMED(, asm volatile("{ .reg .u64 p; cvt.u64.u32 p, %0; add.u64 p, p, %1; ld.const.u32 %0, [p]; }"
                         : "+r"(x) : "l"(base)), x)
}

extern "C" __global__ void lat_warp(int trips, int a, int b, long long *cycles, int *sink)
{
    int x = threadIdx.x;
    TIMED(, asm volatile("shfl.sync.bfly.b32 %0, %0, 1, 0x1f, -1;" : "+r"(x)), x)
}

extern "C" __global__ void lat_setp(int trips, int a, int b, long long *cycles, int *sink)
{
    int x = threadIdx.x;
    TIMED(, asm volatile("{ .reg .pred p; setp.ne.s32 p, %0, %1; selp.s32 %0, %2, %1, p; }" : "+r"(x)
                         : "r"(a), "r"(b)), x)
}

extern "C" __global__ void lat_barrier(int trips, int a, int b, long long *cycles, int *sink)
{
    int x = threadIdx.x;
    TIMED(, asm volatile("bar.sync 0;" ::: "memory"), x)
}
