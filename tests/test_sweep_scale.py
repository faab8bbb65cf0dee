"""What-if at scale: several devices in one sweep, best per device and problem size, tables that fit the
terminal, the on-disk cache (never changes a number), --jobs and a Dask LocalCluster giving the local results."""
from __future__ import annotations

import csv
import io
import json
import shutil

import pytest
from rich.console import Console

from perfmodel.cache import ResultCache
from perfmodel.sweep import run_points, sweep

VARY = ["TILE_WIDTH=4,8,16,32", "Width=32:64:x2"]


def _numbers(result) -> list[dict]:
    return [{k: v for k, v in p.row().items()} for p in result.points]


@pytest.fixture(scope="module")
def multi():
    return sweep("matmul_tiled", ["g80", "h100"], VARY, cache=None)


def test_multi_device_sweep_rows_and_validity(multi):
    rows = multi.to_json()["points"]
    assert len(rows) == 2 * 4 * 2
    assert [r["device"] for r in rows] == ["g80"] * 8 + ["h100"] * 8
    for r in rows:
        # 8800 GTX (CC 1.0) allows 512 threads per block, H100 1,024 (CUDA programming guide, table of limits)
        expect_valid = not (r["device"] == "g80" and r["TILE_WIDTH"] == 32)
        assert r["valid"] is expect_valid, r
        if expect_valid:
            assert r["threads_per_block"] == r["TILE_WIDTH"] ** 2
            # the tiled matmul does TILE_WIDTH multiply-adds per pair of global loads (the slides' CGMA)
            assert r["cgma"] == pytest.approx(r["TILE_WIDTH"])


def test_best_is_per_device_and_problem_size(multi):
    rows = multi.to_json()["points"]
    best = [r for r in rows if r["best"]]
    assert sorted((r["device"], r["Width"]) for r in best) == [("g80", 32), ("g80", 64), ("h100", 32), ("h100", 64)]
    for r in best:
        group = [x for x in rows if x["valid"] and x["device"] == r["device"] and x["Width"] == r["Width"]]
        assert r["predicted_gflops"] == max(x["predicted_gflops"] for x in group)
    assert multi.to_json()["best_per"] == ["device", "Width"]


def test_compare_with_vary_marks_the_same_bests_as_sweep(multi):
    from perfmodel.sweep import compare

    other = compare("matmul_tiled", ["g80", "h100"], vary=VARY)
    assert _numbers(other) == _numbers(multi)


def test_compare_without_vary_lets_devices_compete():
    from perfmodel.sweep import compare

    result = compare("matmul_tiled", ["g80", "h100"], params={"Width": 32})
    assert [p.best for p in result.points] == [False, True]


def test_cached_rerun_equals_uncached_run(tmp_path, multi):
    cache = ResultCache(tmp_path / "c")
    first = run_points("matmul_tiled", ["g80", "h100"], VARY, cache=cache)
    assert first.cache_hits == 0
    again = run_points("matmul_tiled", ["g80", "h100"], VARY, cache=cache)
    assert again.cache_hits == 16   # the 2 points g80 cannot launch (1,024 threads) included
    assert all(p.cached for p in again.points)
    assert json.dumps(_numbers(again)) == json.dumps(_numbers(first)) == json.dumps(_numbers(multi))
    cache.close()


def test_cache_key_follows_the_source_and_the_package(tmp_path, monkeypatch):
    from perfmodel import cache as cache_mod
    from perfmodel.paths import shipped_dir

    folder = tmp_path / "k"
    folder.mkdir()
    for name in ("matmul_tiled.yaml", "matmul_tiled.cu"):
        shutil.copy(shipped_dir("kernels_spec") / name, folder / name)
    spec = folder / "matmul_tiled.yaml"
    cache = ResultCache(tmp_path / "c")
    args = dict(params={"Width": 32}, cache=cache)
    run_points(str(spec), ["h100"], ["TILE_WIDTH=8"], **args)
    assert run_points(str(spec), ["h100"], ["TILE_WIDTH=8"], **args).cache_hits == 1
    # a comment added to the CUDA source: a different key, computed anew
    (folder / "matmul_tiled.cu").write_text((folder / "matmul_tiled.cu").read_text() + "\n// changed\n")
    assert run_points(str(spec), ["h100"], ["TILE_WIDTH=8"], **args).cache_hits == 0
    assert run_points(str(spec), ["h100"], ["TILE_WIDTH=8"], **args).cache_hits == 1
    # a change to perfmodel's own source (the engine): never served from the old entries
    monkeypatch.setattr(cache_mod, "package_fingerprint", lambda: "0.1.0+another-engine")
    assert run_points(str(spec), ["h100"], ["TILE_WIDTH=8"], **args).cache_hits == 0
    cache.close()


def test_package_fingerprint_covers_the_engine_source():
    from pathlib import Path

    import perfmodel
    from perfmodel.cache import package_fingerprint

    assert package_fingerprint().startswith(perfmodel.__version__ + "+")
    assert (Path(perfmodel.__file__).parent / "sim").is_dir()   # rglob("*.py") reaches perfmodel/sim/


def test_no_cache_env_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFMODEL_NO_CACHE", "1")
    cache = ResultCache(tmp_path / "c")
    assert not cache.enabled
    run_points("matmul_tiled", ["h100"], ["TILE_WIDTH=8"], params={"Width": 32}, cache=cache)
    assert run_points("matmul_tiled", ["h100"], ["TILE_WIDTH=8"], params={"Width": 32},
                      cache=cache).cache_hits == 0


