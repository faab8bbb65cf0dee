"""Device profiles: every shipped profile loads and sources every value; the G80 profile reproduces the seed
figures; malformed profiles give errors that name the file and the field; the search path."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from perfmodel.devices import (PSEUDO_SOURCES, THROUGHPUT_DEFAULTS, Device, check_device_file,
                               list_devices, load_device)
from perfmodel.errors import DeviceError
from perfmodel.paths import shipped_dir

SHIPPED = sorted(path.stem for path in shipped_dir("devices").glob("*.yaml"))
LECTURE_AND_DATACENTRE = ["g80", "fermi", "kepler_gk110", "v100", "a100", "h100", "h200"]
OWNED = ["t4", "rtx3090", "rtx_a6000", "a10", "rtx4090", "l4", "b200", "rtx5090"]  # issue 17
G80_TEXT = (shipped_dir("devices") / "g80.yaml").read_text()


def test_every_shipped_profile_loads():
    devices = {d.id: d for d in list_devices()}
    assert set(LECTURE_AND_DATACENTRE + OWNED) <= set(SHIPPED) <= set(devices)
    assert len(SHIPPED) >= 13
    for name in SHIPPED:
        device = load_device(name)
        assert device.id == name == Path(device.source_file).stem
        assert device.occupancy_rules in ("OCC7.0", "OCC13")
        assert device.max_warps_per_sm * device.warp_size == device.max_threads_per_sm


@pytest.mark.parametrize("name", SHIPPED)
def test_every_value_names_its_source(name):
    path = shipped_dir("devices") / f"{name}.yaml"
    raw = yaml.safe_load(path.read_text())
    sources = raw["sources"]
    fields = {k: v for k, v in raw.items() if k not in ("sources", "notes", "measured", "id", "format_version",
                                                        "throughput")}
    fields.update({f"throughput.{k}": v for k, v in raw.get("throughput", {}).items()})
    assert set(raw.get("throughput", {})) == set(THROUGHPUT_DEFAULTS) - {"l1_hit_latency_cycles"}
    missing = [k for k, v in fields.items() if not (isinstance(v, dict) and v.get("source"))]
    assert not missing, f"{name}: values without a source: {missing}"
    device = load_device(name)
    for key in fields:
        keys = device.source_of(key).keys()
        assert keys and all(k in sources or k in PSEUDO_SOURCES for k in keys), (key, keys)
        if set(keys) & {"estimate", "computed"}:
            assert device.source_of(key).note, f"{name}: {key} is {keys} but gives no reasoning"
    # every declared source is used (by a value or by an entry of the free-form measured: section)
    used = {k for key in fields for k in device.source_of(key).keys()}
    used |= {entry.get("source") for entry in raw.get("measured", {}).values() if isinstance(entry, dict)}
    assert set(sources) <= used, f"{name}: sources never cited: {set(sources) - used}"


def test_g80_reproduces_the_seed_figures():
    g80 = load_device("g80")
    assert g80.name == "GeForce 8800 GTX"
    assert g80.cc == (1, 0)
    assert g80.dram_bandwidth_bytes_per_s == 86.4e9
    assert g80.peak_fp32_flops == 346.5e9
    assert "345.6" in g80.source_of("peak_fp32_flops").note and "518.4" in g80.source_of("peak_fp32_flops").note
    assert g80.shared_memory_per_sm == 16 * 1024
    assert g80.registers_per_sm == 8192
    assert g80.max_threads_per_sm == 768
    assert g80.max_blocks_per_sm == 8
    assert g80.max_threads_per_block == 512
    assert g80.clock_hz == 1.35e9
    assert g80.kernel_params_in_shared_memory and g80.shared_memory_system_bytes == 16


def test_clock_and_peak_agree_within_rounding():
    for device in list_devices():
        computed = device.sm_count * device.fp32_lanes_per_sm * 2 * device.clock_hz
        assert device.peak_fp32_flops == pytest.approx(computed, rel=0.01), device.id


def test_device_is_frozen_and_hashable():
    g80 = load_device("g80")
    assert load_device("g80") is g80  # cached
    assert {g80: 1}[load_device("g80")] == 1
    with pytest.raises(Exception):
        g80.sm_count = 3


def _write(tmp_path: Path, text: str, name: str = "bad.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _replace(pattern: str, new: str) -> str:
    text, count = re.subn(pattern, new, G80_TEXT, count=1, flags=re.M)
    assert count == 1, pattern
    return text


@pytest.mark.parametrize("pattern, replacement, message", [
    (r"^registers_per_sm:.*$", "registers_per_sm: lots",
     "bad.yaml: field 'registers_per_sm': expected a positive integer, got 'lots'"),
    (r"^registers_per_sm:.*$", "registers_per_sm: {value: -5, source: PG3.2}",
     "bad.yaml: field 'registers_per_sm': expected a positive integer, got -5"),
    (r"^shared_memory_per_sm:.*$", "shared_memory_per_sm: 16 parsecs",
     "bad.yaml: field 'shared_memory_per_sm': expected a positive size such as \"16 KiB\" or 16384, got '16 parsecs'"),
    (r"^dram_bandwidth_bytes_per_s:.*$", "dram_bandwidth_bytes_per_s: 86.4 GHz",
     "bad.yaml: field 'dram_bandwidth_bytes_per_s': expected a bandwidth such as \"86.4 GB/s\", got '86.4 GHz'"),
    (r"^sm_count:.*$", "", "bad.yaml: field 'sm_count': expected a value (this field is required)"),
    (r"^sm_count:.*$", "sm_count: 16\nsm_cuont: 16", "bad.yaml: field 'sm_cuont': no such field"),
    (r"^register_allocation:.*$", "register_allocation: thread",
     "bad.yaml: field 'register_allocation': expected 'block' or 'warp', got 'thread'"),
    (r"^max_warps_per_sm:.*$", "max_warps_per_sm: 25",
     "bad.yaml: field 'max_warps_per_sm': expected max_warps_per_sm x warp_size = max_threads_per_sm"),
    (r"^sfu_per_sm:.*$", "sfu_per_sm: {value: 2, source: PG9.9}",
     "bad.yaml: field 'sfu_per_sm': expected source 'PG9.9' to be a key of 'sources:'"),
    (r"^max_block_dim:.*$", "max_block_dim: [512, 512]",
     "bad.yaml: field 'max_block_dim': expected three integers [x, y, z], got [512, 512]"),
    (r"^compute_capability:.*$", "compute_capability: sm_10",
     "bad.yaml: field 'compute_capability': expected a version such as \"9.0\", got 'sm_10'"),
    (r"^sm_count:.*$", "sm_count: [16", "bad.yaml:"),  # YAML syntax error
    (r"^sm_count:.*$", "sm_count: {value: 16, sauce: TH-G80}", "bad.yaml: field 'sm_count': expected only value"),
])
def test_malformed_profiles_name_file_and_field(tmp_path, monkeypatch, pattern, replacement, message):
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path, _replace(pattern, replacement))
    with pytest.raises(DeviceError) as info:
        load_device("bad.yaml")
    assert message in str(info.value)
    device, problems = check_device_file(path)
    assert device is None and problems


def test_all_problems_are_listed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = _replace(r"^sm_count:.*$", "sm_count: many").replace("sfu_per_sm:", "sfu_per_sm_typo:")
    _, problems = check_device_file(_write(tmp_path, text))
    assert len(problems) == 3  # sm_count invalid, sfu_per_sm missing, sfu_per_sm_typo unknown
    assert all(p.startswith("bad.yaml: field ") for p in problems)


def test_not_a_mapping(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DeviceError, match="bad.yaml: expected a mapping"):
        load_device(_write(tmp_path, "- just\n- a list\n"))


def test_minimal_user_profile_gets_throughput_defaults(tmp_path):
    raw = yaml.safe_load(G80_TEXT)
    for key in ("throughput", "sources", "notes", "measured", "max_warps_per_sm", "max_registers_per_block",
                "shared_memory_per_block_optin", "shared_memory_carveouts", "register_allocation_unit_overrides"):
        raw.pop(key, None)
    plain = {k: (v["value"] if isinstance(v, dict) and "value" in v else v) for k, v in raw.items()}
    plain["id"] = "mine"
    device = load_device(_write(tmp_path, yaml.safe_dump(plain), "mine.yaml"))
    assert device.max_warps_per_sm == 24
    assert device.shared_memory_carveouts == (16384,)
    assert device.throughput.shared_bandwidth_bytes_per_clock == 16 * 4
    assert device.throughput.lsu_requests_per_clock == 8 / 32
    assert device.throughput.warp_instructions_per_clock == 0.25
    assert device.throughput.l2_bandwidth_bytes_per_s == 86.4e9  # no L2: the DRAM bandwidth
    assert device.source_of("throughput.global_latency_cycles").source == "default"


def test_search_path_and_unknown_names(tmp_path, monkeypatch):
    _write(tmp_path, G80_TEXT.replace("id: g80", "id: mygpu"), "mygpu.yaml")
    monkeypatch.setenv("PERFMODEL_DEVICE_PATH", str(tmp_path))
    assert load_device("mygpu").id == "mygpu"
    assert "mygpu" in {d.id for d in list_devices()}
    assert load_device(str(tmp_path / "mygpu.yaml")).id == "mygpu"
    with pytest.raises(DeviceError, match=r"unknown device 'gtx9999'; available: .*g80.*mygpu"):
        load_device("gtx9999")
    with pytest.raises(DeviceError, match="no such device profile file"):
        load_device(str(tmp_path / "missing.yaml"))


def test_device_passes_through():
    g80 = load_device("g80")
    assert load_device(g80) is g80
    assert isinstance(g80, Device)


# ---- the `perfmodel devices` commands -----------------------------------------------------------------------

def test_cli_list_and_show(cli):
    import json

    code, out, _ = cli("devices", "list", "--json")
    assert code == 0
    assert [d["id"] for d in json.loads(out)["devices"]][:2] == ["g80", "fermi"]
    code, out, _ = cli("devices", "show", "g80", "--json")
    fields = json.loads(out)["fields"]
    assert fields["peak_fp32_flops"]["value"] == 346.5e9
    assert fields["peak_fp32_flops"]["source"] == "SEED, TR-G92"
    code, out, _ = cli("devices", "show", "g80")
    assert code == 0 and "346.5 GFLOPS" in out and "TR-G92" in out


def test_cli_validate(cli, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    good = shipped_dir("devices") / "h100.yaml"
    bad = _write(tmp_path, _replace(r"^registers_per_sm:.*$", "registers_per_sm: lots"))
    code, out, _ = cli("devices", "validate", str(good), "--strict")
    assert code == 0 and "ok" in out
    code, out, _ = cli("devices", "validate", str(good), "bad.yaml")
    assert code == 2
    assert "bad.yaml: field 'registers_per_sm': expected a positive integer, got 'lots'" in out
    unsourced = _write(tmp_path, _replace(r"^sm_count:.*$", "sm_count: 16"), "unsourced.yaml")
    code, out, _ = cli("devices", "validate", "--strict", str(unsourced))
    assert code == 2 and "field 'sm_count': expected a source" in out


def test_cli_unknown_device(cli):
    code, out, err = cli("devices", "show", "gtx9999")
    assert code == 2 and "unknown device 'gtx9999'; available:" in err


# ---- plausibility: implausible values are errors naming file and field, exit 2 from the CLI ------------------

H100_TEXT = (shipped_dir("devices") / "h100.yaml").read_text()


def _h100(pattern: str, new: str) -> str:
    text, count = re.subn(pattern, new, H100_TEXT, count=1, flags=re.M)
    assert count == 1, pattern
    return text


IMPLAUSIBLE = [
    # 1. a string where a number belongs
    ("string", r"^sm_count:.*$", "sm_count: {value: many, source: MEAS-H100}",
     "bad.yaml: field 'sm_count': expected a positive integer, got 'many'"),
    # 2. zero where only a positive value makes sense
    ("zero", r"^dram_bandwidth_bytes_per_s:.*$", "dram_bandwidth_bytes_per_s: {value: 0, source: MEAS-H100}",
     "bad.yaml: field 'dram_bandwidth_bytes_per_s': expected a positive value from 1e+09 to 1e+15 B/s, got 0"),
    # 3. negative
    ("negative", r"^l2_cache_bytes:.*$", "l2_cache_bytes: {value: -50 MB, source: MEAS-H100}",
     "bad.yaml: field 'l2_cache_bytes': expected a size such as \"16 KiB\", 16384 or 0, got '-50 MB'"),
    # 4. not a number (NaN) and infinity
    ("nan", r"^boost_clock_hz:.*$", "boost_clock_hz: {value: .nan, source: MEAS-H100}",
     "bad.yaml: field 'boost_clock_hz': expected a clock such as \"1.35 GHz\", got nan"),
    ("inf", r"^peak_fp32_flops:.*$", "peak_fp32_flops: {value: .inf, source: computed, note: x}",
     "bad.yaml: field 'peak_fp32_flops': expected a rate such as \"346.5 GFLOPS\", got inf"),
    # 5. absurdly huge (a unit slip)
    ("huge", r"^sm_count:.*$", "sm_count: {value: 132000, source: MEAS-H100}",
     "bad.yaml: field 'sm_count': expected a positive value from 1 to 4096 SMs, got 1.32e+05"),
    ("huge clock", r"^boost_clock_hz:.*$", "boost_clock_hz: {value: 1980 GHz, source: MEAS-H100}",
     "bad.yaml: field 'boost_clock_hz': expected a positive value from 5e+07 to 1e+10 Hz, got 1.98e+12"),
    # 6. derived figures that disagree: the peak FP32 rate 10x lanes x SMs x clock x 2
    ("peak vs lanes", r"^peak_fp32_flops:.*$", "peak_fp32_flops: {value: 669 TFLOPS, source: computed, note: x}",
     "bad.yaml: field 'peak_fp32_flops': 6.69e+14 is 10 x sm_count x fp32_lanes_per_sm x 2 x clock = 6.691e+13; "
     "expected them to agree"),
    # 7. ... and the DRAM bandwidth against the memory interface
    ("bandwidth vs bus", r"^peak_fp32_flops:.*$",
     "memory_clock_hz: {value: 2619 MHz, source: MEAS-H100}\nmemory_bus_width_bits: {value: 512, source: MEAS-H100}\n"
     "peak_fp32_flops: {value: 66.9 TFLOPS, source: computed, note: x}",
     "bad.yaml: field 'dram_bandwidth_bytes_per_s': 3.352e+12 is 10 x 2 x memory_clock_hz x memory_bus_width_bits "
     "/ 8 = 3.352e+11; expected them to agree"),
]


@pytest.mark.parametrize("kind, pattern, replacement, message", IMPLAUSIBLE, ids=[k[0] for k in IMPLAUSIBLE])
def test_implausible_profiles_are_rejected(cli, tmp_path, monkeypatch, kind, pattern, replacement, message):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, _h100(pattern, replacement))
    with pytest.raises(DeviceError) as info:
        load_device("bad.yaml")
    assert message in str(info.value)
    code, out, _ = cli("devices", "validate", "bad.yaml")
    assert code == 2 and "invalid bad.yaml" in out and message in " ".join(out.split())


def test_plausible_but_unusual_values_are_warnings(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # 7% above lanes x SMs x clock x 2, and 96 lanes where every CC 9.0 SM has 128 (with the peak to match)
    text = _h100(r"^peak_fp32_flops:.*$", "peak_fp32_flops: {value: 71.6 TFLOPS, source: computed, note: x}")
    _write(tmp_path, text, "warm.yaml")
    code, out, _ = cli("devices", "validate", "warm.yaml")
    assert code == 0 and "ok warm.yaml" in out
    assert "warning" in out and "peak_fp32_flops" in out and "7% apart" in out
    text = _h100(r"^fp32_lanes_per_sm:.*$", "fp32_lanes_per_sm: {value: 96, source: PG12.6}")
    text = re.sub(r"^peak_fp32_flops:.*$", "peak_fp32_flops: {value: 50.2 TFLOPS, source: computed, note: x}", text,
                  flags=re.M)
    _write(tmp_path, text, "cut.yaml")
    code, out, _ = cli("devices", "validate", "cut.yaml")
    assert code == 0
    assert "field 'fp32_lanes_per_sm': 96 differs from the compute capability 9.0 norm 128" in " ".join(out.split())


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_profiles_are_plausible_and_follow_their_generation(name):
    from perfmodel.devices import plausibility_warnings

    assert plausibility_warnings(load_device(name)) == []


def test_generation_rules_match_the_new_profiles():
    """The CC 7.5 / 8.6 / 8.9 rules the issue names, as the shipped profiles carry them."""
    expect = {"t4": (1024, 16, 64, 64 * 1024, 64 * 1024), "rtx3090": (1536, 16, 128, 100 * 1024, 99 * 1024),
              "rtx_a6000": (1536, 16, 128, 100 * 1024, 99 * 1024), "a10": (1536, 16, 128, 100 * 1024, 99 * 1024),
              "rtx4090": (1536, 24, 128, 100 * 1024, 99 * 1024), "l4": (1536, 24, 128, 100 * 1024, 99 * 1024),
              "b200": (2048, 32, 128, 228 * 1024, 227 * 1024), "rtx5090": (1536, 24, 128, 100 * 1024, 99 * 1024)}
    for name, (threads, blocks, lanes, smem, optin) in expect.items():
        d = load_device(name)
        assert (d.max_threads_per_sm, d.max_blocks_per_sm, d.fp32_lanes_per_sm, d.shared_memory_per_sm,
                d.shared_memory_per_block_optin) == (threads, blocks, lanes, smem, optin), name
        assert d.registers_per_sm == 65536


def test_no_reference_outside_the_repository():
    """Profiles, package, docs and tests cite primary sources, never a file a user does not have."""
    root = shipped_dir("devices").parent
    # the forbidden names, spelt in pieces so that this file does not match them itself
    pattern = re.compile("|".join(["device" + "_facts", "/wo" + "rk/", "shared" + "/(reference|seeds)",
                                   r"\.\./" + "shared", "seeds" + r"/\d"]))
    offenders = []
    for folder in ("devices", "perfmodel", "docs", "tests", "kernels_spec", "validation", "bench"):
        for path in (root / folder).rglob("*"):
            if path.suffix in (".py", ".yaml", ".yml", ".md", ".cu", ".cuh", ".cpp", ".txt") and path.is_file():
                for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                    if pattern.search(line):
                        offenders.append(f"{path.relative_to(root)}:{number}: {line.strip()[:80]}")
    for name in ("README.md", "pyproject.toml", "setup.py"):
        for number, line in enumerate((root / name).read_text().splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{name}:{number}")
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("table, message", [
    ("[1, 2]", "expected a mapping of bytes_in_flight_per_sm"),
    ("{bytes_in_flight_per_sm: [2048, 1024], latency_ns: {256: [600, 700]}}", "got bytes_in_flight_per_sm [2048, 1024]"),
    ("{bytes_in_flight_per_sm: [1024, 2048], latency_ns: {256: [600]}}", "got 256: [600]"),
    ("{bytes_in_flight_per_sm: [1024, 2048], latency_ns: {256: [600, slow]}}", "got 256: [600, 'slow']"),
    ("{bytes_in_flight_per_sm: [1024, 2048], latency_ns: {big: [600, 700]}}", "got block size 'big'"),
    ("{bytes_in_flight_per_sm: [1024, 2048], latency_ns: {256: [null, 700]}}", "needs its first entry"),
])
def test_malformed_latency_under_load_names_file_and_field(tmp_path, monkeypatch, table, message):
    """measured.dram_latency_under_load feeds the bottleneck model's DRAM latency (docs/model.md 2.4): a malformed
    table is an error naming the file and the field, not a traceback at analysis time."""
    monkeypatch.chdir(tmp_path)
    text = G80_TEXT.rstrip("\n") + "\n"
    if "\nmeasured:" not in text:
        text += "measured:\n"
    text += f"  dram_latency_under_load: {table}\n"
    _write(tmp_path, text)
    with pytest.raises(DeviceError) as info:
        load_device("bad.yaml")
    assert "bad.yaml: field 'measured.dram_latency_under_load'" in str(info.value)
    assert message in str(info.value)


def test_a_user_profile_with_a_latency_under_load_table_loads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = G80_TEXT.rstrip("\n") + "\n" + ("" if "\nmeasured:" in G80_TEXT else "measured:\n")
    text += "  dram_latency_under_load: {bytes_in_flight_per_sm: [1024, 4096], latency_ns: {256: [600, 900]}}\n"
    _write(tmp_path, text)
    from perfmodel.model.bottleneck import device_rates, dram_queue_cycles

    rates = device_rates(load_device("bad.yaml"))
    assert dram_queue_cycles(4096, 256, rates) == pytest.approx(300e-9 * rates.clock_hz)
