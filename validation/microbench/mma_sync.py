"""Run tests/data/mma_kernels.cu (ldmatrix and mma.sync with the PTX ISA's fragment formulas) on a GPU with CuPy and
save inputs and outputs for tests/test_mma_sync.py, which runs the same kernels on perfmodel's executor:

    python validation/microbench/mma_sync.py validation/mma_sync_h200.npz     # on the GPU machine (CuPy)

It also prints, per kernel, how far the GPU's D is from numpy's A B + C (the formulas hold if it is ~0) and
whether each ldmatrix dump equals the PTX ISA's distribution (thread t: row t / 4, elements 2 (t % 4) and
2 (t % 4) + 1 of each matrix; transposed: those of the columns)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "data" / "mma_kernels.cu"


def inputs() -> dict:
    rng = np.random.default_rng(2026)
    f16 = lambda shape: rng.uniform(-2, 2, shape).astype(np.float16).view(np.uint16)       # noqa: E731
    bf16 = lambda shape: (rng.uniform(-2, 2, shape).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # noqa: E731
    return {
        "ldm_src": np.arange(1, 257, dtype=np.uint16) * np.uint16(17),
        "f16_A": f16(16 * 16), "f16_B": f16(16 * 8), "f16_C": rng.uniform(-1, 1, 16 * 8).astype(np.float32),
        "bf16_A": bf16(16 * 16), "bf16_B": bf16(16 * 8), "bf16_C": rng.uniform(-1, 1, 16 * 8).astype(np.float32),
        "h_A": f16(16 * 8), "h_B": f16(8 * 8), "h_C": f16(16 * 8),
        "tf32_A": rng.uniform(-2, 2, 16 * 8).astype(np.float32), "tf32_B": rng.uniform(-2, 2, 8 * 8).astype(np.float32),
        "tf32_C": rng.uniform(-1, 1, 16 * 8).astype(np.float32),
        "s8_A": rng.integers(-128, 128, 16 * 32).astype(np.int8), "s8_B": rng.integers(-128, 128, 32 * 8).astype(np.int8),
        "s8_C": rng.integers(-1000, 1000, 16 * 8).astype(np.int32),
        "f64_A": rng.uniform(-2, 2, 8 * 4), "f64_B": rng.uniform(-2, 2, 4 * 8), "f64_C": rng.uniform(-1, 1, 8 * 8),
        "gemm_A": f16(64 * 48), "gemm_B": f16(48 * 32),
    }


MMA = {   # kernel: (prefix, output dtype, M, N)
    "mma_m16n8k16_f16_f32": ("f16", np.float32, 16, 8),
    "mma_m16n8k16_bf16_f32": ("bf16", np.float32, 16, 8),
    "mma_m16n8k8_f16_f16": ("h", np.uint16, 16, 8),
    "mma_m16n8k8_tf32_f32": ("tf32", np.float32, 16, 8),
    "mma_m16n8k32_s8_s32": ("s8", np.int32, 16, 8),
    "mma_m8n8k4_f64": ("f64", np.float64, 8, 8),
}
LDM = {"ldm_x1": 1, "ldm_x2": 2, "ldm_x4": 4, "ldm_x1_trans": 1, "ldm_x2_trans": 2, "ldm_x4_trans": 4}
STM = {"stm_x1": 1, "stm_x2_trans": 2, "stm_x4": 4, "stm_x4_trans": 4}


def main(out_path: str) -> int:
    import cupy as cp

    mod = cp.RawModule(code=SOURCE.read_text(), options=("-std=c++17",), backend="nvcc")
    data = inputs()
    saved = dict(data)
    for name, regs in LDM.items():
        out = cp.zeros(32 * regs, cp.uint32)
        mod.get_function(name)((1,), (32,), (cp.asarray(data["ldm_src"]), out))
        saved[name] = out.get()
    for name in STM:
        out = cp.zeros(512, cp.uint16)
        mod.get_function(name)((1,), (32,), (out,))
        saved[name] = out.get()
    for name, (p, dt, m, n) in MMA.items():
        d = cp.zeros(m * n, dt)
        mod.get_function(name)((1,), (32,), (cp.asarray(data[p + "_A"]), cp.asarray(data[p + "_B"]),
                                             cp.asarray(data[p + "_C"]), d))
        saved[name] = d.get()
    c = cp.zeros(64 * 32, cp.float32)
    mod.get_function("hgemm_ldmatrix_mma")((32 // 8, 64 // 16), (32,), (cp.asarray(data["gemm_A"]),
                                           cp.asarray(data["gemm_B"]), c, np.int32(64), np.int32(32), np.int32(48)))
    saved["hgemm_ldmatrix_mma"] = c.get()
    saved["device"] = np.array(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
    np.savez_compressed(out_path, **saved)
    report(saved)
    return 0


def report(s: dict) -> None:
    h = lambda u: u.view(np.float16).astype(np.float64)      # noqa: E731
    b = lambda u: (u.astype(np.uint32) << 16).view(np.float32).astype(np.float64)    # noqa: E731
    refs = {
        "mma_m16n8k16_f16_f32": h(s["f16_A"]).reshape(16, 16) @ h(s["f16_B"]).reshape(16, 8) + s["f16_C"].reshape(16, 8),
        "mma_m16n8k16_bf16_f32": b(s["bf16_A"]).reshape(16, 16) @ b(s["bf16_B"]).reshape(16, 8)
        + s["bf16_C"].reshape(16, 8),
        "mma_m16n8k8_f16_f16": h(s["h_A"]).reshape(16, 8) @ h(s["h_B"]).reshape(8, 8) + h(s["h_C"]).reshape(16, 8),
        "mma_m16n8k8_tf32_f32": (s["tf32_A"].view(np.uint32) & 0xFFFFE000).view(np.float32).astype(np.float64)
        .reshape(16, 8) @ (s["tf32_B"].view(np.uint32) & 0xFFFFE000).view(np.float32).astype(np.float64)
        .reshape(8, 8) + s["tf32_C"].reshape(16, 8),
        "mma_m16n8k32_s8_s32": s["s8_A"].astype(np.int64).reshape(16, 32) @ s["s8_B"].astype(np.int64).reshape(32, 8)
        + s["s8_C"].reshape(16, 8),
        "mma_m8n8k4_f64": s["f64_A"].reshape(8, 4) @ s["f64_B"].reshape(4, 8) + s["f64_C"].reshape(8, 8),
        "hgemm_ldmatrix_mma": h(s["gemm_A"]).reshape(64, 48) @ h(s["gemm_B"]).reshape(48, 32),
    }
    for name, ref in refs.items():
        got = s[name]
        got = h(got) if got.dtype == np.uint16 else got.astype(np.float64)
        print(f"{name:24s} max |GPU - numpy| = {np.abs(got.reshape(ref.shape) - ref).max():.3g}")
    mats = s["ldm_src"].reshape(4, 8, 8)
    for name, regs in LDM.items():
        want = np.zeros((32, regs), np.uint32)
        for lane in range(32):
            for q in range(regs):
                m = mats[q].T if name.endswith("trans") else mats[q]
                r, c = lane // 4, 2 * (lane % 4)
                want[lane, q] = int(m[r, c]) | (int(m[r, c + 1]) << 16)
        print(f"{name:24s} equals the PTX ISA distribution: {bool((s[name].reshape(32, regs) == want).all())}")
    for name, regs in STM.items():      # the inverse: matrix q's row r element c came from lane 4 r + c / 2, half c % 2
        want = np.full(512, 0xFFFF, np.uint16)
        for q in range(regs):
            for r in range(8):
                for c in range(8):
                    rr, cc = (c, r) if name.endswith("trans") else (r, c)
                    lane = 4 * rr + cc // 2
                    want[q * 128 + ((3 * r) % 8) * 16 + c] = (lane << 8) | (q << 4) | (cc % 2)
        print(f"{name:24s} equals the PTX ISA distribution: {bool((s[name] == want).all())}")


def hgemm_once() -> int:
    """The tile GEMM alone, once, for Nsight Compute (validation/mma_sync_h200_ncu.csv):
    ncu --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,
    smsp__inst_executed_op_ldsm.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,
    sm__inst_executed_pipe_tensor_op_hmma.sum,smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,
    l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum (one comma-separated list)
    --csv -k hgemm_ldmatrix_mma python3 validation/microbench/mma_sync.py --hgemm-once"""
    import cupy as cp

    mod = cp.RawModule(code=SOURCE.read_text(), options=("-std=c++17",), backend="nvcc")
    data = inputs()
    c = cp.zeros(64 * 32, cp.float32)
    mod.get_function("hgemm_ldmatrix_mma")((32 // 8, 64 // 16), (32,), (cp.asarray(data["gemm_A"]),
                                           cp.asarray(data["gemm_B"]), c, np.int32(64), np.int32(32), np.int32(48)))
    cp.cuda.runtime.deviceSynchronize()
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--hgemm-once"]:
        sys.exit(hgemm_once())
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "mma_sync.npz"))
