"""C semantics of the simulator: integer arithmetic, floats, control flow, device functions, atomics, memory."""
import numpy as np
import pytest

from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate


def run(src, grid, block, args, **kw):
    program = load_kernel(source=src)
    return simulate(program, grid, block, args, **kw)


def test_integer_division_modulo_shift_truncate_toward_zero():
    src = r"""
    __global__ void k(int *a, int *b, int *q, int *r, int *s, int *c, unsigned int *u) {
        int i = threadIdx.x;
        q[i] = a[i] / b[i];
        r[i] = a[i] % b[i];
        s[i] = a[i] >> 1;
        c[i] = (int)(-7.9f + i);
        u[i] = (unsigned int)a[i] - 1u;
    }"""
    a = np.array([-7, 7, -7, 7, -1, 0, -8, 2147483647], np.int32)
    b = np.array([2, -2, -2, 2, 3, 5, 3, 1], np.int32)
    q, r, s, c = (np.zeros(8, np.int32) for _ in range(4))
    u = np.zeros(8, np.uint32)
    run(src, 1, 8, [a, b, q, r, s, c, u])
    assert q.tolist() == [-3, -3, 3, 3, 0, 0, -2, 2147483647]
    assert r.tolist() == [-1, 1, -1, 1, -1, 0, -2, 0]
    assert s.tolist() == [-4, 3, -4, 3, -1, 0, -4, 1073741823]       # arithmetic shift, as nvcc
    assert c.tolist() == [int(-7.9 + i) for i in range(8)]              # float->int truncates toward zero
    assert u.tolist() == [(int(x) - 1) % 2**32 for x in a]              # unsigned wraps


def test_int32_wraparound_and_unsigned_index_arithmetic():
    src = r"""
    __global__ void k(int *o, unsigned int *uo) {
        int big = 2147483647;
        o[0] = big + 1;
        o[1] = (blockIdx.x - 1) * blockDim.x + threadIdx.x;   // unsigned wrap, then back to int: negative
        uo[0] = 0u - 1u;
        o[2] = -17 / 4 * 4 + -17 % 4;
    }"""
    o = np.zeros(3, np.int32)
    uo = np.zeros(1, np.uint32)
    run(src, 1, 1, [o, uo])
    assert o.tolist() == [-2147483648, -1, -17]
    assert uo[0] == 2**32 - 1


def test_double_literal_promotes_then_rounds_to_float():
    src = r"""
    __global__ void k(float *x, float *y, double *d) {
        int i = threadIdx.x;
        y[i] = 2.0 * x[i] + 0.1;
        d[i] = x[i] * 0.1;
    }"""
    x = np.linspace(-3, 3, 32).astype(np.float32)
    y = np.zeros(32, np.float32)
    d = np.zeros(32, np.float64)
    r = run(src, 1, 32, [x, y, d])
    assert np.array_equal(y, (2.0 * x.astype(np.float64) + 0.1).astype(np.float32))
    assert np.array_equal(d, x.astype(np.float64) * 0.1)
    assert r.counts.fp64_ops > 0


def test_divergent_if_else_loops_break_continue_return():
    src = r"""
    __device__ int collatz(int n) {
        int steps = 0;
        while (n != 1) {
            if (n % 2 == 0) n = n / 2; else n = 3 * n + 1;
            steps++;
            if (steps > 1000) return -1;
        }
        return steps;
    }
    __global__ void k(int *out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        int acc = 0;
        for (int j = 0; j < 100; j++) {
            if (j % 3 == 0) continue;
            if (j > i) break;
            acc += j;
        }
        out[2 * i] = acc;
        out[2 * i + 1] = collatz(i + 1);
    }"""
    n = 70
    out = np.zeros(2 * n, np.int32)
    res = run(src, 3, 32, [out, n])

    def collatz(v):
        s = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        return s
    for i in range(n):
        assert out[2 * i] == sum(j for j in range(min(i, 99) + 1) if j % 3 != 0), i
        assert out[2 * i + 1] == collatz(i + 1)
    assert res.counts.divergent_branches > 0
    assert res.counts.idle_threads == 96 - 70


