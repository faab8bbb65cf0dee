"""Thin ctypes binding to NVRTC (``libnvrtc.so`` from the ``nvidia-cuda-nvrtc`` wheel).

Only what the compile stage needs: create a program from one source text, compile it with options, read back
the log, PTX, CUBIN and lowered (mangled) names of name expressions. The library and the SDK headers are found
inside the installed ``nvidia`` namespace package (``nvidia/cu13/lib``, ``nvidia/cu13/include``), so users need
no CUDA toolkit.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from perfmodel.errors import CompileError

INSTALL_HINT = ("pip install nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cuda-cccl nvidia-cuda-crt "
                "(or reinstall perfmodel, which depends on them)")


def nvidia_roots() -> list[Path]:
    """Directories of the installed ``nvidia`` wheels holding lib/ and include/ (``.../nvidia/cu13``, ...)."""
    roots: list[Path] = []
    try:
        import nvidia  # namespace package from the nvidia-* wheels
    except ImportError:
        return roots
    for base in list(getattr(nvidia, "__path__", [])):
        for sub in sorted(Path(base).glob("cu*")):
            if sub.is_dir() and ((sub / "include").is_dir() or (sub / "lib").is_dir()):
                roots.append(sub)
        for sub in sorted(Path(base).iterdir()) if Path(base).is_dir() else []:  # older layout: nvidia/cuda_nvrtc
            if sub.is_dir() and not sub.name.startswith("cu1") and (sub / "include").is_dir():
                roots.append(sub)
    return roots


@functools.lru_cache(maxsize=1)
def sdk_root() -> str | None:
    """The folder the ``nvidia`` wheels are installed in (a virtual environment's site-packages), when they are all
    in one: the compile key counts the header folders relative to it (perfmodel/compile/cache.py)."""
    try:
        import nvidia
    except ImportError:
        return None
    bases = {str(Path(base).resolve().parent) for base in getattr(nvidia, "__path__", [])}
    return bases.pop() if len(bases) == 1 else None


def sdk_include_dirs() -> list[str]:
    """The CUDA headers NVRTC needs (cuda_fp16.h, cooperative_groups, cuda/std, curand_kernel.h, ...)."""
    dirs: list[str] = []
    for root in nvidia_roots():
        for cand in (root / "include", root / "include" / "cccl"):
            if cand.is_dir() and str(cand) not in dirs:
                dirs.append(str(cand))
    return dirs


@functools.lru_cache(maxsize=1)
def cccl_version() -> str | None:
    """The version of the CCCL headers (CUB, Thrust, libcu++) kernels compile against, "3.5.0": ``CCCL_VERSION`` of
    the nvidia-cuda-cccl wheel's cuda/std/__cccl/version.h (MMMmmmppp)."""
    for folder in sdk_include_dirs():
        header = Path(folder) / "cuda" / "std" / "__cccl" / "version.h"
        if header.is_file():
            m = re.search(r"#\s*define\s+CCCL_VERSION\s+(\d+)", header.read_text(errors="replace"))
            if m:
                v = int(m.group(1))
                return f"{v // 1000000}.{v // 1000 % 1000}.{v % 1000}"
    return None


def _candidates() -> list[str]:
    override = os.environ.get("PERFMODEL_NVRTC")
    candidates = [override] if override else []
    for root in nvidia_roots():
        candidates += sorted(glob.glob(str(root / "lib" / "libnvrtc.so*")), key=len)
    return [c for c in candidates if c and "builtins" not in c]


@functools.lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    candidates = _candidates()
    for cand in candidates:
        try:
            lib = ctypes.CDLL(cand)
        except OSError:
            continue
        _declare(lib)
        return lib
    raise CompileError("NVRTC (NVIDIA's runtime CUDA compiler) was not found; perfmodel compiles kernels with it. "
                       f"Install it: {INSTALL_HINT}.")


def _declare(lib: ctypes.CDLL) -> None:
    P = ctypes.c_void_p
    sz = ctypes.POINTER(ctypes.c_size_t)
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    lib.nvrtcGetErrorString.argtypes = [ctypes.c_int]
    lib.nvrtcVersion.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
    lib.nvrtcCreateProgram.argtypes = [ctypes.POINTER(P), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                       ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p)]
    lib.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(P)]
    lib.nvrtcCompileProgram.argtypes = [P, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    for base in ("ProgramLog", "PTX", "CUBIN"):
        getattr(lib, f"nvrtcGet{base}Size").argtypes = [P, sz]
        getattr(lib, f"nvrtcGet{base}").argtypes = [P, ctypes.c_char_p]
    lib.nvrtcAddNameExpression.argtypes = [P, ctypes.c_char_p]
    lib.nvrtcGetLoweredName.argtypes = [P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]


def available() -> bool:
    try:
        _library()
        return True
    except CompileError:
        return False


def _read_facts() -> dict:
    lib = _library()
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    archs: list[int] = []
    try:
        n = ctypes.c_int()
        lib.nvrtcGetNumSupportedArchs(ctypes.byref(n))
        arr = (ctypes.c_int * n.value)()
        lib.nvrtcGetSupportedArchs(arr)
        archs = sorted(arr)
    except AttributeError:      # an NVRTC older than 11.2
        pass
    return {"version": [major.value, minor.value], "archs": archs}


@functools.lru_cache(maxsize=1)
def facts() -> dict:
    """NVRTC's version and supported architectures (``{"version": [13, 0], "archs": [75, ...]}``), read from the
    library once and kept in the cache folder under the library file's path, size and modification time: a
    compile served from the cache then never loads the library (tens of milliseconds of start-up)."""
    import json

    from perfmodel.compile.cache import cache_dir

    candidates = _candidates()
    ident = None
    if candidates:
        try:
            st = os.stat(candidates[0])
            ident = [os.path.realpath(candidates[0]), st.st_size, st.st_mtime_ns]
        except OSError:
            ident = None
    path = cache_dir() / "nvrtc-facts.json"
    if ident is not None:
        try:
            saved = json.loads(path.read_text())
            if saved.get("library") == ident:
                return saved
        except (OSError, ValueError, AttributeError):
            pass
    found = _read_facts()
    if ident is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({**found, "library": ident}))
            os.replace(tmp, path)
        except OSError:
            pass
    return found


