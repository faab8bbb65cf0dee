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
    n = 1 << 23                                     # 96 MiB: a previous launch leaves 50 MiB of it
    warm = analyze("vec_add", "h100", {"N": n}, l2="warm").model.traffic
    l2 = 50 * 2 ** 20
    cold_share = 1 - l2 / (12 * n)
    assert warm.dram_read_bytes == pytest.approx(cold_share * 8 * n)
    assert warm.dram_write_bytes == pytest.approx(cold_share * 4 * n)


def test_bad_l2_state_is_a_one_line_error(monkeypatch, capsys):
    from conftest import run_cli

    code, out, err = run_cli(monkeypatch, capsys, "analyze", "vec_add", "--device", "h100", "--l2", "tepid")
    assert code == 2
    assert "--l2 'tepid'" in out + err and "Traceback" not in out + err
