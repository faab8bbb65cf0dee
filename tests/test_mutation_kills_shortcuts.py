"""Mutation-testing kills for the simulator's exact shortcuts: block replication (perfmodel/sim/replicate.py,
perfmodel/sim/invariance.py) and loop fast-forward (perfmodel/sim/loops.py) (issue 18, item 4; docs/testing.md).

The oracles: the unoptimised path ``simulate(..., replicate=False, fast_loops=False)`` (every block and every
iteration simulated) and counts derived by hand in the test."""
from __future__ import annotations

from perfmodel.sim import invariance, replicate


def test_pilot_blocks_of_a_4x3_grid_by_hand():
    # first block (0,0,0); its x and y neighbours (1,0,0), (0,1,0); the corners (0,0,0) (3,0,0) (0,2,0) (3,2,0);
    # the centre ((0+3)//2, (0+2)//2) = (1,1,0); linear id x + 4 y
    ids, unit_rows = invariance.pilot_blocks((4, 3, 1))
    assert sorted(ids.tolist()) == sorted([0, 1, 4, 3, 8, 11, 5])
    assert ids[0] == 0
    assert ids[unit_rows[0]] == 1 and ids[unit_rows[1]] == 4 and unit_rows[2] is None


def test_boxes_are_the_grid_then_its_interior():
    assert list(replicate._boxes((5, 4, 1))) == [((0, 0, 0), (4, 3, 0)), ((1, 1, 0), (3, 2, 0))]
    assert list(replicate._boxes((2, 1, 1))) == [((0, 0, 0), (1, 0, 0))]


def _kernel(body: str):
    from perfmodel.kernel import load_kernel

    return load_kernel(source="__global__ void k(float *a, float *out, int n) {\n" + body + "\n}", path="k.cu")


def _replicated_and_full(program, n_blocks=64, threads=64, n=64 * 64):
    import numpy as np

    from perfmodel.analysis import _counts_json
    from perfmodel.sim import simulate

    a = np.arange(n_blocks * threads, dtype=np.float32)
    rep = simulate(program, n_blocks, threads, [a.copy(), np.zeros(n_blocks * threads, np.float32), n],
                   replicate=True)
    full = simulate(program, n_blocks, threads, [a.copy(), np.zeros(n_blocks * threads, np.float32), n],
                    replicate=False, fast_loops=False)
    assert _counts_json(rep.counts) == _counts_json(full.counts)
    assert rep.lines == full.lines
    return rep, full


def test_shared_atomic_that_moves_with_the_block_is_replicated():
    """A shared-memory atomic at s[blockIdx.x]: its address moves by 4 bytes a block, but shared memory is each
    block's own, so no line of global memory is shared: the blocks are identical up to the bank rotation and the
    run is replicated (only *global* atomics that move are refused). Counts: those of every block simulated."""
    rep, _ = _replicated_and_full(_kernel(
        "__shared__ int s[64];\n"
        "s[threadIdx.x] = 0; __syncthreads();\n"
        "if (threadIdx.x < 8) atomicAdd(&s[blockIdx.x], 1);\n"
        "__syncthreads();\n"
        "out[blockIdx.x * blockDim.x + threadIdx.x] = (float)s[threadIdx.x];"))
    assert rep.replication.proved, rep.replication.reason


