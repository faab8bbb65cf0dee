"""``compile_cuda``: a user's ``.cu``/``.cuh`` file -> PTX + per-kernel resources, through NVRTC.

One NVRTC compile gives everything: compiling for the real architecture (``--gpu-architecture=sm_90``) with
``--ptxas-options=-v`` returns the PTX (``nvrtcGetPTX``), the CUBIN (``nvrtcGetCUBIN``, for nvdisasm) and the
ptxas report in the program log (registers, spills, stack frame, shared memory, barriers per entry). Measured
(NVRTC 13.5, a cooperative-groups kernel): ``compute_90`` (PTX only) 1.6 s, ``sm_90`` (PTX + cubin + ptxas)
1.4 s, so a second compile would only double the time. A file without cooperative groups takes ~0.05 s.

Results are cached on disk (see ``cache.py``) and in process.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import sys
from pathlib import Path

from perfmodel.compile import cache as _cache
from perfmodel.compile import nvrtc
from perfmodel.compile.hostcode import KernelDecl, Prepared, _escape, prepare
from perfmodel.compile.mangle import mangled_dtype, param_types
from perfmodel.compile.module import CompiledModule, KernelInfo, ParamInfo
from perfmodel.compile.signature import (dtype_of, expression_args, param_defaults, parse_params, parse_ptxas_log,
                                         ptx_entries, ptx_scalar_dtype)
from perfmodel.compile.structs import StructLayout
from perfmodel.errors import CompileError, Location

# Compiled before the user's file (NVRTC has no C library): glibc's sys/types.h gives nvcc users `uint` etc.;
# <stdint.h>/<limits.h>/<float.h> are set aside, so their names come from libcu++.
PREAMBLE = """\
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;
typedef unsigned long long CUtexObject;
typedef unsigned long long CUsurfObject;
#include <cuda/std/cstdint>
#include <cuda/std/climits>
#include <cuda/std/cfloat>
"""
# <math.h>'s macros. nvcc's device code has them from the host C library: crt/math_functions.h (the nvidia-cuda-crt
# wheel) includes <math.h> and <cmath> unless NVRTC compiles, and kernels use INFINITY, NAN and M_PI as they are.
# Names and values are glibc's (math/math.h: HUGE_VAL, HUGE_VALF, INFINITY and NAN are +inf and a quiet NaN; the
# M_ constants to 21 digits). INFINITY and NAN are spelled as libcu++'s <cuda/std/cmath> spells them under NVRTC,
# so a kernel that also includes that header redefines them identically; <cuda/std/limits>, which they need, costs
# NVRTC about 0.7 s, so it is included only where the kernel's code uses one of them (_math_macros_used).
MATH_MACROS = """\
#ifndef INFINITY
#define INFINITY ::cuda::std::numeric_limits<float>::infinity()
#endif
#ifndef NAN
#define NAN      ::cuda::std::numeric_limits<float>::quiet_NaN()
#endif
#ifndef HUGE_VALF
#define HUGE_VALF (::cuda::std::numeric_limits<float>::infinity())
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (::cuda::std::numeric_limits<double>::infinity())
#endif
#ifndef M_E
#define M_E 2.7182818284590452354
#endif
#ifndef M_LOG2E
#define M_LOG2E 1.4426950408889634074
#endif
#ifndef M_LOG10E
#define M_LOG10E 0.43429448190325182765
#endif
#ifndef M_LN2
#define M_LN2 0.69314718055994530942
#endif
#ifndef M_LN10
#define M_LN10 2.30258509299404568402
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#ifndef M_PI_2
#define M_PI_2 1.57079632679489661923
#endif
#ifndef M_PI_4
#define M_PI_4 0.78539816339744830962
#endif
#ifndef M_1_PI
#define M_1_PI 0.31830988618379067154
#endif
#ifndef M_2_PI
#define M_2_PI 0.63661977236758134308
#endif
#ifndef M_2_SQRTPI
#define M_2_SQRTPI 1.12837916709551257390
#endif
#ifndef M_SQRT2
#define M_SQRT2 1.41421356237309504880
#endif
#ifndef M_SQRT1_2
#define M_SQRT1_2 0.70710678118654752440
#endif
"""
_LIMITS_MACROS = re.compile(r"\b(?:INFINITY|NAN|HUGE_VALF?)\b")


def _math_macros_used(text: str) -> str:
    """MATH_MACROS, after the include they need where the prepared text names one that expands to numeric_limits;
    and the programmatic-dependent-launch functions where it calls one (PDL_FUNCTIONS)."""
    return ("#include <cuda/std/limits>\n" if _LIMITS_MACROS.search(text) else "") + MATH_MACROS + \
        (PDL_FUNCTIONS if _PDL_CALLS.search(text) else "")


def _version_macros(text: str, set_aside: list[str]) -> str:
    """The toolkit's version macros as nvcc's compile has them, where the code names them: CUDART_VERSION from the
    cuda_runtime_api.h its implicit cuda_runtime.h brings, CUDA_VERSION from cuda.h where the file includes it
    (set aside, as host-only): ccminer maps __shfl to __shfl_sync and takes its lop3 asm only when CUDA_VERSION >=
    9000. The values are the installed headers' (13050 for CUDA 13.0's wheels)."""
    out = ""
    if "CUDA_VERSION" not in text and "CUDART_VERSION" not in text:
        return out
    for macro, header, needed in (("CUDART_VERSION", "cuda_runtime_api.h", True),
                                  ("CUDA_VERSION", "cuda.h", any(n.rsplit("/", 1)[-1] in ("cuda.h", "cudaTypedefs.h")
                                                                 for n in set_aside))):
        value = _header_define(header, macro) if needed else None
        if value is not None:
            out += f"#ifndef {macro}\n#define {macro} {value}\n#endif\n"
    return out


# glibc's <sys/types.h> types (x86-64), which nvcc's device code sees through cuda_runtime.h's <stdlib.h>:
# `__off_t`, `__ssize_t`, `__time_t` are `long int`, the BSD `u_int32_t` ... are the `__uintN_t`. NVRTC has none
# (ccminer's cuda_helper.h takes an `off_t`). Typedef'd only where the code names one and does not declare it.
_SYS_TYPES = (("off_t", "long"), ("ssize_t", "long"), ("time_t", "long"), ("u_char", "unsigned char"),
              ("u_short", "unsigned short"), ("u_int", "unsigned int"), ("u_long", "unsigned long"),
              ("u_int8_t", "unsigned char"), ("u_int16_t", "unsigned short"), ("u_int32_t", "unsigned int"),
              ("u_int64_t", "unsigned long"))


def _sys_types_used(text: str) -> str:
    """The _SYS_TYPES typedefs of the names ``text`` uses without declaring them itself."""
    out = ""
    for name, ctype in _SYS_TYPES:
        if re.search(rf"\b{name}\b", text) and not re.search(rf"\b(?:typedef\b[^;]*\b{name}\s*;|using\s+{name}\s*=|"
                                                              rf"define\s+{name}\b)", text):
            out += f"typedef {ctype} {name};\n"
    return out


@functools.lru_cache(maxsize=8)
def _header_define(header: str, macro: str) -> str | None:
    """The number an SDK header #defines ``macro`` as, or None."""
    for d in nvrtc.sdk_include_dirs():
        try:
            m = re.search(rf"^\s*#\s*define\s+{macro}\s+(\d+)", (Path(d) / header).read_text(errors="replace"), re.M)
        except OSError:
            continue
        if m:
            return m.group(1)
    return None


