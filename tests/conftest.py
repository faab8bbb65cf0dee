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


@pytest.fixture
def no_sass_weights(monkeypatch):
    """For tests of what the PTX computes and counts, not the SASS-weighted issue count: no SASS weights (loops
    are still grouped as the SASS issues them, so nvdisasm still runs once per compiled kernel)."""
    monkeypatch.setattr("perfmodel.kernel._sass_weights", lambda *args, **kwargs: None)


@pytest.fixture
def ptx_only(no_sass_weights, monkeypatch):
    """For tests of what the PTX computes, not how the SASS issues it: no nvdisasm run per compiled kernel (0.2-0.3 s
    each with a cold compile cache) - no SASS weights, and loops grouped as the PTX has them (what perfmodel does
    without nvdisasm; the SASS grouping has its own tests, tests/test_regroup.py)."""
    monkeypatch.setattr("perfmodel.compile.sass.kernel_flow", lambda *args, **kwargs: None)


@pytest.fixture(autouse=True, scope="session")
def _private_result_cache(tmp_path_factory):
    """Every test session uses a fresh result cache of its own (never the user's ~/.cache/perfmodel/results);
    the compile cache is left where it is."""
    import os

    folder = tmp_path_factory.mktemp("perfmodel-result-cache")
    old = os.environ.get("PERFMODEL_RESULT_CACHE_DIR")
    os.environ["PERFMODEL_RESULT_CACHE_DIR"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("PERFMODEL_RESULT_CACHE_DIR", None)
    else:
        os.environ["PERFMODEL_RESULT_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def h100_accuracy(tmp_path_factory, worker_id):
    """:func:`_h100_accuracy`, built once per test session: under pytest-xdist the first worker to ask builds it and
    leaves it (pickled) in the session's shared temporary folder, the others wait on a file lock and load it."""
    try:
        import fcntl
    except ImportError:         # no POSIX file locks (Windows): each worker builds its own
        fcntl = None
    if worker_id == "master" or fcntl is None:
        return _h100_accuracy()
    import pickle

    shared = tmp_path_factory.getbasetemp().parent
    done = shared / "h100_accuracy.pickle"
    with open(shared / "h100_accuracy.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if done.is_file():
                return pickle.loads(done.read_bytes())
            result = _h100_accuracy()
            done.write_bytes(pickle.dumps(result))
            return result
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _h100_accuracy():
    """``accuracy(validation/h100.json)`` once per session (about a minute), and each case's (launch, sim) - inputs
    left out - for the tests that refit a constant on these cases without simulating them again
    (tests/test_accuracy.py, tests/test_heldout.py). Keys: the case id."""
    import dataclasses
    from pathlib import Path

    from perfmodel.analysis import analyze
    from perfmodel.gpu.accuracy import accuracy, case_id

    kept = {}

    def capture(kernel, device, params=None, **kwargs):
        result = analyze(kernel, device, params, **kwargs)
        cid = case_id({"kernel": kernel, "overrides": params or {}})
        kept[cid] = (dataclasses.replace(result.launch, args=[], constants={}), result.sim)
        return result

    report = accuracy(Path(__file__).resolve().parent.parent / "validation" / "h100.json", analyze=capture)
    return report, kept
