"""--l2 cold|warm: the DRAM traffic of a launch with nothing resident in L2 and after an identical launch, worked
out by hand for vec_add (C = A + B: 12 bytes per element, every byte touched once)."""
import pytest

from perfmodel.analysis import analyze


def test_vec_add_cold_and_warm():
    n = 1 << 20                                     # 12 MiB footprint, the H100's L2 is 50 MiB: all resident
    cold = analyze("vec_add", "h100", {"N": n}).model.traffic
    warm = analyze("vec_add", "h100", {"N": n}, l2="warm").model.traffic
    assert (cold.dram_read_bytes, cold.dram_write_bytes) == (8 * n, 4 * n)
    assert (warm.dram_read_bytes, warm.dram_write_bytes) == (0, 0)


def test_vec_add_warm_larger_than_l2():
    # 96 MiB swept in the same order by the previous launch: with LRU replacement its last 50 MiB are in L2, and
    # each of them is evicted by this launch's first 50 MiB before it is reached - nothing is reused, as cold
    # (measured: footprints 1.07-15x the L2 run warm at 0.93-1.09x their cold time, docs/model.md "L2 state")
    n = 1 << 23
    warm = analyze("vec_add", "h100", {"N": n}, l2="warm").model.traffic
    assert (warm.dram_read_bytes, warm.dram_write_bytes) == (8 * n, 4 * n)


def test_a_launch_bound_warm_kernel_says_why_its_floor_is_higher_than_cold():
    """The warm floor (8.70 us on the H100, the median of five sessions' empty launches timed the warm way) is above
    the cold one (3.3 us): a tiny kernel is predicted slower warm, and the advice says which timing gives which."""
    warm = analyze("vec_add", "h100", {"N": 10000}, l2="warm")
    cold = analyze("vec_add", "h100", {"N": 10000})
    assert warm.model.bound == cold.model.bound == "launch"
    tip = next(t for t in warm.advice if "launch overhead" in t)
    assert "8.7 us" in tip and "3.3 us" in tip and "L2 flush" in tip
    assert not any("L2 flush" in t for t in cold.advice)


def test_bad_l2_state_is_a_one_line_error(monkeypatch, capsys):
    from conftest import run_cli

    code, out, err = run_cli(monkeypatch, capsys, "analyze", "vec_add", "--device", "h100", "--l2", "tepid")
    assert code == 2
    assert "--l2 'tepid'" in out + err and "Traceback" not in out + err


# ---------------------------------------------------------------------------------------------------------
# --l2 on sweep, compare and check, and the result cache

N = 1 << 20    # vec_add: 12 MiB of footprint (8 MiB read, 4 MiB written), inside the H100's 50 MiB L2


WARM_FLOOR, COLD_FLOOR = 8.704e-6, 3.3e-6     # launch floors, docs/model.md 2.11 (validation/raw measurements)


def _dram(doc):
    traffic = doc["model"]["traffic"]
    return traffic["dram_read_bytes"], traffic["dram_write_bytes"]


def test_sweep_warm_kernel_is_not_slower_than_cold(cli):
    """sweep/compare --l2: by hand, a cold vec_add reads 8 B and writes 4 B per element from DRAM; warm, the
    previous launch left all 12 MiB in L2, so no DRAM traffic, and the kernel's own time cannot be longer. (The
    whole predicted time can be: the warm launch floor, measured on the H100, is 8.70 us against 3.3 us cold -
    docs/model.md 2.11.)"""
    import json

    docs = {}
    for command, devices in (("sweep", ("--device", "h100", "--vary", f"N={N}")),
                             ("compare", ("--devices", "h100", "-D", f"N={N}"))):
        for state in ("cold", "warm"):
            code, out, _err = cli(command, "vec_add", *devices, "--l2", state, "--no-cache", "--json")
            assert code == 0
            doc = json.loads(out)
            assert doc["l2"] == state
            docs[command, state] = doc["points"][0]
    for command in ("sweep", "compare"):
        cold, warm = docs[command, "cold"], docs[command, "warm"]
        assert cold["valid"] and warm["valid"]
        # less the launch floors (measured: 8.70 us warm, 3.3 us cold), the kernel's own time
        assert warm["predicted_time_s"] - WARM_FLOOR < cold["predicted_time_s"] - COLD_FLOOR
    # the default is cold
    code, out, _err = cli("compare", "vec_add", "--devices", "h100", "-D", f"N={N}", "--json")
    assert code == 0 and json.loads(out)["l2"] == "cold"
    assert json.loads(out)["points"][0]["predicted_time_s"] == docs["compare", "cold"]["predicted_time_s"]


