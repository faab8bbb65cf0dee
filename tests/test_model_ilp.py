"""The latency chain's instruction-level parallelism (docs/model.md 2.4): blocks' ILP read off the PTX, and the
cycles an instruction costs on a warp's critical path, by hand."""
import dataclasses

import pytest

from perfmodel.devices import load_device
from perfmodel.kernel import load_kernel
from perfmodel.model import bottleneck as bn
from perfmodel.model.mlp import block_ilp, ilp_by_line

SRC = r"""
__global__ void chain(float *a, int n) {
    float v = a[threadIdx.x];
    v = v * v + 1.0f; v = v * v + 1.0f; v = v * v + 1.0f; v = v * v + 1.0f;
    v = v * v + 1.0f; v = v * v + 1.0f; v = v * v + 1.0f; v = v * v + 1.0f;
    a[threadIdx.x] = v;
}
__global__ void spread(float *a, int n) {
    float v = a[threadIdx.x];
    float p0 = v * 1.5f, p1 = v * 2.5f, p2 = v * 3.5f, p3 = v * 4.5f;
    float p4 = v * 5.5f, p5 = v * 6.5f, p6 = v * 7.5f, p7 = v * 8.5f;
    a[threadIdx.x] = p0; a[threadIdx.x + 32] = p1; a[threadIdx.x + 64] = p2; a[threadIdx.x + 96] = p3;
    a[threadIdx.x + 128] = p4; a[threadIdx.x + 160] = p5; a[threadIdx.x + 192] = p6; a[threadIdx.x + 224] = p7;
}
"""


def _ilp(entry):
    p = load_kernel(source=SRC, path="ilp.cu", entry=entry)
    f = p.module.functions[p.entry]
    (blk,) = f.blocks            # straight-line code: one basic block
    return block_ilp(f.instrs[blk.start:blk.end]), ilp_by_line(p.module, p.entry)


def test_a_dependent_chain_has_no_parallelism_and_independent_products_do():
    (n_chain, d_chain), _ = _ilp("chain")
    (n_spread, d_spread), by_line = _ilp("spread")
    # chain: 8 dependent fma (one per statement) on top of the address arithmetic: the chain is at least 8 steps
    # and holds most of the block's instructions
    assert d_chain >= 8 and n_chain / d_chain < 2.5
    # spread: 8 multiplies of the same loaded value, each one step after the load: the whole block is a few
    # steps deep (address arithmetic, the multiply, the store)
    assert d_spread <= 6 and n_spread / d_spread > 3
    assert max(by_line.values()) == pytest.approx(n_spread / d_spread)


def test_instruction_cycles_by_hand():
    rates = bn.device_rates(load_device("h100"))
    assert (rates.dependent_issue_latency_cycles, rates.independent_issue_cycles) == (9.0, 2.0)
    # half the instructions on a line with ILP 1 (a 9-cycle step each), half with ILP 24 (9 / 24 = 0.375 cycles,
    # held at the 2-cycle floor): 0.5 x 9 + 0.5 x 2
    assert bn.instruction_cycles([(0.5, 1.0), (0.5, 24.0)], rates) == pytest.approx(5.5)
    # ILP 3: 3 cycles; no figures (hand-written counts): every instruction a dependent step
    assert bn.instruction_cycles([(1.0, 3.0)], rates) == pytest.approx(3.0)
    assert bn.instruction_cycles(None, rates) == 9.0
    # a floor above the step is held at the step
    slow = dataclasses.replace(rates, independent_issue_cycles=20.0)
    assert bn.instruction_cycles([(1.0, 8.0)], slow) == 9.0


def test_the_chain_charges_the_credited_cycles():
    rates = bn.device_rates(load_device("h100"))
    from perfmodel.model.traffic import Traffic

    zero = Traffic(load_sectors=0, store_sectors=0, l1_hit_rate=0, block_reuse=0, l2_load_sectors=0,
                   l2_store_sectors=0, l2_hit_rate=0, dram_read_bytes=0, dram_write_bytes=0,
                   working_set_bytes=0, footprint_bytes=0)
    # 100 non-load instructions per warp, no loads: 100 x the instruction cycles
    assert bn.chain_cycles_per_warp(100, 0, 1, zero, rates, 0.0, 4.0) == pytest.approx(400)
    assert bn.chain_cycles_per_warp(100, 0, 1, zero, rates) == pytest.approx(900)
