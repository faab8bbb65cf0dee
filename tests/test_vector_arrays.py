"""``--arg X=uint2[N]``: arrays of CUDA vector types on the command line (ccminer's hash kernels take ``uint2*``,
many kernels ``float4*``). N vectors are N x components numbers of the component type, x, y, z, w of each in turn
(vector_types.h's layout), flat as every array: the references here are plain numpy on that layout."""
from __future__ import annotations

import json

import pytest

KERNEL = r"""
__constant__ uint2 shift[4];

__global__ void swap_add(const uint2 *in, uint2 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { uint2 v = in[i]; uint2 s = shift[i & 3]; out[i] = make_uint2(v.y + s.x, v.x + s.y); }
}

__global__ void scale4(const float4 *in, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float4 v = in[i]; out[i] = make_float4(2.0f * v.x, v.y, -v.z, v.w + v.x); }
}
"""

REFS = r"""
import numpy as np

def swap_add(out, n, shift, **kw):
    v = kw["in"].reshape(-1, 2).astype(np.int64)
    s = np.asarray(shift).reshape(4, 2).astype(np.int64)[np.arange(n) % 4]
    return np.stack([v[:n, 1] + s[:, 0], v[:n, 0] + s[:, 1]], axis=1).reshape(-1) % 2**32

def scale4(out, n, **kw):
    v = kw["in"].reshape(-1, 4).astype(np.float64)
    return np.stack([2 * v[:, 0], v[:, 1], -v[:, 2], v[:, 3] + v[:, 0]], axis=1).reshape(-1)
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "k.cu").write_text(KERNEL)
    (tmp_path / "refs.py").write_text(REFS)
    return tmp_path


def _run(cli, files, *args):
    code, out, err = cli("analyze", str(files / "k.cu"), "--device", "h100", "--json", *args)
    return code, json.loads(out or err)


def test_uint2_and_float4_arrays_are_checked_against_numpy(cli, files):
    code, doc = _run(cli, files, "--kernel", "swap_add", "--grid", "4", "--block", "64", "-D", "n=250",
                     "--arg", "in=uint2[n]:random", "--arg", "out=uint2[n]", "--arg", "n=n",
                     "--symbol", "shift=uint2[4]:values=(1, 2, 3, 4, 5, 6, 7, 8)",
                     "--check", f"out={files / 'refs.py'}:swap_add")
    assert code == 0 and doc["correct"] is True, doc
    g = doc["counts"]["global"]
    # 250 threads load and store one 8-byte uint2 each: 2,000 bytes = 63 sectors read (62.5, the last half)
    # in 8 warp requests (4 blocks of 2 warps), the same written
    assert g["load_requests"] == 8 and g["store_requests"] == 8
    assert g["load_sectors"] == 63 and g["store_sectors"] == 63
    code, doc = _run(cli, files, "--kernel", "scale4", "--grid", "2", "--block", "128", "-D", "n=256",
                     "--arg", "in=float4[n]:random", "--arg", "out=float4[n]", "--arg", "n=n",
                     "--check", f"out={files / 'refs.py'}:scale4")
    assert code == 0 and doc["correct"] is True, doc
    # 16-byte loads: a warp's 512 bytes are 16 sectors
    assert doc["counts"]["global"]["load_sectors"] == 16 * 8


def test_offset_counts_vectors_and_number_arrays_still_work(cli, files):
    # in + 1 (one uint2 in): thread i reads vector i + 1, so 251 vectors are needed and 250 are out of bounds
    code, doc = _run(cli, files, "--kernel", "swap_add", "--grid", "4", "--block", "64", "-D", "n=250",
                     "--arg", "in=uint2[n+1]@1:random", "--arg", "out=uint64[n]", "--arg", "n=n",
                     "--symbol", "shift=uint2[4]")
    assert code == 0 and doc["correct"] is None, doc
    code, doc = _run(cli, files, "--kernel", "swap_add", "--grid", "4", "--block", "64", "-D", "n=250",
                     "--arg", "in=uint2[n]@1:random", "--arg", "out=uint2[n]", "--arg", "n=n",
                     "--symbol", "shift=uint2[4]")
    assert code == 2 and "out-of-bounds global load" in doc["error"]["message"], doc


@pytest.mark.parametrize("arg, needle", [
    ("out=float4[n]", "'out' is uint2*, so its elements are uint2, not float4"),
    ("out=uint2[]", "expected a COUNT between the brackets, e.g. uint2[N]"),
    ("out=uint5[n]", "unknown dtype 'uint5'"),
])
def test_vector_array_mistakes(cli, files, arg, needle):
    code, doc = _run(cli, files, "--kernel", "swap_add", "--grid", "4", "--block", "64", "-D", "n=250",
                     "--arg", "in=uint2[n]:random", "--arg", arg, "--arg", "n=n", "--symbol", "shift=uint2[4]")
    assert code == 2 and needle in doc["error"]["message"], doc


def test_missing_vector_pointer_names_its_vector_type(cli, files):
    code, doc = _run(cli, files, "--kernel", "swap_add", "--grid", "4", "--block", "64", "-D", "n=250",
                     "--arg", "in=uint2[n]:random", "--arg", "n=n")
    assert code == 2 and "--arg out=uint2[COUNT]:random" in doc["error"]["message"], doc


def test_kernels_init_sizes_a_vector_pointer_in_its_components(cli, files, tmp_path):
    """`kernels init` gave a `float4*` parameter `uint8` bytes of length N ("set the length to N * sizeof"); it is
    N float4s: `float32`, length N * 4. Run as written at N = 4,096: 4,096 16-byte loads = 65,536 bytes = 2,048
    sectors, and the reference (numpy on the x, y, z, w layout) agrees."""
    spec = tmp_path / "scale4.yaml"
    code, _, err = cli("kernels", "init", str(files / "k.cu"), "--kernel", "scale4", "-o", str(spec))
    assert code == 0, err
    text = spec.read_text()
    assert "{name: in, dtype: float32, length: N * 4," in text and "# const float4*: N float4s" in text
    spec.write_text(text.replace("source: k.cu", f"source: {files / 'k.cu'}")
                    + f"outputs:\n  - {{arg: out, reference: \"{files / 'refs.py'}:scale4\"}}\n")
    code, out, err = cli("analyze", str(spec), "-D", "N=4096", "--device", "h100", "--json")
    doc = json.loads(out or err)
    assert code == 0 and doc["correct"] is True, doc
    assert doc["counts"]["global"]["load_sectors"] == 2048
