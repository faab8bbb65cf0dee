"""Measure every shipped kernel over a grid of sizes and tile/block widths on the GPU at hand, with Nsight
Compute counters; write one JSON document (merged into ``validation/h100.json`` by ``validation/merge.py``).

    python validation/measure.py OUT_DIR [--set seed|fidelity|corpus|tensor|sgemm|all[,...]] [--only KERNEL[,KERNEL...]]
        [--no-ncu] [--list]

Each case: one spec instance (``kernel`` + param overrides), compiled as the analysis compiles it (perfmodel's
compile; its SASS opcode histogram is kept in the case's ``compiler``). Timed by :func:`perfmodel.gpu.runner.run_kernel`
(cold = L2 flushed before each launch, the headline; warm; median of repeats after warm-up), then all cases are
profiled together in one ``ncu`` run (:func:`perfmodel.gpu.ncu.collect`), one launch each.
"""
from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _grid(kernel, **axes):
    """Cartesian product of param values -> cases."""
    import itertools

    names = list(axes)
    return [{"kernel": kernel, "overrides": dict(zip(names, values))}
            for values in itertools.product(*(axes[n] for n in names))]


def cases() -> list[dict]:
    result = []
    # The matmuls: W = 256..4096, several block/tile widths (issue 7: "W=256..4096 for the matmuls").
    result += _grid("matmul_naive", Width=[256, 512, 1024, 2048, 4096], BLOCK_WIDTH=[16, 32])
    result += _grid("matmul_naive", Width=[1024], BLOCK_WIDTH=[8])
    result += _grid("matmul_tiled", Width=[256, 512, 1024, 2048, 4096], TILE_WIDTH=[16, 32])
    result += _grid("matmul_tiled", Width=[512, 2048], TILE_WIDTH=[8])
    # The one-block seed matmuls (int): one SM does all the work.
    result += _grid("matmul_rowwise", ha=[256], wa=[256], wb=[256])
    result += _grid("matmul_rowwise", ha=[1024], wa=[64], wb=[64])
    result += _grid("matmul_colwise", ha=[256], wa=[256], wb=[256])
    result += _grid("matmul_colwise", ha=[64], wa=[64], wb=[1024])
    result += _grid("matmul_elementwise", ha=[32], wa=[1024], wb=[32])
    result += _grid("matmul_elementwise", ha=[16], wa=[4096], wb=[64])
    # The small kernels at large sizes (streaming, DRAM-bound).
    result += _grid("vec_add", N=[1 << 20, 1 << 24, 1 << 26], BLOCK_SIZE=[256])
    result += _grid("vec_add", N=[1 << 24], BLOCK_SIZE=[64, 1024])
    result += [{"kernel": "picture_scale", "overrides": {}}]  # the seed's 76 x 62 picture: launch-bound
    result += _grid("picture_scale", n=[4096, 8191], m=[4096, 8190], BLOCK_WIDTH=[16])[::3]
    result += _grid("picture_scale", n=[8192], m=[8192], BLOCK_WIDTH=[32])
    # Large 1D convolutions: the five strategies at the same sizes.
    for kernel in ("conv1d_basic", "conv1d_constant", "conv1d_tiled", "conv1d_tiled_cache"):
        result += [{"kernel": kernel, "overrides": {"Width": 1 << 24, "Mask_Width": 5, "BLOCK_SIZE": 256}},
                   {"kernel": kernel, "overrides": {"Width": 1 << 24, "Mask_Width": 9, "BLOCK_SIZE": 1024}}]
    result += [{"kernel": "conv1d_tiled_alt", "overrides": {"Width": 1 << 24, "MASK_WIDTH": 5, "BLOCK_SIZE": 256}},
               {"kernel": "conv1d_tiled_alt", "overrides": {"Width": 1 << 24, "MASK_WIDTH": 9, "BLOCK_SIZE": 1024}}]
    # Large 2D convolutions: 16x16 and 32x32 blocks (12x12 and 28x28 output tiles).
    result += [{"kernel": "conv2d_tiled", "overrides": {"Width": 4096, "TILE_WIDTH": 12, "MASK_WIDTH": 5}},
               {"kernel": "conv2d_tiled", "overrides": {"Width": 8192, "TILE_WIDTH": 28, "MASK_WIDTH": 5}},
               {"kernel": "conv2d_tiled", "overrides": {"Width": 4096, "TILE_WIDTH": 26, "MASK_WIDTH": 7}}]
    # Large SpMV on generated matrices: random row lengths (irregular gathers) and banded.
    result += [{"kernel": "spmv_csr", "overrides": {"matrix": 1, "num_rows": 1 << 18, "max_row_length": 64}},
               {"kernel": "spmv_csr", "overrides": {"matrix": 1, "num_rows": 1 << 18, "max_row_length": 64,
                                                     "BLOCK_SIZE": 128}},
               {"kernel": "spmv_csr", "overrides": {"matrix": 2, "num_rows": 1 << 20, "half_bandwidth": 8,
                                                     "BLOCK_SIZE": 128}}]
    # Edge cases at sizes the analyzer simulates exactly (partial blocks, halos at both ends, bounds checks), so
    # that every kernel's counts are compared with exact simulated counts, not only sampled extrapolations.
    result += [{"kernel": "matmul_naive", "overrides": {"Width": 300, "BLOCK_WIDTH": 16}},
               {"kernel": "vec_add", "overrides": {"N": 1000000, "BLOCK_SIZE": 256}},
               {"kernel": "picture_scale", "overrides": {"n": 1000, "m": 999, "BLOCK_WIDTH": 16}},
               {"kernel": "picture_scale", "overrides": {"n": 1500, "m": 1000, "BLOCK_WIDTH": 32}},
               {"kernel": "conv2d_tiled", "overrides": {"Width": 1000, "TILE_WIDTH": 12, "MASK_WIDTH": 5}},
               {"kernel": "conv2d_tiled", "overrides": {"Width": 500, "TILE_WIDTH": 28, "MASK_WIDTH": 5}},
               {"kernel": "spmv_csr", "overrides": {"matrix": 1, "num_rows": 65536, "max_row_length": 16,
                                                     "BLOCK_SIZE": 64}}]
    for kernel in ("conv1d_basic", "conv1d_constant", "conv1d_tiled", "conv1d_tiled_cache"):
        result.append({"kernel": kernel, "overrides": {"Width": 1000000, "Mask_Width": 7, "BLOCK_SIZE": 128}})
    result.append({"kernel": "conv1d_tiled_alt", "overrides": {"Width": 1000000, "MASK_WIDTH": 7, "BLOCK_SIZE": 128}})
    return result