def test_ternary_and_short_circuit_only_evaluate_the_taken_side():
    # N[-1] and N[n] would be out of bounds: the ternary and && must not load them
    src = r"""
    __global__ void k(float *N, float *P, int n) {
        int i = threadIdx.x;
        float left = (i - 1 < 0) ? 0.0f : N[i - 1];
        float right = (i + 1 < n && N[i + 1] > 0.0f) ? N[i + 1] : 0.0f;
        P[i] = left + right;
    }"""
    N = np.arange(1, 9, dtype=np.float32)
    P = np.zeros(8, np.float32)
    r = run(src, 1, 8, [N, P, 8])
    expect = np.array([(N[i - 1] if i > 0 else 0) + (N[i + 1] if i + 1 < 8 else 0) for i in range(8)], np.float32)
    assert np.array_equal(P, expect)
    # loads: N[i-1] by 7 lanes, N[i+1] > 0 by 7 lanes; the second read of N[i+1] is the same load's register in
    # the PTX (NVVM keeps the value: `ld.global.f32 %f3, [%rd1+8]` once, then `mov.f32 %f11, %f3`), so 14
    assert r.counts.global_["loads"] == 14


def test_math_functions_min_max_and_casts():
    src = r"""
    __global__ void k(float *x, float *y, int *m) {
        int i = threadIdx.x;
        y[i] = sqrtf(fabsf(x[i])) + fmaxf(x[i], 0.0f) + expf(-x[i] * x[i]);
        m[i] = max(min(i, 5), 2) + abs(i - 4);
    }"""
    x = np.linspace(-2, 2, 16).astype(np.float32)
    y = np.zeros(16, np.float32)
    m = np.zeros(16, np.int32)
    r = run(src, 1, 16, [x, y, m])
    ref = np.sqrt(np.abs(x)) + np.maximum(x, 0) + np.exp(-x * x)
    assert np.allclose(y, ref, rtol=1e-6)
    assert m.tolist() == [max(min(i, 5), 2) + abs(i - 4) for i in range(16)]
    assert r.counts.fp_ops["special"] == 32            # sqrtf and expf
    assert r.counts.fp_ops["add"] == 32                # two float adds per thread


def test_fma_contraction_counts_one_fma_of_two_flops():
    # NVRTC contracts a product feeding one add/sub into fma.rn.f32 (-fmad=true)
    src = r"""
    __global__ void k(float *a, float *b, float *c) {
        int i = threadIdx.x;
        float s = c[i];
        s += a[i] * b[i];          // fma
        c[i] = s * 3.0f;           // mul
    }"""
    a = np.full(32, 1.5, np.float32)
    b = np.full(32, 2.0, np.float32)
    c = np.ones(32, np.float32)
    r = run(src, 1, 32, [a, b, c])
    assert c.tolist() == [12.0] * 32
    assert r.counts.fp_ops == dict(add=0, mul=32, fma=32, div=0, special=0)
    assert r.counts.flops == 32 + 2 * 32


def test_a_product_with_two_uses_is_not_contracted():
    # The old source-level count was 2 fma + 1 mul per thread. NVVM computes a[i] * b[i] once (CSE) and, the
    # product having two users, keeps it as mul.f32; then add.f32 (s + p), sub.f32 (p - s), and x * 2.0f becomes
    # add.f32 x, x: per thread 1 mul + 3 add, no fma (read off the PTX).
    src = r"""
    __global__ void k(float *a, float *b, float *c) {
        int i = threadIdx.x;
        float s = c[i];
        s += a[i] * b[i];
        c[i] = a[i] * b[i] - s;
        c[i] = c[i] * 2.0f;
    }"""
    a = np.ones(32, np.float32)
    b = np.ones(32, np.float32)
    c = np.ones(32, np.float32)
    r = run(src, 1, 32, [a, b, c])
    assert c.tolist() == [-2.0] * 32
    assert r.counts.fp_ops == dict(add=96, mul=32, fma=0, div=0, special=0)
    assert r.counts.flops == 128


