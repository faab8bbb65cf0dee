"""The compile stage: a user's CUDA file -> NVRTC -> PTX, with per-kernel parameters and resources.

    from perfmodel.compile import compile_cuda
    mod = compile_cuda("matrixMul.cu", name_expressions=["MatrixMulCUDA<32>"])
    k = mod.kernel("MatrixMulCUDA<32>"); k.registers, k.params, mod.ptx

Host code in the file is set aside first (``hostcode.py``), so real-world files compile as they are. See
docs/compile.md.
"""
from perfmodel.compile.compiler import compile_cuda, nvrtc_arch
from perfmodel.compile.module import CompiledModule, KernelInfo, ParamInfo
from perfmodel.errors import CompileError

__all__ = ["compile_cuda", "nvrtc_arch", "CompiledModule", "KernelInfo", "ParamInfo", "CompileError"]
