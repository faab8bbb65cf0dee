"""Tests written against the mutants of the models (perfmodel/model/) that the suite let survive.

Oracles: a user's own device profile (the figures written into it must be the ones the model uses: README
"--device path/to/my.yaml loads your own profile"), and relations derived by hand from the documented JSON
contract (a sector is 32 bytes; DRAM bytes are reads + writes; a grid of B < SM-count blocks keeps B SMs busy).
"""
from __future__ import annotations

import json

import pytest
import yaml

from perfmodel.analysis import analyze
from perfmodel.devices import load_device
from perfmodel.model import bottleneck as bn
from perfmodel.model import calibration
from perfmodel.model.traffic import estimate_traffic, resident_fraction
from perfmodel.paths import shipped_dir

# profile key -> (value written into the profile, the model's rate key); every value differs from the H100's own
# and from every default, so a rate that ignores the profile (or reads the wrong key) shows
THROUGHPUT = {
    "shared_bandwidth_bytes_per_clock": (96.0, "shared_bytes_per_clock"),
    "l2_bandwidth_bytes_per_s": (5.5e12, "l2_bandwidth_bytes_per_s"),
    "global_latency_cycles": (611.0, "global_latency_cycles"),
    "l2_latency_cycles": (233.0, "l2_latency_cycles"),
    "l1_hit_latency_cycles": (37.0, "l1_latency_cycles"),
    "lsu_requests_per_clock": (1.5, "lsu_requests_per_clock"),
    "warp_instructions_per_clock": (3.0, "warp_instructions_per_clock"),
    "dependent_issue_latency_cycles": (21.0, "dependent_issue_latency_cycles"),
    "l1_lines_per_clock": (1.25, "l1_lines_per_clock"),
    "block_launch_cycles": (171.0, "block_launch_cycles"),
    "launch_overhead_s": (4.4e-6, "launch_overhead_s"),
    "overlap_exponent": (2.5, "overlap_exponent"),
    "max_loads_in_flight_per_warp": (6.0, "max_loads_in_flight_per_warp"),
}


def _profile(tmp_path, *, measured: bool, name: str = "myh100") -> str:
    doc = yaml.safe_load((shipped_dir("devices") / "h100.yaml").read_text())
    doc["id"] = name
    for key, (value, _) in THROUGHPUT.items():
        doc["throughput"][key] = {"value": value, "source": "estimate"}
    doc["throughput"].pop("shared_latency_cycles", None)
    if not measured:
        doc.pop("measured", None)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


@pytest.fixture(scope="module")
def own_profile(tmp_path_factory):
    return _profile(tmp_path_factory.mktemp("profile"), measured=False)


def test_the_model_uses_the_throughput_figures_of_the_users_profile(own_profile):
    a = analyze("vec_add", own_profile, {"N": 4096})
    rates = a.to_json()["model"]["rates"]
    for key, (value, rate) in THROUGHPUT.items():
        assert rates[rate] == pytest.approx(value), key
    # the profile's datasheet DRAM figure (no measured section): 3352 GB/s
    assert rates["dram_bandwidth_bytes_per_s"] == pytest.approx(3352e9)
    assert rates["dram_bandwidth_source"] == "datasheet"
    # the launch overhead in the prediction is the profile's
    assert a.model.launch_overhead_s == pytest.approx(4.4e-6)
    assert a.predicted_time_s >= 4.4e-6


