"""Structs passed by value (``__global__ void k(Params p)``): their fields, so that a spec, the command line or
Python can give one.

PTX passes a struct by value as bytes (``.param .align 4 .b8 k_param_0[28]``) and says nothing of its fields.
Their **names** come from the struct's declaration in the compiled text (:meth:`_Source.members`); their **offsets, sizes,
alignments and types** come from NVRTC itself: the file is compiled once more with one array of
``__builtin_offsetof`` / ``sizeof`` / ``alignof`` / a type code per field appended (:func:`probe_source`), and the
array's initialiser is read back from the PTX (:func:`read_probe`). A layout is kept only when the fields found
tile the struct exactly as C++ lays one out - each at the first offset its alignment allows after the one
before, the struct's size the last one's end rounded up to the struct's alignment (the C++ standard,
[class.mem]: non-static members of a class are allocated in declaration order; the Itanium C++ ABI that NVCC
follows places each at the next offset aligned for it, non-virtual base classes first). A bit-field, a member the
parse did not see (a branch of an ``#if``), a union leave a gap or an overlap, and the struct is refused with the
reason.

What a user gives is one value per **leaf**: a number field, a fixed array of numbers (its elements, row-major),
a CUDA vector type (its components), a pointer (an array in global memory); a nested struct's leaves are named
with dots (``in.b``), and an array of structs gives each of its leaves an outer dimension.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from perfmodel.compile.lexer import ATTRIBUTE_WORDS, CLASS_WORDS, mask, match_close, tokenize

# The layouts are cached with the compile (compile/cache.py's Record.layouts): a change to what this module reads
# from a declaration or the probe needs compiler.FORMAT_VERSION raised.
MAX_DEPTH = 4            # nested structs followed
MAX_FIELDS = 512         # fields probed per struct (arrays of structs are probed at their element 0)

_SKIP_FIRST = {"static", "typedef", "using", "friend", "template", "static_assert", "enum", "~", "operator"}
_QUALIFIERS = {"const", "volatile", "mutable", "__restrict__", "__restrict", "restrict", "register", "struct",
               "class", "typename"}
_ACCESS = {"public", "private", "protected"}
_MACRO_WORD = re.compile(r"__\w+__$")

# the type codes of the probe (K<T>::v below)
_KIND_FLOAT, _KIND_SIGNED, _KIND_UNSIGNED, _KIND_BOOL, _KIND_POINTER, _KIND_ENUM = 1, 2, 3, 4, 5, 6
_SIGNED = ("char", "signed char", "short", "int", "long", "long long")
_UNSIGNED = ("unsigned char", "unsigned short", "unsigned int", "unsigned long", "unsigned long long")

# Every name is reserved-looking: a file's macros (``#define N 1024``, ``#define P double``) must not reach them.
_NS = "__perfmodel_probe"
PROBE_HEADER = (
    f"namespace {_NS} {{\n"
    "template <class __pmT> struct __pmK { enum { __pmv = __is_enum(__pmT) ? 6 : 0 }; };\n"
    "template <> struct __pmK<float> { enum { __pmv = 1 }; };\n"
    "template <> struct __pmK<double> { enum { __pmv = 1 }; };\n"
    + "".join(f"template <> struct __pmK<{t}> {{ enum {{ __pmv = 2 }}; }};\n" for t in _SIGNED)
    + "".join(f"template <> struct __pmK<{t}> {{ enum {{ __pmv = 3 }}; }};\n" for t in _UNSIGNED)
    + "template <> struct __pmK<bool> { enum { __pmv = 4 }; };\n"
    "template <class __pmT> struct __pmK<__pmT*> { enum { __pmv = 5 }; };\n"
    "template <class __pmT> struct __pmK<const __pmT> : __pmK<__pmT> {};\n"
    "template <class __pmT> struct __pmK<volatile __pmT> : __pmK<__pmT> {};\n"
    "template <class __pmT> struct __pmK<const volatile __pmT> : __pmK<__pmT> {};\n"
    "template <class __pmT> struct __pmK<__pmT* __restrict__> : __pmK<__pmT*> {};\n"
    "template <class __pmT, decltype(sizeof(0)) __pmN> struct __pmK<__pmT[__pmN]> : __pmK<__pmT> {};\n"
    "template <class __pmT> struct __pmE { typedef __pmT __pmt; };\n"
    "template <class __pmT, decltype(sizeof(0)) __pmN> struct __pmE<__pmT[__pmN]> : __pmE<__pmT> {};\n"
    "template <class __pmT> struct __pmS { enum { __pmv = sizeof(__pmT) }; };\n"
    "template <> struct __pmS<void> { enum { __pmv = 0 }; };\n"
    "template <> struct __pmS<const void> { enum { __pmv = 0 }; };\n"
    "template <class __pmT> struct __pmP { enum { __pmk = 0, __pms = 0 }; };\n"
    "template <class __pmT> struct __pmP<__pmT*> { enum { __pmk = __pmK<__pmT>::__pmv, __pms = __pmS<__pmT>::__pmv }; };\n"
    "template <class __pmT> struct __pmP<__pmT* const> : __pmP<__pmT*> {};\n"
    "template <class __pmT> struct __pmP<__pmT* volatile> : __pmP<__pmT*> {};\n"
    "template <class __pmT> struct __pmP<__pmT* __restrict__> : __pmP<__pmT*> {};\n"
    "template <class __pmT, decltype(sizeof(0)) __pmN> struct __pmP<__pmT[__pmN]> : __pmP<__pmT> {};\n"
    "}\n"
    "#define __PERFMODEL_FIELD(__pmT, __pmf) __builtin_offsetof(__pmT, __pmf), sizeof(((__pmT*)0)->__pmf), "
    "alignof(decltype(((__pmT*)0)->__pmf)), "
    f"{_NS}::__pmK<decltype(((__pmT*)0)->__pmf)>::__pmv, "
    f"sizeof(typename {_NS}::__pmE<decltype(((__pmT*)0)->__pmf)>::__pmt), "
    f"{_NS}::__pmP<decltype(((__pmT*)0)->__pmf)>::__pmk, {_NS}::__pmP<decltype(((__pmT*)0)->__pmf)>::__pms\n")
_PER_FIELD = 7
_OPEN = "#define private public\n#define protected public\n"


# ---- the layout ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Leaf:
    """One value a user gives: ``path`` (``n``, ``in.b``), its elements' numpy dtype, the byte offset of its first
    element in the struct, and its shape and byte strides (``()`` for one number)."""
    path: str
    ctype: str                       # the declared type, for messages ("unsigned int", "double[2]", "float*")
    dtype: str                       # numpy dtype name of one element; "uint64" for a pointer
    offset: int
    shape: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    pointer: bool = False
    pointee: str | None = None       # a pointer's element dtype, where it is a number

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    def offsets(self) -> np.ndarray:
        """Byte offset of every element, row-major."""
        out = np.array([self.offset], np.int64)
        for n, s in zip(self.shape, self.strides):
            out = (out[:, None] + s * np.arange(n)).reshape(-1)
        return out

    def describe(self) -> str:
        what = "a pointer: an array" if self.pointer else self.dtype
        return f"{self.path} ({what}" + (f", {self.count} values" if self.shape else "") + ")"


@dataclass(frozen=True)
class StructLayout:
    ctype: str
    size: int = 0
    leaves: tuple[Leaf, ...] = ()
    error: str | None = None         # why its fields are not known (the struct cannot be given)

    def leaf(self, path: str) -> Leaf | None:
        return next((f for f in self.leaves if f.path == path), None)

    def describe(self) -> str:
        return ", ".join(f.describe() for f in self.leaves)

    def to_json(self) -> dict:
        if self.error is not None:
            return {"ctype": self.ctype, "error": self.error}
        return {"ctype": self.ctype, "size": self.size,
                "leaves": [[f.path, f.ctype, f.dtype, f.offset, list(f.shape), list(f.strides), f.pointer, f.pointee]
                           for f in self.leaves]}

    @classmethod
    def from_json(cls, data: dict) -> StructLayout:
        if "error" in data:
            return cls(data["ctype"], error=data["error"])
        return cls(data["ctype"], int(data["size"]), tuple(
            Leaf(p, c, d, int(o), tuple(s), tuple(st), bool(ptr), pe) for p, c, d, o, s, st, ptr, pe in data["leaves"]))

    def pack(self, values: dict[str, np.ndarray]) -> bytes:
        """The struct's bytes from one array per leaf (``values[path]``, already of the leaf's dtype and count;
        a pointer's the address); bytes no leaf covers (padding) are zero."""
        buf = np.zeros(self.size, np.uint8)
        for f in self.leaves:
            data = np.ascontiguousarray(values[f.path], dtype=np.dtype(f.dtype)).reshape(-1)
            size = data.dtype.itemsize
            where = f.offsets()[:, None] + np.arange(size)
            buf[where] = data.view(np.uint8).reshape(-1, size)
        return buf.tobytes()


