"""`perfmodel kernels inspect FILE [--kernel EXPR ...] [-D ...] [-I ...] [--device D] [--json]`."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from perfmodel.compile import nvrtc

pytestmark = pytest.mark.skipif(not nvrtc.available(), reason="NVRTC wheel (nvidia-cuda-nvrtc) not installed")

DATA = Path(__file__).parent.parent / "validation" / "kernels" / "cuda-samples" / "Samples"   # vendored, unchanged
VECTOR_ADD = DATA / "0_Introduction/vectorAdd/vectorAdd.cu"
MATRIX_MUL = DATA / "0_Introduction/matrixMul/matrixMul.cu"
TEXTURE = DATA / "0_Introduction/simpleTexture/simpleTexture.cu"

WMMA = """\
#include <mma.h>
#include <cstdio>
using namespace nvcuda;
__global__ void wmma_tile(const half *a, const half *b, float *c)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
int main() { printf("host\\n"); return 0; }
"""
WMMA_S4 = """\
#include <mma.h>
using namespace nvcuda;
__global__ void wmma_s4(const void *a, const void *b, int *c)
{
    using namespace nvcuda::wmma::experimental;
    wmma::fragment<wmma::matrix_a, 8, 8, 32, precision::s4, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 8, 32, precision::s4, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 8, 8, 32, int> fc;
    wmma::fill_fragment(fc, 0);
    wmma::load_matrix_sync(fa, a, 32);
    wmma::load_matrix_sync(fb, b, 32);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 8, wmma::mem_row_major);
}
"""


@pytest.fixture(scope="module", autouse=True)
def session_cache(tmp_path_factory):
    folder = tmp_path_factory.getbasetemp() / "perfmodel-compile-cache"
    old = os.environ.get("PERFMODEL_CACHE_DIR")
    os.environ["PERFMODEL_CACHE_DIR"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("PERFMODEL_CACHE_DIR", None)
    else:
        os.environ["PERFMODEL_CACHE_DIR"] = old


def test_inspect_json_shape(cli):
    code, out, err = cli("kernels", "inspect", VECTOR_ADD, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert isinstance(doc, list) and len(doc) == 1
    k = doc[0]
    for key in ("name", "expression", "registers", "shared_bytes", "local_bytes", "params", "ptx_instructions",
                "unsupported"):
        assert key in k
    assert k["name"] == k["expression"] == "vectorAdd"
    assert k["registers"] > 0 and k["shared_bytes"] == 0 and k["local_bytes"] == 0
    assert [(p["name"], p["type"]) for p in k["params"]] == [
        ("A", "const float*"), ("B", "const float*"), ("C", "float*"), ("numElements", "int")]
    assert k["ptx_instructions"] > 5 and k["unsupported"] == []


def test_inspect_kernel_adds_instantiations(cli):
    code, out, _ = cli("kernels", "inspect", MATRIX_MUL, "--json")
    assert code == 0            # the template as the host code launches it: MatrixMulCUDA<16> and <32>
    assert [k["expression"] for k in json.loads(out)] == ["MatrixMulCUDA<16>", "MatrixMulCUDA<32>"]
    code, out, _ = cli("kernels", "inspect", MATRIX_MUL, "--kernel", "MatrixMulCUDA<8>", "--json")
    assert code == 0
    doc = json.loads(out)
    assert [k["expression"] for k in doc] == ["MatrixMulCUDA<16>", "MatrixMulCUDA<32>", "MatrixMulCUDA<8>"]
    assert [k["shared_bytes"] for k in doc] == [2048, 8192, 512]


def test_inspect_table(cli):
    code, out, _ = cli("kernels", "inspect", MATRIX_MUL, "-k", "MatrixMulCUDA<32>")
    assert code == 0
    assert "MatrixMulCUDA<32>" in out and "8192" in out


def test_inspect_define_and_include(cli, tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "tile.h").write_text("#define TILE_WIDTH 16\n")
    (tmp_path / "k.cu").write_text("#include <stdio.h>\n#include <tile.h>\n"
                                   "__global__ void tiled(float *x)\n{\n"
                                   "  __shared__ float s[TILE_WIDTH][TILE_WIDTH];\n"
                                   "  s[threadIdx.y][threadIdx.x] = x[0]; __syncthreads(); x[1] = s[1][1];\n}\n")
    code, out, err = cli("kernels", "inspect", tmp_path / "k.cu", "-I", tmp_path / "inc", "--json")
    assert code == 0, err
    assert json.loads(out)[0]["shared_bytes"] == 16 * 16 * 4
    code, out, _ = cli("kernels", "inspect", tmp_path / "k.cu", "-I", tmp_path / "inc", "-D", "TILE_WIDTH=32",
                       "--json")
    assert json.loads(out)[0]["shared_bytes"] == 32 * 32 * 4


def test_inspect_device_picks_the_arch(cli):
    code, out, _ = cli("kernels", "inspect", VECTOR_ADD, "--device", "h100", "--json")
    assert code == 0 and json.loads(out)[0]["arch"] == "sm_90"
    from perfmodel.devices import load_device

    if load_device("g80").compute_capability == "1.0":
        code, out, _ = cli("kernels", "inspect", VECTOR_ADD, "--device", "g80", "--json")
        assert code == 0 and json.loads(out)[0]["arch"] == "sm_75"


def test_inspect_a_texture_kernel_and_wmma(cli, tmp_path):
    code, out, _ = cli("kernels", "inspect", TEXTURE, "--json")
    assert code == 0 and json.loads(out)[0]["unsupported"] == []     # tex.2d runs (perfmodel/sim/texture.py)
    (tmp_path / "wmma.cu").write_text(WMMA)
    code, out, err = cli("kernels", "inspect", tmp_path / "wmma.cu", "--json")
    assert code == 0, err
    k = json.loads(out)[0]
    assert k["name"] == "wmma_tile" and k["unsupported"] == []       # f16 wmma runs (perfmodel/sim/tensor.py)
    assert [p["type"] for p in k["params"]] == ["const half*", "const half*", "float*"]
    # sub-byte fragments do not
    (tmp_path / "wmma4.cu").write_text(WMMA_S4)
    code, out, err = cli("kernels", "inspect", tmp_path / "wmma4.cu", "--json")
    assert code == 0, err
    forms = json.loads(out)[0]["unsupported"]       # named in full: the s4 loads and mma
    assert forms and all(f.startswith("wmma.") and ".s4" in f for f in forms)
    assert any(f.startswith("wmma.mma.") for f in forms)


def test_inspect_errors_exit_2_with_one_paragraph(cli, tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text("#include <stdio.h>\n__global__ void k(float *x)\n{\n  x[0] = nope;\n}\n")
    code, out, err = cli("kernels", "inspect", bad)
    assert code == 2 and "bad.cu:4" in err and "nope" in err and "Traceback" not in err
    code, _, err = cli("kernels", "inspect", MATRIX_MUL, "--kernel", "MatrixMulCUDA<float>")
    assert code == 2 and "MatrixMulCUDA<float>" in err
    code, _, err = cli("kernels", "inspect", tmp_path / "missing.cu")
    assert code == 2 and "cannot read" in err


def test_inspect_lists_forms_of_supported_opcodes_the_executor_does_not_run(cli, tmp_path):
    """`kernels inspect` checked base opcodes only: a device-side launch or a call to the device runtime listed
    nothing (they are `mov` and `call`), and the run then stopped. It now builds the kernel as a launch would and
    lists the first instruction the executor refuses; a kernel it runs lists nothing."""
    import json

    src = tmp_path / "forms.cu"
    src.write_text("__global__ void child(float *x) { x[threadIdx.x] = 1.0f; }\n"
                   "__global__ void parent(float *x) { if (threadIdx.x == 0) child<<<1, 32>>>(x); }\n"
                   "__global__ void streams(float *x)\n{ cudaStream_t s; cudaStreamCreateWithFlags(&s, 1);"
                   " child<<<1, 1, 0, s>>>(x); }\n")
    code, out, err = cli("kernels", "inspect", str(src), "--json")
    assert code == 0, err
    rows = {r["name"]: r["unsupported"] for r in json.loads(out)}
    assert rows == {"child": [], "parent": ["device-side launch"], "streams": ["call cudaStreamCreateWithFlags"]}


def test_a_file_with_no_kernel_and_an_opencl_file_are_said_so(cli, tmp_path):
    """ISPASS/pannotia: `kernels inspect` of a file with no __global__ function printed an empty "0 kernels" table,
    and `analyze prk_kernel.cl` called the OpenCL file "the spec" ("expected a YAML mapping")."""
    (tmp_path / "host.cu").write_text("int main() { return 0; }\n")
    code, out, err = cli("kernels", "inspect", str(tmp_path / "host.cu"))
    assert code == 0 and "no __global__ function" in out and "┏" not in out, out
    (tmp_path / "k.cl").write_text("__kernel void k(__global float *x) { x[get_global_id(0)] = 1; }\n")
    code, out, err = cli("analyze", str(tmp_path / "k.cl"), "--device", "h100")
    assert code == 2 and "a .cl file is not CUDA" in err, err


def test_a_file_of_template_kernels_says_to_name_an_instantiation(cli, tmp_path):
    """cudpp's scan_app.cu holds only template kernels (from a header): inspect said "no __global__ function",
    though --kernel 'scan4<...>' compiles and runs. It says they are templates and lists them."""
    (tmp_path / "kern.cuh").write_text("template <class T>\n__global__ void scale(T* x, T a, int n)\n"
                                       "{ int i = threadIdx.x; if (i < n) x[i] *= a; }\n")
    (tmp_path / "app.cu").write_text('#include "kern.cuh"\n'
                                     "template <class T> void run(T* d, T a, int n) { scale<T><<<1, 256>>>(d, a, n); }\n")
    code, out, err = cli("kernels", "inspect", str(tmp_path / "app.cu"))
    assert code == 0 and "its kernels are templates" in out and "not instantiated" in out and "scale" in out, out
    assert "no __global__ function" not in out