def test_measured_figures_beat_the_datasheet_and_the_throughput_section(tmp_path):
    doc = yaml.safe_load((shipped_dir("devices") / "h100.yaml").read_text())
    measured = doc["measured"]["dram_bandwidth_bytes_per_s"]["value"]
    path = _profile(tmp_path, measured=True, name="myh100m")
    own = yaml.safe_load(open(path))
    own["measured"]["launch_overhead_s"] = {"value": 5.5e-6, "source": "MEAS-H100-MICRO"}
    own["measured"]["l2_bandwidth_bytes_per_s"] = {"value": 4.4e12, "source": "MEAS-H100-MICRO"}
    open(path, "w").write(yaml.safe_dump(own, sort_keys=False))
    a = analyze("vec_add", path, {"N": 4096})
    rates = a.to_json()["model"]["rates"]
    assert rates["dram_bandwidth_bytes_per_s"] == pytest.approx(float(measured))
    assert rates["dram_bandwidth_source"] == "measured"
    assert rates["launch_overhead_s"] == pytest.approx(5.5e-6)          # not the throughput section's 4.4 us
    assert rates["l2_bandwidth_bytes_per_s"] == pytest.approx(4.4e12)   # not the throughput section's 5.5 TB/s


LOCAL_KERNEL = """
__global__ void LocalSum(const int* idx, float* out, int N)
{
    float buf[32];                       // indexed by data: the array lives in local memory
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < 32; k++) buf[(k * 7 + idx[i]) & 31] = (float)k;
    float s = 0.0f;
    for (int k = 0; k < 32; k++) s += buf[(k * 5 + idx[i]) & 31];
    out[i] = s;
}
"""

LOCAL_SPEC = """
name: local_sum
description: "a per-thread array in local memory"
source: local.cu
entry: LocalSum
params:
  N: {default: 1024}
grid: ["N / 128"]
block: [128]
args:
  - {name: idx, dtype: int32, length: N, init: zeros}
  - {name: out, dtype: float32, length: N, init: zeros}
  - {name: N, dtype: int32, value: N}
"""


def test_local_memory_instructions_are_load_store_unit_work(tmp_path):
    # docs/model.md: the lsu resource is the warp-level memory instructions. 1,024 threads = 32 full warps; each
    # warp stores its 32-float local array element by element (32 x 32 = 1,024 warp-level local stores), reads it
    # back, and does one global load (idx[i]) and one global store (out[i]).
    (tmp_path / "local.cu").write_text(LOCAL_KERNEL)
    (tmp_path / "local_sum.yaml").write_text(LOCAL_SPEC)
    a = analyze(str(tmp_path / "local_sum.yaml"), "h100")
    local, g = a.counts["local"], a.counts["global"]
    assert local["store_requests"] == 32 * 32
    assert 0 < local["load_requests"] <= 32 * 32
    assert g["load_requests"] == 32 and g["store_requests"] == 32
    expected = 32 + 32 + local["load_requests"] + local["store_requests"]
    assert a.model.resource("lsu").work == pytest.approx(expected)


def test_model_json_relations_small_grid(own_profile):
    # vec_add, N = 4096 with 256-thread blocks: 16 blocks on a 132-SM device
    doc = analyze("vec_add", own_profile, {"N": 4096, "BLOCK_SIZE": 256}).to_json()
    model = doc["model"]
    assert model["active_sms"] == 16
    assert any("16 of 132 SMs" in note for note in model["notes"])
    t = model["traffic"]
    assert t["l2_bytes"] == pytest.approx((t["l2_load_sectors"] + t["l2_store_sectors"]) * 32)
    assert t["dram_bytes"] == pytest.approx(t["dram_read_bytes"] + t["dram_write_bytes"])
    # 4096 floats read from each of A and B, 4096 written: 2 x 16 KiB of compulsory reads, 16 KiB of writes
    assert t["dram_read_bytes"] == pytest.approx(2 * 4096 * 4)
    assert t["dram_write_bytes"] == pytest.approx(4096 * 4)
    assert json.loads(json.dumps(doc))["model"]["active_sms"] == 16


