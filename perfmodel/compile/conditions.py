"""What an ``#if`` decides in every device compile (perfmodel/compile/hostcode.py reads a file with it): the values
of the conditions that depend only on ``__CUDA_ARCH__``, on ``-D`` values, on the macros the file and its headers
define before the ``#if``, on what NVRTC itself defines (asked of it: the names with a leading underscore) and on
``__has_include`` as NVRTC resolves it; the lines of the branches no compile takes; a header's include guard; and
what NVIDIA's headers define (their macros, libcu++'s headers and the C-library names they declare)."""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from perfmodel.compile.lexer import mask, preprocessor_lines

# names a device compile defines, whatever the architecture (NVRTC 13's oldest target is compute capability 7.5)
_DEVICE_DEFINED = ("__CUDA_ARCH__", "__CUDACC__", "__NVCC__", "__CUDACC_RTC__")
_ARCH_RANGE = (750, 1210)      # __CUDA_ARCH__ of the oldest and newest targets


DEFINED = type("Defined", (), {"__repr__": lambda self: "DEFINED"})()   # a -D name whose value is no number

# Names with a leading underscore that an #if tests and nothing of the file's defines: the compiler's own macros
# (__GNUC__, _WIN32, _OPENMP) or a build line's (LAMMPS's -D _SINGLE_DOUBLE). Which of them NVRTC defines, with the
# compile's preamble, is asked of NVRTC itself, once per name and process (name -> defined)
_COMPILER_DEFINED: dict[str, bool] = {}


def _probe_compiler_macros(names, sdk_dirs) -> None:
    """Fill ``_COMPILER_DEFINED`` for ``names`` with one NVRTC compile: a ``__device__`` variable per name inside
    its ``#ifdef``, read back from the PTX."""
    todo = sorted(n for n in set(names) if n not in _COMPILER_DEFINED)
    if not todo:
        return
    from perfmodel.compile import nvrtc
    from perfmodel.compile.compiler import BASE_OPTIONS, PREAMBLE

    text = PREAMBLE + "".join(f"#ifdef {n}\n__device__ int __perfmodel_defined_{i};\n#endif\n"
                              for i, n in enumerate(todo))
    try:
        arch = min(nvrtc.facts()["archs"])
        result = nvrtc.compile_program(text, "probe.cu", [f"--gpu-architecture=sm_{arch}", *BASE_OPTIONS,
                                                          *(f"-I{d}" for d in sdk_dirs)])
    except Exception:   # noqa: BLE001 - no answer: the names stay unknown, as before
        return
    if not result.ok:
        return
    found = set(re.findall(r"__perfmodel_defined_(\d+)\b", result.ptx or ""))
    for i, n in enumerate(todo):
        _COMPILER_DEFINED[n] = str(i) in found


_HAS_INCLUDE = re.compile(r"__has_include\s*\(\s*[<\"]([^>\"]+)[>\"]\s*\)")


@functools.lru_cache(maxsize=256)
def _sdk_has(name: str) -> bool:
    from perfmodel.compile import nvrtc

    return any((Path(d) / name).is_file() for d in nvrtc.sdk_include_dirs())


def _device_condition(cond: str, macro=None) -> bool | None:
    """The value of an ``#if`` condition in every device compile, where it depends only on ``__CUDA_ARCH__``, on
    ``defined`` of the names a device compile defines, and on what ``macro`` knows: NAME -> its value (a number,
    the ``-D`` given), False (defined nowhere: not by ``-D``, this file, the headers read before, or NVIDIA's
    headers), or None (unknown). The same at the oldest and the newest architecture NVRTC targets. None when it
    depends on anything else."""
    from perfmodel import expr as _expr

    unknown = False
    # __has_include(<x>) as NVRTC reads it: the text it compiles finds headers only in the SDK folders (the
    # project's own are inlined) - a branch for SYCL's or another platform's header is no branch of this compile
    cond = _HAS_INCLUDE.sub(lambda m: " 1 " if _sdk_has(m.group(1)) else " 0 ", cond)

    def verdict(name):
        if name in _DEVICE_DEFINED or name == "__has_include":      # (C++17's, which NVRTC compiles)
            return 1
        return macro(name) if macro is not None else None

    def known(m):
        nonlocal unknown
        v = verdict(m.group(1) or m.group(2))
        if v is None:
            unknown = True
            return " 0 "
        return " 0 " if v is False else " 1 "

    def value(m):
        nonlocal unknown
        name = m.group(0)
        if name == "__CUDA_ARCH__" or name in ("and", "or", "not"):
            return name
        v = verdict(name)
        if v is None or v is DEFINED or v == 1 and name in _DEVICE_DEFINED:
            unknown = True
            return " 0 "
        return " 0 " if v is False else f" {v} "
    c = re.sub(r"defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)", known, cond)
    c = re.sub(r"(\d+)[uUlL]+\b", r"\1", c)
    c = re.sub(r"(?<![\w.])[A-Za-z_]\w*", value, c)
    if unknown or set(re.findall(r"[A-Za-z_]\w*", c)) - {"__CUDA_ARCH__"}:
        return None
    c = c.replace("&&", " and ").replace("||", " or ")
    c = re.sub(r"!(?!=)", " not ", c)
    try:
        values = {bool(_expr.evaluate(c, {"__CUDA_ARCH__": arch})) for arch in _ARCH_RANGE}
    except Exception:   # noqa: BLE001 - anything the evaluator does not take: unknown
        return None
    return values.pop() if len(values) == 1 else None


