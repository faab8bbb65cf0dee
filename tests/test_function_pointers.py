"""Addresses in variables' initialisers and calls through registers: ``__device__ float *p = table;``, tables of
device-function pointers (in ``__device__`` and ``__constant__`` memory), a function pointer chosen per thread,
and virtual functions (a vtable is a ``.global`` array of function addresses that NVVM emits with the class).
Outputs against numpy references written from the C source; counts derived by hand."""
from __future__ import annotations

import json

import numpy as np
import pytest

from perfmodel.errors import SimulationError
from perfmodel.kernel import load_kernel
from perfmodel.sim import simulate

POINTERS = r"""
__device__ float table[4] = {1, 2, 3, 4};
__device__ float *ptab = table;
struct S { int a; float *p; };
__device__ S s = {7, table + 1};
__global__ void pointers(float *out) { out[threadIdx.x] = ptab[threadIdx.x] + s.p[threadIdx.x & 1] * s.a; }

typedef float (*op_t)(float, float);
__device__ float add(float a, float b) { return a + b; }
__device__ float mul(float a, float b) { return a * b; }
__device__ op_t ops[2] = {add, mul};
__constant__ op_t cops[2] = {mul, add};
__global__ void tables(float *out, int w)
{
    op_t f = ops[threadIdx.x & 1];
    out[threadIdx.x] = f((float)threadIdx.x, 3.0f) + cops[w](2.0f, 5.0f);
}
__global__ void chosen(float *out) { op_t f = (threadIdx.x % 3 == 0) ? add : mul; out[threadIdx.x] = f(2.0f, threadIdx.x); }

typedef float (*un_t)(float);
__device__ float twice(float a) { return 2.0f * a; }
__device__ un_t later[2];
__global__ void unset(float *out, int set)
{
    if (set && threadIdx.x == 0) later[0] = twice;
    __syncthreads();
    out[threadIdx.x] = later[threadIdx.x & 1](1.0f + threadIdx.x);
}
"""

VIRTUAL = r"""
struct Shape { __device__ virtual float area() const = 0; };
struct Square : Shape { float s; __device__ Square(float s) : s(s) {} __device__ float area() const override { return s * s; } };
struct Disc : Shape { float r; __device__ Disc(float r) : r(r) {} __device__ float area() const override { return 3.0f * r * r; } };
__global__ void areas(float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Square a(i); Disc b(i);
    Shape *p = (i & 1) ? (Shape *)&a : (Shape *)&b;
    out[i] = p->area();
}
"""


def _run(src, entry, grid, block, args):
    program = load_kernel(source=src, path="fp.cu", entry=entry)
    return simulate(program, grid, block, args)


def test_pointer_initialisers_hold_the_variables_addresses():
    """`ptab = table` and `s.p = table + 1` (PTX: `generic(table)`, `generic(table)+4`) read table, not address 0
    (which faulted as a null pointer)."""
    out = np.zeros(4, np.float32)
    _run(POINTERS, "pointers", 1, 4, [out])
    t = np.arange(4)
    np.testing.assert_array_equal(out, np.array([1, 2, 3, 4])[t] + np.array([2, 3])[t & 1] * 7)


@pytest.mark.parametrize("w", [0, 1])
def test_tables_of_function_pointers_in_device_and_constant_memory(w):
    out = np.zeros(64, np.float32)
    _run(POINTERS, "tables", 1, 64, [out, w])
    t = np.arange(64, dtype=np.float64)
    own = np.where(t.astype(int) & 1, t * 3.0, t + 3.0)
    np.testing.assert_array_equal(out, own + (10.0 if w == 0 else 7.0))


