"""Human units in device profiles (perfmodel.units): memory sizes binary, rates decimal."""
from __future__ import annotations

import pytest

from perfmodel.units import (UnitError, format_bandwidth, format_bytes, parse_int_quantity,
                             parse_quantity)


@pytest.mark.parametrize("text, kind, expected", [
    ("16 KiB", "bytes", 16384),
    ("16 KB", "bytes", 16384),  # KB = 1024 B, the reference's convention for memory sizes
    ("16KB", "bytes", 16384),
    ("48K", "bytes", 49152),
    ("1.5 MB", "bytes", 1572864),
    ("40 MB", "bytes", 41943040),
    ("50 MiB", "bytes", 52428800),
    ("512 B", "bytes", 512),
    ("512", "bytes", 512),
    (16384, "bytes", 16384),
    ("86.4 GB/s", "bandwidth", 86.4e9),  # rates are decimal
    ("3.35 TB/s", "bandwidth", 3.35e12),
    ("1555 GB/s", "bandwidth", 1555e9),
    ("4 GiB/s", "bandwidth", 4 * 2**30),
    ("1.35 GHz", "frequency", 1.35e9),
    ("1350 MHz", "frequency", 1.35e9),
    ("732 MHz", "frequency", 732e6),
    ("346.5 GFLOPS", "flops", 346.5e9),
    ("19.5 TFLOPS", "flops", 19.5e12),
    ("66.9 TFLOPS", "flops", 66.9e12),
    ("100 GFLOP/s", "flops", 100e9),
    ("8K", "count", 8192),  # "8K registers"
    ("64K", "count", 65536),
    (1.5e9, "frequency", 1.5e9),
])
def test_parse(text, kind, expected):
    assert parse_quantity(text, kind) == expected


def test_decimal_prefixes_are_exact():
    # 66.9 x 1e12 in binary floating point is 66900000000000.01; the parser works in decimal.
    assert parse_quantity("66.9 TFLOPS", "flops") == 66.9e12


@pytest.mark.parametrize("text, kind", [
    ("lots", "count"), ("16 furlongs", "bytes"), ("86.4 GHz", "bandwidth"), ("1.35 GB", "frequency"),
    ("12 KB", "flops"), (True, "bytes"), (None, "bytes"), ("", "bytes"), ("nan", "bytes"),
])
def test_rejects(text, kind):
    with pytest.raises(UnitError, match="expected"):
        parse_quantity(text, kind)


def test_whole_numbers():
    assert parse_int_quantity("0.5 KiB", "bytes") == 512
    with pytest.raises(UnitError, match="whole"):
        parse_int_quantity("1.5", "bytes")


def test_format():
    assert format_bytes(16384) == "16 KiB"
    assert format_bytes(233472) == "228 KiB"
    assert format_bytes(52428800) == "50 MiB"
    assert format_bytes(1000) == "1000 B"
    assert format_bandwidth(86.4e9) == "86.4 GB/s"
