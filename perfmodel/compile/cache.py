"""Compile cache: in process (LRU) and on disk.

The key is the sha256 of the exact text NVRTC compiles (the user's file after host code is set aside, with every
local header inlined, so every included file's content is in it), the options (architecture, -D, include
folders), the name expressions, the NVRTC version, the versions of the header wheels (CCCL, CRT, runtime, cuRAND)
and the cache format version. The kernel file's folder (its ``root``) is left out of the key: the text's
``#line`` paths count relative to it, so a copy of the same file in another folder (a second clone, a moved
project, pytest's per-session temporary folders) finds the compile, whose PTX, log and SASS listing then name the
new folder (:func:`relocate`). So is the folder of the NVIDIA header wheels (``sdk``, a virtual environment's
site-packages; the wheels' versions are in the key), so a new virtual environment finds the compiles of another.

On disk: ``<dir>/compile/<key>.json`` (PTX, log, lowered names) and ``<key>.cubin``, where ``<dir>`` is
``$PERFMODEL_CACHE_DIR`` or ``platformdirs.user_cache_dir("perfmodel")``. Writes go through a temporary file and
``os.replace``, so concurrent processes never read half a file. A broken entry is ignored and rewritten.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
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
    root: str | None = None       # the kernel file's folder when it was compiled (the paths in ptx, log, cubin)
    sdk: str | None = None        # the NVIDIA wheels' folder then (nvrtc.sdk_root: the header paths in them)
    # by-value struct parameters' layouts (compile/structs.py), "namespace|type" -> StructLayout.to_json()
    layouts: dict[str, dict] = field(default_factory=dict)


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
def header_wheel_versions() -> list[str]:
    """The installed NVIDIA wheels, with versions (their headers can change without NVRTC changing): the names of
    their ``nvidia_*.dist-info`` folders (cheaper than importing importlib.metadata)."""
    from perfmodel.compile.nvrtc import nvidia_roots

    names: set[str] = set()
    for root in nvidia_roots():
        site = root.parent.parent
        names.update(p.name for p in site.glob("nvidia_*.dist-info"))
    return sorted(names)


def relative_text(text: str, root: str | None) -> str:
    """``text`` with the folder ``root`` left out of its ``#line`` paths (where the compiled code's file names come
    from), for the key; any other mention of the folder stays."""
    if not root:
        return text
    from perfmodel.compile.hostcode import _escape

    folder = re.escape(_escape(root.rstrip("/") + "/"))
    return re.sub(r'^(#line \d+ ")' + folder, lambda m: m.group(1) + "\0root/", text, flags=re.MULTILINE)


def relocate(text: str, pairs) -> str:
    """``text`` (PTX, a compile log, a SASS listing) with the paths under each ``(old, new)`` folder of ``pairs``
    moved under ``new``: a path where one starts - after a quote (PTX ``.file``, nvdisasm's ``//## File "..."``)
    or at the start of a line (the log's ``file(line): warning``) - not any other occurrence of the folder's name.
    One pass, the longest folder first, so a path moves once even where one folder holds the other (a virtual
    environment inside the project)."""
    to = {old.rstrip("/") + "/": new.rstrip("/") + "/" for old, new in pairs}
    if not to:
        return text
    folders = "|".join(re.escape(old) for old in sorted(to, key=len, reverse=True))
    return re.sub(r'(^|")(' + folders + ")", lambda m: m.group(1) + to[m.group(2)], text, flags=re.MULTILINE)


def moves(rec: Record, root: str | None, sdk: str | None) -> tuple:
    """The ``(old, new)`` folders a cached record's paths move by when it serves a compile with these folders."""
    return tuple((old, new) for old, new in ((rec.root, root), (rec.sdk, sdk)) if old and new and old != new)


def cache_key(text: str, options: list[str], exprs, nvrtc_version, fmt: int, root: str | None = None,
              sdk: str | None = None) -> str:
    """The compile's key; ``root``: the kernel file's folder, left out (:func:`relative_text`); ``sdk``: the NVIDIA
    wheels' folder, left out of the ``-I`` options that name it."""
    text = relative_text(text, root)
    if sdk:
        prefix = "-I" + sdk.rstrip("/") + "/"
        options = ["-I\0sdk/" + o[len(prefix):] if o.startswith(prefix) else o for o in options]
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
        rec = Record(ptx=data["ptx"], log=data["log"], lowered=dict(data["lowered"]), root=data.get("root"),
                     sdk=data.get("sdk"), layouts=dict(data.get("layouts", {})))
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
        data = {"ptx": rec.ptx, "log": rec.log, "lowered": rec.lowered, "cubin": rec.cubin is not None,
                "root": rec.root, "sdk": rec.sdk, "layouts": rec.layouts}
        _atomic_write(folder / f"{key}.json", json.dumps(data).encode())
    except OSError:
        pass   # a read-only or full cache folder only costs speed


def clear_memory() -> None:
    _memory.clear()
    _manifests.clear()


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


# ---- manifests: raw inputs -> compile key, without setting host code aside again ---------------------------------
_manifests: OrderedDict[str, tuple[str, object, dict[str, str]]] = OrderedDict()


@functools.lru_cache(maxsize=1)
def scan_fingerprint() -> str:
    """A hash of the code that reads a file before the compile (the host-code scan, its lexer, the signature and
    struct readers): a manifest written by another version of that code is not used, whatever FORMAT_VERSION says
    (a scan fixed without a bump served its old kernel lists)."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in ("hostcode.py", "conditions.py", "lexer.py", "signature.py", "structs.py", "compiler.py"):
        try:
            h.update((here / name).read_bytes())
        except OSError:
            h.update(name.encode())
    return h.hexdigest()[:16]


def raw_key(source: str, path: str, arch: str, defines: dict, include_dirs: list[str], exprs: list[str],
            nvrtc_version, fmt: int) -> str:
    h = hashlib.sha256()
    payload = json.dumps({"path": path, "arch": arch, "defines": {k: repr(v) for k, v in defines.items()},
                          "include_dirs": include_dirs, "exprs": exprs, "nvrtc": list(nvrtc_version),
                          "headers": header_wheel_versions(), "format": fmt, "manifest": 1,
                          "scan": scan_fingerprint()}, sort_keys=True)
    h.update(payload.encode())
    h.update(b"\0")
    h.update(source.encode())
    return h.hexdigest()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def store_manifest(raw: str, key: str, prepared, main: str) -> None:
    """Remember which compile key the raw inputs led to, with the hashes of the headers that were read."""
    from dataclasses import asdict

    files = {p: _digest(t) for p, t in prepared.files.items() if p != main}
    _manifests[raw] = (key, prepared, files)
    while len(_manifests) > MEMORY_ENTRIES:
        _manifests.popitem(last=False)
    meta = {"key": key, "files": files, "main": main,
            "kernels": [asdict(k) for k in prepared.kernels], "typedefs": prepared.typedefs,
            "set_aside_includes": prepared.set_aside_includes, "missing_includes": prepared.missing_includes,
            "device_functions": sorted(prepared.device_functions), "device_launch": prepared.device_launch,
            "launches": prepared.launches, "launched": prepared.launched}
    try:
        folder = cache_dir() / "compile"
        folder.mkdir(parents=True, exist_ok=True)
        _atomic_write(folder / f"{raw}.manifest.json", json.dumps(meta).encode())
    except OSError:
        pass


def lookup_manifest(raw: str):
    """(compile key, Prepared without its text) when every header read last time is unchanged, else None."""
    from perfmodel.compile.hostcode import KernelDecl, Prepared

    hit = _manifests.get(raw)
    if hit is not None:
        key, prepared, files = hit
        if _unchanged(files):
            return key, prepared
        return None
    try:
        meta = json.loads((cache_dir() / "compile" / f"{raw}.manifest.json").read_text())
        files = meta["files"]
        contents = _read_unchanged(files)
        if contents is None:
            return None
        kernels = [KernelDecl(**{**k, "template_params": [tuple(t) for t in k["template_params"]]})
                   for k in meta["kernels"]]
        prepared = Prepared("", files=contents, kernels=kernels, set_aside_includes=meta["set_aside_includes"],
                            missing_includes=meta["missing_includes"],
                            device_functions=set(meta["device_functions"]), typedefs=meta["typedefs"],
                            device_launch=meta["device_launch"],
                            launches=[tuple(x) for x in meta["launches"]], launched=meta["launched"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    _manifests[raw] = (meta["key"], prepared, files)
    return meta["key"], prepared


def _read_unchanged(files: dict[str, str]) -> dict[str, str] | None:
    contents = {}
    for path, digest in files.items():
        try:
            text = Path(path).read_text(errors="replace")
        except OSError:
            return None
        if _digest(text) != digest:
            return None
        contents[path] = text
    return contents


def _unchanged(files: dict[str, str]) -> bool:
    return _read_unchanged(files) is not None
