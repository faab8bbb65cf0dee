"""Counts-only runs that draw no inputs (``instantiate(values=False)``, ``simulate(..., blank_inputs=True)``).

A kernel whose data reaches no branch, guard or address does the same work whatever its input values, so a run
that only counts (``analyze(check=False)``: ``perfmodel accuracy``) may leave the inputs zero. The independent
reference is the run on the spec's real inputs: every count, per-line and per-block figure must be equal. Kernels
whose data does steer control flow or addresses must be recognised as such (by hand: spmv's row lengths are loop
bounds and its column indices are addresses) and refused."""
import numpy as np
import pytest

from perfmodel.analysis import _counts_json, analyze
from perfmodel.errors import SimulationError
from perfmodel.kernel import load_kernel
from perfmodel.sim import data_blind, simulate
from perfmodel.spec import load_spec

# every seed kernel at a small size; whether its data reaches control flow or an address, read off its source
SEEDS = [
    ("matmul_tiled", {"Width": 64}, True),
    ("matmul_naive", {"Width": 48}, True),
    ("vec_add", {"N": 10_001}, True),
    ("conv1d_basic", {"Width": 3000}, True),
    ("conv1d_constant", {"Width": 3000}, True),
    ("conv1d_tiled", {"Width": 3000}, True),
    ("conv1d_tiled_alt", {"Width": 3000}, True),
    ("conv1d_tiled_cache", {"Width": 3000}, True),
    ("conv2d_tiled", {"Width": 60}, True),
    ("picture_scale", {"n": 100, "m": 70}, True),
    ("spmv_csr", {"matrix": 1, "num_rows": 500}, False),       # row_ptr bounds the loop, col_index is an address
    ("matmul_rowwise", {"ha": 32, "wa": 16, "wb": 16}, True),
    ("matmul_colwise", {"ha": 16, "wa": 16, "wb": 32}, True),
    ("matmul_elementwise", {"ha": 16, "wa": 8, "wb": 16}, True),
]


def _program(spec, launch):
    return load_kernel(spec.source_path, entry=spec.entry, defines=dict(launch.defines))


@pytest.mark.parametrize("name,params,blind", SEEDS, ids=[s[0] for s in SEEDS])
def test_counts_without_inputs_equal_counts_with_them(name, params, blind):
    spec = load_spec(name)
    real = spec.instantiate(dict(params))
    blank = spec.instantiate(dict(params), values=False)
    assert blank.blank and not real.blank
    program = _program(spec, real)
    assert data_blind(program).ok == blind, data_blind(program).reason
    common = dict(dynamic_shared_bytes=real.dynamic_shared_bytes)
    if not blind:
        with pytest.raises(SimulationError, match="blank_inputs"):
            simulate(program, real.grid, real.block, blank.arg_values(), blank.constant_values(),
                     blank_inputs=True, **common)
        return
    with_inputs = simulate(program, real.grid, real.block, real.arg_values(), real.constant_values(), **common)
    zeros = blank.arg_values()
    without = simulate(program, real.grid, real.block, zeros, blank.constant_values(), blank_inputs=True,
                       **common)
    assert _counts_json(without.counts) == _counts_json(with_inputs.counts)
    assert without.lines == with_inputs.lines
    for key in with_inputs.per_block:
        assert np.array_equal(without.per_block[key], with_inputs.per_block[key]), key
    # nothing was written back into the blank arrays, which stay zero
    assert all(not np.any(a) for a in zeros if isinstance(a, np.ndarray))


def test_blank_arrays_have_the_real_sizes_and_types():
    spec = load_spec("spmv_csr")
    real = spec.instantiate({"matrix": 1, "num_rows": 300})
    blank = spec.instantiate({"matrix": 1, "num_rows": 300}, values=False)
    for r, b in zip(real.args, blank.args):
        assert r.kind == b.kind and r.dtype == b.dtype
        if r.kind == "array":
            assert b.value.shape == r.value.shape
        else:
            assert b.value == r.value


DATA_STEERED = r"""
__global__ void via_shared(const float *a, float *b) {
    __shared__ float s[32];
    s[threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    if (s[0] > 0.0f) b[threadIdx.x] = 1.0f;          // data reaches a branch through shared memory
}
__global__ void via_shuffle(const int *a, float *b) {
    int v = __shfl_sync(0xffffffffu, a[threadIdx.x], 0);
    b[threadIdx.x + (v & 1)] = 2.0f;                   // data reaches an address through a shuffle
}
__global__ void via_atomic(int *counter, float *b) {
    int slot = atomicAdd(counter, 1);
    b[slot] = 3.0f;                                    // an atomic's return value is data
}
__global__ void values_only(const float *a, float *b) {
    float x = a[threadIdx.x];
    b[threadIdx.x] = x > 0.0f ? x : -x;                // data selects a value only
}
"""


@pytest.mark.parametrize("entry,blind", [("via_shared", False), ("via_shuffle", False), ("via_atomic", False),
                                         ("values_only", True)])
def test_data_reaching_control_or_addresses_through_memory_or_warp_ops_is_seen(entry, blind):
    program = load_kernel(source=DATA_STEERED, path="steered.cu", entry=entry)
    assert data_blind(program).ok == blind


def test_counts_only_analysis_draws_no_inputs_and_says_so():
    a = analyze("vec_add", "h100", {"N": 1 << 20}, check=False)
    assert a.sim.correct is None
    assert "inputs were not drawn" in a.sim.correct_detail
    checked = analyze("vec_add", "h100", {"N": 1 << 20})
    assert checked.sim.correct is True
    assert checked.sim.counts == a.sim.counts
    # a kernel whose data steers it gets its real inputs even when nothing is checked
    s = analyze("spmv_csr", "h100", {"matrix": 1, "num_rows": 2000}, check=False)
    assert "not drawn" not in (s.sim.correct_detail or "")
