"""The SGEMM tutorial's kernels (siboehm/SGEMM_CUDA, vendored unchanged in validation/kernels/sgemm_cuda, specs
validation/kernels/sgemm_*.yaml): real code the engine was not written for. The two that need this session's executor features (the other ten
are in the H100 timing set, docs/validation.md): ``__syncthreads()`` in the two branches of a warp-split block
(kernel 11, with warp tiling and float4 loads) and ``cuda::barrier`` (kernel 12). Each must compute C = A B (the
spec's numpy reference) and be analysed without error."""
import json
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


NCU_256 = json.loads((KERNELS.parent / "raw" / "h200_sgemm_ncu_256.json").read_text())["metrics"]


@pytest.mark.parametrize("name", ["sgemm_04_1d_blocktiling", "sgemm_06_vectorize", "sgemm_08_bank_extra_col"])
def test_shared_loads_as_the_cubin_issues_them_match_ncu(name):
    """ptxas merges the register-blocked kernels' shared loads into LDS.64 / LDS.128 (perfmodel.kernel.
    _shared_load_widths); the executor counts them as issued: shared load instructions and wavefronts equal ncu's
    at S=256 (validation/raw/h200_sgemm_ncu_256.json, measured on an H200), where the PTX-level counts were 1.6-4x
    the instructions and 1.1-2.5x the wavefronts. The warp instructions are within issue 11's 10%. Kernel 4: merged
    loads in a block ptxas unrolled further (its replication read off shared bytes); 6: float4 loads and merged
    scalar ones; 8: a padded tile. Kernels 3, 5, 7, 9 and 11 match too (docs/validation.md)."""
    from perfmodel.analysis import simulate_launch

    spec = load_spec(str(KERNELS / f"{name}.yaml"))
    _launch, sim = simulate_launch(spec, {"S": 256}, 0)
    counts = sim.counts if isinstance(sim.counts, dict) else sim.counts.to_json()
    ncu = NCU_256[f"{name}/S=256"]
    assert counts["shared"]["load_requests"] == ncu["shared_load_instructions"]
    assert counts["shared"]["load_wavefronts"] == ncu["shared_load_wavefronts"]
    assert abs(counts["warp_instructions"] / ncu["warp_instructions"] - 1) < 0.10
