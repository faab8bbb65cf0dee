"""Locks between blocks: the executor runs a batch of blocks' threads in lockstep, so a thread that takes a lock
and goes on waits where the batch's threads reconverge while the others spin on the lock it holds. Such a batch
comes back to its loop with nothing changed (machine._check_stuck) and is run again one block at a time, as a GPU
may run the blocks; a lock between threads of one block is refused at once, saying why."""
from __future__ import annotations

import json

import numpy as np

LOCKED_DOT = """
struct Lock {
    int *mutex;
    __device__ void lock() { while (atomicCAS(mutex, 0, 1) != 0); }
    __device__ void unlock() { atomicExch(mutex, 0); }
};
__global__ void dot(const float *a, const float *b, float *c, int *mutex, int n) {
    __shared__ float cache[64];
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    float temp = 0;
    while (tid < n) { temp += a[tid] * b[tid]; tid += blockDim.x * gridDim.x; }
    cache[threadIdx.x] = temp;
    __syncthreads();
    for (int i = blockDim.x / 2; i != 0; i /= 2) {
        if (threadIdx.x < i) cache[threadIdx.x] += cache[threadIdx.x + i];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        Lock l{mutex};
        l.lock();
        *c += cache[0];
        __threadfence();
        l.unlock();
    }
}
"""


def test_a_lock_between_blocks_runs_as_a_gpu_runs_it(cli, tmp_path):
    """CUDA by Example's dot product with an atomic lock (appendix A): thread 0 of each block adds its block's sum
    under a lock. Run in one lockstep batch it never ended (13 minutes before the step limit); now the batch is
    found spinning with nothing changing and the blocks run one at a time: the sum is numpy's, every block's
    partial sum added once, and the lock is free at the end."""
    (tmp_path / "dot.cu").write_text(LOCKED_DOT)
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, 4096).astype(np.float32)
    b = rng.uniform(-1, 1, 4096).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    np.save(tmp_path / "c.npy", np.array([np.dot(a.astype(np.float64), b)], np.float32))
    np.save(tmp_path / "m.npy", np.zeros(1, np.int32))
    code, out, err = cli("analyze", str(tmp_path / "dot.cu"), "--grid", "8", "--block", "64", "--arg",
                         f"a=float32[4096]:file={tmp_path / 'a.npy'}", "--arg",
                         f"b=float32[4096]:file={tmp_path / 'b.npy'}", "--arg", "c=float32[1]", "--arg",
                         "mutex=int32[1]", "--arg", "n=4096", "--check", f"c={tmp_path / 'c.npy'}", "--check",
                         f"mutex={tmp_path / 'm.npy'}", "--rtol", "1e-4", "--device", "h100", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["correct"] is True, doc["correct_detail"]
    assert any("one at a time" in n for n in doc["simulation_notes"]), doc["simulation_notes"]
    assert doc["counts"]["global"]["atomics"] >= 16      # 8 blocks: a lock and an unlock each, at the least


def test_a_lock_between_threads_of_one_block_is_refused_at_once(cli, tmp_path):
    """Every thread of a block takes the same lock: in lockstep the winner waits at the loop's exit for the others,
    which spin for ever (as on GPUs before Volta). Refused when the loop is seen back with nothing changed, long
    before the step limit, saying so."""
    (tmp_path / "lock.cu").write_text(
        "__global__ void k(int *mutex, int *count) {\n"
        "    while (atomicCAS(mutex, 0, 1) != 0);\n"
        "    *count += 1;\n"
        "    atomicExch(mutex, 0);\n}\n")
    code, out, err = cli("analyze", str(tmp_path / "lock.cu"), "--grid", "1", "--block", "32", "--arg",
                         "mutex=int32[1]", "--arg", "count=int32[1]", "--device", "h100")
    assert code == 2
    assert "lock.cu:2" in err and "nothing changing" in err and "Volta" in err, err


CHAIN = """__global__ void chain(int *flags, int ntasks, int *out) {
    for (int t = blockIdx.x; t < ntasks; t += gridDim.x) {
        if (threadIdx.x == 0) {
            while (atomicAdd(&flags[t], 0) == 0) { }
            out[t] = t + 1;
            atomicAdd(&flags[t + 1], 1);
        }
        __syncthreads();
    }
}
"""


def test_blocks_that_take_turns_are_refused_saying_so(cli, tmp_path):
    """chai's PAD and SC: task t waits for task t - 1's flag, tasks dealt round-robin to the blocks, so with 2
    blocks for 4 tasks each block waits for the other between its own. In lockstep the batch spins, and one block
    at a time waits for a block not yet run: the message said "another thread of its block" and ended mid-phrase.
    With one task a block it runs: out = t + 1 for t = 0..3, 4 stores."""
    (tmp_path / "chain.cu").write_text(CHAIN)
    base = [str(tmp_path / "chain.cu"), "--block", "32", "--arg", "flags=int32[5]:values=(1, 0, 0, 0, 0)",
            "--arg", "ntasks=4", "--arg", "out=int32[4]", "--device", "h100"]
    code, out, err = cli("analyze", *base, "--grid", "2")
    assert code == 2 and "chain.cu:4" in err and "blocks wait on each other here" in err, err
    assert "another thread of its block" not in err
    code, out, err = cli("analyze", *base, "--grid", "4", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["counts"]["global"]["store_requests"] == 4, doc
