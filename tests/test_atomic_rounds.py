"""Atomics with many lanes on few addresses (perfmodel/sim/memory.py ``_apply_atomic``): every lane's old value and
the final memory equal a plain Python loop over the lanes in lane order with the C semantics of each CUDA atomic
(CUDA C Programming Guide, "Atomic Functions"), for one and for several contended addresses."""
from __future__ import annotations

import numpy as np
import pytest

from perfmodel.sim.memory import _apply_atomic


def _reference(mem, idx, b, c, op):
    mem = [int(x) for x in mem]
    old = []
    for k, (i, v) in enumerate(zip(idx.tolist(), b.tolist())):
        cur = mem[i]
        old.append(cur)
        if op == "min":
            new = min(cur, v)
        elif op == "max":
            new = max(cur, v)
        elif op == "and":
            new = cur & v
        elif op == "or":
            new = cur | v
        elif op == "xor":
            new = cur ^ v
        elif op == "exch":
            new = v
        elif op == "cas":
            new = int(c[k]) if cur == v else cur
        elif op == "inc":
            new = 0 if cur >= v else cur + 1
        else:   # dec
            new = v if (cur == 0 or cur > v) else cur - 1
        mem[i] = new
    return old, mem


@pytest.mark.parametrize("op", ["min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec"])
@pytest.mark.parametrize("addresses", [1, 3])
def test_contended_atomics_follow_lane_order(op, addresses):
    rng = np.random.default_rng(7)
    n = 2000                                   # over 64 lanes per address: the per-address scan path
    idx = rng.integers(0, addresses, n)
    b = rng.integers(0, 50, n).astype(np.uint32)
    c = rng.integers(0, 50, n).astype(np.uint32)
    start = rng.integers(0, 50, 4).astype(np.uint32)
    view = start.copy()
    old = _apply_atomic(view, idx, b, c if op == "cas" else None, op, np.dtype(np.uint32))
    ref_old, ref_mem = _reference(start, idx, b, c, op)
    assert old.tolist() == ref_old
    assert view.tolist() == ref_mem


@pytest.mark.parametrize("case", ["loop", "chain", "mixed"])
def test_compare_and_swap_of_one_address_in_lane_order(case):
    """The lanes of one address compare-and-swap one after another: checked against a plain sequential loop over
    the lanes (the PTX ISA's atom.cas: the old value back, the swap where it equals the compare). A CAS loop's
    round (every lane compares with the same stale value: one succeeds), a chain where every lane succeeds (more
    than the 64 vectorised searches), and random compares over a few values."""
    from perfmodel.sim.memory import _apply_atomic

    rng = np.random.default_rng(7)
    n = 500
    if case == "loop":
        compare = np.full(n, 3, np.int32)
        swap = rng.integers(0, 100, n).astype(np.int32)
    elif case == "chain":
        compare = np.arange(n, dtype=np.int32)
        swap = compare + 1
    else:
        compare = rng.integers(0, 4, n).astype(np.int32)
        swap = rng.integers(0, 4, n).astype(np.int32)
    start = 0 if case == "chain" else 3
    view = np.array([9, start, 9], np.int32)
    old = _apply_atomic(view, np.ones(n, np.int64), compare, swap, "cas", np.dtype(np.int32))
    cur, want = start, []
    for x, c in zip(compare.tolist(), swap.tolist()):
        want.append(cur)
        cur = c if cur == x else cur
    assert old.tolist() == want and view.tolist() == [9, cur, 9]
