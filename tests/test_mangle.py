"""Parameter types from a kernel's mangled PTX entry name (perfmodel/compile/mangle.py).

The expected types are derived by hand from the Itanium C++ ABI's mangling grammar (section 5.1): builtin codes
(i int, j unsigned int, f float, d double, y unsigned long long ...), P pointer, K const, S_/S0_ substitutions
numbered in the order the candidates appear, T_ the function's first template argument, A<n>_ arrays. The
end-to-end tests compile with NVRTC (the mangling is the compiler's, not ours) and check the outputs against
numpy."""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from perfmodel.compile import compile_cuda
from perfmodel.compile.mangle import mangled_dtype, param_types


@pytest.mark.parametrize("mangled, expected", [
    # polybench's gemm_kernel(int ni, int nj, int nk, DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *a, *b, *c):
    # Pf is the first candidate (S_), so both later pointers are S_
    ("_Z11gemm_kerneliiiffPfS_S_", ["int", "int", "int", "float", "float", "float*", "float*", "float*"]),
    # template<class T, int N> k(const T*, T*) as k<float, 256>: candidates k (S_), T_ (S0_), K T_ (S1_),
    # P K T_ (S2_); the return type v comes first; PS0_ is float*
    ("_Z1kIfLi256EEvPKT_PS0_", ["const float*", "float*"]),
    # ns::k<double>(double*, unsigned int): the prefix ns is S_, ns::k the template prefix S0_
    ("_ZN2ns1kIdEEvPT_j", ["double*", "unsigned int"]),
    # class types and a const class pointer reused: 6float4 (S_), P (S0_), 6__half (S1_), K (S2_), PK (S3_)
    ("_Z3fooP6float4PK6__halfS3_", ["float4*", "const __half*", "const __half*"]),
    # a pointer to rows of 24 x 24 floats: A24_f (S_), A24_A24_f (S0_), P (S1_)
    ("_Z10bp_bias_c1PfPA24_A24_f", ["float*", "float[24][24]*"]),
    # A41_A4_A2_d is an array of 41 arrays of 4 arrays of 2 doubles; K applies to the element
    ("_Z1fPA41_A4_A2_Kd", ["const double[41][4][2]*"]),
    ("_Z3barv", []),
    ("_Z1fyxhtPPc", ["unsigned long long", "long long", "unsigned char", "unsigned short", "char**"]),
    # a pointer to a function (cuda-samples' FunctionPointers): F <return> <parameters> E; the function type is a
    # candidate after its parameters' (Pf: S_, FfPfE: S0_, PFfPfE: S1_), so PKS_ is float* const*
    ("_Z11SobelSharedP6uchar4PFhhfE", ["uchar4*", "unsigned char(*)(unsigned char, float)"]),
    ("_Z1kPFfPfEPKS_", ["float(*)(float*)", "float* const*"]),
    ("_Z1kPFvvEi", ["void(*)()", "int"]),
])
def test_parameter_types_from_the_mangled_name(mangled, expected):
    assert param_types(mangled) == expected


@pytest.mark.parametrize("mangled", [
    "vec_add",                                   # extern "C": no types in the name
    "_Z1fN4cuda3std17integral_constantIbXT0_EEE",  # an expression in a template argument
    "_Z1fS5_",                                    # a substitution that does not exist
])
def test_what_the_reader_does_not_follow_is_none(mangled):
    assert param_types(mangled) is None


def test_dtypes_of_the_types():
    assert mangled_dtype("const float*") == (np.dtype("float32"), True)
    assert mangled_dtype("unsigned int") == (np.dtype("uint32"), False)
    assert mangled_dtype("float[24][24]*") == (np.dtype("float32"), True)
    assert mangled_dtype("char**") == (None, True)                # a pointer to pointers: no element dtype
    assert mangled_dtype("Point*") == (None, True)
    # a function pointer's value is the function's address: a number, given as one (or as the function's name)
    assert mangled_dtype("unsigned char(*)(unsigned char, float)") == (np.dtype("uint64"), False)


MACRO_TYPED = """\
#include <stdio.h>
#ifndef DATA_TYPE
#  define DATA_TYPE double
#endif
#if defined(SINGLE)
typedef float real_t;
#else
typedef double real_t;
#endif
__global__ void scale(int n, DATA_TYPE alpha, DATA_TYPE *x, real_t *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i];
}
namespace ns { template <typename T> __global__ void twice(T *x, unsigned int n)
{ unsigned int i = threadIdx.x; if (i < n) x[i] *= 2; } }
#define KERNEL_ARGS(type) (type *x, unsigned n)
__global__ void bump KERNEL_ARGS(float)
{ if (threadIdx.x < n) x[threadIdx.x] += 1; }
int main() { printf("host\\n"); return 0; }
"""


