"""Which kernel parameter a memory instruction's address comes from, read off the PTX (for messages).

An out-of-bounds address lies outside every array, so the array nearest below it names the wrong one whenever the
index ran past a *later* array (``keys[6400]`` of a 256-element ``keys`` lands beyond ``out``). The address
register's definitions say which pointer it was computed from: followed backwards through the instructions that
carry a pointer (``mov``, ``cvta``, ``cvt``, ``add``/``sub`` and the addend of ``mad``) to the ``ld.param`` that
loaded it. Offsets (``mul``, ``shl``, loads) end the walk; so does a pointer loaded from memory (a pointer to
pointers), which then names no parameter. Every definition of a register is followed (PTX registers may be
written more than once, in loops), so the answer is the set of parameters any path reaches."""
from __future__ import annotations

from perfmodel.ptx.ir import Addr, Function, Instr, Reg, Sym

_CARRY_ALL = {"mov", "cvta", "cvt", "add", "sub"}   # every register source may be the pointer


def definitions(f: Function) -> dict[str, list[Instr]]:
    """register name -> the instructions that write it."""
    defs: dict[str, list[Instr]] = {}
    for ins in f.instrs:
        if ins.operands and isinstance(ins.operands[0], Reg):
            defs.setdefault(ins.operands[0].name, []).append(ins)
    return defs


def address_params(f: Function, ins: Instr, defs: dict[str, list[Instr]] | None = None) -> set[tuple[str, int]]:
    """The PTX ``.param`` names (``_Z4walk..._param_1``) that the address of memory instruction ``ins`` (``ld``,
    ``st``, ``atom``, ``red``) is computed from, each with the byte offset loaded from it (a struct's pointer
    field; 0 for a pointer parameter); empty when the walk reaches none. ``defs``: :func:`definitions` of ``f``,
    when the caller keeps them."""
    addr = next((op for op in ins.operands if isinstance(op, Addr)), None)
    if addr is None:
        return set()
    if isinstance(addr.base, Sym):
        return {(addr.base.name, 0)}
    if not isinstance(addr.base, Reg):
        return set()
    defs = definitions(f) if defs is None else defs
    found: set[tuple[str, int]] = set()
    seen: set[str] = set()
    todo = [addr.base.name]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for d in defs.get(name, ()):
            if d.opcode in ("ld", "ldu") and "param" in d.mods:
                src = d.operands[1]
                if isinstance(src, Addr) and isinstance(src.base, Sym):
                    found.add((src.base.name, src.offset))
                continue
            if d.opcode in _CARRY_ALL:
                sources = d.operands[1:]
            elif d.opcode == "mad":
                sources = d.operands[3:4]          # a * b + c: the pointer is the addend
            else:
                continue
            todo.extend(op.name for op in sources if isinstance(op, Reg))
    return found