# Programmatic dependent launch (CUDA 11.8, sm_90): nvcc's implicit cuda_runtime.h brings cuda_device_runtime_api.h,
# which defines these two for device code; NVRTC's compile has neither (llama.cpp's ggml-cuda calls them in nearly
# every kernel). Their definitions as that header (CUDA 13) writes them: one PTX instruction each.
PDL_FUNCTIONS = """static inline __device__ void cudaTriggerProgrammaticLaunchCompletion(void)
{ asm volatile("griddepcontrol.launch_dependents;":::); }
static inline __device__ void cudaGridDependencySynchronize(void)
{ asm volatile("griddepcontrol.wait;":::"memory"); }
"""
_PDL_CALLS = re.compile(r"\b(?:cudaGridDependencySynchronize|cudaTriggerProgrammaticLaunchCompletion)\s*\(")


# The C++ standard library in device code. nvcc compiles device code against the host's libstdc++ (crt/math_functions.h
# includes <cmath> and <cstdlib>; a kernel file includes <type_traits>, <limits>, <algorithm> ...), whose templates
# and constexpr functions device code uses as std::...; NVRTC has no such headers, and NVIDIA's libcu++ (the
# nvidia-cuda-cccl wheel) gives the same names in namespace cuda::std. Where a compile fails on a missing std::
# name, it is compiled again with the libcu++ counterparts of the standard headers the file includes (those
# libcu++ has, plus <cmath> and <cstdlib>) and those names made visible in std. Only files that fail without it
# take it: the libcu++ headers cost NVRTC about 0.8 s.
_STD_MISSING = re.compile(r'namespace "std" has no member')
_DYNAMIC_INIT = re.compile(r"dynamic initialization is not supported for a __device__ variable")

# CUB thread operators CCCL 2.8 deprecated and 3.0 removed, with their replacements (CCCL 2.x - CCCL 3.0
# migration guide, https://nvidia.github.io/cccl/cccl/3.0_migration_guide.html). CCCL 2.8 itself defined the
# operators as these aliases (cub/thread/thread_operators.cuh, NVIDIA/cccl#2716): code for CUDA 12 that names them
# compiles again with the aliases declared, the same functions (the iterators' template parameters differ from
# thrust's, so they stay an error, with the hint below).
_CUB2_ALIASES = ("Sum", "Max", "Min", "Equality", "Inequality", "Difference", "Division")
_CUB2_MISSING = re.compile(r'namespace "cub" has no member "(?:' + "|".join(_CUB2_ALIASES) + ')"')
_CCCL3_REMOVED = {"Sum": "cuda::std::plus<>", "Max": "cuda::maximum<>", "Min": "cuda::minimum<>",
                  "Equality": "cuda::std::equal_to<>", "Inequality": "cuda::std::not_equal_to<>",
                  "Difference": "cuda::std::minus<>", "Division": "cuda::std::divides<>",
                  "TransformInputIterator": "thrust::transform_iterator",
                  "CountingInputIterator": "thrust::counting_iterator",
                  "ConstantInputIterator": "thrust::constant_iterator", "FpLimits": "cuda::std::numeric_limits"}
_CUB2_OPERATORS = ("#include <cuda/functional>\n#include <cuda/std/functional>\nnamespace cub {\n"
                   + "".join(f"using {n} = ::{_CCCL3_REMOVED[n]};\n" for n in _CUB2_ALIASES) + "}\n")


# what a host's standard headers bring in whichever one a file includes (libstdc++'s <algorithm> includes
# <type_traits> and <utility>; OneFlow's elementwise.cuh names std::aligned_storage after <algorithm> alone)
_STD_ALWAYS = ("cmath", "cstdlib", "cstddef", "cstdint", "limits", "type_traits", "utility", "algorithm")


def _std_shim(set_aside: list[str]) -> str:
    names = list(_STD_ALWAYS) + [n for n in set_aside if "/" not in n and "." not in n]
    dirs = [Path(d) / "cuda" / "std" for d in nvrtc.sdk_include_dirs()]
    have = [n for n in dict.fromkeys(names) if any((d / n).is_file() for d in dirs)]
    return "".join(f"#include <cuda/std/{n}>\n" for n in have) + "namespace std { using namespace ::cuda::std; }\n"


def _compile_text(text: str, options: list[str], all_exprs, exprs: list[str]):
    """One NVRTC compile of ``text``, once more without the automatic name expressions that failed."""
    result = nvrtc.compile_program(text, "kernel.cu", options, [e for e, _ in all_exprs], want_cubin=True)
    if not result.ok:
        # A kernel found by the scan but compiled out by the preprocessor (#if 0, #ifdef OTHER_ARCH) makes
        # its automatic name expression fail: drop those and compile again.
        # A kernel declared with one signature and defined with another is an overload set: name the
        # definition through a cast to its function-pointer type.
        messages = _failed_name_expressions(result.log)
        # (the caller's own expression too, where it names such a kernel: simple-knn's coord2Morton beside a
        # __host__ __device__ coord2Morton)
        overloaded = {e for e, d in all_exprs if e in messages and d is not None and not d.is_template
                      and "overloaded" in messages[e]}
        failed = (set(messages) - set(exprs)) | overloaded
        if failed and any(e in failed for e, _ in all_exprs):
            retry = []
            for e, d in all_exprs:
                if e not in failed:
                    retry.append((e, d))
                elif d is not None and not d.is_template and "overloaded" in messages[e]:
                    retry.append((_cast_expression(d), d))
            result = nvrtc.compile_program(text, "kernel.cu", options, [e for e, _ in retry], want_cubin=True)
    return result


# nvcc's front end runs in the host compiler's GNU dialect, which takes GCC's alternate keywords (the GCC manual's
# "Alternate Keywords"; c-family/c-common.cc's c_common_reswords: __const, __const__, __signed, __signed__,
# __volatile, __asm, __asm__, __alignof, __extension__); NVRTC rejects these (measured, NVRTC 13) and takes the rest
# (__inline__, __volatile__, __restrict, __alignof__, __attribute__). HeCBench's adamw: `static __device__ __const__
# uint8_t _bitmask = 15;`.
_GNU_KEYWORDS = (("__const__", "const"), ("__const", "const"), ("__signed__", "signed"), ("__signed", "signed"),
                 ("__volatile", "volatile"), ("__asm__", "asm"), ("__asm", "asm"), ("__alignof", "alignof"),
                 ("__extension__", ""))