def test_jobs_give_the_serial_results(multi):
    parallel = sweep("matmul_tiled", ["g80", "h100"], VARY, jobs=2)
    assert json.dumps(_numbers(parallel)) == json.dumps(_numbers(multi))


def test_dask_local_cluster_gives_the_local_results():
    distributed = pytest.importorskip("distributed", reason="Dask's distributed is not installed "
                                                            "(pip install 'perfmodel[distributed]')")
    vary = ["TILE_WIDTH=8,16", "Width=32"]
    local = sweep("matmul_tiled", ["g80", "h100"], vary)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) \
            as cluster:
        remote = sweep("matmul_tiled", ["g80", "h100"], vary, scheduler=cluster.scheduler_address)
    assert json.dumps(_numbers(remote)) == json.dumps(_numbers(local))


def test_table_fits_the_terminal_and_csv_keeps_every_column(multi):
    from perfmodel.report.sweep_view import render_sweep, sweep_csv

    doc = multi.to_json()
    for width in (80, 100, 200):
        out = io.StringIO()
        render_sweep(doc, Console(file=out, width=width, force_terminal=False), width=width)
        lines = out.getvalue().splitlines()
        assert max(len(line.rstrip()) for line in lines) <= width, width
        assert "predicted GFLOPS" in out.getvalue()
        if width == 80:
            assert "columns left out to fit 80 characters" in out.getvalue()
    rows = list(csv.DictReader(io.StringIO(sweep_csv(doc))))
    assert len(rows) == 16
    assert {"device", "TILE_WIDTH", "Width", "threads_per_block", "shared_memory_per_block", "warps_per_sm",
            "limiter", "predicted_gflops", "best"} <= set(rows[0])


def test_cli_multi_device_sweep_and_errors(cli, tmp_path):
    code, out, err = cli("sweep", "matmul_tiled", "--devices", "g80,h100", "--vary", "TILE_WIDTH=8,16", "-D",
                         "Width=32", "--json", "--no-cache")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["devices"] == ["g80", "h100"] and len(doc["points"]) == 4
    assert [r["device"] for r in doc["best"]] == ["g80", "h100"]
    # unknown device, bad ranges: exit 2 with a JSON error document, before anything runs
    for args, what in ((["--devices", "g80,no_such_gpu", "--vary", "TILE_WIDTH=8"], "no_such_gpu"),
                       (["--device", "g80", "--vary", "Width=4096:256:x2"], "empty"),
                       (["--device", "g80", "--vary", "Width=256:4096:x1"], "factor"),
                       (["--device", "g80", "--vary", "Width=0:4096:5log"], "log")):
        code, out, err = cli("sweep", "matmul_tiled", *args, "--json")
        assert code == 2, (args, out, err)
        assert what in json.loads(out)["error"]["message"]
    code, out, err = cli("compare", "matmul_tiled", "--devices", "g80,h100", "--vary", "TILE_WIDTH=8,16",
                         "-D", "Width=32", "--json")
    assert code == 0, err
    assert len(json.loads(out)["points"]) == 4


def test_cli_plot_export_png_svg_html(cli, tmp_path):
    import xml.etree.ElementTree as ET

    for suffix in ("png", "svg", "html"):
        path = tmp_path / f"sweep.{suffix}"
        code, out, err = cli("sweep", "matmul_tiled", "--devices", "g80,h100", "--vary", "TILE_WIDTH=8,16",
                             "-D", "Width=32", "--plot", path)
        assert code == 0, err
        data = path.read_bytes()
        if suffix == "png":
            assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
        elif suffix == "svg":
            root = ET.fromstring(data)
            assert root.tag.endswith("svg")
            assert b"g80" in data or b"TILE" in data or len(root) > 0
        else:
            text = data.decode()
            assert text.startswith("<!DOCTYPE html>") and "<svg" in text and "http://" not in text.split("<svg")[0]
    code, out, err = cli("sweep", "matmul_tiled", "--device", "g80", "--vary", "TILE_WIDTH=8",
                         "--plot", tmp_path / "x.jpg", "--json")
    assert code == 2 and ".png, .svg or .html" in json.loads(out)["error"]["message"]


def test_unreachable_scheduler_is_an_input_error(cli, monkeypatch):
    pytest.importorskip("distributed", reason="Dask's distributed is not installed")
    monkeypatch.setenv("PERFMODEL_DASK_TIMEOUT", "1s")
    code, out, err = cli("sweep", "matmul_tiled", "--device", "h100", "--vary", "TILE_WIDTH=8", "-D", "Width=32",
                         "--no-cache", "--scheduler", "tcp://127.0.0.1:9", "--json")
    assert code == 2, (out, err)
    assert "cannot connect to a Dask scheduler" in json.loads(out)["error"]["message"]


def test_check_and_sweep_share_cache_entries(tmp_path):
    """A point analysed by `check` is served to `sweep`/`compare` and the other way round (one entry format)."""
    from perfmodel.cache import cached_analyze

    cache = ResultCache(tmp_path / "c")
    doc = cached_analyze(cache)("vec_add", "g80", params={"N": 512})
    result = run_points("vec_add", ["g80"], None, params={"N": 512}, cache=cache)
    assert result.cache_hits == 1 and result.points[0].doc == doc
    other = run_points("vec_add", ["h100"], None, params={"N": 512}, cache=cache)
    assert other.cache_hits == 0
    assert cached_analyze(cache)("vec_add", "h100", params={"N": 512}) == other.points[0].doc
    assert cache.hits == 2
    cache.close()
