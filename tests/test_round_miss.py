"""A round of loads waits for its slowest load (docs/model.md 2.4): the simulator's per-line first touches and the
chain's round miss factor, against hand-derived figures."""
import numpy as np
import pytest

from perfmodel.kernel import load_kernel
from perfmodel.model.mlp import load_round_lines, round_miss_factor
from perfmodel.sim import simulate

# a sliding window down columns, as cuda-samples' boxFilter: each iteration reads a new row (line A) and the row
# r + 1 rows back (line B), which the same thread read 2r + 1 iterations earlier
SRC = r"""
__global__ void window(const float *in, float *out, int w, int h, int r) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    float t = 0.0f;
    for (int y = 0; y <= 2 * r; y++) t += in[y * w + x];
    for (int y = 2 * r + 1; y < h; y++) {
        t += in[y * w + x];
        t -= in[(y - 2 * r - 1) * w + x];
        out[y * w + x] = t;
    }
}
"""
W, H, R = 256, 200, 3


def _line(program, text):
    return next(i + 1 for i, s in enumerate(program.source_lines) if s.strip() == text)


@pytest.fixture(scope="module")
def program():
    return load_kernel(source=SRC, path="window.cu", entry="window")


@pytest.mark.parametrize("fast_loops", [False, True])
def test_first_touches_by_line(program, fast_loops):
    rng = np.random.default_rng(0)
    src = rng.random(W * H, dtype=np.float32)
    out = np.zeros(W * H, np.float32)
    r = simulate(program, (W // 64,), (64,), [src, out, W, H, R], block_ids=np.array([1]), fast_loops=fast_loops,
                 first_touch=True)
    a, b = _line(program, "t += in[y * w + x];"), _line(program, "t -= in[(y - 2 * r - 1) * w + x];")
    head = _line(program, "for (int y = 0; y <= 2 * r; y++) t += in[y * w + x];")
    reuse = r.load_reuse_by_line
    # one block of 64 threads: 2 warps x 4 sectors (128 bytes) per row
    rows = H - (2 * R + 1)
    assert reuse[head] == (8 * (2 * R + 1), 8 * (2 * R + 1))     # the first 2r + 1 rows: every sector new
    assert reuse[a] == (8 * rows, 8 * rows)                       # each later row: new
    assert reuse[b] == (8 * rows, 0)                              # rows read before: no first touch
    # the first touches add up to the block's distinct sectors
    assert sum(f for _s, f in reuse.values()) == r.counts.global_["unique_load_sectors"]
    # nothing is counted unless asked
    plain = simulate(program, (W // 64,), (64,), [src, out.copy(), W, H, R], block_ids=np.array([1]))
    assert plain.load_reuse_by_line is None


def test_the_window_loads_issue_together(program):
    a, b = _line(program, "t += in[y * w + x];"), _line(program, "t -= in[(y - 2 * r - 1) * w + x];")
    assert [a, b] in [sorted(x) for x in load_round_lines(program.module, program.entry)]


def test_round_miss_factor_by_hand():
    # lines 1 and 2 issue together: line 1 misses every sector, line 2 none; their sectors' own miss share is
    # (100 + 0) / 200 = 0.5, a round's is 1: the factor 2
    assert round_miss_factor({1: (100, 100), 2: (100, 0)}, [[1, 2]]) == pytest.approx(2.0)
    # the same lines in separate rounds: each waits its own misses
    assert round_miss_factor({1: (100, 100), 2: (100, 0)}, [[1], [2]]) == pytest.approx(1.0)
    # lines that miss alike: 1
    assert round_miss_factor({1: (80, 10), 2: (40, 5)}, [[1, 2]]) == pytest.approx(1.0)
    # a quarter and an eighth issued together: (80 x 1/4 + 40 x 1/4) / (20 + 5)
    assert round_miss_factor({1: (80, 20), 2: (40, 5)}, [[1, 2]]) == pytest.approx(30 / 25)
    # no misses or no figures: no factor
    assert round_miss_factor({1: (80, 0)}, [[1]]) is None
    assert round_miss_factor(None, [[1]]) is None


def test_the_chain_waits_a_miss_per_round():
    from perfmodel.devices import load_device
    from perfmodel.model import bottleneck as bn
    from perfmodel.model.traffic import Traffic

    rates = bn.device_rates(load_device("h100"))
    traffic = Traffic(load_sectors=0, store_sectors=0, l1_hit_rate=0.5, block_reuse=0.5, l2_load_sectors=0,
                      l2_store_sectors=0, l2_hit_rate=0.0, dram_read_bytes=0, dram_write_bytes=0,
                      working_set_bytes=0, footprint_bytes=0, l2_state="cold")
    # 100 loads a warp, 2 in flight, half of them L1 hits: 25 rounds miss on the averaged share, 50 when every
    # round holds one of the missing loads; 10 other instructions at 9 cycles, each load 41.1 cycles in L1
    base = 10 * 9 + 100 * rates.l1_latency_cycles
    miss = rates.global_latency_cycles
    assert bn.chain_cycles_per_warp(110, 100, 2, traffic, rates) == pytest.approx(base + 25 * miss)
    assert bn.chain_cycles_per_warp(110, 100, 2, traffic, rates, round_miss_factor=2.0) == pytest.approx(
        base + 50 * miss)
    # never more misses than loads
    assert bn.chain_cycles_per_warp(110, 100, 2, traffic, rates, round_miss_factor=5.0) == pytest.approx(
        base + 50 * miss)