PREAMBLE = "".join(f"#ifndef {k}\n#define {k} {v}\n#endif\n" for k, v in _GNU_KEYWORDS) + PREAMBLE
# `register float v;` (SHOC's MaxFlops, S3D): C++17 removed the storage class, and NVRTC rejects it, where nvcc's
# host compiler only warns (GCC's -Wregister, "enabled by default with -std=c++17"); it never changed the code a
# compiler makes, so it goes
PREAMBLE = "#define register\n" + PREAMBLE
# nvcc defines __NVCC__ in both of its passes ("Defined when compiling C/C++/CUDA source files", the nvcc manual's
# "NVCC Identification Macro"); NVRTC does not, and code picks its __host__ __device__ annotations with it
# (`#if defined(__NVCC__) || defined(__HIPCC__)  #define ESS __host__ __device__  #else  #define ESS  #endif`).
PREAMBLE = "#ifndef __NVCC__\n#define __NVCC__ 1\n#endif\n" + PREAMBLE
# nvcc's device pass sees the host platform's macros (code guards `#error Unsupported system` with them).
if sys.platform.startswith("linux"):
    PREAMBLE = "#ifndef __linux__\n#define __linux__ 1\n#endif\n#ifndef __unix__\n#define __unix__ 1\n#endif\n" + PREAMBLE
BASE_OPTIONS = ["-default-device", "-std=c++17", "-lineinfo"]
FORMAT_VERSION = 20          # bump when the cached JSON changes meaning (or what the scan makes of a file)
FALLBACK_ARCHS = (75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121)


def _supported_archs() -> tuple[int, ...]:
    try:
        return tuple(int(a) for a in nvrtc.facts()["archs"]) or FALLBACK_ARCHS
    except (CompileError, OSError):
        return FALLBACK_ARCHS


def _arch_number(arch: str) -> int:
    text = str(arch).strip().lower()
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+)[af]?", text)
    if m:
        return int(m.group(1))
    m = re.fullmatch(r"(\d+)\.(\d+)", text)
    if m:
        return int(m.group(1)) * 10 + int(m.group(2))
    raise CompileError(f"unknown GPU architecture {arch!r}; use sm_XX (e.g. sm_90) or a compute capability (9.0)")


def nvrtc_arch(arch: str) -> tuple[str, str]:
    """The nearest architecture NVRTC compiles for, and a note ("" when it is the one asked for).

    Below the oldest supported one -> the oldest; otherwise the newest supported one not above the request."""
    want = _arch_number(arch)
    archs = _supported_archs()
    try:
        ver = "%d.%d" % nvrtc.version()
    except CompileError:
        ver = "13"
    if want in archs:
        return f"sm_{want}", ""
    cc = f"{want // 10}.{want % 10}"
    if want < archs[0]:
        got = archs[0]
        return f"sm_{got}", (f"NVRTC {ver} compiles for sm_{got} and newer; CC {cc} is compiled for sm_{got}")
    got = max(a for a in archs if a <= want)
    return f"sm_{got}", f"NVRTC {ver} has no sm_{want}; CC {cc} is compiled for sm_{got}"


def _options(arch: str, defines: dict[str, object], device_launch: bool = False) -> list[str]:
    opts = [f"--gpu-architecture={arch}", *BASE_OPTIONS, "--ptxas-options=-v"]
    if device_launch:      # dynamic parallelism: the device runtime API needs relocatable device code
        opts.insert(1, "-rdc=true")
    opts += [f"-I{d}" for d in nvrtc.sdk_include_dirs()]
    for name, value in defines.items():
        opts.append(f"-D{name}" if value is None or value is True else f"-D{name}={value}")
    return opts


HEADER_SUFFIXES = (".cuh", ".h", ".hpp", ".hh", ".hxx", ".inl")


def compile_cuda(path: str | Path | None = None, source: str | None = None, *, arch: str = "sm_90",
                 name_expressions=(), defines: dict[str, object] | None = None, include_dirs=(),
                 cache: bool = True) -> CompiledModule:
    """Compile a user's CUDA file (host code set aside) for ``arch``; see the package docstring.

    A header (``.cuh``) is compiled on its own first. If that fails (it uses a macro or type that the file
    including it defines first), it is compiled in the context of a ``.cu`` file next to it that includes it,
    and only the header's kernels are listed. A ``.cu`` file that another ``.cu`` file includes (Rodinia's
    ``srad_kernel.cu``, included by ``srad.cu`` after its ``#define``s) is treated the same way."""
    try:
        return _compile(path, source, arch=arch, name_expressions=name_expressions, defines=defines,
                        include_dirs=include_dirs, cache=cache)
    except CompileError as err:
        if path is None or source is not None or Path(path).suffix.lower() not in HEADER_SUFFIXES + (".cu",):
            raise
        header = Path(path).resolve()
        for mod, host in _in_context(header, {header}, arch=arch, name_expressions=name_expressions,
                                     defines=defines, include_dirs=include_dirs, cache=cache):
            mod.kernels = [k for k in mod.kernels if k.file == str(header)]
            mod.templates = [t for t in mod.templates if t in _declared_in(mod, header)]
            mod.source_path = str(path)
            mod.source_lines = header.read_text(errors="replace").splitlines()
            mod.context_path = str(host)
            if mod.kernels or not name_expressions:
                return mod
        raise err


def _in_context(header: Path, seen: set, **kw):
    """(module, file) for each file that includes ``header`` and compiles, directly or in the context of its own
    includers (a.cu included by b.cu, included by c.cu, which compiles); ``seen`` stops a cycle."""
    for host in _including_files(header):
        if host.resolve() in seen:
            continue
        seen.add(host.resolve())
        try:
            yield _compile(host, None, **kw), host
        except CompileError:
            yield from _in_context(host.resolve(), seen, **kw)


def _including_files(header: Path) -> list[Path]:
    """``.cu`` files in the header's folder (and its parent) that ``#include`` it by name, nearest first."""
    import re as _re

    pattern = _re.compile(r'^\s*#\s*include\s*[<"]([^>"]*/)?' + _re.escape(header.name) + r'[>"]', _re.M)
    found = []
    for folder in (header.parent, header.parent.parent):
        for cand in sorted(folder.glob("*.cu")):
            if cand.resolve() == header:
                continue
            try:
                if pattern.search(cand.read_text(errors="replace")):
                    found.append(cand)
            except OSError:
                continue
    return found


def _declared_in(mod: CompiledModule, header: Path) -> set[str]:
    return set(getattr(mod, "_declared_files", {}).get(str(header), ()))


