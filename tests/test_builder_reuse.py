"""Launches of one kernel reuse its compiled functions when the memory layout is the same (perfmodel.sim.launch):
the counts and outputs are those of a launch that compiles afresh, a different layout compiles again, and a build
that fails leaves nothing half-built behind."""
import dataclasses

import numpy as np
import pytest

import perfmodel.sim.launch as L
from perfmodel.analysis import _counts_json
from perfmodel.errors import SimulationError
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate
from perfmodel.sim.program import ProgramBuilder

SRC = r"""
__device__ float twice(float x) { return 2.0f * x; }
__global__ void k(const float *a, float *out, int n) {
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? a[i] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = twice(s[threadIdx.x ^ 1]);
}
"""


@pytest.fixture(scope="module")
def program():
    return load_kernel(source=SRC, path="reuse.cu")


def _launch(program, n, fresh=False, monkeypatch=None):
    a = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    if fresh:
        monkeypatch.setattr(L, "_builder", lambda module, symbols, path: ProgramBuilder(module, symbols, path))
    res = simulate(program, (n + 63) // 64, 64, [a, out, n])
    expected = 2 * a[np.arange(n) ^ 1 if n % 2 == 0 else np.minimum(np.arange(n) ^ 1, n - 1)]
    if n % 2 == 0:
        assert np.array_equal(out, expected)
    return res, out


def test_the_same_layout_reuses_the_compiled_functions(program, monkeypatch):
    first, _ = _launch(program, 256)
    cache = program.module.__dict__["_builders"]
    builders = dict(cache)
    second, _ = _launch(program, 256)
    assert dict(cache) == builders                  # no new builder: the same arrays' sizes, the same layout
    assert _counts_json(first.counts) == _counts_json(second.counts)
    fresh, _ = _launch(program, 256, fresh=True, monkeypatch=monkeypatch)
    assert _counts_json(fresh.counts) == _counts_json(second.counts)
    assert fresh.lines == second.lines


def test_other_sizes_reuse_it_and_a_moved_variable_compiles_again(program):
    # pointer arguments are read from the parameter buffer at run time, so arrays of other sizes keep the layout
    _launch(program, 256)
    builders = dict(program.module.__dict__["_builders"])
    res, out = _launch(program, 512)
    assert np.array_equal(out, 2 * np.arange(512, dtype=np.float32)[np.arange(512) ^ 1])
    assert res.counts.global_["store_requests"] == 512 // 32
    assert dict(program.module.__dict__["_builders"]) == builders
    # a __device__ array's address is compiled into its load: the heap gives it the same place for any sizes
    gsrc = r"""
__device__ float table[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__global__ void g(const float *a, float *out) { out[threadIdx.x] = a[threadIdx.x] * table[threadIdx.x & 3]; }
"""
    gp = load_kernel(source=gsrc, path="table.cu")
    for n in (32, 64, 32):
        a = np.ones(n, np.float32)
        out = np.zeros(n, np.float32)
        simulate(gp, 1, n, [a, out])
        assert np.array_equal(out, np.tile([1, 2, 3, 4], n // 4))
    assert len(gp.module.__dict__["_builders"]) == 1
    # a symbol table that differs (another address) gets its own compiled functions, and the new address is the one
    # its loads use
    from perfmodel.sim.program import Symbols

    (old,) = gp.module.__dict__["_builders"].values()
    moved = Symbols()
    for name, (space, addr) in old.symbols.table.items():
        moved.add(name, space, addr + 4096 if space == "global" else addr)
    b = L._builder(gp.module, moved, "table.cu")
    assert b is not old and len(gp.module.__dict__["_builders"]) == 2
    assert L._builder(gp.module, moved, "table.cu") is b


def test_a_failed_build_leaves_the_builder_as_it_was(program, monkeypatch):
    _launch(program, 64)
    symbols = next(iter(program.module.__dict__["_builders"].values())).symbols
    b = ProgramBuilder(program.module, symbols, "reuse.cu")
    calls = []
    real = ProgramBuilder._instr

    def fail_once(self, ins, ops):
        if not calls:
            calls.append(ins)
            raise SimulationError("planted")
        return real(self, ins, ops)

    monkeypatch.setattr(ProgramBuilder, "_instr", fail_once)
    with pytest.raises(SimulationError, match="planted"):
        b.get(program.entry)
    assert b.instrs == [] and b.func_of == [] and program.entry not in b.funcs
    cf = b.get(program.entry)
    ref = ProgramBuilder(program.module, symbols, "reuse.cu").get(program.entry)
    assert cf.gid0 == ref.gid0 == 0 and len(b.instrs) == len(program.module.functions[program.entry].instrs)


def test_a_module_with_compiled_functions_still_pickles(program):
    import pickle

    _launch(program, 64)
    assert program.module.__dict__["_builders"]
    copy = pickle.loads(pickle.dumps(program.module))
    assert "_builders" not in copy.__dict__ and list(copy.functions) == list(program.module.functions)
    res, out = _launch(dataclasses.replace(program, module=copy), 64)
    assert res.counts.global_["store_requests"] == 2