# ---- the declaration -----------------------------------------------------------------------------------------
@dataclass
class Member:
    name: str
    type_text: str                   # "float", "Inner", "float2" (no * & or qualifiers)
    dims: int = 0                    # [] after the name
    pointer: bool = False            # declared with *
    const: bool = False              # const before the * (a pointer to const) or on the value
    body: tuple[int, int] | None = None   # token range of an inline struct's braces (struct {...} name;)
    children: list[Member] | None = None  # a nested struct's members, once found
    after_base: bool = False         # the first own member after base classes (may follow their tail padding)
    vector: str | None = None        # the CUDA vector type an alias of its type names (HOOMD's Scalar3: double3)


class _Source:
    """The compiled text's tokens (comments blanked, directives dropped), searched for definitions."""

    def __init__(self, text: str):
        masked = mask(text)
        masked = re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", "", masked)
        self.toks = tokenize(masked)
        self.words = [t.text for t in self.toks]

    def definition(self, name: str) -> tuple[int, int, str, list[str]] | None:
        """Token indices of the braces of ``struct NAME {`` / ``class NAME {`` / ``typedef struct {...} NAME;``,
        the keyword (``union`` too, which is refused) and the base classes' names, in order (``virtual`` kept in
        the name, which is refused)."""
        w = self.words
        for i, word in enumerate(w):
            if word not in CLASS_WORDS or (i > 0 and w[i - 1] == "enum"):     # (enum class: a number)
                continue
            j = i + 1
            while j < len(w) and (w[j] in ATTRIBUTE_WORDS or w[j] == "alignas" or _MACRO_WORD.match(w[j])
                                  and j + 1 < len(w) and re.match(r"[A-Za-z_]", w[j + 1])):
                # __align__(8), alignas(8), and the headers' attribute macros (struct __device_builtin__ T)
                j = match_close(self.toks, j + 1) + 1 if j + 1 < len(w) and w[j + 1] == "(" else j + 1
            tag = w[j] if j < len(w) and re.match(r"[A-Za-z_]\w*$", w[j]) else None
            k = j + 1 if tag else j
            if tag == name:
                if k < len(w) and w[k] == "final":
                    k += 1
                bases: list[str] = []
                if k < len(w) and w[k] == ":":          # base classes: ": public Base, TB<double>"
                    start = k + 1
                    while k < len(w) and w[k] not in ("{", ";"):
                        k += 1
                    bases = [b for b in (" ".join(x for x in part.split() if x not in _ACCESS)
                                         for part in _split_angles(w[start:k])) if b]
                if k < len(w) and w[k] == "{":
                    return k, match_close(self.toks, k), word, bases
            if i > 0 and w[i - 1] == "typedef" and k < len(w) and w[k] == "{":
                close = match_close(self.toks, k)
                m = close + 1
                names = []
                while m < len(w) and w[m] != ";":
                    if re.match(r"[A-Za-z_]\w*$", w[m]) and w[m - 1] != "*":
                        names.append(w[m])
                    m += 1
                if name in names:
                    return k, close, word, []
        return None

    def alias(self, name: str) -> str | None:
        """What ``using NAME = TYPE;`` (an alias template too) names; None without one."""
        w = self.words
        for i in range(len(w) - 3):
            if w[i] == "using" and w[i + 1] == name and w[i + 2] == "=":
                end = i + 3
                while end < len(w) and w[end] != ";":
                    end += 1
                return " ".join(w[i + 3:end])
        return None

    def members(self, lo: int, hi: int) -> list[Member] | str:
        """The data members between the braces at ``lo`` and ``hi``; a string says why they cannot be read."""
        w, toks = self.words, self.toks
        out: list[Member] = []
        i = lo + 1
        while i < hi:
            stmt: list[int] = []               # token indices; a bracket group is its opening index
            function = False
            while i < hi:
                t = w[i]
                if t in ("(", "["):
                    stmt.append(i)
                    i = match_close(toks, i) + 1
                    continue
                if t == "{":
                    close = match_close(toks, i)
                    words = [w[k] for k in stmt]
                    initialised = any(x == "=" and (n == 0 or words[n - 1] != "operator") for n, x in enumerate(words))
                    if "(" in words and not initialised:          # a member function's body (operator= too)
                        function = True
                        i = close + 1
                        if i < hi and w[i] == ";":
                            i += 1
                        break
                    stmt.append(i)
                    i = close + 1
                    continue
                if t == ";":
                    i += 1
                    break
                if t == ":" and len(stmt) == 1 and w[stmt[0]] in _ACCESS:
                    stmt = []
                    i += 1
                    continue
                stmt.append(i)
                i += 1
            if function or not stmt:
                continue
            got = self._declaration(stmt)
            if isinstance(got, str):
                return got
            out += got
        return out

    def _declaration(self, stmt: list[int]) -> list[Member] | str:
        w = self.words
        # attributes: __align__(8), alignas(8), __attribute__((...))
        stmt = [k for n, k in enumerate(stmt) if not (w[k] in ATTRIBUTE_WORDS and w[k] != "decltype")
                and not (w[k] == "(" and n and w[stmt[n - 1]] in ATTRIBUTE_WORDS and w[stmt[n - 1]] != "decltype")]
        words = [w[k] for k in stmt]
        if not words or words[0] in _SKIP_FIRST or words[0] == "constexpr":
            return []
        body = None
        if words[0] in CLASS_WORDS and "{" in words:
            at = words.index("{")
            if words[0] == "union":
                return "it has a union member"
            body = (stmt[at], self._close(stmt[at]))
            stmt, words = stmt[at + 1:], words[at + 1:]
            type_words: list[str] | None = []
        else:
            type_words = None
        if "(" in words:                               # a member function or constructor declaration
            return []
        declarators, cur, angle = [], [], 0
        for k, word in zip(stmt, words):
            if word == "=":
                angle = -99                  # an initializer: its '<' is a comparison
            elif word in ("<", ">", ">>") and angle >= 0:
                angle += 1 if word == "<" else -len(word)
            if word == "," and angle <= 0:
                declarators.append(cur)
                cur, angle = [], 0
            else:
                cur.append(k)
        declarators.append(cur)
        out = []
        for d in declarators:
            dw = [w[k] for k in d]
            if "=" in dw:
                cut = dw.index("=")
                d, dw = d[:cut], dw[:cut]
            if "{" in dw:                              # int x{0};
                cut = dw.index("{")
                d, dw = d[:cut], dw[:cut]
            if ":" in dw:
                return "it has a bit-field"
            names = [n for n, word in enumerate(dw) if re.match(r"[A-Za-z_]\w*$", word) and word not in _QUALIFIERS]
            if not names:
                return []
            at = names[-1]
            name = dw[at]
            dims = dw[at + 1:].count("[")
            if type_words is None:
                type_words = [x for x in dw[:at] if x not in ("*", "&") and x not in _QUALIFIERS]
            head = dw[:dw.index("*")] if "*" in dw[:at] else dw[:at]
            out.append(Member(name, " ".join(type_words), dims, "*" in dw[:at], const="const" in head
                              or words[0] == "const", body=body))
        return out

    def _close(self, k: int) -> int:
        return match_close(self.toks, k)


