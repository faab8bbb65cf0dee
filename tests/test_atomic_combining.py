"""Which global atomics are one operation per warp (perfmodel/sim/uniform.py) and the busiest line's L2 work
(perfmodel/sim/atomic_count.py), checked against hand-derived figures.

The rule is ptxas's, read off the SASS of sm_90 cubins (nvdisasm): a 32-bit integer add/min/max/and/or/xor whose
address is the same for every lane by construction becomes ``REDUX``/``VOTEU.ANY`` + ``POPC`` and one ``REDG`` from
one lane; exch, cas and an address taken from memory or the thread index stay one ``ATOMG``/``REDG`` per lane. The
H100 measured the consequence (validation/raw/h100_atomics.json): 4 Mi threads on one word take 99 us with the
combined kinds and 3.07 ms with the others - 4 Mi / 32 operations against 4 Mi."""
from __future__ import annotations

import numpy as np
import pytest

from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

SRC = r"""
__global__ void k(unsigned int *t, const int *idx, int *flag, float *f) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&t[0], 1u);                    // combined: one operation per warp
    atomicMax(&t[1], (unsigned int)i);       // combined
    atomicExch(&t[2], (unsigned int)i);      // one per lane
    atomicAdd(&t[3 + idx[i]], 1u);           // address from memory: one per lane
    atomicAdd(&t[4 + (threadIdx.x & 1)], 1u);    // address from the thread index: one per lane
    unsigned int k = 6;
    if (threadIdx.x < 16) k = 7;             // lanes that took different ways meet with different k
    atomicOr(&t[k], 1u);
    atomicAdd(&t[8 + blockIdx.x], 1u);       // the block index is the same for every lane: combined
    atomicAdd(&f[0], 1.0f);                  // float: one per lane
}
"""


@pytest.fixture(scope="module")
def counts():
    program = load_kernel(source=SRC)
    t = np.zeros(16, np.uint32)
    idx = np.zeros(128, np.int32)
    r = simulate(program, 2, 64, [t, idx, np.zeros(1, np.int32), np.zeros(1, np.float32)])
    # the values are those of every lane's own atomic, combined or not
    assert t[0] == 128 and t[1] == 127 and t[3] == 128 and t[4] == 64 and t[5] == 64
    assert t[6] == 1 and t[7] == 1 and t[8] == 64 and t[9] == 64
    return r.counts.to_json()["global"]


def test_operations_per_warp_by_hand(counts):
    # 4 warps. Combined: add t[0], max t[1], add t[8 + b] -> 1 each per warp = 12. One per lane: exch, the
    # idx-addressed add, the tid-addressed add, the or on the merged k, the float add -> 5 x 128 = 640.
    assert counts["atomic_ops"] == 12 + 640


def test_the_busiest_line_by_hand(counts):
    # Every atomic lands on line 0 of t (t[0..9]: bytes 0-39), except the float add on f. Line 0 has ten
    # addresses, so its work is per warp request: one transaction per distinct sector (t[0..7] is sector 0, t[8],
    # t[9] sector 1) and as many further passes as the sector's fullest address has operations beyond the first
    # (validation/atomic_bins_h200.json: the other addresses of the sector ride along).
    # Per warp: add t[0] 1 transaction; max 1; exch 1 + 31 passes; idx add 1 + 31; tid add (t[4], t[5]: one sector,
    # 16 lanes each) 1 + 15; or: 1 + 15 in a block's first warp (t[7] for threads 0-15, t[6] for 16-31, one
    # sector) and 1 + 31 in its second (all t[6]: the same address at run time, still one operation per lane);
    # add t[8 + b] 1. -> 7 transactions per warp and 31 + 31 + 15 + 15 = 92 integer passes per first warp, 108 per
    # second, x 2 blocks. The float line (f[0] alone) has 128 operations: less work.
    assert counts["atomic_hot_line_sectors"] == 7 * 4
    assert counts["atomic_hot_line_repeats_int"] == (92 + 108) * 2
    assert counts["atomic_hot_line_repeats_float"] == 0
    assert counts["atomic_hot_line_one_address_int"] == 0 and counts["atomic_hot_line_one_address_float"] == 0


def test_a_line_with_one_address_counts_every_operation_at_its_type():
    src = r"""
__global__ void k(float *f, unsigned int *u, const int *idx) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&f[idx[i]], 1.0f);             // 96 float operations on f[0]
    if (threadIdx.x == 0) atomicAdd(&u[idx[i]], 1u);   // 3 single-lane integer operations on u[0]
}
"""
    r = simulate(load_kernel(source=src), 3, 32, [np.zeros(64, np.float32), np.zeros(64, np.uint32),
                                                 np.zeros(96, np.int32)])
    g = r.counts.to_json()["global"]
    assert g["atomic_hot_line_one_address_float"] == 96
    assert g["atomic_hot_line_sectors"] == 0 and g["atomic_hot_line_one_address_int"] == 0