def test_unsigned_bounds_check_from_zero_is_replicated():
    """``unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n)``: i starts at 0 in block 0 and stays far
    below 2^31, so the unsigned comparison is the signed, linear one and every block takes it the same way (every
    i < n = 4096): replicated, with every block's counts."""
    rep, _ = _replicated_and_full(_kernel(
        "unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "if (i < (unsigned)n) out[i] = 2.0f * a[i];"))
    assert rep.replication.proved, rep.replication.reason
    # proved on the whole grid at the first try: the pilots of a 64-block row are its first block 0, that block's
    # neighbour 1, the corners 0 and 63 and the centre 31 (4 blocks), and one block (0) stands for all 64 (not
    # the interior 1..62 with blocks 0 and 63 simulated on their own)
    assert rep.replication.pilot_blocks == 4 and rep.replication.rep_ids.tolist() == [0]


def test_trip_counts_of_linear_loops_by_hand():
    """perfmodel.sim.loops._trip_count: after iteration j the loop goes on while cmp(a0 + j da, b0 + j db).
    ``for (j = 0; j != 1000; j += 4)`` compares j + 4 with 1000 after each iteration: 4 + 4 j != 1000 fails first at
    j = 249, so 250 iterations; with ``<`` 1001 the first failing j is 250 (4 + 4 x 250 = 1004): 251 iterations.
    ``j += 3`` with ``!=`` 1000 never meets 1000 exactly (1000 - 3 is not a multiple of 3): no finite count."""
    import numpy as np

    from perfmodel.sim.loops import _trip_count

    a0, da, b0, db = (np.array([v]) for v in (4, 4, 1000, 0))
    assert _trip_count("ne", 32, False, a0, da, b0, db, False).tolist() == [250]
    assert _trip_count("lt", 32, False, a0, da, b0 + 1, db, False).tolist() == [251]
    # the negated form: the branch goes back while not (a == b)
    assert _trip_count("eq", 32, False, a0, da, b0, db, True).tolist() == [250]
    assert _trip_count("ne", 32, True, np.array([3]), np.array([3]), b0, db, False) is None


LOOP_KERNELS = {
    # every condition of perfmodel/sim/loops.py's docstring holds: an induction j, an affine address, data s
    "sum": ("__global__ void k(const float *a, float *out, int n) { float s = 0;"
            " for (int j = 0; j < n; ++j) s += a[j * 64 + threadIdx.x]; out[threadIdx.x] = s; }", True, ""),
    # an atomic in the body: refused ("no calls, returns or atomics")
    "atom": ("__global__ void k(const float *a, float *out, int n) {"
             " for (int j = 0; j < n; ++j) atomicAdd(&out[threadIdx.x], a[j]); }", False, "'atom' in the loop"),
    # the trip count is a value loaded from memory: data reaches the loop's branch
    "data": ("__global__ void k(const float *a, float *out, int n) { float s = 0; int m = (int)a[0];"
             " for (int j = 0; j < m; ++j) s += a[j + 1]; out[threadIdx.x] = s; }", False,
             "data reaches a branch, a guard or an address"),
}


def test_loop_plans_accept_and_refuse_for_the_documented_reasons():
    """The static half of loop fast-forward (perfmodel.sim.loops.plan_loop) on every self-loop NVRTC makes of
    three kernels: the plain sum qualifies, the atomic and the data-bound trip count are refused, each with the
    condition of the module's docstring that fails."""
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import loops
    from perfmodel.sim.program import ProgramBuilder, Symbols

    for name, (src, ok, reason) in LOOP_KERNELS.items():
        program = load_kernel(source=src, path=f"{name}.cu")
        cf = ProgramBuilder(program.module, Symbols(), f"{name}.cu").get(program.entry)
        self_loops = [pc for pc, b in enumerate(cf.blocks) if b.term == "cbra" and b.target == pc]
        assert self_loops, name
        for pc in self_loops:
            plan = loops._plan(None, cf, pc)
            assert (plan.ok, plan.reason) == (ok, reason), name
            if ok:
                assert plan.setp_gid >= 0 and plan.mem_gids and plan.carried


def test_geometric_loop_is_not_fast_forwarded():
    """``j = 2 j + 3`` is not ``j + a fixed step``: extrapolating its first two iterations linearly would count
    ~12,500 iterations (steps of 8 from 5 to 100,000) where the loop runs 15 (j = 1, 5, 13, .., 2^(k+2) - 3;
    2^16 - 3 = 65,533 < 100,000 < 2^17 - 3). Oracle: every iteration executed."""
    import numpy as np

    from perfmodel.analysis import _counts_json
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    program = load_kernel(source="__global__ void k(const float *a, float *out, int n) { float s = 0;"
                                 " for (int j = 1; j < n; j = 2 * j + 3) s += a[threadIdx.x];"
                                 " out[threadIdx.x] = s; }", path="geometric.cu")

    def run(fast):
        out = np.zeros(32, np.float32)
        return simulate(program, 1, 32, [np.ones(32, np.float32), out, 100_000], fast_loops=fast), out

    (fast, out_fast), (full, out_full) = run(True), run(False)
    assert fast.skipped_iterations == 0
    assert _counts_json(fast.counts) == _counts_json(full.counts)
    assert out_full[0] == 15.0 and np.array_equal(out_fast, out_full)


def test_one_thread_loop_with_a_line_sized_step_executes_two_iterations_of_1000():
    """``#pragma unroll 1`` keeps one self-loop; its address moves 64 floats = 256 bytes an iteration, a multiple
    of 128, so every iteration has the same sectors, lines and banks (period 1) and fast-forward executes
    max(1, 2) = 2 iterations and counts the other 998 (loops.py's docstring). One thread: one lane's trip count.
    Oracle for the counts: every iteration executed."""
    import numpy as np

    from perfmodel.analysis import _counts_json
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    program = load_kernel(source="__global__ void k(const float *a, float *out, int n) { float s = 0;"
                                 " \n#pragma unroll 1\n for (int j = 0; j < n; ++j) s += a[j * 64 + threadIdx.x];"
                                 " out[threadIdx.x] = s; }", path="line_step.cu")

    def run(fast):
        return simulate(program, 1, 1, [np.ones(64 * 1000, np.float32), np.zeros(1, np.float32), 1000],
                        fast_loops=fast)

    fast, full = run(True), run(False)
    assert fast.skipped_iterations == 998
    assert _counts_json(fast.counts) == _counts_json(full.counts)


# ---- third pass (2026-11-24): survivors of a fresh sample (seed 24) ----

def _fast_and_full(src, name, n=1000):
    import numpy as np

    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    program = load_kernel(source=src, path=f"{name}.cu")
    runs = []
    for fast in (True, False):
        out = np.zeros(32, np.float32)
        runs.append(simulate(program, 1, 32, [np.ones(32 * 1024, np.float32), out, n], fast_loops=fast))
    return runs


def test_a_stepwise_address_is_not_affine_so_the_loop_runs_whole():
    """``a[(j >> 3) * 32 + t]`` stays put for 8 iterations, then jumps: not affine in j, so the loop is executed
    (docs/semantics.md: addresses affine in the iteration). Extrapolating its first two iterations (the same
    address) would miss the 124 later lines it reads. Oracle: every iteration executed."""
    from perfmodel.analysis import _counts_json

    src = ("__global__ void k(const float *a, float *out, int n) { float s = 0;\n#pragma unroll 1\n"
           " for (int j = 0; j < n; ++j) s += a[(j >> 3) * 32 + threadIdx.x]; out[threadIdx.x] = s; }")
    fast, full = _fast_and_full(src, "stepwise")
    assert fast.skipped_iterations == 0
    assert _counts_json(fast.counts) == _counts_json(full.counts)
    assert full.counts.global_["unique_load_sectors"] == 125 * 4       # 1000 / 8 lines of 4 sectors


def test_a_signed_induction_near_the_bottom_of_int_is_fast_forwarded():
    """``for (j = -2,000,000,000; j < -2,000,000,000 + n; ++j)``: every value of j and of the bound lies inside
    int32 ([-2^31, 2^31)), so the trip count is linear and the loop is counted from 2 of its 1,000 iterations;
    the counts are those of the whole run."""
    from perfmodel.analysis import _counts_json

    src = ("__global__ void k(const float *a, float *out, int n) { float s = 0;\n#pragma unroll 1\n"
           " for (int j = -2000000000; j < -2000000000 + n; ++j) s += a[(j + 2000000000) * 32 + threadIdx.x];"
           " out[threadIdx.x] = s; }")
    fast, full = _fast_and_full(src, "signed_low")
    assert fast.skipped_iterations == 998
    assert _counts_json(fast.counts) == _counts_json(full.counts)


def test_blocks_one_byte_apart_fall_into_too_many_classes_to_replicate():
    """Block b reads and writes bytes b, b + 256, ...: its 128-byte residue is b mod 128, so the 256 blocks fall into
    128 classes of one pattern each, more than replicate.MAX_CLASSES (64): the run simulates every block and says
    why. Oracle for the values: numpy."""
    import numpy as np

    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    program = load_kernel(source="__global__ void k(const unsigned char *a, unsigned char *out) {"
                                 " int i = blockIdx.x + threadIdx.x * gridDim.x; out[i] = a[i] + 1; }",
                          path="bytes.cu")
    n = 256 * 32
    a = (np.arange(n) % 200).astype(np.uint8)
    out = np.zeros(n, np.uint8)
    r = simulate(program, 256, 32, [a, out], replicate=True)
    assert np.array_equal(out, a + 1)
    assert not r.replication.proved
    assert r.replication.reason == ("the blocks' addresses fall into 128 classes by their 128-byte residues (more "
                                    "than 64: simulating every block is about as cheap)")
    assert r.counts.global_["load_requests"] == 256
