"""Light pre-pass that turns a CUDA C translation unit into C that pycparser parses.

Every transformation keeps line numbers intact (lines are blanked, never deleted) and records, per line, how
columns moved when a macro was expanded, so that every pycparser coordinate maps back to the user's file:line:col.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from perfmodel.errors import FrontendError, Location

_IDENT = re.compile(r"[A-Za-z_]\w*")
_DIRECTIVE = re.compile(r"^\s*#\s*(\w+)(.*)$")

# Same-length replacements keep every column where it was.
_KEYWORDS = {
    "__device__": "", "__host__": "", "__global__": "", "__forceinline__": "", "__noinline__": "",
    "__inline__": "inline", "__restrict__": "restrict", "__restrict": "restrict",
    "__shared__": "static", "__constant__": "extern", "__managed__": None,
    "__launch_bounds__": "", "__align__": "",
}
_PAREN_KEYWORDS = ("__launch_bounds__", "__align__")

# Typedefs pycparser needs for CUDA spellings; a #line directive after them restores the user's numbering.
_PRELUDE = ("typedef _Bool bool; typedef unsigned int uint; typedef unsigned long size_t; typedef int int32_t; "
            "typedef unsigned int uint32_t; typedef long long int64_t; typedef unsigned long long uint64_t;\n")


@dataclass
class Prepassed:
    text: str                       # what pycparser parses (prelude + transformed source)
    defines: dict                   # effective object-like #defines (after overrides), name -> replacement text
    kernel_names: list              # functions declared __global__, in source order
    dynamic_shared: set             # names declared `extern __shared__ x[]`
    colmaps: dict = field(default_factory=dict)   # line -> [(old_start, old_end, new_start, new_end)] expansions



def strip_comments(text: str) -> str:
    """Replace comments by spaces (keeping newlines) and leave string and character literals alone."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _eval_condition(expr: str, defines: dict, loc: Location) -> bool:
    """#if / #elif: integer constant expressions over #defines and defined(NAME)."""
    import ast
    expr = re.sub(r"defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)",
                  lambda m: "1" if (m.group(1) or m.group(2)) in defines else "0", expr)
    expr = _expand(expr, defines, set())[0]
    expr = re.sub(r"(\d+)[uUlL]+\b", r"\1", expr)
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    expr = _IDENT.sub(lambda m: m.group(0) if m.group(0) in ("and", "or", "not") else "0", expr)
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        raise FrontendError(f"cannot evaluate preprocessor condition {expr.strip()!r}", location=loc) from None
    allowed = (ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant, ast.And, ast.Or,
               ast.Not, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.USub, ast.UAdd, ast.Eq,
               ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr,
               ast.BitXor, ast.Invert, ast.IfExp)
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            raise FrontendError(f"unsupported preprocessor condition {expr.strip()!r}", location=loc)
    return bool(eval(compile(tree, "<if>", "eval"), {"__builtins__": {}}, {}))  # noqa: S307 - allow-listed AST


class FunctionMacro:
    """``#define NAME(a, b) body`` (no ``#``/``##``, no variadic arguments)."""

    def __init__(self, params: list, body: str):
        self.params = params
        self.body = body


def _call_args(text: str, open_paren: int):
    """Split the arguments of a macro call whose '(' is at ``open_paren``; returns (args, index after ')')."""
    depth, args, cur = 0, [], []
    i = open_paren
    while i < len(text):
        ch = text[i]
        if ch == "(":
            depth += 1
            if depth > 1:
                cur.append(ch)
        elif ch == ")":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args, i + 1
            cur.append(ch)
        elif ch == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    return None, None


def _expand(text: str, defines: dict, active: set):
    """Expand macros in ``text``; returns (new_text, [(old_start, old_end, new_start, new_end)])."""
    pieces, spans = [], []
    pos = new_pos = 0
    for m in _IDENT.finditer(text):
        name = m.group(0)
        if m.start() < pos or name not in defines or name in active:
            continue
        # Skip identifiers that are member names (threadIdx.x) or inside a number literal like 1e5f.
        if m.start() > 0 and (text[m.start() - 1] == "." or text[m.start() - 1].isdigit()):
            continue
        macro = defines[name]
        end = m.end()
        if isinstance(macro, FunctionMacro):
            j = end
            while j < len(text) and text[j] in " \t":
                j += 1
            if j >= len(text) or text[j] != "(":
                continue                      # the name without a call is not expanded (as in C)
            args, end = _call_args(text, j)
            if args is None:
                raise FrontendError(f"the call of macro {name}(...) must close on the same line")
            if args == [""] and not macro.params:
                args = []
            if len(args) != len(macro.params):
                raise FrontendError(f"macro {name} takes {len(macro.params)} arguments, {len(args)} given")
            values = {p: _expand(a, defines, active)[0] for p, a in zip(macro.params, args)}
            # plain token substitution, as the C preprocessor does (no parentheses are added)
            body = _IDENT.sub(lambda t: values.get(t.group(0), t.group(0)), macro.body)
            body, _ = _expand(body, defines, active | {name})
        else:
            body, _ = _expand(macro, defines, active | {name})
        pieces.append(text[pos:m.start()])
        new_pos += m.start() - pos
        spans.append((m.start(), end, new_pos, new_pos + len(body)))
        pieces.append(body)
        new_pos += len(body)
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces), spans


