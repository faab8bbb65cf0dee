"""The bottleneck model's calibrated constants: value, and how each was measured.

Every one was fitted to, or read off, the committed H100 measurements (``validation/h100.json``: kernel runs
with CUDA-event times and Nsight Compute counters, NVRTC/nvcc 13, H100 SXM5 at 1.98 GHz; 54 cases when
fitted, 66 now - the figures below were re-checked on all 66). They are
physical quantities of the GPU and its compiler - never per-kernel factors. Device profiles may override each in
their ``throughput:`` section; profiles that do not get these H100 values as documented defaults.
"""
from __future__ import annotations

# Cycles between two compiled instructions of one warp when the warp has the SM to itself, for the instructions
# that are not global loads (ALU, conversion and shared-memory latencies on its dependence chain). A global load
# instruction waits the measured L1 load-to-use latency instead (41.1 cycles on the H100, devices/h100.yaml
# measured.l1_hit_latency_cycles), and the loads that miss L1 wait their measured L2 or DRAM latency on top, in
# rounds of the loads in flight (perfmodel/model/mlp.py; chain.chain_cycles_per_warp), the DRAM share with
# its measured growth under the kernel's bytes in flight (measured.dram_latency_under_load,
# chain.dram_queue_cycles). Fitted on the "latency" fit part of validation/split.yaml (all 66 cases of
# validation/h100.json and the 8 few-block reductions at n = 4 Mi on the H100) as the whole number of cycles that
# minimises the sum of squared log errors (log predicted/measured) of those 74 cold cases, each measured time the
# median over three timing sessions (docs/validation.md "Reproducibility"): 3 -> 0.965, 4 -> 0.917, 5 -> 0.887,
# **6 -> 0.877**, 7 -> 0.887, 8 -> 0.917, 9 -> 0.968, 10 -> 1.040 (median |error| of the fit part 7.8% at 6, worst
# 1.26x; with the first session's times alone 6 was the minimum too, 0.872). With the shared loads counted as the
# cubin issues them and the L1 data stage (bottleneck.data_stage, 2026-11-27): 5 -> 0.798, **6 -> 0.776**,
# 7 -> 0.773, 8 -> 0.790 over five sessions - a flat minimum; 7 is lower by 0.4% and worse on every held-out set
# (docs/model.md 2.4), so 6 stays. tests/test_accuracy.py repeats the comparison. History: 25 (read off the one-wave cases of
# validation/h100.json, when the chain charged every instruction alike and waited 400 cycles per DRAM round only),
# then 18 (every instruction alike, with the loads in flight and measured latencies: 1.616 on the same sum), then
# 10 (global loads apart: 1.214 on the same sum; 1.199 with the sum of tests/test_accuracy.py), until the DRAM
# latency under load came in (2026-11-27) and took the share of the 10 cycles that was memory queueing.
# 2026-11-27 (sixth session): the chain credits instruction-level parallelism (chain.instruction_cycles): a
# dependent step costs DEPENDENT_ISSUE_LATENCY_CYCLES, shared by the instructions of its basic block that can issue
# together (the block's instructions over its longest dependence chain, model/mlp.py ilp_by_line), and no
# instruction issues faster than INDEPENDENT_ISSUE_CYCLES. The two are fitted together on the latency fit part
# extended with six of the SGEMM tutorial's kernels (validation/split.yaml: the 74 cases above and kernels 1, 3, 5,
# 7, 9, 11 at S = 1,024 and 4,096, cold; 86 cases), the register-blocked GEMMs the fit part had none of: least
# squares of log errors over whole cycles for the step and quarter cycles for the floor. Sums (docs/model.md 2.4):
# floor 2.25 -> L 11: 0.9127, **12: 0.9078**, 13: 0.9080, 14: 0.9135; L 12 -> floor 2.0: 0.9202, 2.5: 0.9241.
# With conv1d_tiled's three cases measured again from the cubin analysed (2026-11-27, eighth session; they had been
# timed from CuPy's NVRTC 13.0 build, 40% fewer instructions): L 10: 0.9286, 11: 0.9194, **12: 0.9151**,
# 13: 0.9159, 14: 0.9219; floor 2.0: 0.9275, 2.5: 0.9308 - the same pair.
# Without the credit the same 86 cases sum to 3.199 at the 6 cycles above (the GEMMs 40% too slow).
# 2026-11-27 (fourteenth session): refitted when the chain started charging the L2 hits of a cold one-wave launch
# the DRAM latency (chain.fetch_wait_share, measured by validation/microbench/hot_lines.py). At 12 / 2.25 the same
# 86 cases then sum to 0.7633 (0.9151 without the term); the least squares move to L 9, floor 2.0: **0.7191**
# (L 7: 0.7309, 8: 0.7227, 10: 0.7203, 11: 0.7264, 12: 0.7377; floor 1.75: 0.7282, 2.25: 0.7381). Part of the 12
# cycles was the fetch wait the chain now has by measurement.
DEPENDENT_ISSUE_LATENCY_CYCLES = 9.0
INDEPENDENT_ISSUE_CYCLES = 2.0

# Cycles between two block launches on one SM. vec_add with 64-thread blocks (262,144 blocks, 2 warps each)
# runs at 161 us, 2.3x its DRAM time, with 28% achieved occupancy of a possible 100%: the blocks finish faster
# than they are launched; 161 us x 1.98 GHz / (262,144 / 132) = 160 cycles per block per SM.
BLOCK_LAUNCH_CYCLES = 160.0

# Launch-to-completion floor of a kernel, as CUDA events see it (cold L2): the seed's 76 x 62 picture_scale
# (20 blocks) measures 4.0 us, of which the model's own chain for it is ~0.5 us.
LAUNCH_OVERHEAD_S = 3.3e-6

