"""A small C++ lexer for the host-code pass: comment/string masking, preprocessor directives, tokens, top-level
declarations (``split_chunks``) and the pieces of a declaration head (function name, template parameters, class
name). Positions are character offsets into the original text, so blanking keeps every line where it was."""
from __future__ import annotations

import re
from dataclasses import dataclass

CLASS_WORDS = frozenset({"class", "struct", "union"})
ACCESS_WORDS = frozenset({"public", "private", "protected"})
ATTRIBUTE_WORDS = frozenset({"__launch_bounds__", "__attribute__", "__align__", "alignas", "__declspec",
                              "__cluster_dims__", "__maxnreg__", "decltype", "__builtin_align__"})

_TOKEN = re.compile(r"""
    (?P<id>[A-Za-z_]\w*)
  | (?P<num>\.?\d(?:[\w.]|[eEpP][+-])*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<op>::|->|<<=|>>=|\.\.\.|&&|\|\||[-+*/%&|^!=<>]=|\S)
""", re.S | re.X)


@dataclass(slots=True)
class Tok:
    text: str
    start: int
    end: int
    kind: str


_MASKED = re.compile(r"""
    (?P<comment>//[^\n]*(?:(?<=\\)\n[^\n]*)*|/\*.*?(?:\*/|\Z))
  | (?P<str>"(?:[^"\\\n]|\\.)*"?|(?<![\w'])'(?:[^'\\\n]|\\.)*'?)
""", re.S | re.X)
_NOT_NEWLINE = re.compile(r"[^\n]")


def mask(text: str) -> str:
    """Comments -> spaces; string/char literal contents -> spaces (quotes kept). Same length, same newlines."""
    def blank(m: re.Match) -> str:
        body = m.group()
        if m.lastgroup == "comment":
            return _NOT_NEWLINE.sub(" ", body)
        if len(body) >= 2 and body[-1] == body[0]:
            return body[0] + _NOT_NEWLINE.sub(" ", body[1:-1]) + body[-1]
        return body[0] + _NOT_NEWLINE.sub(" ", body[1:])
    return _MASKED.sub(blank, text)


def preprocessor_lines(masked: str) -> list[tuple[int, int, int]]:
    """(first line index, last line index, char offset) of each directive, continuation lines included."""
    lines = masked.split("\n")
    result, i, off = [], 0, 0
    offsets = []
    for line in lines:
        offsets.append(off)
        off += len(line) + 1
    while i < len(lines):
        if lines[i].lstrip().startswith("#"):
            j = i
            while lines[j].rstrip().endswith("\\") and j + 1 < len(lines):
                j += 1
            result.append((i, j, offsets[i]))
            i = j + 1
        else:
            i += 1
    return result


def tokenize(code: str) -> list[Tok]:
    toks = []
    for m in _TOKEN.finditer(code):
        kind = m.lastgroup
        if kind == "op" and m.group().isspace():
            continue
        toks.append(Tok(m.group(), m.start(), m.end(), kind))
    return toks