def test_a_function_pointer_chosen_per_thread_runs_both_functions_in_turn():
    """Lanes holding two addresses: each function runs for its lanes, one after the other (a divergent indirect
    call); by hand, 32 threads do 2 + t when t % 3 == 0 (11 of them) and 2 * t otherwise (21): 11 FADDs, 21 FMULs."""
    out = np.zeros(32, np.float32)
    res = _run(POINTERS, "chosen", 1, 32, [out])
    t = np.arange(32, dtype=np.float64)
    np.testing.assert_array_equal(out, np.where(t % 3 == 0, 2 + t, 2 * t))
    counts = res.counts.to_json()
    assert counts["flops"] == 32
    assert (counts["fp_ops"]["add"], counts["fp_ops"]["mul"]) == (11, 21)


def test_a_call_through_a_null_function_pointer_names_the_thread():
    out = np.zeros(4, np.float32)
    with pytest.raises(SimulationError, match=r"fp\.cu:\d+:.*indirect call .* through 0x0, which is no device "
                                              r"function's address.*thread \(1, 0, 0\), block \(0, 0, 0\)"):
        _run(POINTERS, "unset", 1, 4, [out, 1])


def test_virtual_functions_through_a_base_pointer():
    """The constructors store each object's vtable pointer (`_ZTV6Square` + 16); `p->area()` loads the function's
    address from the vtable and calls through it: odd threads a Square (i * i), even ones a Disc (3 * i * i)."""
    n = 100
    out = np.zeros(n, np.float32)
    _run(VIRTUAL, "areas", 2, 64, [out, n])
    i = np.arange(n, dtype=np.float64)
    np.testing.assert_array_equal(out, np.where(i % 2 == 1, i * i, 3 * i * i))


def test_inspect_lists_no_unsupported_instruction_for_indirect_calls(tmp_path):
    from perfmodel.compile import compile_cuda
    from perfmodel.compile.support import unsupported_opcodes

    (tmp_path / "fp.cu").write_text(VIRTUAL)
    mod = compile_cuda(tmp_path / "fp.cu")
    assert ".callprototype" in mod.ptx_body("areas")
    assert unsupported_opcodes(mod.ptx_body("areas")) == []


FROM_HOST = r"""
typedef float (*op_t)(float, float);
__device__ float add(float a, float b) { return a + b; }
__device__ float mul(float a, float b) { return a * b; }
__device__ op_t table[2];
__device__ op_t p_add = add;     // what the host reads with cudaMemcpyFromSymbol (cuda-samples' FunctionPointers)
__device__ op_t p_mul = mul;
__global__ void k(float *out, op_t post, int which)
{
    float v = table[which]((float)threadIdx.x, 3.0f);
    out[threadIdx.x] = post ? post(v, 2.0f) : v;
}
"""


@pytest.mark.parametrize("post, which, expected", [("add", 1, "t * 3 + 2"), ("0", 0, "t + 3"), ("mul", 0, "(t + 3) * 2")])
def test_function_pointers_the_host_passes_are_given_by_the_functions_names(cli, tmp_path, post, which, expected):
    """cuda-samples' FunctionPointers copies device functions' addresses out of `__device__` variables
    (cudaMemcpyFromSymbol), then passes one as a kernel argument (pointFunction_t) and copies a table of them into
    a `__device__` array: here `--arg post=add` and `--symbol 'table=uint64[2]:values=(add, mul)'`. The parameter
    of a function-pointer type reads as a 64-bit number (its mangled type PFfffE was not read before)."""
    (tmp_path / "fp.cu").write_text(FROM_HOST)
    (tmp_path / "ref.py").write_text(f"import numpy as np\ndef out(**kw):\n    t = np.arange(32.0)\n    return {expected}\n")
    code, out, err = cli("analyze", str(tmp_path / "fp.cu"), "--grid", "1", "--block", "32", "--arg", "out=float32[32]",
                         "--arg", f"post={post}", "--arg", f"which={which}", "--symbol",
                         "table=uint64[2]:values=(add, mul)", "--device", "h100", "--check",
                         f"out={tmp_path / 'ref.py'}:out", "--json")
    assert code == 0, err
    assert json.loads(out)["correct"] is True