def _split_angles(words: list[str]) -> list[str]:
    """Words split at the commas outside ``<...>``, each part joined with spaces."""
    parts, cur, depth = [], [], 0
    for x in words:
        depth += (x == "<") - (x == ">") - 2 * (x == ">>")
        if x == "," and depth <= 0:
            parts.append(" ".join(cur))
            cur = []
        else:
            cur.append(x)
    parts.append(" ".join(cur))
    return parts


def _bare(ctype: str) -> str:
    """``const Params`` -> ``Params``; ``const ns::P<float, 2>`` -> ``ns::P<float, 2>``."""
    return " ".join(x for x in ctype.replace("&", " ").split() if x not in ("const", "volatile", "struct",
                                                                            "class", "typename"))


def _base_name(ctype: str) -> str:
    return re.sub(r"<.*", "", _bare(ctype)).split("::")[-1].strip()


def _aliased_vector(src, type_text: str, typedefs) -> str | None:
    """The CUDA vector type a typedef or `using` alias of ``type_text`` names, through a few aliases
    (`typedef double3 Scalar3;`), or None."""
    from perfmodel.compile.signature import vector_dtype

    name = _base_name(type_text)
    for _ in range(4):
        if vector_dtype(name) is not None:
            return name if name != _base_name(type_text) else None
        if len((typedefs or {}).get(name, ())) == 1:
            name = _base_name(typedefs[name][0])
        elif src.alias(name):
            name = _base_name(src.alias(name))
        else:
            return None
    return None