def _compile(path, source, *, arch, name_expressions, defines, include_dirs, cache) -> CompiledModule:
    if source is None:
        if path is None:
            raise CompileError("compile_cuda needs a path or source text")
        p = Path(path)
        try:
            source = p.read_text(errors="replace")
        except OSError as err:
            raise CompileError(f"cannot read {path}: {err.strerror or err}", location=Location(str(path))) from None
        abs_path = p.resolve()
    else:
        abs_path = Path(path).resolve() if path is not None else None
    display = str(path) if path is not None else None
    defines = {str(k): v for k, v in (defines or {}).items()}
    target, note = nvrtc_arch(arch)
    exprs = [e.strip() for e in name_expressions if e and e.strip()]

    # Fast path: the same file, options and name expressions as a cached compile whose headers are unchanged ->
    # no need to set host code aside again (the key of the compile is in the manifest).
    raw_key = _cache.raw_key(source, str(abs_path), target, defines, [str(d) for d in include_dirs], exprs,
                             nvrtc.version(), FORMAT_VERSION)
    if cache:
        hit = _cache.lookup_manifest(raw_key)
        if hit is not None:
            key, prepared = hit
            record = _cache.lookup(key)
            if record is not None:
                options = _options(target, defines, prepared.device_launch)
                all_exprs = _name_expressions(prepared.kernels, exprs, prepared.launched)
                return _module(record, prepared, all_exprs, source, display, target, arch, note, options,
                               _root(abs_path), nvrtc.sdk_root())

    prepared = prepare(source, str(abs_path) if abs_path else "kernel.cu", abs_path,
                       defines=defines, include_dirs=[str(d) for d in include_dirs],
                       sdk_dirs=nvrtc.sdk_include_dirs(), name_expressions=exprs)
    options = _options(target, defines, prepared.device_launch)
    all_exprs = _name_expressions(prepared.kernels, exprs, prepared.launched)
    line1 = f'#line 1 "{_escape(str(abs_path) if abs_path else "kernel.cu")}"\n'
    head = PREAMBLE + _sys_types_used(prepared.text) + _math_macros_used(prepared.text) + \
        _version_macros(prepared.text, prepared.set_aside_includes)
    text = head + line1 + prepared.text
    root, sdk = _root(abs_path), nvrtc.sdk_root()
    key = _cache.cache_key(text, options, all_exprs, nvrtc.version(), FORMAT_VERSION, root, sdk)

    record = _cache.lookup(key) if cache else None
    mod = None
    if record is None:
        try:
            result, prepared, used = _attempt(text, head, line1, prepared, options, all_exprs, exprs, source,
                                              abs_path, defines, include_dirs)
        except nvrtc.NvrtcCrash as crash:
            raise CompileError(
                f"{display or 'the source'}: {crash.message} compiling for {target}: a fault inside NVIDIA's compiler "
                "(a bug of NVRTC's, not an error in the file - nvcc may take the same code). Compiling for another "
                "architecture can avoid it (--device b200 compiles for sm_100; NVRTC 13 crashes on a __ldg() of a "
                "__constant__ array for sm_75 to sm_90), or rewrite the construct it fails on") from None
        if not result.ok and prepared.launched:
            # an instantiation the file launches does not compile here (its body needs a header that was not
            # found): without them, as a file whose templates are not launched
            plain = _name_expressions(prepared.kernels, exprs)
            retry, again, used_again = _attempt(text, head, line1, prepared, options, plain, exprs, source, abs_path,
                                                defines, include_dirs)
            if retry.ok:
                result, prepared, all_exprs, used = retry, again, plain, used_again
                prepared.launched = []
        if not result.ok:
            raise _compile_error(result.log, prepared, abs_path, display, exprs)
        record = _cache.Record(ptx=result.ptx or "", log=result.log, lowered=result.lowered,
                               cubin=result.cubin, root=root, sdk=sdk)
        mod = _module(record, prepared, all_exprs, source, display, target, arch, note, options, root, sdk)
        _lay_out_structs(mod, record, used, options, prepared.typedefs)
        if cache:
            _cache.store(key, record)
    if cache:
        main = str(abs_path) if abs_path else "kernel.cu"
        _cache.store_manifest(raw_key, key, prepared, main)
    return mod or _module(record, prepared, all_exprs, source, display, target, arch, note, options, root, sdk)


def _struct_key(namespace: str, ctype: str) -> str:
    from perfmodel.compile.structs import _bare

    return f"{namespace}|{_bare(ctype)}"


def _lay_out_structs(mod: CompiledModule, record: "_cache.Record", text: str, options: list[str], typedefs) -> None:
    """The layouts of the module's by-value struct parameters (compile/structs.py: the declaration's field names,
    NVRTC's offsets), into the record (cached with the compile) and onto the parameters."""
    from perfmodel.compile import structs

    from perfmodel.compile.variables import pointer_variables, struct_variables

    # pointer-typed __constant__ / __device__ variables: "ptr|NAME" -> {"pointee": C type} (no probe needed)
    for name, pointee in pointer_variables(record.ptx, text, typedefs).items():
        record.layouts[f"ptr|{name}"] = {"pointee": pointee}
    mod.pointer_variables = _pointer_variables(record)
    wanted: dict[str, tuple[str, str]] = {}
    for k in mod.kernels:
        for p in k.params:
            if p.struct_key:
                wanted.setdefault(p.struct_key, (p.ctype, p.struct_key.split("|")[0]))
    # __constant__ / __device__ variables of a struct type: "var|NAME" (their layouts stored under it too)
    for name, ctype in struct_variables(record.ptx, text, typedefs).items():
        wanted[f"var|{name}"] = (ctype, "")
    if not wanted:
        return
    source = structs._Source(text)
    probes = [structs.plan(ctype, namespace, text, typedefs, source) for ctype, namespace in wanted.values()]
    for key, got in zip(wanted, structs.layouts(text, options, probes)):
        record.layouts[key] = got.to_json()
    for k in mod.kernels:
        for p in k.params:
            if p.struct_key in record.layouts:
                p.layout = structs.StructLayout.from_json(record.layouts[p.struct_key])
    mod.variable_layouts = _variable_layouts(record)


def _pointer_variables(record: "_cache.Record") -> dict[str, str]:
    """NAME -> pointed-to C type of the module's pointer-typed __constant__ / __device__ variables."""
    return {key[4:]: value["pointee"] for key, value in record.layouts.items() if key.startswith("ptr|")}


def _variable_layouts(record: "_cache.Record") -> dict:
    """NAME -> StructLayout of the module's struct-typed __constant__ / __device__ variables (compile/variables.py)."""
    return {key[4:]: StructLayout.from_json(value) for key, value in record.layouts.items() if key.startswith("var|")}


