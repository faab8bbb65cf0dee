"""First device call: check the runner end to end on stand-in specs (before the shipped specs exist) and what
ncu reports for our metric list. Writes OUT_DIR/probe.json and OUT_DIR/probe_ncu.csv.

    python validation/probe.py OUT_DIR            # runner + ncu over the stand-ins
    python validation/probe.py --launch-only      # (run by ncu) launch each stand-in once
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CONV = r"""
#define MAX_MASK_WIDTH 10
__constant__ float M[MAX_MASK_WIDTH];
__global__ void convolution_1D_basic_kernel(float *N, float *P, int Mask_Width, int Width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float Pvalue = 0;
    int N_start_point = i - (Mask_Width / 2);
    for (int j = 0; j < Mask_Width; j++) {
        if (N_start_point + j >= 0 && N_start_point + j < Width)
            Pvalue += N[N_start_point + j] * M[j];
    }
    if (i < Width) P[i] = Pvalue;
}
"""


@dataclass
class Arg:
    name: str
    kind: str
    dtype: str
    value: object


@dataclass
class Check:
    correct: bool
    message: str
    outputs: list


class FakeLaunch:
    def __init__(self, params, defines, grid, block, args, constants, reference, out_index):
        self.params, self.defines, self.grid, self.block = params, defines, grid, block
        self.args, self.constants, self.dynamic_shared_bytes = args, constants, 0
        self._reference, self._out = reference, out_index

    def arg_values(self):
        return [a.value.copy() if a.kind == "array" else a.value for a in self.args]

    def check_outputs(self, after):
        ref = self._reference(after)
        err = float(np.max(np.abs(after[self._out] - ref)))
        ok = bool(np.allclose(after[self._out], ref, rtol=1e-4, atol=1e-4))
        return Check(ok, f"max abs error {err:.3g}", [{"name": self.args[self._out].name, "max_abs_error": err}])


class FakeSpec:
    def __init__(self, name, path, entry, make):
        self.name, self.source_path, self.entry, self._make = name, path, entry, make

    def instantiate(self, overrides):
        return self._make(overrides)


def specs(folder: Path):
    from perfmodel.paths import shipped_dir

    # the tiled stand-in launches the shipped kernel; the conv one keeps its own source (mask in constant memory,
    # under the basic kernel's name)
    tiled_path, conv_path = shipped_dir("kernels_spec") / "matmul_tiled.cu", folder / "conv.cu"
    conv_path.write_text(CONV)
    rng = np.random.default_rng(1)

    def tiled(o):
        w, t = o.get("Width", 512), o.get("TILE_WIDTH", 16)
        a, b = rng.random((w, w), dtype=np.float32), rng.random((w, w), dtype=np.float32)
        args = [Arg("d_M", "array", "float32", a.ravel()), Arg("d_N", "array", "float32", b.ravel()),
                Arg("d_P", "array", "float32", np.zeros(w * w, np.float32)), Arg("Width", "scalar", "int32", w)]
        return FakeLaunch({"Width": w, "TILE_WIDTH": t}, {"TILE_WIDTH": t}, (w // t, w // t, 1), (t, t, 1), args,
                          {}, lambda after: (a.astype(np.float64) @ b).ravel(), 2)

    def conv(o):
        n, mw = o.get("Width", 1 << 20), o.get("Mask_Width", 5)
        x, m = rng.random(n, dtype=np.float32), rng.random(10, dtype=np.float32)
        args = [Arg("N", "array", "float32", x), Arg("P", "array", "float32", np.zeros(n, np.float32)),
                Arg("Mask_Width", "scalar", "int32", mw), Arg("Width", "scalar", "int32", n)]

        def check_ref(after):
            full = np.convolve(np.pad(x.astype(np.float64), mw // 2), m[:mw][::-1], mode="valid")
            return full

        return FakeLaunch({"Width": n, "Mask_Width": mw}, {}, ((n + 255) // 256, 1, 1), (256, 1, 1), args,
                          {"M": m}, check_ref, 1)

    return [(FakeSpec("tiled_fake", tiled_path, "MatrixMulKernel", tiled), {"Width": 1024, "TILE_WIDTH": 32}),
            (FakeSpec("tiled_fake", tiled_path, "MatrixMulKernel", tiled), {"Width": 1024, "TILE_WIDTH": 16}),
            (FakeSpec("conv_fake", conv_path, "convolution_1D_basic_kernel", conv), {})]


def main(argv):
    from perfmodel.gpu.runner import run_spec

    folder = Path(tempfile.mkdtemp())
    if argv and argv[0] == "--launch-only":
        for spec, overrides in specs(folder):
            run_spec(spec, overrides, time_it=False, check=False, launches=1)
        return 0
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    from perfmodel.gpu import ncu as ncu_mod
    from perfmodel.gpu.env import clocks, device_properties, require_cupy, versions

    cp = require_cupy()
    result = {"device": device_properties(cp, 0), "versions": versions(cp), "clocks": clocks(0), "runs": []}
    for spec, overrides in specs(folder):
        run = run_spec(spec, overrides)
        result["runs"].append(run.to_json())
        print(spec.name, overrides, "correct", run.correct, "regs", run.function.get("num_regs"),
              "smem", run.function.get("shared_size_bytes"), "blocks/SM", run.occupancy_api,
              "cold %.3g warm %.3g batched %.3g" % (run.time_cold.median_s, run.time_warm.median_s,
                                                    run.time_warm_batched_s))
    ncu = ncu_mod.ncu_path()
    result["ncu_path"] = ncu
    known = ncu_mod.available_metrics(ncu) if ncu else None
    result["unknown_metrics"] = [m for m in ncu_mod.METRICS.values() if known is not None
                                 and m.split(".")[0] not in known]
    print("unknown metrics:", result["unknown_metrics"], "known count", len(known or ()))
    metrics = [m for m in ncu_mod.METRICS.values() if m not in result["unknown_metrics"]]
    cmd = [ncu, "--csv", "--page", "raw", "--print-units", "base", "--clock-control", "none",
           "--metrics", ",".join(metrics), "-k", "regex:^(MatrixMulKernel|convolution_1D_basic_kernel)$",
           "--log-file", str(out / "probe_ncu.csv"), sys.executable, __file__, "--launch-only"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print("ncu rc", proc.returncode, (proc.stdout + proc.stderr)[-2000:])
    if (out / "probe_ncu.csv").exists():
        parsed = ncu_mod.parse_csv((out / "probe_ncu.csv").read_text())
        result["ncu"] = [dict(p, named=ncu_mod.named(p["metrics"])) for p in parsed]
        for p in parsed:
            print(p["kernel_name"], p["grid_size"], json.dumps(ncu_mod.named(p["metrics"]))[:1500])
    (out / "probe.json").write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