def _device_dead_lines(mlines: list[str], directives, macro=None, seen: dict | None = None,
                       uncertain: set | None = None, dead_defines: dict | None = None,
                       guard: str | None = None, live_includes: set | None = None) -> set[int]:
    """1-based lines inside ``#if``/``#elif``/``#else`` branches that no device compile takes, decided by
    :func:`_device_condition` (SHOC's bfs: the kernels under ``#if __CUDA_ARCH__ >= 120``, stubs with other
    parameter names under ``#else``; ISPASS RAY's signatures under ``#ifdef DEBUG`` and ``#else``, each with
    its own ``{``); branches it cannot decide count as taken. ``seen`` / ``uncertain`` (read by ``macro``) are
    kept as the file goes: the ``#define``s of taken branches (name -> replacement; AutoDock-GPU's
    ``#define ADADELTA_AUTOSTOP`` before its ``#ifdef``), and the names an undecided branch defines or undefines.
    ``dead_defines`` collects the ``#define``s and ``#include``s in branches no compile takes: their 0-based
    first line -> the directive that opened the branch (``#ifdef GPU``, ``#else of #if X``). ``guard``: the file's
    include guard (:func:`include_guard`), whose ``#ifndef`` is taken - the file is inlined where first included
    (chai's `#ifndef _COMMON_H_` left every #if inside undecided: a name with a leading underscore may be the
    compiler's). ``live_includes`` collects the ``#include``s inside ``#if``s whose every branch is decided taken
    (glm's ``#ifndef GLM_EXTERNAL_TEMPLATE``): the compile sees them, as if they were at the top level."""
    seen = {} if seen is None else seen
    uncertain = set() if uncertain is None else uncertain
    dead: set[int] = set()
    stack: list[list] = []          # per open #if: [this branch's value (True/False/None), a branch was True]
    start = 0
    for first, last, _off in directives:
        if stack and any(frame[0] is False for frame in stack):
            dead.update(range(start + 1, first + 1))
        start = last + 1
        body = " ".join(m.rstrip("\\") for m in mlines[first:last + 1]).strip()[1:].strip()
        word = re.match(r"\w*", body).group()
        rest = body[len(word):].strip()
        if word == "include" and live_includes is not None and stack and all(frame[0] is True for frame in stack):
            live_includes.add(first)
        if word in ("if", "ifdef", "ifndef"):
            cond = rest if word == "if" else (f"defined({rest})" if word == "ifdef" else f"!defined({rest})")
            value = True if guard and not stack and first == directives[0][0] else _device_condition(cond, macro)
            stack.append([value, value is True, f"#{word} {rest}"])
        elif word == "elif" and stack:
            frame = stack[-1]
            value = False if frame[1] else _device_condition(rest, macro)
            if value is not False and frame[0] is None:
                value = None
            frame[0], frame[1], frame[2] = value, frame[1] or value is True, f"#elif {rest}"
        elif word == "else" and stack:
            frame = stack[-1]
            frame[0] = False if frame[1] else (None if frame[0] is None else not frame[0])
            frame[2] = f"the #else of {frame[2]}"
        elif word == "endif" and stack:
            stack.pop()
        elif word in ("define", "include") and dead_defines is not None and \
                any(frame[0] is False for frame in stack):
            dead_defines[first] = next(frame[2] for frame in reversed(stack) if frame[0] is False)
        elif word in ("define", "undef") and not any(frame[0] is False for frame in stack):
            m = re.match(r"([A-Za-z_]\w*)(\(?)(.*)", rest)
            if m:
                name = m.group(1)
                if any(frame[0] is None for frame in stack):
                    uncertain.add(name)
                elif word == "undef":
                    seen.pop(name, None)
                else:
                    seen[name] = "" if m.group(2) else m.group(3).strip()   # a function-like macro: defined
    return dead


# a header included (and inlined) more often than this is guarded by what the scan cannot follow: not again
MAX_INCLUDES = 16


