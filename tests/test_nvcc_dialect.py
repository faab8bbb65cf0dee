"""What nvcc accepts in a kernel file that NVRTC, compiling the same text, would not - and perfmodel therefore
stands in for. Found on HeCBench (zjin-lcf/HeCBench, 817 CUDA files) and Rodinia 3.1's dwt2d:

* execution-space words behind a macro (``#define HOST_DEVICE __host__ __device__``): device code, not host code
  to set aside;
* ``T& operator=(const T&)`` inside a class: an operator's name, not an initialiser running to the next ``;``;
* ``__NVCC__``, which nvcc defines in both passes and NVRTC does not;
* CUB's umbrella ``<cub/cub.cuh>``, which stops NVRTC with an ``#error``;
* host ``const float`` globals computed from one another, which nvcc folds into device code.

Each test compiles a file as it is and runs the kernel; values are checked against numpy (float32 arithmetic),
an independent source.
"""
from __future__ import annotations

import numpy as np
import pytest

from perfmodel.compile import CompileError, compile_cuda
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

MACRO_ANNOTATIONS = """\
#include <cstdio>
#define HD __host__ __device__
#define DEVICE_INLINE __device__ __forceinline__
#define KERNEL_SCOPE HD

HD inline float sq(float x) { return x * x; }
DEVICE_INLINE float twice(float x) { return 2.0f * x; }

struct Acc {
    float v;
    KERNEL_SCOPE float get() const { return sq(v) + twice(v); }
    void dump() const { printf("%f\\n", v); }          // host only
};

__global__ void k(const float *in, float *out)
{
    Acc a{in[threadIdx.x]};
    out[threadIdx.x] = a.get();
}
"""