def test_shared_memory_wavefronts_of_one_tiled_block_by_hand():
    # matmul_tiled, Width = TILE_WIDTH = 16: one block of 8 warps, one phase. Each warp stores its two tile
    # elements (2 conflict-free wavefronts) and reads Nds[k][tx] (16 consecutive words, one LDS each) 16 times: 16
    # wavefronts; Mds[ty][k] as ptxas issues it, four k in one LDS.128 (a broadcast per half-warp, two rows: 2
    # wavefronts, as measured for that pattern in validation/raw/h200_shared_wide.json) 4 times: 8. 8 x 24 = 192.
    a = analyze("matmul_tiled", "h100", {"Width": 16, "TILE_WIDTH": 16})
    assert a.counts["shared"]["load_wavefronts"] == 192
    assert a.counts["shared"]["store_wavefronts"] == 16
    # the L1 data stage also moves the global requests' lines: per warp M, N and P are each two 64-byte rows
    # that follow each other in memory, one 128-byte line: 8 x 3 = 24; 192 + 16 + 24 = 232
    assert a.model.resource("shared").work == pytest.approx(232)
    # one block on one SM, a 128-byte wavefront (32 banks x 4 B) or a line a clock: 232 clocks
    shared = a.model.resource("shared")
    assert shared.time_s * a.model.rates.clock_hz == pytest.approx(232)


# ---- hand-written counts and stand-in devices: inputs the model documents (bottleneck.py: "Counts without line
# figures (hand-written ...)", device_rates: "a Device or a stand-in with the same attributes")

def _h100_rates():
    from perfmodel.devices import load_device
    from perfmodel.model.bottleneck import device_rates

    return device_rates(load_device("h100"))


def test_l1_lines_of_hand_written_counts():
    from perfmodel.model.bottleneck import l1_lines

    rates = _h100_rates()
    # exact line counts: loads' 8 lines and no store line
    assert l1_lines({"load_lines": 8, "store_lines": 0}, rates) == 8.0
    # no line figures: the lower bound, at least one line per request, loads and stores (2 + 2), no sectors given
    assert l1_lines({"load_requests": 2, "store_requests": 2}, rates) == 4.0
    assert l1_lines({"store_requests": 3, "store_sectors": 3}, rates) == 3.0


def test_atomics_time_by_its_documented_rule():
    """The busiest line's work one after another (transactions of a several-address line at the sector cost,
    passes and one-address operations at their type's same-address cost, each measured on an H100 in
    calibration.py) or every operation at the atomic rate, whichever is longer; shared-memory atomics add time
    only for same-address conflicts."""
    from perfmodel.model import calibration
    from perfmodel.model.bottleneck import atomics_time

    rates = _h100_rates()
    # 32 float adds of one warp to a line's only address: 32 operations at the float same-address time
    g = {"atomic_ops": 32, "atomic_hot_line_one_address_float": 32}
    assert 32 * calibration.GLOBAL_ATOMIC_SAME_FLOAT_S > 32 / calibration.GLOBAL_ATOMIC_OPS_PER_S
    assert atomics_time(g, {}, 1, rates) == pytest.approx(32 * calibration.GLOBAL_ATOMIC_SAME_FLOAT_S)
    # a line of several addresses: 2 transactions, 31 integer and 31 float passes
    g = {"atomic_ops": 64, "atomic_hot_line_sectors": 2, "atomic_hot_line_repeats_int": 31,
         "atomic_hot_line_repeats_float": 31}
    line = (2 * calibration.GLOBAL_ATOMIC_SECTOR_S + 31 * calibration.GLOBAL_ATOMIC_SAME_INT_S
            + 31 * calibration.GLOBAL_ATOMIC_SAME_FLOAT_S)
    assert atomics_time(g, {}, 1, rates) == pytest.approx(line)
    # 4 Mi integer operations on one address (the measured 3.07 ms of atomic_same_u32 OP=3 less the launch)
    g = {"atomic_ops": 1 << 22, "atomic_hot_line_one_address_int": 1 << 22}
    assert atomics_time(g, {}, 1, rates) == pytest.approx(3.07e-3, rel=0.02)
    # shared atomics to distinct addresses: nothing beyond their requests
    assert atomics_time({}, {"atomic_ops": 10}, 1, rates) == 0.0


