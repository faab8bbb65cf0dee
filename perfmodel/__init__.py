"""perfmodel: predict how fast a CUDA kernel runs on a GPU, from its CUDA C source, with no GPU.

Public API (imported lazily so that ``import perfmodel`` stays cheap):

- ``load_device(name_or_path) -> Device``
- ``occupancy(device, threads_per_block, registers_per_thread, shared_memory_per_block) -> Occupancy``
- ``load_spec(name_or_path) -> KernelSpec``
- ``analyze(kernel, device, params=None, ...) -> Analysis`` (callable every time: the module is
  ``perfmodel.analysis``, so importing it never shadows the function)
- ``RawKernel(code, name, options=())`` and ``RawModule(code=... | path=..., name_expressions=[...])``: CuPy-shaped
  launches on numpy arrays, ``kernel(grid, block, args, device="h100") -> Analysis`` (docs/api.md)
"""
from __future__ import annotations

__version__ = "0.1.0"

_API = {
    "load_device": ("perfmodel.devices", "load_device"),
    "Device": ("perfmodel.devices", "Device"),
    "occupancy": ("perfmodel.occupancy", "occupancy"),
    "Occupancy": ("perfmodel.occupancy", "Occupancy"),
    "load_spec": ("perfmodel.spec", "load_spec"),
    "KernelSpec": ("perfmodel.spec", "KernelSpec"),
    "analyze": ("perfmodel.analysis", "analyze"),
    "Analysis": ("perfmodel.analysis", "Analysis"),
    "RawKernel": ("perfmodel.api", "RawKernel"),
    "RawModule": ("perfmodel.api", "RawModule"),
    "PerfmodelError": ("perfmodel.errors", "PerfmodelError"),
}

__all__ = sorted(_API)


def __getattr__(name: str):
    if name in _API:
        import importlib

        module, attr = _API[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'perfmodel' has no attribute {name!r}")
