"""The compile stage (perfmodel.compile): NVRTC on real-world files, host code set aside, kernels, params,
resources, -D overrides, errors at the original line, the cache, arch clamping, SASS weights."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from perfmodel.compile import CompiledModule, CompileError, compile_cuda, nvrtc_arch
from perfmodel.compile import cache as compile_cache
from perfmodel.compile import nvrtc

pytestmark = pytest.mark.skipif(not nvrtc.available(), reason="NVRTC wheel (nvidia-cuda-nvrtc) not installed")

DATA = Path(__file__).parent.parent / "validation" / "kernels" / "cuda-samples" / "Samples"   # vendored, unchanged
VECTOR_ADD = DATA / "0_Introduction/vectorAdd/vectorAdd.cu"
MATRIX_MUL = DATA / "0_Introduction/matrixMul/matrixMul.cu"
COOP = DATA / "0_Introduction/simpleCooperativeGroups/simpleCooperativeGroups.cu"
TEXTURE = DATA / "0_Introduction/simpleTexture/simpleTexture.cu"
VOTE_CU = DATA / "0_Introduction/simpleVoteIntrinsics/simpleVoteIntrinsics.cu"
VOTE_CUH = DATA / "0_Introduction/simpleVoteIntrinsics/simpleVote_kernel.cuh"
DWT_CUH = DATA / "5_Domain_Specific/dwtHaar1D/dwtHaar1D_kernel.cuh"
ALIGNED = DATA / "6_Performance/alignedTypes/alignedTypes.cu"


@pytest.fixture(scope="module", autouse=True)
def session_cache(tmp_path_factory):
    """All compiles of the test session share one cache folder (never the user's)."""
    folder = tmp_path_factory.getbasetemp() / "perfmodel-compile-cache"
    old = os.environ.get("PERFMODEL_CACHE_DIR")
    os.environ["PERFMODEL_CACHE_DIR"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("PERFMODEL_CACHE_DIR", None)
    else:
        os.environ["PERFMODEL_CACHE_DIR"] = old


def test_vendored_license_is_next_to_the_files():
    assert "Redistribution" in (DATA.parent / "LICENSE").read_text()


# ---- real-world files, as they are --------------------------------------------------------------------------------

def test_vector_add_compiles_as_is():
    mod = compile_cuda(VECTOR_ADD)
    assert isinstance(mod, CompiledModule)
    assert [k.name for k in mod.kernels] == ["vectorAdd"]
    k = mod.kernel("vectorAdd")
    assert k.expression == "vectorAdd" and not k.is_template
    assert k.mangled == "_Z9vectorAddPKfS0_Pfi" and f".entry {k.mangled}(" in mod.ptx
    assert [(p.name, p.ctype, p.is_pointer) for p in k.params] == [
        ("A", "const float*", True), ("B", "const float*", True), ("C", "float*", True), ("numElements", "int", False)]
    assert [p.dtype for p in k.params] == [np.dtype("float32")] * 3 + [np.dtype("int32")]
    assert [(p.size, p.align) for p in k.params] == [(8, 8), (8, 8), (8, 8), (4, 4)]
    assert k.registers > 0 and k.static_shared_bytes == 0 and k.barriers == 0
    assert mod.arch == "sm_90" and mod.requested_arch == "sm_90" and mod.arch_note == ""
    # the ORIGINAL file's lines, and PTX line info that points into the original file
    assert mod.source_lines == VECTOR_ADD.read_text().splitlines()
    assert f'"{VECTOR_ADD.resolve()}"' in mod.ptx and mod.source_file == str(VECTOR_ADD.resolve())
    add_line = next(i for i, text in enumerate(mod.source_lines, 1) if "C[i] = A[i] + B[i]" in text)
    assert re.search(rf"\.loc\s+\d+\s+{add_line}\s", mod.ptx)
    assert k.line == next(i for i, t in enumerate(mod.source_lines, 1) if "void vectorAdd(" in t)


def test_template_instantiation_and_lookup():
    mod = compile_cuda(MATRIX_MUL, name_expressions=["MatrixMulCUDA<32>", "MatrixMulCUDA<16>"])
    k32, k16 = mod.kernel("MatrixMulCUDA<32>"), mod.kernel("MatrixMulCUDA< 16 >")
    assert k32.is_template and k32.name == "MatrixMulCUDA" and k32.expression == "MatrixMulCUDA<32>"
    assert k32.static_shared_bytes == 2 * 32 * 32 * 4 and k16.static_shared_bytes == 2 * 16 * 16 * 4
    assert k32.barriers == 1
    assert [p.name for p in k32.params] == ["C", "A", "B", "wA", "wB"]
    assert mod.kernel(k16.mangled) is k16


def test_template_kernel_is_compiled_as_the_host_code_launches_it():
    """matrixMul.cu launches MatrixMulCUDA<16> and MatrixMulCUDA<32> (`if (block_size == 16)`): both are compiled
    without being named; the plain name is then ambiguous, an error rather than a pick."""
    mod = compile_cuda(MATRIX_MUL)
    assert [k.expression for k in mod.kernels] == ["MatrixMulCUDA<16>", "MatrixMulCUDA<32>"]
    assert [k.static_shared_bytes for k in mod.kernels] == [2 * 16 * 16 * 4, 2 * 32 * 32 * 4]   # As, Bs tiles
    assert mod.templates == []
    with pytest.raises(CompileError, match="names 2 compiled kernels"):
        mod.kernel("MatrixMulCUDA")


def test_bad_instantiation_reports_nvrtc_message_at_the_kernel():
    with pytest.raises(CompileError) as info:
        compile_cuda(MATRIX_MUL, name_expressions=["MatrixMulCUDA<float>"])
    err = info.value
    assert "MatrixMulCUDA<float>" in str(err) and "template <int BLOCK_SIZE>" in str(err)
    assert err.location.line == next(i for i, t in enumerate(MATRIX_MUL.read_text().splitlines(), 1)
                                     if "MatrixMulCUDA(" in t)
    with pytest.raises(CompileError, match="no __global__ function 'Nope'"):
        compile_cuda(MATRIX_MUL, name_expressions=["Nope<3>"])


def test_unknown_kernel_lists_the_available_ones():
    mod = compile_cuda(VECTOR_ADD)
    with pytest.raises(CompileError, match="compiled kernels: vectorAdd"):
        mod.kernel("vectorSub")


def test_template_params_substituted_in_param_types():
    mod = compile_cuda(ALIGNED, name_expressions=["testKernel<RGBA32>"])
    k = mod.kernel("testKernel<RGBA32>")
    assert [(p.ctype, p.is_pointer, p.dtype) for p in k.params] == [
        ("RGBA32*", True, None), ("RGBA32*", True, None), ("int", False, np.dtype("int32"))]


def test_cooperative_groups_file():
    mod = compile_cuda(COOP)
    k = mod.kernel("cgkernel")
    assert k.params == [] and k.registers > 0


def test_header_included_by_the_cu_file_is_inlined_with_its_own_lines():
    mod = compile_cuda(VOTE_CU)
    names = {k.name for k in mod.kernels}
    assert {"VoteAnyKernel1", "VoteAllKernel2", "VoteAnyKernel3"} <= names
    k = mod.kernel("VoteAnyKernel1")
    assert k.file == str(VOTE_CUH.resolve())
    assert "VoteAnyKernel1" in VOTE_CUH.read_text().splitlines()[k.line - 1]
    assert f'"{VOTE_CUH.resolve()}"' in mod.ptx     # .file names the header itself


def test_cuh_given_directly():
    mod = compile_cuda(VOTE_CUH)
    assert {k.name for k in mod.kernels} == {"VoteAnyKernel1", "VoteAllKernel2", "VoteAnyKernel3"}
    assert mod.source_lines == VOTE_CUH.read_text().splitlines() and mod.context_path is None


def test_cuh_needing_its_cu_file_is_compiled_in_its_context():
    # dwtHaar1D_kernel.cuh uses INV_SQRT_2, which dwtHaar1D.cu #defines before including it
    mod = compile_cuda(DWT_CUH)
    assert {k.name for k in mod.kernels} == {"initValue", "dwtHaar1D"}
    assert mod.context_path is not None and mod.context_path.endswith("dwtHaar1D.cu")
    assert mod.source_lines == DWT_CUH.read_text().splitlines()
    assert all(k.file == str(DWT_CUH.resolve()) for k in mod.kernels)


def test_cu_file_included_by_a_chain_of_cu_files_is_compiled_in_the_context_that_compiles(tmp_path):
    """Rodinia's style: srad_kernel.cu uses BLOCK_SIZE and fp, which srad.cu #defines before including it; here
    the kernel file is included by mid.cu, itself included by main.cu, the only one that compiles."""
    (tmp_path / "scale_kernel.cu").write_text(
        "__global__ void scale(fp *x, int n)\n{\n    int i = blockIdx.x * BLOCK + threadIdx.x;\n"
        "    if (i < n) x[i] *= FACTOR;\n}\n")
    (tmp_path / "mid.cu").write_text('#define FACTOR 3\n#include "scale_kernel.cu"\n')
    (tmp_path / "main.cu").write_text('#include <stdio.h>\n#define BLOCK 64\ntypedef float fp;\n'
                                      '#include "mid.cu"\nint main() { printf("%d", BLOCK); return 0; }\n')
    (tmp_path / "unrelated.cu").write_text("__global__ void other(float *x) { x[0] = 1; }\n")
    mod = compile_cuda(tmp_path / "scale_kernel.cu")
    assert [k.name for k in mod.kernels] == ["scale"]
    assert mod.context_path == str(tmp_path / "main.cu")
    assert mod.kernels[0].file == str((tmp_path / "scale_kernel.cu").resolve()) and mod.kernels[0].line == 1
    with pytest.raises(CompileError, match=r"scale_kernel\.cu:1: error"):
        (tmp_path / "main.cu").unlink()          # no file that compiles includes it: the file's own error
        compile_cuda(tmp_path / "scale_kernel.cu")


def test_host_class_with_library_members_is_set_aside_even_when_a_macro_names_it(tmp_path):
    """Rodinia's dwt2d: a timing class with std::vector members, named in a macro's body (so the scan's reachable
    names hold it); device code cannot use a class whose members are host library types."""
    (tmp_path / "k.cu").write_text(
        "#include <vector>\n#include <algorithm>\n"
        "#define PERF_BEGIN Tester PERF_TESTER; PERF_TESTER.begin();\n"
        "class Tester {\n  std::vector<float> times;\npublic:\n  void begin() { times.push_back(0.0f); }\n"
        "  void show() { std::sort(times.begin(), times.end()); }\n};\n"
        "__global__ void k(float *x) { x[threadIdx.x] += 1.0f; }\n"
        "void run(float *x) { PERF_BEGIN; k<<<1, 32>>>(x); }\n")
    mod = compile_cuda(tmp_path / "k.cu")
    assert [k.name for k in mod.kernels] == ["k"]


# ---- host code set aside ------------------------------------------------------------------------------------------

HOSTY = """\
#include <stdio.h>
#include <vector>
#include "helper_cuda.h"
#define TILE 16
typedef unsigned int u32;
struct Pair { float a, b; };
class Timer { public: void start(); double ms() const { return 0.0; } std::vector<int> v; };
static const int kBlock = 128;
const char *sample = "hosty";
int g_count = 0;
template <typename T> void cpuSum(const T *x, int n) { printf("%d", n); }
template void cpuSum<float>(const float *, int);
__device__ float twice(float x) { return 2.0f * x; }
__host__ __device__ inline float half_of(float x) { return 0.5f * x; }
__global__ void k(Pair *p, uint n, int m = 4)
{
    __shared__ float s[TILE * TILE];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { s[threadIdx.x % (TILE * TILE)] = twice(p[i].a) + half_of(kBlock); p[i].b = s[0] * m; }
}
__global__ void broken(float *x)
{
    x[0] = not_declared_anywhere;
}
int main(int argc, char **argv)
{
    std::vector<float> h(10);
    Timer t; t.start();
    k<<<1, 1>>>(nullptr, 0);
    return 0;
}
"""


def test_host_code_is_set_aside_and_lines_are_kept():
    from perfmodel.compile.hostcode import prepare

    prep = prepare(HOSTY, "hosty.cu", None, sdk_dirs=nvrtc.sdk_include_dirs())
    out = prep.text.split("\n")
    assert len(out) == len(HOSTY.split("\n"))
    assert "main" not in prep.text and "Timer" not in prep.text and "cpuSum" not in prep.text
    assert "g_count" not in prep.text and "sample" not in prep.text and "stdio" not in prep.text
    assert "u32" not in prep.text           # an alias no kept code names (CUDA by Example's typedef pthread_t ...)
    for kept in ("kBlock = 128", "struct Pair", "__device__ float twice", "__global__ void k(", "#define TILE 16"):
        assert kept in prep.text
    assert {k.name for k in prep.kernels} == {"k", "broken"}


def test_cuda_library_host_headers_are_set_aside_where_installed(tmp_path):
    """A kernel file that includes cuBLAS (the SGEMM tutorial's kernels all do) compiles even where the header is
    installed, as PyTorch's nvidia-cublas wheel or a toolkit installs it: its host API needs <stdint.h>, which
    NVRTC does not have."""
    from perfmodel.compile.hostcode import prepare

    sdk = tmp_path / "include"
    sdk.mkdir()
    (sdk / "cublas_v2.h").write_text("#include <stdint.h>\n")
    text = "#include <cublas_v2.h>\n__global__ void k(float *x) { x[0] = 1; }\n"
    prep = prepare(text, "k.cu", None, sdk_dirs=[str(sdk), *nvrtc.sdk_include_dirs()])
    assert prep.set_aside_includes == ["cublas_v2.h"] and "cublas" not in prep.text


def test_compile_error_maps_to_the_original_line():
    with pytest.raises(CompileError) as info:
        compile_cuda("hosty.cu", source=HOSTY)
    err = info.value
    line = next(i for i, t in enumerate(HOSTY.splitlines(), 1) if "not_declared_anywhere" in t)
    assert err.location.line == line and err.location.file == "hosty.cu"
    assert str(err).startswith(f"hosty.cu:{line}: error: identifier \"not_declared_anywhere\" is undefined")
    assert "\n" not in str(err)


@pytest.mark.parametrize("call", ["__shfl_down(v, 1)", "__ballot(v > 0)"])
def test_a_legacy_warp_intrinsic_says_why_it_is_undefined(call):
    """The warp intrinsics without a mask do not exist for compute capability 7.0 and later (the CUDA C++
    Programming Guide's removal notices), which is all NVRTC 13 compiles for: the error names the _sync form."""
    name = call.split("(")[0]
    src = "__global__ void k(float *x) { float v = x[threadIdx.x]; x[threadIdx.x] = %s; }\n" % call
    with pytest.raises(CompileError) as info:
        compile_cuda("legacy.cu", source=src)
    text = str(info.value)
    if name == "__ballot":     # declared by the headers; ptxas refuses the PTX vote without .sync
        assert "Instruction 'vote' without '.sync'" in text
        # ptxas names its PTX line only: the source line that calls it (graphBIG's __all had no .cu line)
        assert info.value.location.line == 1 and "legacy.cu:1 (`__global__ void k" in text, text
    else:
        assert text.startswith(f'legacy.cu:1: error: identifier "{name}" is undefined')
    assert f"{name}_sync(0xffffffff, ...)" in text and "7.0" in text and "\n" not in text


def test_a_texture_reference_says_cuda_12_removed_them():
    """A legacy texture reference (``texture<float, 1> t; tex1Dfetch(t, i)``, Rodinia's kmeans) no longer
    compiles; the error says why and what replaces it."""
    src = ("texture<float, 1, cudaReadModeElementType> t_features;\n"
           "__global__ void k(float *out) { out[threadIdx.x] = tex1Dfetch(t_features, threadIdx.x); }\n")
    with pytest.raises(CompileError) as info:
        compile_cuda("texref.cu", source=src)
    text = str(info.value)
    assert 'identifier "t_features" is undefined' in text and "CUDA 12.0 removed texture references" in text
    assert "cudaTextureObject_t" in text


def test_cub_operators_cccl3_removed_compile_as_cccl2_defined_them():
    """``cub::Max()`` and ``cub::Sum()`` (kaldi's softmax: code written for CUDA 12) are gone from CCCL 3, and CUDA
    13's nvcc fails on them as NVRTC does ('namespace "cub" has no member "Max"'); CCCL 2.8 defined them as
    aliases of cuda::maximum<> and cuda::std::plus<>, and the file compiles again with those aliases. Checked
    against numpy: the block's maximum and sum."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("#include <cub/cub.cuh>\n"
           "__global__ void k(const float *in, float *out) {\n"
           "    typedef cub::BlockReduce<float, 128> BR;\n"
           "    __shared__ typename BR::TempStorage tmp;\n"
           "    float v = BR(tmp).Reduce(in[threadIdx.x], cub::Max());\n"
           "    __syncthreads();\n"
           "    float s = BR(tmp).Reduce(in[threadIdx.x], cub::Sum());\n"
           "    if (threadIdx.x == 0) { out[0] = v; out[1] = s; }\n}\n")
    x = np.random.default_rng(3).uniform(-1, 1, 128).astype(np.float32)
    out = np.zeros(2, np.float32)
    simulate(load_kernel(source=src, path="cubmax.cu", entry="k"), (1,), (128,), [x, out])
    assert out[0] == x.max() and out[1] == pytest.approx(float(x.astype(np.float64).sum()), abs=1e-5)


def test_a_cub_iterator_cccl3_removed_is_named_with_its_replacement():
    """``cub::CountingInputIterator`` went in CCCL 3.0 too, and thrust's iterator takes other template parameters,
    so it stays an error: one that names the CCCL version compiled with - the one CUB's own header states,
    cub/version.cuh's CUB_VERSION (MMMmmmpp) - and the replacement."""
    src = ("#include <cub/block/block_load.cuh>\n"
           "__global__ void k(int *out) {\n"
           "    cub::CountingInputIterator<int> it(5);\n"
           "    out[threadIdx.x] = it[threadIdx.x];\n}\n")
    with pytest.raises(CompileError) as info:
        compile_cuda("cubit.cu", source=src)
    text = str(info.value)
    header = next(Path(d) / "cub" / "version.cuh" for d in nvrtc.sdk_include_dirs()
                  if (Path(d) / "cub" / "version.cuh").is_file())
    cub = int(re.search(r"#define CUB_VERSION (\d+)", header.read_text()).group(1))
    assert f"CCCL {cub // 100000}.{cub // 100 % 1000}." in text
    assert 'cubit.cu:3: error: namespace "cub" has no member "CountingInputIterator"' in text
    assert "cub::CountingInputIterator is one, thrust::counting_iterator replaces it" in text


def test_standard_library_names_a_host_header_brings_in_transitively():
    """libstdc++'s <algorithm> brings in <type_traits>, so nvcc compiles ``std::aligned_storage`` after
    <algorithm> alone (OneFlow's elementwise.cuh, BBuf's tutorial); a file that names ``std::max`` including only
    <type_traits> compiles under nvcc too. With libcu++ standing in, both compile; the alias of a library name
    libcu++ has is kept for the device code that uses it, and one it lacks (std::vector, host code) is set aside."""
    src = ("#include <algorithm>\n#include <vector>\n"
           "using Pack4 = std::aligned_storage<16, 16>::type;\n"
           "typedef std::vector<int> HostList;\n"
           "__global__ void k(float *x) {\n"
           "  static_assert(sizeof(Pack4) == 16, \"\");\n"
           "  x[threadIdx.x] = std::max(x[threadIdx.x], 1.0f);\n}\n")
    assert [k.expression for k in compile_cuda("pack.cu", source=src).kernels] == ["k"]
    src2 = ("#include <type_traits>\n"
            "template <typename T> __device__ typename std::enable_if<sizeof(T) == 4, T>::type twice(T x)"
            " { return 2 * x; }\n"
            "__global__ void k(float *x) { x[threadIdx.x] = std::max(twice(x[threadIdx.x]), 1.0f); }\n")
    assert [k.expression for k in compile_cuda("traits.cu", source=src2).kernels] == ["k"]


def test_a_library_header_not_found_is_named_when_the_compile_fails(tmp_path):
    """``#include <torch/extension.h>`` is found nowhere: set aside like any header perfmodel cannot use, and named
    (with its angle brackets) when the compile then fails on what it declared."""
    src = "#include <torch/extension.h>\n__global__ void k(float *x) { x[0] = at::zero; }\n"
    with pytest.raises(CompileError) as info:
        compile_cuda("torch.cu", source=src)
    assert "Set aside because not found: #include <torch/extension.h>" in str(info.value)


def test_a_file_without_a_kernel_says_so(tmp_path):
    from perfmodel.kernel import load_kernel

    path = tmp_path / "host.cu"
    path.write_text("#include <cstdio>\nint main() { printf(\"no kernel\\n\"); return 0; }\n")
    with pytest.raises(CompileError, match="defines no __global__ function"):
        load_kernel(path)


def test_kernels_written_as_shoc_writes_them():
    """SHOC's S3D: an attribute-like macro between the return type and the name (``__global__ void
    LAUNCH_BOUNDS(256, 4) gr_base(...)``, the macro expanding to nothing) - the kernel is gr_base with its own
    parameter names; its MaxFlops: ``register`` locals, which C++17 removed and nvcc's host compiler only warns
    about; its bfs: the kernels under ``#if __CUDA_ARCH__ >= 120`` and stubs with other parameter names under
    ``#else`` - the signature is the one every device compile sees."""
    src = ("#define LAUNCH_BOUNDS(maxThrd, minBlk)\n"
           "template <class real>\n__global__ void\nLAUNCH_BOUNDS(256, 4)\n"
           "scale(const real *in, real *out, real a) { register real v = a * in[threadIdx.x]; out[threadIdx.x] = v; }\n"
           "#if __CUDA_ARCH__ >= 120\n"
           "__global__ void k(float *out, int n_real) { if (threadIdx.x < n_real) out[threadIdx.x] = 1.0f; }\n"
           "#else\n"
           "__global__ void k(float *out, int n_stub) { ; }\n"
           "#endif\n")
    mod = compile_cuda("shoc.cu", source=src, name_expressions=["scale<float>"])
    assert [p.name for p in mod.kernel("scale<float>").params] == ["in", "out", "a"]
    assert [p.name for p in mod.kernel("k").params] == ["out", "n_real"]


@pytest.mark.parametrize("cond, value", [
    ("__CUDA_ARCH__ >= 120", True), ("__CUDA_ARCH__ < 700", False), ("defined(__CUDA_ARCH__)", True),
    ("!defined(__CUDACC__)", False), ("__CUDA_ARCH__ >= 800", None), ("USE_FAST && __CUDA_ARCH__ >= 350", None),
    ("defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 600)", True)])
def test_which_device_branches_every_compile_takes(cond, value):
    """By hand: NVRTC 13 compiles for compute capability 7.5 to 12.1, so __CUDA_ARCH__ is 750 to 1210; a condition
    that holds (or fails) over the whole range is decided, one that depends on where in it, or on other names, not."""
    from perfmodel.compile.conditions import _device_condition

    assert _device_condition(cond) is value


@pytest.mark.parametrize("cond, value", [
    ("defined(DEBUG_K)", False), ("!defined(DEBUG_K)", True), ("defined(FLAG)", True), ("BLOCK > 128", True),
    ("BLOCK > 512", False), ("defined(LOCAL_MACRO)", None), ("defined(CUDART_VERSION)", None),
    ("defined(_MSC_VER)", False), ("defined(__linux__)", True), ("__GNUC__ >= 4", False),
    ("UNDEFINED_NAME == 0", True)])
def test_which_branches_the_given_defines_decide(cond, value):
    """By hand, as a C preprocessor reads them with -D FLAG -D BLOCK=256: a name nothing defines (no -D, no #define
    in the file, none in NVIDIA's headers) is undefined and 0 in #if; a -D name has its value; a name the file
    defines or that NVIDIA's headers define (CUDART_VERSION) stays undecided; a reserved one is what NVRTC makes of
    it (asked of NVRTC: _MSC_VER and __GNUC__ undefined, __linux__ defined - the compile's preamble gives it, as
    nvcc's host side does)."""
    from perfmodel.compile.conditions import _device_condition
    from perfmodel.compile.hostcode import _FileProcessor
    from perfmodel.compile.nvrtc import sdk_include_dirs

    proc = _FileProcessor({"FLAG": 1, "BLOCK": 256}, [], sdk_include_dirs())
    assert _device_condition(cond, lambda name: proc._macro(name, {"LOCAL_MACRO"})) is value


IFDEF_SIGNATURES = """// a kernel's signature and a helper's chosen by #ifdef, each branch with its own '{' (ISPASS RAY)
#ifdef DEBUG_K
__device__ float helper(float *dbg, float a) {
#else
__device__ float helper(float a) {
#endif
    return 2.0f * a;
}
#ifdef DEBUG_K
__global__ void scale(float *dbg, float *out, const float *in, int n)
#else
__global__ void scale(float *out, const float *in, int n)
#endif
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef DEBUG_K
    if (i < n) { out[i] = helper(dbg, in[i]); dbg[i] = 1.0f; }
#else
    if (i < n) out[i] = helper(in[i]);
#endif
}
__global__ void after(float *x) { x[threadIdx.x] = 1.0f; }
"""


def test_ifdef_branches_are_read_as_the_compile_reads_them():
    """ISPASS RAY: a device function whose two #ifdef branches each open a '{' hid every later kernel (0 kernels
    listed), and a kernel's parameter names came from the branch the compile drops (`out` named `dbg`, the output
    checked under the wrong name). Without -D DEBUG_K the #else branches are the code; with it, the #ifdef ones."""
    mod = compile_cuda("ray.cu", source=IFDEF_SIGNATURES)
    assert sorted(k.name for k in mod.kernels) == ["after", "scale"]
    assert [p.name for p in mod.kernel("scale").params] == ["out", "in", "n"]
    # -D DEBUG_K as analyze gives it (1), as kernels inspect does (no value, or the text "1"), or to a non-number
    for value in (1, None, "1", "yes"):
        mod = compile_cuda("ray.cu", source=IFDEF_SIGNATURES, defines={"DEBUG_K": value})
        assert sorted(k.name for k in mod.kernels) == ["after", "scale"], value
        assert [p.name for p in mod.kernel("scale").params] == ["dbg", "out", "in", "n"], value


def test_ifdef_of_a_name_the_file_defined_before():
    """AutoDock-GPU: `#define ADADELTA_AUTOSTOP` then a do-while closed by `} while (...)` in both the #ifdef and the
    #else branch: a name the file defines was undecided, both braces counted, the kernel ended early and the next
    one fell inside it. A #define of a branch every compile takes decides later #ifdefs (and #if on its number);
    one inside an undecided branch leaves them undecided. By hand: 5 iterations, out = 5."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("#define AUTOSTOP\n#define LIMIT 1000\n"
           "__global__ void k(float* out, int n)\n{\n    int i = 0;\n    float acc = 0.0f;\n    do {\n"
           "        acc += 1.0f;\n        i++;\n#ifdef AUTOSTOP\n#if LIMIT > 100\n"
           "    } while (i < n && acc < 1000.0f);\n#else\n    } while (i < n && acc < 10.0f);\n#endif\n#else\n"
           "    } while (i < n);\n#endif\n    out[threadIdx.x] = acc;\n}\n"
           "__global__ void after(float *x) { x[threadIdx.x] = 1.0f; }\n")
    mod = compile_cuda("autostop.cu", source=src)
    assert sorted(k.name for k in mod.kernels) == ["after", "k"]
    out = np.zeros(32, np.float32)
    simulate(load_kernel(source=src, path="autostop.cu", entry="k"), 1, 32, [out, 5])
    assert (out == 5).all()


def test_a_file_starting_with_a_byte_order_mark(tmp_path):
    """ccminer's cuda_quark_blake512.cu starts with a UTF-8 byte-order mark, which gcc and nvcc skip: NVRTC read
    "unrecognized token" at line 1. So does a header with one."""
    (tmp_path / "h.cuh").write_bytes("\ufeff#define TWO 2.0f\n".encode())
    (tmp_path / "bom.cu").write_bytes(('\ufeff#include "h.cuh"\n'
                                       "__global__ void k(float *x) { x[threadIdx.x] = TWO; }\n").encode())
    mod = compile_cuda(tmp_path / "bom.cu")
    assert [k.name for k in mod.kernels] == ["k"] and mod.kernel("k").line == 2


def test_the_toolkit_version_macros_are_defined_as_nvcc_has_them():
    """ccminer's cuda_helper.h maps __shfl to __shfl_sync, and its keccak takes its lop3 asm, only when
    CUDA_VERSION >= 9000: <cuda.h> is set aside (host-only), so CUDA_VERSION was undefined and perfmodel analysed
    the pre-CUDA-9 branch. CUDA_VERSION (where cuda.h is included) and CUDART_VERSION (always, nvcc's implicit
    cuda_runtime.h) are the installed headers' values. By hand: out = 1 + 10."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("#include <cuda.h>\n__global__ void k(int *out)\n{\n#if CUDA_VERSION >= 9000\n    int v = 1;\n#else\n"
           "    int v = 2;\n#endif\n#ifdef CUDART_VERSION\n    v += 10;\n#endif\n    out[threadIdx.x] = v;\n}\n")
    out = np.zeros(32, np.int32)
    simulate(load_kernel(source=src, path="ver.cu"), 1, 32, [out])
    assert (out == 11).all()


def test_glibc_sys_types_are_there_as_nvcc_has_them():
    """ccminer's cuda_helper.h takes an `off_t`: nvcc's device code has glibc's <sys/types.h> (through
    cuda_runtime.h's <stdlib.h>), NVRTC none of it ("identifier off_t is undefined"). On x86-64 glibc off_t, ssize_t
    and time_t are `long int` (8 bytes, signed) and u_int32_t an unsigned 32-bit int. A file that declares one of
    the names itself keeps its own. By hand: out = 8 + 8 + 8 + 4 + (a signed off_t: -1 < 0) = 29, and 2 for the
    file whose off_t is a 2-byte short."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("__device__ int size_of(off_t i) { return (int)sizeof(i); }\n"
           "__global__ void k(int *out, ssize_t n)\n{\n    u_int32_t u = 0u;\n"
           "    out[threadIdx.x] = size_of(0) + (int)sizeof(n) + (int)sizeof(time_t) + (int)sizeof(u)"
           " + ((off_t)-1 < 0);\n}\n")
    out = np.zeros(32, np.int32)
    simulate(load_kernel(source=src, path="systypes.cu"), 1, 32, [out, 5])
    assert (out == 29).all()
    own = "typedef short off_t;\n__global__ void k(int *out) { out[threadIdx.x] = (int)sizeof(off_t); }\n"
    simulate(load_kernel(source=own, path="own_off_t.cu"), 1, 32, [out])
    assert (out == 2).all()


def test_typedefs_of_tagged_enums_and_of_member_function_pointers():
    """RSBench: `typedef enum __hm{SMALL, LARGE} HM_size;` was read as an alias named after the tag, which nothing
    named, and set aside: "identifier HM_size is undefined". HeCBench lulesh: `typedef Real_t &(Domain::*
    Domain_member)(Index_t);` was kept while the host class Domain (std::vector members) was set aside: "name
    followed by '::' must be a class". A function-pointer typedef that device code uses stays."""
    src = ("#include <vector>\n"
           "typedef enum __hm{SMALL, LARGE, XL} HM_size;\n"
           "class Domain { public: double &x(int i) { return m_x[i]; } std::vector<double> m_x; };\n"
           "typedef double &(Domain::* Domain_member)(int);\n"
           "typedef float (*op_t)(float);\n"
           "__device__ float twice(float v) { return 2.0f * v; }\n"
           "__device__ float apply(op_t f, float v) { return f(v); }\n"
           "__global__ void k(HM_size h, float *out) { out[threadIdx.x] = apply(twice, (float)(h == LARGE)); }\n")
    mod = compile_cuda("typedefs.cu", source=src)
    assert [(p.name, p.ctype) for p in mod.kernel("k").params] == [("h", "HM_size"), ("out", "float*")]


def test_a_gnu_statement_expression_is_named_in_the_error():
    """HeCBench lulesh: `#define max(a,b) ({ __typeof__ (a) _a = (a); ... })`, which nvcc takes and NVRTC refuses,
    gave only "expected an expression" at the line using it; the error names the macro and its line."""
    src = ("#define mymax(a,b) ({ __typeof__ (a) _a = (a); __typeof__ (b) _b = (b); _a > _b ? _a : _b; })\n"
           "__global__ void k(const double *x, double *y, int n) {\n"
           "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = mymax(x[i], 0.0);\n}\n")
    with pytest.raises(CompileError) as err:
        compile_cuda("stmt.cu", source=src)
    assert "The macro mymax (stmt.cu:1) holds a GNU statement expression" in str(err.value), str(err.value)
    assert err.value.location.line == 4


def test_parameters_from_a_macro_a_bounds_macro_before_void_and_host_functions_from_a_macro():
    """CloverLeaf: a kernel whose parameter list starts with an object-like macro standing for several parameters
    was listed with 3 parameters against the compiled 14 (`--arg` refused); its pack file's extern "C" host
    functions, generated by a function-like macro, stayed in and failed the compile ("cuda_chunk is undefined").
    cudpp: `__global__ LAUNCH_BOUNDS(32) void radixSortSingleWarp(...)`, the macro before the return type, was read
    as a kernel named LAUNCH_BOUNDS."""
    src = ("#define SHARED_ARGS const int n, const float* __restrict const in\n"
           "#define LAUNCH_BOUNDS(x) __launch_bounds__((x))\n"
           "struct Chunk { void pack(int a); };\nextern Chunk the_chunk;\n"
           "#define C_INTERFACE(name) extern \"C\" void name##_cuda_(int* a) { the_chunk.pack(*a); }\n"
           "C_INTERFACE(pack_left)\nC_INTERFACE(pack_right)\n"
           "__global__ void k(SHARED_ARGS, float* __restrict const out)\n"
           "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = 2.0f * in[i]; }\n"
           "template <bool flip>\n__global__\nLAUNCH_BOUNDS(32)\nvoid warpKernel(unsigned* keys)\n"
           "{ keys[threadIdx.x] = flip ? ~keys[threadIdx.x] : keys[threadIdx.x] + 1; }\n")
    mod = compile_cuda("clover.cu", source=src, name_expressions=["warpKernel<true>"])
    assert [p.name for p in mod.kernel("k").params] == ["n", "in", "out"]
    assert [p.name for p in mod.kernel("warpKernel<true>").params] == ["keys"]


def test_programmatic_dependent_launch_calls_compile_and_run():
    """llama.cpp's ggml-cuda calls cudaGridDependencySynchronize() and cudaTriggerProgrammaticLaunchCompletion() in
    nearly every kernel (sm_90): nvcc's implicit cuda_runtime.h defines them, NVRTC's compile did not ("identifier
    is undefined"), and inspect listed their griddepcontrol instruction as unsupported though the executor runs it
    (a no-op for one launch). By hand: y = 2 x."""
    from perfmodel.compile.support import unsupported_opcodes
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("__global__ void k(const float *x, float *y, int n) {\n    cudaGridDependencySynchronize();\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = 2.0f * x[i];\n"
           "    cudaTriggerProgrammaticLaunchCompletion();\n}\n")
    mod = compile_cuda("pdl.cu", source=src)
    assert "griddepcontrol" in mod.ptx_body("k") and not unsupported_opcodes(mod.ptx_body("k"))
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    simulate(load_kernel(source=src, path="pdl.cu"), 1, 64, [x, y, 64])
    assert np.array_equal(y, 2 * x)


def test_a_project_header_named_like_a_toolkit_header_is_the_projects(tmp_path):
    """llama.cpp's ggml-cuda includes "vendors/cuda.h", its own header (cuda_fp16.h and its macros): its name made
    it the driver API's cuda.h, set aside, and every ggml file failed ("identifier ... is undefined")."""
    (tmp_path / "vendors").mkdir()
    (tmp_path / "vendors" / "cuda.h").write_text("#pragma once\n#include <cuda_fp16.h>\n#define MY_VENDOR_MACRO 3\n")
    (tmp_path / "k.cu").write_text('#include "vendors/cuda.h"\n'
                                   "__global__ void k(float *x) { x[threadIdx.x] = MY_VENDOR_MACRO + "
                                   "__half2float(__float2half(1.0f)); }\n")
    mod = compile_cuda(tmp_path / "k.cu")
    assert [k.name for k in mod.kernels] == ["k"] and "vendors/cuda.h" not in mod.set_aside_includes


def test_device_tables_declared_through_brace_opening_macros(tmp_path):
    """ggml-common.h declares its __device__ lookup tables as GGML_TABLE_BEGIN(type, name, size) values
    GGML_TABLE_END(), the first macro opening the initialiser's '{' and the second closing it: the scan kept the
    first invocation and blanked the rest (an unclosed '{', "expected an expression"), or, in the kernel's own file,
    lost the next kernel's parameter names. By hand: y[i] = tab_a[i] + tab_b[i] = 11 (i + 1)."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    (tmp_path / "tables.h").write_text(
        "#pragma once\n#define TABLE_BEGIN(type, name, size) static const __device__ type name[size] = {\n"
        "#define TABLE_END() };\n\nTABLE_BEGIN(int, tab_a, 4)\n    1, 2, 3, 4,\nTABLE_END()\n\n"
        "TABLE_BEGIN(int, tab_b, 4)\n    10, 20, 30, 40,\nTABLE_END()\n")
    (tmp_path / "k.cu").write_text('#include "tables.h"\n'
                                   "__global__ void k(int *y) { y[threadIdx.x] = tab_a[threadIdx.x] + tab_b[threadIdx.x]; }\n")
    program = load_kernel(tmp_path / "k.cu")
    assert [p.name for p in program.params] == ["y"]
    y = np.zeros(4, np.int32)
    simulate(program, 1, 4, [y])
    assert y.tolist() == [11, 22, 33, 44]


def test_a_function_pointer_template_parameter_with_two_arguments():
    """ggml's k_bin_bcast<float (*bin_op)(const float, const float), typename src0_t, ...>: the template parameters
    were split at the function pointer's inner comma, so the type arguments shifted by one and `src0` read as
    `const int*`. By hand: dst = (double)(src0 + (float)src1)."""
    from perfmodel.compile.lexer import template_params, tokenize
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    head = "template <float (*bin_op)(const float, const float), typename src0_t, typename src1_t, typename dst_t>"
    assert [name for _kind, name in template_params([t.text for t in tokenize(head)])] == [
        "bin_op", "src0_t", "src1_t", "dst_t"]
    src = ("__device__ float op_add(const float a, const float b) { return a + b; }\n" + head + "\n"
           "__global__ void bcast(const src0_t *src0, const src1_t *src1, dst_t *dst, int n) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    if (i < n) dst[i] = (dst_t) bin_op((float) src0[i], (float) src1[i]);\n}\n")
    program = load_kernel(source=src, path="bcast.cu", entry="bcast<op_add, float, int, double>")
    src0 = np.random.default_rng(2).uniform(-1, 1, 64).astype(np.float32)
    src1 = np.arange(64, dtype=np.int32)
    dst = np.zeros(64, np.float64)
    simulate(program, 1, 64, [src0, src1, dst, 64])
    assert np.array_equal(dst, (src0 + src1.astype(np.float32)).astype(np.float64))


def test_a_compile_error_shows_the_next_errors_too():
    """ggml: the first NVRTC error hid another cause ("(2 more errors)" and nothing else). The next errors that
    say something else follow in the parentheses."""
    src = "__global__ void k(float *x) {\n  x[0] = undefined_a;\n  x[1] = undefined_b;\n}\n"
    with pytest.raises(CompileError) as err:
        compile_cuda("errs.cu", source=src)
    assert 'errs.cu:2: error: identifier "undefined_a" is undefined (1 more error: errs.cu:3: identifier ' \
           '"undefined_b" is undefined)' in str(err.value), str(err.value)


def test_a_kernel_with_a_function_parameter_pack():
    """ggml's k_bin_bcast<..., src1_ptrs...>(..., src1_ptrs... src1s): an empty pack was a phantom required
    parameter (`no value for parameter 'src1s'`), a two-element one a single parameter (23 for 24). Each element
    is a parameter, NAME_0, NAME_1, ... By hand: dst = a + s0 + s1, and a alone with the empty pack."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("template <typename dst_t, typename... src1_ptrs>\n"
           "__global__ void add_all(const float *a, dst_t *dst, int n, src1_ptrs... srcs) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n    float r = a[i];\n"
           "    if constexpr (sizeof...(src1_ptrs) > 0) { r = (..., (r = r + srcs[i])); }\n"
           "    dst[i] = (dst_t) r;\n}\n")
    rng = np.random.default_rng(4)
    a, s0, s1 = (rng.uniform(-1, 1, 64).astype(np.float32) for _ in range(3))
    two = load_kernel(source=src, path="pack.cu", entry="add_all<float, const float*, const float*>")
    assert [p.name for p in two.params] == ["a", "dst", "n", "srcs_0", "srcs_1"]
    dst = np.zeros(64, np.float32)
    simulate(two, 1, 64, [a, dst, 64, s0, s1])
    assert np.array_equal(dst, (a + s0) + s1)
    none = load_kernel(source=src, path="pack.cu", entry="add_all<float>")
    assert [p.name for p in none.params] == ["a", "dst", "n"]
    dst = np.zeros(64, np.float32)
    simulate(none, 1, 64, [a, dst, 64])
    assert np.array_equal(dst, a)


