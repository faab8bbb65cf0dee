"""Device features a kernel uses that the analysed GPU lacks: darknet's upsample backward (a float atomicAdd, which
needs compute capability 2.0) was analysed on the G80 (1.0) and reported correct with no word that the G80 cannot
run it. The features are read off the PTX; the minimum compute capabilities are the CUDA C Programming Guide's."""
from __future__ import annotations

import pytest

from perfmodel.features import missing_notes, used_features
from perfmodel.kernel import load_kernel

SRC = r"""
__global__ void float_add(const float *x, float *out) { atomicAdd(&out[threadIdx.x / 4], x[threadIdx.x]); }
__global__ void int_hist(const int *x, int *h) {
    __shared__ int s[64];
    s[threadIdx.x & 63] = 0;
    __syncthreads();
    atomicAdd(&s[x[threadIdx.x] & 63], 1);
    __syncthreads();
    if (threadIdx.x < 64) atomicAdd(&h[threadIdx.x], s[threadIdx.x]);
}
__global__ void warp_sum(const double *x, double *out) {
    double v = x[threadIdx.x] * 2.0;
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    if (__ballot_sync(0xffffffffu, v > 0) && threadIdx.x == 0) out[0] = v;
}
"""


@pytest.mark.parametrize("kernel, features", [
    ("float_add", ["float_atomic_add"]),
    ("int_hist", ["global_atomic32", "shared_atomic32"]),
    ("warp_sum", ["double", "ballot", "shuffle"]),
])
def test_features_read_off_the_ptx(kernel, features):
    program = load_kernel(source=SRC, path="f.cu", entry=kernel)
    assert used_features(program.module, program.entry) == features


def test_a_feature_the_device_lacks_is_said():
    assert missing_notes(["float_atomic_add"], "9.0", "H100") == []
    notes = missing_notes(["global_atomic32", "float_atomic_add", "shuffle"], "1.1", "GeForce 9800")
    assert len(notes) == 2                                          # 1.1 has global integer atomics
    assert "float atomicAdd, which needs compute capability 2.0" in notes[0] and "(1.1) cannot run it" in notes[0]
    assert "warp shuffles (__shfl), which needs compute capability 3.0" in notes[1]


def test_the_analysis_notes_it(cli, tmp_path):
    import json

    (tmp_path / "f.cu").write_text(SRC)
    base = ["analyze", str(tmp_path / "f.cu"), "--kernel", "float_add", "--grid", "1", "--block", "64",
            "--arg", "x=float32[64]:random", "--arg", "out=float32[16]", "--json"]
    g80 = json.loads(cli(*base, "--device", "g80")[1])
    h100 = json.loads(cli(*base, "--device", "h100")[1])
    assert any("needs compute capability 2.0" in n and "GeForce 8800 GTX (1.0)" in n for n in g80["model"]["notes"])
    assert not any("compute capability" in n for n in h100["model"]["notes"])
    seed = json.loads(cli("analyze", "matmul_tiled", "--device", "g80", "-D", "Width=64", "--json")[1])
    assert not any("compute capability" in n for n in seed["model"]["notes"])