def test_run_points_traffic_per_state():
    from perfmodel.sweep import run_points

    cold = run_points("vec_add", ["h100"], {"N": [N]})
    warm = run_points("vec_add", ["h100"], {"N": [N]}, l2="warm")
    assert (cold.l2, warm.l2) == ("cold", "warm")
    assert _dram(cold.points[0].doc) == (8 * N, 4 * N)
    assert _dram(warm.points[0].doc) == (0, 0)


def test_cache_never_serves_warm_for_cold(tmp_path):
    from perfmodel.analysis import _spec
    from perfmodel.cache import ResultCache, point_key
    from perfmodel.devices import load_device
    from perfmodel.sweep import run_points

    spec, dev = _spec("vec_add"), load_device("h100")
    keys = {state: point_key(spec, dev, {"N": N}, None, None, None, state) for state in ("cold", "warm")}
    assert keys["cold"] != keys["warm"]
    assert point_key(spec, dev, {"N": N}, None, None, None) == keys["cold"]    # the default state is cold
    with pytest.raises(ValueError, match="'tepid'"):
        point_key(spec, dev, {"N": N}, None, None, None, "tepid")

    cache = ResultCache(tmp_path)
    try:
        warm = run_points("vec_add", ["h100"], {"N": [N]}, cache=cache, l2="warm")
        cold = run_points("vec_add", ["h100"], {"N": [N]}, cache=cache)        # not served the warm entry
        assert (warm.cache_hits, cold.cache_hits) == (0, 0)
        assert _dram(cold.points[0].doc) == (8 * N, 4 * N)
        again = {state: run_points("vec_add", ["h100"], {"N": [N]}, cache=cache, l2=state)
                 for state in ("cold", "warm")}
        assert all(result.cache_hits == 1 for result in again.values())
        assert _dram(again["warm"].points[0].doc) == (0, 0)
        assert _dram(again["cold"].points[0].doc) == (8 * N, 4 * N)
    finally:
        cache.close()


@pytest.mark.parametrize("command", [
    ("sweep", "vec_add", "--device", "h100", "--vary", "N=1024"),
    ("compare", "vec_add", "--devices", "h100"),
])
def test_bad_l2_on_sweep_and_compare_is_an_input_error(cli, command):
    import json

    code, out, err = cli(*command, "--l2", "tepid")
    assert code == 2
    assert "--l2 'tepid': expected 'cold'" in err and "'warm'" in err and "Traceback" not in out + err
    assert "\n" not in err.strip()   # one paragraph
    code, out, _err = cli(*command, "--l2", "tepid", "--json")
    assert code == 2
    error = json.loads(out)["error"]
    assert "--l2 'tepid'" in error["message"] and error["kind"] == "input"


def _budget(tmp_path, entries):
    import yaml

    path = tmp_path / "budget.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "entries": entries}, sort_keys=False))
    return path


VA = {"kernel": "vec_add", "device": "h100", "params": {"N": N}}


def test_check_entry_l2_and_cli_override(cli, tmp_path):
    """A budget entry's ``l2:`` is the state it is analysed in (default cold); ``check --l2`` overrides every
    entry; the baseline records a warm entry's state and a change of state is noted."""
    import json

    budget = _budget(tmp_path, [{**VA, "name": "warm", "l2": "warm"}, {**VA, "name": "cold"}])
    code, out, _err = cli("check", budget, "--update-baseline", "--no-cache", "--json")
    assert code == 0
    cases = {case["entry"]: case for case in json.loads(out)["cases"]}
    assert (cases["warm"]["l2"], cases["cold"]["l2"]) == ("warm", "cold")
    warm_t, cold_t = (cases[n]["metrics"]["predicted_time_s"] for n in ("warm", "cold"))
    assert warm_t - WARM_FLOOR < cold_t - COLD_FLOOR         # the launch floors as in the sweep test above
    recorded = json.loads((tmp_path / "budget.baseline.json").read_text())["entries"]
    assert recorded["warm"]["l2"] == "warm" and "l2" not in recorded["cold"]

    # --l2 warm for every entry: the cold entry now pays the warm launch floor (3.4 us more, more than the
    # 1.9 us its DRAM traffic cost) -> slower than its baseline, a regression, and a note
    assert warm_t > cold_t
    code, out, _err = cli("check", budget, "--l2", "warm", "--no-cache", "--json")
    assert code == 1
    cases = {case["entry"]: case for case in json.loads(out)["cases"]}
    assert cases["cold"]["l2"] == "warm" and not cases["cold"]["passed"] and cases["warm"]["passed"]
    assert cases["cold"]["metrics"]["predicted_time_s"] == pytest.approx(warm_t)
    assert any("L2 state differs from the baseline's: cold -> warm" in n for n in cases["cold"]["notes"])


