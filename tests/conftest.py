"""Helpers shared by the test modules."""
from __future__ import annotations

import sys

import pytest


def run_cli(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """Run ``perfmodel ARGS...`` in-process: (exit code, stdout, stderr)."""
    from perfmodel.cli.main import main

    monkeypatch.setattr(sys, "argv", ["perfmodel", *map(str, args)])
    with pytest.raises(SystemExit) as info:
        main()
    out, err = capsys.readouterr()
    return (0 if info.value.code is None else int(info.value.code)), out, err


@pytest.fixture
def cli(monkeypatch, capsys):
    """``cli("analyze", "matmul_tiled", ...)`` -> (exit code, stdout, stderr)."""
    return lambda *args: run_cli(monkeypatch, capsys, *args)