def test_the_analysis_refuses_a_non_entry_functions_parameter():
    """In a __noinline__ function the address arrives as a parameter, which may differ per lane."""
    from perfmodel.sim.uniform import combined_atomics

    src = r"""
__device__ __noinline__ void bump(unsigned int *p) { atomicAdd(p, 1u); }
__global__ void k(unsigned int *t) { bump(&t[threadIdx.x & 1]); atomicAdd(&t[2], 1u); }
"""
    program = load_kernel(source=src)
    module = program.module
    entry = module.functions[program.entry]
    other = next(f for name, f in module.functions.items() if name != program.entry)
    atoms = [k for k, ins in enumerate(entry.instrs) if ins.opcode in ("atom", "red")]
    assert len(atoms) == 1 and combined_atomics(entry) == frozenset(atoms)
    assert combined_atomics(other) == frozenset()


def test_a_value_set_in_one_arm_of_a_divergent_branch_is_not_uniform():
    """``k = 6; if (threadIdx.x < 16) { k = 7 + n; ... }``: the store in the arm keeps it a real branch (no selp),
    and the two definitions of k meet after it. Lanes 0-15 of the first warp hold 7, the others 6, so the atomic on
    t[k] is not combined: one operation per lane, 64 (a combining proof that ignored the branch arms would merge
    them into 3: two addresses in the first warp, one in the second)."""
    from perfmodel.sim.uniform import combined_atomics

    src = r"""
__global__ void k(unsigned int *t, int *flag, int n) {
    unsigned int k = 6;
    if (threadIdx.x < 16) { k = 7 + n; flag[threadIdx.x] = 1; }
    atomicOr(&t[k], 1u);
}
"""
    program = load_kernel(source=src)
    assert combined_atomics(program.module.functions[program.entry]) == frozenset()
    t = np.zeros(16, np.uint32)
    r = simulate(program, 1, 64, [t, np.zeros(64, np.int32), 0])
    assert t[6] == 1 and t[7] == 1
    assert r.counts.to_json()["global"]["atomic_ops"] == 64


def test_a_value_computed_after_the_arms_meet_is_not_uniform_either():
    """The same branch, but the atomic's address is computed from k after the arms meet (``t[(k * m) >> 3]``, one
    multiply and shift in the block after the branch): k's class comes from the arms, and the address's from k, so
    the proof must go on after it marks k (a proof that stopped there would combine the warps' lanes: 3 operations,
    not 64). m = 16: lanes 0-15 of the first warp hit t[2 * (7 + n)], every other lane t[12]."""
    from perfmodel.sim.uniform import combined_atomics

    src = r"""
__global__ void k(unsigned int *t, int *flag, int n, int m) {
    unsigned int k = 6;
    if (threadIdx.x < 16) { k = 7 + n; flag[threadIdx.x] = 1; }
    flag[blockIdx.x + 64] = m;
    atomicOr(&t[(k * m) >> 3], 1u);
}
"""
    program = load_kernel(source=src)
    assert combined_atomics(program.module.functions[program.entry]) == frozenset()
    t = np.zeros(32, np.uint32)
    r = simulate(program, 1, 64, [t, np.zeros(128, np.int32), 0, 16])
    assert t[12] == 1 and t[14] == 1 and t.sum() == 2
    assert r.counts.to_json()["global"]["atomic_ops"] == 64


@pytest.mark.parametrize("kernel,nbins", [("hist_global_u32", 2), ("hist_global_u32", 8), ("hist_global_f32", 2),
                                          ("hist_global_f32", 8)])
def test_a_few_bins_of_one_sector_cost_their_fullest_bin(kernel, nbins):
    """validation/microbench/atomic_bins.py on an H200 (validation/atomic_bins_h200.json, cold medians, 4 Mi
    elements): 2 to 8 bins in one sector. Charging every lane beyond the first on its address a pass predicted
    1.7x-4x too slow (a histogram of 8 bins: 2,708 us against 686); the sector's fullest bin sets the passes. Not
    this rule's reach: 16 to 64 bins, several sectors of a line, are still 1.5x-3x too slow (docs/model.md 2.10)."""
    import json
    from pathlib import Path

    from perfmodel.analysis import analyze

    root = Path(__file__).resolve().parents[1]
    data = json.loads((root / "validation" / "atomic_bins_h200.json").read_text())
    assert data["device"].startswith("NVIDIA H200")
    measured = next(c["median_s"] for c in data["cases"] if c["kernel"] == kernel and c["NBINS"] == nbins)
    a = analyze(str(root / "validation" / "kernels" / f"{kernel}.yaml"), "h200", {"NBINS": nbins, "n": data["n"]},
                check=False, l2="cold")
    assert 1 / 1.5 < a.predicted_time_s / measured < 1.5, (a.predicted_time_s, measured)
