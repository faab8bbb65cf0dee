"""The on-disk result cache of ``sweep``, ``compare`` and ``check``: one analysis document per point.

A point is (kernel spec, params, device, registers, sample, exact budget, L2 state). Its key is a SHA-256 over
everything that can change the numbers:

- perfmodel's version **and** a hash of the source of every module of the ``perfmodel`` package (an engine or
  model change, even without a version bump, never serves old numbers);
- the spec file's bytes, the CUDA source's bytes and the bytes of every header it includes with ``#include
  "..."`` (followed recursively, relative to the including file);
- the device profile's full content (every value, not its name);
- the params, ``--regs``, ``--sample``, the exact-simulation budget and the L2 state at launch (``--l2``:
  ``cold`` or ``warm``; a warm result is never served for a cold request, nor the other way round).

The value is the analysis document (``Analysis.to_json()``) as JSON text; a point computed now goes through the
same JSON round trip before it is used, so a cached re-run and an uncached run give identical numbers.

Where: ``$PERFMODEL_RESULT_CACHE_DIR``, else ``results/`` in perfmodel's cache folder (``$PERFMODEL_CACHE_DIR``,
else the user cache folder from ``platformdirs``: ``~/.cache/perfmodel/results`` on Linux).
``PERFMODEL_NO_CACHE=1`` or ``--no-cache`` turns it off. Storage is ``diskcache`` (SQLite; safe to share between
processes, so parallel and Dask workers on one machine share it).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

CACHE_ENV = "PERFMODEL_CACHE_DIR"
RESULT_CACHE_ENV = "PERFMODEL_RESULT_CACHE_DIR"
NO_CACHE_ENV = "PERFMODEL_NO_CACHE"
#: bump when the layout of a cached value changes
SCHEMA = 1
SIZE_LIMIT = 2 ** 30   # 1 GiB; diskcache evicts the least recently used entries beyond it

_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def cache_dir() -> Path:
    """``$PERFMODEL_RESULT_CACHE_DIR``, else ``results/`` in perfmodel's cache folder (``$PERFMODEL_CACHE_DIR``,
    else the user cache folder), beside the compile cache's ``compile/``."""
    configured = os.environ.get(RESULT_CACHE_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    root = os.environ.get(CACHE_ENV, "").strip()
    if root:
        return Path(root).expanduser() / "results"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("perfmodel")) / "results"


def cache_disabled_by_env() -> bool:
    return os.environ.get(NO_CACHE_ENV, "").strip().lower() not in ("", "0", "false", "no")


@lru_cache(maxsize=1)
def package_fingerprint() -> str:
    """perfmodel's version and a hash of the source of every ``.py`` file of the package (sorted by path)."""
    from perfmodel import __version__

    root = Path(__file__).resolve().parent
    digest = hashlib.sha256(f"perfmodel {__version__} schema {SCHEMA}\n".encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:16]}"


def _source_closure(path: Path, seen: set[Path] | None = None, depth: int = 0) -> list[Path]:
    """``path`` and, recursively, the files it includes with ``#include "..."`` that exist beside it."""
    seen = set() if seen is None else seen
    path = path.resolve()
    if path in seen or depth > 16 or not path.is_file():
        return []
    seen.add(path)
    files = [path]
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return files
    for name in _INCLUDE.findall(text):
        files += _source_closure(path.parent / name, seen, depth + 1)
    return files


def spec_fingerprint(spec) -> str:
    """A hash of the spec file and the CUDA sources it compiles (the files' bytes, not their times)."""
    digest = hashlib.sha256()
    for path in [Path(spec.path)] + _source_closure(Path(spec.source_path)):
        digest.update(path.name.encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"<unreadable>")
        digest.update(b"\0")
    return digest.hexdigest()


def device_fingerprint(device) -> str:
    return hashlib.sha256(device.model_dump_json().encode()).hexdigest()


