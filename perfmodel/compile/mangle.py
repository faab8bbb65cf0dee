"""A kernel's parameter types as the compiler saw them, read from its mangled PTX entry name.

A ``__global__`` function that is not ``extern "C"`` is named in PTX by its Itanium C++ ABI mangled name
(Itanium C++ ABI, section 5.1 "Mangling", https://itanium-cxx-abi.github.io/cxx-abi/abi.html#mangling), which
spells every parameter's type after macros, typedefs, ``#if`` choices and template arguments are resolved:
``_Z11gemm_kerneliiiffPfS_S_`` is ``gemm_kernel(int, int, int, float, float, float*, float*, float*)`` whatever
``DATA_TYPE`` stood for in the source. ``param_types`` reads that far and no further: built-in types, pointers and
references, cv-qualifiers, class names (plain, nested, templated), substitutions (``S_``, ``S0_``, ``St``) and
template parameters (``T_``), arrays (``PA24_f``, a pointer to ``float[24]``, spelt ``float[24]*``). Anything else
(function or member pointers, vector extensions, expressions in template arguments) ends the reading with
``None``, and the caller keeps what the source says.
"""
from __future__ import annotations

import re

import numpy as np

from perfmodel.compile.signature import dtype_of

# <builtin-type> (ABI 5.1.5.2), as the C spellings signature.SCALAR_DTYPES knows
_BUILTIN = {
    "v": "void", "w": "wchar_t", "b": "bool", "c": "char", "a": "signed char", "h": "unsigned char",
    "s": "short", "t": "unsigned short", "i": "int", "j": "unsigned int", "l": "long", "m": "unsigned long",
    "x": "long long", "y": "unsigned long long", "n": "__int128", "o": "unsigned __int128", "f": "float",
    "d": "double", "e": "long double", "g": "__float128", "z": "...",
}
_BUILTIN_D = {"Dh": "__fp16", "Dn": "decltype(nullptr)", "Ds": "char16_t", "Di": "char32_t", "Du": "char8_t"}
_STD_ABBREV = {"St": "std", "Sa": "std::allocator", "Sb": "std::basic_string", "Ss": "std::string",
               "Si": "std::istream", "So": "std::ostream", "Sd": "std::iostream"}


class _Unsupported(Exception):
    pass


