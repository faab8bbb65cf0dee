"""Helpers shared by the test modules."""
from __future__ import annotations

import gc
import hashlib
import io
import json
import os
import re
import sys
import tarfile
from pathlib import Path

import pytest

SEED = Path(__file__).resolve().parent / "seed" / "compile-seed.tar.xz"
SEED_MANIFEST = SEED.with_name("compile-seed.json")
SEED_MEMBER = re.compile(r"(compile/[0-9a-f]{64}\.(json|cubin)|sass/[0-9a-f]{64}\.sass)")


def pytest_configure(config):
    """Before any test (in pytest-xdist's controller, before the workers start): fill the compile cache from the
    compile seed, if it was made with the installed NVIDIA wheels (tests/seed/make_seed.py says what it is and when
    to rebuild it). ``PERFMODEL_TEST_SEED=0`` turns it off, as make_seed.py does. In a worker: :func:`_end_worker`
    is its last exit handler."""
    if hasattr(config, "workerinput"):
        import atexit

        atexit.register(_end_worker)
        return
    if os.environ.get("PERFMODEL_TEST_SEED", "1") == "0":
        return
    if seed_matches() is True:
        seed_compile_cache(SEED)


def _end_worker() -> None:
    """End a pytest-xdist worker without the interpreter's teardown, which frees its objects one by one: the
    controller waited 1.3 s after the workers' last test for their processes to end (0.6 s with this). Runs as the
    worker's last exit handler, after its results went to the controller; the other exit handlers run first, so
    that nothing else registered there (coverage's data file, logging) is skipped."""
    import atexit

    atexit.unregister(_end_worker)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


def pytest_collection_finish(session):
    """The modules and test items loaded so far live as long as the session: move them to the garbage collector's
    permanent generation (``gc.freeze``), so that its full collections stop scanning them again and again, and
    collect the youngest generation every 10,000 allocations rather than 700, as the console script does after
    its imports (perfmodel/cli/entry.py): the simulator allocates and frees arrays at a high rate, almost none in
    cycles. The collector's time in the two workers, measured with ``gc.callbacks``: 4.4 s before, 1.5 s after.
    Everything the tests make is still collected."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, *gc.get_threshold()[1:])


def seed_key() -> dict:
    """What a compile record's key holds of the installed compiler (perfmodel/compile/cache.py): the NVRTC version,
    the NVIDIA wheels with their versions and the cache format."""
    from perfmodel.compile import cache, nvrtc
    from perfmodel.compile.compiler import FORMAT_VERSION

    return {"nvrtc": list(nvrtc.version()), "headers": cache.header_wheel_versions(), "format": FORMAT_VERSION}


def seed_matches() -> bool | None:
    """True if the seed was made with the installed NVRTC and wheels (else its keys never match), False if not,
    None if there is no seed or no NVRTC."""
    try:
        seed = json.loads(SEED_MANIFEST.read_text())
        now = seed_key()
    except Exception:         # no seed, a broken manifest, no NVRTC: the compile tests skip and say why
        return None
    return all(seed.get(k) == v for k, v in now.items())


def seed_compile_cache(archive: Path, folder: Path | None = None) -> int:
    """Copy the seed's records into the compile cache ``folder`` (default: perfmodel's, ``$PERFMODEL_CACHE_DIR``
    honoured) where that key has no record yet; returns how many were written. A marker named by the archive's
    digest makes later sessions skip the work. A missing archive or an unwritable cache costs only speed."""
    from perfmodel.compile.cache import cache_dir

    try:
        data = archive.read_bytes()
    except OSError:
        return 0
    folder = Path(folder) if folder is not None else cache_dir()
    marker = folder / "compile" / f".seeded-{hashlib.sha256(data).hexdigest()[:16]}"
    if marker.exists():
        return 0
    written = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as tar:
            for member in tar.getmembers():
                if not member.isfile() or not SEED_MEMBER.fullmatch(member.name):
                    continue          # only record files, by name: nothing else is ever written
                dest = folder / member.name
                if dest.exists():
                    continue
                dest.parent.mkdir(parents=True, exist_ok=True)
                tmp = dest.with_name(f"{dest.name}.{os.getpid()}.seed.tmp")
                tmp.write_bytes(tar.extractfile(member).read())
                os.replace(tmp, dest)  # a concurrent reader sees the whole file or none
                written += 1
        marker.touch()
    except (OSError, tarfile.TarError, EOFError):
        pass
    return written


def pytest_report_header(config):
    try:
        seed = json.loads(SEED_MANIFEST.read_text())
    except (OSError, ValueError):
        return None
    made = f"NVRTC {'.'.join(map(str, seed.get('nvrtc', [])))}"
    fit = {True: "matches the installed wheels", False: "made with other wheels, so unused "
           "(python tests/seed/make_seed.py rebuilds it)", None: "no NVRTC"}[seed_matches()]
    state = "" if os.environ.get("PERFMODEL_TEST_SEED", "1") != "0" else "; off (PERFMODEL_TEST_SEED=0)"
    return f"compile seed: {seed.get('compiles')} compiles, {seed.get('listings')} SASS listings ({made}; {fit}){state}"


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