def test_fma_is_rounded_once():
    # fmaf(x, y, -x*y) is the rounding error of the product: 0 with two roundings, exact with one
    src = r"""
    __global__ void k(const float *x, const float *y, float *o) {
        int i = threadIdx.x;
        float p = __fmul_rn(x[i], y[i]);
        o[i] = fmaf(x[i], y[i], -p);
    }"""
    x = np.array([1 + 2**-23, 3.0, 0.1, 1e-20], np.float32)
    y = np.array([1 - 2**-23, 1 / 3, 0.3, 3e-21], np.float32)
    o = np.zeros(4, np.float32)
    run(src, 1, 4, [x, y, o])
    exact = x.astype(np.float64) * y.astype(np.float64)
    assert np.array_equal(o, (exact - (x * y).astype(np.float64)).astype(np.float32))
    assert o[0] == np.float32(-2.0**-46)


def test_atomics_on_global_and_shared_with_collisions():
    src = r"""
    __global__ void k(int *hist, int *vals, int *old_max, float *fsum, int *cas) {
        __shared__ int local[4];
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (threadIdx.x < 4) local[threadIdx.x] = 0;
        __syncthreads();
        atomicAdd(&local[vals[i] % 4], 1);
        __syncthreads();
        if (threadIdx.x < 4) atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);
        atomicMax(&old_max[0], vals[i]);
        atomicAdd(fsum, 0.25f + 0.5f * (i & 1));   // lane-dependent (see test_uniform_atomic_from_every_lane)
        atomicCAS(&cas[0], 0, i + 1);        // only the first lane in lane order wins
    }"""
    rng = np.random.default_rng(3)
    vals = rng.integers(0, 1000, 256).astype(np.int32)
    hist = np.zeros(4, np.int32)
    old_max = np.zeros(1, np.int32)
    fsum = np.zeros(1, np.float32)
    cas = np.zeros(1, np.int32)
    r = run(src, 4, 64, [hist, vals, old_max, fsum, cas])
    assert hist.tolist() == np.bincount(vals % 4, minlength=4).tolist()
    assert old_max[0] == vals.max()
    assert fsum[0] == 128 * 0.25 + 128 * 0.75
    assert cas[0] == 1
    assert r.counts.global_["atomics"] == 16 + 256 * 3
    assert r.counts.shared["atomics"] == 256


@pytest.mark.xfail(strict=True, reason="machine.py State.atomic: the lane shape is broadcast from the address, value, "
                   "mask and (nB, 1) only, so an atomic whose address and value are the same in every lane (and no "
                   "mask) runs once per block instead of once per thread; fix: add (1, self.Tp) to the "
                   "broadcast_shapes at the top of atomic()")
def test_uniform_atomic_from_every_lane():
    src = r"""
    __global__ void k(float *fsum, int *isum) {
        atomicAdd(fsum, 0.5f);
        atomicAdd(isum, 1);
    }"""
    fsum = np.zeros(1, np.float32)
    isum = np.zeros(1, np.int32)
    run(src, 4, 64, [fsum, isum])
    assert (fsum[0], isum[0]) == (128.0, 256)


def test_atomic_add_returns_old_values_in_lane_order():
    src = r"""
    __global__ void k(int *counter, int *slot) {
        slot[threadIdx.x] = atomicAdd(counter, 1);
    }"""
    counter = np.zeros(1, np.int32)
    slot = np.zeros(40, np.int32)
    run(src, 1, 40, [counter, slot])
    assert counter[0] == 40
    assert slot.tolist() == list(range(40))