def test_macro_and_conditional_typedef_parameters_get_their_compiled_types(tmp_path):
    path = tmp_path / "macro_typed.cu"
    path.write_text(MACRO_TYPED)
    mod = compile_cuda(path, name_expressions=["ns::twice<short>", "bump"])
    scale = mod.kernel("scale").params
    assert [(p.ctype, p.dtype) for p in scale] == [
        # DATA_TYPE read as the file #defines it (the scan expands an object-like macro in a parameter list)
        ("int", np.dtype("int32")), ("double", np.dtype("float64")), ("double*", np.dtype("float64")),
        ("real_t*", np.dtype("float64"))]          # the #else branch: typedef double
    assert [p.dtype for p in mod.kernel("ns::twice<short>").params] == [np.dtype("int16"), np.dtype("uint32")]
    bump = mod.kernel("bump").params                # its parameters come from a macro: the scan has none
    assert [(p.name, p.ctype, p.is_pointer, p.dtype) for p in bump] == [
        ("arg0", "float*", True, np.dtype("float32")), ("arg1", "unsigned int", False, np.dtype("uint32"))]


def test_a_macro_typed_kernel_runs_from_the_command_line(cli, tmp_path):
    path = tmp_path / "macro_typed.cu"
    path.write_text(MACRO_TYPED)
    x = np.random.default_rng(3).random(300)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", 2.5 * x)
    code, out, err = cli("analyze", str(path), "--kernel", "scale", "--grid", "3", "--block", "128",
                         "--arg", "n=300", "--arg", "alpha=2.5", "--arg", f"x=float64[300]:file={tmp_path / 'x.npy'}",
                         "--arg", "y=float64[300]", "--check", f"y={tmp_path / 'y.npy'}", "--device", "h100",
                         "--json")
    assert code == 0, (out, err)
    doc = json.loads(out)
    assert doc["correct"] is True and doc["counts"]["flops"] == 300      # one multiply per element


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="binutils' c++filt is not installed")
def test_agrees_with_cxxfilt_on_the_compiled_kernels(tmp_path):
    """Every entry NVRTC produced for the file above, read by us and by binutils' demangler."""
    path = tmp_path / "macro_typed.cu"
    path.write_text(MACRO_TYPED)
    mod = compile_cuda(path, name_expressions=["ns::twice<short>", "bump"])
    names = [k.mangled for k in mod.kernels]
    demangled = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout
    for name, line in zip(names, demangled.splitlines()):
        theirs = line[line.rindex("(") + 1: line.rindex(")")].replace(" const", "").replace(" ", "")
        ours = ",".join(t.replace("const ", "") for t in param_types(name)).replace(" ", "")
        assert ours == theirs, (name, line)


def test_substitutions_inside_a_namespace_name_the_types_the_source_declares():
    """ArrayFire's scan kernels: `namespace af { namespace cu { ... k(Param<To> out, Param<To> tmp, ...) }}`. The
    reader counted a substitution (S0_, af::cu) as a new candidate, so every later back-reference was one off and
    `tmp` read as float (its struct layout lost). NVRTC mangles; the expected types are the declarations'."""
    from perfmodel.compile import compile_cuda

    src = ("namespace af { namespace cu {\ntemplate<typename T> struct P { long dims[2]; T *ptr; };\n"
           "template<typename T> struct CP { long dims[2]; const T *ptr; };\n"
           "template<typename Ti, typename To>\n__global__ void k(P<To> out, P<To> tmp, CP<Ti> in, int n) { }\n"
           "template<typename T>\n__global__ void k2(P<T> a, P<float> b, P<T> c, CP<float> d, CP<float> e) { }\n}}\n")
    mod = compile_cuda("mg.cu", source=src, name_expressions=["af::cu::k<int,float>", "af::cu::k2<double>"])
    got = {k.expression: param_types(k.mangled) for k in mod.kernels}
    assert got == {"af::cu::k<int,float>": ["af::cu::P<float>", "af::cu::P<float>", "af::cu::CP<int>", "int"],
                   "af::cu::k2<double>": ["af::cu::P<double>", "af::cu::P<float>", "af::cu::P<double>",
                                          "af::cu::CP<float>", "af::cu::CP<float>"]}
