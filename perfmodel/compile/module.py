"""The typed result of a compile: ``CompiledModule`` with one ``KernelInfo`` per compiled kernel."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from perfmodel.compile.structs import StructLayout  # noqa: F401  (ParamInfo.layout)
from perfmodel.errors import CompileError, Location


@dataclass
class ParamInfo:
    name: str                 # as in the source (``argN`` when unnamed)
    ctype: str                # C spelling after template substitution: "const float*", "int", "RGBA32*"
    is_pointer: bool
    dtype: np.dtype | None    # pointee dtype for pointers, value dtype for scalars (typedefs resolved; CUDA
                              # vector types -> structured x/y/z/w dtypes); None for structs / unknown
    size: int                 # bytes of the PTX .param
    align: int
    # a struct passed by value: its fields (compile/structs.py; ``layout.error`` says why they are not known)
    layout: "StructLayout | None" = None
    struct_key: str | None = field(default=None, repr=False)    # "namespace|type": the layout's key in the cache
    default: str | None = None    # the source's default argument (`int n = 256`), as written


@dataclass
class KernelInfo:
    name: str                 # source name, e.g. "MatrixMulCUDA"
    expression: str           # name expression, e.g. "MatrixMulCUDA<32>", or the name
    mangled: str              # the PTX .entry name
    params: list[ParamInfo]
    registers: int
    spill_stores: int
    spill_loads: int
    local_bytes: int          # stack frame
    static_shared_bytes: int
    barriers: int
    is_template: bool
    file: str | None = None   # where the kernel is defined (original file) and the line of its name
    line: int | None = None


@dataclass
class CompiledModule:
    ptx: str
    arch: str                 # what NVRTC compiled for, e.g. "sm_90"
    requested_arch: str
    arch_note: str            # "" when arch == requested_arch
    source_path: str | None
    source_lines: list[str]   # the ORIGINAL file's lines, unchanged
    kernels: list[KernelInfo]
    log: str
    options: list[str]
    templates: list[str] = field(default_factory=list)     # template kernels declared but not instantiated
    # how the file launches those: template name -> ["kernel<T, 256> (main.cu:88)", ...]
    template_launches: dict[str, list[str]] = field(default_factory=dict)
    set_aside_includes: list[str] = field(default_factory=list)
    # kernels the file only declares (defined in another .cu file, linked by the project's build): name -> where
    declared_only: dict[str, str] = field(default_factory=dict)
    context_path: str | None = None   # a header compiled inside the .cu file that includes it: that file
    cubin: bytes | None = field(default=None, repr=False)
    files: dict[str, str] = field(default_factory=dict, repr=False)   # absolute path -> original lines' text
    # ((folder compiled in, folder now), ...) when the compile came from the cache of a copy of the file in another
    # folder or of another environment's headers (compile/cache.py moves): the cubin's line information names the
    # old folders, the SASS listing is read with them moved to the new
    relocated: tuple[tuple[str, str], ...] | None = None
    # struct-typed __constant__ / __device__ variables: name -> StructLayout (compile/variables.py)
    variable_layouts: dict = field(default_factory=dict, repr=False)
    # pointer-typed __constant__ / __device__ variables: name -> pointed-to C type (compile/variables.py)
    pointer_variables: dict = field(default_factory=dict, repr=False)

    @property
    def source_file(self) -> str | None:
        """The absolute path the PTX ``.file`` table (and ``sass_line_counts``) uses for the source file."""
        if self.source_path is None:
            return None
        from pathlib import Path

        return str(Path(self.source_path).resolve())

    def kernel(self, name_or_expression: str) -> KernelInfo:
        want = name_or_expression.strip()
        squeezed = re.sub(r"\s+", "", want)
        for k in self.kernels:
            if want in (k.expression, k.mangled) or squeezed == re.sub(r"\s+", "", k.expression):
                return k
        for k in self.kernels:     # k<8> for ns::k<8>
            full = re.sub(r"\s+", "", k.expression)
            name = full.split("<")[0]
            if "::" not in squeezed.split("<")[0] and squeezed == name.split("::")[-1] + full[len(name):]:
                return k
        by_name = [k for k in self.kernels if k.name == want or k.name == want.split("::")[-1]]
        if len({k.expression for k in by_name}) > 1:
            raise CompileError(f"{want!r} names {len(by_name)} compiled kernels in {self.source_path or 'the source'}"
                               f": {', '.join(k.expression for k in by_name)}; name one of them.",
                               location=Location(self.source_path))
        if by_name:
            return by_name[0]
        available = ", ".join(k.expression for k in self.kernels) or "none"
        hint = ""
        base = want.split("<")[0]
        template = next((t for t in self.templates if base in (t, t.split("::")[-1])), None)
        if template is not None:
            seen = self.template_launches.get(template)
            hint = (f" {template} is a template kernel: name an instantiation, "
                    + (f"as the file launches it: {'; '.join(seen)}." if seen else f"e.g. {template}<float>."))
        where = self.declared_only.get(base) or self.declared_only.get(base.split("::")[-1])
        if where is not None and not hint:
            hint = (f" {base} is only declared here ({where}); its definition is in another file of the project: "
                    "analyse that file.")
        raise CompileError(f"no kernel {want!r} in {self.source_path or 'the source'}; compiled kernels: "
                           f"{available}.{hint}", location=Location(self.source_path))

    def sass_line_counts(self, kernel: str | KernelInfo,
                         inlined: str = "innermost") -> dict[tuple[str, int], int] | None:
        """Static SASS instructions per (source file, line) of one kernel; None when nvdisasm is unavailable.

        File names are those of the PTX ``.file`` table (absolute paths of the original files). Inlined code
        counts at its innermost line (as ``.loc``), or at the calling line with ``inlined="outermost"``."""
        from perfmodel.compile.sass import sass_line_counts

        info = kernel if isinstance(kernel, KernelInfo) else self.kernel(kernel)
        return sass_line_counts(self, info, inlined)

    def sass_instruction_count(self, kernel: str | KernelInfo) -> int | None:
        """Total static SASS instructions of one kernel; None when nvdisasm is unavailable."""
        from perfmodel.compile.sass import sass_instruction_count

        info = kernel if isinstance(kernel, KernelInfo) else self.kernel(kernel)
        return sass_instruction_count(self, info)

    def ptx_body(self, kernel: str | KernelInfo) -> str:
        from perfmodel.compile.signature import ptx_function_body

        info = kernel if isinstance(kernel, KernelInfo) else self.kernel(kernel)
        return ptx_function_body(self.ptx, info.mangled)