def test_local_arrays_2d_shared_dynamic_shared_and_pointers():
    src = r"""
    #define T 8
    extern "C" __global__ void k(float *in, float *out, const int *sel) {
        __shared__ float tile[T][T + 1];
        extern __shared__ float dyn[];
        float acc[16];                         // indexed with a loaded value: lives on the stack (local memory)
        int tx = threadIdx.x, ty = threadIdx.y;
        tile[ty][tx] = in[ty * T + tx];
        dyn[ty * T + tx] = 1.0f;
        __syncthreads();
        for (int j = 0; j < 16; ++j) acc[j] = tile[tx][ty] * (j + 1);
        float *row = out + ty * T;
        row[tx] = acc[sel[tx]] + dyn[tx * T + ty];
    }"""
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    sel = (np.arange(8) * 2 + 1).astype(np.int32)
    program = load_kernel(source=src)
    # the PTX: the static tile demoted into the function (8 x 9 floats, as .b8 bytes) and the extern array
    shared = {v.name: v for f in program.module.functions.values() for v in f.variables if v.space == "shared"}
    shared.update({v.name: v for v in program.module.variables if v.space == "shared"})
    assert shared["dyn"].count is None
    assert any(v.nbytes == 8 * 9 * 4 for v in shared.values())
    assert program.static_shared_bytes == 8 * 9 * 4
    depot = [v for v in program.module.functions[program.entry].variables if v.space == "local"]
    assert [v.nbytes for v in depot] == [16 * 4]             # .local .align 16 .b8 __local_depot0[64]
    r = simulate(program, 1, (8, 8), [x, out, sel], dynamic_shared_bytes=64 * 4)
    assert np.array_equal(out.reshape(8, 8), x.reshape(8, 8).T * (sel + 1)[None, :] + 1)
    # the 16 stores of acc are 4 st.local.v4.f32 per thread (counts are per thread and instruction, a vector
    # access counting once); the read is one ld.local.f32
    assert r.counts.local["stores"] == 64 * 4 and r.counts.local["loads"] == 64
    assert r.counts.local["store_requests"] == 2 * 4 and r.counts.local["load_requests"] == 2
    assert r.counts.shared["stores"] == 128 and r.counts.shared["loads"] == 128


def test_constant_memory_2d_and_initialised_from_constants():
    src = r"""
    #define MW 3
    __constant__ float Mc[MW][MW];
    __global__ void k(float *out) {
        int i = threadIdx.x;
        float s = 0.0f;
        for (int r = 0; r < MW; r++)
            for (int c = 0; c < MW; c++)
                s += Mc[r][c];
        out[i] = s;
    }"""
    out = np.zeros(4, np.float32)
    m = np.arange(9, dtype=np.float32).reshape(3, 3)
    r = run(src, 1, 4, [out], constants={"Mc": m})
    assert out.tolist() == [36.0] * 4
    assert r.counts.constant["loads"] == 36
    assert r.counts.constant["load_wavefronts"] == 9        # one address per warp request: no serialisation


def test_do_while_and_compound_assignment_on_memory():
    src = r"""
    __global__ void k(int *a) {
        int i = threadIdx.x;
        int n = 0;
        do { n++; } while (n < i);
        a[i] += n;
        a[i] <<= 1;
        a[i]++;
    }"""
    a = np.ones(8, np.int32)
    run(src, 1, 8, [a])
    assert a.tolist() == [(1 + max(1, i)) * 2 + 1 for i in range(8)]


def test_block_of_3d_threads_and_grid_of_3d_blocks_linearise_x_fastest():
    src = r"""
    __global__ void k(int *o) {
        int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
        int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        o[b * blockDim.x * blockDim.y * blockDim.z + t] = t;
    }"""
    o = np.zeros(2 * 3 * 2 * 24, np.int32) - 1
    r = run(src, (2, 3, 2), (4, 3, 2), [o])
    assert o.tolist() == list(range(24)) * 12
    assert r.counts.warps == 12 and r.counts.blocks == 12