def test_a_manifest_from_another_scan_is_not_used(tmp_path, monkeypatch):
    """A verification run found kernel lists of an older scan served from the compile cache (the scan had changed
    with no FORMAT_VERSION bump): CloverLeaf's macro parameter list still read `_SHARED_KERNEL_ARGS_ arg0`. The
    manifest's key holds a hash of the scan's code, so a file is read again when that code changes."""
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path / "cache"))
    src = "#define ARGS const int n, const float *in\n__global__ void k(ARGS, float *out) { out[0] = in[0] * n; }\n"
    assert [p.name for p in compile_cuda("m.cu", source=src).kernel("k").params] == ["n", "in", "out"]
    args = (src, "m.cu", "sm_90", {}, [], [], nvrtc.version(), 18)
    before = compile_cache.raw_key(*args)
    monkeypatch.setattr(compile_cache, "scan_fingerprint", lambda: "another scan")
    assert compile_cache.raw_key(*args) != before


def test_source_text_with_default_args_and_scalar_dtypes():
    src = HOSTY.replace("not_declared_anywhere", "1.0f")
    mod = compile_cuda("hosty.cu", source=src)
    k = mod.kernel("k")
    assert [(p.name, p.ctype, p.dtype) for p in k.params] == [
        ("p", "Pair*", None), ("n", "uint", np.dtype("uint32")), ("m", "int", np.dtype("int32"))]
    assert k.static_shared_bytes == 16 * 16 * 4


