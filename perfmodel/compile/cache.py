"""Compile cache: in process (LRU) and on disk.

The key is the sha256 of the exact text NVRTC compiles (the user's file after host code is set aside, with every
local header inlined, so every included file's content is in it), the options (architecture, -D, include
folders), the name expressions, the NVRTC version, the versions of the header wheels (CCCL, CRT, runtime, cuRAND)
and the cache format version.

On disk: ``<dir>/compile/<key>.json`` (PTX, log, lowered names) and ``<key>.cubin``, where ``<dir>`` is
``$PERFMODEL_CACHE_DIR`` or ``platformdirs.user_cache_dir("perfmodel")``. Writes go through a temporary file and
``os.replace``, so concurrent processes never read half a file. A broken entry is ignored and rewritten.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

MEMORY_ENTRIES = 64
_memory: OrderedDict[str, "Record"] = OrderedDict()


@dataclass
class Record:
    ptx: str
    log: str
    lowered: dict[str, str] = field(default_factory=dict)
    cubin: bytes | None = None


def cache_dir() -> Path:
    env = os.environ.get("PERFMODEL_CACHE_DIR")
    if env:
        return Path(env)
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("perfmodel"))
    except ImportError:
        return Path.home() / ".cache" / "perfmodel"


@functools.lru_cache(maxsize=1)
def header_wheel_versions() -> dict[str, str]:
    """Versions of the wheels whose headers NVRTC reads (they can change without NVRTC changing)."""
    from importlib import metadata

    versions = {}
    for dist in ("nvidia-cuda-cccl", "nvidia-cuda-crt", "nvidia-cuda-runtime", "nvidia-curand"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = ""
    return versions


def cache_key(text: str, options: list[str], exprs, nvrtc_version, fmt: int) -> str:
    h = hashlib.sha256()
    payload = json.dumps({"options": options, "exprs": [e for e, _ in exprs], "nvrtc": list(nvrtc_version),
                          "headers": header_wheel_versions(), "format": fmt}, sort_keys=True)
    h.update(payload.encode())
    h.update(b"\0")
    h.update(text.encode())
    return h.hexdigest()


def lookup(key: str) -> Record | None:
    rec = _memory.get(key)
    if rec is not None:
        _memory.move_to_end(key)
        return rec
    folder = cache_dir() / "compile"
    try:
        data = json.loads((folder / f"{key}.json").read_text())
        rec = Record(ptx=data["ptx"], log=data["log"], lowered=dict(data["lowered"]))
        cubin_path = folder / f"{key}.cubin"
        if data.get("cubin"):
            rec.cubin = cubin_path.read_bytes()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    _remember(key, rec)
    return rec


def store(key: str, rec: Record) -> None:
    _remember(key, rec)
    folder = cache_dir() / "compile"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if rec.cubin is not None:
            _atomic_write(folder / f"{key}.cubin", rec.cubin)
        data = {"ptx": rec.ptx, "log": rec.log, "lowered": rec.lowered, "cubin": rec.cubin is not None}
        _atomic_write(folder / f"{key}.json", json.dumps(data).encode())
    except OSError:
        pass   # a read-only or full cache folder only costs speed


def clear_memory() -> None:
    _memory.clear()


def _remember(key: str, rec: Record) -> None:
    _memory[key] = rec
    _memory.move_to_end(key)
    while len(_memory) > MEMORY_ENTRIES:
        _memory.popitem(last=False)


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
