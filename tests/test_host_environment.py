"""What nvcc's device code gets from the host's headers, and NVRTC does not have, stands in when perfmodel compiles.

nvcc compiles device code against the host's C and C++ libraries: crt/math_functions.h includes <math.h>, <cmath>
and <cstdlib> (so INFINITY, NAN, M_PI and std::sqrt are there), cuBLAS's cublas_api.h includes <cuda_fp16.h> and
<cuda_bf16.h>, and a kernel file's own <type_traits> or <limits> give std:: templates. Real kernels rely on all
of these (llm.c's dev/cuda files: INFINITY in 27 places, __nv_bfloat16 from <cublas_v2.h> alone). Each test
compiles such a file as it is and, where it computes something, runs it and checks the values against numpy or
Python's math module - an independent source - not against perfmodel's own constants.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from perfmodel.compile import CompileError, compile_cuda
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

MATH_MACROS = """\
#include <stdio.h>
#include <math.h>
#include <cuda_runtime.h>

__global__ void constants(float *out, double *dout)
{
    out[0] = INFINITY;
    out[1] = -INFINITY;
    out[2] = NAN;
    out[3] = HUGE_VALF;
    out[4] = (float)M_PI;
    out[5] = sqrtf(2.0f / M_PI);
    out[6] = (float)M_SQRT1_2;
    out[7] = (float)M_LN2;
    dout[0] = M_PI;
    dout[1] = M_E;
    dout[2] = HUGE_VAL;
    dout[3] = M_2_SQRTPI;
}

int main()
{
    printf("%f\\n", M_PI);
    return 0;
}
"""


def test_math_h_macros_have_glibc_values(tmp_path):
    src = tmp_path / "consts.cu"
    src.write_text(MATH_MACROS)
    program = load_kernel(src, entry="constants")
    out, dout = np.zeros(8, np.float32), np.zeros(4, np.float64)
    simulate(program, 1, 1, [out, dout])
    assert np.isposinf(out[0]) and np.isneginf(out[1]) and np.isnan(out[2]) and np.isposinf(out[3])
    assert out[4] == np.float32(math.pi)
    assert out[5] == np.float32(math.sqrt(np.float32(2.0) / math.pi))    # 2.0f / M_PI is a double division
    assert out[6] == np.float32(math.sqrt(0.5)) and out[7] == np.float32(math.log(2.0))
    assert dout[0] == math.pi and dout[1] == math.e and np.isposinf(dout[2])
    assert dout[3] == 2.0 / math.sqrt(math.pi)


def test_a_kernel_that_defines_m_pi_itself_still_compiles(tmp_path):
    src = tmp_path / "own.cu"
    src.write_text("#define M_PI 3.14159265358979323846\n#ifndef M_PI_2\n#define M_PI_2 1.57f\n#endif\n"
                   "__global__ void k(float *o) { o[0] = (float)M_PI + M_PI_2; }\n")
    program = load_kernel(src, entry="k")
    out = np.zeros(1, np.float32)
    simulate(program, 1, 1, [out])
    assert out[0] == np.float32(np.float32(math.pi) + np.float32(math.pi / 2))


CUBLAS_BF16 = """\
#include <cuda_runtime.h>
#include <cublas_v2.h>

typedef __nv_bfloat16 floatX;

__global__ void to_bf16(floatX *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __float2bfloat16(in[i] * 2.0f);
}

void launch(floatX *out, const float *in, int n, cublasHandle_t handle)
{
    to_bf16<<<(n + 127) / 128, 128>>>(out, in, n);
}
"""


def test_bfloat16_from_cublas_header_alone(tmp_path):
    """cublas_api.h includes <cuda_bf16.h>: with nvcc the typedef compiles; the host API is still set aside."""
    src = tmp_path / "bf.cu"
    src.write_text(CUBLAS_BF16)
    mod = compile_cuda(src)
    assert "cublas_v2.h" in mod.set_aside_includes
    program = load_kernel(src, entry="to_bf16")
    x = np.array([1.0, -0.3, 3.0e38, 1.0 / 3.0], np.float32)
    out = np.zeros(4, np.uint16)
    result = simulate(program, 1, 128, [out, x, 4])
    # the #line after the stand-in includes keeps the numbering: the store is counted at line 9
    assert result.lines[9]["global_stores"] == 4 and result.lines[9]["global_loads"] == 4
    # bfloat16 = the top 16 bits of the float32, rounded to nearest even (numpy: round the float32 bit pattern)
    with np.errstate(over="ignore"):                 # 3e38 * 2 is +inf, and so is its bfloat16
        bits = (x * np.float32(2.0)).view(np.uint32).astype(np.uint64)
    expect = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    assert np.array_equal(out, expect)


DEFAULT_TEMPLATE_ARGS = """\
#include <cuda_runtime.h>

