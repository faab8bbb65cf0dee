"""Grid-wide synchronisation (cooperative groups' ``this_grid().sync()``): the kernel reads the cooperative
launch's workspace pointer from %envreg1/%envreg2 and counts arrivals there; every block runs at once."""
import numpy as np
import pytest

from perfmodel.errors import SimulationError
from perfmodel.kernel import load_kernel
from perfmodel.sim import grid_sync, simulate

TWO_PHASE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// each block sums its part, the grid synchronises, then block 0 adds up the partial sums
__global__ void k(const float *x, int n, float *out)
{
    cg::grid_group g = cg::this_grid();
    __shared__ float s[256];
    int i = g.thread_rank();
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int o = 128; o > 0; o >>= 1) {
        if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
    g.sync();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        float t = 0;
        for (int b = 0; b < gridDim.x; ++b) t += out[b];
        out[gridDim.x] = t;
    }
}
"""


@pytest.fixture(scope="module")
def program():
    return load_kernel(source=TWO_PHASE, path="two_phase.cu")


def test_every_block_arrives_before_any_leaves_the_grid_sync(program):
    """Block 0 reads the other blocks' partial sums after the sync: the total is sum(0..1023) = 523,776 only if
    every block wrote its part first (hand-derived; the partial sums are those of 256 consecutive integers)."""
    assert grid_sync(program)
    x = np.arange(1024, dtype=np.float32)
    out = np.zeros(5, np.float32)
    r = simulate(program, 4, 256, [x, 1024, out])
    np.testing.assert_array_equal(out[:4], [x[b * 256:(b + 1) * 256].sum() for b in range(4)])
    assert out[4] == 523776.0
    # one arrival per block on the workspace counter (the cooperative-groups protocol), all in one batch
    assert r.counts.global_["atomics"] == 4


def test_a_subset_of_the_blocks_cannot_run(program):
    with pytest.raises(SimulationError, match="synchronises the whole grid.*2 of 4 cannot"):
        simulate(program, 4, 256, [np.zeros(1024, np.float32), 1024, np.zeros(5, np.float32)], block_ids=[0, 3])


def test_analyze_runs_the_whole_grid_exactly(tmp_path, cli):
    import json

    (tmp_path / "two_phase.cu").write_text(TWO_PHASE)
    (tmp_path / "two_phase.yaml").write_text("""
name: two_phase
source: two_phase.cu
entry: k
params: {N: 1024, B: 4}
grid: [B]
block: [256]
args:
  - {name: x, dtype: float32, length: N, init: arange}
  - {name: n, dtype: int32, value: N}
  - {name: out, dtype: float32, length: B + 1, init: zeros}
outputs: []
""")
    code, out, err = cli("analyze", str(tmp_path / "two_phase.yaml"), "--device", "h100", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["blocks_simulated"] == 4 and not doc["sampled"] and doc["counts"]["global"]["atomics"] == 4


def test_an_unknown_special_register_is_an_error_at_its_line():
    program = load_kernel(source='__global__ void k(unsigned *o) { unsigned v;\n'
                                 '  asm volatile("mov.u32 %0, %%envreg3;" : "=r"(v)); o[threadIdx.x] = v; }',
                          path="env.cu")
    with pytest.raises(SimulationError, match=r"env\.cu:2:.*special register %envreg3 is not supported"):
        simulate(program, 1, 32, [np.zeros(32, np.uint32)])


def test_a_cooperative_launch_larger_than_the_gpu_holds_is_refused(tmp_path, cli):
    """Every block of a grid-synchronising kernel must be resident at once; the GPU refuses a larger cooperative
    launch (cudaErrorCooperativeLaunchTooLarge). An H100 holds 8 blocks of 256 threads per SM (2,048 threads),
    x 132 SMs = 1,056 (NVIDIA's occupancy rules; tests/test_occupancy_oracle.py checks them against the
    calculator): 1,057 blocks are refused with exit code 2, naming both figures; it ran and was timed before
    (cuda-samples' reductionMultiBlockCG with 400 blocks of 1,024 threads)."""
    (tmp_path / "two_phase.cu").write_text(TWO_PHASE)
    (tmp_path / "two_phase.yaml").write_text("""
name: two_phase
source: two_phase.cu
entry: k
params: {B: 1057}
grid: [B]
block: [256]
args:
  - {name: x, dtype: float32, length: 256, init: arange}
  - {name: n, dtype: int32, value: 256}
  - {name: out, dtype: float32, length: B + 1, init: zeros}
outputs: []
""")
    code, out, err = cli("analyze", str(tmp_path / "two_phase.yaml"), "--device", "h100")
    assert code == 2, (out, err)
    assert "holds at most 1,056 of them (8 per SM x 132 SMs" in err and "the grid has 1,057" in err, err


SPIN = r"""
__global__ void wait1(volatile int *flag, int *out)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) flag[0] = 1;
    if (blockIdx.x == 1 && threadIdx.x == 0) { while (flag[0] == 0) ; out[0] = 7; }
}
"""


def test_a_block_waiting_for_another_blocks_write_runs_with_the_grid(tmp_path, cli, monkeypatch):
    """Block 1 spins on a flag block 0 sets (HeCBench mis: every block iterates until no block changes a node).
    The block analysed alone first never ends - nothing sets its flag - and the analysis ran away at the step
    limit after 20-40 s; with a small grid it now gives the lone block a short budget and runs every block
    together, as the GPU does. A loop that runs away with the whole grid too is still an error."""
    import json

    from perfmodel import analysis

    monkeypatch.setattr(analysis, "PILOT_SHORT_STEPS", 2000)     # the lone block's budget, shortened for the test
    (tmp_path / "spin.cu").write_text(SPIN)
    (tmp_path / "refs.py").write_text("import numpy as np\ndef seven(out, **kw):\n    return np.array([7])\n")
    code, out, err = cli("analyze", str(tmp_path / "spin.cu"), "--grid", "2", "--block", "32", "--arg",
                         "flag=int32[1]", "--arg", "out=int32[1]", "--check", f"out={tmp_path / 'refs.py'}:seven",
                         "--device", "h100", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["correct"] is True and doc["blocks_simulated"] == 2
    (tmp_path / "never.cu").write_text(SPIN.replace("flag[0] = 1;", "flag[0] = 0;"))
    code, out, err = cli("analyze", str(tmp_path / "never.cu"), "--grid", "2", "--block", "32", "--arg",
                         "flag=int32[1]", "--arg", "out=int32[1]", "--device", "h100", "--max-steps", "5000")
    assert code == 2 and "runaway kernel" in err