def _replace_keywords(line: str, lineno: int, filename: str) -> str:
    for kw in _PAREN_KEYWORDS:
        while kw in line:
            start = line.index(kw)
            j = start + len(kw)
            while j < len(line) and line[j] == " ":
                j += 1
            if j < len(line) and line[j] == "(":
                depth = 0
                while j < len(line):
                    depth += {"(": 1, ")": -1}.get(line[j], 0)
                    j += 1
                    if depth == 0:
                        break
            line = line[:start] + " " * (j - start) + line[j:]
    line = re.sub(r'extern\s+"C"', lambda m: " " * len(m.group(0)), line)
    line = re.sub(r"\bextern(\s+)__shared__", lambda m: " " * 6 + m.group(1) + "__shared__", line)

    def sub(m):
        kw = m.group(0)
        rep = _KEYWORDS[kw]
        if rep is None:
            raise FrontendError(f"unsupported CUDA keyword {kw}",
                                location=Location(filename, lineno, m.start() + 1))
        return rep.ljust(len(kw))
    return re.sub(r"\b(" + "|".join(re.escape(k) for k in _KEYWORDS) + r")\b", sub, line)


def prepass(source: str, filename: str, overrides: dict | None = None) -> Prepassed:
    overrides = {k: str(v) for k, v in (overrides or {}).items()}
    text = strip_comments(source.replace("\r\n", "\n").replace("\r", "\n"))
    lines = text.split("\n")
    # Join backslash continuations (the continued lines become blank, keeping the numbering).
    for i in range(len(lines)):
        nxt = i + 1
        while lines[i].endswith("\\") and nxt < len(lines):
            lines[i] = lines[i][:-1] + " " + lines[nxt]
            lines[nxt] = ""
            nxt += 1
    defines: dict = dict(overrides)
    cond_stack: list = []       # entries: [taking, any_taken, parent_active]
    active = True
    out_lines = []
    colmaps = {}
    dynamic_shared = set()
    for idx, line in enumerate(lines):
        lineno = idx + 1
        m = _DIRECTIVE.match(line)
        if m:
            word, rest = m.group(1), m.group(2).strip()
            loc = Location(filename, lineno, line.index("#") + 1)
            if word in ("ifdef", "ifndef"):
                val = (rest.split()[0] in defines) if rest else False
                if word == "ifndef":
                    val = not val
                cond_stack.append([active and val, val, active])
                active = active and val
            elif word == "if":
                val = _eval_condition(rest, defines, loc) if active else False
                cond_stack.append([active and val, val, active])
                active = active and val
            elif word == "elif":
                if not cond_stack:
                    raise FrontendError("#elif without #if", location=loc)
                top = cond_stack[-1]
                val = (not top[1]) and top[2] and _eval_condition(rest, defines, loc)
                top[0] = val
                top[1] = top[1] or val
                active = val
            elif word == "else":
                if not cond_stack:
                    raise FrontendError("#else without #if", location=loc)
                top = cond_stack[-1]
                top[0] = top[2] and not top[1]
                top[1] = True
                active = top[0]
            elif word == "endif":
                if not cond_stack:
                    raise FrontendError("#endif without #if", location=loc)
                active = cond_stack.pop()[2]
            elif active and word == "define":
                dm = re.match(r"([A-Za-z_]\w*)(\(?)\s*(.*)$", rest)
                if not dm:
                    raise FrontendError(f"malformed #define: {rest!r}", location=loc)
                name = dm.group(1)
                if dm.group(2):
                    fm = re.match(r"([^)]*)\)\s*(.*)$", dm.group(3))
                    params = [q.strip() for q in fm.group(1).split(",")] if fm and fm.group(1).strip() else []
                    if not fm or "..." in fm.group(1) or "#" in fm.group(2) or \
                            not all(re.fullmatch(r"[A-Za-z_]\w*", q) for q in params):
                        raise FrontendError(f"function-like macro {name}(...) uses variadic arguments, # or ##, "
                                            "which are not supported (write it as a __device__ function)",
                                            location=loc)
                    if name not in overrides:
                        defines[name] = FunctionMacro(params, fm.group(2).strip())
                elif name not in overrides:
                    defines[name] = dm.group(3).strip()
            elif active and word == "undef":
                defines.pop(rest.split()[0], None)
            elif active and word in ("include", "pragma", "line", "error", "warning"):
                if word == "error":
                    raise FrontendError(f"#error {rest}", location=loc)
            elif active:
                raise FrontendError(f"unsupported preprocessor directive #{word}", location=loc)
            out_lines.append("")
            continue
        if not active:
            out_lines.append("")
            continue
        try:
            new, spans = _expand(line, defines, set())
        except FrontendError as exc:
            raise FrontendError(exc.message, location=Location(filename, lineno, 1)) from None
        if spans:
            colmaps[lineno] = spans
        for dm in re.finditer(r"\bextern\s+__shared__\s+[\w\s]*?\b(\w+)\s*\[\s*\]", new):
            dynamic_shared.add(dm.group(1))
        out_lines.append(new)
    if cond_stack:
        raise FrontendError("#if/#ifdef without #endif", location=Location(filename, len(lines), 1))

    device_text = strip_host_code("\n".join(out_lines))
    kernel_names = re.findall(r"__global__[\s\w]*?\b(?!void\b)([A-Za-z_]\w*)\s*\(",
                              re.sub(r"__launch_bounds__\s*\([^)]*\)", "", device_text))
    body = "\n".join(_replace_keywords(ln, i + 1, filename) for i, ln in enumerate(device_text.split("\n")))
    object_defines = {k: v for k, v in defines.items() if not isinstance(v, FunctionMacro)}
    pre = Prepassed(text=_PRELUDE + f'# 1 "{filename}"\n' + body, defines=object_defines, kernel_names=kernel_names,
                    dynamic_shared=dynamic_shared)
    pre.colmaps = colmaps
    return pre