def _attempt(text, head, line1, prepared, options, all_exprs, exprs, source, abs_path, defines, include_dirs):
    """The compile, and where it fails for what nvcc's host side would have given, once more: (result, prepared,
    the text compiled)."""
    scan: dict = {}       # what a second scan of the file is told (each retry below keeps the ones before)

    def rescan():
        return prepare(source, str(abs_path) if abs_path else "kernel.cu", abs_path, defines=defines,
                       include_dirs=[str(d) for d in include_dirs], sdk_dirs=nvrtc.sdk_include_dirs(),
                       name_expressions=exprs, **scan)
    result = _compile_text(text, options, all_exprs, exprs)
    if not result.ok and _STD_MISSING.search(result.log):
        # device code that names the C++ standard library (std::numeric_limits, std::is_same_v, std::sqrt ...),
        # which nvcc takes from the host's headers and NVRTC does not have: again with libcu++ standing in
        head += _std_shim(prepared.set_aside_includes)
        retry = _compile_text(head + line1 + prepared.text, options, all_exprs, exprs)
        # compiled, or failed: then on what is left with libcu++ standing in, the error to report
        result, text = retry, head + line1 + prepared.text
        lacking = frozenset(re.findall(r'namespace "std" has no member "(\w+)"', result.log)) if not result.ok \
            else frozenset()
        if lacking:
            # names libcu++ has a header for but gives the host only (std::function): the aliases that name them
            # go with the host code (ArrayFire's `template<typename T> using uptr = std::unique_ptr<T[],
            # std::function<void(T[])>>;`), and the compile is made once more
            scan["lacking"] = lacking
            again = rescan()
            retry = _compile_text(head + line1 + again.text, options, all_exprs, exprs)
            if retry.ok:
                result, prepared, text = retry, again, head + line1 + again.text
    if not result.ok and _CUB2_MISSING.search(result.log):
        # CUB's thread operators as code for CUDA 12 names them (cub::Sum, cub::Max ...): CCCL 3 removed them
        head += _CUB2_OPERATORS
        retry = _compile_text(head + line1 + prepared.text, options, all_exprs, exprs)
        result, text = retry, head + line1 + prepared.text
    if not result.ok and _DYNAMIC_INIT.search(result.log):
        # host `const float` globals that nvcc folds and NVRTC's -default-device cannot initialise: constexpr
        scan["constexpr_floats"] = True
        again = rescan()
        retry = _compile_text(head + line1 + again.text, options, all_exprs, exprs)
        if retry.ok:
            result, prepared, text = retry, again, head + line1 + again.text
    return result, prepared, text


def _root(abs_path: Path | None) -> str | None:
    """The folder the compile key is relative to: the kernel file's, unless that is the file system's root."""
    if abs_path is None or abs_path.parent == Path(abs_path.anchor):
        return None
    return str(abs_path.parent)


def _name_expressions(kernels: list[KernelDecl], exprs: list[str],
                      launched: list[str] = ()) -> list[tuple[str, KernelDecl | None]]:
    """Every non-template kernel by name, the template instantiations the file launches, plus the caller's
    expressions (deduplicated), with their decl. A caller's ``k<8>`` for a kernel declared in a namespace is
    ``ns::k<8>``."""
    out: list[tuple[str, KernelDecl | None]] = []
    seen: set[str] = set()           # the expressions taken, without white space

    def take(e: str, decl: KernelDecl | None) -> None:
        seen.add(re.sub(r"\s+", "", e))
        out.append((e, decl))

    def decl_for(e: str, names) -> KernelDecl | None:
        """The declaration an expression instantiates: an explicit specialization for exactly its arguments,
        else the primary template (or the plain kernel)."""
        args = re.sub(r"\s+", "", e.split("<", 1)[1].rsplit(">", 1)[0]) if "<" in e else None
        named = [k for k in kernels if names(k)]
        return next((k for k in named if k.specialization is not None and k.specialization == args),
                    next((k for k in named if k.specialization is None), None))

    plain = [k for k in kernels if not k.is_template and k.specialization is None]
    overloaded = {n for n in (k.namespace + k.name for k in plain)
                  if len({re.sub(r"\s+", "", d.params_text) for d in plain if d.namespace + d.name == n}) > 1}
    for k in kernels:
        if not k.is_template and k.namespace + k.name in overloaded:
            # an overload set (CUDA by Example's two float_to_color): each by its cast, listed as name(types)
            e = _cast_expression(k)
            if re.sub(r"\s+", "", e) not in seen:
                take(e, k)
        elif not k.is_template and k.namespace + k.name not in seen:
            take(k.namespace + k.name, k)
    for k in kernels:     # explicit specializations are compiled code of their own: listed like kernels
        e = f"{k.namespace}{k.name}<{k.specialization}>"
        if k.specialization is not None and re.sub(r"\s+", "", e) not in seen:
            take(e, k)
    for e in launched:
        k = decl_for(e, lambda k: k.is_template and k.namespace + k.name == e.split("<")[0])
        if k is not None and re.sub(r"\s+", "", e) not in seen:
            take(e, k)
    for e in exprs:
        if "<" not in e and re.sub(r"\s+", "", e.split("(")[0]) in overloaded:
            continue            # scale(unsigned char*, const float*), or scale: an overload set, compiled above
        base = re.sub(r"\s+", "", e.split("<")[0])
        match = decl_for(e, lambda k: k.namespace + k.name == base or k.name == base)
        if match is not None and match.namespace and "::" not in base:
            e = match.namespace + e.strip()
        if re.sub(r"\s+", "", e) in seen:
            continue
        if match is None and "<" in e:
            names = ", ".join(k.name + ("<...>" if k.is_template else "") for k in kernels) or "none"
            raise CompileError(f"no __global__ function {base!r} in the source; kernels found: {names}")
        # a plain name the scan did not find (a kernel defined by a macro): NVRTC resolves it, or says it can't
        take(e, match)
    return out


# typedefs of integers that name objects, not numbers (a texture or surface object is given as one, in a spec)
_HANDLES = {"cudaTextureObject_t", "cudaSurfaceObject_t", "CUtexObject", "CUsurfObject"}


def _expand_pack(parsed: list, decl, args: list[str]) -> list:
    """A function parameter pack (ggml's ``k_bin_bcast<..., src1_ptrs...>(..., src1_ptrs... src1s)``): one
    parameter per type of the template argument pack the name expression gives (the template arguments past the
    others), named ``NAME_0``, ``NAME_1``, ...; none for an empty pack."""
    packs = [i for i, (_name, ctype, _ptr) in enumerate(parsed) if ctype.replace(" ", "").endswith("...")]
    if len(packs) != 1 or not decl.template_params:
        return parsed
    i = packs[0]
    name = parsed[i][0]
    fixed = len(decl.template_params) - 1          # the pack is the last template parameter
    pack_args = args[fixed:] if len(args) >= fixed else []
    expanded = [(f"{name}_{j}", t.strip(), "*" in t) for j, t in enumerate(pack_args)]
    return parsed[:i] + expanded + parsed[i + 1:]


def _aligned(parsed: list, compiled_types: list[str], n: int, typedefs) -> list:
    """The source's parameters that the compiled entry has, where the source lists more than its ``n`` (the
    branches of an ``#if`` inside the parameter list): the first in order whose pointer-ness and known dtype match
    each mangled type in turn."""
    if len(parsed) <= n or len(compiled_types) != n:
        return parsed
    out = []
    for name, ctype, is_ptr in parsed:
        if len(out) == n:
            break
        want, want_ptr = mangled_dtype(compiled_types[len(out)])
        have = dtype_of(ctype, is_ptr, typedefs)
        if want_ptr == is_ptr and (want is None or have is None or want == have):
            out.append((name, ctype, is_ptr))
    return out if len(out) == n else parsed