def test_bottleneck_model_of_hand_written_store_only_counts():
    """Counts with global stores only (no load key) and shared loads only (no store-wavefront key): the LSU
    works 4 requests, the shared pipe 272 wavefronts, nothing else is invented."""
    from perfmodel.model.bottleneck import bottleneck_model
    from perfmodel.model.traffic import Traffic

    zero = Traffic(load_sectors=0, store_sectors=16, l1_hit_rate=0, block_reuse=0, l2_load_sectors=0,
                   l2_store_sectors=16, l2_hit_rate=0, dram_read_bytes=0, dram_write_bytes=512,
                   working_set_bytes=512, footprint_bytes=512)
    counts = {"global": {"store_requests": 4, "store_sectors": 16}, "shared": {"load_wavefronts": 272},
              "warps": 8, "warp_instructions": 100}
    rates = _h100_rates()
    r = bottleneck_model(counts, rates=rates, traffic=zero, total_blocks=1, warps_per_sm=8,
                         blocks_per_sm=1, warps_per_block=8)
    # the L1 data stage: 272 shared wavefronts and the stores' lines (no line figures: at least one a request,
    # one per 4 sectors: 4)
    assert r.resource("lsu").work == 4 and r.resource("shared").work == 272 + 4
    # H100: 32 banks x 4 bytes = 128 bytes a clock, one wavefront a clock, and a line a clock, on the one SM
    assert rates.shared_bytes_per_clock == 128 and rates.l1_lines_per_clock == 1
    assert r.resource("shared").time_s == pytest.approx(276 / rates.clock_hz)


def test_stand_in_device_without_throughput_section_gets_the_loaders_defaults():
    """A stand-in with the profile's attributes but no throughput section and no coalescing rule: the L1 hit
    latency falls back to the shared-memory latency, whose default is the loader's 20 cycles
    (THROUGHPUT_DEFAULTS: "20 cycles (LAT-2023 model value)"), and the rule to "sectors"."""
    from types import SimpleNamespace

    from perfmodel.devices import THROUGHPUT_DEFAULTS, load_device
    from perfmodel.model.bottleneck import device_rates

    dev = load_device("h100")
    names = [k for k in dir(type(dev)) if not k.startswith(("_", "model_")) and not callable(getattr(dev, k))]
    stand_in = SimpleNamespace(**{k: getattr(dev, k) for k in {*type(dev).model_fields, *names}})
    stand_in.throughput, stand_in.global_memory_rule = None, None
    stand_in.measured = {}          # no measured latencies either (the H100 profile has an L1 hit of 41.1 cycles)
    rates = device_rates(stand_in)
    assert THROUGHPUT_DEFAULTS["shared_latency_cycles"][0].startswith("20 cycles")
    assert rates.l1_latency_cycles == 20.0
    assert rates.global_memory_rule == "sectors"


def test_h100_l1_left_for_global_loads_by_hand():
    """H100: 256 KB of combined L1 / shared memory per SM, split by the smallest carveout (0, 8, 16, 32, 64, 100,
    132, 164, 196 or 228 KB; programming guide 12.6) that holds the resident blocks' shared memory; the rest
    caches global loads: no shared memory -> 256 KB; 50 KB -> the 64 KB carveout -> 192 KB. The traffic
    estimate's L1 size is this figure (``rates.l1_bytes``)."""
    from perfmodel.devices import load_device
    from perfmodel.model.bottleneck import device_rates

    h100 = load_device("h100")
    assert device_rates(h100).l1_bytes == 256 * 1024
    assert device_rates(h100, shared_memory_per_sm_used=50 * 1024).l1_bytes == 192 * 1024


# ---- third pass (2026-11-24): survivors of a fresh sample (seed 24), each against a figure derived by hand ----


