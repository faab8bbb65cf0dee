"""Blocks that take their work from a global counter (chai's task queues, persistent threads): ``t =
atomicAdd(next, 1)`` decides what - and whether - a block works. perfmodel first simulates one block alone (the
pilot), which then took every task: its cost times the grid triggered sampling, and the 48 sampled blocks did all
the tasks again, scaled by grid / 48 (45x the loads); a kernel whose per-block buffer holds one task faulted in the
pilot although the grid, run together, never overflows it. Counts and expectations here are derived by hand."""
from __future__ import annotations

import json

import pytest

DYN = r"""
__global__ void dyn(int *next, int ntasks, const float *in, float *out) {
    __shared__ int t;
    while (true) {
        if (threadIdx.x == 0) t = atomicAdd(next, 1);
        __syncthreads();
        if (t >= ntasks) break;
        out[t * blockDim.x + threadIdx.x] = 2.0f * in[t * blockDim.x + threadIdx.x];
        __syncthreads();
    }
}

__global__ void grab(int *head, int n, int *out) {
    __shared__ int buf[256];
    __shared__ int base, cnt;
    if (threadIdx.x == 0) { cnt = 0; base = atomicAdd(head, blockDim.x); }
    __syncthreads();
    while (base < n) {
        if (base + threadIdx.x < n) { int i = atomicAdd(&cnt, 1); buf[i] = base + threadIdx.x; }
        __syncthreads();
        if (threadIdx.x == 0) base = atomicAdd(head, blockDim.x);
        __syncthreads();
    }
    if (threadIdx.x < cnt) out[buf[threadIdx.x]] = blockIdx.x + 1;
}

__global__ void hist(const int *x, int *h, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&h[x[i] & 255], 1);
}

__global__ void compact(const int *x, int *out, int *count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 50) out[atomicAdd(count, 1)] = x[i];
}
"""

REF = r"""
def twice(out, ntasks, **kw):
    return 2.0 * kw["in"]
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "k.cu").write_text(DYN)
    (tmp_path / "ref.py").write_text(REF)
    return tmp_path


def test_tasks_from_a_counter_are_counted_once(cli, files):
    """2,048 tasks of 256 floats over 2,048 blocks: 2,048 x 8 warp load requests of 4 sectors, whatever the grid;
    the one block run alone took all 2,048 tasks, so the grid's work is its work, and the run is exact."""
    base = [str(files / "k.cu"), "--kernel", "dyn", "--block", "256", "--arg", "next=int32[1]",
            "--arg", "ntasks=2048", "--arg", "in=float32[524288]:random", "--arg", "out=float32[524288]",
            "--device", "h100", "--json"]
    code, out, err = cli("analyze", *base, "--grid", "2048", "--check", f"out={files / 'ref.py'}:twice")
    doc = json.loads(out or err)
    assert code == 0 and doc["sampled"] is False and doc["correct"] is True, doc
    g = doc["counts"]["global"]
    assert g["load_requests"] == 2048 * 8 and g["load_sectors"] == 2048 * 8 * 4
    assert g["atomic_requests"] == 2048 + 2048            # a claim per task, and each block's failed last one
    code, out, err = cli("analyze", *base, "--grid", "2048", "--sample", "32")
    assert code == 2 and "take their work from a global counter" in json.loads(out or err)["error"]["message"]


def test_a_block_alone_that_overflows_runs_with_its_grid(cli, files):
    """grab's per-block queue holds one chunk: run alone the pilot block takes all 8 chunks and overflows it
    (an out-of-bounds shared store); the 8 blocks run together take one each, as on the GPU: 2,048 stores."""
    code, out, err = cli("analyze", str(files / "k.cu"), "--kernel", "grab", "--grid", "8", "--block", "256",
                         "--arg", "head=int32[1]", "--arg", "n=2048", "--arg", "out=int32[2048]", "--device",
                         "h100", "--json")
    doc = json.loads(out or err)
    assert code == 0, doc
    assert doc["counts"]["global"]["store_requests"] == 64     # 2,048 stores, 8 warps a block
    assert doc["counts"]["global"]["atomic_requests"] == 16    # each block: one chunk and one past the end


def test_which_kernels_claim_work():
    """The value an atomic returns, used (a claim, a compaction's slot), against one dropped (a histogram)."""
    from perfmodel.analysis import _claims_work
    from perfmodel.kernel import load_kernel

    got = {name: _claims_work(load_kernel(source=DYN, path="k.cu", entry=name))
           for name in ("dyn", "grab", "hist", "compact")}
    assert got == {"dyn": True, "grab": True, "hist": False, "compact": True}