def _ptx_only_kernel(expr: str, mangled: str, sizes, res: dict) -> KernelInfo:
    """A kernel the source scan did not see (defined through a macro): parameters named ``argN``, their types
    from the mangled name where it has them, else from the PTX alone (8-byte ones taken as pointers of unknown
    element type)."""
    types = param_types(mangled)
    if types is not None and len(types) == len(sizes):
        params = []
        for i, (t, (size, align, _)) in enumerate(zip(types, sizes)):
            dtype, is_ptr = mangled_dtype(t)
            params.append(ParamInfo(f"arg{i}", t, is_ptr, dtype, size, align))
    else:
        # (an extern "C" kernel's name has no types: a .u64 is taken as a pointer; a .f32, .f64 or 32-bit integer
        # .param is that number - FFmpeg's macro-made scale kernels' widths and pitches, their float param)
        params = []
        for i, (size, align, ptx_type) in enumerate(sizes):
            number = None if ptx_type in (None, "u64", "b64", "s64") else ptx_scalar_dtype(ptx_type)
            if number is not None:
                params.append(ParamInfo(f"arg{i}", {"float32": "float", "float64": "double"}.get(
                    number.name, number.name + "_t"), False, number, size, align))
            else:
                params.append(ParamInfo(f"arg{i}", "void*" if size == 8 else f"b{8 * size}", size == 8, None,
                                        size, align))
    return KernelInfo(name=expr, expression=expr, mangled=mangled, params=params,
                      registers=res.get("registers", 0), spill_stores=res.get("spill_stores", 0),
                      spill_loads=res.get("spill_loads", 0), local_bytes=res.get("local_bytes", 0),
                      static_shared_bytes=res.get("static_shared_bytes", 0), barriers=res.get("barriers", 0),
                      is_template=False)


def _module(record: "_cache.Record", prepared: Prepared, all_exprs, source: str, display: str | None,
            target: str, requested: str, note: str, options: list[str], root: str | None,
            sdk: str | None) -> CompiledModule:
    relocated = _cache.moves(record, root, sdk)
    if relocated:
        # compiled from a copy of the file in another folder, or with the headers of another environment: its
        # paths, moved to these folders
        record = _cache.Record(ptx=_cache.relocate(record.ptx, relocated), log=_cache.relocate(record.log, relocated),
                               lowered=record.lowered, cubin=record.cubin, root=root, sdk=sdk,
                               layouts=record.layouts)
    entries = ptx_entries(record.ptx)
    resources = parse_ptxas_log(record.log)
    kernels: list[KernelInfo] = []
    declared: dict[str, str] = {}
    for expr, decl in all_exprs:
        mangled = record.lowered.get(expr)
        if mangled is None and decl is not None and not decl.is_template:
            mangled = record.lowered.get(_cast_expression(decl))
        if mangled is None:
            continue
        if decl is None:
            kernels.append(_ptx_only_kernel(expr, mangled, entries.get(mangled, []), resources.get(mangled, {})))
            continue
        if mangled not in entries:
            # only declared here (defined in another file: no .entry body)
            declared[decl.namespace + decl.name] = f"{Path(decl.file).name}:{decl.line}"
            continue
        mapping = {}
        args: list[str] = []
        if decl.is_template:
            args = expression_args(expr)
            mapping = {name: arg for (_, name), arg in zip(decl.template_params, args)}
        sizes = entries.get(mangled, [])
        compiled_types = param_types(mangled) or []
        parsed = _aligned(_expand_pack(parse_params(decl.params_text, mapping), decl, args), compiled_types,
                          len(sizes), prepared.typedefs)
        params = []
        defaults = param_defaults(decl.params_text)
        for i, (pname, ctype, is_ptr) in enumerate(parsed):
            size, align, ptx_type = sizes[i] if i < len(sizes) else (0, 0, None)
            dtype = dtype_of(ctype, is_ptr, prepared.typedefs)
            if dtype is None and i < len(compiled_types) and not _HANDLES & set(re.findall(r"\w+", ctype)):
                # a macro (DATA_TYPE), a typedef chosen by #if: the type the compiler resolved, from the
                # mangled entry name
                compiled, compiled_ptr = mangled_dtype(compiled_types[i])
                if compiled_ptr == is_ptr:
                    dtype = compiled
            if dtype is None and not is_ptr and i < len(compiled_types) and mangled_dtype(compiled_types[i]) == \
                    (None, False) and not _HANDLES & set(re.findall(r"\w+", ctype)):
                # a named type (not a number, not a pointer) that PTX passes as an integer: an enum
                dtype = ptx_scalar_dtype(ptx_type)
            param = ParamInfo(pname, ctype, is_ptr, dtype, size, align, default=defaults.get(pname))
            if dtype is None and not is_ptr and ptx_type is None and size and \
                    not _HANDLES & set(re.findall(r"\w+", ctype)):
                # bytes in PTX: a struct passed by value; its fields' layout was probed with the compile
                key = _struct_key(decl.namespace, ctype)
                param.struct_key = key
                if key in record.layouts:
                    param.layout = StructLayout.from_json(record.layouts[key])
            params.append(param)
        res = resources.get(mangled, {})
        if any(k.mangled == mangled for k in kernels):
            continue            # two declarations of one kernel (a prototype spelt with a typedef)
        if expr == _cast_expression(decl):                 # one of an overload set: name(types)
            expr = f"{decl.namespace}{decl.name}({_declared_types(decl)})"
        kernels.append(KernelInfo(
            name=decl.name, expression=expr, mangled=mangled, params=params,
            registers=res.get("registers", 0), spill_stores=res.get("spill_stores", 0),
            spill_loads=res.get("spill_loads", 0), local_bytes=res.get("local_bytes", 0),
            static_shared_bytes=res.get("static_shared_bytes", 0), barriers=res.get("barriers", 0),
            is_template=decl.is_template, file=decl.file, line=decl.line))
    # kernels a macro defines (`#define KERNEL(C) extern "C" __global__ void k_##C(...)`, FFmpeg's 416 scale
    # kernels): in the PTX, not in the scan - each by its name (an extern "C" one) with its PTX parameters
    claimed = {k.mangled for k in kernels}
    for mangled, sizes in entries.items():
        if mangled in claimed or mangled.startswith("_Z") or any(k.expression == mangled for k in kernels):
            continue
        kernels.append(_ptx_only_kernel(mangled, mangled, sizes, resources.get(mangled, {})))
    # an overload set of which one kernel has a body here (the others only declared): its plain name
    named = [k.expression.split("(")[0] for k in kernels if not k.is_template and k.expression.endswith(")")]
    kernels = [dataclasses.replace(k, expression=k.expression.split("(")[0])
               if not k.is_template and k.expression.endswith(")") and named.count(k.expression.split("(")[0]) == 1
               else k for k in kernels]
    instantiated = {k.name for k in kernels}
    templates = list(dict.fromkeys(k.namespace + k.name for k in prepared.kernels
                                   if k.is_template and k.name not in instantiated))
    launches: dict[str, list[str]] = {}
    for name, args, file, line in prepared.launches:
        full = next((t for t in templates if name.split("::")[-1] == t.split("::")[-1]), None)
        if full is not None and not any(x.startswith(f"{full}<{args}> (") for x in launches.get(full, [])):
            launches.setdefault(full, []).append(f"{full}<{args}> ({Path(file).name}:{line})")
    mod = CompiledModule(ptx=record.ptx, arch=target, requested_arch=str(requested), arch_note=note,
                         source_path=display, source_lines=source.splitlines(), kernels=kernels, log=record.log,
                         options=list(options), templates=templates, template_launches=launches,
                         set_aside_includes=list(dict.fromkeys(prepared.set_aside_includes)),
                         declared_only=declared,
                         cubin=record.cubin, files=dict(prepared.files), relocated=relocated or None,
                         variable_layouts=_variable_layouts(record), pointer_variables=_pointer_variables(record))
    declared: dict[str, list[str]] = {}
    for k in prepared.kernels:
        declared.setdefault(k.file, []).append(k.namespace + k.name)
    mod._declared_files = declared
    return mod