def test_atomic_min_max_return_running_values_in_lane_order():
    src = r"""
    __global__ void k(int *mx, unsigned int *mn, int *v, int *old_mx, unsigned int *old_mn) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        old_mx[i] = atomicMax(&mx[i % 3], v[i]);
        old_mn[i] = atomicMin(&mn[i % 2], (unsigned int)v[i]);
    }"""
    rng = np.random.default_rng(7)
    v = rng.integers(-1000, 1000, 200).astype(np.int32)
    mx = np.array([-5, 0, 5], np.int32)
    mn = np.array([4000000000, 7], np.uint32)
    old_mx = np.zeros(200, np.int32)
    old_mn = np.zeros(200, np.uint32)
    mx0, mn0 = mx.copy(), mn.copy()
    run(src, 4, 50, [mx, mn, v, old_mx, old_mn])
    cur_mx, cur_mn = mx0.astype(np.int64), mn0.astype(np.int64)
    for i in range(200):                     # sequential reference in lane order
        assert old_mx[i] == cur_mx[i % 3]
        cur_mx[i % 3] = max(cur_mx[i % 3], v[i])
        assert old_mn[i] == cur_mn[i % 2]
        cur_mn[i % 2] = min(cur_mn[i % 2], int(np.uint32(v[i])))
    assert mx.tolist() == cur_mx.tolist() and mn.tolist() == cur_mn.tolist()


REDUCE = r"""
#define BLOCK 256
__device__ void warpReduce(volatile float *s, unsigned int tid) {
    s[tid] += s[tid + 32]; s[tid] += s[tid + 16]; s[tid] += s[tid + 8];
    s[tid] += s[tid + 4]; s[tid] += s[tid + 2]; s[tid] += s[tid + 1];
}
__global__ void reduce(const float * __restrict__ in, float *out, unsigned int n) {
    __shared__ float sdata[BLOCK];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    float v = 0.0f;
    if (i < n) v = in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) warpReduce(sdata, tid);
    if (tid == 0) atomicAdd(out, sdata[0]);
}"""


