"""The seed slides' CGMA model, reproduced exactly (lectures "CUDA memories" and "tiled matrix multiply")."""
import pytest

from perfmodel.model.seed import achievable_gflops, cgma, required_cgma, seed_model


def test_generic_example_200_gb_per_s():
    # "200 GB/s ... no more than 50 (200/4) giga single-precision operands per second"; CGMA 1 -> 50 GFLOPS
    assert achievable_gflops(1.0, 1500.0, 200.0) == pytest.approx(50.0)
    # "to achieve the peak 1,500 GFLOPS rating of the processor, we need a CGMA value of 30"
    assert required_cgma(1500.0, 200.0) == pytest.approx(30.0)
    assert achievable_gflops(30.0, 1500.0, 200.0) == pytest.approx(1500.0)


def test_g80_naive_and_tiled_bounds():
    # G80: 86.4 GB/s, 346.5 GFLOPS peak; naive CGMA 1 -> 21.6 GFLOPS; 16x16 tiles -> 345.6 (below the peak)
    assert achievable_gflops(1.0, 346.5, 86.4) == pytest.approx(21.6)
    assert achievable_gflops(16.0, 346.5, 86.4) == pytest.approx(345.6)
    assert achievable_gflops(32.0, 346.5, 86.4) == pytest.approx(346.5)


def test_cgma_counts_loads_and_reports_stores_beside_it():
    # naive matmul W=4: 2 W^3 flops, 2 W^3 loads, W^2 stores
    w = 4
    result = seed_model(2 * w**3, 2 * w**3, w**2, 346.5e9, 86.4e9)
    assert result.cgma == pytest.approx(1.0)
    assert result.cgma_with_stores == pytest.approx(2 * w**3 / (2 * w**3 + w**2))
    assert result.achievable_gflops == pytest.approx(21.6)
    assert result.bound == "memory bandwidth"
    assert cgma(10, 0) is None
    assert seed_model(10, 0, 0, 346.5e9, 86.4e9).achievable_gflops == pytest.approx(346.5)