def version() -> tuple[int, int]:
    major, minor = facts()["version"]
    return int(major), int(minor)


def _check(lib: ctypes.CDLL, rc: int, what: str) -> None:
    if rc != 0:
        raise CompileError(f"NVRTC {what} failed: {lib.nvrtcGetErrorString(rc).decode()}")


@dataclass
class NvrtcResult:
    ok: bool
    log: str
    ptx: str | None = None
    cubin: bytes | None = None
    lowered: dict[str, str] = field(default_factory=dict)   # name expression -> mangled entry name


class NvrtcCrash(CompileError):
    """NVRTC itself died (a signal) compiling a program: its own bug, not an error in the source."""


def compile_program(source: str, name: str, options: list[str], name_expressions: list[str] = (),
                    *, want_ptx: bool = True, want_cubin: bool = False) -> NvrtcResult:
    """One ``nvrtcCompileProgram``, in a forked child process where the platform has fork and this process runs
    one thread: NVRTC can crash on valid code (NVRTC 13: ethminer's ``__ldg`` of a ``__constant__`` array, for
    sm_75 to sm_90, a segmentation fault), which would take perfmodel down with no message; the child's death is an
    :class:`NvrtcCrash` instead. ``PERFMODEL_NVRTC_IN_PROCESS=1`` compiles in this process."""
    import threading

    if not hasattr(os, "fork") or threading.active_count() > 1 or os.environ.get("PERFMODEL_NVRTC_IN_PROCESS"):
        return _compile_program(source, name, options, name_expressions, want_ptx=want_ptx, want_cubin=want_cubin)
    import pickle
    import signal

    _library()      # loaded once here, inherited by every child
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                                        # the child: compile, send the result (or the error), exit
        status = 0
        try:
            import faulthandler

            faulthandler.disable()      # NVRTC's own crash is reported by the parent, not dumped here
            os.close(read)
            try:
                payload = ("ok", _compile_program(source, name, options, name_expressions, want_ptx=want_ptx,
                                                  want_cubin=want_cubin))
            except CompileError as err:
                payload = ("error", str(err))
            with os.fdopen(write, "wb") as out:
                out.write(pickle.dumps(payload))
        except BaseException:   # noqa: BLE001 - nothing may escape a forked child
            status = 1
        os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as inp:
        data = inp.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) or not data:
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        what = f"signal {sig}, {signal.Signals(sig).name}" if sig else f"exit status {os.WEXITSTATUS(status)}"
        raise NvrtcCrash(f"NVRTC crashed ({what})")
    kind, value = pickle.loads(data)
    if kind == "error":
        raise CompileError(value)
    return value


def _compile_program(source: str, name: str, options: list[str], name_expressions: list[str] = (),
                     *, want_ptx: bool = True, want_cubin: bool = False) -> NvrtcResult:
    """One ``nvrtcCompileProgram`` in this process."""
    lib = _library()
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None),
           "nvrtcCreateProgram")
    try:
        for expr in name_expressions:
            _check(lib, lib.nvrtcAddNameExpression(prog, expr.encode()), f"adding name expression {expr!r}")
        opts = [o.encode() for o in options]
        arr = (ctypes.c_char_p * len(opts))(*opts)
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        n = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace")
        if rc != 0:
            return NvrtcResult(False, log)
        result = NvrtcResult(True, log)
        if want_ptx:
            if lib.nvrtcGetPTXSize(prog, ctypes.byref(n)) == 0:
                buf = ctypes.create_string_buffer(n.value)
                lib.nvrtcGetPTX(prog, buf)
                result.ptx = buf.value.decode(errors="replace")
        if want_cubin:
            if lib.nvrtcGetCUBINSize(prog, ctypes.byref(n)) == 0 and n.value:
                buf = ctypes.create_string_buffer(n.value)
                lib.nvrtcGetCUBIN(prog, buf)
                result.cubin = buf.raw[: n.value]
        for expr in name_expressions:
            out = ctypes.c_char_p()
            if lib.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(out)) == 0 and out.value:
                result.lowered[expr] = out.value.decode()
        return result
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
