"""``perfmodel devices probe`` without a GPU: recorded attribute sets (tests/data/probe/, the H100 and H200 the
project measured on) give profiles that agree with the shipped h100/h200 field by field, except where the device
attributes cannot know a value (each exception below says why); the probed profiles committed in devices/probed/
are what the code makes from the raw records beside them; the CLI writes a valid profile and says clearly when
there is no GPU."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from perfmodel.devices import check_device_file, load_device, plausibility_warnings
from perfmodel.gpu.probe import dump_profile, profile_from_attributes
from perfmodel.paths import shipped_dir
from perfmodel.report.devices_view import device_fields

DATA = Path(__file__).parent / "data" / "probe"
ROOT = shipped_dir("devices").parent

# Fields where a probed profile differs from the hand-sourced one, and why (docs/devices.md has the table).
EXPECTED_DIFFERENCES = {
    "name": "the driver's product string ('NVIDIA H100 80GB HBM3') instead of the product name",
    "architecture": "the driver reports the compute capability, not the chip (GH100)",
    "base_clock_hz": "the driver reports only the maximum SM clock; the probe sets base = max",
    "sources": "different documents", "notes": "different text", "provenance": "different sources",
    "source_file": "different files", "id": "different ids", "measured": "the shipped profile's own measurements",
    "fp16x2_lane_slots": "measured by validation/microbench/half2_rate.py, which the attribute probe does not run",
}
# Figures the probe computes from attributes that the shipped profile rounds as the datasheet does.
ROUNDED = {"dram_bandwidth_bytes_per_s": 1e-3, "peak_fp32_flops": 2e-3, "peak_fp64_flops": 2e-3}


def _probed(tmp_path: Path, name: str, record: dict, measured=None) -> object:
    path = tmp_path / f"{name}.yaml"
    path.write_text(dump_profile(profile_from_attributes(record, measured, name)))
    device, problems = check_device_file(path)
    assert device is not None, problems
    return device


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_probed_profile_matches_the_shipped_one_field_by_field(tmp_path, gpu):
    record = json.loads((DATA / f"{gpu}_attributes.json").read_text())
    probed, shipped = _probed(tmp_path, f"{gpu}_probed", record), load_device(gpu)
    differences = {}
    for field, value in device_fields(shipped):
        if field.startswith("throughput.") or field in EXPECTED_DIFFERENCES:
            continue  # the probe leaves the bottleneck model's throughput figures to the defaults
        got = dict(device_fields(probed))[field]
        if field in ROUNDED:
            if got != pytest.approx(value, rel=ROUNDED[field]):
                differences[field] = (value, got)
        elif got != value:
            differences[field] = (value, got)
    assert not differences, differences
    for field in ("name", "architecture", "base_clock_hz"):
        assert getattr(probed, field) != getattr(shipped, field)
    assert probed.boost_clock_hz == shipped.boost_clock_hz == 1.98e9
    assert plausibility_warnings(probed) == []


def test_probe_sources_every_value(tmp_path):
    record = json.loads((DATA / "h100_attributes.json").read_text())
    profile = profile_from_attributes(record, None, "x")
    for key, value in profile.items():
        if isinstance(value, dict) and "value" in value:
            assert value["source"], key
            keys = [k.strip() for k in value["source"].split(",")]
            assert all(k in profile["sources"] or k in ("computed", "estimate") for k in keys), (key, keys)


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_committed_probed_profiles_are_what_the_probe_makes(tmp_path, gpu):
    raw = json.loads((ROOT / "validation" / "raw" / f"{gpu}_devices_probe.json").read_text())
    text = dump_profile(profile_from_attributes(raw, raw["measured"], f"{gpu}_probed"))
    committed = (ROOT / "devices" / "probed" / f"{gpu}_probed.yaml").read_text()
    assert yaml.safe_load(text) == yaml.safe_load(committed)
    device, problems = check_device_file(ROOT / "devices" / "probed" / f"{gpu}_probed.yaml")
    assert device is not None, problems
    m = device.measured
    assert 0.7 < m["dram_bandwidth_bytes_per_s"]["value"] / device.dram_bandwidth_bytes_per_s < 1.0
    assert 0.85 < m["peak_fp32_flops"]["value"] / device.peak_fp32_flops < 1.0
    assert device.throughput.l2_bandwidth_bytes_per_s > device.dram_bandwidth_bytes_per_s
    assert device.source_of("throughput.l2_bandwidth_bytes_per_s").source == "MEAS-PROBE"


def test_probed_profiles_are_not_on_the_default_search_path():
    from perfmodel.devices import device_files

    assert not any(name.endswith("_probed") for name in device_files())


def test_generation_fills_what_attributes_cannot_give(tmp_path):
    """A CC 8.9 attribute set (an RTX 4090's, as its whitepaper describes it) gets 128 FP32 lanes, the 0-100 KB
    carveouts and the 24-block limit from the generation table, and agrees with the shipped rtx4090."""
    props = {"name": "NVIDIA GeForce RTX 4090", "major": 8, "minor": 9, "multiProcessorCount": 128,
             "clockRate": 2520000, "memoryClockRate": 10501000, "memoryBusWidth": 384, "l2CacheSize": 75497472,
             "totalConstMem": 65536, "sharedMemPerBlock": 49152, "sharedMemPerBlockOptin": 101376,
             "sharedMemPerMultiprocessor": 102400, "reservedSharedMemPerBlock": 1024, "regsPerBlock": 65536,
             "regsPerMultiprocessor": 65536, "warpSize": 32, "maxThreadsPerBlock": 1024,
             "maxThreadsPerMultiProcessor": 1536, "maxBlocksPerMultiProcessor": 24,
             "maxThreadsDim": [1024, 1024, 64], "maxGridSize": [2147483647, 65535, 65535]}
    probed, shipped = _probed(tmp_path, "ada", {"device": props}), load_device("rtx4090")
    for field in ("fp32_lanes_per_sm", "max_threads_per_sm", "max_blocks_per_sm", "shared_memory_carveouts",
                  "shared_memory_per_block_optin", "l1_cache_bytes", "l2_cache_bytes", "register_sub_partitions"):
        assert getattr(probed, field) == getattr(shipped, field), field
    assert probed.peak_fp32_flops == pytest.approx(shipped.peak_fp32_flops, rel=0.01)
    assert probed.dram_bandwidth_bytes_per_s == pytest.approx(shipped.dram_bandwidth_bytes_per_s, rel=0.01)


def test_unknown_generation_is_a_clear_error():
    from perfmodel.errors import GpuError

    with pytest.raises(GpuError, match="compute capability 99.0 is not in perfmodel's generation table"):
        profile_from_attributes({"major": 99, "minor": 0})


def test_cli_probe_from_attributes_and_without_a_gpu(cli, tmp_path):
    out_file = tmp_path / "mine.yaml"
    code, out, _ = cli("devices", "probe", "--from-attributes", str(DATA / "h200_attributes.json"), "-o",
                       str(out_file))
    assert code == 0 and "wrote" in out and "NVIDIA H200" in out
    assert load_device(out_file).id == "mine"
    code, out, err = cli("devices", "validate", "--strict", str(out_file))
    assert code == 0
    try:
        import cupy  # noqa: F401

        pytest.skip("CuPy is installed: probing would use the GPU")
    except ImportError:
        pass
    code, out, err = cli("devices", "probe", "-o", str(tmp_path / "gpu.yaml"))
    assert code == 2 and "CuPy" in (out + err)
