"""PTX stage: parse NVRTC's PTX once into an instruction table with basic blocks, reconvergence points and
``.loc`` source positions (:mod:`perfmodel.ptx.ir`)."""
from perfmodel.ptx.ir import Function, Instr, Module
from perfmodel.ptx.parse import PtxError, parse_ptx

__all__ = ["parse_ptx", "PtxError", "Module", "Function", "Instr"]