def test_define_overrides_the_source_define():
    src = HOSTY.replace("not_declared_anywhere", "1.0f")
    base = compile_cuda("hosty.cu", source=src).kernel("k")
    big = compile_cuda("hosty.cu", source=src, defines={"TILE": 32})
    assert base.static_shared_bytes == 16 * 16 * 4
    assert big.kernel("k").static_shared_bytes == 32 * 32 * 4
    assert "-DTILE=32" in big.options
    assert big.source_lines == src.splitlines()      # the user's text, unchanged


def test_error_in_an_included_header_names_the_header(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "kern.cuh").write_text("#pragma once\n\n__device__ float f(float x)\n{\n  return x + oops;\n}\n")
    (tmp_path / "main.cu").write_text('#include <stdio.h>\n#include "inc/kern.cuh"\n'
                                      "__global__ void k(float *x) { x[0] = f(x[1]); }\n")
    with pytest.raises(CompileError) as info:
        compile_cuda(tmp_path / "main.cu")
    assert info.value.location.line == 5 and info.value.location.file.endswith("kern.cuh")


def test_include_dirs_are_searched(tmp_path):
    (tmp_path / "hdr").mkdir()
    (tmp_path / "hdr" / "consts.h").write_text("#define WIDTH 24\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text("#include <consts.h>\n__global__ void k(float *x)\n"
                                           "{ __shared__ float s[WIDTH]; s[threadIdx.x] = 1; x[0] = s[1]; }\n")
    mod = compile_cuda(tmp_path / "src" / "k.cu", include_dirs=[tmp_path / "hdr"])
    assert mod.kernel("k").static_shared_bytes == 24 * 4


