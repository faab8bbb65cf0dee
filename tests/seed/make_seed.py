"""Rebuild the test suite's compile seed (``tests/seed/compile-seed.tar.xz`` and ``compile-seed.json``).

A cold run of the README test command spends 45% of its CPU time in NVRTC (about 350 compiles) and nvdisasm
(about 220 listings at 0.12-0.20 s of start-up each), all of which a second run finds in the compile cache. The
seed is that cache, made by running the whole suite once with an empty cache folder: ``tests/conftest.py`` copies
its records into the compile cache before the tests start (never over a record that is there), so a first run on
a new machine compiles only what the seed lacks. The records are found only under their own keys, which hold the
NVRTC version, the header wheels' versions and the exact text compiled (perfmodel/compile/cache.py), so a seed
made with other wheels could never be used: conftest.py then copies nothing (``compile-seed.json`` names the
wheels), and the suite compiles everything, as it would without a seed.
``tests/test_compile_seed.py`` checks that the records are what NVRTC and nvdisasm make now.

Run it after the NVIDIA wheels or the tests' kernels change (about 80 s on 2 cores); not otherwise: the records
carry ptxas's compile time and pytest's temporary folders, so every rebuild changes the archive's bytes::

    python tests/seed/make_seed.py
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest import SEED as ARCHIVE  # noqa: E402
from conftest import SEED_MANIFEST as MANIFEST  # noqa: E402
from conftest import SEED_MEMBER, seed_key  # noqa: E402


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="perfmodel-seed-") as tmp:
        env = dict(os.environ, PERFMODEL_CACHE_DIR=tmp, PERFMODEL_TEST_SEED="0")
        rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ROOT,
                            env=env).returncode
        if rc != 0:
            print(f"the test suite failed (exit code {rc}): no seed written", file=sys.stderr)
            return 1
        names = sorted(str(p.relative_to(tmp)) for p in Path(tmp).rglob("*")
                       if p.is_file() and SEED_MEMBER.fullmatch(str(p.relative_to(tmp))))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:xz", preset=9) as tar:
            for name in names:                 # sorted, no times or owners
                data = (Path(tmp) / name).read_bytes()
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(data), 0o644, 0
                tar.addfile(info, io.BytesIO(data))
    ARCHIVE.write_bytes(buf.getvalue())
    manifest = {**seed_key(), "compiles": sum(n.endswith(".json") for n in names),
                "listings": sum(n.endswith(".sass") for n in names),
                "made_with": "python tests/seed/make_seed.py"}
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{ARCHIVE.relative_to(ROOT)}: {manifest['compiles']} compiles, {manifest['listings']} SASS listings, "
          f"{len(buf.getvalue()) / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
