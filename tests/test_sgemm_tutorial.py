"""The SGEMM tutorial's kernels (siboehm/SGEMM_CUDA, vendored unchanged in validation/kernels/sgemm_cuda, specs
validation/kernels/sgemm_*.yaml): real code the engine was not written for. The two that need this session's executor features (the other ten
are in the H100 timing set, docs/validation.md): ``__syncthreads()`` in the two branches of a warp-split block
(kernel 11, with warp tiling and float4 loads) and ``cuda::barrier`` (kernel 12). Each must compute C = A B (the
spec's numpy reference) and be analysed without error."""
from pathlib import Path

import pytest

from perfmodel.devices import load_device
from perfmodel.spec import load_spec

KERNELS = Path(__file__).resolve().parent.parent / "validation" / "kernels"


@pytest.mark.parametrize("name", ["sgemm_11_double_buffering", "sgemm_12_double_buffering2"])
def test_sgemm_tutorial_kernel_computes_the_product(name):
    from perfmodel.analysis import analyze

    result = analyze(load_spec(str(KERNELS / f"{name}.yaml")), load_device("h100"), {"S": 256}, sample=0)
    doc = result.to_dict()
    assert doc["correct"] is True, doc["correct_detail"]
    assert doc["predicted_time_s"] > 0