# ---- resources: independent oracle ---------------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no system ptxas (an independent oracle) on this machine")
def test_registers_match_a_separate_ptxas(tmp_path):
    from perfmodel.compile.signature import parse_ptxas_log

    for path, exprs in ((VECTOR_ADD, ()), (MATRIX_MUL, ("MatrixMulCUDA<32>",)), (COOP, ()), (VOTE_CU, ())):
        mod = compile_cuda(path, name_expressions=exprs)
        ptx = tmp_path / (path.stem + ".ptx")
        version = subprocess.run(["ptxas", "--version"], capture_output=True, text=True).stdout
        ptx_text = mod.ptx
        m = re.search(r"release (\d+)\.(\d+)", version)
        if m and (int(m.group(1)), int(m.group(2))) < nvrtc.version():   # older ptxas: same ISA, older header
            ptx_text = re.sub(r"^\.version \d+\.\d+", ".version 9.0", ptx_text, flags=re.M)
        ptx.write_text(ptx_text)
        proc = subprocess.run(["ptxas", f"-arch={mod.arch}", "-v", str(ptx), "-o", os.devnull],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"system ptxas cannot read NVRTC's PTX: {proc.stderr.strip()[:200]}")
        oracle = parse_ptxas_log(proc.stdout + proc.stderr)
        for k in mod.kernels:
            o = oracle[k.mangled]
            assert (k.registers, k.static_shared_bytes, k.local_bytes, k.barriers) == (
                o["registers"], o["static_shared_bytes"], o["local_bytes"], o["barriers"]), k.expression


# ---- cache, arch ---------------------------------------------------------------------------------------------------

def test_cache_hit_in_process_and_on_disk(monkeypatch, session_cache):
    src = "__global__ void cached_kernel(int *x) { x[threadIdx.x] = 7; }\n"
    first = compile_cuda("c.cu", source=src)
    assert list((session_cache / "compile").glob("*.json"))

    def no_compile(*args, **kwargs):
        raise AssertionError("NVRTC called although the result is cached")

    monkeypatch.setattr(nvrtc, "compile_program", no_compile)
    again = compile_cuda("c.cu", source=src)                      # in-process LRU
    compile_cache.clear_memory()
    from_disk = compile_cuda("c.cu", source=src)                  # disk
    assert again.ptx == first.ptx == from_disk.ptx and from_disk.cubin == first.cubin
    assert from_disk.kernel("cached_kernel").registers == first.kernel("cached_kernel").registers
    with pytest.raises(AssertionError):
        compile_cuda("c.cu", source=src, cache=False)


def test_nvrtc_arch_clamping():
    assert nvrtc_arch("sm_90") == ("sm_90", "")
    assert nvrtc_arch("8.6") == ("sm_86", "")
    arch, note = nvrtc_arch("sm_10")
    assert arch == "sm_75" and "sm_75 and newer" in note and "CC 1.0" in note
    assert nvrtc_arch("sm_91")[0] == "sm_90" and nvrtc_arch("sm_91")[1]
    with pytest.raises(CompileError):
        nvrtc_arch("volta")
    mod = compile_cuda(VECTOR_ADD, arch="sm_20")
    assert mod.arch == "sm_75" and mod.requested_arch == "sm_20" and ".target sm_75" in mod.ptx


def test_missing_nvrtc_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(nvrtc, "nvidia_roots", lambda: [])
    monkeypatch.delenv("PERFMODEL_NVRTC", raising=False)
    nvrtc._library.cache_clear()
    try:
        with pytest.raises(CompileError, match="pip install nvidia-cuda-nvrtc"):
            nvrtc._library()
    finally:
        nvrtc._library.cache_clear()


# ---- unsupported PTX, SASS -----------------------------------------------------------------------------------------

def test_texture_and_surface_forms_the_executor_runs_are_not_listed_as_unsupported():
    from perfmodel.compile.support import unsupported_opcodes

    mod = compile_cuda(TEXTURE)
    assert unsupported_opcodes(mod.ptx_body("transformKernel")) == []        # tex.2d (perfmodel/sim/texture.py)
    surface = compile_cuda(source="__global__ void k(cudaSurfaceObject_t s, float *o) {"
                                  " o[0] = surf2Dread<float>(s, 4, 2); surf2Dwrite(1.0f, s, 0, 0); }")
    assert unsupported_opcodes(surface.ptx_body("k")) == []                  # suld.b / sust.b
    volume = compile_cuda(source="__global__ void k(cudaTextureObject_t t, float *o) {"
                                 " o[0] = tex3D<float>(t, 0.5f, 0.5f, 0.5f); }")
    assert unsupported_opcodes(volume.ptx_body("k")) == []                   # tex.3d
    cube = compile_cuda(source="__global__ void k(cudaTextureObject_t t, float *o) {"
                               " o[0] = texCubemap<float>(t, 0.5f, 0.5f, 0.5f); }")
    assert unsupported_opcodes(cube.ptx_body("k")) == ["tex"]                # tex.cube is not run
    assert unsupported_opcodes(compile_cuda(VECTOR_ADD).ptx_body("vectorAdd")) == []


def test_sass_line_counts():
    mod = compile_cuda(VECTOR_ADD)
    counts = mod.sass_line_counts("vectorAdd")
    if counts is None:
        pytest.skip("nvdisasm (nvidia-cuda-nvdisasm wheel) not installed")
    path = str(VECTOR_ADD.resolve())
    add_line = next(i for i, t in enumerate(mod.source_lines, 1) if "C[i] = A[i] + B[i]" in t)
    assert counts[(path, add_line)] >= 3          # two loads, an add, a store
    assert sum(counts.values()) == mod.sass_instruction_count("vectorAdd")
    assert all(f == path for f, _ in counts)


def test_sass_missing_nvdisasm_gives_none(monkeypatch, tmp_path):
    from perfmodel.compile import sass

    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PERFMODEL_NVDISASM", str(tmp_path / "no-such-nvdisasm"))
    monkeypatch.setattr(sass, "_memory", {})
    sass.find_nvdisasm.cache_clear()
    try:
        mod = compile_cuda(VECTOR_ADD)
        assert mod.sass_line_counts("vectorAdd") is None and mod.sass_instruction_count("vectorAdd") is None
    finally:
        sass.find_nvdisasm.cache_clear()