def _number_type(type_text: str, typedefs) -> bool:
    from perfmodel.compile.signature import dtype_of

    return dtype_of(type_text, False, typedefs) is not None


@dataclass
class Probe:
    """What to ask NVRTC for one struct type: the field paths, in the order of :func:`_paths`."""
    ctype: str
    namespace: str
    members: list[Member] | None = None
    error: str | None = None
    paths: list[str] = field(default_factory=list)


def plan(ctype: str, namespace: str, text: str, typedefs, source: _Source | None = None) -> Probe:
    """Find the struct's declaration (and of the structs it nests) in the compiled text."""
    src = source or _Source(text)
    probe = Probe(_bare(ctype), namespace)
    name, found = _find(src, _base_name(ctype), typedefs)
    if found is None:
        # a struct of the CUDA headers (cudaPitchedPtr, in driver_types.h): their top folder's files
        header = _sdk_source(name)
        if header is not None:
            src, found = header, header.definition(name)
    if found is None:
        probe.error = f"perfmodel found no definition of {name!r} in the compiled text or the CUDA headers' " \
                      "folder (a library's struct, std::pair, is not looked for)"
        return probe
    members = _declared(src, name, found, typedefs, 1)
    if isinstance(members, str):
        probe.error = f"{name}: {members}" if not members.startswith(name) else members
        return probe
    error = _nest(src, members, typedefs, 1)
    if error:
        probe.error = error
        return probe
    probe.members = members
    probe.paths = _paths(members, "")
    if len(probe.paths) > MAX_FIELDS:
        probe.error = f"{name} has more than {MAX_FIELDS} fields (nested ones counted)"
    return probe


