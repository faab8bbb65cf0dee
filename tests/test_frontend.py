"""The CUDA C frontend: pre-pass, source map, program metadata, unsupported constructs."""
import numpy as np
import pytest

from perfmodel.errors import FrontendError
from perfmodel.frontend import compile_kernel
from perfmodel.frontend.prepass import prepass, strip_comments
from perfmodel.sim import simulate


def test_comments_are_blanked_keeping_lines_and_columns():
    text = "int a; // x\n/* two\nlines */ int b; char *s = \"//no\";"
    out = strip_comments(text)
    assert out.split("\n")[0] == "int a;     "
    assert out.split("\n")[2] == "         int b; char *s = \"//no\";"
    assert out.count("\n") == 2


def test_defines_overrides_and_conditionals():
    src = ("#define TILE 16\n#ifndef MASK\n#define MASK 5\n#endif\n#if TILE > 8 && defined(MASK)\n"
           "const int big = 1;\n#else\nconst int small = 2;\n#endif\n")
    pre = prepass(src, "x.cu", {"TILE": 4})
    assert pre.defines["TILE"] == "4" and pre.defines["MASK"] == "5"
    lines = pre.text.split("\n")
    assert "int small" in pre.text and "int big" not in pre.text
    assert lines.count("") >= 7            # directives became blank lines: numbering intact


def test_program_metadata():
    src = r"""
    #define TILE_WIDTH 16
    #define MAX_MASK_WIDTH 10
    __constant__ float M[MAX_MASK_WIDTH];
    __global__ void kern(float * __restrict__ d_M, const int *idx, int Width, unsigned int flags, double scale) {
        __shared__ float Mds[TILE_WIDTH][TILE_WIDTH];
        __shared__ int counter;
        Mds[threadIdx.y][threadIdx.x] = d_M[idx[0]] * M[0];
        if (threadIdx.x == 0) counter = Width;
    }"""
    p = compile_kernel(source=src, path="meta.cu")
    assert p.name == "kern" and p.path == "meta.cu"
    assert [(q.name, q.ctype, q.is_pointer, q.size_bytes) for q in p.params] == [
        ("d_M", "float*", True, 8), ("idx", "int*", True, 8), ("Width", "int", False, 4),
        ("flags", "unsigned int", False, 4), ("scale", "double", False, 8)]
    assert p.params[1].dtype == np.int32 and p.params[4].dtype == np.float64
    assert p.param_bytes == 8 + 8 + 4 + 4 + 8
    assert [(s.name, s.shape, s.nbytes) for s in p.shared] == [("Mds", (16, 16), 1024), ("counter", (), 4)]
    assert p.static_shared_bytes == 1028
    assert [(c.name, c.shape) for c in p.constants] == [("M", (10,))]
    assert p.defines == {"TILE_WIDTH": "16", "MAX_MASK_WIDTH": "10"}
    assert p.source_lines[1].strip() == "#define TILE_WIDTH 16"


def test_function_like_macros_and_multi_line_defines():
    src = ("#define IDX(r, c, w) ((r) * (w) + (c))\n"
           "#define SQR(x) ((x) * (x))\n"
           "#define BODY(name, e) __global__ void name(float *o) { \\\n"
           "    int t = threadIdx.x; \\\n"
           "    o[IDX(0, t, 4)] = e; }\n"
           "BODY(k, SQR(t + 1))\n")
    o = np.zeros(4, np.float32)
    simulate(compile_kernel(source=src, path="m.cu"), 1, 4, [o])
    assert o.tolist() == [1.0, 4.0, 9.0, 16.0]


def test_host_code_in_a_complete_cu_file_is_ignored():
    src = r"""
#include <cstdio>
#include <cuda_runtime.h>
#define N 8
const int SCALE = 3;
static float host_buffer[N];
extern "C" {
__global__ void scale(float *a) { a[threadIdx.x] *= SCALE; }
}
void check(cudaError_t e) { if (e != cudaSuccess) { printf("%s\n", cudaGetErrorString(e)); } }
int main(int argc, char **argv) {
    float *d;
    dim3 grid(1), block(N);
    check(cudaMalloc(&d, N * sizeof(float)));
    scale<<<grid, block>>>(d);
    std::printf("{ unbalanced in a string\n");
    return 0;
}
"""
    p = compile_kernel(source=src, path="full.cu")
    assert p.name == "scale" and [q.name for q in p.params] == ["a"]
    a = np.ones(N := 8, np.float32)
    simulate(p, 1, N, [a])
    assert a.tolist() == [3.0] * 8


