"""fp8 conversions (cuda_fp8.h on CC 8.9+: cvt.rn.satfinite.{e4m3x2,e5m2x2}.{f32,f16x2}, cvt.rn.f16x2.{e4m3x2,
e5m2x2}; perfmodel/sim/moves.py) against what an H200 returned for the same values
(validation/microbench/fp8_convert.cu, validation/raw/h200_fp8_convert.json): 464 float32 values around every edge of
the formats - rounding ties, the largest finite values and beyond, subnormals, infinities, NaN - and every fp8 byte
back to half. They stopped the run as unsupported before (HeCBench f8cast)."""
import json
from pathlib import Path

import numpy as np
import pytest

from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "validation" / "microbench" / "fp8_convert.cu"
GPU = json.loads((ROOT / "validation" / "raw" / "h200_fp8_convert.json").read_text())


def test_the_measurement_is_whole():
    assert "H200" in GPU["device"] and GPU["error"] == "no error" and len(GPU["f32_bits"]) == 464


@pytest.mark.parametrize("kernel, source", [("f32_to", "f32"), ("h2_to", "half2")])
def test_conversions_to_fp8_are_the_gpus_bit_for_bit(kernel, source):
    v = np.array(GPU["f32_bits"], np.uint32).view(np.float32)
    n = v.size // 2
    with np.errstate(over="ignore"):           # values beyond half's range become infinities, as on the host
        given = v.copy() if source == "f32" else v.astype(np.float16)
    e4, e5 = np.zeros(n, np.uint16), np.zeros(n, np.uint16)
    simulate(load_kernel(SRC, entry=kernel), (n + 127) // 128, 128, [given, e4, e5, n])
    for ours, name in ((e4, "e4m3x2"), (e5, "e5m2x2")):
        gpu = np.array(GPU[f"{name}_from_{source}"], np.uint16)
        bad = np.flatnonzero(ours != gpu)
        assert not bad.size, (name, [(float(v[2 * i]), float(v[2 * i + 1]), hex(ours[i]), hex(gpu[i]))
                                     for i in bad[:4]])


def test_every_fp8_byte_back_to_half_is_the_gpus():
    pairs = np.array([(2 * i) | ((2 * i + 1) << 8) for i in range(128)], np.uint16)
    h4, h5 = np.zeros(256, np.float16), np.zeros(256, np.float16)
    simulate(load_kernel(SRC, entry="back"), 1, 128, [pairs, h4, h5, 128])
    for ours, name in ((h4, "half2_from_e4m3x2"), (h5, "half2_from_e5m2x2")):
        gpu = np.array(GPU[name], np.uint32).view(np.uint16)
        bad = np.flatnonzero(ours.view(np.uint16) != gpu)
        assert not bad.size, (name, [(int(b), hex(ours.view(np.uint16)[b]), hex(gpu[b])) for b in bad[:6]])