def _by_hand_traffic(l2_bytes, l2_state):
    # 1,000 load sectors (100 distinct) and 400 store sectors (50 distinct) in 10 blocks, one wave, no L1
    return estimate_traffic(load_sectors=1000, store_sectors=400, unique_load_sectors=100, unique_store_sectors=50,
                            block_load_sectors=None, block_footprint_sectors=None, wave_blocks=10, total_blocks=10,
                            l1_bytes=0, l2_bytes=l2_bytes, l2_state=l2_state)


def test_warm_l2_holding_the_footprint_reads_and_writes_no_dram():
    # footprint 150 sectors x 32 B = 4,800 B fits a 1 GB L2: warm, every compulsory sector is an L2 hit, and one
    # wave's working set fits too (no spill): no DRAM traffic at all; cold, the compulsory sectors come from DRAM
    warm = _by_hand_traffic(1e9, "warm")
    assert (warm.dram_read_bytes, warm.dram_write_bytes) == (0.0, 0.0) and warm.l2_hit_rate == 1.0
    cold = _by_hand_traffic(1e9, "cold")
    assert (cold.dram_read_bytes, cold.dram_write_bytes) == (100 * 32, 50 * 32)


def test_a_spilling_working_set_rewrites_the_repeated_stores():
    # L2 of 2,400 B, half the 4,800 B working set: half the non-compulsory traffic misses (l2_spill_fraction), and
    # the footprint does not fit, so nothing is resident warm either. Reads: (100 + 0.5 x (1,000 - 100)) x 32 =
    # 17,600 B; writes: (50 + 0.5 x (400 - 50)) x 32 = 7,200 B.
    for state in ("cold", "warm"):
        t = _by_hand_traffic(2400, state)
        assert (t.dram_read_bytes, t.dram_write_bytes) == (17600.0, 7200.0), state


def test_an_unknown_l2_state_is_named_in_the_error():
    with pytest.raises(ValueError, match="'lukewarm'.*cold, warm"):
        resident_fraction(4800, 1e9, "lukewarm")


def test_shared_same_address_atomics_add_to_the_global_atomics():
    rates = bn.device_rates(load_device("h100"))

    # 686 spread global atomics at the measured 68.6 G ops/s: 10 ns; 2,640 same-address shared atomics over 132
    # SMs: 20 per SM, each calibration.SHARED_ATOMIC_CYCLES (10.3) cycles at the H100's clock
    g, s = {"atomic_ops": 686}, {"atomic_ops": 2640, "atomic_same_address": 2640}
    expected = 686 / 68.6e9 + 20 * 10.3 / rates.clock_hz
    assert calibration.GLOBAL_ATOMIC_OPS_PER_S == 68.6e9 and calibration.SHARED_ATOMIC_CYCLES == 10.3
    assert bn.atomics_time(g, s, 132, rates) == pytest.approx(expected)


def test_l1_lines_from_loads_alone():
    # a kernel that only loads has load_lines and no store_lines: its simulated lines are the L1 work
    rates = bn.device_rates(load_device("h100"))
    assert bn.l1_lines({"load_lines": 70, "load_requests": 10, "load_sectors": 400}, rates) == 70


def test_a_profile_without_an_issue_rate_gets_one_warp_instruction_per_lanes_clocks(tmp_path):
    # G80: 8 scalar processors per SM take a warp instruction over 32 / 8 = 4 clocks (the profile's own note, from
    # the CUDA programming guide 3.2 G.3.1): a user profile that leaves warp_instructions_per_clock out gets 0.25
    doc = yaml.safe_load((shipped_dir("devices") / "g80.yaml").read_text())
    assert doc["throughput"]["warp_instructions_per_clock"]["value"] == 0.25
    del doc["throughput"]["warp_instructions_per_clock"]
    doc["id"] = "myg80"
    path = tmp_path / "myg80.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert bn.device_rates(load_device(str(path))).warp_instructions_per_clock == 0.25


