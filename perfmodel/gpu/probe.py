"""``perfmodel devices probe``: a device profile from the GPU in the machine.

Three steps, each usable on its own:

1. :func:`read_attributes` - the CUDA device attributes (``cudaGetDeviceProperties`` through CuPy, the ``gpu``
   extra; the same fields :func:`perfmodel.gpu.env.device_properties` records for every measurement) plus the
   driver's and nvidia-smi's versions and clocks. Needs a GPU.
2. :func:`measure` (``--measure``) - three short microbenchmarks: a streaming copy (DRAM bandwidth), independent
   FMA chains (FP32 peak, and the SM clock under load), and repeated reads of a buffer a quarter the size of the
   L2 (L2 bandwidth). Needs a GPU; about 10 seconds.
3. :func:`profile_from_attributes` - the profile as a YAML-ready mapping, every value ``{value, source, note}``.
   Pure Python: the tests feed it recorded attribute sets (``tests/data/probe/``). What the attributes cannot
   give (FP32/FP64 lanes, schedulers, the occupancy allocation rules, the carveouts, the L1 + shared total) comes
   from the generation's row of :mod:`perfmodel.generations`; peaks are computed from the attributes.

The result is meant to be compared with, or to seed, a hand-sourced profile: ``docs/devices.md`` compares the
probed H100 and H200 with the shipped ones field by field.
"""
from __future__ import annotations

import datetime as _dt
import re
import statistics
from typing import Any

from perfmodel import generations
from perfmodel.errors import GpuError

PROBE_KEY = "PROBE"
MEASURE_KEY = "MEAS-PROBE"

# cudaDeviceAttr numbers for the fields CUDA 13 dropped from cudaDeviceProp (read through cudaDeviceGetAttribute).
_ATTR_CLOCK_RATE, _ATTR_MEMORY_CLOCK_RATE, _ATTR_BUS_WIDTH = 13, 36, 37


# ---------------------------------------------------------------------------------------------------------
# 1. attributes

def read_attributes(device_index: int = 0) -> dict[str, Any]:
    """The recorded attribute set of one GPU: ``{"device": {...cudaDeviceProp fields...}, "versions": ...,
    "clocks": ..., "probed_at_utc": ...}`` (the shape of ``validation/raw/*_microbench.json``)."""
    from perfmodel.gpu.env import clocks, device_properties, require_cupy, versions

    cp = require_cupy()
    props = device_properties(cp, device_index)
    for key, attr in (("clockRate", _ATTR_CLOCK_RATE), ("memoryClockRate", _ATTR_MEMORY_CLOCK_RATE),
                      ("memoryBusWidth", _ATTR_BUS_WIDTH)):
        if not props.get(key):
            try:
                props[key] = cp.cuda.runtime.deviceGetAttribute(attr, device_index)
            except Exception:  # noqa: BLE001 - left out; the profile then says so
                pass
    return {"device": props, "versions": versions(cp), "clocks": clocks(device_index),
            "probed_at_utc": _now()}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------------------
# 2. microbenchmarks

_KERNELS = r"""
extern "C" __global__ void copy_float4(const float4 *__restrict__ in, float4 *__restrict__ out, long long n4)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride)
        out[i] = in[i];
}

// reads the n4 float4 of `in` `passes` times (a buffer that fits the L2: after the first pass every read hits)
extern "C" __global__ void read_repeat(const float4 *__restrict__ in, float *__restrict__ sink, long long n4,
                                       int passes)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (int p = 0; p < passes; ++p)
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
            float4 v = __ldcg(in + i);  // cache-global: through the L2, not the L1
            acc += v.x + v.y + v.z + v.w;
        }
    if (acc == 12345.678f)  // practically never: keeps the loads live without a store per thread
        atomicAdd(sink, acc);
}

#define CHAINS 8
extern "C" __global__ void fma_chain(float *out, float b, float c, int iterations, long long *clock_out)
{
    float a[CHAINS];
#pragma unroll
    for (int k = 0; k < CHAINS; ++k)
        a[k] = threadIdx.x * 1e-3f + k;
    long long c0 = 0, t0 = 0;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        c0 = clock64();
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    }
#pragma unroll 16
    for (int i = 0; i < iterations; ++i) {
#pragma unroll
        for (int k = 0; k < CHAINS; ++k)
            a[k] = fmaf(a[k], b, c);
    }
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < CHAINS; ++k)
        sum += a[k];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        long long c1 = clock64(), t1;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
        clock_out[0] = c1 - c0;
        clock_out[1] = t1 - t0;
    }
}
"""
CHAINS = 8