def _find(src: _Source, name: str, typedefs) -> tuple[str, tuple | None]:
    """(the name defined, its :meth:`_Source.definition`), through the file's typedefs (typedef struct Foo
    Foo_t;)."""
    found = src.definition(name) if name else None
    for _ in range(4):
        if found is not None:
            break
        if len((typedefs or {}).get(name, ())) == 1:
            name = _base_name(typedefs[name][0])
        elif src.alias(name):
            name = _base_name(src.alias(name))      # template <...> using A = B<T, 1>;
        else:
            break
        found = src.definition(name)
    return name, found


def _declared(src: _Source, name: str, found: tuple, typedefs, depth: int) -> list[Member] | str:
    """The data members of a found definition, its base classes' first (the Itanium C++ ABI places non-virtual
    bases before the class's own members, in declaration order); a string says why they cannot be read."""
    lo, hi, keyword, bases = found
    if keyword == "union":
        return f"{name} is a union"
    out: list[Member] = []
    for base in bases:
        if "virtual" in base.split():
            return f"{name} has a virtual base class ({base})"
        base_name, base_found = _find(src, _base_name(base), typedefs)
        if base_found is None or depth >= MAX_DEPTH:
            return f"{name} derives from {base}, whose definition perfmodel did not find"
        inherited = _declared(src, base_name, base_found, typedefs, depth + 1)
        if isinstance(inherited, str):
            return inherited
        if out and inherited:
            inherited[0].after_base = True
        out += inherited
    own = src.members(lo, hi)
    if isinstance(own, str):
        return own
    if out and own:
        own[0].after_base = True
    return out + own