def fidelity_cases() -> list[dict]:
    """Issue 13's kernels (validation/kernels/): atomics contended and spread (int and float, global and shared),
    few-block reductions, scattered-store transposes."""
    result = []
    for kernel in ("hist_global_u32", "hist_global_f32"):
        result += _grid(kernel, n=[1 << 22], NBINS=[1, 256, 65536])
        result += _grid(kernel, n=[1 << 20], NBINS=[1])
    for kernel in ("hist_shared_u32", "hist_shared_f32"):
        result += _grid(kernel, n=[1 << 22], NBINS=[1, 256, 4096])
    for kernel in ("reduce_sequential", "reduce_interleaved_mod"):
        result += _grid(kernel, n=[1 << 22], blocks=[8, 64, 132, 1024])
        result += _grid(kernel, n=[1 << 24], blocks=[64, 528])
    for kernel in ("transpose_naive", "transpose_read_scattered", "transpose_shared"):
        result += _grid(kernel, rows=[1024, 4096, 8192], cols=[1024, 4096, 8192])[::4]
    result += _grid("transpose_naive", rows=[4096], cols=[1024])
    # One contended address per operation kind (validation/kernels/atomic_ops.cu): lanes the compiler combines
    # (add, max, or: REDUX) or not (exch, cas, inc), and lanes on one address it cannot see (int and float).
    result += _grid("atomic_same_u32", n=[1 << 22], OP=[0, 1, 2, 3, 4, 5, 6])
    result += _grid("atomic_same_u32", n=[1 << 20], OP=[1, 3])
    for kernel in ("atomic_gather_u32", "atomic_gather_f32"):
        result += _grid(kernel, n=[1 << 22], LANES=[1, 32])
        result += _grid(kernel, n=[1 << 20], LANES=[8])
    # The FP64 pipe (validation/kernels/fp64_chain.cu): a full GPU of independent DFMA chains, and few blocks.
    result += _grid("fp64_fma_chain", n=[1 << 18, 1 << 20], ITERS=[4096], CHAINS=[4])
    result += _grid("fp64_fma_chain", n=[1 << 18], ITERS=[4096], CHAINS=[1])
    result += _grid("fp64_fma_chain", n=[8192], ITERS=[4096], CHAINS=[4])
    return result


