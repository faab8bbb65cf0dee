"""Which PTX instructions the executor supports, in one place, and PTX instruction listing per kernel.

``SUPPORTED_OPCODES`` holds PTX *base* opcodes: the text before the first dot (``mul.hi.u32`` -> ``mul``,
``ld.global.nc.v4.f32`` -> ``ld``). ``perfmodel kernels inspect`` reports the base opcodes of a kernel body that
are not in it (cube-map and mipmapped textures, texture gathers ``tld4``, formatted surface accesses, warpgroup
tensor cores ``wgmma``, sparse, fp8 and sub-byte ``mma`` and ``wmma``, tensor copies ``cp.async.bulk.tensor``,
...). Run: ``mma.sync``, ``ldmatrix`` and ``stmatrix`` (perfmodel/sim/mma_sync.py); ``cp.async`` from global
to shared memory, its group instructions and its ``mbarrier`` forms, ``cp.async.bulk`` to shared memory and
``mbarrier`` (perfmodel/sim/mbarrier.py); 1-D, 2-D, 3-D and layered texture fetches and raw (``.b``) surface loads
and stores through texture and surface objects (perfmodel/sim/texture.py); ``wmma`` on f16, bf16, tf32, f64, s8
and u8 fragments (perfmodel/sim/tensor.py).
"""
from __future__ import annotations

import re
from collections import Counter

SUPPORTED_OPCODES: frozenset[str] = frozenset("""
add sub mul mad mul24 mad24 sad fma div rem rcp sqrt rsqrt ex2 lg2 sin cos tanh abs neg min max copysign
and or xor not lop3 shl shr popc clz brev bfe bfi bfind prmt shf cnot testp vabsdiff4 vabsdiff2 dp4a dp2a bmsk addc subc
vadd vsub vabsdiff vmin vmax vshl vshr
madc
cvt cvta mov setp selp set slct
ld st ldu
bra ret exit call
atom red
bar barrier shfl vote match redux activemask membar fence
isspacep prefetch prefetchu nanosleep trap brkpt pmevent griddepcontrol discard applypriority
wmma mma ldmatrix stmatrix mbarrier
""".split())
# forms of supported opcodes the executor does not run: sub-byte and single-bit wmma fragments
# (perfmodel/sim/tensor.py), sparse, fp8 and sub-byte mma (perfmodel/sim/mma_sync.py), mbarrier.pending_count (perfmodel/sim/mbarrier.py), lop3 with a predicate result,
# packed 16-bit integer types on anything but add, min and max (the PTX ISA allows them only there)
_UNSUPPORTED_FORMS = re.compile(r"^(?:wmma\..*\.(?:s4|u4|b1)(?:\.|$)|mma\.(?:sp\b|.*\.(?:e4m3|e5m2|e3m2|e2m3|e2m1|s4|u4|b1)"
                                r"(?:\.|$))|mbarrier\.pending_count|lop3\.(?:and|or)\b"
                                r"|(?!(?:add|min|max)\.)\w+\..*\b[su]16x2\b)")

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LABEL = re.compile(r"^\s*[$%\w]+:(?!:)\s*", re.M)
# an indirect call's prototype declaration (``prototype_0 : .callprototype (...) _ (...);``): not an instruction
_PROTOTYPE = re.compile(r"^\s*[$%\w]+\s*:\s*\.callprototype\b[^;]*;", re.M)
_NO_SEMICOLON = re.compile(r"^\s*\.(?:loc|file|section)\b[^\n]*$", re.M)   # directives without ';'
_PRED = re.compile(r"^@!?%?[\w.]+\s+")


def ptx_instructions(body: str) -> list[str]:
    """The full opcodes (``ld.global.f32``) of the instructions of a PTX function body, in order."""
    text = _COMMENT.sub(" ", body)
    text = _NO_SEMICOLON.sub("", text)
    text = _PROTOTYPE.sub("", text)
    text = _LABEL.sub("", text)
    ops = []
    for stmt in text.split(";"):
        stmt = stmt.strip().lstrip("{}").strip()
        while stmt.startswith(("{", "}")):
            stmt = stmt[1:].strip()
        if not stmt or stmt.startswith("."):
            continue
        stmt = _PRED.sub("", stmt)
        op = stmt.split(None, 1)[0] if stmt else ""
        if op and not op.startswith("."):
            ops.append(op)
    return ops


def base_opcode(op: str) -> str:
    return op.split(".", 1)[0]


def opcode_counts(body: str) -> Counter:
    return Counter(base_opcode(op) for op in ptx_instructions(body))


# cp forms the executor runs: cp.async.ca/cg from global to shared memory (a load and a store,
# perfmodel.ptx.parse.lower_cp_async) and its group instructions; bulk and tensor copies are not run
_SUPPORTED_CP = ("cp.async.ca.shared", "cp.async.cg.shared", "cp.async.commit_group", "cp.async.wait_group",
                 "cp.async.wait_all", "cp.async.mbarrier.arrive",
                 "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes")
# texture fetches the executor runs: 1-D and 2-D through a texture object, four components (perfmodel.sim.texture)
_SUPPORTED_TEX = ("tex.1d.v4.", "tex.2d.v4.", "tex.3d.v4.", "tex.a1d.v4.", "tex.a2d.v4.", "suld.b.", "sust.b.")


def unsupported_opcodes(body: str) -> list[str]:
    """Sorted base opcodes of the body that the executor does not support (``cp``: a form other than those of
    ``_SUPPORTED_CP``), and in full the unsupported forms of supported opcodes (``add.s16x2``,
    ``wmma.mma.sync.aligned.row.col.m8n8k32.s32.s4.s4.s32``)."""
    found = {base_opcode(op) for op in ptx_instructions(body)
             if base_opcode(op) not in SUPPORTED_OPCODES and not op.startswith(_SUPPORTED_CP + _SUPPORTED_TEX)}
    found |= {op for op in ptx_instructions(body) if _UNSUPPORTED_FORMS.match(op)}     # the form, in full
    return sorted(found)