def point_key(spec, device, params: dict, regs, sample, exact_budget, l2: str = "cold") -> str:
    """The cache key of one point (see the module docstring for what goes in). ``l2`` is the L2 state at launch,
    ``cold`` or ``warm``: part of every key, so the two states never share an entry."""
    if l2 not in ("cold", "warm"):
        raise ValueError(f"L2 state {l2!r}: expected 'cold' or 'warm'")
    doc = {"perfmodel": package_fingerprint(), "spec": spec_fingerprint(spec), "device": device_fingerprint(device),
           "params": {str(k): params[k] for k in sorted(params)}, "regs": regs, "sample": sample,
           "exact_budget": exact_budget, "l2": l2}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def normalise(doc: dict) -> dict:
    """The JSON round trip every document goes through, cached or not (so both give the same numbers)."""
    return json.loads(json.dumps(doc, allow_nan=True))


def is_entry(value) -> bool:
    """A cache entry: ``{"valid", "reason", "doc"}`` (the analysis document, or None with the reason a point
    cannot run). The same entries serve ``sweep``, ``compare`` and ``check``."""
    return (isinstance(value, dict) and isinstance(value.get("valid"), bool) and "reason" in value
            and (isinstance(value.get("doc"), dict) if value["valid"] else True))


class ResultCache:
    """A ``diskcache.Cache`` of analysis documents; ``enabled=False`` makes every call a miss and stores nothing."""

    def __init__(self, directory: Path | str | None = None, enabled: bool = True):
        self.enabled = enabled and not cache_disabled_by_env()
        self.directory = Path(directory) if directory is not None else cache_dir()
        self._cache = None
        self.hits = 0
        self.misses = 0

    def _open(self):
        if self._cache is None:
            import diskcache

            self.directory.mkdir(parents=True, exist_ok=True)
            self._cache = diskcache.Cache(str(self.directory), size_limit=SIZE_LIMIT)
        return self._cache

    def get(self, key: str) -> dict | None:
        if not self.enabled:
            return None
        try:
            text = self._open().get(key)
        except Exception:   # a broken or locked cache is a miss, never an error
            text = None
        if text is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(text)

    def put(self, key: str, doc: dict) -> None:
        if not self.enabled:
            return
        try:
            self._open().set(key, json.dumps(doc, allow_nan=True))
        except Exception:   # a full disk or a read-only cache folder: the result is still returned
            pass

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def __getstate__(self) -> dict[str, Any]:   # sent to worker processes without the open SQLite handle
        state = dict(self.__dict__)
        state["_cache"] = None
        return state


def cached_analyze(cache: ResultCache, analyze_fn=None):
    """An ``analyze(kernel, device, params=..., regs=..., sample=..., l2=...)`` for ``perfmodel check`` that returns
    the analysis document, served from ``cache`` when the point is unchanged. Errors are raised as by ``analyze``
    and never cached. Any other ``analyze_fn`` than perfmodel's own (a test's stand-in) is returned unchanged:
    the cache only ever holds perfmodel's numbers."""
    from perfmodel.analysis import analyze as real_analyze

    if analyze_fn is not None and analyze_fn is not real_analyze:
        return analyze_fn
    if not cache.enabled:
        return real_analyze

    def analyze_doc(kernel, device, params=None, regs=None, sample=None, l2="cold") -> dict:
        from perfmodel.analysis import _spec, analyze
        from perfmodel.devices import Device, load_device

        spec = _spec(kernel)
        dev = device if isinstance(device, Device) else load_device(device)
        key = point_key(spec, dev, dict(params or {}), regs, sample, None, l2) if cache.enabled else ""
        cached = cache.get(key)
        if is_entry(cached) and cached["valid"]:
            return cached["doc"]
        doc = normalise(analyze(spec, dev, params, regs=regs, sample=sample, l2=l2).to_json())
        cache.put(key, {"valid": True, "reason": "", "doc": doc})
        return doc
    return analyze_doc