PREPROCESSED = """\
#include <stdio.h>
#if 0
__global__ void retired_kernel(float *x) { x[0] = 1; }
#endif
typedef unsigned int u32;
using real = double;
struct __align__(16) Vec { float x, y, z, w; };
__device__ struct Vec make_vec(float a) { Vec v; v.x = v.y = v.z = v.w = a; return v; }
struct HostOnly { HostOnly(int n) : n(n) {} int n; void print() const { printf("%d", n); } };
constexpr int square(int x) { return x * x; }
__global__ void k(u32 *a, real b, const float4 *__restrict__ c, Vec *v)
{
    a[threadIdx.x] = square(3) + b + c[0].x;
    v[0] = make_vec(c[1].y);
}
int main() { HostOnly h(3); h.print(); return 0; }
"""


def test_kernels_compiled_out_by_the_preprocessor_typedefs_and_vector_types():
    mod = compile_cuda("pre.cu", source=PREPROCESSED)
    assert [k.name for k in mod.kernels] == ["k"]          # retired_kernel is under #if 0
    params = mod.kernel("k").params
    assert [(p.name, p.ctype) for p in params] == [("a", "u32*"), ("b", "real"), ("c", "const float4*"),
                                                   ("v", "Vec*")]
    assert params[0].dtype == np.dtype("uint32") and params[1].dtype == np.dtype("float64")
    assert params[2].dtype.names == ("x", "y", "z", "w") and params[2].dtype.itemsize == 16
    assert params[3].dtype is None
    assert (params[1].size, params[1].align) == (8, 8)


def test_cache_sees_a_changed_header(tmp_path):
    (tmp_path / "width.cuh").write_text("#define W 8\n")
    main = tmp_path / "main.cu"
    main.write_text('#include "width.cuh"\n__global__ void k(float *x)\n'
                    "{ __shared__ float s[W]; s[threadIdx.x] = x[0]; x[1] = s[2]; }\n")
    assert compile_cuda(main).kernel("k").static_shared_bytes == 8 * 4
    assert compile_cuda(main).kernel("k").static_shared_bytes == 8 * 4        # cached
    (tmp_path / "width.cuh").write_text("#define W 64\n")
    assert compile_cuda(main).kernel("k").static_shared_bytes == 64 * 4       # the header changed
    compile_cache.clear_memory()
    (tmp_path / "width.cuh").write_text("#define W 32\n")
    assert compile_cuda(main).kernel("k").static_shared_bytes == 32 * 4       # from disk: manifest invalid


HEADER = "#define W {w}\n__device__ float scaled(float v)\n{{\n  return v * 2.0f + 1.0f;\n}}\n"


def test_a_copy_in_another_folder_reuses_the_compile_and_the_listing(tmp_path, monkeypatch):
    """A second clone (or pytest's next temporary folder) compiles nothing again and runs no nvdisasm: the compile
    key leaves the kernel's folder out, and what the cache holds is read with its paths moved to the new folder."""
    from perfmodel.compile import sass

    src = ('#include "width.cuh"\n__global__ void k(float *x)\n'
           "{ __shared__ float s[W]; s[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n"
           "  x[threadIdx.x] = scaled(s[(threadIdx.x + 1) % W]); }\n")
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "width.cuh").write_text(HEADER.format(w=32))
        (tmp_path / name / "main.cu").write_text(src)
    first = compile_cuda(tmp_path / "one" / "main.cu")
    lines_one = first.sass_line_counts("k")
    if lines_one is None:
        pytest.skip("nvdisasm is not installed")
    compile_cache.clear_memory()
    sass._memory.clear()

    def nothing_again(*args, **kwargs):
        raise AssertionError("compiled or disassembled again although a copy of the file is cached")

    monkeypatch.setattr(nvrtc, "compile_program", nothing_again)
    monkeypatch.setattr(sass, "_run_nvdisasm", nothing_again)
    second = compile_cuda(tmp_path / "two" / "main.cu")
    one, two = str(tmp_path / "one") + "/", str(tmp_path / "two") + "/"
    assert one in first.ptx and two not in first.ptx
    assert two in second.ptx and one not in second.ptx                # the .file table names the copy
    assert second.ptx == first.ptx.replace(one, two) and second.cubin == first.cubin
    lines_two = second.sass_line_counts("k")
    assert lines_two == {(f.replace(one, two), ln): n for (f, ln), n in lines_one.items()}
    assert {f for f, _ in lines_two} >= {two + "main.cu", two + "width.cuh"}
    # the content still decides: a different header in a third folder is compiled
    (tmp_path / "three").mkdir()
    (tmp_path / "three" / "width.cuh").write_text(HEADER.format(w=64))
    (tmp_path / "three" / "main.cu").write_text(src)
    with pytest.raises(AssertionError, match="compiled or disassembled again"):
        compile_cuda(tmp_path / "three" / "main.cu")


def test_relocation_moves_paths_not_other_mentions_of_the_folder():
    ptx = '.file\t1 "/src/a/main.cu"\n.file\t2 "/src/a/sub/width.cuh"\n// /src/a/ in a comment\n'
    log = "/src/a/main.cu(3): warning: x declared but never referenced, see /src/a/notes\nptxas info\n"
    sass = '\t//## File "/src/a/width.cuh", line 4 inlined at "/src/a/main.cu", line 8\n'
    assert compile_cache.relocate(ptx, [("/src/a", "/home/u/b")]) == (
        '.file\t1 "/home/u/b/main.cu"\n.file\t2 "/home/u/b/sub/width.cuh"\n// /src/a/ in a comment\n')
    assert compile_cache.relocate(log, [("/src/a", "/home/u/b")]) == log.replace("/src/a/main.cu", "/home/u/b/main.cu")
    assert compile_cache.relocate(sass, [("/src/a", "/x")]) == sass.replace("/src/a/", "/x/")
    assert compile_cache.relocate(sass, [("/src/a", "/src/a")]) == sass
    assert compile_cache.relocate(sass, [("/src/ab", "/x")]) == sass          # another folder with the same prefix
    # the kernel's folder and the NVIDIA wheels' folder (another virtual environment) move together
    both = '"/src/a/main.cu" "/venv1/site-packages/nvidia/cu13/include/cuda_fp16.hpp"'
    assert compile_cache.relocate(both, [("/src/a", "/b"), ("/venv1/site-packages", "/venv2/lib/site-packages")]) \
        == '"/b/main.cu" "/venv2/lib/site-packages/nvidia/cu13/include/cuda_fp16.hpp"'
    # a virtual environment inside the project: each path moves once, by the longer folder that holds it
    nested = '"/p/k.cu" "/p/.venv/site-packages/nvidia/x.h"'
    assert compile_cache.relocate(nested, [("/p", "/q"), ("/p/.venv/site-packages", "/q/env/site-packages")]) == (
        '"/q/k.cu" "/q/env/site-packages/nvidia/x.h"')
    assert compile_cache.relocate(nested, [("/p", "/p/sub"), ("/p/.venv/site-packages", "/p/v2")]) == (
        '"/p/sub/k.cu" "/p/v2/nvidia/x.h"')
    rec = compile_cache.Record(ptx="", log="", root="/src/a", sdk="/venv1/site-packages")
    assert compile_cache.moves(rec, "/src/a", "/venv2") == (("/venv1/site-packages", "/venv2"),)
    assert compile_cache.moves(rec, "/src/a", "/venv1/site-packages") == ()
    assert compile_cache.moves(compile_cache.Record(ptx="", log=""), "/src/a", "/venv2") == ()   # older records
    # the key leaves the folder out of #line paths only (a string in the code that names it is code)
    text = '#line 1 "/src/a/main.cu"\nconst char *s = "/src/a/x";\n#line 9 "/src/a/main.cu"\n'
    moved = text.replace("/src/a/", "/elsewhere/")
    assert compile_cache.relative_text(text, "/src/a") != compile_cache.relative_text(moved, "/elsewhere")
    assert compile_cache.relative_text(text, "/src/a") == compile_cache.relative_text(
        moved.replace('"/elsewhere/x"', '"/src/a/x"'), "/elsewhere")
    assert compile_cache.relative_text(text, "/src/a") != compile_cache.relative_text(
        text.replace("main.cu", "other.cu"), "/src/a")
    # the -I folders of the NVIDIA wheels count relative to the environment's site-packages; the wheels' versions
    # are in the key (header_wheel_versions), a user's own -I folder stays absolute
    def key(sdk, extra="-I/home/u/inc"):
        return compile_cache.cache_key(text, ["--gpu-architecture=sm_90", f"-I{sdk}/nvidia/cu13/include", extra], [],
                                       (13, 0), 3, "/src/a", sdk)
    assert key("/venv1/site-packages") == key("/tmp/venv2/lib/python3.11/site-packages")
    assert key("/venv1/site-packages") != key("/venv1/site-packages", "-I/home/v/inc")


def test_kernel_declared_and_defined_with_different_signatures():
    src = ("__global__ void k(int *a, int n);\n"
           "__global__ void k(int *a, int n, int m)\n{\n  a[0] = n + m;\n}\n")
    mod = compile_cuda("overload.cu", source=src)
    k = mod.kernel("k")
    assert k.expression == "k" and k.mangled == "_Z1kPiii"
    assert [p.name for p in k.params] == ["a", "n", "m"]


@pytest.mark.parametrize("name, defines", [("matmul_tiled", {"TILE_WIDTH": 16}), ("spmv_csr", {}),
                                           ("conv2d_tiled", {})])
def test_nvdisasm_without_dataflow_prints_the_same_listing(name, defines):
    # perfmodel runs nvdisasm with -ndf (no register dataflow analysis: a third less time); the listing it
    # reads must be the one nvdisasm prints with its default analysis
    import subprocess
    import tempfile

    from perfmodel.compile.sass import find_nvdisasm

    tool = find_nvdisasm()
    if tool is None:
        pytest.skip("nvdisasm (nvidia-cuda-nvdisasm wheel) not installed")
    mod = compile_cuda(Path(__file__).parent.parent / "kernels_spec" / f"{name}.cu", defines=defines)
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(mod.cubin)
        f.flush()
        full, lean = (subprocess.run([tool, "-gi", "-c", *extra, f.name], capture_output=True, text=True,
                                     check=True).stdout for extra in ((), ("-ndf",)))
    assert lean == full and "LDG" in full


def test_if_branches_see_the_macros_of_headers_and_of_earlier_lines(tmp_path):
    """Three ways the #if verdicts were wrong. A macro a found header defines (cfg.h's `#define USE_FOO`) was
    taken as defined by nothing, so `#ifdef USE_FOO` was dead and the scan kept the #else kernel, which the
    compile never saw: 0 kernels. chai's common.h `#if DOUBLE_PRECISION / #define T double / #else / #define T
    float`: the scan read the last #define whatever the branch, so `T *x` was float* where NVRTC compiled double*.
    And `#ifndef DOUBLE_PRECISION / #define DOUBLE_PRECISION 1 / #endif` before it was undecided (the file defines
    the name somewhere), so the #if was too. The compiled signatures say which is right."""
    (tmp_path / "cfg.h").write_text("#define USE_FOO 1\n#define REAL double\n")
    (tmp_path / "a.cu").write_text('#include "cfg.h"\n#ifdef USE_FOO\n__global__ void foo(REAL *x) { x[0] = 1; }\n'
                                   "#else\n__global__ void bar(float *x) { x[0] = 1; }\n#endif\n")
    mod = compile_cuda(tmp_path / "a.cu")
    assert [(k.name, [p.ctype for p in k.params]) for k in mod.kernels] == [("foo", ["double*"])]
    body = "__global__ void scale(T *x, int n) { int i = threadIdx.x; if (i < n) x[i] = 2 * x[i]; }\n"
    for head in ("#if 1\n#define T double\n#else\n#define T float\n#endif\n",
                 "#ifndef DOUBLE_PRECISION\n#define DOUBLE_PRECISION 1\n#endif\n#if DOUBLE_PRECISION\n"
                 "#define T double\n#else\n#define T float\n#endif\n"):
        mod = compile_cuda("t.cu", source=head + body)
        assert [p.ctype for p in mod.kernel("scale").params] == ["double*", "int"], head
    mod = compile_cuda("t.cu", source="#ifndef DOUBLE_PRECISION\n#define DOUBLE_PRECISION 1\n#endif\n"
                       "#if DOUBLE_PRECISION\n#define T double\n#else\n#define T float\n#endif\n" + body,
                       defines={"DOUBLE_PRECISION": 0})
    assert [p.ctype for p in mod.kernel("scale").params] == ["float*", "int"]