CORPUS_DIR = Path(__file__).resolve().parent / "kernels" / "cuda-samples"


def corpus_cases() -> list[dict]:
    """The cuda-samples kernels (vendored unchanged in validation/kernels/cuda-samples, BSD-3-Clause) whose
    bench/corpus_specs spec the simulator runs correctly, each at its spec's own launch."""
    names = (Path(__file__).resolve().parent / "corpus_kernels.txt").read_text().split()
    return [{"kernel": name, "overrides": {}} for name in names]


def _kernel_path(sets: set[str]) -> None:
    """Put validation/kernels (and the corpus specs, {CORPUS} resolved) on the spec search path."""
    import os
    import tempfile

    folders = [str(Path(__file__).resolve().parent / "kernels")]
    if "corpus" in sets or "tensor" in sets:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
        from corpus_run import resolve_specs

        out = Path(tempfile.mkdtemp(prefix="corpus_specs_"))
        resolve_specs(CORPUS_DIR, out)
        folders.append(str(out))
    old = os.environ.get("PERFMODEL_KERNEL_PATH", "")
    os.environ["PERFMODEL_KERNEL_PATH"] = os.pathsep.join(folders + ([old] if old else []))


def tensor_cases() -> list[dict]:
    """Tensor-core (wmma) kernels: cuda-samples cudaTensorCoreGemm's two GEMMs (vendored unchanged) at 256^3,
    1024^3 and 2048^3 (M_TILES = N_TILES = K_TILES = 16, 64, 128), compute_gemm also at the sample's own 4096^3."""
    sizes = {"cudaTensorCoreGemm_simple_wmma_gemm": (16, 64, 128), "cudaTensorCoreGemm_compute_gemm": (16, 64, 128, 256)}
    return [{"kernel": k, "overrides": {"M_TILES": t, "N_TILES": t, "K_TILES": t}} for k, ts in sizes.items() for t in ts]


def sgemm_cases() -> list[dict]:
    """The SGEMM tutorial's twelve kernels (siboehm/SGEMM_CUDA, vendored unchanged in validation/kernels/sgemm_cuda,
    MIT): code the model was not tuned on, at the tutorial's 4096^3 and at 1024^3."""
    names = sorted(p.stem for p in (Path(__file__).resolve().parent / "kernels").glob("sgemm_[0-9]*.yaml"))
    return [{"kernel": name, "overrides": {"S": s}} for name in names for s in (1024, 4096)]


def compiler_record(cubin: bytes, symbol: str, versions: dict) -> dict:
    """What the case measured: NVRTC's version and the SASS opcode histogram of its kernel in the cubin it loaded
    (``validation/compiler_check.py``'s form; empty opcodes where this machine has no nvdisasm), which
    ``tests/test_measured_cubins.py`` compares with the analysis's own compile."""
    from compiler_check import _functions

    counts = _functions(cubin).get(symbol, {})
    return {"nvrtc": versions.get("perfmodel_nvrtc"), "instructions": sum(counts.values()), "opcodes": counts}


SETS = {"seed": cases, "fidelity": fidelity_cases, "corpus": corpus_cases, "tensor": tensor_cases,
        "sgemm": sgemm_cases}


