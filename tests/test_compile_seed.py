"""The compile seed (tests/seed/make_seed.py): its records are what NVRTC and nvdisasm make now, and seeding
writes record files only, once, never over what the cache holds."""
from __future__ import annotations

import io
import json
import os
import tarfile

import pytest

from conftest import SEED, SEED_MANIFEST, seed_compile_cache, seed_matches
from perfmodel.compile import cache as compile_cache
from perfmodel.compile import nvrtc, sass
from perfmodel.spec import run

# kernels the suite analyses with these parameters (tests/test_kernel_counts.py), so the seed holds their compiles
CASES = [("matmul_naive", {"Width": 40, "BLOCK_WIDTH": 16}), ("matmul_rowwise", {"ha": 5, "wa": 7, "wb": 4})]


def _forget():
    """Drop every in-process copy of compiles and listings, so the next analysis reads the cache folder."""
    compile_cache.clear_memory()
    sass._memory.clear()
    sass._memory_flow.clear()
    from perfmodel.spec import loading

    loading._CACHE.clear()


def _analyses():
    out = []
    for name, params in CASES:
        outcome = run(name, params)
        assert outcome.check.correct, outcome.check.message
        out.append((outcome.result.counts.to_json(), outcome.result.instructions))
    return out


def test_the_seed_holds_what_nvrtc_and_nvdisasm_make_now(tmp_path, monkeypatch):
    """Analyses served from the seed alone (NVRTC and nvdisasm made to fail) count exactly what the same analyses
    count from a fresh compile in an empty cache: the seed's PTX, CUBIN and SASS listings, moved to this clone's
    folders, are the ones the installed compiler makes."""
    if seed_matches() is not True:
        pytest.skip(f"the compile seed was made with other NVIDIA wheels ({SEED_MANIFEST.name}); "
                    "python tests/seed/make_seed.py rebuilds it")
    if os.environ.get("PERFMODEL_TEST_SEED", "1") == "0":
        pytest.skip("the compile seed is off (PERFMODEL_TEST_SEED=0): tests/seed/make_seed.py is rebuilding it")
    monkeypatch.setenv("PERFMODEL_NO_CACHE", "1")
    fresh_dir, seeded_dir = tmp_path / "fresh", tmp_path / "seeded"
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(fresh_dir))
    _forget()
    fresh = _analyses()
    keys = {p.name for p in (fresh_dir / "compile").glob("*.json") if not p.name.endswith(".manifest.json")}
    with tarfile.open(SEED, "r:xz") as tar:
        held = {m.name.split("/", 1)[1] for m in tar.getmembers() if m.name.startswith("compile/")}
    assert keys and keys <= held, (f"the compile seed lacks {sorted(keys - held)}: a kernel or the compile options "
                                   "changed since it was made; python tests/seed/make_seed.py rebuilds it")

    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(seeded_dir))
    manifest = json.loads(SEED_MANIFEST.read_text())
    assert seed_compile_cache(SEED) >= manifest["compiles"] + manifest["listings"]
    _forget()

    def nothing(*args, **kwargs):
        raise AssertionError("compiled or disassembled although the seed holds the record")

    monkeypatch.setattr(nvrtc, "compile_program", nothing)
    monkeypatch.setattr(sass, "_run_nvdisasm", nothing)
    assert _analyses() == fresh
    _forget()


def _archive(members: dict[str, bytes], links: tuple[str, ...] = ()) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name in links:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
    return buf.getvalue()


def test_seeding_writes_record_files_only_once_and_never_over_a_record(tmp_path):
    key, digest = "a" * 64, "b" * 64
    archive = tmp_path / "seed.tar.xz"
    archive.write_bytes(_archive(
        {f"compile/{key}.json": b'{"seed": 1}', f"compile/{key}.cubin": b"\x7fELF", f"sass/{digest}.sass": b"listing",
         "../outside.json": b"x", f"compile/{key}.py": b"x", "compile/short.json": b"x", "notes.txt": b"x"},
        links=(f"sass/{'c' * 64}.sass",)))
    cache = tmp_path / "cache"
    (cache / "compile").mkdir(parents=True)
    (cache / "compile" / f"{key}.cubin").write_bytes(b"already here")
    assert seed_compile_cache(archive, cache) == 2
    assert (cache / "compile" / f"{key}.json").read_bytes() == b'{"seed": 1}'
    assert (cache / "compile" / f"{key}.cubin").read_bytes() == b"already here"       # never overwritten
    assert (cache / "sass" / f"{digest}.sass").read_text() == "listing"
    assert not (tmp_path / "outside.json").exists() and not (cache / "notes.txt").exists()
    assert sorted(p.name for p in cache.rglob("*") if p.is_file() and not p.name.startswith(".seeded-")) == \
        sorted([f"{key}.json", f"{key}.cubin", f"{digest}.sass"])
    (cache / "compile" / f"{key}.json").unlink()
    assert seed_compile_cache(archive, cache) == 0          # the marker: this archive was seeded already
    assert seed_compile_cache(tmp_path / "missing.tar.xz", cache) == 0
    (tmp_path / "broken.tar.xz").write_bytes(b"not xz")
    assert seed_compile_cache(tmp_path / "broken.tar.xz", cache) == 0
