"""What a measurement ran on: CuPy import guard, device properties, clocks and tool versions."""
from __future__ import annotations

import platform
import re
import shutil
import subprocess
from typing import Any

from perfmodel.errors import GpuError

CUPY_MISSING = (
    "perfmodel validate needs CuPy and an NVIDIA GPU: install perfmodel's optional gpu extra "
    "(pip install 'perfmodel[gpu]') or the CuPy wheel that matches your CUDA driver (cupy-cuda12x, "
    "cupy-cuda13x). `perfmodel accuracy` needs neither."
)


def require_cupy():
    """Import CuPy or raise :class:`GpuError` with an install hint (the CLI turns it into exit code 2)."""
    try:
        import cupy  # noqa: PLC0415
    except ImportError as err:
        raise GpuError(f"{CUPY_MISSING} (import failed: {err})") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # CUDA driver missing or no device: a user's environment problem
        raise GpuError(f"CuPy is installed but no CUDA device could be opened: {err}") from None
    if count == 0:
        raise GpuError("CuPy is installed but it sees no CUDA device.")
    return cupy


def _run(cmd: list[str], timeout: float = 20.0) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout or "") + (out.stderr or "")


# The cudaDeviceProp fields a performance model needs (CuPy returns the whole struct as a dict).
_PROPERTY_KEYS = (
    "name", "major", "minor", "multiProcessorCount", "clockRate", "memoryClockRate", "memoryBusWidth",
    "l2CacheSize", "persistingL2CacheMaxSize", "totalGlobalMem", "totalConstMem", "sharedMemPerBlock",
    "sharedMemPerBlockOptin", "sharedMemPerMultiprocessor", "reservedSharedMemPerBlock", "regsPerBlock",
    "regsPerMultiprocessor", "warpSize", "maxThreadsPerBlock", "maxThreadsPerMultiProcessor",
    "maxBlocksPerMultiProcessor", "maxThreadsDim", "maxGridSize", "ECCEnabled", "pciBusID",
    "singleToDoublePrecisionPerfRatio",
)


def device_properties(cupy, device_index: int = 0) -> dict[str, Any]:
    props = cupy.cuda.runtime.getDeviceProperties(device_index)
    result: dict[str, Any] = {}
    for key in _PROPERTY_KEYS:
        if key in props:
            value = props[key]
            if isinstance(value, bytes):
                value = value.decode(errors="replace").rstrip("\x00")
            result[key] = value
    result["compute_capability"] = f"{result.get('major')}.{result.get('minor')}"
    return result


def clocks(device_index: int = 0) -> dict[str, Any]:
    """Current and maximum clocks and power state from nvidia-smi (None fields where it is unavailable)."""
    fields = ("clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem", "clocks.applications.graphics",
              "power.draw", "power.limit", "temperature.gpu", "pstate", "clocks_throttle_reasons.active")
    out = _run(["nvidia-smi", f"--id={device_index}", f"--query-gpu={','.join(fields)}",
                "--format=csv,noheader,nounits"])
    if not out:
        return {}
    values = [v.strip() for v in out.strip().splitlines()[0].split(",")]
    result: dict[str, Any] = {}
    for key, value in zip(fields, values):
        try:
            result[key] = float(value)
        except ValueError:
            result[key] = value
    return result


def versions(cupy=None) -> dict[str, Any]:
    result: dict[str, Any] = {"python": platform.python_version()}
    try:
        import numpy

        result["numpy"] = numpy.__version__
    except ImportError:  # pragma: no cover
        pass
    if cupy is not None:
        result["cupy"] = cupy.__version__
        try:
            result["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
            result["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        except Exception:  # noqa: BLE001 - versions are informative only
            pass
        try:
            major, minor = cupy.cuda.nvrtc.getVersion()
            result["nvrtc"] = f"{major}.{minor}"      # CuPy's (compiles the kernels under PERFMODEL_GPU_COMPILE=cupy)
        except Exception:  # noqa: BLE001
            pass
    try:
        # perfmodel's own (the nvidia-cuda-nvrtc wheel or $PERFMODEL_NVRTC), which compiles every kernel the
        # analysis reads and, by default, every kernel the GPU runner measures (gpu.runner.compile_launch)
        from perfmodel.compile import nvrtc

        result["perfmodel_nvrtc"] = ".".join(map(str, nvrtc.version()))
    except Exception:  # noqa: BLE001 - versions are informative only
        pass
    smi = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    if smi:
        result["nvidia_driver"] = smi.strip().splitlines()[0]
    ncu = _run(["ncu", "--version"])
    if ncu:
        match = re.search(r"Version\s+(\S+)", ncu)
        result["ncu"] = match.group(1) if match else ncu.strip().splitlines()[-1]
    nvcc = _run(["nvcc", "--version"])
    if nvcc:
        match = re.search(r"release\s+([\d.]+)", nvcc)
        if match:
            result["nvcc"] = match.group(1)
    return result