def test_shared_memory_reduction_with_device_function_and_atomic():
    x = np.random.default_rng(0).random(5000).astype(np.float32)
    out = np.zeros(1, np.float32)
    r = run(REDUCE, (5000 + 511) // 512, 256, [x, out, 5000])
    assert abs(out[0] - x.astype(np.float64).sum()) < 1e-2
    assert r.counts.barriers == 10 * 3          # 10 blocks: one barrier + two loop iterations (s = 128, 64)
    assert r.counts.global_["atomics"] == 10


TRANSPOSE = r"""
#define TILE_DIM 32
#define BLOCK_ROWS 8
__global__ void transpose(float *odata, const float *idata, int width, int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM + PAD];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        odata[(y + j) * width + x] = tile[threadIdx.x][threadIdx.y + j];
}"""


@pytest.mark.parametrize("pad,load_wavefronts_per_request", [(0, 32), (1, 1)])
def test_transpose_column_reads_conflict_unless_padded(pad, load_wavefronts_per_request):
    W = 128
    a = np.random.default_rng(0).random((W, W), dtype=np.float32)
    o = np.zeros_like(a)
    program = load_kernel(source=TRANSPOSE, defines={"PAD": pad})
    r = simulate(program, (W // 32, W // 32), (32, 8), [o, a, W, W])
    assert np.array_equal(o, a.T)
    sh = r.counts.shared
    assert sh["load_requests"] == sh["store_requests"] == 16 * 8 * 4
    assert sh["store_wavefronts"] == sh["store_requests"]
    assert sh["load_wavefronts"] == sh["load_requests"] * load_wavefronts_per_request
    assert r.counts.global_["load_sectors"] == r.counts.global_["store_sectors"] == W * W * 4 // 32


def test_histogram_with_shared_atomics_and_grid_stride_loop():
    src = r"""
    __global__ void histo(const unsigned char *buffer, long size, unsigned int *histo) {
        __shared__ unsigned int temp[256];
        temp[threadIdx.x] = 0;
        __syncthreads();
        int i = threadIdx.x + blockIdx.x * blockDim.x;
        int offset = blockDim.x * gridDim.x;
        while (i < size) {
            atomicAdd(&temp[buffer[i]], 1);
            i += offset;
        }
        __syncthreads();
        atomicAdd(&(histo[threadIdx.x]), temp[threadIdx.x]);
    }"""
    buf = np.random.default_rng(1).integers(0, 256, 20000).astype(np.uint8)
    h = np.zeros(256, np.uint32)
    r = run(src, 8, 256, [buf, 20000, h])
    assert np.array_equal(h, np.bincount(buf, minlength=256))
    assert r.counts.shared["atomics"] == 20000


def test_scan_with_dynamic_shared_double_buffer():
    src = r"""
    __global__ void scan(float *g_odata, float *g_idata, int n) {
        extern __shared__ float temp[];
        int thid = threadIdx.x;
        int pout = 0, pin = 1;
        temp[pout*n + thid] = (thid > 0) ? g_idata[thid-1] : 0;
        __syncthreads();
        for (int offset = 1; offset < n; offset *= 2) {
            pout = 1 - pout; pin = 1 - pout;
            if (thid >= offset)
                temp[pout*n+thid] = temp[pin*n+thid] + temp[pin*n+thid - offset];
            else
                temp[pout*n+thid] = temp[pin*n+thid];
            __syncthreads();
        }
        g_odata[thid] = temp[pout*n+thid];
    }"""
    n = 128
    xi = np.arange(n, dtype=np.float32)
    xo = np.zeros(n, np.float32)
    run(src, 1, n, [xo, xi, n], dynamic_shared_bytes=2 * n * 4)
    assert np.array_equal(xo, np.concatenate([[0], np.cumsum(xi)[:-1]]))


def test_warp_shuffle_reduction_votes_ldg_and_comma():
    src = r"""
    __global__ void k(const float *x, float *sums, unsigned int *ballots, int *anyall, float *shifted) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        float v = __ldg(&x[i]);
        shifted[i] = __shfl_up_sync(0xffffffff, v, 1);
        for (int off = 16; off > 0; off /= 2)
            v += __shfl_down_sync(0xffffffff, v, off);
        if ((threadIdx.x & (warpSize - 1)) == 0) sums[i / 32] = v;
        ballots[i] = __ballot_sync(0xffffffff, x[i] > 0.5f);
        anyall[i] = __any_sync(0xffffffff, x[i] > 0.99f) * 2 + __all_sync(0xffffffff, x[i] >= 0.0f);
        __syncwarp();
        int a, b;
        for (a = 0, b = 10; a < b; a++, b--) ;
        if (a != 5) sums[0] = -1.0f;
    }"""
    x = np.random.default_rng(4).random(128).astype(np.float32)
    sums = np.zeros(4, np.float32)
    ballots = np.zeros(128, np.uint32)
    anyall = np.zeros(128, np.int32)
    shifted = np.zeros(128, np.float32)
    run(src, 2, 64, [x, sums, ballots, anyall, shifted])
    assert np.allclose(sums, x.reshape(4, 32).sum(axis=1), rtol=1e-5)
    w = x.reshape(4, 32)
    expect_ballot = [sum(1 << j for j in range(32) if w[r, j] > 0.5) for r in range(4)]
    assert ballots.reshape(4, 32)[:, 0].tolist() == expect_ballot
    assert (ballots.reshape(4, 32) == ballots.reshape(4, 32)[:, :1]).all()
    assert anyall.reshape(4, 32)[:, 0].tolist() == [2 * int((w[r] > 0.99).any()) + 1 for r in range(4)]
    lanes = np.arange(128) % 32
    assert np.array_equal(shifted, np.where(lanes == 0, x, np.roll(x, 1)))


def test_division_by_zero_only_matters_on_active_lanes():
    src = r"""
    __global__ void k(int *n, int *d, int *q) {
        int i = threadIdx.x;
        if (d[i] != 0) q[i] = n[i] / d[i] + n[i] % d[i];
    }"""
    n = np.arange(8, dtype=np.int32) - 4
    d = np.array([0, 1, -2, 0, 3, 0, 2, 1], np.int32)
    q = np.zeros(8, np.int32)
    run(src, 1, 8, [n, d, q])
    expect = [int(a / b) + int(np.fmod(a, b)) if b else 0 for a, b in zip(n.tolist(), d.tolist())]
    assert q.tolist() == expect


def test_contracted_multiply_add_never_overwrites_a_variable():
    # (b * c) - a: the fused operation may reuse the product's temporary, never a's storage
    src = r"""
    __global__ void k(const float *x, float *o) {
        int t = threadIdx.x;
        float a = x[t], b = x[t] + 1.0f, c = 2.0f;
        float d = (b * c) - a;
        float e = a + b * c;
        o[t] = a;
        o[t + 32] = d + e;
    }"""
    x = np.arange(32, dtype=np.float32)
    o = np.zeros(64, np.float32)
    run(src, 1, 32, [x, o])
    assert o[:32].tolist() == x.tolist()
    b = x + 1
    assert np.array_equal(o[32:], (b * 2 - x) + (x + b * 2))


# ---- moved from the deleted tests/test_frontend.py: what still holds for the NVRTC frontend ----------------------

def test_program_metadata():
    src = r"""
    #define TILE_WIDTH 16
    #define MAX_MASK_WIDTH 10
    __constant__ float M[MAX_MASK_WIDTH];
    __global__ void kern(float * __restrict__ d_M, const int *idx, int Width, unsigned int flags, double scale) {
        __shared__ float Mds[TILE_WIDTH][TILE_WIDTH];
        __shared__ int counter;
        Mds[threadIdx.y][threadIdx.x] = d_M[idx[0]] * M[0] * scale;
        if (threadIdx.x == 0) counter = Width + flags;
        __syncthreads();
        d_M[threadIdx.x] = Mds[threadIdx.x][threadIdx.y] + counter;
    }"""
    p = load_kernel(source=src)
    assert p.name == "kern"
    assert [(q.name, q.is_pointer) for q in p.params] == [("d_M", True), ("idx", True), ("Width", False),
                                                          ("flags", False), ("scale", False)]
    assert p.params[1].dtype == np.int32 and p.params[4].dtype == np.float64
    assert p.param_bytes == 8 + 8 + 4 + 4 + 8
    assert p.static_shared_bytes == 1028
    consts = [v for v in p.module.variables if v.space == "const"]
    assert [(v.name, v.nbytes) for v in consts] == [("M", 10 * 4)]      # .const .align 4 .b8 M[40]
    assert p.source_lines[1].strip() == "#define TILE_WIDTH 16"


def test_function_like_macros_and_multi_line_defines():
    # (a kernel *defined* by a macro, BODY(k, ...), is not found by the compile stage's kernel scan: see the
    # compile tests; here the macros are used inside an ordinary kernel)
    src = ("#define IDX(r, c, w) ((r) * (w) + (c))\n"
           "#define SQR(x) ((x) * (x))\n"
           "#define BODY(o, e) { \\\n"
           "    int t = threadIdx.x; \\\n"
           "    o[IDX(0, t, 4)] = e; }\n"
           "__global__ void k(float *o) BODY(o, SQR(t + 1))\n")
    o = np.zeros(4, np.float32)
    simulate(load_kernel(source=src), 1, 4, [o])
    assert o.tolist() == [1.0, 4.0, 9.0, 16.0]


def test_windows_line_endings():
    src = "#define T 4 \\\r\n  + 1\r\n__global__ void k(float *a) {\r\n  a[threadIdx.x] = T;\r\n}\r\n"
    a = np.zeros(2, np.float32)
    simulate(load_kernel(source=src), 1, 2, [a])
    assert a.tolist() == [5.0, 5.0]