def _sdk_source(name: str) -> _Source | None:
    """The CUDA header (top folder of the NVIDIA wheels' include directories) that defines struct ``name``."""
    from pathlib import Path

    from perfmodel.compile import nvrtc

    pattern = re.compile(r"\b(?:struct|class)\s+(?:__\w+__\s+)*" + re.escape(name) + r"\s*(?:final\s*)?[:{]")
    for folder in nvrtc.sdk_include_dirs():
        for path in sorted(Path(folder).glob("*.h")):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            if pattern.search(text):
                return _Source(text)
    return None


def _nest(src: _Source, members: list[Member], typedefs, depth: int) -> str | None:
    from perfmodel.compile.signature import vector_dtype

    for m in members:
        if m.pointer:
            continue
        if m.body is not None:
            inner = src.members(*m.body)
        else:
            m.vector = _aliased_vector(src, m.type_text, typedefs)
            if _number_type(m.type_text, typedefs) or vector_dtype(m.type_text) is not None or m.vector or \
                    m.type_text in ("half", "__half", "__nv_bfloat16", "nv_bfloat16", "bool"):
                continue
            name, found = _find(src, _base_name(m.type_text), typedefs)
            if found is None:
                continue                           # the probe tells whether it is a number (a typedef, an enum)
            if found[2] == "union":
                return f"its field {m.name} is a union"
            inner = _declared(src, name, found, typedefs, depth)
        if isinstance(inner, str):
            return f"its field {m.name}: {inner}"
        if depth >= MAX_DEPTH:
            return f"its field {m.name} nests structs more than {MAX_DEPTH} deep"
        m.children = inner
        error = _nest(src, inner, typedefs, depth + 1)
        if error:
            return error
    return None


def _paths(members: list[Member], prefix: str) -> list[str]:
    out = []
    for m in members:
        path = f"{prefix}{m.name}"
        out.append(path)
        if m.children is not None:
            out += _paths(m.children, path + "[0]" * m.dims + ".")
    return out


def probe_source(probes: list[Probe]) -> str:
    """The text appended to the compiled file: one ``__perfmodel_layout_<n>`` array per struct (in the kernel's
    namespace, so that the type is looked up as the kernel's signature looks it up)."""
    out = [PROBE_HEADER]
    for n, p in enumerate(probes):
        if p.error is not None:
            continue
        alias = f"__perfmodel_type_{n}"          # a template's commas would split the macro's arguments
        items = [f"sizeof({alias})", f"alignof({alias})"] + [f"__PERFMODEL_FIELD({alias}, {path})"
                                                             for path in p.paths]
        parts = [x for x in p.namespace.split("::") if x]
        out.append("".join(f"namespace {x} {{ " for x in parts) + f"typedef {p.ctype} {alias}; "
                   + f'extern "C" __device__ unsigned long long __perfmodel_layout_{n}[] = {{{", ".join(items)}}};'
                   + " }" * len(parts) + "\n")
    return "\n" + "".join(out)