def _lines_and_directives(text: str) -> tuple[list[str], list]:
    masked = mask(text)
    return masked.split("\n"), preprocessor_lines(masked)


def include_guard(mlines: list[str], directives) -> str | None:
    """The macro of a header's include guard - the whole file inside ``#ifndef X`` / ``#define X`` ... ``#endif``
    (or ``#if !defined(X)``), nothing but blanks outside - else None."""
    if len(directives) < 3:
        return None
    words = [" ".join(m.rstrip("\\") for m in mlines[a:b + 1]).strip()[1:].strip() for a, b, _ in directives]
    m = re.fullmatch(r"ifndef\s+([A-Za-z_]\w*)", words[0]) or \
        re.fullmatch(r"if\s*!\s*defined\s*\(?\s*([A-Za-z_]\w*)\s*\)?", words[0])
    if not m or not re.fullmatch(rf"define\s+{m.group(1)}\b.*", words[1]) or not words[-1].startswith("endif"):
        return None
    depth = 0
    for k, w in enumerate(words):           # the first #if must close at the last #endif
        word = re.match(r"\w*", w).group()
        depth += word in ("if", "ifdef", "ifndef")
        depth -= word == "endif"
        if depth == 0 and k < len(words) - 1:
            return None
    first, last = directives[0][0], directives[-1][1]
    if any(line.strip() for line in mlines[:first] + mlines[last + 1:]):
        return None
    return m.group(1)


@functools.lru_cache(maxsize=4)
def _sdk_macros(sdk_dirs: tuple[str, ...]) -> frozenset[str]:
    """Every macro name a ``#define`` in NVIDIA's headers (these SDK folders) names: an ``#ifdef`` of one of them
    cannot be decided before the compile (about 1 s, once per process, and only where an ``#if`` names a macro
    nothing else defines)."""
    pattern = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)
    names: set[str] = set()
    roots = [r for r in sdk_dirs if not any(r != o and r.startswith(o.rstrip("/") + "/") for o in sdk_dirs)]
    for root in roots:
        for folder, _dirs, files in os.walk(root):
            for f in files:
                try:
                    data = Path(folder, f).read_bytes()
                except OSError:
                    continue
                names.update(m.decode("ascii", "replace") for m in pattern.findall(data))
    return frozenset(names)


@functools.lru_cache(maxsize=4)
def _libcudacxx_names(sdk_dirs: tuple[str, ...]) -> frozenset[str]:
    """The names libcu++ declares a header for in these SDK folders: ``cuda/std/NAME`` and ``cuda/std/__*/NAME.h``
    (forward declarations and internals left out)."""
    found: set[str] = set()
    for d in sdk_dirs:
        std = Path(d) / "cuda" / "std"
        if not std.is_dir():
            continue
        found |= {f.name for f in std.iterdir() if f.is_file() and "." not in f.name}
        for sub in std.glob("__*"):
            if sub.is_dir() and sub.name not in ("__fwd", "__internal", "__cccl"):
                found |= {f.stem for f in sub.rglob("*.h")}
    return frozenset(found)


# what libcu++'s C-library headers declare in cuda::std: types (`using int32_t = signed int;`, `using ::size_t;`) and
# functions (`_CCCL_API inline float sqrt(float __x)`)
_LIBCUDACXX_DECLARED = re.compile(rb"^\s*using\s+(?:::)?(\w+)\s*[=;]"
                                  rb"|_CCCL_(?:HOST_DEVICE_)?API\s+(?:inline\s+|constexpr\s+)*[\w:]+\s+(\w+)\s*\(", re.M)


@functools.lru_cache(maxsize=4)
def _libcudacxx_declared(sdk_dirs: tuple[str, ...]) -> frozenset[str]:
    """The names libcu++'s <cstdint>, <cstddef>, <cstdlib>, <climits> and <cmath> declare (int8_t, size_t, sqrt,
    isnan ...), which code names as std::NAME in aliases (glm's ``typedef std::int8_t int8;``, ``using std::sqrt;``)
    and which the compile's libcu++ retry gives it."""
    found: set[str] = set()
    for d in sdk_dirs:
        std = Path(d) / "cuda" / "std"
        files = [std / n for n in ("cstdint", "cstddef", "cstdlib", "climits")]
        for sub in ("__cmath", "__cstddef", "__cstdlib"):
            files += sorted((std / sub).glob("*.h")) if (std / sub).is_dir() else []
        for f in files:
            try:
                data = f.read_bytes()
            except OSError:
                continue
            found.update((a or b).decode("ascii", "replace") for a, b in _LIBCUDACXX_DECLARED.findall(data))
    return frozenset(n for n in found if not n.startswith("_"))