_DEVICE_MARK = re.compile(r"\b(__global__|__device__|__constant__|__shared__)\b")


def strip_host_code(text: str) -> str:
    """Blank host code so that a complete .cu file (with main(), cudaMalloc, <<<...>>> launches) is accepted.

    At file scope: a function definition without __global__/__device__ is host code (blanked with its body);
    a declaration ending in ';' is kept only when it is device data or a device prototype (__constant__,
    __device__, __shared__, __global__), a typedef, or a `const` scalar that device code may use; `extern "C" {`
    blocks are unwrapped. Newlines are kept, so line numbers do not move.
    """
    out = list(text)
    n = len(text)
    i = depth = 0
    decl_start = 0
    linkage = []                       # depth at which an extern "C" { ... } block was opened

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        ch = text[i]
        if ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if ch == "{":
            if depth == 0:
                header = text[decl_start:i]
                if re.search(r'\bextern\s*"C"\s*$', header):
                    blank(i, i + 1)
                    linkage.append(depth)
                    i += 1
                    decl_start = i
                    continue
                if "(" in header and not _DEVICE_MARK.search(header):
                    # a host function: skip to its matching brace
                    d, j = 0, i
                    while j < n:
                        if text[j] == "{":
                            d += 1
                        elif text[j] == "}":
                            d -= 1
                            if d == 0:
                                break
                        j += 1
                    blank(decl_start, min(j + 1, n))
                    i = j + 1
                    decl_start = i
                    continue
            depth += 1
        elif ch == "}":
            if depth == 0 and linkage:
                linkage.pop()
                blank(i, i + 1)
                decl_start = i + 1
            else:
                depth -= 1
                if depth == 0:
                    decl_start = i + 1
                    # a struct/union definition ends with '};' - its ';' ends nothing else
        elif ch == ";" and depth == 0:
            decl = text[decl_start:i + 1]
            if decl.strip() and not (_DEVICE_MARK.search(decl) or re.search(r"\b(typedef|const)\b", decl)):
                blank(decl_start, i + 1)       # a host variable, prototype or C++ declaration
            decl_start = i + 1
        i += 1
    return "".join(out)


def map_col(prepassed: Prepassed, line: int, col: int) -> int:
    """Map a 1-based column of the transformed line back to the user's line."""
    spans = prepassed.colmaps.get(line)
    if not spans or col is None:
        return col
    c = col - 1
    shift = 0
    for old_s, old_e, new_s, new_e in spans:
        if c < new_s:
            break
        if c < new_e:
            return old_s + 1
        shift = (old_e - new_e)
    return c + shift + 1
