"""Module-scope ``__constant__`` and ``__device__`` variables of a struct type (AutoDock-GPU's ``__constant__
GpuData cData;``, whose fields point to the device arrays the kernels read): which PTX variable is which struct, so
that its fields' layout can be probed like a by-value struct parameter's (compile/structs.py) and ``--symbol
NAME={FIELD=VALUE, ...}`` can give its fields, pointer fields included.

PTX declares such a variable as bytes (``.const .align 8 .b8 cData[48];``) and names no type; the type is the one
its declaration in the compiled text names. Only variables at namespace scope of the global namespace (their PTX
name is the C name) and of one struct (not an array of them) are found."""
from __future__ import annotations

import re

from perfmodel.compile.signature import dtype_of

_PTX_BYTES = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(?:const|global)\s+\.align\s+\d+\s+\.b8\s+([A-Za-z_]\w*)"
                        r"\[(\d+)\]", re.M)
_WORDS = r"(?:__constant__|__device__|__managed__|const|static|volatile|struct|class)"
_HANDLES = {"cudaTextureObject_t", "cudaSurfaceObject_t", "CUtexObject", "CUsurfObject"}


def struct_variables(ptx: str, text: str, typedefs=None) -> dict[str, str]:
    """PTX name -> the declared C type, for the byte-array module variables whose declaration in ``text`` names a
    type that is no number, vector or handle type (a struct, or a typedef of one)."""
    out: dict[str, str] = {}
    for m in _PTX_BYTES.finditer(ptx):
        name = m.group(1)
        decl = re.search(rf"(?:^|[;}}\s]){_WORDS}(?:\s+{_WORDS})*\s+([A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)\s+{name}\s*[;=]",
                         text)
        if decl is None or not re.search(r"__constant__|__device__", decl.group(0)):
            continue
        ctype = decl.group(1)
        if ctype in _HANDLES or dtype_of(ctype, False, typedefs) is not None:
            continue
        out[name] = ctype
    return out


_PTX_POINTER = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(?:const|global)\s+\.align\s+8\s+\.[bu]64\s+([A-Za-z_]\w*)\s*;",
                          re.M)


def pointer_variables(ptx: str, text: str, typedefs=None) -> dict[str, str]:
    """PTX name -> the pointed-to C type, for the module variables declared as one pointer (``__constant__ float
    *d_table;``, which the host sets with ``cudaMemcpyToSymbol(d_table, &dev_ptr, sizeof(dev_ptr))``: ethminer's
    ``d_dag``): PTX has an 8-byte integer and the declaration in ``text`` a ``*``."""
    out: dict[str, str] = {}
    for m in _PTX_POINTER.finditer(ptx):
        name = m.group(1)
        decl = re.search(rf"(?:^|[;}}\s]){_WORDS}(?:\s+{_WORDS})*\s+([A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)\s*\*\s*"
                         rf"(?:const\s+|__restrict__\s+)*{name}\s*[;=]", text)
        if decl is not None and re.search(r"__constant__|__device__", decl.group(0)):
            out[name] = decl.group(1)
    return out
