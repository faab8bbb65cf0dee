"""`perfmodel sweep` and `perfmodel compare`: parsing, invalid points as rows, best point, CSV, JSON."""
from __future__ import annotations

import csv
import json

import pytest

from perfmodel.errors import PerfmodelError
from perfmodel.sweep import compare, parse_vary, sweep


def test_parse_vary_forms():
    assert parse_vary("TILE_WIDTH=4,8,16,32") == ("TILE_WIDTH", [4, 8, 16, 32])
    assert parse_vary("Width=256:4096:x2") == ("Width", [256, 512, 1024, 2048, 4096])
    assert parse_vary("Width=64:256:+64") == ("Width", [64, 128, 192, 256])
    assert parse_vary("N=1:3") == ("N", [1, 2, 3])
    for bad in ("TILE_WIDTH", "=4", "X=", "X=a,b", "X=4:1:x1"):
        with pytest.raises(PerfmodelError):
            parse_vary(bad)


def test_tile_sweep_on_g80_marks_32_invalid_and_a_best_point():
    result = sweep("matmul_tiled", "g80", ["TILE_WIDTH=4,8,16,32"], params={"Width": 64})
    rows = result.to_json()["points"]
    assert [r["TILE_WIDTH"] for r in rows] == [4, 8, 16, 32]
    invalid = rows[3]
    assert invalid["valid"] is False and "1,024 threads" in invalid["reason"]
    assert all(r["valid"] for r in rows[:3])
    assert sum(r["best"] for r in rows) == 1
    by_tile = {r["TILE_WIDTH"]: r for r in rows[:3]}
    assert by_tile[16]["cgma"] == pytest.approx(16) and by_tile[8]["cgma"] == pytest.approx(8)
    assert by_tile[16]["threads_per_block"] == 256
    assert by_tile[16]["blocks_per_sm"] == 3
    best = result.best.row()
    assert best["predicted_gflops"] == max(r["predicted_gflops"] for r in rows[:3])
    assert result.to_json()["best"] == [best]


def test_cartesian_product_of_two_varies():
    result = sweep("matmul_tiled", "h100", ["TILE_WIDTH=8,16", "Width=32:64:x2"], regs=32)
    combos = [(p.params["TILE_WIDTH"], p.params["Width"]) for p in result.points]
    assert combos == [(8, 32), (8, 64), (16, 32), (16, 64)]


def test_unknown_vary_param_is_an_error():
    with pytest.raises(PerfmodelError, match="no param"):
        sweep("matmul_tiled", "g80", ["NOPE=1,2"])


def test_compare_across_devices_with_an_invalid_device():
    result = compare("matmul_tiled", ["g80", "fermi", "h100", "no_such_gpu"], params={"Width": 64, "TILE_WIDTH": 32})
    rows = {r["device"]: r for r in result.to_json()["points"]}
    assert rows["g80"]["valid"] is False and "1,024 threads" in rows["g80"]["reason"]
    assert rows["no_such_gpu"]["valid"] is False
    assert rows["fermi"]["valid"] and rows["h100"]["valid"]
    assert rows["h100"]["predicted_gflops"] > rows["fermi"]["predicted_gflops"]
    assert sum(r["best"] for r in rows.values()) == 1


def test_sweep_cli_table_chart_csv_and_json(cli, tmp_path):
    path = tmp_path / "sweep.csv"
    code, out, err = cli("sweep", "matmul_tiled", "--device", "g80", "--vary",
                         "TILE_WIDTH=4,8,16,32", "-D", "Width=64", "--csv", path)
    assert code == 0, err
    assert "best" in out and "invalid" in out and "predicted GFLOPS" in out
    rows = list(csv.DictReader(path.open()))
    assert [r["TILE_WIDTH"] for r in rows] == ["4", "8", "16", "32"]
    assert rows[3]["valid"] == "False"
    code, out, err = cli("sweep", "matmul_tiled", "--device", "g80", "--vary",
                         "TILE_WIDTH=8,16", "-D", "Width=64", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert len(doc["best"]) == 1 and doc["best"][0]["TILE_WIDTH"] in (8, 16) and len(doc["points"]) == 2


def test_compare_cli(cli):
    code, out, err = cli("compare", "matmul_tiled", "--devices",
                         "g80,fermi,kepler_gk110,v100,a100,h100", "-D", "Width=64", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert [p["device"] for p in doc["points"]] == ["g80", "fermi", "kepler_gk110", "v100", "a100", "h100"]
    assert all(p["valid"] for p in doc["points"])


def test_sweep_and_compare_of_a_cuda_file_say_to_keep_its_launch_as_a_spec(cli, tmp_path):
    """Their help named a CUDA file launched with --kernel, --grid, ... - options they do not have; a .cu file was
    read as YAML ("expected a YAML mapping"). They take a spec, and say how to make one from the file."""
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n")
    for command in (("compare", str(src), "--devices", "h100,a100"), ("sweep", str(src), "--vary", "N=1,2",
                                                                     "--devices", "h100")):
        code, out, err = cli(*command)
        assert code == 2 and f"{command[0]} takes a spec" in err and "--save-spec k.yaml" in err, err
    code, out, err = cli("compare", "--help")
    assert "--save-spec" in " ".join(out.split())