def match_close(toks: list[Tok], i: int) -> int:
    """Index of the bracket closing toks[i] (one of ( [ {), or len(toks)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    depth = 0
    opener = toks[i].text
    closer = pairs[opener]
    for j in range(i, len(toks)):
        t = toks[j].text
        if t == opener:
            depth += 1
        elif t == closer:
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


@dataclass
class Chunk:
    first: int          # token index
    last: int           # token index (inclusive)
    kind: str           # "function", "class", "decl"
    body: tuple[int, int] | None = None   # token indices of { } for function / class bodies
    namespace: str = ""
    extern_c: bool = False


def split_chunks(toks: list[Tok], lo: int, hi: int, namespace: str = "", extern_c: bool = False) -> list[Chunk]:
    """Split toks[lo:hi] into top-level declarations; namespaces and extern "C" blocks are entered."""
    chunks: list[Chunk] = []
    i = start = lo
    while i < hi:
        t = toks[i].text
        if t in "([" and len(t) == 1:
            i = match_close(toks, i) + 1
            continue
        if t == ";":
            chunks.append(Chunk(start, i, "decl", namespace=namespace, extern_c=extern_c))
            i = start = i + 1
            continue
        if t == "{":
            close = match_close(toks, i)
            words = [x.text for x in toks[start:i]]
            if words and (words[0] == "namespace" or words[:2] == ["inline", "namespace"]):
                name = "".join(w for w in words if w not in ("namespace", "inline"))
                chunks += split_chunks(toks, i + 1, close, namespace + (name + "::" if name else ""), extern_c)
                i = start = close + 1
                continue
            if len(words) == 2 and words[0] == "extern" and toks[start + 1].kind == "str":
                chunks += split_chunks(toks, i + 1, close, namespace, True)
                i = start = close + 1
                continue
            skip = template_prefix_end(words)
            paren = next((k for k, w in enumerate(words) if w == "(" and k >= skip
                          and not (k and words[k - 1] in ATTRIBUTE_WORDS)), None)
            cls = next((k for k, w in enumerate(words) if (w in CLASS_WORDS or w == "enum") and k >= skip), None)
            # an '=' in the template parameters is a default argument (template <bool B = true>), not an initializer
            init = has_top_level(words[skip:], "=")
            if init or (cls is not None and (paren is None or cls < paren)):
                # aggregate initializer or class/enum definition: runs to the next top-level ';'
                j = close + 1
                while j < hi and toks[j].text != ";":
                    j = match_close(toks, j) + 1 if toks[j].text in ("(", "[", "{") else j + 1
                kind = "class" if not init and cls is not None and words[cls] != "enum" else "decl"
                chunks.append(Chunk(start, min(j, hi - 1), kind, (i, close), namespace, extern_c))
                i = start = j + 1
                continue
            if paren is not None and (toks[i - 1].kind == "id" or words[-1] == ">") \
                    and has_top_level(words[paren:], ":"):
                # a brace-initialised member or base in a constructor's initializer list (`: x_{ x, y } {}`),
                # not the body
                i = close + 1
                continue
            chunks.append(Chunk(start, close, "function", (i, close), namespace, extern_c))
            i = start = close + 1
            continue
        i += 1
    if start < hi:
        chunks.append(Chunk(start, hi - 1, "decl", namespace=namespace, extern_c=extern_c))
    return chunks


def has_top_level(words: list[str], what: str) -> bool:
    """Whether ``what`` occurs outside (), [] and {} (a default argument's '=' is inside the parentheses), and not
    as the name of an operator (``T& operator=(const T&)``)."""
    depth = 0
    for k, w in enumerate(words):
        if w in ("(", "[", "{"):
            depth += 1
        elif w in (")", "]", "}"):
            depth -= 1
        elif w == what and depth == 0 and not (k and words[k - 1] == "operator"):
            return True
    return False


def class_name(head: list[str]) -> str | None:
    """``struct __align__(16) Foo : Base`` -> "Foo"; None for an anonymous class."""
    start = template_prefix_end(head)
    k = next((i for i, w in enumerate(head) if w in CLASS_WORDS and i >= start), None)
    if k is None:
        return None
    i = k + 1
    while i < len(head):
        w = head[i]
        # an attribute, or a function-like macro standing for one (`struct MGPU_ALIGN(8) range_t`: a class's name is
        # never followed by parentheses)
        if w in ATTRIBUTE_WORDS or w in ("alignas", "final") or (i + 1 < len(head) and head[i + 1] == "("):
            i += 1
            if i < len(head) and head[i] == "(":
                depth = 0
                while i < len(head):
                    depth += (head[i] == "(") - (head[i] == ")")
                    i += 1
                    if depth == 0:
                        break
            continue
        if w == "[" and i + 1 < len(head) and head[i + 1] == "[":     # [[attribute]]
            while i < len(head) and not (head[i] == "]" and i + 1 < len(head) and head[i + 1] == "]"):
                i += 1
            i += 2
            continue
        return w if re.match(r"[A-Za-z_]\w*$", w) else None
    return None


def names_std_member(words: list[str]) -> bool:
    """``std :: name`` (not ``cuda :: std :: name``): a C++ library name, whose header is set aside."""
    return any(w == "std" and k + 1 < len(words) and words[k + 1] == "::" and (k == 0 or words[k - 1] != "::")
               for k, w in enumerate(words))


def template_prefix_end(words: list[str]) -> int:
    """Index just after a leading ``template <...>`` (nested: ``template <...> template <...>``); 0 if none."""
    k = 0
    while k + 1 < len(words) and words[k] == "template" and words[k + 1] == "<":
        depth = paren = 0
        for j in range(k + 1, len(words)):
            # in parentheses < and > compare (a default argument `bool valid = (i < count)`: C++ [temp.names])
            paren += (words[j] == "(") - (words[j] == ")")
            if paren > 0:
                continue
            if words[j] == "<":
                depth += 1
            elif words[j] in (">", ">>"):
                depth -= len(words[j])
                if depth <= 0:
                    k = j + 1
                    break
        else:
            return len(words)
    return k


def head_words(toks: list[Tok], chunk: Chunk) -> list[str]:
    end = chunk.body[0] if chunk.body else chunk.last + 1
    return [t.text for t in toks[chunk.first:end]]


def template_params(words: list[str]) -> list[tuple[str, str]]:
    """``template < typename T , int N = 4 >`` -> [("typename", "T"), ("int", "N")]."""
    if not words or words[0] != "template" or len(words) < 2 or words[1] != "<":
        return []
    depth, paren, cur, params = 0, 0, [], []
    for w in words[1:]:
        paren += (w == "(") - (w == ")")
        if w == "<" and paren == 0:
            depth += 1
            if depth == 1:
                continue
        elif w in (">", ">>") and paren == 0:
            depth -= len(w)
            if depth <= 0:
                if cur:
                    params.append(cur)
                break
        if depth == 1 and paren == 0 and w == ",":
            params.append(cur)
            cur = []
            continue
        cur.append(w)
    result = []
    for p in params:
        if "=" in p:
            p = p[:p.index("=")]
        if "(" in p and p[p.index("(") + 1:p.index("(") + 2] == ["*"]:
            # a function pointer: float (*bin_op)(const float, const float) - the name is the pointer's
            i = p.index("(")
            inner = p[i + 2:p.index(")", i)] if ")" in p[i:] else []
            if inner and re.match(r"[A-Za-z_]\w*$", inner[-1]):
                result.append((" ".join(w for w in p if w != inner[-1]), inner[-1]))
                continue
        names = [w for w in p if re.match(r"[A-Za-z_]\w*$", w)]
        if not names:
            continue
        result.append((" ".join(names[:-1]) or "typename", names[-1]))
    return result


def _attribute_macro(words: list[str], k: int, macros) -> bool:
    """Whether ``words[k - 1](...)`` is a function-like macro standing where an attribute does, between the return
    type and the name (SHOC's ``__global__ void LAUNCH_BOUNDS(256, 4) gr_base(...)``) or before the return type
    (cudpp's ``__global__ LAUNCH_BOUNDS(32) void radixSortSingleWarp(...)``): a macro the file defines with
    parameters, or an upper-case name, whose call is followed by the function's name and its '(', or by type
    words and then the name and its '('."""
    prev = words[k - 1]
    if prev not in macros and not re.fullmatch(r"[A-Z][A-Z0-9_]*", prev):
        return False
    if k < 2 or words[k - 2] in ("(", ",", "=", "return", "::", ".", "->"):
        return False
    d = 0
    for j in range(k, len(words)):
        d += (words[j] == "(") - (words[j] == ")")
        if d == 0:
            if j + 2 < len(words) and re.fullmatch(r"[A-Za-z_]\w*", words[j + 1]) is not None \
                    and words[j + 2] in ("(", "<"):
                return True
            # type words, then the name and its '(': void radixSortSingleWarp(, unsigned int *f(
            rest = words[j + 1:]
            if "(" not in rest:
                return False
            before = rest[:rest.index("(")]
            return len(before) >= 2 and re.fullmatch(r"[A-Za-z_]\w*", before[-1]) is not None and \
                all(re.fullmatch(r"[A-Za-z_]\w*", w) or w in ("*", "&", "::") for w in before)
    return False


def function_name(words: list[str], macros=frozenset()) -> tuple[str | None, int]:
    """Name of the function declared in a chunk head (identifier before the first top-level '('); a call of an
    attribute-like macro before the name (``macros``: the file's function-like macros) is passed over."""
    depth = 0
    skip_to = -1
    for k, w in enumerate(words):
        if k <= skip_to:
            continue
        if w == "(" and k and (words[k - 1] in ATTRIBUTE_WORDS or (depth == 0 and _attribute_macro(words, k, macros))):
            d = 0
            for j in range(k, len(words)):
                d += (words[j] == "(") - (words[j] == ")")
                if d == 0:
                    skip_to = j
                    break
            continue
        if w == "<" and k and words[k - 1] == "template":
            depth += 1
        elif depth and w in (">", ">>"):
            depth -= len(w)
        elif depth == 0 and w == "(" and k > 0:
            j = k - 1
            if words[j] == ">":        # explicit instantiation: name<args>(
                d = 0
                while j >= 0:
                    d += (words[j] == ">") - (words[j] == "<")
                    if d == 0:
                        break
                    j -= 1
                j -= 1
            if j >= 0 and re.match(r"[A-Za-z_]\w*$", words[j]) and words[j] not in ("__attribute__",
                                                                                   "__launch_bounds__"):
                return words[j], k
            return None, k
    return None, -1
