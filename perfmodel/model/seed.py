"""The seed slides' model: CGMA and the bandwidth-bound "achievable GFLOPS".

Lecture "CUDA memories" (seed 000): *the compute to global memory access (CGMA) ratio is the number of
floating point calculations performed for each access to the global memory*; with 200 GB/s and 4-byte floats
"one can expect to load no more than 50 (200/4) giga single-precision operands per second", so CGMA 1.0 caps a
kernel at 50 GFLOPS, and the 1,500 GFLOPS peak "needs a CGMA value of 30".

The slides count the *loads* of the inner product (naive matmul: 2 flops per 2 loads = 1.0; tiled T=16: 8,192
mul/add per 512 loads per block phase = 16), so ``cgma`` divides by thread-level global loads. The figure that
also counts stores is reported beside it as ``cgma_with_stores`` for transparency.

Achievable GFLOPS = min(peak FP32, CGMA x DRAM bandwidth / 4 B) - the datasheet DRAM bandwidth and the
profile's peak, exactly as the slides do (G80: 86.4 GB/s, 346.5 GFLOPS). The 4 B is the slides' single-precision
operand: the bandwidth delivers bandwidth / operand size operands a second. A kernel whose global loads carry
other sizes (doubles, float4) divides by its mean bytes per thread-level load instead - the same rule, so 4-byte
kernels keep the slides' figures. For a kernel with double-precision or tensor-core work the compute roof is the
peak of its mix of FP32, FP64 and tensor-core flops (perfmodel.analysis.compute_peak_flops).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

FLOAT_BYTES = 4  # the slides' single-precision operand


def cgma(flops: float, global_accesses: float) -> float | None:
    """Floating-point operations per thread-level global memory access (None when there are no accesses)."""
    if global_accesses <= 0:
        return None
    return flops / global_accesses


def achievable_gflops(cgma_ratio: float | None, peak_gflops: float, dram_gb_per_s: float,
                      operand_bytes: float = FLOAT_BYTES) -> float:
    """min(peak, CGMA x bandwidth / operand size) in GFLOPS. No global accesses -> the compute peak."""
    if cgma_ratio is None:
        return peak_gflops
    return min(peak_gflops, cgma_ratio * dram_gb_per_s / operand_bytes)


def required_cgma(peak_gflops: float, dram_gb_per_s: float, operand_bytes: float = FLOAT_BYTES) -> float:
    """The CGMA at which the bandwidth bound reaches the compute peak (slides: 1,500 GFLOPS at 200 GB/s -> 30)."""
    return peak_gflops / (dram_gb_per_s / operand_bytes)


@dataclass(frozen=True)
class SeedModel:
    flops: float
    global_loads: float
    global_stores: float
    cgma: float | None                 # flops / thread-level global loads (the slides' definition)
    cgma_with_stores: float | None     # flops / (loads + stores)
    peak_gflops: float
    dram_gb_per_s: float
    bandwidth_bound_gflops: float | None   # CGMA x BW / operand bytes (None without global loads)
    achievable_gflops: float           # min(peak, bandwidth bound)
    required_cgma: float               # CGMA needed to reach the peak on this device
    bound: str                         # "memory bandwidth" or "compute peak"
    operand_bytes: float = FLOAT_BYTES  # bytes per thread-level global load (the slides' 4 B for floats)
    peak_basis: str = "FP32"           # what the peak is: FP32, FP64, or a mix (compute_peak_flops)

    def to_json(self) -> dict:
        return asdict(self)


def seed_model(flops: float, global_loads: float, global_stores: float, peak_flops: float,
               dram_bandwidth_bytes_per_s: float, load_bytes: float | None = None,
               peak_basis: str = "FP32") -> SeedModel:
    """The seed slides' figures for one launch. ``peak_flops`` and the bandwidth are in FLOP/s and B/s;
    ``load_bytes``: the bytes the thread-level global loads carry (their mean is the operand size; 4 without)."""
    peak = peak_flops / 1e9
    bandwidth = dram_bandwidth_bytes_per_s / 1e9
    ratio = cgma(flops, global_loads)
    operand = load_bytes / global_loads if load_bytes and global_loads > 0 else FLOAT_BYTES
    bandwidth_bound = None if ratio is None else ratio * bandwidth / operand
    achievable = achievable_gflops(ratio, peak, bandwidth, operand)
    return SeedModel(
        flops=flops,
        global_loads=global_loads,
        global_stores=global_stores,
        cgma=ratio,
        cgma_with_stores=cgma(flops, global_loads + global_stores),
        peak_gflops=peak,
        dram_gb_per_s=bandwidth,
        bandwidth_bound_gflops=bandwidth_bound,
        achievable_gflops=achievable,
        required_cgma=required_cgma(peak, bandwidth, operand),
        bound="compute peak" if bandwidth_bound is None or bandwidth_bound >= peak else "memory bandwidth",
        operand_bytes=operand,
        peak_basis=peak_basis,
    )