_PTX_ARRAY = re.compile(r"\.global\s+(?:\.align\s+\d+\s+)?\.(b8|u64|b64)\s+__perfmodel_layout_(\d+)\[(\d+)\]\s*="
                        r"\s*\{([^}]*)\}")


def read_probe(ptx: str) -> dict[int, list[int]]:
    """``__perfmodel_layout_<n>`` -> its numbers, from the PTX's initialisers (bytes or 64-bit words; the
    elements past the last one written are zero)."""
    out = {}
    for m in _PTX_ARRAY.finditer(ptx):
        numbers = [int(x, 0) for x in m.group(4).replace("\n", " ").split(",") if x.strip()]
        numbers += [0] * (int(m.group(3)) - len(numbers))        # PTX leaves out trailing zeros
        if m.group(1) == "b8":
            numbers = np.frombuffer(bytes(numbers), "<u8").tolist()
        out[int(m.group(2))] = numbers
    return out


def layout(probe: Probe, numbers: list[int] | None) -> StructLayout:
    """The leaves of a probed struct, or the reason it cannot be laid out."""
    if probe.error is not None:
        return StructLayout(probe.ctype, error=probe.error)
    if numbers is None or len(numbers) != 2 + _PER_FIELD * len(probe.paths):
        return StructLayout(probe.ctype, error="NVRTC did not compile the probe of its fields")
    size, align = numbers[:2]
    if not probe.paths:
        # an empty struct (a functor with only member functions, HeCBench pool's AvgPoolGrad<float>): its byte
        # carries nothing
        return StructLayout(probe.ctype, size, ())
    facts = {path: numbers[2 + _PER_FIELD * n: 2 + _PER_FIELD * (n + 1)] for n, path in enumerate(probe.paths)}
    leaves: list[Leaf] = []
    error = _level(probe.members or [], facts, "", "", 0, size, align, (), (), leaves, probe.ctype)
    if error is None:
        error = next((f"its field {f.path} is an array of pointers (not supported)" for f in leaves
                      if f.pointer and f.shape), None)
    if error:
        return StructLayout(probe.ctype, error=error)
    return StructLayout(probe.ctype, size, tuple(leaves))