class _Reader:
    def __init__(self, text: str):
        self.s = text
        self.i = 0
        self.subs: list[str] = []          # substitution candidates, in order (ABI 5.1.9)
        self.targs: list[str] = []         # the function's template arguments, for T_

    def peek(self, n: int = 1) -> str:
        return self.s[self.i:self.i + n]

    def take(self, text: str) -> bool:
        if self.s.startswith(text, self.i):
            self.i += len(text)
            return True
        return False

    def number(self) -> int:
        m = re.compile(r"n?\d+").match(self.s, self.i)
        if not m:
            raise _Unsupported
        self.i = m.end()
        v = m.group(0)
        return -int(v[1:]) if v.startswith("n") else int(v)

    def seq_id(self, close: str = "_") -> int:
        """The base-36 <seq-id> of S<seq-id>_ / T<seq-id>_: empty is 0, '0' is 1, ..."""
        m = re.compile(r"[0-9A-Z]*").match(self.s, self.i)
        self.i = m.end()
        if not self.take(close):
            raise _Unsupported
        return 0 if not m.group(0) else int(m.group(0), 36) + 1

    def source_name(self) -> str:
        n = self.number()
        name = self.s[self.i:self.i + n]
        if len(name) != n:
            raise _Unsupported
        self.i += n
        return "(anonymous namespace)" if name.startswith("_GLOBAL__N") else name

    # ---- names ---------------------------------------------------------------------------------------------
    def substitution(self) -> str:
        for abbrev, text in _STD_ABBREV.items():
            if self.take(abbrev):
                return text
        return self.indexed("S", self.subs)

    def indexed(self, letter: str, table: list[str]) -> str:
        """S<seq-id>_ / T<seq-id>_: the entry of ``table`` they name."""
        if not self.take(letter):
            raise _Unsupported
        k = self.seq_id()
        if k >= len(table):
            raise _Unsupported
        return table[k]

    def unqualified(self) -> str:
        if self.peek().isdigit():
            return self.source_name()
        if self.take("L"):                 # internal linkage: L <source-name>
            return self.source_name()
        raise _Unsupported                 # operators, constructors, ...

    def template_args(self) -> list[str]:
        if not self.take("I"):
            raise _Unsupported
        args = []
        while not self.take("E"):
            if self.take("L"):             # <expr-primary>: L <type> <value> E
                kind = self.type()
                if self.take("E"):
                    raise _Unsupported
                v = self.number()
                if not self.take("E"):
                    raise _Unsupported
                args.append(("true" if v else "false") if kind == "bool" else str(v))
            elif self.peek() == "X":
                raise _Unsupported         # an expression
            elif self.take("J"):           # a pack
                inner = []
                while not self.take("E"):
                    inner.append(self.type())
                args.append(", ".join(inner))
            else:
                args.append(self.type())
        return args

    def nested(self) -> tuple[str, bool]:
        """N [<CV-qualifiers>] <prefix> <unqualified-name> E -> (the name, whether it ends with template
        arguments; those are kept in ``targs``: for a function, its own, which T_ names)."""
        while self.peek() in ("K", "V", "r"):
            self.i += 1
        parts: list[str] = []
        templated = False
        while not self.take("E"):
            templated = False
            if self.peek() == "S":
                parts = [self.substitution()]
                continue                   # a substitution is no new candidate (a template-id after it is)
            elif self.peek() == "I":
                if not parts:
                    raise _Unsupported
                self.targs = self.template_args()
                parts[-1] += "<" + ", ".join(self.targs) + ">"
                templated = True
            elif self.peek() == "T":
                parts = [self.template_param()]
            else:
                parts.append(self.unqualified())
            if self.peek() != "E":
                self.subs.append("::".join(parts))     # each prefix is a candidate, the whole name is not
        if not parts:
            raise _Unsupported
        return "::".join(parts), templated

    def template_param(self) -> str:
        return self.indexed("T", self.targs)

    # ---- types ---------------------------------------------------------------------------------------------
    def type(self) -> str:
        c = self.peek()
        if c in _BUILTIN:
            self.i += 1
            return _BUILTIN[c]
        two = self.peek(2)
        if two in _BUILTIN_D:
            self.i += 2
            return _BUILTIN_D[two]
        if two == "DF":                    # _FloatN: DF <number> _
            self.i += 2
            n = self.number()
            if not self.take("_"):
                raise _Unsupported
            out = f"_Float{n}"
            return out
        if c in ("K", "V", "r"):
            quals = []
            while self.peek() in ("K", "V", "r"):
                quals.append({"K": "const", "V": "volatile", "r": "__restrict__"}[self.s[self.i]])
                self.i += 1
            inner = self.type()
            out = (inner + " " + " ".join(reversed(quals))) if inner.endswith("*") else \
                " ".join(reversed(quals)) + " " + inner
            self.subs.append(out)
            return out
        if c == "A":                       # A <dimension> _ <element type>: float[24]
            self.i += 1
            n = self.number()
            if not self.take("_"):
                raise _Unsupported
            elem = self.type()
            cut = elem.find("[") if "[" in elem else len(elem)
            out = f"{elem[:cut]}[{n}]{elem[cut:]}"   # the outer dimension first: double[41][4][2]
            self.subs.append(out)
            return out
        if c in ("P", "R", "O"):
            self.i += 1
            if self.peek() == "F":         # a pointer to a function: float(*)(float, float)
                inner = self.type()
                out = inner.replace("(", "(" + {"P": "*", "R": "&", "O": "&&"}[c] + ")(", 1)
            else:
                out = self.type() + {"P": "*", "R": "&", "O": "&&"}[c]
            self.subs.append(out)
            return out
        if c == "F":                       # a function type: F [Y] <return type> <parameter types> E
            self.i += 1
            self.take("Y")
            ret = self.type()
            params = []
            while self.peek() and self.peek() != "E":
                if self.peek(2) in ("RE", "OE"):      # a ref-qualifier
                    self.i += 1
                    continue
                params.append(self.type())
            if not self.take("E"):
                raise _Unsupported
            out = f"{ret}({', '.join(t for t in params if t != 'void')})"
            self.subs.append(out)
            return out
        if c == "T":
            out = self.templated(self.template_param())
            self.subs.append(out)
            return out
        if c == "S":
            if self.take("St"):
                out = self.templated("std::" + self.unqualified())     # std::vector, then std::vector<int>
            else:
                name = self.substitution()       # already a candidate: only name<args> is a new one
                if self.peek() != "I":
                    return name
                out = self.templated(name, candidate=False)
            self.subs.append(out)
            return out
        if c == "N":
            self.i += 1
            saved = self.targs
            out, _ = self.nested()
            self.targs = saved             # a class's template arguments are not the function's
            self.subs.append(out)
            return out
        if c.isdigit():
            out = self.templated(self.source_name())
            self.subs.append(out)
            return out
        raise _Unsupported                 # F (function), M (member pointer), Dv (vector), ...

    def templated(self, name: str, candidate: bool = True) -> str:
        """``name`` with the template arguments that follow it, if any; a template name so followed is a
        substitution candidate of its own (unless it came from a substitution), before the whole type."""
        if self.peek() != "I":
            return name
        if candidate:
            self.subs.append(name)
        return name + "<" + ", ".join(self.template_args()) + ">"


def param_types(mangled: str) -> list[str] | None:
    """The C type of every parameter of the function ``mangled`` (``[]`` for ``f(void)``), or None where the name
    is not mangled (``extern "C"``) or uses what the reader does not follow."""
    if not mangled.startswith("_Z"):
        return None
    r = _Reader(mangled)
    r.i = 2
    try:
        if r.take("N"):
            _, templated = r.nested()
        else:
            name = r.unqualified()
            templated = r.peek() == "I"
            if templated:
                r.subs.append(name)        # an <unscoped-template-name> is a candidate
                r.targs = r.template_args()
        if templated:
            r.type()                       # a function template's encoding names its return type first
        types = []
        while r.i < len(r.s) and r.peek() != ".":     # .constprop.0 and other clone suffixes end it
            types.append(r.type())
    except _Unsupported:
        return None
    return [] if types == ["void"] else types


def mangled_dtype(ctype: str):
    """numpy dtype of a type from ``param_types`` (the element type for pointers and arrays; None if unknown)
    and whether it is a pointer."""
    base = re.sub(r"(\s+(const|volatile|__restrict__))+$", "", ctype)
    if "(*)" in base:       # a pointer to a function: its value is the function's address, a 64-bit number
        return np.dtype(np.uint64), False
    is_pointer = base.endswith(("*", "&"))
    base = re.sub(r"\[\d+\]", "", base[:-1] if is_pointer else base).strip()
    return (None if "*" in base or "&" in base else dtype_of(base, False)), is_pointer