def test_a_crash_inside_nvrtc_is_an_error_not_the_end_of_perfmodel(monkeypatch, cli, tmp_path):
    """NVRTC 13 dies with a segmentation fault on ethminer's `__ldg(&keccak_round_constants[i])` (a __constant__
    array) for sm_75 to sm_90: perfmodel died with it, exit 139 and no message. Each compile runs in a forked
    child; its death is a compile error naming the file and the architecture, exit 2. A crash is forced here (the
    child kills itself), and the real construct must leave the process standing whatever NVRTC does with it."""
    import os
    import signal

    from perfmodel.compile import nvrtc

    def crash(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGSEGV)

    import threading

    monkeypatch.setattr(nvrtc, "_compile_program", crash)
    # a thread another test of this worker left running makes the compile stay in this process, where the forced
    # crash would end the worker: the child is forked here whatever else runs
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    (tmp_path / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n")
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = cli("kernels", "inspect", str(tmp_path / "k.cu"))
    assert code == 2 and "k.cu: NVRTC crashed (signal 11, SIGSEGV) compiling for sm_90" in err, err
    monkeypatch.undo()
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path / "cache2"))
    (tmp_path / "ldg.cu").write_text(
        "__constant__ uint2 rc[4] = {{1, 0}, {2, 0}, {3, 0}, {4, 0}};\n"
        "__global__ void k(uint2 *out) {\n    uint2 s = make_uint2(threadIdx.x, 0);\n"
        "    for (int i = 0; i < 3; i++) { uint2 c = __ldg(&rc[i]); s.x ^= c.x; s.y ^= c.y; }\n"
        "    out[threadIdx.x] = s;\n}\n")
    code, out, err = cli("kernels", "inspect", str(tmp_path / "ldg.cu"))
    assert code in (0, 2) and "Traceback" not in err, err
    assert code == 0 or "NVRTC crashed" in err, err


def test_a_host_class_named_only_by_an_unused_macro_is_set_aside():
    """ethminer's `#define CUDA_SAFE_CALL(call) ... throw cuda_runtime_error(...)` and cuda-convnet2's `#define
    DEVICE_MEMORY_MANAGER CUDAMemoryManager` named host classes (one deriving from std::runtime_error, one holding a
    pthread mutex); every word of every #define counted as used by device code, so those classes were kept and the
    compile failed on <stdexcept>. A macro's words count where kept code names the macro."""
    src = ("#include <stdexcept>\n#include <string>\n"
           "struct my_error : public std::runtime_error {\n"
           "    my_error(const std::string& msg) : std::runtime_error(msg) {}\n};\n"
           "#define THROW_IT() throw my_error(\"fail\")\n"
           "struct Scale { float s; };\n#define SCALE_T Scale\n"
           "__global__ void scale(SCALE_T p, float* x, int n) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] *= p.s;\n}\n")
    mod = compile_cuda("macro_host.cu", source=src)
    assert [p.ctype for p in mod.kernel("scale").params] == ["Scale", "float*", "int"]


def test_an_undefined_macro_names_the_branch_that_defines_it(tmp_path):
    """darknet without -D GPU: `BLOCK` is #defined under `#ifdef GPU` in darknet.h, next to `#include "cudnn.h"`.
    The error said "Set aside because not found: #include <stdio.h>, ..., "cudnn.h"; pass -I DIR": C library
    headers (set aside by design) and a header in a branch no compile takes, and advice that cannot help. It now
    names where the macro is and under which branch, and lists neither."""
    (tmp_path / "k.cu").write_text(
        "#include <stdio.h>\n#ifdef USE_GPU_LIB\n#define TILE 256\n#include \"cudnn.h\"\n#endif\n"
        "__global__ void k(float *x, int n)\n{\n    __shared__ float s[TILE];\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    s[threadIdx.x] = i < n ? x[i] : 0;\n"
        "    __syncthreads();\n    if (i < n) x[i] = s[threadIdx.x] * 2;\n}\n")
    with pytest.raises(CompileError) as info:
        compile_cuda(tmp_path / "k.cu")
    message = str(info.value)
    assert 'k.cu:8: error: identifier "TILE" is undefined' in message, message
    assert "TILE is #defined at k.cu:3, under #ifdef USE_GPU_LIB" in message, message
    assert "stdio.h" not in message and "cudnn.h" not in message and "-I DIR" not in message, message
    mod = compile_cuda(tmp_path / "k.cu", defines={"USE_GPU_LIB": None})
    assert mod.kernel("k").static_shared_bytes == 1024


def test_forward_declarations_and_library_constants_stay():
    """Ray Tracing in One Weekend in CUDA (chapters 8-12): `class material;` before `struct hit_record { ...
    material *mat_ptr; }` was set aside as host code ("identifier material is undefined"): the forward declaration
    test compared a head of three words (the ';' counted) with two. A fork's `constexpr float kInf =
    std::numeric_limits<float>::infinity();` was set aside for naming std::, before the compile's libcu++ retry
    could give it. By hand: out = 1 x (2 + i), and -inf."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("class material;\nstruct hit_record { float t; material *mat_ptr; };\n"
           "class material { public: float albedo; };\n"
           "__global__ void k(float *out) {\n    material m; m.albedo = 2.0f + threadIdx.x;\n"
           "    hit_record rec; rec.t = 1.0f; rec.mat_ptr = &m;\n    out[threadIdx.x] = rec.t * rec.mat_ptr->albedo;\n}\n")
    out = np.zeros(32, np.float32)
    simulate(load_kernel(source=src, path="fwd.cu"), 1, 32, [out])
    assert out.tolist() == [2.0 + i for i in range(32)]
    src = ("#include <limits>\nconstexpr float kInf = std::numeric_limits<float>::infinity();\n"
           "__global__ void k(float *out) { out[threadIdx.x] = -kInf; }\n")
    simulate(load_kernel(source=src, path="inf.cu"), 1, 32, [out])
    assert np.isneginf(out).all()


def test_device_side_new_is_refused_saying_so(tmp_path):
    """Ray Tracing in One Weekend's create_world builds its scene with `new sphere(...)` in a kernel: the message
    said only "a call to the external function 'malloc'" at a line that shows `new`."""
    from perfmodel.errors import SimulationError
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    (tmp_path / "new.cu").write_text("struct Obj { float v; };\n__global__ void make(Obj **slot) {\n"
                                     "    if (threadIdx.x == 0) *slot = new Obj{1.5f};\n}\n")
    with pytest.raises(SimulationError, match=r"new\.cu:3:.*device-side memory allocation \(new, or malloc"):
        simulate(load_kernel(tmp_path / "new.cu"), 1, 32, [np.zeros(1, np.uint64)])


def test_guarded_headers_that_include_each_other(tmp_path):
    """kaldi's base/kaldi-common.h includes io-funcs.h and kaldi-math.h, which include kaldi-common.h again: every
    include of a guarded header was inlined anew, doubling the text at each level down to 40 (the scan ran for more
    than 15 minutes, --timeout not yet running). A header with an include guard is inlined once - except where the
    include is under an #if (kaldi's `#ifdef __IS_HIP_COMPILE__` branch includes cu-kernels-ansi.h, and the #else
    branch again: the compile skips the first copy, so the second must keep cu-matrixdim.h's MatrixDim). And a
    host `static const double kMinLogDiffDouble = Log(DBL_EPSILON);` (Log set aside) is set aside too."""
    import time

    (tmp_path / "a.h").write_text('#ifndef A_H_\n#define A_H_\n#include "b.h"\n#include "c.h"\ntypedef int myint;\n'
                                  "#endif\n")
    (tmp_path / "b.h").write_text('#ifndef B_H_\n#define B_H_\n#include "a.h"\n#include "c.h"\n#endif\n')
    (tmp_path / "c.h").write_text('#ifndef C_H_\n#define C_H_\n#include "a.h"\n#include "b.h"\n'
                                  "inline double Log(double x) { return x; }\n"
                                  "static const double kMin = Log(1e-9);\n#endif\n")
    (tmp_path / "dim.h").write_text("#ifndef DIM_H_\n#define DIM_H_\nstruct Dim { int rows, cols; };\n#endif\n")
    (tmp_path / "ansi.h").write_text('#ifndef ANSI_H_\n#define ANSI_H_\n#include "dim.h"\n#endif\n')
    (tmp_path / "k.cu").write_text('#include "a.h"\n#ifdef __IS_OTHER_COMPILER__\n#include "ansi.h"\n#else\n'
                                   '#include "ansi.h"\n#endif\n'
                                   "__global__ void scale(float *x, Dim d, myint n) {\n"
                                   "    int i = threadIdx.x; if (i < n && i < d.rows) x[i] *= 2.0f;\n}\n")
    started = time.perf_counter()
    mod = compile_cuda(tmp_path / "k.cu")
    assert time.perf_counter() - started < 60
    assert [p.ctype for p in mod.kernel("scale").params] == ["float*", "Dim", "myint"]


def test_a_guarded_header_decides_its_own_ifs(tmp_path):
    """chai's support/common.h: `#ifndef _COMMON_H_` guards `#ifndef DOUBLE_PRECISION / #define DOUBLE_PRECISION 1`
    and `#if DOUBLE_PRECISION / #define T double / #else / #define T float`. The guard's name, with a leading
    underscore (it could be the compiler's), left every #if inside undecided, and T was read from the last branch:
    float* where NVRTC compiled double*. The file's own guard is taken."""
    (tmp_path / "common.h").write_text("#ifndef _COMMON_H_\n#define _COMMON_H_\n#ifndef DOUBLE_PRECISION\n"
                                       "#define DOUBLE_PRECISION 1\n#endif\n#if DOUBLE_PRECISION\n#define T double\n"
                                       "#else\n#define T float\n#endif\n#endif\n")
    (tmp_path / "k.cu").write_text('#include "common.h"\n'
                                   "__global__ void scale(T *x, int n) { int i = threadIdx.x; if (i < n) x[i] *= 2; }\n")
    assert [p.ctype for p in compile_cuda(tmp_path / "k.cu").kernel("scale").params] == ["double*", "int"]


def test_a_forward_declaration_is_no_use_of_a_host_class(tmp_path):
    """cuda-convnet2's nvmatrix.cuh: `class NVMatrix;` then the host class NVMatrix, which names Matrix, whose
    members use <cblas.h>'s CBLAS_TRANSPOSE: keeping the forward declaration counted as a use of NVMatrix, which
    kept it and Matrix, and the compile failed on the set-aside header's type."""
    (tmp_path / "k.cu").write_text("#include <cblas.h>\nclass Matrix { CBLAS_TRANSPOSE _trans; };\nclass NVMatrix;\n"
                                   "class NVMatrix { public: NVMatrix(const Matrix& like); };\n"
                                   "__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n")
    assert [k.name for k in compile_cuda(tmp_path / "k.cu").kernels] == ["k"]


def test_a_constant_array_read_through_ldg():
    """ethminer's keccak reads its round constants with `__ldg(&keccak_round_constants[i])`, a __constant__ array:
    NVRTC makes it cvta.const, cvta.to.global and ld.global.nc - a load of the global memory behind the constant
    bank - and the executor took the constant window's address for a global array's (out of bounds, naming
    another array). Compiled for sm_100 (NVRTC 13 crashes on it for sm_75-sm_90). By hand: 23 uniform loads of one 8-byte word, 23 requests of 1 sector, and x = lane ^ 1 ^ ... ^ 23."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("__constant__ uint2 rc[24] = {" + ", ".join(f"{{{i}, {i * 2}}}" for i in range(1, 25)) + "};\n"
           "__global__ void k(uint2 *out) {\n    uint2 s = make_uint2(threadIdx.x, 0);\n"
           "    for (int i = 0; i < 23; i++) { uint2 c = __ldg(&rc[i]); s.x ^= c.x; s.y ^= c.y; }\n"
           "    out[threadIdx.x] = s;\n}\n")
    out = np.zeros(64, np.uint32)
    r = simulate(load_kernel(source=src, path="ldg.cu", arch="sm_100"), 1, 32, [out])   # NVRTC 13 crashes for sm_90
    x = 0
    for i in range(1, 24):
        x ^= i
    y = 0
    for i in range(1, 24):
        y ^= 2 * i
    assert out.reshape(32, 2).tolist() == [[lane ^ x, y] for lane in range(32)]
    g = r.counts.global_
    assert g["load_requests"] == 23 and g["load_sectors"] == 23


def test_a_default_template_argument_that_compares_is_not_read_as_a_bracket():
    """moderngpu's meta.hxx: `template<int i, int count, bool valid = (i < count)> struct iterate_t` - the '<' in
    the parentheses is a comparison (C++ [temp.names]); read as a bracket, the class's head never closed and the
    class was set aside with the host code. Each thread adds 1 to its 4 elements through the recursion."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("template<int i, int count, bool valid = (i < count)>\n"
           "struct iterate_t {\n"
           "  template<typename F> __device__ static void eval(F f) { f(i); iterate_t<i + 1, count>::eval(f); }\n};\n"
           "template<int i, int count>\nstruct iterate_t<i, count, false> {\n"
           "  template<typename F> __device__ static void eval(F) { }\n};\n"
           "struct Add { float* x; __device__ void operator()(int i) const { x[threadIdx.x * 4 + i] += i; } };\n"
           "__global__ void k(float* x) { iterate_t<0, 4>::eval(Add{x}); }\n")
    x = np.ones(32 * 4, np.float32)
    simulate(load_kernel(source=src, path="targ.cu", entry="k"), 1, 32, [x])
    np.testing.assert_array_equal(x, 1 + np.tile(np.arange(4), 32))