def _level(members, facts, prefix, name_prefix, base, size, align, shape, strides, leaves, where) -> str | None:
    """Check that ``members`` tile ``size`` bytes from ``base`` and add their leaves."""
    from perfmodel.compile.signature import vector_dtype

    end, widest = 0, 1
    for m in members:
        path = f"{prefix}{m.name}"
        off, fsize, falign, kind, esize, pkind, psize = facts[path]
        rel = off - base
        expect = _round_up(end, falign)
        # after the base classes, a POD base's tail padding is not reused (the Itanium C++ ABI's dsize = sizeof):
        # the first own member may also start at the bases' end rounded up to their alignment
        after_bases = _round_up(end, widest) if m.after_base else expect
        widest = max(widest, falign)
        if rel not in (expect, after_bases):
            what = f"bytes {end} to {rel - 1}" if rel > end else f"byte {rel}"
            return (f"{what} of {where} are not the fields perfmodel found in its declaration before {m.name} (a "
                    "member inside #if, an alignas or #pragma pack, a virtual function table's pointer)")
        end = rel + fsize
        count = fsize // esize if esize else 0
        own = ((count,), (esize,)) if m.dims or count > 1 else ((), ())
        name = f"{name_prefix}{m.name}"
        ctype = ("const " if m.const else "") + (m.type_text or "struct") + ("*" if m.pointer else "") \
            + (f"[{count}]" if m.dims else "")
        if m.children is not None and kind == 0:
            error = _level(m.children, facts, path + "[0]" * m.dims + ".", name + ".", off, esize,
                           falign, shape + own[0], strides + own[1], leaves, f"{where}::{m.name}")
            if error:
                return error
            continue
        dtype = _number_dtype(kind, esize)
        comp: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
        pointee = None
        if kind == _KIND_POINTER:
            pointee = _number_dtype(pkind, psize)
            dtype = "uint64"
        elif dtype is None:
            base_text = m.type_text.split("::")[-1]
            vec = vector_dtype(m.vector or base_text)
            if base_text in ("half", "__half") and esize == 2:
                dtype = "float16"
            elif base_text in ("__nv_bfloat16", "nv_bfloat16") and esize == 2:
                dtype = "bfloat16"
            elif vec is not None and vec.itemsize == esize:
                first = vec.fields[vec.names[0]][0]
                dtype = first.name
                comp = ((len(vec.names),), (first.itemsize,))
            else:
                return f"its field {name} is {m.type_text or 'of a type'} perfmodel cannot lay out"
        leaves.append(Leaf(name, ctype, dtype, off, shape + own[0] + comp[0], strides + own[1] + comp[1],
                           kind == _KIND_POINTER, pointee))
    if _round_up(end, align) != size:
        return (f"bytes {end} to {size - 1} of {where} are not the fields perfmodel found in its declaration (a "
                "member inside #if, an alignas)")
    return None


def _round_up(n: int, align: int) -> int:
    return -(-n // max(align, 1)) * max(align, 1)


def _number_dtype(kind: int, size: int) -> str | None:
    if kind == _KIND_FLOAT and size in (4, 8):
        return f"float{8 * size}"
    if kind in (_KIND_SIGNED, _KIND_ENUM) and size in (1, 2, 4, 8):
        return f"int{8 * size}"
    if kind == _KIND_UNSIGNED and size in (1, 2, 4, 8):
        return f"uint{8 * size}"
    if kind == _KIND_BOOL and size == 1:
        return "bool"
    return None


def layouts(text: str, options: list[str], probes: list[Probe]) -> list[StructLayout]:
    """Compile ``text`` with the probes appended and read each struct's layout (each alone again where the joint
    compile fails, so that one struct's inaccessible member does not cost the others theirs)."""
    from perfmodel.compile import nvrtc

    todo = [p for p in probes if p.error is None]
    results: dict[int, list[int]] = {}
    errors: dict[int, str] = {}
    if todo:
        result = nvrtc.compile_program(text + probe_source(probes), "kernel.cu", options)
        if result.ok:
            results = read_probe(result.ptx or "")
        else:
            for n, p in enumerate(probes):
                if p.error is not None:
                    continue
                alone = [p if k == n else Probe(q.ctype, q.namespace, error="-") for k, q in enumerate(probes)]
                again = nvrtc.compile_program(text + probe_source(alone), "kernel.cu", options)
                if not again.ok and "is inaccessible" in again.log:
                    # private members: the layout does not depend on access (the Itanium C++ ABI, which NVCC
                    # follows, allocates every non-static data member in declaration order), so the probe alone
                    # is compiled with every member public - the kernel's own compile is untouched
                    again = nvrtc.compile_program(_OPEN + text + probe_source(alone), "kernel.cu", options)
                if again.ok:
                    results.update(read_probe(again.ptx or ""))
                else:
                    first = next((line for line in again.log.splitlines() if "error" in line), "")
                    errors[n] = first.split("error:", 1)[-1].strip() or "(no message)"
    out = []
    for n, p in enumerate(probes):
        if n in errors:
            out.append(StructLayout(p.ctype, error=f"NVRTC could not compile the probe of its fields: {errors[n]}"))
        else:
            out.append(layout(p, results.get(n)))
    return out
