"""Half-precision mul + add contraction (perfmodel/sim/contract.py) against an H200: tests/data/half_contract.cu run
by validation/microbench/half_contract.py (validation/half_contract_h200.npz). cuda_fp16.h's operators leave
mul.f16 / add.f16 with no rounding modifier, which ptxas fuses into HFMA2 (one rounding); __hmul_rn / __hadd_rn
round twice. perfmodel rounded twice everywhere: LeetCUDA's naive HGEMM differed from the GPU in 3,008 of 4,096
outputs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "half_contract.cu"


@pytest.fixture(scope="module")
def gpu():
    d = np.load(ROOT / "validation" / "half_contract_h200.npz")
    assert str(d["device"]).startswith("NVIDIA H200")
    return {k: d[k] for k in d.files}


@pytest.mark.parametrize("name,count", [("muladd", 4096), ("muladd_rn", 4096), ("muladd2", 2048)])
def test_half_mul_add_rounds_as_the_gpu(gpu, name, count):
    y = np.zeros(4096, np.float16)
    blocks = (count + 255) // 256
    simulate(load_kernel(SOURCE, entry=name), blocks, 256, [gpu["a"].copy(), gpu["b"].copy(), gpu["c"].copy(), y,
                                                            count])
    assert y.view(np.uint16).tolist() == gpu[name].view(np.uint16).tolist()


def test_the_operators_are_fused_and_the_rn_forms_are_not(gpu):
    """The reference for the test above: one rounding of a b + c (numpy in float64) is the GPU's operators' result
    and not its __hmul_rn / __hadd_rn result."""
    a, b, c = (gpu[k][:4096].astype(np.float64) for k in "abc")
    fused = (a * b + c).astype(np.float16)
    assert (gpu["muladd"] == fused).all() and not (gpu["muladd_rn"] == fused).all()


def test_a_half_dot_product_accumulates_as_the_gpu(gpu):
    y = np.zeros(4096, np.float16)
    simulate(load_kernel(SOURCE, entry="dot8"), 16, 256, [gpu["a"].copy(), gpu["b"].copy(), y, 4096])
    assert y.view(np.uint16).tolist() == gpu["dot8"].view(np.uint16).tolist()
