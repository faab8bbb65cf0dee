"""What the frontend hands to the simulator and to the analyzer."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str            # C spelling, e.g. "float*" or "int"
    dtype: np.dtype       # element dtype for pointers, value dtype for scalars
    is_pointer: bool
    size_bytes: int       # 8 for pointers (64-bit device pointers)


@dataclass(frozen=True)
class SharedDecl:
    name: str
    dtype: np.dtype
    shape: tuple          # () for a scalar; (None,) for `extern __shared__ x[]` (sized at launch)
    nbytes: int           # 0 for the dynamic allocation


@dataclass(frozen=True)
class ConstDecl:
    name: str
    dtype: np.dtype
    shape: tuple


@dataclass
class KernelProgram:
    name: str
    path: str
    source_lines: list
    params: list
    shared: list
    constants: list
    defines: dict
    sites: list = field(repr=False, default_factory=list)   # perfmodel.sim.runtime.Site, by site id
    n_slots: int = 0
    body: object = field(repr=False, default=None)          # compiled closure: body(ctx)
    param_slots: list = field(repr=False, default_factory=list)
    shared_types: list = field(repr=False, default_factory=list)
    const_types: list = field(repr=False, default_factory=list)
    local_bytes: int = 0          # thread-local array bytes per thread (local memory)

    @property
    def param_bytes(self) -> int:
        return sum(p.size_bytes for p in self.params)

    @property
    def static_shared_bytes(self) -> int:
        return sum(s.nbytes for s in self.shared)
