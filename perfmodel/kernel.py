"""A kernel ready to execute: compiled with NVRTC (:mod:`perfmodel.compile`), its PTX parsed
(:mod:`perfmodel.ptx`), and what the executor and the analyzer need to know about it."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perfmodel.errors import SimulationError


@dataclass
class KernelProgram:
    name: str                     # the kernel's name expression (e.g. "MatrixMulCUDA<32>" or "vectorAdd")
    path: str                     # the user's file
    source_lines: list
    params: list                  # perfmodel.compile.ParamInfo (name, ctype, is_pointer, dtype, size, align)
    module: object                # perfmodel.ptx.Module
    entry: str                    # the PTX .entry (mangled) name
    arch: str = "sm_90"
    arch_note: str = ""
    registers: int | None = None
    spill_stores: int = 0
    spill_loads: int = 0
    local_bytes: int = 0
    ptxas_shared_bytes: int | None = None
    sass_weights: dict | None = field(default=None, repr=False)
    primary_file: int | None = None
    defines: dict = field(default_factory=dict)

    @property
    def param_bytes(self) -> int:
        from perfmodel.sim.program import param_layout
        return param_layout(self.module.functions[self.entry].params)[1]

    @property
    def static_shared_bytes(self) -> int:
        """Static shared memory as the PTX declares it (module-level and demoted function-level variables)."""
        total = 0
        variables = [v for v in self.module.variables if v.space == "shared"]
        for f in self.module.functions.values():
            variables += [v for v in f.variables if v.space == "shared"]
        for v in variables:
            if v.count is None:
                continue
            total = (total + v.align - 1) // v.align * v.align + v.nbytes
        return total
