"""Exact runs from one block per class of identical blocks (perfmodel.sim.replicate): every count must equal
the run that simulates every block - the independent reference here is the unoptimised path itself, executing
each block - and kernels whose blocks differ must not be replicated."""
from pathlib import Path

import numpy as np
import pytest

from perfmodel.analysis import _counts_json
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate
from perfmodel.spec import load_spec

# every seed kernel, at a size with enough blocks for the proof to be worth trying (edges included: sizes that
# are not multiples of the block leave partial blocks on the boundary)
SEEDS = [
    ("matmul_tiled", {"Width": 256}, True),
    ("matmul_naive", {"Width": 100}, True),
    ("vec_add", {"N": 100_001}, True),
    ("conv1d_basic", {"Width": 5000}, True),
    ("conv1d_constant", {"Width": 5000}, True),
    ("conv1d_tiled", {"Width": 5000}, True),
    ("conv1d_tiled_alt", {"Width": 5000}, True),
    ("conv1d_tiled_cache", {"Width": 5000}, True),
    ("conv2d_tiled", {"Width": 100}, True),
    ("picture_scale", {"n": 300, "m": 200}, True),
    ("spmv_csr", {"matrix": 1, "num_rows": 2000}, False),     # row lengths are data: no proof
    ("matmul_rowwise", {"ha": 64, "wa": 16, "wb": 16}, False),  # one block: nothing to replicate
    ("matmul_colwise", {"ha": 16, "wa": 16, "wb": 64}, False),
    ("matmul_elementwise", {"ha": 16, "wa": 8, "wb": 16}, False),
]


def _run(name, params, replicate, fast_loops=False, write_back=True):
    spec = load_spec(name)
    launch = spec.instantiate(dict(params))
    program = load_kernel(spec.source_path, entry=spec.entry, defines=dict(launch.defines))
    args = launch.arg_values()
    result = simulate(program, launch.grid, launch.block, args, launch.constant_values(),
                      dynamic_shared_bytes=launch.dynamic_shared_bytes, replicate=replicate, fast_loops=fast_loops,
                      write_back=write_back)
    return result, launch, args


@pytest.mark.parametrize("name,params,provable", SEEDS, ids=[s[0] for s in SEEDS])
def test_replicated_counts_equal_every_block_simulated(name, params, provable):
    full, _, _ = _run(name, params, False)
    rep, launch, args = _run(name, params, True)
    proved = rep.replication is not None and rep.replication.proved
    assert proved == provable, rep.replication
    assert _counts_json(rep.counts) == _counts_json(full.counts)
    assert rep.lines == full.lines
    assert set(rep.per_block) == set(full.per_block)
    for key in full.per_block:
        assert np.array_equal(rep.per_block[key], full.per_block[key]), key
    if proved:
        # the blocks that ran wrote correct outputs (checked against the spec's reference)
        written = {}
        for a, v in zip(launch.args, args):
            if a.kind == "array" and a.name in {o.arg for o in launch.outputs}:
                written[a.name] = np.asarray(v).reshape(-1) != np.asarray(a.value).reshape(-1)
        assert any(m.any() for m in written.values())
        assert launch.check_outputs(args, elements=written).correct


def test_tiled_matmul_has_two_classes_of_blocks():
    # hand-derived: a 16x16 tile of floats spans 64 bytes of a row, so consecutive blockIdx.x move d_N's and d_P's
    # addresses by 64 bytes - half a 128-byte line - and blocks fall into even and odd blockIdx.x; blockIdx.y moves
    # by 16 rows of 1,024 bytes (a multiple of 128) and does not split them further
    rep, _, _ = _run("matmul_tiled", {"Width": 256}, True)
    assert rep.replication.proved and rep.replication.classes == 2
    assert len(rep.replication.rep_ids) == 2


def _kernel(body: str):
    return load_kernel(source="__global__ void k(float *a, float *out, int n) {\n" + body + "\n}", path="k.cu")


@pytest.mark.parametrize("body,why", [
    ("int i = blockIdx.x * blockDim.x + threadIdx.x; if (a[i] > 0) out[i] = a[i];", "depends on data"),
    ("int i = (blockIdx.x / 2) * blockDim.x + threadIdx.x; out[i] = a[i];", "non-linearly"),
    ("int i = threadIdx.x * blockIdx.x; out[blockIdx.x * blockDim.x + threadIdx.x] = a[i];",
     "different amounts in different threads"),
    ("int i = blockIdx.x * blockDim.x + threadIdx.x; if (blockIdx.x % 3 == 0) out[i] = a[i];", ""),
    # no pilot block (0, 1, 63 and the centre 31) is block 37: the outcome agrees at the corners but the sign of
    # blockIdx.x - 37 does not, so the test is not proved constant
    ("int i = blockIdx.x * blockDim.x + threadIdx.x; if (blockIdx.x == 37) out[i] = a[i];", "equality test"),
    # an unsigned range test that wraps for blocks below 20 is not monotone in the block index
    ("int i = blockIdx.x * blockDim.x + threadIdx.x; if (blockIdx.x - 20u < 3u) out[i] = a[i];", ""),
])
def test_blocks_that_differ_are_not_replicated(body, why):
    program = _kernel(body)
    a = np.random.default_rng(0).standard_normal(64 * 64).astype(np.float32)

    def run(replicate):
        out = np.zeros(64 * 64, np.float32)
        return simulate(program, 64, 64, [a, out, 64 * 64], replicate=replicate), out

    rep, out_rep = run(True)
    full, out_full = run(False)
    assert not rep.replication.proved
    assert why in rep.replication.reason
    # it fell back to simulating every block: same counts, same outputs
    assert _counts_json(rep.counts) == _counts_json(full.counts)
    assert np.array_equal(out_rep, out_full)


