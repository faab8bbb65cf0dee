"""Finding and loading spec files (cached per file state), and :func:`run`: spec -> launch -> compile ->
simulate -> check in one call."""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from perfmodel.errors import SpecError
from perfmodel.paths import search_path, yaml_files
from perfmodel.spec.kernelspec import KernelSpec, _stat_key
from perfmodel.spec.launch import Launch, OutputCheck
from perfmodel.spec.schema import SpecModel, _validation_error

SPEC_PATH_ENV = "PERFMODEL_KERNEL_PATH"

# ==============================================================================================================
# Loading

# (yaml path, mtime, size) -> (spec, (source mtime, size)): a spec is reloaded when its yaml or its .cu changes
# (the .cu's #defines decide which params are passed to the compiler as defines).
_CACHE: dict[tuple[str, int, int], tuple[KernelSpec, tuple[int, int] | None]] = {}


def spec_search_path() -> list[Path]:
    """Folders searched for a spec name: ``$PERFMODEL_KERNEL_PATH`` (os.pathsep-separated), then the shipped
    ``kernels_spec/``."""
    return search_path(SPEC_PATH_ENV, "kernels_spec")


def _load_file(path: Path) -> KernelSpec:
    try:
        stat = path.stat()
    except OSError as err:
        raise SpecError(f"{path}: cannot read kernel spec ({err.strerror})") from None
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    cached = _CACHE.get(key)
    if cached is not None and cached[1] == _stat_key(cached[0].source_path):
        return cached[0]
    from perfmodel import safeload

    if path.suffix.lower() in (".cl", ".ocl", ".metal", ".hip", ".comp", ".glsl", ".hlsl", ".wgsl", ".f90", ".f"):
        raise SpecError(f"{path}: a {path.suffix} file is not CUDA: perfmodel analyses CUDA C++ kernels (.cu, .cuh "
                        "or a C++ file holding __global__ functions, compiled by NVRTC) and kernel specs (.yaml)")
    data = safeload.parse_yaml(safeload.read_text(path, error=SpecError, what="kernel spec"), str(path),
                               error=SpecError, invalid="malformed YAML")
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a kernel spec, a YAML mapping with name, source, entry, params, grid, "
                        "block, args, ... (a CUDA file is named .cu, .cuh or a C++ suffix)")
    try:
        model = SpecModel.model_validate(data)
    except ValidationError as err:
        raise _validation_error(path, err) from None
    spec = KernelSpec(model, path.resolve())
    _CACHE[key] = (spec, _stat_key(spec.source_path))
    return spec


def _candidates() -> dict[str, Path]:
    return yaml_files(spec_search_path())


def load_spec(name_or_path: str | os.PathLike | KernelSpec) -> KernelSpec:
    """A shipped spec by name (``"matmul_tiled"``), a spec on ``$PERFMODEL_KERNEL_PATH``, or a ``.yaml`` path."""
    if isinstance(name_or_path, KernelSpec):
        return name_or_path
    text = str(name_or_path)
    path = Path(text)
    try:
        is_file = path.is_file()
    except OSError as err:  # e.g. a name too long for the file system
        from perfmodel.safeload import path_error

        raise path_error(text, err, error=SpecError, what="kernel spec file") from None
    if text.endswith((".yaml", ".yml")) or os.sep in text or is_file:
        if not is_file:
            raise SpecError(f"{text}: no such kernel spec file")
        return _load_file(path)
    candidates = _candidates()
    if text in candidates:
        return _load_file(candidates[text])
    raise SpecError(f"unknown kernel {text!r} (available: {', '.join(sorted(candidates)) or 'none'}); "
                    "give a shipped name or a path to a spec .yaml")


def list_specs() -> list[KernelSpec]:
    """Every spec on the search path (shipped ones included), sorted by name."""
    return [_load_file(path) for _, path in sorted(_candidates().items())]


# ==============================================================================================================
# One call: spec -> launch -> compile -> simulate -> check

@dataclass(frozen=True, eq=False)
class RunResult:
    """What :func:`run` did. Unpacks as ``launch, program, result, check = run(...)``; ``args`` holds the args
    after the run (the output arrays as the kernel left them)."""

    launch: Launch
    program: Any                 # perfmodel.kernel.KernelProgram
    result: Any                  # perfmodel.sim.SimResult
    check: OutputCheck | None    # None for a sampled run (block_ids given): outputs are only partly written
    args: list[Any]

    def __iter__(self):
        return iter((self.launch, self.program, self.result, self.check))


def run(spec_or_name: str | os.PathLike | KernelSpec, params: Mapping[str, Any] | None = None, *,
        block_ids: Any = None, **simulate_kwargs: Any) -> RunResult:
    """Instantiate a spec, compile its kernel with the param ``#define``\\ s, simulate it and check the outputs.

    ``block_ids`` (optional) simulates only those linear block ids (sampled mode); the outputs are then not
    checked (``check`` is None). Other keyword arguments go to :func:`perfmodel.sim.simulate`."""
    spec = load_spec(spec_or_name)
    launch = spec.instantiate(params)

    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    arch = simulate_kwargs.pop("arch", "sm_90")
    program = load_kernel(launch.source_path, entry=launch.entry, defines=launch.defines, arch=arch,
                          include_dirs=spec.include_dirs)
    args = launch.arg_values()
    result = simulate(program, launch.grid, launch.block, args, launch.constant_values(),
                      dynamic_shared_bytes=launch.dynamic_shared_bytes, block_ids=block_ids,
                      pointer_offsets=launch.pointer_offsets(), **simulate_kwargs)
    check = launch.check_outputs(args) if block_ids is None else None
    return RunResult(launch, program, result, check, args)