def test_a_macro_standing_for_an_attribute_between_struct_and_its_name():
    """`struct MGPU_ALIGN(8) range_t` (moderngpu's types.hxx): the class is range_t, not MGPU_ALIGN - which made the
    scan set it aside as a host class nothing names."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("#define MY_ALIGN(x) __attribute__((aligned(x)))\n"
           "struct MY_ALIGN(8) range_t { int begin, end; };\n"
           "__device__ range_t tile(int cta, int nv, int count) { return range_t{nv * cta, min(count, nv * (cta + 1))}; }\n"
           "__global__ void k(int* out, int count) {\n"
           "  range_t r = tile(blockIdx.x, blockDim.x, count);\n"
           "  if (threadIdx.x == 0) out[blockIdx.x] = r.end - r.begin;\n}\n")
    out = np.zeros(4, np.int32)
    simulate(load_kernel(source=src, path="attr.cu", entry="k"), 4, 32, [out, 100])
    np.testing.assert_array_equal(out, [32, 32, 32, 4])


def test_a_namespace_opened_and_closed_through_macros(tmp_path):
    """moderngpu's `#define BEGIN_MGPU_NAMESPACE namespace mgpu {` / `#define END_MGPU_NAMESPACE }`: read as words,
    the opening one joined the next declaration and the closing brace went with the host declaration after it
    ("At end of source: expected a }"), or an alias template before it was set aside ("enable_if_t is not a
    template"). A kernel inside is ns::kk."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("#include <type_traits>\n#define BEGIN_NS namespace ns {\n#define END_NS }\nBEGIN_NS\n"
           "template<bool B, class T = void> using enable_if_t = typename std::enable_if<B, T>::type;\n"
           "template<typename T, typename = enable_if_t<std::is_floating_point<T>::value> >\n"
           "__device__ T twice(T x) { return x + x; }\n"
           "__global__ void kk(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]) + 1; }\n"
           "END_NS\nusing namespace ns;\n"
           "__global__ void k(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }\n"
           "int main() { return 0; }\n")
    (tmp_path / "ns.cu").write_text(src)
    mod = compile_cuda(tmp_path / "ns.cu")
    assert sorted(k.expression for k in mod.kernels) == ["k", "ns::kk"]
    x = np.arange(32, dtype=np.float32)
    simulate(load_kernel(tmp_path / "ns.cu", entry="ns::kk"), 1, 32, [x])
    np.testing.assert_array_equal(x, 2 * np.arange(32) + 1)


def test_a_file_whose_kernels_are_all_templates_says_so_and_where_the_host_launches_one(tmp_path):
    """Without --kernel, a file of template kernels is no file without kernels; a launch whose template arguments
    are deduced (moderngpu's `launch_k<<<g, b>>>(lambda, n)`) is named with why --kernel must spell them out."""
    from perfmodel.kernel import load_kernel

    (tmp_path / "t.cu").write_text("template<int N> __global__ void addn(float* x) { x[threadIdx.x] += N; }\n")
    with pytest.raises(CompileError, match=r"its kernels are templates \(addn\).*--kernel 'NAME<ARGS>'$"):
        load_kernel(tmp_path / "t.cu")
    (tmp_path / "l.cu").write_text(
        "template<typename F> __global__ void launch_k(F f, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) f(i);\n}\n"
        "void scale(float* x, int n) {\n  auto k = [=] __device__ (int i) { x[i] *= 2.0f; };\n"
        "  launch_k<<<(n + 127) / 128, 128>>>(k, n);\n}\n")
    with pytest.raises(CompileError, match=r"launches launch_k at l\.cu:7 with its template arguments deduced .*"
                                           r"extended __device__ lambda"):
        load_kernel(tmp_path / "l.cu")


def test_aliases_of_std_c_library_names_are_kept_for_libcudacxx():
    """glm's fwd.hpp `typedef std::int8_t int8;` and its `using std::sqrt;` beside an overload of its own: the scan
    set both aside (int8_t and sqrt are no libcu++ header's name) and glm failed on its own typedefs; libcu++'s
    <cstdint> and <cmath> declare them, so the aliases stay for the compile's libcu++ retry. sqrt(i^2 + 1) by numpy."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("#include <cstdint>\n#include <cmath>\nnamespace lib {\ntypedef std::int32_t int32;\n"
           "typedef std::uint32_t uint32;\nusing std::sqrt;\n"
           "template <typename T> struct V2 { T x, y; };\n"
           "template <typename T> __device__ V2<T> sqrt(V2<T> v) { return V2<T>{sqrt(v.x), sqrt(v.y)}; }\n"
           "template <typename T> __device__ T len(T a, T b) { return sqrt(a * a + b * b); }\n}\n"
           "__global__ void k(float *out, lib::int32 n) {\n"
           "    lib::uint32 i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    if (i < n) out[i] = lib::len((float)i, 1.0f);\n}\n")
    out = np.zeros(64, np.float32)
    simulate(load_kernel(source=src, path="glmlike.cu", entry="k"), 1, 64, [out, 64])
    np.testing.assert_allclose(out, np.sqrt(np.arange(64.0) ** 2 + 1), rtol=1e-6)


def test_a_pragma_once_header_included_under_ifs_is_compiled_once(tmp_path):
    """glm includes its type_vecN.inl under `#ifndef GLM_EXTERNAL_TEMPLATE`, each including the same `#pragma
    once` header: inlined at each include (an include under an #if is inlined again, for the compile may skip a
    copy), it was defined twice; each copy now has a guard of its own."""
    (tmp_path / "common.hpp").write_text("#pragma once\n"
                                         "template <typename T> struct Adder { __device__ static T call(T a, T b) "
                                         "{ return a + b; } };\n")
    (tmp_path / "v1.inl").write_text('#include "common.hpp"\n')
    (tmp_path / "v2.inl").write_text('#include "common.hpp"\n')
    (tmp_path / "k.cu").write_text('#ifndef EXT\n#include "v1.inl"\n#endif\n#ifndef EXT\n#include "v2.inl"\n#endif\n'
                                   "__global__ void k(float *out) { out[threadIdx.x] = Adder<float>::call(1.0f, 2.0f); }\n")
    mod = compile_cuda(tmp_path / "k.cu")
    assert [k.name for k in mod.kernels] == ["k"]


def test_lines_after_a_set_aside_header_inside_a_skipped_if_keep_their_numbers(tmp_path):
    """`#if !defined(CUDA_VERSION) && !defined(USE_OWN)` around `#include <cuda.h>` (glm's setup.hpp): the include
    becomes 4 lines and a #line back, which the skipped branch skipped too - every later line was 4 too far (the
    hot lines pointed past the end of this 10-line file). The PTX line table of k must name lines 5 to 10."""
    (tmp_path / "cfg.h").write_text("#define USE_OWN\n")
    (tmp_path / "k.cu").write_text('#include "cfg.h"\n#if !defined(CUDA_VERSION) && !defined(USE_OWN)\n'
                                   "#include <cuda.h>\n#endif\n"
                                   "__global__ void k(float* out, const float* in, int n)\n{\n"
                                   "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n)\n"
                                   "        out[i] = in[i] * 2.0f + 1.0f;\n}\n")
    mod = compile_cuda(tmp_path / "k.cu")
    files = dict(re.findall(r'\.file\s+(\d+)\s+"([^"]+)"', mod.ptx))
    ours = next(n for n, f in files.items() if f.endswith("k.cu"))
    lines = {int(x) for x in re.findall(rf"\.loc\s+{ours}\s+(\d+)\s", mod.ptx)}
    assert lines and min(lines) >= 5 and max(lines) <= 10, sorted(lines)
    assert 9 in lines


def test_a_kernel_named_like_a_host_device_function_can_be_asked_for():
    """simple-knn's `coord2Morton` kernel beside a __host__ __device__ coord2Morton: the name is an overload set,
    so the kernel is named through a cast to its function-pointer type - for the automatic names already, and now
    for --kernel's too (it failed: 'cannot determine which instance of overloaded function')."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("__host__ __device__ unsigned twice(unsigned x) { return 2 * x; }\n"
           "__global__ void twice(int n, unsigned* out)\n{\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = twice((unsigned)i);\n}\n"
           "__global__ void other(int n, unsigned* out) { out[threadIdx.x] = 0; }\n")
    out = np.zeros(32, np.uint32)
    simulate(load_kernel(source=src, path="ov.cu", entry="twice"), 1, 32, [32, out])
    np.testing.assert_array_equal(out, 2 * np.arange(32))


def test_a_header_every_compile_sees_is_inlined_however_often_skipped_copies_came_before(tmp_path):
    """glm: `_vectorize.hpp` (#pragma once) is included by many .inl files, most under #ifs the scan cannot decide
    (`#if GLM_ARCH & GLM_ARCH_SSE2_BIT`); after 16 copies the scan stopped inlining it (a bound for headers whose
    copies the compile may skip), so the copy under `#ifndef GLM_EXTERNAL_TEMPLATE` - an #if every compile takes -
    was empty and func_common.inl failed on detail::functor2. Here 18 copies under `#if (MYV & 4)` (false for the
    compile), then one that every compile takes."""
    (tmp_path / "common.hpp").write_text("#pragma once\ntemplate <typename T> struct Adder { __device__ static T "
                                         "call(T a, T b) { return a + b; } };\n")
    for i in range(1, 20):
        (tmp_path / f"v{i}.inl").write_text(f'#include "common.hpp"\n__device__ float f{i}(float x) '
                                            f"{{ return Adder<float>::call(x, {i}.0f); }}\n")
    text = "#define MYV 1\n" + "".join(f'#if (MYV & 4)\n#include "v{i}.inl"\n#endif\n' for i in range(1, 19))
    text += '#ifndef EXT\n#include "v19.inl"\n#endif\n__global__ void k(float *out) { out[threadIdx.x] = f19(1.0f); }\n'
    (tmp_path / "k.cu").write_text(text)
    mod = compile_cuda(tmp_path / "k.cu")
    assert [k.name for k in mod.kernels] == ["k"]


def test_a_class_named_through_a_macro_an_ifdef_tests_is_set_aside_with_its_base(tmp_path):
    """miniBUDE's fasten.hpp: `#ifdef IMPL_CLS` ... `#define IMPL_CLS CudaBude` ... `class IMPL_CLS final : public
    Bude<PPWI>` (a host class whose member launches the kernel). The #ifdef's word counted as a use of the class, so
    it was kept while its host base class was set aside ("Bude is not a template"); an #if's words name macros."""
    (tmp_path / "b.cu").write_text(
        "#include <string>\ntemplate <int P> class Base {\npublic:\n  virtual std::string name() = 0;\n};\n"
        "#ifdef IMPL_CLS\n#error IMPL_CLS was already defined\n#endif\n#define IMPL_CLS Impl\n"
        "template <int P> __global__ void k(float *out, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = 2.0f * i * P;\n}\n"
        "template <int P> class IMPL_CLS final : public Base<P> {\npublic:\n"
        "  std::string name() override { return \"x\"; }\n"
        "  void run(float *d, int n) { k<P><<<(n + 255) / 256, 256>>>(d, n); }\n};\n")
    mod = compile_cuda(tmp_path / "b.cu", name_expressions=["k<4>"])
    assert [k.expression for k in mod.kernels] == ["k<4>"]


def test_a_prototype_with_unnamed_const_parameters_takes_the_definitions_names():
    """The CUDA guide's `__global__ void MatMulKernel(const Matrix, const Matrix, Matrix);` before the definition
    (olcf hw12): a by-value parameter's own const is no part of the type, so the two are one kernel and the
    definition's names (A, B) are the parameters', not arg0, arg1."""
    from perfmodel.kernel import load_kernel

    src = ("typedef struct { int n; float *elements; } Vec;\n__global__ void scale(const Vec, Vec);\n"
           "__global__ void scale(Vec A, Vec B) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "  if (i < A.n) B.elements[i] = 2.0f * A.elements[i];\n}\n")
    assert [p.name for p in load_kernel(source=src, path="fd.cu", entry="scale").params] == ["A", "B"]