def test_check_bad_l2(cli, tmp_path):
    import json

    bad = _budget(tmp_path, [{**VA, "l2": "tepid"}])
    code, out, err = cli("check", bad)
    assert code == 2 and "Traceback" not in out + err
    assert "budget.yaml:7: field 'entries[0].l2'" in err and "'cold' or 'warm'" in err
    code, out, _err = cli("check", bad, "--json")
    error = json.loads(out)["error"]
    assert code == 2 and error["line"] == 7 and "entries[0].l2" in error["message"]

    good = _budget(tmp_path, [VA])
    code, out, err = cli("check", good, "--l2", "tepid", "--json")
    assert code == 2 and "--l2 'tepid'" in json.loads(out)["error"]["message"]


def test_an_idle_centre_block_does_not_stand_for_the_grids_l1_reuse(tmp_path):
    """A grid-stride kernel launched with 64 blocks for 8 blocks' work (pytorch3d's rasterizer launches 1,024): the
    centre block, whose loads stood for every block's L1 reuse, loads nothing, and the L1 hit rate read 0% - 3x the
    time of the 8-block launch of the same work. By hand: each thread reads the 256-float table in order, one sector
    a warp request (a broadcast), so a block of 4 warps makes 4 x 256 = 1,024 requests over 32 distinct sectors:
    hits 1 - 32 / 1,024 = 0.96875, whichever of the two grids."""
    from perfmodel.adhoc import command_line_spec
    from perfmodel.analysis import analyze as run

    (tmp_path / "t.cu").write_text(
        "__global__ void sum_table(const float* table, int m, float* out, int n) {\n"
        "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {\n"
        "    float s = 0.f;\n    for (int j = 0; j < m; ++j) s += table[j] * (float)i;\n    out[i] = s;\n  }\n}\n")
    times, hits = [], []
    for grid in ("8", "64"):
        spec = command_line_spec(tmp_path / "t.cu", "sum_table", grid, "128", defines={"n": 1024, "m": 256},
                                 args=["table=float32[m]:random", "m=m", "out=float32[n]", "n=n"])
        a = run(spec, "h100")
        times.append(a.model.predicted_time_s)
        hits.append(a.model.traffic.l1_hit_rate)
    assert hits == [pytest.approx(0.96875)] * 2
    assert times[1] == pytest.approx(times[0], rel=0.1)


def test_the_advice_on_a_grid_of_mostly_idle_blocks_counts_the_working_ones(cli, tmp_path):
    """Launch & occupancy counts every block (64 blocks: 0.03 waves); the advice's waves are the blocks that work
    (8, here: 8 / (16 blocks/SM x 132 SMs) = 0.0038) - said so, not as if the grid itself were that small."""
    (tmp_path / "t.cu").write_text(
        "__global__ void sum_table(const float* table, int m, float* out, int n) {\n"
        "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {\n"
        "    float s = 0.f;\n    for (int j = 0; j < m; ++j) s += table[j] * (float)i;\n    out[i] = s;\n  }\n}\n")
    code, out, err = cli("analyze", str(tmp_path / "t.cu"), "--grid", "64", "--block", "128", "-D", "n=1024", "-D",
                         "m=256", "--arg", "table=float32[m]:random", "--arg", "m=m", "--arg", "out=float32[n]",
                         "--arg", "n=n", "--device", "h100")
    assert code == 0, err
    text = " ".join(out.split())
    assert "8 of the grid's 64 blocks do work (the others are idle): they fill 8 of 132 SMs (0.0038 waves)" in text
