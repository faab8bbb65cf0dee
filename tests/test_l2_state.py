"""--l2 cold|warm: the DRAM traffic of a launch with nothing resident in L2 and after an identical launch, worked
out by hand for vec_add (C = A + B: 12 bytes per element, every byte touched once)."""
import pytest

from perfmodel.analysis import analyze


def test_vec_add_cold_and_warm():
    n = 1 << 20                                     # 12 MiB footprint, the H100's L2 is 50 MiB: all resident
    cold = analyze("vec_add", "h100", {"N": n}).model.traffic
    warm = analyze("vec_add", "h100", {"N": n}, l2="warm").model.traffic
    assert (cold.dram_read_bytes, cold.dram_write_bytes) == (8 * n, 4 * n)
    assert (warm.dram_read_bytes, warm.dram_write_bytes) == (0, 0)


def test_vec_add_warm_larger_than_l2():
    # 96 MiB swept in the same order by the previous launch: with LRU replacement its last 50 MiB are in L2, and
    # each of them is evicted by this launch's first 50 MiB before it is reached - nothing is reused, as cold
    # (measured: footprints 1.07-15x the L2 run warm at 0.93-1.09x their cold time, docs/model.md "L2 state")
    n = 1 << 23
    warm = analyze("vec_add", "h100", {"N": n}, l2="warm").model.traffic
    assert (warm.dram_read_bytes, warm.dram_write_bytes) == (8 * n, 4 * n)


def test_bad_l2_state_is_a_one_line_error(monkeypatch, capsys):
    from conftest import run_cli

    code, out, err = run_cli(monkeypatch, capsys, "analyze", "vec_add", "--device", "h100", "--l2", "tepid")
    assert code == 2
    assert "--l2 'tepid'" in out + err and "Traceback" not in out + err
