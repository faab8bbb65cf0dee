"""mma.sync, ldmatrix and stmatrix (perfmodel/sim/mma_sync.py) against an H200: tests/data/mma_kernels.cu builds
every fragment with the PTX ISA's formulas, and validation/microbench/mma_sync.py ran it on the GPU
(validation/mma_sync_h200.npz, inputs and outputs; its tile GEMM under Nsight Compute in
validation/mma_sync_h200_ncu.csv). The executor must give the GPU's registers, memory and counts."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "mma_kernels.cu"


@pytest.fixture(scope="module")
def gpu():
    d = np.load(ROOT / "validation" / "mma_sync_h200.npz")
    assert str(d["device"]).startswith("NVIDIA H200")
    return {k: d[k] for k in d.files}


@pytest.mark.parametrize("name,regs", [("ldm_x1", 1), ("ldm_x2", 2), ("ldm_x4", 4), ("ldm_x1_trans", 1),
                                       ("ldm_x2_trans", 2), ("ldm_x4_trans", 4)])
def test_ldmatrix_gives_each_lane_the_registers_the_gpu_gave(gpu, name, regs):
    out = np.zeros(32 * regs, np.uint32)
    simulate(load_kernel(SOURCE, entry=name), 1, 32, [gpu["ldm_src"].copy(), out])
    assert out.tolist() == gpu[name].tolist()


@pytest.mark.parametrize("name", ["stm_x1", "stm_x2_trans", "stm_x4", "stm_x4_trans"])
def test_stmatrix_writes_shared_memory_as_the_gpu_did(gpu, name):
    out = np.zeros(512, np.uint16)
    simulate(load_kernel(SOURCE, entry=name), 1, 32, [out])
    assert out.tolist() == gpu[name].tolist()


MMA = {"mma_m16n8k16_f16_f32": ("f16", np.float32), "mma_m16n8k16_bf16_f32": ("bf16", np.float32),
       "mma_m16n8k8_f16_f16": ("h", np.uint16), "mma_m16n8k8_tf32_f32": ("tf32", np.float32),
       "mma_m16n8k32_s8_s32": ("s8", np.int32), "mma_m8n8k4_f64": ("f64", np.float64)}


@pytest.mark.parametrize("name", list(MMA))
def test_mma_sync_gives_the_gpus_d(gpu, name):
    """The GPU's D to the last bit for integers and f16, within one rounding for f32 (the hardware's summation
    order is not documented: perfmodel sums exactly and rounds once) and f64."""
    prefix, dt = MMA[name]
    d = np.zeros(gpu[name].size, dt)
    simulate(load_kernel(SOURCE, entry=name), 1, 32,
             [gpu[prefix + "_A"].copy(), gpu[prefix + "_B"].copy(), gpu[prefix + "_C"].copy(), d])
    want = gpu[name]
    if dt in (np.int32, np.uint16):
        assert d.tolist() == want.tolist()
    else:
        np.testing.assert_allclose(d, want, rtol=2 * np.finfo(dt).eps, atol=2 * np.finfo(dt).eps)


def test_a_tile_gemm_with_ldmatrix_and_mma_is_the_product_and_ncus_counts(gpu):
    """Tutorial-style HGEMM (ldmatrix.x4 for A, ldmatrix.x2.trans for B, mma.sync.m16n8k16, 64 x 32 x 48): C within
    float32 rounding of numpy's product, and Nsight Compute's counts on the H200: 96 ldmatrix instructions, 384
    shared-load wavefronts (4 for each conflict-free x4, 4 for each x2 whose rows 32 B apart pair up on the banks),
    48 HMMA, the staging stores and global loads; the SASS-weighted issue count within 1% of ncu's."""
    from perfmodel.api import RawModule

    c = np.zeros(64 * 32, np.float32)
    k = RawModule(path=str(SOURCE)).get_function("hgemm_ldmatrix_mma")
    result = k((4, 4), (32,), (gpu["gemm_A"].copy(), gpu["gemm_B"].copy(), c, np.int32(64), np.int32(32),
                               np.int32(48)), device="h100")
    h = lambda u: u.view(np.float16).astype(np.float64)          # noqa: E731
    ref = h(gpu["gemm_A"]).reshape(64, 48) @ h(gpu["gemm_B"]).reshape(48, 32)
    np.testing.assert_allclose(c.reshape(64, 32), ref, rtol=1e-5, atol=1e-5)
    # each of the 3 k-steps rounds the accumulator to float32 (values up to ~16: 2e-6 a rounding)
    np.testing.assert_allclose(c, gpu["hgemm_ldmatrix_mma"], rtol=1e-6, atol=1e-5)
    with open(ROOT / "validation" / "mma_sync_h200_ncu.csv") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("==PROF=="))    # ncu's own status lines
        ncu = {r["Metric Name"]: float(r["Metric Value"].replace(",", "")) for r in rows}
    counts = result.counts
    s, g = counts["shared"], counts["global"]
    assert s["load_requests"] == ncu["smsp__inst_executed_op_ldsm.sum"] == 96
    assert s["load_wavefronts"] == ncu["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 384
    assert s["store_requests"] == ncu["smsp__inst_executed_op_shared_st.sum"]
    assert s["store_wavefronts"] == ncu["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"]
    assert counts["tensor"]["mma"] == ncu["sm__inst_executed_pipe_tensor_op_hmma.sum"] == 48
    assert counts["tensor"]["flops"] == {"f16": 48 * 2 * 16 * 8 * 16}
    assert g["load_requests"] == ncu["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
    assert g["load_sectors"] == ncu["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
    assert counts["warp_instructions"] == pytest.approx(ncu["smsp__inst_executed.sum"], rel=0.01)


def test_an_mma_form_not_executed_is_refused_by_name(tmp_path):
    from perfmodel.errors import SimulationError

    src = tmp_path / "k16s8.cu"
    src.write_text('extern "C" __global__ void k(int *d) {\n  unsigned a0 = 1, a1 = 2, b0 = 3; int c0 = 0, c1 = 0, '
                   'c2 = 0, c3 = 0;\n  asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, '
                   '{%4,%5}, {%6}, {%0,%1,%2,%3};" : "+r"(c0), "+r"(c1), "+r"(c2), "+r"(c3) : "r"(a0), "r"(a1), '
                   '"r"(b0));\n  d[threadIdx.x] = c0 + c1 + c2 + c3;\n}\n')
    with pytest.raises(SimulationError, match=r"k16s8.cu:3.*mma.sync.m16n8k16 with .s8 operands \(executed: "):
        simulate(load_kernel(src, entry="k"), 1, 32, [np.zeros(32, np.int32)])


def test_part_of_a_warp_executing_mma_sync_is_an_error(gpu):
    """mma.sync is .sync.aligned: the kernel launched with 16 threads leaves half the warp out."""
    from perfmodel.errors import SimulationError

    d = np.zeros(128, np.float32)
    with pytest.raises(SimulationError, match=r"warp-wide instruction"):
        simulate(load_kernel(SOURCE, entry="mma_m16n8k16_f16_f32"), 1, 16,
                 [gpu["f16_A"].copy(), gpu["f16_B"].copy(), gpu["f16_C"].copy(), d])