def main(argv: list[str]) -> int:
    sets = set((argv[argv.index("--set") + 1] if "--set" in argv else "seed").split(","))
    if sets == {"all"}:
        sets = set(SETS)
    chosen = [c for name in ("seed", "fidelity", "corpus", "tensor", "sgemm") if name in sets for c in SETS[name]()]
    _kernel_path(sets)
    if "--list" in argv:
        for case in chosen:
            print(case)
        print(len(chosen), "cases")
        return 0
    out_dir = Path(argv[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    only = set(argv[argv.index("--only") + 1].split(",")) if "--only" in argv else None
    # --skip-existing DATASET: measure only the cases the dataset does not have yet
    existing = set()
    if "--skip-existing" in argv:
        existing = {c["id"] for c in json.loads(Path(argv[argv.index("--skip-existing") + 1]).read_text())["cases"]}
    use_ncu = "--no-ncu" not in argv
    from perfmodel.errors import PerfmodelError
    from perfmodel.gpu.accuracy import case_id
    from perfmodel.gpu.env import clocks, device_properties, require_cupy, versions
    from perfmodel.gpu.runner import run_kernel
    from perfmodel.spec import load_spec

    cp = require_cupy()
    from perfmodel.gpu.accuracy import case_id as _case_id

    todo = [c for c in chosen if (only is None or c["kernel"] in only) and _case_id(c) not in existing]
    document = {"device": device_properties(cp, 0), "versions": versions(cp), "clocks_before": clocks(0),
                "measured_at_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cases": [],
                "skipped": []}
    out_file = out_dir / "measure.json"
    started = time.time()
    for case in todo:
        cid = case_id(case)
        try:
            load_spec(case["kernel"])
        except PerfmodelError as err:
            document["skipped"].append({"id": cid, "reason": str(err)})
            print(f"SKIP {cid}: {err}", flush=True)
            continue
        t0 = time.time()
        try:
            run = run_kernel(case["kernel"], case["overrides"])
        except Exception as err:  # noqa: BLE001 - record and go on
            document["skipped"].append({"id": cid, "reason": f"{type(err).__name__}: {err}"})
            print(f"FAIL {cid}: {type(err).__name__}: {err}", flush=True)
            traceback.print_exc()
            continue
        record = {"id": cid, **run.to_json()}
        if run.cubin is not None:
            record["compiler"] = compiler_record(run.cubin, record["entry_symbol"], document["versions"])
        document["cases"].append(record)
        print(f"{time.time() - started:6.1f}s {cid:48s} ok={run.correct} regs={run.function.get('num_regs')} "
              f"smem={run.function.get('shared_size_bytes')} bps={run.occupancy_api['blocks_per_sm']} "
              f"cold={run.time_cold.median_s * 1e3:.4f}ms warm={run.time_warm.median_s * 1e3:.4f}ms "
              f"({time.time() - t0:.1f}s)", flush=True)
        out_file.write_text(json.dumps(document))
    if use_ncu and document["cases"]:
        from perfmodel.gpu import ncu

        t0 = time.time()
        try:
            metrics, info = ncu.collect_all([{"kernel": c["kernel"], "overrides": c["overrides"]}
                                         for c in document["cases"]], workdir="/tmp/perfmodel_ncu_work")
            document["ncu_info"] = info
            for record, found in zip(document["cases"], metrics):
                if found is not None:
                    record["ncu"] = found
                    grid = "(" + ", ".join(str(g) for g in record["grid"]) + ")"
                    if found.get("ncu_grid_size") and found["ncu_grid_size"] != grid:
                        record["ncu_mapping_warning"] = f"ncu grid {found['ncu_grid_size']} != {grid}"
            print(f"ncu: {info['counts'].get('profiled_kernels')} kernels in {time.time() - t0:.1f}s "
                  f"{' '.join(i.get('warning', '') for i in info.values())}", flush=True)
        except Exception as err:  # noqa: BLE001
            document["ncu_error"] = f"{type(err).__name__}: {err}"
            print("NCU FAILED", document["ncu_error"][-2000:], flush=True)
    document["clocks_after"] = clocks(0)
    out_file.write_text(json.dumps(document))
    print(f"{len(document['cases'])} cases, {len(document['skipped'])} skipped, {time.time() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