template <bool Scale = true, int Times = 2>
__global__ void __launch_bounds__(256, 2) twice(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && Scale) x[i] *= Times;
}

void host_launcher(float *x, int n)
{
    twice<true, 2><<<1, 256>>>(x, n);
    cudaGetLastError();
}

int main() { return 0; }
"""


def test_host_code_after_a_kernel_with_default_template_arguments_is_set_aside(tmp_path):
    """An '=' in ``template <bool Scale = true>`` once made the scan take the kernel for a variable with an
    initializer, running to the end of the file and keeping the host code after it (cudaGetLastError undefined)."""
    src = tmp_path / "tmpl.cu"
    src.write_text(DEFAULT_TEMPLATE_ARGS)
    program = load_kernel(src, entry="twice<true, 3>")
    x = np.arange(8, dtype=np.float32)
    simulate(program, 1, 256, [x, 8])
    assert np.array_equal(x, np.arange(8, dtype=np.float32) * 3)


STD_IN_DEVICE_CODE = """\
#include <type_traits>
#include <limits>
#include <cmath>

template <typename T, bool Negate>
__global__ void clamp_sqrt(T *x, int n, std::bool_constant<Negate>)
{
    static_assert(std::is_same_v<T, float>, "float only");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        T v = std::sqrt(std::abs(x[i]));
        x[i] = (Negate ? -v : v) + std::numeric_limits<T>::epsilon();
    }
}

template __global__ void clamp_sqrt<float, true>(float *, int, std::bool_constant<true>);
"""


def test_std_names_in_device_code_come_from_libcudacxx(tmp_path):
    src = tmp_path / "std.cu"
    src.write_text(STD_IN_DEVICE_CODE)
    program = load_kernel(src, entry="clamp_sqrt<float, true>")
    x = np.array([4.0, -9.0, 2.0, 0.0], np.float32)
    simulate(program, 1, 32, [x, 4, np.zeros(1, np.uint8)[0]])
    expect = -np.sqrt(np.abs(np.array([4.0, -9.0, 2.0, 0.0], np.float32))) + np.finfo(np.float32).eps
    assert np.array_equal(x, expect.astype(np.float32))


def test_a_real_compile_error_naming_std_is_still_reported(tmp_path):
    src = tmp_path / "bad.cu"
    src.write_text("__global__ void k(float *x) { x[0] = std::no_such_function(x[0]); }\n")
    with pytest.raises(CompileError, match="no_such_function"):
        compile_cuda(src)


CUFFT_TYPES = """\
#include <cufft.h>
#include <cufftXt.h>

__global__ void scale_complex(cufftComplex *a, cufftReal s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { a[i].x *= s; a[i].y *= -s; }
}

__device__ cufftComplex load_cb(void *in, size_t offset, void *info, void *shared)
{
    return ((cufftComplex *)in)[offset];
}
__device__ cufftCallbackLoadC d_load = load_cb;

int main() { cufftHandle plan; cufftPlan1d(&plan, 64, CUFFT_C2C, 1); return 0; }
"""


def test_cufft_types_from_the_set_aside_cufft_header(tmp_path):
    """cufft.h declares cufftComplex (= cuComplex, a float2) and cufftReal; cufftXt.h the callback pointer types."""
    src = tmp_path / "fft.cu"
    src.write_text(CUFFT_TYPES)
    program = load_kernel(src, entry="scale_complex")
    a = np.array([[1.0, 2.0], [-3.0, 0.5], [4.0, -4.0]], np.float32)
    out = a.copy()
    simulate(program, 1, 32, [out, np.float32(2.5), 3])
    assert np.array_equal(out, np.stack([a[:, 0] * np.float32(2.5), a[:, 1] * np.float32(-2.5)], axis=1))
