"""Instruction classes of executed PTX (``counts.ptx_classes``): the instruction mix behind the issue count.

ptxas lowers PTX one-to-one for most instructions, folds some away (kernel parameters become constant-bank
operands, ``cvta.to.global`` is the identity on a 64-bit generic address space, register moves are coalesced)
and expands others (64-bit integer arithmetic, integer division); the mix says how much of each a kernel runs.
The SASS-level count itself comes from the compiled cubin (:func:`perfmodel.kernel._sass_weights`).
"""
from __future__ import annotations

from perfmodel.ptx.ir import Imm, Special, Sym


def ptx_class(ins) -> str:
    op = ins.opcode
    t = ins.type or ""
    if op in ("ld", "ldu", "st", "atom", "red"):
        if "param" in ins.mods:
            return "param"
        return "memory"
    if op == "cvta":
        return "cvta"
    if op == "wmma":
        return "tensor" if ins.mods[:1] == ("mma",) else "memory"
    if op == "mma":
        return "tensor"
    if op in ("ldmatrix", "stmatrix"):
        return "memory"
    if op == "mov":
        src = ins.operands[1] if len(ins.operands) > 1 else None
        if isinstance(src, Special):
            return "special"
        if isinstance(src, (Imm, Sym)):
            return "mov_imm"
        return "mov"
    if op == "mul" and "wide" in ins.mods:
        return "int_wide"
    if op in ("div", "rem") and not t.startswith("f"):
        return "int_div"
    if t in ("s64", "u64", "b64") and op in ("add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "min",
                                              "max", "neg", "abs", "not", "selp"):
        return "int64"
    if op == "setp":
        return "setp"
    if op == "bra":
        return "branch" if ins.guard is not None else "jump"
    if op in ("ret", "exit"):
        return "exit"
    if op in ("bar", "barrier"):
        return "barrier"
    if t.startswith(("f", "bf")) and op in ("add", "sub", "mul", "fma", "mad", "min", "max", "neg", "abs"):
        return "fp"
    if op in ("div", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh"):
        return "fp_special"
    if op == "cvt":
        return "cvt"
    return "alu"