def test_host_constants_whose_type_is_a_macro_through_a_typedef_fold():
    """miniFE's analytic_soln.hpp: `typedef MINIFE_SCALAR Scalar; const Scalar PI = 3.14...; const Scalar PI_SQR =
    PI*PI;` with -DMINIFE_SCALAR=double. nvcc folds the host constants; NVRTC's -default-device cannot initialise
    PI_SQR dynamically, and the constexpr retry did not see a double through the macro."""
    src = ("typedef MINIFE_SCALAR Scalar;\nconst Scalar PI = 3.141592653589793238462;\nconst Scalar PI_SQR = PI*PI;\n"
           "__global__ void k(double *out) { out[threadIdx.x] = PI_SQR; }\n")
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    out = np.zeros(4)
    simulate(load_kernel(source=src, path="c.cu", entry="k", defines={"MINIFE_SCALAR": "double"}), 1, 4, [out])
    np.testing.assert_array_equal(out, np.pi * np.pi)


def test_a_scalar_parameter_typed_through_a_template_arguments_typedef():
    """miniFE's `template <typename V> __global__ void waxpby_kernel(typename V::ScalarType alpha, V x, ...)`: the
    mangled name keeps the dependent type (NT_10ScalarTypeE), so no dtype came from it; the PTX passes it as .f32,
    and NVVM passes aggregates as bytes, so it is a float."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("template <typename T> struct PODVector { typedef T ScalarType; T *coefs; int n; };\n"
           "template <typename V>\n__global__ void scale(typename V::ScalarType alpha, V x) {\n"
           "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < x.n) x.coefs[i] *= alpha;\n}\n")
    program = load_kernel(source=src, path="d.cu", entry="scale<PODVector<double>>")
    assert program.params[0].dtype == np.float64
    coefs = np.arange(32.0)
    simulate(program, 1, 32, [2.5, {"coefs": coefs, "n": 32}])
    np.testing.assert_array_equal(coefs, 2.5 * np.arange(32.0))


def test_libcudacxx_runtime_headers_are_set_aside_with_the_host_code(tmp_path):
    """<cuda/buffer>, <cuda/memory_resource>, <cuda/stream> ... are libcu++'s host runtime APIs: their headers
    define __host__-only functions that NVRTC refuses ('not allowed in JIT mode') and include CUB's device-wide
    algorithms (CUB's test_util.h includes them beside its examples); nvcc compiles such a file, and the kernel
    needs none of it."""
    for header in ("cuda/buffer", "cuda/__memory_resource/legacy_pinned_memory_resource.h", "cuda/stream_ref"):
        (tmp_path / "k.cu").write_text(f"#include <{header}>\n__global__ void scale(float* x, int n) {{\n"
                                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] *= 2.0f;\n}\n"
                                       "int main() { return 0; }\n")
        assert [k.name for k in compile_cuda(tmp_path / "k.cu").kernels] == ["scale"], header


def test_an_unannotated_member_named_by_host_device_code_keeps_its_declaration():
    """glm's func_common.inl: `struct TMax { T operator()(const T& a, const T& b) ... }` (no __device__), passed to a
    __host__ __device__ template by a __host__ __device__ function no kernel calls. The scan set the member aside
    whole and the template failed on it; nvcc compiles the file. Its declaration stays (a body that ran would be an
    unresolved extern function, named as such)."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("template <typename T> struct TMax {\n  T operator()(const T& a, const T& b) { return a < b ? b : a; }\n};\n"
           "template <typename F, typename T> __host__ __device__ T apply2(F f, T a, T b) { return f(a, b); }\n"
           "__host__ __device__ inline float hd_max(float a, float b) { return apply2(TMax<float>(), a, b); }\n"
           "__global__ void scale(float* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "  if (i < n) x[i] = 2.f * x[i];\n}\n")
    x = np.arange(32, dtype=np.float32)
    simulate(load_kernel(source=src, path="hd.cu", entry="scale"), 1, 32, [x, 32])
    np.testing.assert_array_equal(x, 2 * np.arange(32))


def test_an_ifdef_of_an_underscore_name_nothing_defines_is_decided_as_nvrtc_decides_it():
    """LAMMPS's lal_preprocessor.h: `#ifdef _SINGLE_DOUBLE / #define acctyp double / #endif` then `#ifndef acctyp /
    #define acctyp float / #endif`. A leading underscore made _SINGLE_DOUBLE 'maybe the compiler's', so the first
    #define counted as possibly taken and the parameter read float* where NVRTC compiled double* with -D
    _SINGLE_DOUBLE (and float* without). NVRTC says which such names it defines (here: __linux__, as the preamble
    gives nvcc's, yes; _WIN32 and _SINGLE_DOUBLE, no)."""
    from perfmodel.compile import conditions
    from perfmodel.kernel import load_kernel

    src = ("#ifdef _SD\n#define acctyp double\n#endif\n#ifndef acctyp\n#define acctyp float\n#endif\n"
           "#ifdef _WIN32\n#define other_t short\n#else\n#define other_t int\n#endif\n"
           'extern "C" __global__ void k(const float *in, acctyp *out, other_t n) {\n'
           "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = (acctyp)in[i] * (acctyp)3;\n}\n")
    with_define = load_kernel(source=src, path="u.cu", entry="k", defines={"_SD": None})
    without = load_kernel(source=src, path="u.cu", entry="k")
    assert [p.ctype for p in with_define.params] == ["const float*", "double*", "int"]
    assert [p.ctype for p in without.params] == ["const float*", "float*", "int"]
    assert conditions._COMPILER_DEFINED["_SD"] is False and conditions._COMPILER_DEFINED["_WIN32"] is False


def test_a_launch_with_spaced_chevrons_is_a_launch(tmp_path):
    """`k<NCH> << <grid, block >> > (y, n);` is valid CUDA (the 3D Gaussian Splatting rasterizer writes every launch
    so) and was not seen: the template kernel the host launches was listed as not instantiated."""
    (tmp_path / "s.cu").write_text("#define NCH 3\ntemplate <int C> __global__ void k(float* y, int n)\n{\n"
                                   "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = C * i;\n}\n"
                                   "void host_a(float* y, int n) { k<NCH> << <(n + 255) / 256, 256 >> > (y, n); }\n")
    mod = compile_cuda(tmp_path / "s.cu")
    assert [k.expression for k in mod.kernels] == ["k<NCH>"]


def test_a_launch_spelt_with_the_launching_functions_own_types_is_named_in_the_error(tmp_path):
    """moderngpu 2.x: `launch_box_cta_k<launch_box, func_t><<<...>>>` inside a host template whose func_t is a
    lambda: the error of a file whose kernels are all templates names the launch and why it cannot be spelt."""
    from perfmodel.kernel import load_kernel

    (tmp_path / "m.cu").write_text(
        "template<typename lb, typename func_t> __global__ void launch_k(func_t f, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) f(i);\n}\n"
        "template<typename func_t> void transform(func_t f, int n) { launch_k<int, func_t><<<1, 128>>>(f, n); }\n")
    with pytest.raises(CompileError, match=r"launches launch_k<int, func_t> \(m\.cu:5\): --kernel takes such an "
                                           r"expression where its arguments are types and numbers the file defines"):
        load_kernel(tmp_path / "m.cu")


def test_has_include_is_decided_as_nvrtc_decides_it():
    """`#if !__has_include(<sycl/sycl.hpp>)` / `#define real_t float` / `#else` / `#define real_t double`: the scan
    left __has_include undecided and took the last #define (double*) where NVRTC, which finds headers in the SDK
    folders only, compiled float*; and a header in a branch no compile takes was listed as not found."""
    from perfmodel.kernel import load_kernel

    src = ("#if !__has_include(<sycl/sycl.hpp>)\n#define real_t float\n#else\n#define real_t double\n#endif\n"
           "#if defined(__has_include) && __has_include(<cuda_fp16.h>)\n#define half_ok 1\n#else\n#define half_ok 0\n"
           "#endif\n__global__ void k(real_t *x) { x[threadIdx.x] = half_ok; }\n")
    program = load_kernel(source=src, path="hi.cu", entry="k")
    assert program.params[0].ctype == "float*"


def test_an_alias_of_a_std_name_libcudacxx_gives_the_host_only_goes_with_the_host_code():
    """ArrayFire's memory.hpp: `template<typename T> using uptr = std::unique_ptr<T[], std::function<void(T[])>>;`.
    libcu++ has headers named unique_ptr and function, so the alias was kept for its retry - but std::function is
    not there for device code, and the compile failed; the names that retry still missed now go with the host code,
    and the file compiles (nvcc compiles it)."""
    src = ("#include <functional>\n#include <memory>\ntemplate<typename T>\n"
           "using uptr = std::unique_ptr<T[], std::function<void(T[])>>;\n"
           "__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n")
    assert [k.name for k in compile_cuda("alias.cu", source=src).kernels] == ["k"]


def test_a_host_member_naming_a_std_type_goes_whole_with_the_host_code():
    """HOOMD's BoxDim.h: `explicit BoxDim(const std::array<Scalar, 6>& array)` beside __host__ __device__ members. A
    host member's declaration is kept where it names nothing of std (glm's functors); one naming std:: goes whole,
    or the compile - with no std header there - fails ('explicit type is missing')."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    src = ("#include <array>\nstruct Box\n{\n    __host__ __device__ explicit Box(float L) : m_L(L) { }\n"
           "    explicit Box(const std::array<float, 6>& a) { m_L = a[0]; }\n"
           "    __host__ __device__ float wrap(float x) const { return x - m_L * floorf(x / m_L); }\n    float m_L;\n};\n"
           "__global__ void wrap_kernel(float* x, Box box, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    if (i < n) x[i] = box.wrap(x[i]);\n}\n")
    x = np.linspace(-2, 2, 64).astype(np.float32)
    expected = x - np.float32(0.5) * np.floor(x / np.float32(0.5))
    simulate(load_kernel(source=src, path="box.cu", entry="wrap_kernel"), 1, 64, [x, {"m_L": 0.5}, 64])
    np.testing.assert_allclose(x, expected, atol=1e-6)


FFMPEG_LIKE = r"""
#define DEF_F(N, T) __device__ static inline void N(T *dst, int xo, float param)
#define DEF_CONVERT_SCALE(fmt, k) \
struct Convert_##fmt              \
{                                 \
    typedef float out_T;          \
    DEF_F(Convert, out_T)         \
    {                             \
        dst[xo] = k * param * xo; \
    }                             \
};
#define DEF_CONVERT_PAIR(a, b) \
DEF_CONVERT_SCALE(a, 2.0f)     \
DEF_CONVERT_SCALE(b, 3.0f)
DEF_CONVERT_PAIR(rgb0, bgr0)
DEF_CONVERT_SCALE(rgba, 4.0f)
struct Convert_bgra
{
    typedef float out_T;
    DEF_F(Convert, out_T)
    {
        dst[xo] = 5.0f * param * xo;
    }
};
extern "C" {
#define KERNEL(C) \
    __global__ void Subsample_##C(Convert_##C::out_T *dst, int width, float param) \
    {                                                                             \
        int xo = blockIdx.x * blockDim.x + threadIdx.x;                           \
        if (xo < width) Convert_##C::Convert(dst, xo, param);                     \
    }
KERNEL(rgb0)
KERNEL(bgr0)
KERNEL(rgba)
KERNEL(bgra)
}
"""


def test_ffmpegs_macro_made_structs_members_and_kernels(tmp_path):
    """FFmpeg's vf_scale_cuda.cu (416 kernels) was refused: its `struct Convert_nv12_...` are reached only through
    token pasting (`Convert_##C::Convert`), their members are defined through a macro that holds __device__
    (DEF_F), some structs come from macros that invoke such macros (DEF_CONVERT_RGB -> DEF_CONVERT_IDENTITY), one
    follows such an invocation with no `;` between, and the kernels themselves come from a macro. All four
    kernels are listed with their PTX parameter types, and each scales by its factor (numpy)."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    (tmp_path / "s.cu").write_text(FFMPEG_LIKE)
    mod = compile_cuda(tmp_path / "s.cu")
    kernels = {k.expression: [p.dtype.name if p.dtype is not None else p.ctype for p in k.params] for k in mod.kernels}
    assert kernels == {f"Subsample_{c}": ["void*", "int32", "float32"] for c in ("rgb0", "bgr0", "rgba", "bgra")}
    for c, factor in (("rgb0", 2), ("bgr0", 3), ("rgba", 4), ("bgra", 5)):
        out = np.zeros(64, np.float32)
        simulate(load_kernel(tmp_path / "s.cu", entry=f"Subsample_{c}"), 2, 32, [out, 64, 0.5])
        np.testing.assert_allclose(out, factor * 0.5 * np.arange(64), rtol=1e-6)