def test_resource_work_and_units_as_reported():
    # hand-made counts on the H100, 264 blocks of 8 warps at 2 blocks per SM: one full wave
    rates = bn.device_rates(load_device("h100"))
    counts = {"flops": 2000, "fp_ops": {"fma": 1000, "special": 30, "div": 12}, "warp_instructions": 5000,
              "global": {"atomic_ops": 7, "load_requests": 10, "load_sectors": 40, "unique_load_sectors": 40},
              "shared": {"atomic_ops": 5, "load_wavefronts": 3}}
    traffic = estimate_traffic(load_sectors=40, store_sectors=0, unique_load_sectors=40, unique_store_sectors=0,
                               block_load_sectors=None, block_footprint_sectors=None, wave_blocks=264,
                               total_blocks=264, l1_bytes=0, l2_bytes=50 << 20)
    r = bn.bottleneck_model(counts, rates=rates, traffic=traffic, total_blocks=264, warps_per_sm=16,
                            blocks_per_sm=2, warps_per_block=8)
    got = {x.name: (x.work, x.unit) for x in r.resources}
    assert got["fp32"] == (2000.0, "flop") and got["fp64"] == (0.0, "op")
    assert got["sfu"] == (42.0, "op")                       # special functions and divisions
    assert got["atomics"] == (12.0, "op")                   # global and shared operations
    assert got["l2"][1] == got["dram"][1] == "B" and got["issue"] == (5000.0, "warp instr")
    # shared wavefronts and the loads' lines (no line figures: max(10 requests, 40 sectors / 4)) share the data stage
    assert got["shared"] == (13.0, "wavefront") and got["blocks"] == (264.0, "block")
    assert r.waves == pytest.approx(1.0)


def test_a_second_wave_runs_the_chain_again():
    # 265 blocks at 1 block per SM on 132 SMs: 2.01 waves, so the latency chain runs 3 times (whole waves)
    rates = bn.device_rates(load_device("h100"))
    counts = {"flops": 0, "warp_instructions": 1000, "warps": 265, "global": {}}
    traffic = estimate_traffic(load_sectors=0, store_sectors=0, unique_load_sectors=0, unique_store_sectors=0,
                               block_load_sectors=None, block_footprint_sectors=None, wave_blocks=132,
                               total_blocks=265, l1_bytes=0, l2_bytes=50 << 20)
    r = bn.bottleneck_model(counts, rates=rates, traffic=traffic, total_blocks=265, warps_per_sm=1,
                            blocks_per_sm=1, warps_per_block=1)
    assert r.waves == pytest.approx(265 / 132)
    per_warp = 1000 / 265 * rates.dependent_issue_latency_cycles / rates.clock_hz
    assert r.latency_time_s == pytest.approx(3 * per_warp)


def test_two_carveouts_are_a_choice_too():
    # a profile whose SRAM splits two ways (no shared memory, or all 228 KB of it): on Hopper L1 + shared memory
    # are one 256 KB SRAM per SM (NVIDIA Hopper tuning guide), so a kernel without shared memory gets all 256 KB
    # as L1 and one that needs the large carveout keeps the 28 KB beside it
    h100 = load_device("h100")
    assert h100.l1_cache_bytes + h100.shared_memory_per_sm == 256 * 1024
    two = h100.model_copy(update={"shared_memory_carveouts": (0, 233472)})
    assert bn.l1_bytes_for_global(two, 0) == 256 * 1024
    assert bn.l1_bytes_for_global(two, 100_000) == 28 * 1024


def test_loads_in_flight_skip_a_line_without_loads_wherever_it_is():
    # the first line the compiled code lists has no executed global load; the second has: its figure is the answer
    from perfmodel.model.mlp import weighted_loads_in_flight

    lines = {3: {"global_loads": 0, "global_requests": 0}, 7: {"global_loads": 32, "global_requests": 4}}
    assert weighted_loads_in_flight({3: 8.0, 7: 2.0}, lines) == 2.0
