"""Long uniform loops counted from a few iterations (perfmodel.sim.loops): every count must equal the run that
executes every iteration (the reference is the unoptimised path, executing each iteration), and loops whose
iterations differ must be executed as usual."""
import numpy as np
import pytest

from perfmodel.analysis import _counts_json
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate
from perfmodel.spec import load_spec


def _both(program, grid, block, make_args):
    full_args, fast_args = make_args(), make_args()
    full = simulate(program, grid, block, full_args)
    fast = simulate(program, grid, block, fast_args, fast_loops=True)
    return full, fast, full_args, fast_args


def _same_counts(full, fast):
    assert _counts_json(fast.counts) == _counts_json(full.counts)
    assert fast.lines == full.lines
    for key in full.per_block:
        assert np.array_equal(fast.per_block[key], full.per_block[key]), key


@pytest.mark.parametrize("name,params", [
    ("matmul_rowwise", {"ha": 96, "wa": 160, "wb": 40}),
    ("matmul_naive", {"Width": 160, "BLOCK_WIDTH": 16}),
    ("matmul_colwise", {"ha": 40, "wa": 160, "wb": 64}),
])
def test_seed_loops_counted_from_a_few_iterations_equal_every_iteration(name, params):
    spec = load_spec(name)
    launch = spec.instantiate(params)
    program = load_kernel(spec.source_path, entry=spec.entry, defines=dict(launch.defines))
    full, fast, _, _ = _both(program, launch.grid, launch.block, launch.arg_values)
    assert fast.skipped_iterations > 0
    assert full.skipped_iterations == 0
    _same_counts(full, fast)


LOOPS = {
    # down-counting with != (what nvcc makes of an unrolled loop), a float sum carried as data
    "sum_rows": ("""
    __global__ void k(const float *a, float *out, int n) {
        int r = blockIdx.x * blockDim.x + threadIdx.x;
        float s = 0;
        for (int j = 0; j < n; ++j) s += a[r * n + j];
        out[r] = s;
    }""", lambda n: [np.arange(128 * n, dtype=np.float32), np.zeros(128, np.float32), n]),
    # a 12-byte step: the sector pattern repeats every 32 iterations (period classes)
    "stride12": ("""
    __global__ void k(const float *a, float *out, int n) {
        float s = 0;
        for (int j = 0; j < n; ++j) s += a[3 * j + threadIdx.x];
        out[threadIdx.x] = s;
    }""", lambda n: [np.ones(3 * n + 64, np.float32), np.zeros(64, np.float32), n]),
    # unsigned counter, shared memory at a stride that moves through the banks, a barrier in the loop
    "shared_stride": ("""
    __global__ void k(const float *a, float *out, unsigned n) {
        __shared__ float t[64 * 33 + 1024];
        float s = 0;
        for (unsigned j = 0; j < n; ++j) {
            t[threadIdx.x * 33 + j] = a[j];
            __syncthreads();
            s += t[threadIdx.x + 2 * j];
        }
        out[threadIdx.x] = s;
    }""", lambda n: [np.ones(n, np.float32), np.zeros(64, np.float32), n]),
    # a grid-stride loop whose trip count differs between lanes: divergent exit, executed as usual
    "grid_stride": ("""
    __global__ void k(const float *a, float *out, int n) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
            out[i] = 2 * a[i];
    }""", lambda n: [np.ones(n, np.float32), np.zeros(n, np.float32), n]),
    # a value computed non-linearly from the iteration and used after the loop: its skipped values matter
    "nonlinear_after": ("""
    __global__ void k(const float *a, float *out, int n) {
        int idx = 0;
        float s = 0;
        for (int j = 0; j < n; ++j) { idx = (j * j) & 511; s += a[j]; }
        out[idx + threadIdx.x] = s;
    }""", lambda n: [np.ones(n, np.float32), np.zeros(1024, np.float32), n]),
    # the trip count is data: never fast-forwarded
    "data_bound": ("""
    __global__ void k(const float *a, float *out, int n) {
        float s = 0;
        int m = (int)a[0];
        for (int j = 0; j < m; ++j) s += a[j + 1];
        out[threadIdx.x] = s;
    }""", lambda n: [np.full(n + 1, float(n), np.float32), np.zeros(64, np.float32), n]),
}


@pytest.mark.parametrize("name", list(LOOPS))
def test_custom_loops_equal_every_iteration(name):
    src, make = LOOPS[name]
    program = load_kernel(source=src, path=f"{name}.cu")
    n = 1000
    grid, block = (2, 64) if name == "grid_stride" else (1, 64)
    if name == "sum_rows":
        grid = (2,)
    full, fast, full_args, fast_args = _both(program, grid, block, lambda: make(n))
    _same_counts(full, fast)
    if name in ("grid_stride", "data_bound"):
        assert fast.skipped_iterations == 0
        for x, y in zip(full_args, fast_args):
            if isinstance(x, np.ndarray):
                assert np.array_equal(x, y)
    else:
        assert fast.skipped_iterations > 0


def test_loop_plan_refuses_data_in_control_flow():
    from perfmodel.sim.invariance import UNIFORM, analyse

    program = load_kernel(source=LOOPS["data_bound"][0], path="d.cu")
    proof = analyse(program.module.functions[program.entry], block_index_class=UNIFORM)
    assert not proof.ok and "depends on data" in proof.reason


OVERRUN = """
__global__ void k(const float *a, const float *b, float *out, int n) {
    float s = 0;
    for (int j = 0; j < n; ++j) s += a[j * 32 + threadIdx.x];
    out[threadIdx.x] = s + b[0];
}"""


@pytest.mark.parametrize("n_a, where", [(200 * 32, "into b"), (40 * 32, "past the last array")])
def test_a_loop_that_leaves_its_array_in_an_iteration_it_did_not_run_is_reported(n_a, where):
    """n = 256 iterations over an array of 200 (or 40) rows: the fast path runs a few and counts the rest, but the
    rows past the end must be run and reported as the plain executor reports them - as an out-of-bounds load
    naming a[row], not as a silent read of the next array (b follows a in the simulated heap) or a crash.
    Found on HeCBench's bitcracker (an IndexError past the heap)."""
    from perfmodel.errors import SimulationError

    program = load_kernel(source=OVERRUN)
    for fast in (False, True):
        args = [np.ones(n_a, np.float32), np.ones(1 << 16, np.float32), np.zeros(32, np.float32), 256]
        with pytest.raises(SimulationError, match=rf"out-of-bounds global load: a\[{n_a}\] but a has {n_a} elements"):
            simulate(program, 1, 32, args, fast_loops=fast)