def _failed_name_expressions(log: str) -> dict[str, str]:
    """Name expression -> NVRTC's messages about it."""
    lines = log.splitlines()
    out: dict[str, str] = {}
    for i, line in enumerate(lines):
        if line.startswith("__nv_name_map(") and ": error" in line and i + 1 < len(lines):
            m = re.search(r"nv_mangled_name\s+(.*)$", lines[i + 1])
            if m:
                key = m.group(1).strip()
                out[key] = out.get(key, "") + line + "\n"
    return out


def _declared_types(decl: KernelDecl) -> str:
    """``int*, int``: a kernel's parameter types as its declaration spells them."""
    return ", ".join(ctype for _, ctype, _ in parse_params(decl.params_text))


def _cast_expression(decl: KernelDecl) -> str:
    """``static_cast<void(*)(int*, int)>(ns::k)``: names one kernel of an overload set."""
    return f"static_cast<void(*)({_declared_types(decl)})>({decl.namespace}{decl.name})"


def _source_line(prepared: Prepared, pattern: str, device: bool) -> tuple[str, int, str] | None:
    """The first line of the translation unit's files matching ``pattern`` that says ``__device__`` (``device``)
    or does not: (file, line number, text)."""
    for name, text in prepared.files.items():
        for number, src in enumerate(text.splitlines(), 1):
            if re.search(pattern, src) and ("__device__" in src) == device:
                return name, number, src
    return None


def _statement_expression(prepared: Prepared, file: str, line: int) -> str | None:
    """Where the error's line holds a GNU statement expression: ``({`` on the line itself, or a macro whose
    replacement has one (lulesh's ``#define max(a,b) ({ __typeof__ (a) _a = (a); ... })``): how to say which."""
    text = prepared.files.get(file)
    if text is None:
        text = next((t for name, t in prepared.files.items() if Path(name).name == Path(file).name), None)
    rows = (text or "").splitlines()
    if not 0 < line <= len(rows):
        return None
    src = rows[line - 1]
    if re.search(r"\(\s*\{", src):
        return f"line {line}"
    for name, t in prepared.files.items():
        for number, row in enumerate(t.splitlines(), 1):
            m = re.match(r"\s*#\s*define\s+(\w+)\s*\([^)]*\)\s*\(\s*\{", row)
            if m and re.search(rf"\b{m.group(1)}\s*\(", src):
                return f"the macro {m.group(1)} ({Path(name).name}:{number})"
    return None


def _cccl_hint(namespace: str, name: str) -> str:
    version = nvrtc.cccl_version()
    text = (" perfmodel compiles with the CCCL headers of the nvidia-cuda-cccl wheel (CCCL "
            f"{version or 'version unknown'}, as CUDA 13's nvcc does with CCCL 3.x); code written for CUDA 12 (CCCL 2.x) "
            "can name what CCCL 3.0 removed (its migration guide: "
            "https://nvidia.github.io/cccl/cccl/3.0_migration_guide.html)")
    if namespace == "cub" and name in _CCCL3_REMOVED:
        text += f": cub::{name} is one, {_CCCL3_REMOVED[name]} replaces it"
    return text + "."


def _legacy_warp_hint(name: str) -> str:
    """Why a warp intrinsic without a mask does not compile, and what to write instead."""
    example = name.split(",")[0]
    return (f" {name}: a warp intrinsic without a mask. CUDA 9.0 deprecated these, and they do not exist when "
            f"compiling for compute capability 7.0 or later (CUDA C++ Programming Guide, Warp Shuffle and Warp "
            f"Vote Functions), which is what NVRTC 13 targets for every device profile; the kernel needs the "
            f"_sync form, e.g. {example}_sync(0xffffffff, ...).")


def _extern_function_hint(mangled: str, prepared: Prepared, display: str | None) -> tuple[str, Location]:
    """ptxas's "Unresolved extern function '_Z4bfewP5uint4i'": a __device__ function this file declares and
    another defines (a program built with relocatable device code, nvcc -rdc=true / -dc, and linked with -dlink):
    the hint names the function and the line that declares it."""
    from perfmodel.sim.program import _source_name

    name = _source_name(mangled)
    where, at = Location(display), ""
    found = _source_line(prepared, rf"\b{re.escape(name)}\s*\(", device=True)
    if found is not None:
        file, number, _text = found
        shown = display if display and Path(file).name == Path(display).name else file
        where, at = Location(shown, number), f" (declared at {shown}:{number})"
    return (f". The kernel calls the __device__ function {name}{at}, which this file declares but does not define: "
            "its definition is in another file of a program built with relocatable device code (nvcc -rdc=true or "
            "-dc, linked with -dlink). perfmodel compiles one translation unit: analyse a file that also holds the "
            f"definition (a copy that #includes the .cu defining {name})", where)


_DIAG = re.compile(r"^(.*?)\((\d+)\): (error|catastrophic error|warning)[^:]*: (.*)$")


