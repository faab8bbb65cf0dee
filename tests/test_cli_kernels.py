"""`perfmodel kernels list` and `perfmodel kernels show`."""
from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from perfmodel.cli.main import app

runner = CliRunner()

ALL_KERNELS = {"matmul_rowwise", "matmul_colwise", "matmul_elementwise", "matmul_naive", "matmul_tiled", "vec_add",
               "picture_scale", "conv1d_basic", "conv1d_constant", "conv1d_tiled", "conv1d_tiled_alt",
               "conv1d_tiled_cache", "conv2d_tiled", "spmv_csr"}


def invoke(*args: str):
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_list_table():
    result = invoke("kernels", "list")
    assert result.exit_code == 0
    for name in ALL_KERNELS:
        assert name in result.output
    assert "TILE_WIDTH=16" in result.output and "Width=64" in result.output


def test_list_json():
    result = invoke("kernels", "list", "--json")
    assert result.exit_code == 0
    document = json.loads(result.output)
    by_name = {entry["name"]: entry for entry in document}
    assert ALL_KERNELS <= set(by_name)
    assert by_name["matmul_tiled"]["params"] == {"Width": 64, "TILE_WIDTH": 16}
    assert by_name["picture_scale"]["params"] == {"n": 76, "m": 62, "BLOCK_WIDTH": 16}
    for entry in document:
        assert entry["description"] and "\n" not in entry["description"]


def test_show_terminal():
    result = invoke("kernels", "show", "matmul_tiled", "-D", "Width=32")
    assert result.exit_code == 0, result.output
    # Column titles are two lines ("global" over "sectors"); each count stands on its source line.
    assert "sectors" in result.output and "wavefronts" in result.output and "flops" in result.output
    inner_product = next(line for line in result.output.splitlines() if "Pvalue += Mds[ty][k]" in line)
    # Width=32, TILE_WIDTH=16: 2 x 32^3 = 65,536 flops, all on the inner-product line.
    assert "65,536" in inner_product
    assert "Mds[ty][tx] = d_M[Row*Width + m*TILE_WIDTH + tx];" in result.output
    assert "outputs correct" in result.output


def test_show_json_per_line_counts():
    result = invoke("kernels", "show", "matmul_tiled", "-D", "Width=32", "-D", "TILE_WIDTH=8", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["kernel"] == "matmul_tiled" and document["correct"] is True
    assert document["launch"]["defines"] == {"TILE_WIDTH": 8}
    assert document["launch"]["grid"] == [4, 4, 1]
    lines = {row["line"]: row for row in document["lines"]}
    inner = next(row for row in document["lines"] if "Pvalue += Mds[ty][k] * Nds[k][tx];" in row["source"])
    assert inner["flops"] == 2 * 32 ** 3 and inner["shared_wavefronts"] > 0 and inner["global_sectors"] == 0
    load = next(row for row in document["lines"] if "= d_M[" in row["source"])
    assert load["global_sectors"] > 0 and load["flops"] == 0
    assert sum(row["flops"] for row in lines.values()) == document["counts"]["flops"]
    assert document["counts"]["global"]["loads"] == 2 * 32 * 32 * (32 // 8)


def test_show_picture_scale_idle_blocks():
    result = invoke("kernels", "show", "picture_scale", "--json")
    document = json.loads(result.output)
    blocks = document["blocks"]
    assert blocks["busy"] == 12 and blocks["partially_idle"] == 8 and blocks["fully_idle"] == 0
    assert sum(b["idle_threads"] for b in blocks["not_busy"]) == 80 * 64 - 76 * 62
    text = invoke("kernels", "show", "picture_scale").output
    assert "8 partially idle" in text


def test_show_errors_exit_2():
    for args in (["kernels", "show", "nosuch"],
                 ["kernels", "show", "matmul_tiled", "-D", "Width=60"],          # constraint: multiple of 16
                 ["kernels", "show", "matmul_tiled", "-D", "Widht=64"]):         # unknown param
        process = subprocess.run([sys.executable, "-m", "perfmodel.cli.main", *args], capture_output=True, text=True)
        assert process.returncode == 2, (args, process.stderr)
        assert "error:" in process.stderr and "Traceback" not in process.stderr


def test_show_sampled():
    result = invoke("kernels", "show", "vec_add", "-D", "N=100000", "--sample", "6", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["sampled"] is True and document["correct"] is None
    assert document["launch"]["total_blocks"] == 391
    assert 0 < document["blocks_simulated"] < 391
    # counts are those of the simulated blocks: each full block loads 2 x 256 floats
    assert document["counts"]["global"]["loads"] <= 2 * 256 * document["blocks_simulated"]
    text = invoke("kernels", "show", "vec_add", "-D", "N=100000", "--sample", "6").output
    assert "sampled run" in text


def test_show_has_the_headers_lines_and_the_kernels_totals(tmp_path):
    """A kernel whose load and multiply sit in a header's __device__ function (CUB's BlockScan, a project's
    helper): the view showed the .cu file's lines only, and its total row summed those - 128 sectors and no flop,
    where the kernel has 256 sectors (128 loaded, 128 stored: 1,024 floats = 32 requests of 4 sectors each way) and
    1,024 flops. The header's line is a row of its own, named file:line, and the totals are the kernel's."""
    (tmp_path / "helper.cuh").write_text("__device__ __forceinline__ float load_twice(const float* x, int i) "
                                         "{ return 2.0f * x[i]; }\n")
    (tmp_path / "k.cu").write_text('#include "helper.cuh"\n__global__ void k(const float* x, float* y, int n) {\n'
                                   "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                   "  if (i < n) y[i] = load_twice(x, i);\n}\n")
    (tmp_path / "k.yaml").write_text("name: k\nsource: k.cu\nentry: k\nparams: {n: 1024}\ngrid: [4]\nblock: [256]\n"
                                     "args:\n- {name: x, dtype: float32, length: n, init: {random: {seed: 1}}}\n"
                                     "- {name: y, dtype: float32, length: n, init: zeros}\n"
                                     "- {name: n, dtype: int32, value: n}\n")
    result = invoke("kernels", "show", str(tmp_path / "k.yaml"))
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if "helper.cuh:1" in line)
    assert "128" in header and "1,024" in header and "load_twice" in header
    total = next(line for line in result.output.splitlines() if line.rstrip().endswith("total"))
    assert "256" in total and "1,024" in total
    document = json.loads(invoke("kernels", "show", str(tmp_path / "k.yaml"), "--json").output)
    rows = document["lines"]
    assert sum(r["global_sectors"] for r in rows) == 256 and sum(r["flops"] for r in rows) == document["counts"]["flops"]
    assert [r["line"] for r in rows if r.get("file", "").endswith("helper.cuh")] == [1]