def test_execution_space_macros_mark_device_code(tmp_path):
    src = tmp_path / "macros.cu"
    src.write_text(MACRO_ANNOTATIONS)
    program = load_kernel(src, entry="k")
    x = np.linspace(-2, 2, 32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    simulate(program, 1, 32, [x, out])
    # the compiler contracts sq(v) + twice(v) into one fma (nvcc's and NVRTC's default --fmad=true): one rounding
    # of the exact x*x + 2x, which float64 holds exactly for float32 x
    d = x.astype(np.float64)
    assert np.array_equal(out, (d * d + 2 * d).astype(np.float32))


OPERATOR_ASSIGN = """\
#include <iostream>
#if defined(__NVCC__) || defined(__HIPCC__)
#define ESS __host__ __device__
#else
#define ESS
#endif

template <class T>
class Cplx {
  public:
    T x, y;
    ESS Cplx(T a, T b) : x(a), y(b) {}
    ESS Cplx& operator=(const Cplx& o) { x = o.x; y = o.y; return *this; }
    ESS Cplx& operator+=(const Cplx& o) { x += o.x; y += o.y; return *this; }
    friend std::ostream& operator<<(std::ostream& os, const Cplx& c) { return os << c.x << "," << c.y; }
    ESS friend Cplx operator*(const Cplx& a, const Cplx& b) { return Cplx(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
};

__global__ void mul(const float *re, const float *im, float *out)
{
    int i = threadIdx.x;
    Cplx<float> a(re[i], im[i]);
    Cplx<float> p(0.0f, 0.0f);
    p = a * a;
    p += a;
    out[2 * i] = p.x;
    out[2 * i + 1] = p.y;
}
"""


def test_operator_assign_member_and_nvcc_macro(tmp_path):
    """After ``operator=`` the scan still sees each member (the host-only ``operator<<`` taking std::ostream is
    set aside), and ``__NVCC__`` gives ESS its __host__ __device__."""
    src = tmp_path / "cplx.cu"
    src.write_text(OPERATOR_ASSIGN)
    program = load_kernel(src, entry="mul")
    rng = np.random.default_rng(3)
    re_, im = rng.uniform(-1, 1, 32).astype(np.float32), rng.uniform(-1, 1, 32).astype(np.float32)
    out = np.zeros(64, np.float32)
    simulate(program, 1, 32, [re_, im, out])
    z = re_.astype(np.complex128) + 1j * im.astype(np.complex128)
    want = z * z + z
    assert np.allclose(out[0::2], want.real, rtol=1e-5, atol=1e-6)
    assert np.allclose(out[1::2], want.imag, rtol=1e-5, atol=1e-6)


def test_nvcc_macro_is_defined(tmp_path):
    src = tmp_path / "nvcc.cu"
    src.write_text("#ifndef __NVCC__\n#error not nvcc\n#endif\n__global__ void k(int *p) { p[0] = __NVCC__; }\n")
    program = load_kernel(src, entry="k")
    out = np.zeros(1, np.int32)
    simulate(program, 1, 1, [out])
    assert out[0] == 1


CUB_UMBRELLA = """\
#include <cub/cub.cuh>
#include <cstdio>

template <int BLOCK>
__global__ void block_sum(const int *in, int *out)
{
    typedef cub::BlockReduce<int, BLOCK> Reduce;
    __shared__ typename Reduce::TempStorage tmp;
    int s = Reduce(tmp).Sum(in[blockIdx.x * BLOCK + threadIdx.x]);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

int main()
{
    int *d_in = nullptr, *d_out = nullptr;
    void *tmp = nullptr;
    size_t bytes = 0;
    cub::DeviceReduce::Sum(tmp, bytes, d_in, d_out, 1024);      // host code: set aside
    block_sum<128><<<8, 128>>>(d_in, d_out);
    return 0;
}
"""


def test_cub_umbrella_gives_the_block_primitives(tmp_path):
    src = tmp_path / "cubsum.cu"
    src.write_text(CUB_UMBRELLA)
    program = load_kernel(src, entry="block_sum<128>")
    x = np.random.default_rng(5).integers(-1000, 1000, 8 * 128).astype(np.int32)
    out = np.zeros(8, np.int32)
    simulate(program, 8, 128, [x, out])
    assert np.array_equal(out, x.reshape(8, 128).sum(axis=1))


def test_cub_device_header_is_host_code(tmp_path):
    """A device-wide algorithm's header (host launches) is set aside, not handed to NVRTC's #error."""
    src = tmp_path / "dev.cu"
    src.write_text("#include <cub/device/device_scan.cuh>\n__global__ void k(int *p) { p[threadIdx.x] = 1; }\n"
                   "void host(int *a, int *b, void *t, size_t n) { cub::DeviceScan::InclusiveSum(t, n, a, b, 4); }\n")
    mod = compile_cuda(src)
    assert [k.name for k in mod.kernels] == ["k"]
    assert "cub/device/device_scan.cuh" in mod.set_aside_includes


CONST_FLOATS = """\
#include <cstdio>
namespace lift {
  const float predict = -1.586134342;
  const float update = 0.4435068522;
  const float undo_predict = -predict;
  const float scale = 1.230174104914;
  const float scale_div = 1.0 / scale;
  typedef float real;
  const real twice = 2 * update;
}

__global__ void lifting(const float *in, float *out)
{
    float v = in[threadIdx.x];
    out[threadIdx.x] = (v * lift::undo_predict + lift::twice) * lift::scale_div;
}

int main() { printf("%f\\n", lift::scale_div); return 0; }
"""


def test_host_const_floats_folded_as_nvcc_does(tmp_path):
    src = tmp_path / "lift.cu"
    src.write_text(CONST_FLOATS)
    program = load_kernel(src, entry="lifting")
    x = np.linspace(-1, 1, 32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    simulate(program, 1, 32, [x, out])
    f = np.float32
    undo = -f(-1.586134342)
    twice = f(2 * f(0.4435068522))
    div = f(1.0 / np.float64(f(1.230174104914)))        # 1.0 / scale: a double division, then float
    fma = (x.astype(np.float64) * np.float64(undo) + np.float64(twice)).astype(np.float32)   # contracted, exact
    assert np.array_equal(out, fma * div)


def test_non_constant_host_global_still_reported(tmp_path):
    """A global that is not a constant expression at all (a call of a host function) is set aside with the host code
    (kaldi-math.h's `static const double kMinLogDiffDouble = Log(DBL_EPSILON);`, which no kernel uses), and a kernel
    that uses one is an error at the use that says where the constant is and why device code cannot read it."""
    src = tmp_path / "dyn.cu"
    src.write_text("float host_value();\nconst float g = host_value();\n"
                   "__global__ void k(float *p) { p[0] = g; }\n")
    with pytest.raises(CompileError) as e:
        compile_cuda(src)
    assert "dyn.cu:3" in str(e.value) and "g (dyn.cu:2) is a host constant whose initial value calls" in str(e.value)


GNU_KEYWORDS = """\
static __device__ __const__ unsigned char mask = 15;
static __device__ __const unsigned char shift = 4;
__extension__ typedef long long wide;

__global__ void pack(const unsigned char *in, wide *out)
{
    __signed__ int v = in[threadIdx.x] & mask;
    __volatile int w = v << shift;
    unsigned lane;
    __asm__ __volatile__("mov.u32 %0, %%laneid;" : "=r"(lane));
    out[threadIdx.x] = (wide)w + lane;
}
"""


def test_gcc_alternate_keywords(tmp_path):
    """GCC's alternate keywords (the GCC manual's "Alternate Keywords"), which nvcc's GNU-dialect front end takes
    and NVRTC does not: __const__, __const, __signed__, __volatile, __asm__, __extension__."""
    src = tmp_path / "gnu.cu"
    src.write_text(GNU_KEYWORDS)
    program = load_kernel(src, entry="pack")
    x = np.arange(32, dtype=np.uint8) * 7
    out = np.zeros(32, np.int64)
    simulate(program, 1, 32, [x, out])
    assert np.array_equal(out, ((x & 15).astype(np.int64) << 4) + np.arange(32))


LAUNCHED_TEMPLATES = """\
#include <cstdio>
#define BLOCK 64
typedef float real;

namespace ops {
template <typename T, int N>
__global__ void scale(T *p, T s)
{
    int i = blockIdx.x * N + threadIdx.x;
    p[i] = p[i] * s;
}
}

template <typename T>
__global__ void never_launched_concretely(T *p) { p[0] = T(1); }

template <typename T>
void run(T *d)
{
    never_launched_concretely<T><<<1, 1>>>(d);          // T: the host template's own parameter
}

int main()
{
    real *d = nullptr;
    const int local = 32;
    ops::scale<real, BLOCK><<<4, BLOCK>>>(d, 2.0f);
    ops::scale<double, 128><<<4, 128>>>((double *)d, 2.0);
    ops::scale<float, local><<<4, local>>>(d, 2.0f);    // a local constant of main(): not resolvable
    run(d);
    return 0;
}
"""


def test_instantiations_the_file_launches_are_compiled(tmp_path):
    src = tmp_path / "launch.cu"
    src.write_text(LAUNCHED_TEMPLATES)
    mod = compile_cuda(src)
    assert sorted(k.expression for k in mod.kernels) == ["ops::scale<double, 128>", "ops::scale<real, BLOCK>"]
    assert mod.templates == ["never_launched_concretely"]
    assert mod.template_launches["never_launched_concretely"] == ["never_launched_concretely<T> (launch.cu:20)"]
    with pytest.raises(CompileError, match=r"template kernel: name an instantiation, as the file launches it: "
                                           r"never_launched_concretely<T> \(launch.cu:20\)"):
        mod.kernel("never_launched_concretely")
    # the kernel's plain name is ambiguous between the two instantiations: an error, not the first one
    with pytest.raises(CompileError, match="names 2 compiled kernels"):
        mod.kernel("scale")
    # an instantiation named without its namespace
    k = mod.kernel("scale<double,128>")
    assert k.expression == "ops::scale<double, 128>"
    program = load_kernel(src, entry="scale<real, BLOCK>")
    p = np.arange(256, dtype=np.float32)
    simulate(program, 4, 64, [p, np.float32(2)])
    assert np.array_equal(p, np.arange(256, dtype=np.float32) * 2)


def test_unqualified_template_expression_is_found_in_its_namespace(tmp_path):
    src = tmp_path / "ns.cu"
    src.write_text("namespace dwt { template <int W> __global__ void k(int *p) { p[threadIdx.x] = W; } }\n")
    mod = compile_cuda(src, name_expressions=["k<7>"])
    assert [k.expression for k in mod.kernels] == ["dwt::k<7>"]
    program = load_kernel(src, entry="k<7>")
    out = np.zeros(4, np.int32)
    simulate(program, 1, 4, [out])
    assert np.array_equal(out, [7] * 4)


HOST_MEMBER_DECLARATIONS = """\
#include <string>
#include <utility>
struct Grid {
    int nx;
    __device__ int cell(int x, int y) const { return y * nx + x; }
    static void log(int level, const std::string& msg);          // host only, defined in another file
    std::pair<std::string, int> describe() const;                 // host only
    Grid() = default;
};

__global__ void index(Grid g, int *out) { out[threadIdx.x] = g.cell(threadIdx.x, 2); }
"""


def test_host_member_declarations_naming_std_are_set_aside(tmp_path):
    """A kept class's host-only member declarations that name the C++ library (HeCBench's cmp, eikonal, ans) go
    with the library's headers; the device member stays."""
    src = tmp_path / "grid.cu"
    src.write_text(HOST_MEMBER_DECLARATIONS)
    program = load_kernel(src, entry="index")
    out = np.zeros(8, np.int32)
    simulate(program, 1, 8, [np.array([10], np.int32).view(np.dtype([("nx", np.int32)]))[0], out])
    assert np.array_equal(out, 2 * 10 + np.arange(8))


TWO_KERNELS_SHARED = """\
__shared__ float file_scope[64];

template <int N>
__global__ void tile(float *p)
{
    __shared__ float t[N][N];
    t[threadIdx.y][threadIdx.x] = p[threadIdx.y * N + threadIdx.x];
    __syncthreads();
    p[threadIdx.x * N + threadIdx.y] = t[threadIdx.y][threadIdx.x];
}

__global__ void uses_file_scope(float *p)
{
    file_scope[threadIdx.x] = p[threadIdx.x];
    __syncthreads();
    p[threadIdx.x] = file_scope[63 - threadIdx.x];
}

void host() { tile<8><<<1, dim3(8, 8)>>>(nullptr); tile<16><<<1, dim3(16, 16)>>>(nullptr); }
"""


def test_each_kernel_holds_only_its_own_shared_memory(tmp_path):
    """A file's kernels share one PTX module; a block of each holds only the shared arrays it names, as ptxas
    allocates them (its "bytes smem" per entry is the independent figure)."""
    src = tmp_path / "two.cu"
    src.write_text(TWO_KERNELS_SHARED)
    mod = compile_cuda(src)
    ptxas = {k.expression: k.static_shared_bytes for k in mod.kernels}
    assert ptxas == {"tile<8>": 8 * 8 * 4, "tile<16>": 16 * 16 * 4, "uses_file_scope": 64 * 4}
    for expr, want in ptxas.items():
        assert load_kernel(src, entry=expr).static_shared_bytes == want
    program = load_kernel(src, entry="tile<16>")
    p = np.arange(256, dtype=np.float32)
    simulate(program, 1, (16, 16), [p])
    assert np.array_equal(p, np.arange(256, dtype=np.float32).reshape(16, 16).T.reshape(-1))


BRACE_MEMBER_INIT = """\
#include <vector>
template <typename T>
class Vec3 {
public:
    Vec3() {}                                       // host only: set aside, its `public:` stays
    __host__ __device__
    Vec3(T x, T y, T z) : v_{ x, y, z } {}          // the braces after v_ initialise a member, they are no body
    __host__ __device__ T dot(const Vec3 &o) const { return v_[0] * o.v_[0] + v_[1] * o.v_[1] + v_[2] * o.v_[2]; }
    void fill(const std::vector<T> &src) { v_[0] = src[0]; }   // host only
private:
    T v_[3];
};
struct Pair {
    __device__ Pair(float a, float b) : lo{a}, hi(b) {}
    float lo, hi;
};
__global__ void k(const float *in, float *out)
{
    float a = in[threadIdx.x];
    Vec3<float> p(a, 1.0f, 2.0f), q(3.0f, a, 0.5f);
    Pair r(a, 4.0f);
    out[threadIdx.x] = p.dot(q) + r.lo * r.hi;
}
"""


def test_constructor_initialiser_braces_and_access_specifiers(tmp_path):
    """Found in HeCBench's nbnxm (GROMACS's BasicVector): `: x_{ x, y, z } {}` was cut at the first brace, and the
    host-only default constructor was set aside with the `public:` in front of it, making every member private."""
    src = tmp_path / "vec3.cu"
    src.write_text(BRACE_MEMBER_INIT)
    program = load_kernel(src, entry="k")
    x = np.linspace(-2, 2, 32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    simulate(program, 1, 32, [x, out])
    d = x.astype(np.float64)
    expected = 3 * d + d + 1.0 + 4 * d             # p.dot(q) = 3a + a + 1, r.lo * r.hi = 4a: exact in float32
    assert np.allclose(out, expected.astype(np.float32), rtol=1e-6, atol=1e-6)


IFDEF_IN_SIGNATURE = """\
__global__ void scale(float *x, float a
#ifdef WITH_OFFSET
                      , float b
#endif
#if defined(WIDE)
                      , long long n
#else
                      , int n
#endif
                      )
{
    int i = threadIdx.x;
#ifdef WITH_OFFSET
    if (i < n) x[i] = a * x[i] + b;
#else
    if (i < n) x[i] = a * x[i];
#endif
}
"""


@pytest.mark.parametrize("defines, names", [
    ({}, ["x", "a", "n"]),
    ({"WITH_OFFSET": 1}, ["x", "a", "b", "n"]),
    ({"WIDE": 1}, ["x", "a", "n"]),
])
def test_preprocessor_lines_inside_the_parameter_list(tmp_path, defines, names):
    """HeCBench's pad and sc: `#ifdef DYNAMIC_PARTITION , int *worklist #endif` inside a kernel's parameter
    list. The scan keeps the parameters of every branch; the compiled entry's mangled name picks those that are
    there (the #else branch's int n, or the long long n)."""
    src = tmp_path / "sig.cu"
    src.write_text(IFDEF_IN_SIGNATURE)
    info = compile_cuda(src, defines=defines).kernel("scale")
    assert [p.name for p in info.params] == names
    assert info.params[-1].dtype == np.dtype(np.int64 if "WIDE" in defines else np.int32)
    program = load_kernel(src, entry="scale", defines=defines)
    x = np.arange(32, dtype=np.float32)
    args = [x, np.float32(3)] + ([np.float32(0.5)] if "WITH_OFFSET" in defines else []) + [20]
    simulate(program, 1, 32, args)
    y = np.arange(32, dtype=np.float32)
    y[:20] = 3 * y[:20] + (0.5 if "WITH_OFFSET" in defines else 0)
    assert np.array_equal(x, y)


def test_a_kernel_only_declared_in_the_file_is_not_listed(tmp_path):
    """HeCBench's qem: main.cu includes gpu_solver.h, which declares the kernels that gpu_solver.cu defines.
    main.cu has none of them, and asking for one says where it is declared."""
    (tmp_path / "solver.h").write_text("__global__ void solve(int n, float *x);\n")
    (tmp_path / "main.cu").write_text('#include "solver.h"\nint main() { solve<<<1, 1>>>(1, 0); return 0; }\n')
    mod = compile_cuda(tmp_path / "main.cu")
    assert mod.kernels == []
    with pytest.raises(CompileError, match=r"solve is only declared here \(solver.h:1\)"):
        mod.kernel("solve")


def test_a_kernel_launched_from_device_code_but_defined_elsewhere(tmp_path):
    """cuda-samples' cdpAdvancedQuicksort: a kernel launches bitonicsort (dynamic parallelism), which another file
    defines. The PTX then declares it (``.extern .entry ...;``) and a printf string's initialiser follows: neither
    may pass for the kernel's body (it was listed with 0 registers and '83,' - the string's first byte - as an
    unsupported instruction). The launching kernel is compiled and listed; asking for the other says where it is
    declared."""
    from perfmodel.compile.support import unsupported_opcodes

    (tmp_path / "sort.h").write_text("__global__ void child_sort(unsigned *data, unsigned n);\n")
    (tmp_path / "main.cu").write_text(
        '#include <cstdio>\n#include "sort.h"\n'
        "__global__ void parent(unsigned *data, unsigned n)\n{\n"
        "    if (n > 32) child_sort<<<1, 32>>>(data, n);\n"
        '    else printf("Stack-allocation error.\\n");\n}\n')
    mod = compile_cuda(tmp_path / "main.cu")
    assert [k.name for k in mod.kernels] == ["parent"]
    assert ".extern .entry" in mod.ptx and "83, 116, 97, 99, 107" in mod.ptx     # the case this test is about
    assert unsupported_opcodes(mod.ptx_body(mod.kernel("parent"))) == []
    with pytest.raises(CompileError, match=r"child_sort is only declared here \(sort.h:1\)"):
        mod.kernel("child_sort")


def test_a_device_side_launch_is_refused_at_its_line(tmp_path):
    """Dynamic parallelism is not simulated: the kernel that launches another from device code is refused with
    the launch's line and the child's name (it said "the PTX refers to '_Z5childPfi', which is not a variable
    perfmodel can place", with no line)."""
    from perfmodel.errors import SimulationError

    src = tmp_path / "cdp.cu"
    src.write_text("__global__ void child(float *x, int n) { x[threadIdx.x] *= 2.0f; }\n"
                   "__global__ void parent(float *x, int n)\n{\n"
                   "    if (threadIdx.x == 0) child<<<1, 32>>>(x, n);\n}\n")
    program = load_kernel(src, entry="parent")
    with pytest.raises(SimulationError, match=r"cdp.cu:4:\d+: a launch of the kernel child from device code "
                                              r"\(dynamic parallelism\), which perfmodel does not simulate: analyse "
                                              r"child on its own.*\(thread \(0, 0, 0\), block \(0, 0, 0\)\)"):
        simulate(program, 1, 32, [np.zeros(32, np.float32), 32])


def test_a_launch_from_device_code_that_no_thread_reaches_runs_with_a_note(tmp_path):
    """Learn CUDA Programming's recursive_saxpy_kernel: a kernel that relaunches itself while depth > 0 was refused
    before anything ran, even at depth 0, and told to "analyse recursive_saxpy_kernel on its own" - what was being
    done. The launch is now refused where a thread reaches it, saying the kernel launches itself; at depth 0 the
    kernel runs, and a note says no child launch is in the figures."""
    from perfmodel.errors import SimulationError

    src = tmp_path / "rec.cu"
    src.write_text("__global__ void rec(float *y, int depth)\n{\n    y[threadIdx.x] += 1.f;\n"
                   "    if (depth > 0 && threadIdx.x == 0)\n        rec<<<1, blockDim.x>>>(y, depth - 1);\n}\n")
    program = load_kernel(src, entry="rec")
    y = np.zeros(32, np.float32)
    result = simulate(program, 1, 32, [y, 0])
    assert y.tolist() == [1.0] * 32
    assert any("rec.cu:5" in n and "launches itself" in n and "no child launch is in these figures" in n
               for n in result.notes), result.notes
    with pytest.raises(SimulationError, match=r"rec.cu:5:\d+: the kernel rec launches itself from device code "
                                              r"\(recursive dynamic parallelism\).*depth of 0.*\(thread \(0, 0, 0\)"):
        simulate(program, 1, 32, [np.zeros(32, np.float32), 1])


def test_a_file_level_macro_invocation_that_declares_device_code_is_kept(tmp_path):
    """cuda-samples' MC_SingleAsianOptionP specialises SharedMemory<float> with a macro invoked at file level
    (`BUILD_SHAREDMEMORY_TYPE(float, s_float);`). Setting host code aside blanked the invocation as if it were a
    host prototype: the sample did not compile, and a kernel whose primary template compiles ran the wrong code
    silently (0 for every element instead of 2 i)."""
    src = tmp_path / "macro_spec.cu"
    src.write_text("template <typename T> struct Sh { __device__ T get(int i) { return (T)0; } };\n"
                   "#define BUILD(t) template <> struct Sh<t> { __device__ t get(int i) { return (t)(2 * i); } }\n"
                   "BUILD(float);\n"
                   "#define HOSTY(name) int name(int x)\n"
                   "HOSTY(host_only);\n"
                   "__global__ void k(float *o) { Sh<float> s; o[threadIdx.x] = s.get(threadIdx.x); }\n"
                   "int main() { return 0; }\n")
    out = np.zeros(32, np.float32)
    simulate(load_kernel(src, entry="k"), 1, 32, [out])
    assert out.tolist() == [2.0 * i for i in range(32)]


def test_an_explicit_specialization_keeps_to_its_own_arguments(tmp_path):
    """HeCBench's crossEntropy: `template <> __global__ void loss_bwd<__half, __half>(...)` beside the primary
    template. The specialization's signature was taken for every instantiation, so k<float> had __half
    parameters (and ran over half-sized buffers); now each expression gets its own declaration, and the
    specialization, compiled code of its own, is listed with the file's kernels."""
    src = tmp_path / "spec.cu"
    src.write_text("#include <cuda_fp16.h>\n"
                   "template <typename T> __global__ void k(const T *a, T *b, int n)\n"
                   "{ int i = threadIdx.x; if (i < n) b[i] = a[i] * (T)2; }\n"
                   "template <> __global__ void k<__half>(const __half *a, __half *b, int n)\n"
                   "{ int i = threadIdx.x; if (i < n) b[i] = __hmul(a[i], __float2half(3.f)); }\n")
    mod = compile_cuda(src, name_expressions=["k<float>"])
    assert {k.expression: [p.ctype for p in k.params] for k in mod.kernels} == {
        "k<__half>": ["const __half*", "__half*", "int"], "k<float>": ["const float*", "float*", "int"]}
    a = np.arange(32, dtype=np.float32)
    b = np.zeros(32, np.float32)
    simulate(load_kernel(src, entry="k<float>"), 1, 32, [a, b, 32])
    assert b.tolist() == (2 * a).tolist()
    h = np.arange(32).astype(np.float16)
    hb = np.zeros(32, np.float16)
    simulate(load_kernel(src, entry="k<__half>"), 1, 32, [h, hb, 32])
    assert hb.tolist() == (3 * h).tolist()


def test_the_device_runtime_is_refused_as_dynamic_parallelism(tmp_path):
    """A kernel calling the CUDA device runtime (a stream created in device code, as cuda-samples'
    cdpSimpleQuicksort does) is refused naming the call and dynamic parallelism (it said "the external function
    '__cudaCDP2StreamCreateWithFlags'"), without the list of unsupported instructions, which is about something
    else."""
    from perfmodel.errors import SimulationError

    src = tmp_path / "dev_stream.cu"
    src.write_text("__global__ void child(float *x) { x[0] = 1.0f; }\n"
                   "__global__ void k(float *x)\n{\n    cudaStream_t s;\n"
                   "    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);\n    child<<<1, 1, 0, s>>>(x);\n}\n")
    with pytest.raises(SimulationError) as info:
        simulate(load_kernel(src, entry="k"), 1, 1, [np.zeros(1, np.float32)])
    message = str(info.value)
    assert "dev_stream.cu:5" in message, message
    assert "the CUDA device runtime (cudaStreamCreateWithFlags: dynamic parallelism" in message, message
    assert "tensor-core" not in message


def test_missing_headers_are_named_once(tmp_path):
    """A header included from several places is named once in the compile error's hint (cuda-samples' interval
    listed the same two boost headers about 35 times)."""
    from perfmodel.errors import CompileError

    (tmp_path / "a.h").write_text('#include "gone.hpp"\n')
    (tmp_path / "b.h").write_text('#include "gone.hpp"\n')
    src = tmp_path / "m.cu"
    src.write_text('#include "a.h"\n#include "b.h"\n__global__ void k(float *x) { x[0] = GONE; }\n')
    with pytest.raises(CompileError) as info:
        compile_cuda(src)
    assert str(info.value).count('#include "gone.hpp"') == 1, str(info.value)


def test_a_kernel_after_a_macro_invocation_without_a_semicolon_is_found(tmp_path):
    """`DEFINE_SCALE(triple, 3.0f)` (a macro that defines a device function, invoked with no ';') joined the kernel
    after it into one declaration for the scan: the kernel was not listed and its parameters had no names
    (`float* arg0`). The invocation stays; the kernel after it is read on its own."""
    src = tmp_path / "macro_fn.cu"
    src.write_text("#define DEFINE_SCALE(name, f) __device__ float name(float x) { return x * f; }\n"
                   "DEFINE_SCALE(triple, 3.0f)\n"
                   "__global__ void k(float *o) { o[threadIdx.x] = triple((float)threadIdx.x); }\n")
    mod = compile_cuda(src)
    assert [(k.name, [p.name for p in k.params], k.line) for k in mod.kernels] == [("k", ["o"], 3)]
    out = np.zeros(32, np.float32)
    simulate(load_kernel(src, entry="k"), 1, 32, [out])
    assert out.tolist() == [3.0 * i for i in range(32)]


def test_host_wrapper_macros_invoked_one_after_another_are_set_aside(tmp_path):
    """A PyTorch extension's binding macros (LeetCUDA's TORCH_BINDING_* pattern): each invocation defines the host
    wrapper that launches a kernel, with types no device compile knows (torch::Tensor), and they follow one another
    with no ';'. The scan joined them into one declaration and kept all but the last, so NVRTC failed on
    `torch::`; a lone invocation was already set aside. Launches spelled `< < <` (clang-format's) count too."""
    src = tmp_path / "binding.cu"
    src.write_text(
        "#include <torch/extension.h>\n"
        "__global__ void add_f32_kernel(const float* a, float* c, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) c[i] = a[i] + 1.0f;\n"
        "}\n"
        "__global__ void add_f64_kernel(const double* a, double* c, int n) {}\n"
        "#define BIND(tag, th_type, T)                                          \\\n"
        "  void add_##tag(torch::Tensor a, torch::Tensor c) {                   \\\n"
        "    add_##tag##_kernel<<<1, 32>>>((T*)a.data_ptr(), (T*)c.data_ptr(), 32); \\\n"
        "  }\n"
        "#define BIND2(tag, th_type, T)                                         \\\n"
        "  void add2_##tag(torch::Tensor a, torch::Tensor c) {                  \\\n"
        "    add_##tag##_kernel < < < 1, 32 >>> ((T*)a.data_ptr(), (T*)c.data_ptr(), 32); \\\n"
        "  }\n"
        "BIND(f32, torch::kFloat32, float)\n"
        "BIND(f64, torch::kFloat64, double)\n"
        "BIND2(f32, torch::kFloat32, float)\n"
        "BIND2(f64, torch::kFloat64, double)\n")
    mod = compile_cuda(src)
    assert [k.name for k in mod.kernels] == ["add_f32_kernel", "add_f64_kernel"]
    a = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    simulate(load_kernel(src, entry="add_f32_kernel"), 1, 32, [a, out, 32])
    assert out.tolist() == (a + 1).tolist()


def test_device_side_cuda_device_synchronize_is_explained_not_blamed_on_includes(tmp_path):
    """Learn CUDA Programming's dynamic-parallelism kernels wait for their children with cudaDeviceSynchronize() in
    device code, which CUDA 12 removed for compute_90+: NVRTC says the identifier is undefined, and perfmodel added
    "Set aside because not found: #include <cstdio>; pass -I DIR", which cannot help."""
    src = tmp_path / "devsync.cu"
    src.write_text("#include <cstdio>\n__global__ void child(int *d) { d[threadIdx.x] += 1; }\n"
                   "__global__ void parent(int *d)\n{\n    if (threadIdx.x == 0) child<<<1, 32>>>(d);\n"
                   "    cudaDeviceSynchronize();\n}\n")
    with pytest.raises(CompileError) as info:
        compile_cuda(src)
    message = str(info.value)
    assert "devsync.cu:6" in message and "CUDA 12 removed it for compute_90" in message, message
    assert "pass -I DIR" not in message, message


def test_a_device_function_defined_in_another_file_is_named_with_its_declaration(tmp_path):
    """Learn CUDA Programming's multi-node Gaussian solver calls a __device__ function another .cu defines (built
    with nvcc -dc): perfmodel passed on ptxas's "Unresolved extern function '_Z4bfewP5uint4i'" with nothing else.
    The message now names the function, the line that declares it, and what to do."""
    src = tmp_path / "a.cu"
    src.write_text("// built with nvcc -rdc=true\nextern __device__ unsigned int twice(unsigned int x);\n"
                   "__global__ void k(unsigned int *out) { out[threadIdx.x] = twice(threadIdx.x); }\n")
    with pytest.raises(CompileError) as info:
        compile_cuda(src)
    message = str(info.value)
    assert "Unresolved extern function '_Z5twicej'" in message, message
    assert "the __device__ function twice (declared at" in message and "a.cu:2)" in message, message
    assert "relocatable device code" in message, message


def test_an_alias_of_a_host_headers_type_that_no_kernel_uses_is_set_aside(tmp_path):
    """CUDA by Example's common/book.h: `typedef pthread_t CUTThread;` after `#include <pthread.h>`, which NVRTC
    cannot find and perfmodel sets aside. The typedef was kept, so every file of the book failed to compile
    ("identifier pthread_t is undefined ... pass -I DIR"). An alias that kept code names stays."""
    src = tmp_path / "book.cu"
    src.write_text("#include <pthread.h>\ntypedef pthread_t CUTThread;\nCUTThread start_thread(void *(*f)(void *), "
                   "void *data);\ntypedef int idx_t;\n__global__ void add(int *a, int *b, int *c)\n"
                   "{ idx_t tid = blockIdx.x; c[tid] = a[tid] + b[tid]; }\nint main() { return 0; }\n")
    a, b, c = np.arange(10, dtype=np.int32), np.arange(10, dtype=np.int32) * 3, np.zeros(10, np.int32)
    simulate(load_kernel(src, entry="add"), 10, 1, [a, b, c])
    assert c.tolist() == (4 * np.arange(10)).tolist()


def test_extern_c_written_against_global_compiles(tmp_path):
    """NVIDIA's grcuda blog sample writes `extern "C"__global__` (no space): nvcc warns, NVRTC read a user-defined
    string literal and stopped with "expected an identifier"."""
    src = tmp_path / "saxpy.cu"
    src.write_text('extern "C"__global__\nvoid saxpy(int n, float a, float *x, float *y)\n'
                   "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\n")
    x, y = np.arange(32, dtype=np.float32), np.ones(32, np.float32)
    simulate(load_kernel(src, entry="saxpy"), 1, 32, [32, np.float32(2.0), x, y])
    assert y.tolist() == (2 * np.arange(32) + 1).tolist()


def test_a_local_copy_of_an_opengl_header_is_set_aside(tmp_path):
    """CUDA by Example's common/cpu_bitmap.h includes <GL/glext.h>, and the book keeps a Windows copy of it in
    common/GL/: the search for a project's shared headers found it and inlined it, and GL's types stopped the
    compile. Windowing and graphics headers (GL/, GLFW/, EGL/ ...) are host-only wherever a copy lies."""
    (tmp_path / "GL").mkdir()
    (tmp_path / "GL" / "glext.h").write_text("typedef GLclampf undefined_gl_type;\nvoid glFoo(GLenum e);\n")
    (tmp_path / "bitmap.h").write_text("#include <GL/glext.h>\nstruct CPUBitmap { unsigned char *pixels; };\n")
    src = tmp_path / "ripple.cu"
    src.write_text('#include "bitmap.h"\n__global__ void kernel(unsigned char *ptr)\n'
                   "{ ptr[threadIdx.x] = (unsigned char)threadIdx.x; }\n")
    out = np.zeros(32, np.uint8)
    simulate(load_kernel(src, entry="kernel"), 1, 32, [out])
    assert out.tolist() == list(range(32))


def test_an_overload_set_of_kernels_is_listed_and_run_by_its_parameter_types(tmp_path):
    """CUDA by Example's book.h defines two `float_to_color` kernels (uchar4* and unsigned char*): only the last was
    listed, `--kernel float_to_color` silently ran it, and naming the other by its types did not parse. Each overload
    is now a kernel, `name(types)`; the bare name is refused naming both."""
    src = tmp_path / "over.cu"
    src.write_text("__global__ void scale(unsigned char *out, const float *in)\n"
                   "{ int i = threadIdx.x; out[i] = (unsigned char)(in[i] * 255.0f); }\n"
                   "__global__ void scale(uchar4 *out, const float *in)\n"
                   "{ int i = threadIdx.x; out[i].x = (unsigned char)(in[i] * 255.0f); }\n")
    mod = compile_cuda(src)
    assert [k.expression for k in mod.kernels] == ["scale(unsigned char*, const float*)", "scale(uchar4*, const float*)"]
    assert len({k.mangled for k in mod.kernels}) == 2
    with pytest.raises(CompileError, match=r"'scale' names 2 compiled kernels .*scale\(unsigned char\*, const "
                                           r"float\*\), scale\(uchar4\*, const float\*\); name one of them"):
        mod.kernel("scale")
    x = np.linspace(0, 1, 32).astype(np.float32)
    out = np.zeros(32, np.uint8)
    simulate(load_kernel(src, entry="scale(unsigned char *, const float *)"), 1, 32, [out, x])
    assert out.tolist() == (x * 255).astype(np.uint8).tolist()


def test_a_host_only_class_named_only_where_no_device_compile_looks_is_set_aside(tmp_path):
    """gau-nernst's fp6.cu: a __host__ __device__ function throws a class derived from std::invalid_argument under
    #ifndef __CUDA_ARCH__. The class was kept (device code named it) after <stdexcept> was set aside, and NVRTC
    stopped; nvcc's device pass never sees the throw."""
    src = tmp_path / "hd_throw.cu"
    src.write_text("#include <stdexcept>\nclass too_big : public std::invalid_argument {\npublic:\n"
                   "  too_big() : std::invalid_argument(\"too big\") { }\n};\n"
                   "__host__ __device__ static float twice(float x) {\n#ifndef __CUDA_ARCH__\n"
                   "  if (x > 30.0f) throw too_big();\n#endif\n  return x * 2.0f;\n}\n"
                   "__global__ void k(const float *in, float *out) { out[threadIdx.x] = twice(in[threadIdx.x]); }\n")
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    simulate(load_kernel(src, entry="k"), 1, 32, [x, y])
    assert y.tolist() == (2 * x).tolist()


def test_a_tma_descriptor_parameter_compiles_without_the_driver_header(tmp_path):
    """A Hopper kernel taking `const __grid_constant__ CUtensorMap` (gau-nernst's sm100/sm120 matmuls, CUTLASS-free
    TMA code): <cuda.h> is host-only and set aside, so CUtensorMap was undefined. Its definition (cuda.h, CUDA 12:
    16 64-byte-aligned words) stands in, once, for <cuda.h> and <cudaTypedefs.h> alike."""
    src = tmp_path / "tmap.cu"
    src.write_text("#include <cuda.h>\n#include <cudaTypedefs.h>\n"
                   "__global__ void k(const __grid_constant__ CUtensorMap tmap, float *out)\n"
                   "{ out[threadIdx.x] = (float)threadIdx.x; }\n")
    mod = compile_cuda(src)
    (k,) = mod.kernels
    assert [p.ctype for p in k.params] == ["const CUtensorMap", "float*"]
    assert k.params[0].size == 128 and k.params[0].align == 64


def test_a_host_only_operator_called_from_device_code_is_named(tmp_path):
    """Parboil's fft defines `inline float2 operator+(float2, float2)` with no __device__ and calls it in a kernel
    (nvcc refuses that call too). NVRTC said only "no operator "+" matches these operands", and perfmodel added
    that <stdio.h> was set aside; the message now names the host-only operator and its line."""
    src = tmp_path / "fftop.cu"
    src.write_text("#include <stdio.h>\ninline float2 operator+(float2 a, float2 b)\n"
                   "{ return make_float2(a.x + b.x, a.y + b.y); }\n"
                   "__global__ void k(float2 *x) { x[threadIdx.x] = x[threadIdx.x] + x[0]; }\n")
    with pytest.raises(CompileError) as info:
        compile_cuda(src)
    message = str(info.value)
    assert "fftop.cu:2 defines operator+ for the host only" in message and "__host__ __device__" in message, message
    assert "pass -I DIR" not in message, message


def test_host_aliases_of_std_templates_are_set_aside(tmp_path):
    """HeCBench's jaccard (`using namespace std; typedef vector<vector<vtype>> matrix;`) and su3 (`typedef
    std::chrono::system_clock Clock;`): the aliases were kept after <vector> / <chrono> were set aside and stopped
    the compile; no kernel names them."""
    src = tmp_path / "aliases.cu"
    src.write_text("#include <vector>\n#include <chrono>\nusing namespace std;\n"
                   "typedef vector<vector<float>> matrix;\ntypedef std::chrono::system_clock Clock;\n"
                   "__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }\n"
                   "int main() { matrix m(2, vector<float>(2)); Clock::now(); return (int)m.size(); }\n")
    x = np.ones(32, np.float32)
    simulate(load_kernel(src, entry="scale"), 1, 32, [x, np.float32(3.0)])
    assert x.tolist() == [3.0] * 32
