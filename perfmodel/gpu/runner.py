"""Run a kernel spec on a real GPU through CuPy: compile, launch, check, time, and read what the driver says
about the compiled function (registers, static shared memory, occupancy API).

The run uses exactly what the simulator uses: the cubin of the spec's ``.cu`` as the analysis compiles it (below),
with the same ``#define`` overrides (a param that overrides a ``#define`` has the source's ``#define`` line blanked
and is passed as ``-DNAME=VALUE``, so the line numbers stay those of the file), the same inputs
(``launch.arg_values()``), the same ``__constant__`` contents, grid, block and dynamic shared memory, and the
spec's reference check.

Timing (CUDA events, median of repeats after warm-up) is taken two ways:

- ``cold``: the L2 cache is flushed (a memset of a buffer of twice the L2 size) before each timed launch, so
  every launch reads its inputs from DRAM. This matches Nsight Compute's default ``--cache-control all`` and the
  model's view of a single launch; it is the headline ``time_s``.
- ``warm``: back-to-back launches over the same buffers; inputs that fit in L2 stay there between launches.

The cubin is the one the analysis reads: :func:`perfmodel.compile.compile_cuda` with the spec's defines, for this
GPU's architecture, through perfmodel's NVRTC (the ``nvidia-cuda-nvrtc`` wheel, or ``$PERFMODEL_NVRTC``).
``PERFMODEL_GPU_COMPILE=cupy`` compiles with CuPy's NVRTC and options instead (how the datasets' older cases were
measured; docs/validation.md, "Compiler"), falling back to perfmodel's compile where CuPy cannot build the file.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel.errors import GpuError

DEFINE_RE = r"^[ \t]*#[ \t]*define[ \t]+{name}\b.*$"


def strip_defines(source: str, names) -> str:
    """Blank the source's ``#define NAME ...`` lines for ``names`` (keeping line numbers), so that ``-DNAME=V``
    passed to the compiler wins. Continuation lines of a multi-line define are blanked too."""
    lines = source.split("\n")
    for name in names:
        pattern = re.compile(DEFINE_RE.format(name=re.escape(name)))
        i = 0
        while i < len(lines):
            if pattern.match(lines[i]):
                while lines[i].rstrip().endswith("\\") and i + 1 < len(lines):
                    lines[i] = f"// perfmodel: #define {name} overridden"
                    i += 1
                lines[i] = f"// perfmodel: #define {name} overridden"
            i += 1
    return "\n".join(lines)


def define_options(defines: dict[str, Any]) -> list[str]:
    options = []
    for name, value in sorted(defines.items()):
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        options.append(f"-D{name}={value}")
    return options


@dataclass
class TimeStats:
    median_s: float
    min_s: float
    max_s: float
    p10_s: float
    p90_s: float
    repeats: int

    @classmethod
    def of(cls, samples_s: list[float]) -> "TimeStats":
        data = sorted(samples_s)
        n = len(data)
        return cls(median_s=statistics.median(data), min_s=data[0], max_s=data[-1],
                   p10_s=data[int(0.1 * (n - 1))], p90_s=data[int(round(0.9 * (n - 1)))], repeats=n)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class GpuRun:
    kernel: str
    params: dict[str, Any]
    overrides: dict[str, Any]
    defines: dict[str, Any]
    entry: str
    compile_options: list[str]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int
    total_blocks: int
    threads_per_block: int
    correct: bool | None
    check: dict[str, Any]
    function: dict[str, Any]
    occupancy_api: dict[str, Any]
    time_cold: TimeStats | None = None
    time_warm: TimeStats | None = None
    time_warm_batched_s: float | None = None
    ncu: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    cubin: bytes | None = field(default=None, repr=False)      # the loaded image where perfmodel compiled it

    @property
    def time_s(self) -> float | None:
        return self.time_cold.median_s if self.time_cold else None

    def to_json(self) -> dict[str, Any]:
        from perfmodel.report.jsonout import to_jsonable

        record = {
            "kernel": self.kernel, "overrides": self.overrides, "params": self.params, "defines": self.defines,
            "entry": self.entry, "compile_options": self.compile_options,
            "grid": list(self.grid), "block": list(self.block), "dynamic_shared_bytes": self.dynamic_shared_bytes,
            "total_blocks": self.total_blocks, "threads_per_block": self.threads_per_block,
            "correct": self.correct, "check": self.check,
            "function": self.function, "occupancy_api": self.occupancy_api,
            "time_s": self.time_s,
            "time": {
                "cold": self.time_cold.to_json() if self.time_cold else None,
                "warm": self.time_warm.to_json() if self.time_warm else None,
                "warm_batched_mean_s": self.time_warm_batched_s,
            },
        }
        if self.ncu is not None:
            record["ncu"] = self.ncu
        record.update(self.extra)
        return to_jsonable(record)


# --- driver-API helpers (ctypes into libcuda: present wherever a CUDA driver is, whatever CuPy's version) ---

_libcuda = None


def _cuda_driver():
    global _libcuda
    if _libcuda is None:
        for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
            try:
                _libcuda = ctypes.CDLL(name)
                break
            except OSError:
                continue
        else:
            raise GpuError("could not load the CUDA driver library (libcuda.so.1)")
    return _libcuda


def _function_handle(kernel) -> int:
    function = getattr(kernel, "kernel", None)
    ptr = getattr(function, "ptr", None)
    if ptr is None:
        raise GpuError("could not get the CUfunction handle of the compiled kernel from CuPy")
    return int(ptr)


def occupancy_blocks_per_sm(kernel, threads_per_block: int, dynamic_shared_bytes: int) -> int:
    """``cuOccupancyMaxActiveBlocksPerMultiprocessor`` for the compiled function (the CUDA occupancy API)."""
    lib = _cuda_driver()
    blocks = ctypes.c_int(0)
    status = lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(blocks), ctypes.c_void_p(_function_handle(kernel)), ctypes.c_int(threads_per_block),
        ctypes.c_size_t(dynamic_shared_bytes))
    if status != 0:
        raise GpuError(f"cuOccupancyMaxActiveBlocksPerMultiprocessor failed with CUresult {status}")
    return int(blocks.value)


def function_attributes(kernel) -> dict[str, Any]:
    attributes = dict(getattr(kernel, "attributes", {}) or {})
    keep = ("num_regs", "shared_size_bytes", "local_size_bytes", "const_size_bytes", "max_threads_per_block",
            "ptx_version", "binary_version", "max_dynamic_shared_size_bytes")
    return {k: attributes[k] for k in keep if k in attributes}


# --- the run ---

def _scalar(arg) -> Any:
    """A scalar kernel argument with its C type (CuPy would pass a Python int as a 64-bit integer)."""
    if getattr(arg, "dtype", None) is not None and np.dtype(arg.dtype).names:
        return arg.value            # a vector type (float3): a numpy structured scalar, passed by its bytes
    if getattr(arg, "dtype", None) is not None:
        return np.dtype(arg.dtype).type(arg.value)
    return np.float32(arg.value) if isinstance(arg.value, float) else np.int32(arg.value)


def compile_mode() -> str:
    """Which compile the runner loads: ``PERFMODEL_GPU_COMPILE``, "perfmodel" (the default) or "cupy"."""
    how = os.environ.get("PERFMODEL_GPU_COMPILE", "perfmodel")
    if how not in ("perfmodel", "cupy"):
        raise GpuError(f"PERFMODEL_GPU_COMPILE={how!r}: expected 'perfmodel' (the default) or 'cupy'")
    return how


def compile_launch(cupy, spec, launch):
    """Compile the spec's source with the launch's defines; return (module, kernel, options, built): perfmodel's
    compile, ``built`` its (cubin, entry's symbol), unless ``PERFMODEL_GPU_COMPILE=cupy`` (then CuPy's, ``built``
    None; perfmodel's where CuPy cannot build the file)."""
    if compile_mode() == "perfmodel":
        return _compile_with_perfmodel(cupy, spec, launch)
    source_path = Path(spec.source_path)
    source = strip_defines(source_path.read_text(), launch.defines)
    options = ["-std=c++17", *define_options(launch.defines)]
    entry = spec.entry
    try:
        module = cupy.RawModule(code=source, options=tuple(options), name_expressions=[entry])
        kernel = module.get_function(entry)
    except Exception as err:  # noqa: BLE001 - NVRTC and driver errors come in many types
        # a real-world file (host code, local headers, templates): load the cubin perfmodel's own compile
        # makes of it (host code set aside - the same cubin the simulator's PTX and SASS weights come from)
        try:
            return _compile_with_perfmodel(cupy, spec, launch)
        except Exception as err2:  # noqa: BLE001
            raise GpuError(f"{source_path}: compiling/loading entry {entry!r} with NVRTC failed: {err}; "
                           f"perfmodel's compile failed too: {err2}") from None
    return module, kernel, options, None


def _compile_with_perfmodel(cupy, spec, launch):
    """Compile with :func:`perfmodel.compile.compile_cuda` for this GPU's architecture and load its cubin."""
    import tempfile

    from perfmodel.compile import compile_cuda
    from perfmodel.compile import nvrtc as _nvrtc

    # a machine with the CUDA toolkit but without the nvidia-cuda-cccl wheel: the toolkit's headers after the
    # wheels' (only for this compile: with the wheels, the options are exactly the analysis's)
    wheel_dirs = _nvrtc.sdk_include_dirs
    extra = []
    if not any((Path(d) / "cuda" / "std").is_dir() for d in wheel_dirs()):
        toolkit = Path(os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda") / "include"
        extra = [str(d) for d in (toolkit / "cccl", toolkit) if d.is_dir()]
    if extra:
        _nvrtc.sdk_include_dirs = lambda: wheel_dirs() + [d for d in extra if d not in wheel_dirs()]
    major, minor = cupy.cuda.Device().compute_capability[:-1], cupy.cuda.Device().compute_capability[-1]
    try:
        compiled = compile_cuda(path=str(spec.source_path), arch=f"sm_{major}{minor}", name_expressions=[spec.entry],
                                defines=dict(launch.defines), include_dirs=spec.include_dirs, cache=False)
    finally:
        _nvrtc.sdk_include_dirs = wheel_dirs
    info = compiled.kernel(spec.entry)
    if not compiled.cubin:
        raise GpuError(f"{spec.source_path}: perfmodel's compile made no cubin")
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as handle:
        handle.write(compiled.cubin)
    module = cupy.RawModule(path=handle.name)
    options = [*compiled.options, f"(perfmodel compile_cuda cubin, NVRTC {'.'.join(map(str, _nvrtc.version()))})"]
    return module, module.get_function(info.mangled), options, (compiled.cubin, info.mangled)


def _set_constants(module, launch) -> None:
    for name, values in (launch.constants or {}).items():
        host = np.ascontiguousarray(values)
        try:
            ptr = module.get_global(name)
        except Exception as err:  # noqa: BLE001
            raise GpuError(f"__constant__ symbol {name!r} not found in the compiled module: {err}") from None
        ptr.copy_from_host(host.ctypes.data, host.nbytes)


def run_kernel(kernel_name: str, overrides: dict[str, Any] | None = None, **options) -> GpuRun:
    """Compile, launch, check and time one instance of a shipped spec (or spec path); see :func:`run_spec`."""
    from perfmodel.spec import load_spec

    return run_spec(load_spec(kernel_name), overrides, **options)


def run_spec(spec, overrides: dict[str, Any] | None = None, *, device_index: int = 0, time_it: bool = True,
             target_seconds: float = 0.25, min_repeats: int = 5, max_repeats: int = 100, check: bool = True,
             launches: int | None = None) -> GpuRun:
    """Compile, launch, check and time one spec instance on GPU ``device_index``.

    ``launches``: with ``time_it=False``, how many plain launches to make (the ncu driver uses 1)."""
    from perfmodel.gpu.env import require_cupy

    cp = require_cupy()
    overrides = dict(overrides or {})
    launch = spec.instantiate(overrides)
    with cp.cuda.Device(device_index):
        module, kernel, options, built = compile_launch(cp, spec, launch)
        _set_constants(module, launch)
        host_args = launch.arg_values()
        device_args, kernel_args = [], []
        for host, arg in zip(host_args, launch.args):
            if arg.kind == "array":
                dev = cp.asarray(np.ascontiguousarray(host))
                device_args.append(dev)
                kernel_args.append(dev[arg.offset:] if arg.offset else dev)    # d + offset, as the host passes
            elif arg.kind == "texture":
                raise GpuError(f"{spec.path}: arg {arg.name} is a texture object; the GPU runner does not create "
                               "texture objects (measure such kernels with a host program)")
            elif arg.kind == "struct":
                raise GpuError(f"{spec.path}: arg {arg.name} is a struct passed by value; the GPU runner does not "
                               "pack structs (measure such kernels with a host program)")
            elif arg.kind == "null":
                device_args.append(None)
                kernel_args.append(np.uint64(0))      # NULL: CuPy passes a 64-bit integer as the pointer's bits
            else:
                device_args.append(None)
                kernel_args.append(_scalar(arg))
        grid, block = tuple(int(g) for g in launch.grid), tuple(int(b) for b in launch.block)
        dyn = int(launch.dynamic_shared_bytes or 0)
        if dyn > 48 * 1024:
            kernel.max_dynamic_shared_size_bytes = dyn
        kernel_args = tuple(kernel_args)

        def fire():
            kernel(grid, block, kernel_args, shared_mem=dyn)

        try:
            fire()
            cp.cuda.runtime.deviceSynchronize()
        except Exception as err:  # noqa: BLE001 - CUDA driver errors: a launch the device refuses or that faults
            raise GpuError(f"{spec.name}: launching grid {grid} x block {block} with {dyn} B of dynamic shared "
                           f"memory failed on device {device_index}: {err}") from None
        correct, check_info = None, {}
        if check:
            after = [cp.asnumpy(d) if d is not None else h for d, h in zip(device_args, host_args)]
            result = launch.check_outputs(after)
            correct = bool(result.correct)
            check_info = {"message": getattr(result, "message", None)}
            outputs = getattr(result, "outputs", None)
            if outputs:
                check_info["outputs"] = [o if isinstance(o, dict) else
                                         (o._asdict() if hasattr(o, "_asdict") else
                                          getattr(o, "__dict__", str(o))) for o in outputs]
        threads = int(np.prod(block))
        record = GpuRun(
            kernel=spec.name, params=dict(launch.params), overrides=overrides, defines=dict(launch.defines),
            entry=spec.entry, compile_options=options, grid=grid, block=block, dynamic_shared_bytes=dyn,
            total_blocks=int(np.prod(grid)), threads_per_block=threads, correct=correct, check=check_info,
            function=function_attributes(kernel),
            occupancy_api={"blocks_per_sm": occupancy_blocks_per_sm(kernel, threads, dyn)},
        )
        if built is not None:
            record.cubin = built[0]
            record.extra.update(cubin_sha256=hashlib.sha256(built[0]).hexdigest(), entry_symbol=built[1])
        if not time_it:
            for _ in range(max(0, (launches or 1) - 1)):
                fire()
            cp.cuda.runtime.deviceSynchronize()
            return record
        record.time_cold, record.time_warm, record.time_warm_batched_s = _time(
            cp, fire, device_index, target_seconds, min_repeats, max_repeats)
        return record


def _time(cp, fire, device_index: int, target_seconds: float, min_repeats: int, max_repeats: int):
    start, stop = cp.cuda.Event(), cp.cuda.Event()

    def one(before=None) -> float:
        if before is not None:
            before()
        start.record()
        fire()
        stop.record()
        stop.synchronize()
        return cp.cuda.get_elapsed_time(start, stop) * 1e-3

    for _ in range(3):  # warm-up: module load, first-touch, clocks up
        one()
    probe = statistics.median(one() for _ in range(3))
    n = int(min(max_repeats, max(min_repeats, target_seconds / max(probe, 1e-6))))
    warm = TimeStats.of([one() for _ in range(n)])
    # warm, batched: k back-to-back launches between one event pair (hides the per-launch event overhead)
    k = int(min(200, max(1, 0.02 / max(probe, 1e-6))))
    batched = []
    for _ in range(3):
        start.record()
        for _ in range(k):
            fire()
        stop.record()
        stop.synchronize()
        batched.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3 / k)
    l2 = int(cp.cuda.runtime.getDeviceProperties(device_index).get("l2CacheSize", 64 << 20))
    flush = cp.empty(max(2 * l2, 64 << 20), dtype=cp.uint8)
    counter = [0]

    def flush_l2():
        counter[0] = (counter[0] + 1) & 0xFF
        flush.data.memset_async(counter[0], flush.nbytes)

    cold = TimeStats.of([one(flush_l2) for _ in range(n)])
    del flush
    return cold, warm, statistics.median(batched)

