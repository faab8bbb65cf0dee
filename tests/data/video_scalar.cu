// The scalar video instructions (PTX ISA "Scalar Video Instructions"), one form a row: row r of o holds form r for
// every thread (row 3 with -D SATURATING_SHIFT). Run on a GPU by validation/microbench/video_scalar.py, by
// perfmodel in tests/test_lane_integer_ops.py.
#define V3(row, form) { unsigned r; asm(form " %0, %1, %2;" : "=r"(r) : "r"(x), "r"(y)); o[(row) * n + i] = r; }
#define V4(row, form) { unsigned r; asm(form " %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z)); o[(row) * n + i] = r; }

extern "C" __global__ void video(unsigned *o, const unsigned *a, const unsigned *b, const unsigned *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i], z = c[i];
    { unsigned r; asm("vshl.u32.u32.u32.clamp.add %0, %1, 4, %2;" : "=r"(r) : "r"(x), "r"(z)); o[i] = r; }  // ccminer jh512
    V3(1, "vshl.u32.u32.u32.wrap")
    V3(2, "vshl.u32.u32.u32.clamp")
#ifdef SATURATING_SHIFT
    V3(3, "vshl.u32.s32.u32.sat.clamp")      // measured; perfmodel refuses it (no rule found for the GPU's results)
#endif
    V3(4, "vshr.s32.s32.u32.clamp")
    V3(5, "vshr.u32.u32.u32.wrap")
    V4(6, "vshr.s32.s32.u32.sat.clamp.max")
    V3(7, "vadd.s32.s32.s32.sat")
    V3(8, "vadd.u32.u32.u32")
    V4(9, "vadd.u32.u32.u32.sat.add")
    V4(10, "vsub.u32.s32.u32.sat.max")
    V4(11, "vsub.s32.s32.s32.sat.min")
    V3(12, "vsub.s32.u32.u32")
    V4(13, "vabsdiff.u32.s32.s32.add")
    V3(14, "vabsdiff.u32.u32.u32.sat")
    V4(15, "vmin.s32.u32.s32.min")
    V3(16, "vmin.s32.s32.s32")
    V4(17, "vmax.u32.u32.u32.sat.add")
    V4(18, "vmax.s32.s32.s32.sat.max")
}