def test_compile_is_cached_by_path_mtime_entry_and_defines(tmp_path):
    f = tmp_path / "k.cu"
    f.write_text("#define T 4\n__global__ void a(float *x) { x[threadIdx.x] = T; }\n"
                 "__global__ void b(float *x) { x[0] = 1.0f; }\n")
    p1 = compile_kernel(f, "a")
    assert compile_kernel(f, "a") is p1
    assert compile_kernel(str(f), "a", {"T": 8}) is not p1
    assert compile_kernel(f, "b").name == "b"
    with pytest.raises(FrontendError, match="several kernels"):
        compile_kernel(f)
    with pytest.raises(FrontendError, match="no __global__ kernel named 'c'"):
        compile_kernel(f, "c")
    x = np.zeros(4, np.float32)
    simulate(compile_kernel(f, "a", {"T": 8}), 1, 4, [x])
    assert x.tolist() == [8.0] * 4


def test_macro_expansion_keeps_error_columns_pointing_at_the_user_text():
    # the expansion of LONG_MACRO shifts the columns pycparser sees; errors must point at the user's columns
    src = "#define LONG_MACRO (1 + 2 + 3 + 4)\n__global__ void k(float *a) { a[LONG_MACRO] = 1.0f; goto out; }\n"
    with pytest.raises(FrontendError) as exc:
        compile_kernel(source=src, path="cols.cu")
    col = src.split("\n")[1].index("goto") + 1
    assert str(exc.value).startswith(f"cols.cu:2:{col}: goto is not supported")


@pytest.mark.parametrize("body,construct", [
    ("switch (threadIdx.x) { case 0: a[0] = 1.0f; }", "switch statements are not supported"),
    ("struct P { int x; } p;", "unsupported type"),
    ("printf(\"%d\", 1);", "printf is not supported"),
    ("a[0] = undefined_fn(1.0f);", "unknown function 'undefined_fn'"),
    ("a[0] = b;", "unknown identifier 'b'"),
    ("float **pp;", "pointers to pointers are not supported"),
    ("a[0] = sizeof(a) + q.x;", "unknown identifier 'q'"),
    ("int v = 1; v.x = 2;", "unsupported member access"),
    ("M[0] = 1.0f;", "__constant__ M is read-only"),
])
def test_unsupported_constructs_are_rejected_with_location(body, construct):
    src = f"__constant__ float M[4];\n__global__ void k(float *a) {{\n    {body}\n}}\n"
    with pytest.raises(FrontendError) as exc:
        compile_kernel(source=src, path="u.cu")
    msg = str(exc.value)
    assert construct in msg
    assert msg.startswith("u.cu:3:")
    assert exc.value.location.line == 3 and exc.value.location.col >= 5


def test_parse_errors_and_function_like_macros_have_locations():
    with pytest.raises(FrontendError, match=r"^p\.cu:2:\d+: cannot parse"):
        compile_kernel(source="__global__ void k(float *a) {\n a[0] = template<int>; }\n", path="p.cu")
    with pytest.raises(FrontendError, match=r"^p\.cu:1:1: function-like macro CAT\(\.\.\.\) uses"):
        compile_kernel(source="#define CAT(a, b) a##b\n__global__ void k(float *a) { }\n", path="p.cu")
    with pytest.raises(FrontendError, match=r"^p\.cu:2:1: macro SQR takes 1 arguments, 2 given"):
        compile_kernel(source="#define SQR(x) ((x)*(x))\n__global__ void k(float *a) { a[0] = SQR(1, 2); }\n",
                       path="p.cu")
    with pytest.raises(FrontendError, match="recursive call of f"):
        compile_kernel(source="__device__ int f(int n) { return n ? f(n - 1) : 0; }\n"
                              "__global__ void k(int *a) { a[0] = f(3); }\n", path="p.cu")
    with pytest.raises(FrontendError, match="no __global__ kernel"):
        compile_kernel(source="__device__ int f(int n) { return n; }\n", path="p.cu")


def test_every_shipped_seed_kernel_compiles():
    from perfmodel.paths import shipped_dir
    import re
    files = sorted(shipped_dir("kernels_spec").glob("*.cu"))
    assert files
    for f in files:
        for name in re.findall(r"__global__\s+void\s+(\w+)", f.read_text()):
            assert compile_kernel(f, name).name == name


def test_pointer_into_another_memory_space_is_rejected():
    src = ("__global__ void k(float *a) {\n    __shared__ float s[32];\n    float *p = a;\n"
           "    p = s;\n}\n")
    with pytest.raises(FrontendError, match=r"^ps\.cu:4:5: pointer p points into global memory; assigning a shared"):
        compile_kernel(source=src, path="ps.cu")


def test_windows_line_endings():
    src = "#define T 4 \\\r\n  + 1\r\n__global__ void k(float *a) {\r\n  a[threadIdx.x] = T;\r\n}\r\n"
    a = np.zeros(2, np.float32)
    simulate(compile_kernel(source=src, path="crlf.cu"), 1, 2, [a])
    assert a.tolist() == [5.0, 5.0]