def _compile_error(log: str, prepared: Prepared, abs_path: Path | None, display: str | None,
                   exprs: list[str]) -> CompileError:
    """NVRTC's first error, at the original file:line, as one paragraph."""
    lines = log.splitlines()
    errors = []
    for i, line in enumerate(lines):
        m = _DIAG.match(line.strip())
        if m and "error" in m.group(3):
            errors.append((m.group(1), int(m.group(2)), m.group(4).strip(), i))
    if not errors:
        text = " ".join(line.strip() for line in lines if line.strip())[:600] or "unknown error"
        # ptxas refuses a vote or shuffle without .sync (__ballot, __any, __all: the front end still declares them)
        m = re.search(r"Instruction '(vote|shfl)' without '\.sync'", text)
        hint = _legacy_warp_hint("__ballot, __any or __all" if m.group(1) == "vote" else "__shfl") if m else ""
        where = Location(display)
        if m:
            # the line of the source that calls it (ptxas names only its PTX line): graphBIG's __all
            pattern = r"\b__(?:ballot|any|all)\s*\(" if m.group(1) == "vote" else r"\b__shfl(?:_up|_down|_xor)?\s*\("
            found = _source_line(prepared, pattern, device=False) or _source_line(prepared, pattern, device=True)
            if found:
                where = Location(found[0], found[1])
                text = f"{Path(found[0]).name}:{found[1]} (`{found[2].strip()[:80]}`): {text}"
        text = text.rstrip(".") + "."
        extern = re.search(r"Unresolved extern function '(\w+)'", text)
        if extern:
            hint, where = _extern_function_hint(extern.group(1), prepared, display)
        return CompileError(f"NVRTC could not compile {display or 'the source'}: {text}{hint}", location=where)
    file, line, msg, idx = errors[0]
    if file == "__nv_name_map":      # a name expression that does not instantiate
        expr = ""
        if idx + 1 < len(lines):
            m = re.search(r"nv_mangled_name\s+(.*)$", lines[idx + 1])
            expr = m.group(1).strip() if m else ""
        base = expr.split("<")[0].strip()
        decl = next((k for k in prepared.kernels if k.name == base or k.namespace + k.name == base), None)
        where = Location(display, None) if decl is None else Location(
            display if abs_path is not None and decl.file == str(abs_path) else decl.file, decl.line)
        if decl is None and "<" not in expr and re.fullmatch(r'identifier "[^"]*" is undefined', msg):
            found = ", ".join(dict.fromkeys(k.namespace + k.name + ("<...>" if k.is_template else "")
                                            for k in prepared.kernels)) or "none"
            return CompileError(f"{where}: no __global__ function {expr!r} in the file or the headers it "
                                f"includes; kernels found: {found}", location=where)
        params = ""
        if decl is not None and decl.template_params:
            params = (f" {decl.name} is declared template <"
                      + ", ".join(f"{kind} {name}" for kind, name in decl.template_params) + ">.")
        return CompileError(f"{where}: the kernel instantiation {expr or ', '.join(exprs)!r} does not compile: "
                            f"{msg}.{params}", location=where)
    if abs_path is not None and file == str(abs_path):
        file = display or file
    elif file == "kernel.cu" and display is None:
        file = "<source>"
    detail = ""
    # the next errors too, where they say something else (a first error can hide another cause: ggml's undefined
    # PDL functions only showed once two header problems before them were fixed)
    others = list(dict.fromkeys(
        f"{Path(display or f).name if abs_path is not None and f == str(abs_path) else Path(f).name}:{n}: {m}"
        for f, n, m, _i in errors[1:] if m != msg))[:3]
    more = (f" ({len(errors) - 1} more error{'s' if len(errors) > 2 else ''}"
            + (": " + "; ".join(others) if others else "") + ")") if len(errors) > 1 else ""
    legacy = re.fullmatch(r'identifier "(__shfl(?:_up|_down|_xor)?|__any|__all|__ballot)" is undefined', msg)
    hint = _legacy_warp_hint(legacy.group(1)) if legacy else ""
    undefined = re.fullmatch(r'identifier "(\w+)" is undefined', msg)
    if undefined and any(re.search(rf"\btexture\s*<[^;]*>\s*{undefined.group(1)}\b", text)
                         for text in prepared.files.values()):
        hint += (f" {undefined.group(1)} is a texture reference (texture<...> {undefined.group(1)}): CUDA 12.0 removed "
                 "texture references, and NVRTC 13 does not compile them; the kernel needs a cudaTextureObject_t "
                 "parameter (tex1Dfetch<T>(object, i)), which perfmodel runs.")
    host_constant = undefined and prepared.host_constants.get(undefined.group(1))
    if host_constant:
        hint += (f" {undefined.group(1)} ({Path(host_constant[0]).name}:{host_constant[1]}) is a host constant whose "
                 "initial value calls a host function: it is computed when the program starts, on the host, and "
                 "device code cannot read it (nvcc: \"identifier is undefined in device code\"); a constexpr value, "
                 "a __constant__ variable the host fills, or a kernel argument can carry it.")
    dead = undefined and prepared.dead_macros.get(undefined.group(1))
    if dead:
        where_file, where_line, branch = dead
        hint += (f" {undefined.group(1)} is #defined at {Path(where_file).name}:{where_line}, under {branch}, a "
                 "branch this compile does not take: the -D that selects it (as the project's build passes) "
                 "defines it.")
    cccl = re.fullmatch(r'namespace "(cub|thrust|cuda|cuda::std)" has no member "(\w+)"', msg)
    if cccl:
        hint += _cccl_hint(cccl.group(1), cccl.group(2))
    operator = re.fullmatch(r'no operator "(.+?)" matches these operands', msg)
    # a host-only operator (no __device__) that device code calls: set aside with the host code, so NVRTC sees
    # none; nvcc refuses the call too ("calling a __host__ function from a __device__ function")
    host_operator = operator and _source_line(prepared, rf"\boperator\s*{re.escape(operator.group(1))}\s*\(",
                                              device=False)
    if host_operator:
        name, number, src = host_operator
        hint += (f" {Path(name).name}:{number} defines operator{operator.group(1)} for the host only "
                 f"(`{src.strip()[:80]}`): device code cannot call it, under nvcc either; it needs "
                 "__host__ __device__.")
    device_sync = bool(undefined and undefined.group(1) == "cudaDeviceSynchronize")
    if device_sync:
        hint += (" cudaDeviceSynchronize() in device code waited for child launches (dynamic parallelism): CUDA "
                 "11.6 deprecated it and CUDA 12 removed it for compute_90 and later (CUDA C++ Programming Guide, "
                 "dynamic parallelism), so nvcc refuses it too: the kernel must leave the wait to a later launch "
                 "(or a tail launch, cudaStreamTailLaunch).")
    statement = _statement_expression(prepared, file, line) if msg.startswith("expected") else None
    if statement:
        hint += (f" {statement[0].upper()}{statement[1:]} holds a GNU statement expression, `({{ ... }})`: nvcc "
                 "takes them in its GNU dialect (it follows the host compiler, gcc or clang), NVRTC in no -std; an "
                 "inline __device__ function (or fmax, min, max) does the same.")
    if prepared.missing_includes and not device_sync and not host_operator and not statement:
        # the names as written, with their quotes or angle brackets (hostcode.py)
        hint += (" Set aside because not found: " + ", ".join(
            f"#include {n}" for n in dict.fromkeys(prepared.missing_includes)) + "; pass -I DIR if the kernels need them.")
    return CompileError(f"{file}:{line}: error: {msg}{detail}{more}.{hint}",
                        location=Location(file, line))