# The same floor for warm times (``--l2 warm``): back-to-back launches, each between two events recorded on an idle
# GPU, so the launch latency is inside the events (cold runs hide it behind the L2 flush that precedes them).
# Measured, not fitted: an empty 1-block kernel timed that way (validation/microbench/run_latency.py
# "empty_launch_1_block", 200 repeats) takes 6.69, 8.70, 6.99, 10.53 and 9.25 us median in five sessions on the
# H100 (validation/raw/h100_latency.json, h100_latency_retime.json ... h100_latency_retime4.json); the floor moves
# from session to session like the warm times of small kernels do (docs/validation.md "Reproducibility"), so the
# value is the median of the sessions, 8.70 us (6.69 from the first session alone, 6.99 from the first three until
# the fourth and fifth sessions of 2026-11-27). Profiles without their own figure use it; the H200's own six sessions
# are in devices/h200.yaml (measured.launch_overhead_warm_s).
LAUNCH_OVERHEAD_WARM_S = 8.704e-6

# L1 tag lookups: one 128-byte line per clock per SM. matmul_rowwise (a stride-1 KB load: 32 lines per request,
# plus a broadcast) measures 34 cycles per warp-iteration (ncu: L1 97.6% busy) = 33 lines. The lines are the
# simulator's exact count (distinct 128-byte lines per warp request, ``global.load_lines``/``store_lines``),
# 33 per warp-iteration there as well, so the constant did not move when that count replaced the estimate.
L1_LINES_PER_CLOCK = 1.0

# p of the (sum t^p)^(1/p) combination of the resource groups. Swept over {2, 2.5, 3, 4, 6, inf} with the
# other constants, with exact L1 line counts: median |time error| 14.7, 8.8, 9.5, 10.7, 14.8, 15.5%; worst factor
# 1.58, 1.450, 1.447, 1.48, 1.54, 1.74; within 25%: 52, 59, 60, 55, 53, 47 of 66. 3 is kept (2.5 and 3 are
# within a point of median error of each other; 3 has the lower worst case and one more case within 25%; it
# was also the choice before the line counts were exact, when 2.5 had the larger worst case, 1.92 vs 1.88).
OVERLAP_EXPONENT = 3.0

# Loads one warp can have in flight between two barriers (nvcc unrolls loops 4x: 2 loads x 4 iterations).
# Not fitted: only decides how many DRAM round trips a warp's latency chain waits.
MAX_LOADS_IN_FLIGHT_PER_WARP = 8.0

# ---- atomics (issue 13 item 2), fitted on the split's "fit" part (validation/split.yaml: H100 cases of
# validation/h100_fidelity.json at n = 4 Mi); the held-out part (the other H100 atomics cases - other sizes, other
# operations, single lanes, the shared-memory and cuda-samples kernels - and every H200 case) is checked by
# tests/test_heldout.py. Times below are the measured cold medians minus LAUNCH_OVERHEAD_S.
#
# The busiest 128-byte line's atomic work is serialised at its L2 slice (perfmodel/sim/atomic_count.py counts it):
# per warp request, each distinct sector is one transaction and each further operation on one address a further
# pass. On a line whose every operation is on one address, transactions and passes alike take the same-address
# time of their type - seconds per operation, from 4 Mi lanes on one word whose address the compiler cannot see
# (validation/kernels/atomic_ops.cu, one operation per lane):
# atomic_gather_u32 LANES=32: 3,074.1 us / 4,194,304 = 0.733 ns; atomic_gather_f32 LANES=32: 7,384.0 us -> 1.760 ns.
GLOBAL_ATOMIC_SAME_INT_S = 0.733e-9
GLOBAL_ATOMIC_SAME_FLOAT_S = 1.760e-9
# On a line of several addresses a transaction pays the address switch: seconds per distinct sector of a warp
# request, from hist_global_f32 NBINS=256 (8 lines of 32 bins, random bins): its busiest line's 338,015
# transactions and 29,918 float passes (a sample of 48 of its 16,384 blocks, extrapolated) in 1,081.6 us ->
# (1,081.6 us - 29,918 x 1.760 ns) / 338,015 = 3.04 ns (2.96 ns from the sample's ends before 2026-11-28).
GLOBAL_ATOMIC_SECTOR_S = 3.04e-9
# Device-wide global atomic operations per second when no line is hot: hist_global_f32 NBINS=65536,
# 4,194,304 operations in 61.1 us = 68.6 G/s.
GLOBAL_ATOMIC_OPS_PER_S = 68.6e9
# Shared-memory atomics on one address serialise in the SM: cycles per same-address lane (the simulator's
# ``shared.atomic_same_address``, at most one per operation after warp aggregation). hist_shared_f32 NBINS=1:
# 31,775 same-address lanes per SM; of its 194.4 us, the busiest global line (16,384 single-lane float adds, one
# per block, on one word: 28.8 us) is not overlapped with them: 165.5 us at 1.98 GHz = 10.3 cycles.
SHARED_ATOMIC_CYCLES = 10.3

# Stores that write only part of a 32-byte sector cost the L2 more than a full sector: extra sector transfers per
# partially written store sector (scaled by the unwritten share). Fitted on the split's fit case for it,
# transpose_naive 8192 x 8192 on the H100 (validation/h100_fidelity.json: 1,151 us cold, ncu L2 throughput 88%,
# 67.1 M store sectors of 4 bytes each): the L2 term is 402.7 us + 313.2 us per unit of this cost, and 2.36 makes the
# prediction 1,151 us; see docs/model.md.
PARTIAL_STORE_SECTOR_COST = 2.36