def _timed(cp, launch, repeats: int = 15, warmup: int = 3) -> list[float]:
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(warmup):
        launch()
    cp.cuda.Device().synchronize()
    samples = []
    for _ in range(repeats):
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
    return samples


def measure(device_index: int = 0, attributes: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the three microbenchmarks on GPU ``device_index``; figures in base units with how each was taken."""
    from perfmodel.gpu.env import require_cupy

    cp = require_cupy()
    with cp.cuda.Device(device_index):
        props = (attributes or {}).get("device") or read_attributes(device_index)["device"]
        sms = int(props["multiProcessorCount"])
        l2 = int(props.get("l2CacheSize") or 0)
        module = cp.RawModule(code=_KERNELS, options=("-std=c++17",))
        threads, blocks = 256, sms * 32  # 32 blocks of 256 threads per SM: a full grid-stride wave and more
        results: dict[str, Any] = {"measured_at_utc": _now(), "grid": [blocks, threads]}

        # DRAM: copy 1 GiB (or an eighth of the memory) to another buffer; bytes read + written over time
        free, _total = cp.cuda.runtime.memGetInfo()
        size = min(1 << 30, (free // 8) & ~0xFFFF)
        a, b = cp.ones(size // 4, dtype=cp.float32), cp.empty(size // 4, dtype=cp.float32)
        copy = module.get_function("copy_float4")
        n4 = cp.int64(size // 16)
        samples = _timed(cp, lambda: copy((blocks,), (threads,), (a, b, n4)))
        median = statistics.median(samples)
        results["dram_copy"] = {"bytes_per_s": 2 * size / median, "median_s": median, "buffer_bytes": size,
                                "launches": len(samples)}
        del a, b

        # L2: a buffer a quarter of the L2, read `passes` times after one warm pass
        if l2 > 0:
            size = max(1 << 20, (l2 // 4) & ~0xFFFF)
            buf, sink = cp.ones(size // 4, dtype=cp.float32), cp.zeros(1, dtype=cp.float32)
            read = module.get_function("read_repeat")
            passes = 20
            samples = _timed(cp, lambda: read((blocks,), (threads,), (buf, sink, cp.int64(size // 16),
                                                                      cp.int32(passes))))
            median = statistics.median(samples)
            results["l2_read"] = {"bytes_per_s": size * passes / median, "median_s": median,
                                  "buffer_bytes": size, "passes": passes, "launches": len(samples)}
            del buf, sink

        # FP32: CHAINS independent FMA chains per thread
        out = cp.empty(blocks * threads, dtype=cp.float32)
        clock = cp.zeros(2, dtype=cp.int64)
        fma = module.get_function("fma_chain")
        iterations = 4096
        samples = _timed(cp, lambda: fma((blocks,), (threads,), (out, cp.float32(0.999), cp.float32(1e-3),
                                                                 cp.int32(iterations), clock)))
        median = statistics.median(samples)
        flops = blocks * threads * CHAINS * iterations * 2
        cycles, nanoseconds = (int(v) for v in clock.get())
        results["fma"] = {"flops_per_s": flops / median, "median_s": median, "iterations": iterations,
                          "chains": CHAINS, "launches": len(samples),
                          "sm_clock_hz_under_load": cycles / nanoseconds * 1e9 if nanoseconds else None}
    return results


# ---------------------------------------------------------------------------------------------------------
# 3. the profile

def _v(value: Any, source: str, note: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"value": value, "source": source}
    if note:
        entry["note"] = note
    return entry


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "gpu"


def _size(n: int) -> str | int:
    """Bytes as a human size where exact (233472 -> "228 KB"), else the plain number."""
    for unit, scale in (("MB", 1024**2), ("KB", 1024)):
        if n and n % scale == 0:
            return f"{n // scale} {unit}"
    return int(n)


def profile_from_attributes(record: dict[str, Any], measured: dict[str, Any] | None = None,
                            profile_id: str | None = None) -> dict[str, Any]:
    """A profile mapping (ready for ``yaml.safe_dump``) from a recorded attribute set (:func:`read_attributes`'s
    shape, or just its ``device`` part) and optional :func:`measure` results."""
    props = record.get("device", record)
    cc = f"{int(props['major'])}.{int(props['minor'])}"
    row = generations.generation(cc)
    if row is None:
        known = ", ".join(generations.GENERATIONS)
        raise GpuError(f"compute capability {cc} is not in perfmodel's generation table (perfmodel/generations.py "
                       f"knows {known}); add its row, then probe again")
    versions = record.get("versions") or {}
    clocks = record.get("clocks") or {}
    when = record.get("probed_at_utc") or record.get("measured_at_utc") or "unknown date"
    driver = versions.get("nvidia_driver") or versions.get("cuda_driver") or "unknown"
    name = str(props.get("name") or "unknown GPU")

    def gen(field: str, note: str | None = None) -> dict[str, Any]:
        value, source = row[field]
        if field.endswith("_bytes") and isinstance(value, int):
            value = _size(value)
        return _v(value, source, note)

    sources = {
        PROBE_KEY: (f"cudaGetDeviceProperties / cudaDeviceGetAttribute read by `perfmodel devices probe` on "
                    f"'{name}' (driver {driver}, CUDA runtime {versions.get('cuda_runtime', 'unknown')}, "
                    f"CuPy {versions.get('cupy', 'unknown')}), {when}"),
    }
    used_gen_keys = {k.strip() for v in row.values() for k in v[1].split(",")}
    for key in sorted(used_gen_keys):
        sources[key] = generations.SOURCES[key]

    sms = int(props["multiProcessorCount"])
    clock_khz = props.get("clockRate") or (clocks.get("clocks.max.sm") or 0) * 1000
    if not clock_khz:
        raise GpuError(f"{name}: neither cudaDevAttrClockRate nor nvidia-smi gave the SM clock")
    clock_hz = float(clock_khz) * 1e3
    mem_khz, bus = props.get("memoryClockRate"), props.get("memoryBusWidth")
    smem_sm = int(props["sharedMemPerMultiprocessor"])
    carveouts = [c for c in row["shared_memory_carveouts"][0] if c < smem_sm] + [smem_sm]
    carveout_note = None if carveouts == row["shared_memory_carveouts"][0] else (
        f"the generation's carveouts cut at the reported {smem_sm} B per SM")
    fp32, fp64 = row["fp32_lanes_per_sm"][0], row["fp64_lanes_per_sm"][0]
    l1_total = row["l1_shared_bytes"][0]

    p: dict[str, Any] = {"format_version": 1, "id": profile_id or _slug(name)}
    p["name"] = _v(name, PROBE_KEY, "cudaDeviceProp.name")
    p["architecture"] = _v(row["architecture_family"][0], row["architecture_family"][1],
                           f"the compute capability {cc} generation; the driver does not name the chip")
    p["compute_capability"] = _v(cc, PROBE_KEY)
    p["occupancy_rules"] = gen("occupancy_rules")
    p["sources"] = sources
    total_mem = props.get("totalGlobalMem")
    p["notes"] = (f"Probed by `perfmodel devices probe` on '{name}' ({when}): device attributes where the driver "
                  f"reports them (source {PROBE_KEY}), the compute capability {cc} row of perfmodel/generations.py "
                  "where it does not, peaks computed from both."
                  + (f" {total_mem / 1e9:.1f} GB of device memory." if total_mem else "")
                  + (f" ECC {'on' if props.get('ECCEnabled') else 'off'}." if "ECCEnabled" in props else ""))

    p["sm_count"] = _v(sms, PROBE_KEY, "multiProcessorCount")
    p["fp32_lanes_per_sm"] = gen("fp32_lanes_per_sm")
    p["fp64_lanes_per_sm"] = gen("fp64_lanes_per_sm")
    p["sfu_per_sm"] = gen("sfu_per_sm")
    p["lsu_per_sm"] = gen("lsu_per_sm")
    p["warp_schedulers_per_sm"] = gen("warp_schedulers_per_sm")
    p["base_clock_hz"] = _v(f"{clock_hz / 1e6:g} MHz", "estimate",
                            "the driver reports only the maximum SM clock (cudaDevAttrClockRate): set to it")
    p["boost_clock_hz"] = _v(f"{clock_hz / 1e6:g} MHz", PROBE_KEY, "cudaDevAttrClockRate (the maximum SM clock)")
    p["warp_size"] = _v(int(props["warpSize"]), PROBE_KEY)

    p["max_threads_per_block"] = _v(int(props["maxThreadsPerBlock"]), PROBE_KEY)
    p["max_block_dim"] = _v([int(x) for x in props["maxThreadsDim"]], PROBE_KEY)
    p["max_grid_dim"] = _v([int(x) for x in props["maxGridSize"]], PROBE_KEY)
    p["max_threads_per_sm"] = _v(int(props["maxThreadsPerMultiProcessor"]), PROBE_KEY)
    p["max_warps_per_sm"] = _v(int(props["maxThreadsPerMultiProcessor"]) // int(props["warpSize"]), "computed",
                               "max_threads_per_sm / warp_size")
    if props.get("maxBlocksPerMultiProcessor"):
        p["max_blocks_per_sm"] = _v(int(props["maxBlocksPerMultiProcessor"]), PROBE_KEY)
    else:
        p["max_blocks_per_sm"] = gen("max_blocks_per_sm")

    p["registers_per_sm"] = _v(int(props["regsPerMultiprocessor"]), PROBE_KEY)
    p["max_registers_per_block"] = _v(int(props["regsPerBlock"]), PROBE_KEY)
    for field in ("max_registers_per_thread", "register_allocation", "register_allocation_unit",
                  "register_allocation_unit_overrides", "warp_allocation_granularity", "register_sub_partitions"):
        p[field] = gen(field)

    p["shared_memory_per_sm"] = _v(_size(smem_sm), PROBE_KEY, "sharedMemPerMultiprocessor")
    p["shared_memory_carveouts"] = _v([_size(c) if c else 0 for c in carveouts],
                                      row["shared_memory_carveouts"][1], carveout_note)
    p["shared_memory_carveout_fallback"] = gen("shared_memory_carveout_fallback")
    p["shared_memory_per_block"] = _v(_size(int(props["sharedMemPerBlock"])), PROBE_KEY)
    p["shared_memory_per_block_optin"] = _v(_size(int(props["sharedMemPerBlockOptin"])), PROBE_KEY)
    p["shared_memory_allocation_unit"] = gen("shared_memory_allocation_unit")
    if "reservedSharedMemPerBlock" in props:
        p["reserved_shared_memory_per_block"] = _v(_size(int(props["reservedSharedMemPerBlock"])) or 0, PROBE_KEY)
    else:
        p["reserved_shared_memory_per_block"] = gen("reserved_shared_memory_per_block")
    for field in ("shared_memory_system_bytes", "kernel_params_in_shared_memory", "shared_memory_banks",
                  "shared_memory_bank_width_bytes"):
        p[field] = gen(field)

    p["constant_memory_bytes"] = _v(_size(int(props["totalConstMem"])), PROBE_KEY)
    p["constant_cache_bytes"] = gen("constant_cache_bytes")
    p["l1_cache_bytes"] = _v(_size(max(l1_total - smem_sm, 0)), "computed",
                             f"{l1_total // 1024} KB of L1 + shared memory per SM ({row['l1_shared_bytes'][1]}) "
                             "minus shared_memory_per_sm")
    p["l2_cache_bytes"] = _v(_size(int(props["l2CacheSize"])), PROBE_KEY, f"l2CacheSize, {props['l2CacheSize']} B")

    if mem_khz and bus:
        bandwidth = 2 * float(mem_khz) * 1e3 * int(bus) / 8
        p["dram_bandwidth_bytes_per_s"] = _v(f"{bandwidth / 1e9:.1f} GB/s", f"{PROBE_KEY}, computed",
                                             f"2 x {float(mem_khz) / 1e3:g} MHz x {int(bus)} bits / 8")
        p["memory_clock_hz"] = _v(f"{float(mem_khz) / 1e3:g} MHz", PROBE_KEY, "memoryClockRate")
        p["memory_bus_width_bits"] = _v(int(bus), PROBE_KEY, "memoryBusWidth")
    elif measured and "dram_copy" in measured:
        p["dram_bandwidth_bytes_per_s"] = _v(f"{measured['dram_copy']['bytes_per_s'] / 1e9:.1f} GB/s", MEASURE_KEY,
                                             "the driver gave no memory clock or bus width: the measured copy")
    else:
        raise GpuError(f"{name}: no memory clock or bus width reported; probe again with --measure")
    peak32 = sms * fp32 * 2 * clock_hz
    p["peak_fp32_flops"] = _v(f"{peak32 / 1e12:.2f} TFLOPS", "computed",
                              f"{sms} SMs x {fp32} lanes x 2 x {clock_hz / 1e9:g} GHz")
    p["peak_fp64_flops"] = _v(f"{sms * fp64 * 2 * clock_hz / 1e12:.3f} TFLOPS", "computed",
                              f"{sms} SMs x {fp64} lanes x 2 x {clock_hz / 1e9:g} GHz (no FP64 tensor cores)")

    if measured:
        sources[MEASURE_KEY] = (f"`perfmodel devices probe --measure` microbenchmarks (perfmodel/gpu/probe.py) on "
                                f"'{name}', {measured.get('measured_at_utc', when)}; the card's own clocks, never "
                                "set or locked")
        m: dict[str, Any] = {}
        grid = measured.get("grid", ["?", "?"])
        if "dram_copy" in measured:
            d = measured["dram_copy"]
            m["dram_bandwidth_bytes_per_s"] = {
                "value": round(d["bytes_per_s"]), "source": MEASURE_KEY,
                "datasheet": p["dram_bandwidth_bytes_per_s"]["value"],
                "date": measured.get("measured_at_utc", when),
                "how": (f"float4 grid-stride copy of {d['buffer_bytes']} B to another buffer, {grid[0]} blocks of "
                        f"{grid[1]} threads, CUDA events, median of {d['launches']} launches after 3 warm-ups; "
                        "bytes read + written / time")}
        if "fma" in measured:
            f = measured["fma"]
            m["peak_fp32_flops"] = {
                "value": round(f["flops_per_s"]), "source": MEASURE_KEY, "datasheet": p["peak_fp32_flops"]["value"],
                "date": measured.get("measured_at_utc", when),
                "how": (f"{f['chains']} independent chains of {f['iterations']} dependent fmaf per thread, {grid[0]} "
                        f"blocks of {grid[1]} threads, median of {f['launches']} launches after 3 warm-ups")}
            if f.get("sm_clock_hz_under_load"):
                m["sm_clock_hz_under_load"] = {
                    "value": round(f["sm_clock_hz_under_load"]), "source": MEASURE_KEY,
                    "date": measured.get("measured_at_utc", when),
                    "how": "clock64() cycles / %globaltimer ns of thread 0 of block 0 around its FMA loop"}
        if "l2_read" in measured:
            l2r = measured["l2_read"]
            m["l2_bandwidth_bytes_per_s"] = {
                "value": round(l2r["bytes_per_s"]), "source": MEASURE_KEY,
                "date": measured.get("measured_at_utc", when),
                "how": (f"{l2r['passes']} passes of __ldcg float4 reads over a {l2r['buffer_bytes']} B buffer (a "
                        f"quarter of the L2), {grid[0]} blocks of {grid[1]} threads, median of {l2r['launches']} "
                        "launches after 3 warm-ups")}
            p["throughput"] = {"l2_bandwidth_bytes_per_s": _v(
                f"{l2r['bytes_per_s'] / 1e12:.2f} TB/s", MEASURE_KEY, "measured (see measured:)")}
        p["measured"] = m
    return p


def dump_profile(profile: dict[str, Any]) -> str:
    """YAML text with one line per field where it fits (``{value: ..., source: ...}``)."""
    import yaml

    head = ("# Made by `perfmodel devices probe`: device attributes (source PROBE), the generation's rules\n"
            "# (perfmodel/generations.py) and computed peaks. Check it against the product's datasheet.\n")
    lines = []
    for key, value in profile.items():
        if isinstance(value, dict) and "value" in value:
            lines.append(yaml.safe_dump({key: value}, default_flow_style=None, sort_keys=False, width=120).rstrip())
        elif not isinstance(value, dict):
            lines.append(yaml.safe_dump({key: value}, default_flow_style=False, sort_keys=False, width=120).rstrip())
        else:
            lines.append(yaml.safe_dump({key: value}, sort_keys=False, width=120).rstrip())
    return head + "\n".join(lines) + "\n"