def test_blocks_writing_one_address_are_flagged():
    # every block adds into out[0]: counts replicate, but the blocks that ran cannot give the final sum
    program = _kernel("atomicAdd(&out[threadIdx.x % 4], a[blockIdx.x * blockDim.x + threadIdx.x]);")
    a = np.ones(64 * 64, np.float32)
    out = np.zeros(4, np.float32)
    rep = simulate(program, 64, 64, [a, out, 0], replicate=True)
    full = simulate(program, 64, 64, [a, np.zeros(4, np.float32), 0], replicate=False)
    assert rep.replication.proved and rep.replication.overlapping_writes
    assert _counts_json(rep.counts) == _counts_json(full.counts)


def test_local_memory_stores_are_no_overlap_between_blocks():
    """ISPASS LIB: a per-thread array indexed at run time lives in local memory, at the same local addresses in
    every block; its stores counted as "several blocks write the same elements", so the outputs went unchecked.
    Each thread here writes its own out[i] only: no overlap, and the replicated run's outputs are the full run's."""
    program = _kernel("float buf[16]; int i = blockIdx.x * blockDim.x + threadIdx.x; int m = n & 15;\n"
                      "for (int j = 0; j < 16; j++) buf[j] = a[i] * j;\nout[i] = buf[(threadIdx.x + m) & 15];")
    a = np.random.default_rng(0).standard_normal(64 * 64).astype(np.float32)
    rep = simulate(program, 64, 64, [a, np.zeros(64 * 64, np.float32), 5], replicate=True)
    assert rep.counts.local["store_requests"] > 0
    assert rep.replication.proved and not rep.replication.overlapping_writes


@pytest.mark.parametrize("name,params", [("matmul_tiled", {"Width": 256}), ("conv2d_tiled", {"Width": 100})])
def test_footprint_is_the_same_when_the_sectors_are_compacted_after_every_access(name, params, monkeypatch):
    """The representative's sectors are reduced to the distinct ones once enough have been kept; doing it after
    every access must give the grid's footprint (unique sectors) of the run that simulates every block."""
    from perfmodel.sim import replicate as R

    full, _, _ = _run(name, params, False)
    monkeypatch.setattr(R, "_COMPACT_AT", 0)
    rep, _, _ = _run(name, params, True)
    assert rep.replication.proved
    for key in ("unique_load_sectors", "unique_store_sectors"):
        assert rep.counts.global_[key] == full.counts.global_[key] > 0, key


# kernels with a long uniform loop in every block: the naive matmul (a loop over Width, a few classes) and a
# grid-stride reduction storing one partial sum per block (32 classes: the 4-byte store moves by one word per block)
FAST_LOOPS = [("matmul_naive", {"Width": 160, "BLOCK_WIDTH": 16}),
              (str(Path(__file__).resolve().parent.parent / "validation" / "kernels" / "reduce_sequential.yaml"),
               {"n": 1 << 18, "blocks": 64})]


@pytest.mark.parametrize("name,params", FAST_LOOPS, ids=["matmul_naive", "reduce_sequential"])
def test_representatives_count_long_loops_from_a_few_iterations(name, params):
    """A class representative whose outputs nobody reads counts a long uniform loop from a few iterations, as an
    unreplicated run does (perfmodel.sim.loops): the iterations it does not execute still reach its class's
    footprint (sectors moved by each member's shift), so every count - unique sectors included - and per-block
    figure equals the run that executes every block and every iteration. With its outputs written back it runs
    every iteration (a replicated run's outputs are checked on its representatives)."""
    full, _, _ = _run(name, params, False, fast_loops=False)
    fast, _, _ = _run(name, params, True, fast_loops=True, write_back=False)
    assert fast.replication.proved and fast.skipped_iterations > 0
    checked, launch, args = _run(name, params, True, fast_loops=True)
    assert checked.replication.proved and checked.skipped_iterations == 0
    assert _counts_json(checked.counts) == _counts_json(full.counts)
    assert _counts_json(fast.counts) == _counts_json(full.counts)
    assert fast.counts.global_["unique_load_sectors"] > 0
    for key in full.per_block:
        assert np.array_equal(fast.per_block[key], full.per_block[key]), key
