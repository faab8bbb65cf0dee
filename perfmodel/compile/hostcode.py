"""Set host-only code aside so that a real-world ``.cu`` file (kernels + ``main`` + ``cudaMalloc`` + ``<stdio.h>``)
compiles with NVRTC as it is.

The file is never edited on disk. A copy is made in which host-only code is *blanked* (every character replaced
by a space, newlines kept), so every remaining line keeps its original line number. Local headers
(``#include "x.cuh"``) are inlined, processed the same way, between ``#line 1 "/abs/x.cuh"`` and
``#line N "/abs/including.cu"`` directives, so NVRTC's messages and the PTX ``.loc`` line table name the original
files and lines.

What is set aside (blanked):

* ``#include`` of headers NVRTC cannot or need not see: C/C++ library headers (not found in the CUDA SDK
  include folders), the CUDA runtime/driver host APIs (``cuda_runtime.h``, ``cuda.h``, ...) and the cuda-samples
  host helpers (``helper_cuda.h``, ``helper_functions.h``, ...); ``#include`` of a quoted header that is not found.
* function definitions and prototypes with no ``__global__``/``__device__`` qualifier, or ``__host__`` only
  (``main`` included), template or not;
* explicit instantiations of templates that were set aside;
* classes/structs whose member functions are all host-only, unless device code names them (then only their
  host member-function definitions are blanked);
* host global variables (no ``__device__``/``__constant__``/``__shared__``/``__managed__``), except
  non-pointer ``const``/``constexpr`` ones, which device code may use.

A file-level invocation of a function-like macro whose replacement holds device code (``#define BUILD(T)
template <> struct Shared<T> { __device__ T *get() ... }`` then ``BUILD(float);``) is kept: it declares device
code, though it looks like a host function's prototype. An explicit specialization of a template kernel
(``template <> __global__ void k<__half>(...)``) is recorded with its own arguments beside the primary template.

Preprocessor lines are never blanked (``#if``/``#endif`` stay balanced), except ``#include`` as above and
``#define NAME`` when the caller overrides ``NAME`` with ``-D``.
"""
from __future__ import annotations

import bisect
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from perfmodel.compile.conditions import (_COMPILER_DEFINED, _DEVICE_DEFINED, DEFINED, MAX_INCLUDES,
                                         _device_dead_lines, _libcudacxx_declared, _libcudacxx_names,
                                         _lines_and_directives, _probe_compiler_macros, _sdk_macros, include_guard)
from perfmodel.compile.lexer import (ACCESS_WORDS, ATTRIBUTE_WORDS, CLASS_WORDS, Chunk, Tok, class_name,
                                     function_name, has_top_level, head_words, mask, match_close, names_std_member,
                                     preprocessor_lines, split_chunks, template_params, template_prefix_end,
                                     tokenize)

# Headers only host code uses: the CUDA runtime / driver host APIs and the cuda-samples host helpers.
HOST_ONLY_HEADERS = frozenset({
    "cuda_runtime.h", "cuda_runtime_api.h", "cuda.h", "cuda_profiler_api.h", "cudaProfiler.h",
    "cuda_gl_interop.h", "cuda_egl_interop.h", "cuda_vdpau_interop.h", "cuda_d3d11_interop.h",
    "helper_cuda.h", "helper_cuda_drvapi.h", "helper_functions.h", "helper_string.h", "helper_timer.h",
    "helper_image.h", "helper_gl.h", "helper_multiprocess.h", "exception.h", "multithreading.h",
    "cuda_device_runtime_api.h", "device_launch_parameters.h", "cuda_occupancy.h", "channel_descriptor.h",
    "nvrtc.h", "curand_mtgp32_host.h", "cudaTypedefs.h", "cudaEGLTypedefs.h", "cudaGLTypedefs.h",
    "cudaVDPAUTypedefs.h", "cudaProfilerTypedefs.h", "cudaEGL.h", "cudaGL.h", "cudaVDPAU.h",
    # host APIs of the CUDA libraries (cuBLAS, cuFFT, cuSPARSE, cuSOLVER, NVML, NCCL, NVTX): kernels never need
    # them, and where their headers are installed (a toolkit, PyTorch's nvidia-cublas wheel) they include C
    # library headers NVRTC does not have (<stdint.h>), so a kernel file that includes them would not compile
    "cublas_v2.h", "cublas.h", "cublas_api.h", "cublasLt.h", "cublasXt.h", "cufft.h", "cufftXt.h", "cufftw.h",
    "cusparse.h", "cusparse_v2.h", "cusolverDn.h", "cusolverSp.h", "cusolverRf.h", "cusolver_common.h",
    "nvml.h", "nccl.h", "nvToolsExt.h", "nvToolsExtCuda.h",
})
# What a set-aside library header gives device code, read from the header itself: cuBLAS's cublas_api.h (CUDA 12.6
# and 13.0; cublas_v2.h, cublas.h, cublasLt.h and cublasXt.h include it) includes <cuda_fp16.h>, <cuda_bf16.h>,
# "cuComplex.h" and <library_types.h>; cuFFT's cufft.h includes "cuComplex.h" and "library_types.h" and declares the
# data types cufftReal, cufftDoubleReal, cufftComplex and cufftDoubleComplex, and cufftXt.h (which includes
# cufft.h) the device callbacks' function-pointer types. With nvcc a kernel file can take __nv_bfloat16 from
# <cublas_v2.h> alone (llm.c's dev/cuda/common.h does) or cufftComplex from <cufft.h> (cuda-samples'
# simpleCUFFT_MGPU), so where such a header is set aside these stay, at its place: (headers, declarations).
_CUBLAS_DEVICE_PARTS = (("cuda_fp16.h", "cuda_bf16.h", "cuComplex.h", "library_types.h"), ())
_CUFFT_TYPES = ("typedef float cufftReal;", "typedef double cufftDoubleReal;", "typedef cuComplex cufftComplex;",
                "typedef cuDoubleComplex cufftDoubleComplex;")
_CUFFT_CALLBACKS = tuple(
    f"typedef {ret} (*cufftCallbackLoad{k})(void *dataIn, size_t offset, void *callerInfo, void *sharedPointer);"
    for k, ret in (("C", "cufftComplex"), ("Z", "cufftDoubleComplex"), ("R", "cufftReal"), ("D", "cufftDoubleReal"))
) + tuple(
    f"typedef void (*cufftCallbackStore{k})(void *dataOut, size_t offset, {t} element, void *callerInfo, "
    "void *sharedPointer);"
    for k, t in (("C", "cufftComplex"), ("Z", "cufftDoubleComplex"), ("R", "cufftReal"), ("D", "cufftDoubleReal")))
DEVICE_PARTS_OF_HOST_HEADERS = {
    **{name: _CUBLAS_DEVICE_PARTS for name in ("cublas_v2.h", "cublas.h", "cublas_api.h", "cublasLt.h", "cublasXt.h")},
    "cufft.h": (("cuComplex.h", "library_types.h"), _CUFFT_TYPES),
    "cufftXt.h": (("cuComplex.h", "library_types.h"), _CUFFT_TYPES + _CUFFT_CALLBACKS),
    # the driver API's TMA descriptor, a kernel parameter (const __grid_constant__ CUtensorMap) on sm_90: cuda.h's
    # definition (CUDA 12), once whichever of the two headers brings it
    **{name: ((), ("#ifndef PERFMODEL_CUTENSORMAP", "#define PERFMODEL_CUTENSORMAP",
                   "typedef struct CUtensorMap_st { alignas(64) unsigned long long opaque[16]; } CUtensorMap;",
                   "#endif")) for name in ("cuda.h", "cudaTypedefs.h")},
}
# Header folders whose headers are host-side libraries (Thrust's containers and algorithms) - except the Thrust
# headers kernels use on the device that NVRTC compiles (tuples, pairs, functors; thrust/complex.h and
# thrust/random.h need the host's <ostream>, so NVRTC cannot)
# ... and the windowing and graphics APIs (OpenGL, GLUT, GLEW, GLFW, EGL), wherever a copy is found: CUDA by Example's
# cpu_bitmap.h includes <GL/glext.h>, of which the book keeps a Windows copy beside it
# The C, C++ and POSIX libraries' headers: set aside like any header NVRTC lacks, and not "not found" (the message
# that suggests -I when a compile fails: no folder of the user's holds them)
STANDARD_HEADERS = frozenset("""
assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h limits.h locale.h math.h setjmp.h signal.h
stdalign.h stdarg.h stdatomic.h stdbool.h stddef.h stdint.h stdio.h stdlib.h stdnoreturn.h string.h tgmath.h threads.h
time.h uchar.h wchar.h wctype.h unistd.h pthread.h fcntl.h dirent.h getopt.h malloc.h memory.h strings.h omp.h
sys/time.h sys/types.h sys/stat.h sys/mman.h sys/resource.h sys/sysinfo.h sys/wait.h libgen.h dlfcn.h sched.h
semaphore.h windows.h
algorithm array atomic bitset cassert ccomplex cctype cerrno cfenv cfloat chrono cinttypes climits clocale cmath
codecvt complex condition_variable cstdarg cstdbool cstddef cstdint cstdio cstdlib cstring ctime cuchar cwchar
cwctype deque exception filesystem forward_list fstream functional future initializer_list iomanip ios iosfwd
iostream istream iterator limits list locale map memory mutex new numeric optional ostream queue random ratio regex
set sstream stack stdexcept streambuf string string_view system_error thread tuple type_traits typeindex typeinfo
unordered_map unordered_set utility valarray variant vector
""".split())
HOST_ONLY_PREFIXES = ("thrust/", "cub/device/", "cub/util_allocator.cuh", "GL/", "GLES2/", "GLES3/", "GLFW/",
                      "OpenGL/", "EGL/",
                      # libcu++'s runtime parts, host APIs (buffers, memory resources and pools, streams) whose
                      # headers define __host__-only functions NVRTC refuses ("not allowed in JIT mode", CCCL 3.5) and
                      # include CUB's device-wide algorithms: CUB's test_util.h includes them beside its examples
                      "cuda/buffer", "cuda/memory_pool", "cuda/memory_resource", "cuda/stream",
                      "cuda/__memory_resource/", "cuda/__memory_pool/", "cuda/__stream/", "cuda/__container/")
# CUB's umbrella header <cub/cub.cuh> stops NVRTC (`#error "Including <cub/cub.cuh> is not supported when compiling
# with NVRTC. Include the specific device header instead"`). Under nvcc it brings both the block-, warp- and
# thread-level primitives kernels use (cub::BlockReduce, cub::WarpReduce, cub::BlockScan ...) and the device-wide
# algorithms the host calls (cub::DeviceReduce, which launch kernels, and the host's caching allocator), which NVRTC
# cannot compile (each of cub/device/*.cuh and cub/util_allocator.cuh has its own #error for NVRTC). So the umbrella
# becomes its own list of includes, read from it, less those host-side parts, which are set aside wherever included.
UMBRELLAS = {"cub/cub.cuh": ("cub/device/", "cub/util_allocator.cuh")}
DEVICE_THRUST = frozenset({"thrust/tuple.h", "thrust/pair.h", "thrust/functional.h"})
DEVICE_WORDS = frozenset({"__global__", "__device__", "constexpr"})   # constexpr: callable on the device
DEVICE_VAR_WORDS = frozenset({"__device__", "__constant__", "__shared__", "__managed__", "__global__"})
# a macro replacement that is host code: a kernel launch or a call of the host runtime's memory / stream API
HOST_MACRO_BODY = re.compile(r"<\s*<\s*<|\bcuda(?:Malloc|Memcpy|Memset|Free|Stream|Event|DeviceSynchronize)\w*\s*\(")


@dataclass
class KernelDecl:
    """A ``__global__`` function found in the source (or an inlined local header)."""
    name: str
    is_template: bool
    template_params: list[tuple[str, str]]    # (kind text, parameter name), e.g. ("typename", "T"), ("int", "N")
    params_text: str                          # the text between the parentheses of the signature
    file: str
    line: int
    extern_c: bool = False
    namespace: str = ""                       # "ns::" prefix when declared in a namespace
    # an explicit specialization (template <> __global__ void k<__half>(...)): its template arguments, "__half"
    specialization: str | None = None


@dataclass
class Prepared:
    text: str                                 # what NVRTC compiles (after the preamble)
    files: dict[str, str] = field(default_factory=dict)   # every file read: path -> original content
    kernels: list[KernelDecl] = field(default_factory=list)
    set_aside_includes: list[str] = field(default_factory=list)
    missing_includes: list[str] = field(default_factory=list)
    device_functions: set[str] = field(default_factory=set)
    typedefs: dict[str, list[str]] = field(default_factory=dict)   # simple aliases: name -> [aliased type, ...]
    device_launch: bool = False     # device code launches kernels (dynamic parallelism: needs -rdc=true)
    # launches with explicit template arguments (`name<args><<<`), host or device code: (name, args, file, line)
    launches: list[tuple[str, str, str, int]] = field(default_factory=list)
    # template kernels' instantiations the file launches with arguments NVRTC can resolve: name expressions to try
    launched: list[str] = field(default_factory=list)
    # macros #defined only in branches no compile takes: name -> (file, line, the branch's directive)
    dead_macros: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    # host constants set aside for a host function call in their initialiser: name -> (file, line)
    host_constants: dict[str, tuple[str, int]] = field(default_factory=dict)


def tree_header(name: str, folder: Path) -> Path | None:
    """A header not on the include path, in the folders a project keeps shared headers in, up the tree from
    ``folder`` (cuda-samples' Samples/x/y/z.cu includes <helper_math.h> from Common/ with -I../../../Common)."""
    if not name.endswith((".h", ".cuh", ".hpp", ".inl")):
        return None
    d = folder
    for _ in range(4):
        for sub in ("", "Common", "common", "include", "inc"):
            cand = d / sub / name
            if cand.is_file():
                return cand.resolve()
        if d.parent == d:
            break
        d = d.parent
    return None


class _FileProcessor:
    def _libcudacxx_has(self, words: list[str]) -> bool:
        """Whether every ``std::NAME`` that ``words`` name is one libcu++ provides for device code (a header
        ``cuda/std/__*/NAME.h`` or ``cuda/std/NAME`` in the SDK: aligned_storage, enable_if, numeric_limits, pair),
        so that an alias of it is kept for the compile's libcu++ retry; ``std::vector`` or ``std::cout`` have none."""
        names = {words[k + 2] for k, w in enumerate(words[:-2])
                 if w == "std" and words[k + 1] == "::" and (k == 0 or words[k - 1] != "::")}
        dirs = tuple(str(d) for d in self.sdk_dirs)
        have = _libcudacxx_names(dirs)
        if names & self.lacking:
            return False
        return bool(names) and (names <= have or names <= have | _libcudacxx_declared(dirs))

    def __init__(self, defines: dict[str, object], include_dirs: list[str], sdk_dirs: list[str],
                 constexpr_floats: bool = False):
        self.defines = defines
        self.constexpr_floats = constexpr_floats
        self.lacking: set[str] = set()       # std names libcu++ turned out not to give device code (prepare)
        self.respell: list[tuple[int, int, str]] = []     # (start, end, text): a token of this file spelt anew
        self.include_dirs = [Path(d) for d in include_dirs]
        self.sdk_dirs = [Path(d) for d in sdk_dirs]
        self.device_dead: dict[str, set[int]] = {}      # file -> 1-based lines no device compile sees
        self.result = Prepared("")
        self.inlined_once: set[str] = set()
        self.host_functions: set[str] = set()        # functions set aside as host code, by name
        self._macro_index: dict[str, tuple[set[str], str]] = {}   # header -> (its #define names, its text)
        self.inlined_count: dict[str, int] = {}     # header -> includes seen (MAX_INCLUDES inlined at most)
        self.kept_ids: set[str] = set()           # identifiers of kept non-class code (an #if's words name
        # macros, never a class: miniBUDE's `#ifdef IMPL_CLS` before `#define IMPL_CLS ...` and `class IMPL_CLS`)
        self.macro_uses: dict[str, set[str]] = {}   # macro -> the identifiers of its text (and parameters)
        self.macro_pastes: dict[str, set[str]] = {}  # macro -> the names its text pastes onto (`Convert_` ## C)
        self.class_info: list[tuple[set[str], set[str]]] = []
        self.reachable: set[str] | None = None    # second pass: names device code can reach
        self.launch_words: set[str] = set()         # first pass: the words of launches' template arguments
        self.token_cache: dict[str, list[Tok]] = {}   # shared by both passes
        # macros that stand for execution-space or storage words (#define HOST_DEVICE __host__ __device__): the
        # identifiers of each #define's replacement, any branch of an #if (the scan reads every branch)
        self.macro_words: dict[str, set[str]] = {}
        # function-like macros whose replacement holds device code (#define BUILD(T) template <> struct
        # Shared<T> { __device__ T *get() ... }): their invocations at file level declare it, and are kept
        self.device_macros: set[str] = set()
        self.function_macros: set[str] = set()     # every function-like macro of the translation unit
        # object-like macros' replacement texts (the last #define read): a kernel's parameter list written with one
        # (CloverLeaf's `#define _SHARED_KERNEL_ARGS_ const int x_min, ...` then `k(_SHARED_KERNEL_ARGS_, ...)`)
        self.macro_bodies: dict[str, str] = {}
        # function-like macros' '{' less '}' in their replacement: ggml's GGML_TABLE_BEGIN(type, name, size) opens a
        # __device__ table's initialiser (`static const __device__ type name[size] = {`), GGML_TABLE_END() closes it
        self.macro_braces: dict[str, int] = {}
        self._resolved: dict[tuple, tuple[str, Path | None]] = {}     # (name, quoted, including file) -> _resolve
        # function-like macros whose replacement is host code: it launches a kernel or calls the host runtime
        # (a PyTorch extension's TORCH_BINDING_ADD(f32, torch::kFloat32) defining the host wrapper of a kernel)
        self.host_macros: set[str] = set()

    def _macro_brace_end(self, toks, close: int, limit: int, depth: int) -> int:
        """The last token of the macro invocations from the one ending at ``close`` (which opens ``depth`` braces)
        to the one that closes them (GGML_TABLE_BEGIN(...) 1, 2, ... GGML_TABLE_END()), or ``close`` if none does
        before ``limit``."""
        k = close + 1
        while k + 1 < limit:
            t = toks[k]
            if t.kind == "id" and t.text in self.macro_braces and toks[k + 1].text == "(":
                end = match_close(toks, k + 1)
                depth += self.macro_braces[t.text]
                if depth <= 0:
                    return end
                k = end + 1
                continue
            k += 1
        return close

    def _expand_params(self, params_text: str) -> str:
        """A parameter list with the file's object-like macros replaced by their text (a few levels deep), as the
        preprocessor does: a macro that stands for several parameters gives each its own name (a -D value is
        left to the compile)."""
        for _ in range(4):
            names = {w for w in re.findall(r"[A-Za-z_]\w*", params_text)
                     if w in self.macro_bodies and w not in self.defines}
            if not names:
                break
            params_text = re.sub(r"[A-Za-z_]\w*", lambda m: f" {self.macro_bodies[m.group(0)]} "
                                 if m.group(0) in names else m.group(0), params_text)
        return params_text

    def _macro(self, name: str, here: set[str], unfound: bool = False, seen: dict | None = None,
               uncertain: set | None = None) -> object:
        """What an ``#if`` can know of macro NAME before the compile: its ``-D`` value (a number; 1 for a bare
        ``-D NAME``; DEFINED for a value that is no number), False where nothing defines it (no ``-D``, no
        ``#define`` before it in this file, in the headers read before it or in this file's own headers
        (``here``), none in NVIDIA's headers, and - ``unfound`` - no
        "header" of the file's that was not found: the compile sees it undefined, as a C preprocessor does), else
        None (unknown)."""
        if name in self.defines:
            value = self.defines[name]
            if value is None or value is True or (isinstance(value, str) and not value.strip()):
                return 1                    # -D NAME: defined as 1, as a compiler takes it
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return value
            try:
                return int(str(value).strip(), 0)
            except ValueError:
                try:
                    return float(str(value).strip())
                except ValueError:
                    return DEFINED          # defined, to a value #if cannot use (-D T=float)
        if uncertain and name in uncertain:
            return None
        if seen and name in seen:           # #define'd earlier in this file, in a branch every compile takes
            body = seen[name]
            if not body:
                return DEFINED
            try:
                return int(body, 0)
            except ValueError:
                try:
                    return float(body)
                except ValueError:
                    return DEFINED
        # a #define of this file's own comes later (earlier ones are in seen or uncertain): not defined here yet
        if name in here or name in self.macro_words or name in self.function_macros \
                or unfound or name in _sdk_macros(tuple(str(d) for d in self.sdk_dirs)):
            return None
        if name.startswith("_"):
            # the compiler's, or nobody's: NVRTC says which (LAMMPS's `#ifdef _SINGLE_DOUBLE`, given no -D, was
            # undecided, so the `#define acctyp double` under it counted as taken and acctyp read as float
            # after the later `#ifndef acctyp`)
            _probe_compiler_macros([name], tuple(str(d) for d in self.sdk_dirs))
            known = _COMPILER_DEFINED.get(name)
            return None if known is None else (DEFINED if known else False)
        return False

    def _header_macros(self, text: str, path: Path) -> set[str]:
        """The names the local headers ``text`` includes (found, transitively) #define or #undef (each header's
        own names read once a scan)."""
        out: set[str] = set()
        visited: set[str] = set()
        todo = [(text, path)]
        while todo and len(visited) < 2000:
            text, path = todo.pop()
            for quote, name in re.findall(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', text, re.M):
                how, target = self._resolve(name.strip(), quote == '"', path)
                if how != "local" or target is None or str(target) in visited:
                    continue
                visited.add(str(target))
                cached = self._macro_index.get(str(target))
                if cached is None:
                    try:
                        inner = target.read_text(errors="replace")
                    except OSError:
                        inner = ""
                    names = set(re.findall(r"^[ \t]*#[ \t]*(?:define|undef)[ \t]+([A-Za-z_]\w*)", mask(inner), re.M))
                    cached = self._macro_index[str(target)] = (names, inner)
                out |= cached[0]
                todo.append((cached[1], target))
        return out

    # ---- includes -------------------------------------------------------------------------------------------
    def _resolve(self, name: str, quoted: bool, here: Path) -> tuple[str, Path | None]:
        """("local", path) to inline, ("sdk", None) to keep for NVRTC, ("umbrella", path) for the device-side
        headers an umbrella header includes (UMBRELLAS), ("aside", None) to blank. Once per include of a file: the
        #if verdicts ask first whether its quoted headers are found, then the include itself."""
        key = (name, quoted, here)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = self._find(name, quoted, here)
        return found

    def _find(self, name: str, quoted: bool, here: Path) -> tuple[str, Path | None]:
        base = name.rsplit("/", 1)[-1]
        search = ([here.parent] if quoted else []) + self.include_dirs
        if quoted and "/" in name and not name.startswith(HOST_ONLY_PREFIXES) and not base.startswith("helper_") \
                and base not in ("exception.h", "multithreading.h"):
            # the project's own header under a folder of its own, whatever its name (llama.cpp's "vendors/cuda.h",
            # which brings cuda_fp16.h and its own macros, is no driver API); cuda-samples' host helpers stay aside
            # wherever they are
            for d in search:
                if (d / name).is_file():
                    return "local", (d / name).resolve()
        if base in HOST_ONLY_HEADERS or (name.startswith(HOST_ONLY_PREFIXES) and name not in DEVICE_THRUST):
            return "aside", None
        for d in search:
            cand = d / name
            if cand.is_file():
                return "local", cand.resolve()
        for d in self.sdk_dirs:
            if (d / name).is_file():
                return ("umbrella", d / name) if name in UMBRELLAS else ("sdk", None)
        found = tree_header(name, here.parent)
        return ("local", found) if found is not None else ("aside", None)

    def _device_parts(self, name: str, last: int, display: str) -> str:
        """What replaces the ``#include`` of a set-aside header: nothing, or - where the SDK has all of them - the
        device headers and declarations it would have brought in (DEVICE_PARTS_OF_HOST_HEADERS), then a ``#line``
        back to the next line."""
        headers, decls = DEVICE_PARTS_OF_HOST_HEADERS.get(name.rsplit("/", 1)[-1], ((), ()))
        if not (headers or decls) or not all(any((d / h).is_file() for d in self.sdk_dirs) for h in headers):
            return ""           # not one of those, or not NVIDIA's headers here: nothing, as for any set-aside header
        return ("".join(f"#include <{h}>\n" for h in headers) + "".join(d + "\n" for d in decls)
                + f'#line {last + 2} "{_escape(display)}"')

    # ---- one file ----------------------------------------------------------------------------------------------
    def process(self, path: Path, display: str, text: str, depth: int = 0, under_condition: bool = False) -> str:
        """The text NVRTC gets for one file (its local headers inlined); ``under_condition``: the file is included
        inside an #if of a file that includes it (its headers may be skipped by the compile there)."""
        # a UTF-8 byte-order mark (ccminer's cuda_quark_blake512.cu): gcc and nvcc skip it, NVRTC reads a token
        text = text[1:] if text.startswith("\ufeff") else text
        self.result.files[display] = text
        masked = mask(text)
        lines = text.split("\n")
        mlines = masked.split("\n")
        out = list(text)     # the text NVRTC gets: blanks where code is set aside
        directives = preprocessor_lines(masked)
        # the underscore names this file's #ifs test, asked of NVRTC in one compile (see _macro)
        tested = {n for first, last, _off in directives
                  for n in re.findall(r"(?<![\w])_\w+", " ".join(mlines[first:last + 1]))
                  if re.match(r"\s*#\s*(?:if|ifdef|ifndef|elif)\b", mlines[first])}
        if tested - set(self.defines) - set(_DEVICE_DEFINED):
            _probe_compiler_macros(tested - set(self.defines) - set(_DEVICE_DEFINED),
                                   tuple(str(d) for d in self.sdk_dirs))
        # the macros this file's own headers (found, inlined below) may define before an #if asks: undecided
        # (cfg.h's `#define USE_FOO` made `#ifdef USE_FOO` dead, the compile took the other branch)
        here = self._header_macros(text, path)
        # a "header" of the project's that is not found could define what an #ifdef asks (config.h): then only
        # the -D names are decided
        # (one in a branch no compile takes does not count: darknet's #ifdef CUDNN / #include "cudnn.h")
        missing = [first for first, _last, _off in directives
                   for n in re.findall(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', lines[first])
                   if self._resolve(n, True, path)[0] == "aside" and n.rsplit("/", 1)[-1] not in HOST_ONLY_HEADERS]

        guard = include_guard(mlines, directives)

        def verdicts(unfound: bool):
            seen: dict = {}
            uncertain: set = set()
            dead_defines: dict[int, str] = {}
            live.clear()
            dead = _device_dead_lines(mlines, directives, lambda name: self._macro(name, here, unfound, seen,
                                                                                   uncertain),
                                      seen, uncertain, dead_defines, guard, live)
            return dead, dead_defines

        live: set[int] = set()
        dead_lines, dead_defines = verdicts(False)
        if any(m.startswith('"') for m in self.result.missing_includes) or \
                any(first not in dead_defines for first in missing):
            dead_lines, dead_defines = verdicts(True)
        self.device_dead[display] = dead_lines
        # includes inside an #if (other than the file's own include guard): where the compile may not take them
        conditional: set[int] = set()
        nesting = 0
        for first, _last, _off in directives:
            word = re.match(r"\s*#\s*(\w*)", mlines[first]).group(1)
            if word == "include" and nesting > (1 if guard else 0) and first not in live:
                conditional.add(first)
            nesting += word in ("if", "ifdef", "ifndef")
            nesting -= word == "endif" and nesting > 0
        code = list(masked)
        directive_lines: set[int] = set()
        replacements: dict[int, str] = {}   # line index -> replacement text for the whole directive
        for first, last, off in directives:
            for li in range(first, last + 1):
                directive_lines.add(li)
            pos = off
            for li in range(first, last + 1):
                for k in range(pos, pos + len(mlines[li])):
                    code[k] = " "
                pos += len(mlines[li]) + 1
            body = " ".join(m.rstrip("\\") for m in mlines[first:last + 1]).strip()[1:].strip()
            word = re.match(r"\w*", body).group()
            if word == "define":
                # what a macro's text names reaches device code only where kept code uses the macro (ethminer's
                # CUDA_SAFE_CALL names a host exception class deriving from std::runtime_error: kept, it failed
                # the compile): prepare() follows the macros kept code names
                dm = re.match(r"define\s+([A-Za-z_]\w*)(.*)", body)
                if dm:
                    self.macro_uses.setdefault(dm.group(1), set()).update(re.findall(r"[A-Za-z_]\w*", dm.group(2)))
                    # a name it pastes together (`Convert_##C::run`): every name with that beginning may be it
                    params = re.match(r"\(([^)]*)\)", dm.group(2))
                    params = set(re.findall(r"\w+", params.group(1))) if params else set()
                    pasted = set(re.findall(r"([A-Za-z_]\w*)\s*##", dm.group(2))) - params   # (text, not `a##b`)
                    if pasted:
                        self.macro_pastes.setdefault(dm.group(1), set()).update(pasted)
            if word == "define":
                # object-like only: a function-like macro's invocation (DEFINE_HAS_MEMBER(x), no ';' after it)
                # stands for declarations of its own, not for words of the declaration the scan joins it to
                m = re.match(r"define\s+([A-Za-z_]\w*)\b(?!\()(.*)", body)
                if m and first in dead_defines:
                    # what an "undefined" error can point to: where the macro is, and the branch's condition
                    self.result.dead_macros.setdefault(m.group(1), (display, first + 1, dead_defines[first]))
                if m and first not in dead_defines:
                    # (a #define in a branch no compile takes is not the macro's text: chai's `#if DOUBLE_PRECISION
                    # #define T double #else #define T float`, whose last one was taken for every T)
                    self.macro_words.setdefault(m.group(1), set()).update(re.findall(r"[A-Za-z_]\w*", m.group(2)))
                    self.macro_bodies[m.group(1)] = m.group(2).strip()
                m = re.match(r"define\s+([A-Za-z_]\w*)\(([^)]*)\)(.*)", body)
                if m:
                    self.function_macros.add(m.group(1))
                    self.macro_braces[m.group(1)] = m.group(3).count("{") - m.group(3).count("}")
                words = set(re.findall(r"[A-Za-z_]\w*", m.group(3))) if m else set()
                words |= {x for w in words for x in self.macro_words.get(w, ())}
                # (through the function-like macros it invokes too: FFmpeg's DEF_CONVERT_RGB -> DEF_CONVERT_IDENTITY
                # -> DEF_F, whose text holds __device__)
                if m and words & (DEVICE_WORDS | DEVICE_VAR_WORDS | self.device_macros):
                    self.device_macros.add(m.group(1))
                elif m and (HOST_MACRO_BODY.search(m.group(3)) or re.search(r"\)\s*(?:const\s*)?\{", m.group(3))):
                    # host code: it launches a kernel, calls the host runtime, or defines a function none of whose
                    # words is a device one (CloverLeaf's C_PACK_INTERFACE(name): extern "C" host entry points)
                    self.host_macros.add(m.group(1))
            if word == "include":
                m = re.match(r'include\s*([<"])([^>"]+)[>"]', " ".join(lines[first:last + 1]).strip()[1:].strip())
                if not m:
                    continue
                if first in dead_defines:
                    # in a branch no compile takes (darknet's #ifdef CUDNN / #include "cudnn.h"): not read, and
                    # not listed as a header that was not found
                    replacements[first] = ""
                    continue
                quoted, name = m.group(1) == '"', m.group(2).strip()
                how, target = self._resolve(name, quoted, path)
                if how == "aside":
                    self.result.set_aside_includes.append(name)
                    base = name.rsplit("/", 1)[-1]
                    known = base in HOST_ONLY_HEADERS or name.startswith(HOST_ONLY_PREFIXES) or name in STANDARD_HEADERS
                    if quoted and base not in HOST_ONLY_HEADERS:
                        self.result.missing_includes.append(f'"{name}"')
                    elif not quoted and not known:
                        # a library's header found nowhere (<torch/extension.h>): said if the compile then fails
                        self.result.missing_includes.append(f"<{name}>")
                    replacements[first] = self._device_parts(name, last, display)
                elif how == "umbrella":
                    host_side = UMBRELLAS[name]
                    parts = re.findall(r"^\s*#\s*include\s*<([^>]+)>", target.read_text(errors="replace"), re.M)
                    keep_parts = "".join(f"#include <{h}>\n" for h in parts if not h.startswith(host_side))
                    replacements[first] = keep_parts + f'#line {last + 2} "{_escape(display)}"'
                elif how == "local":
                    key = str(target)
                    inner = target.read_text(errors="replace")
                    self.inlined_count[key] = self.inlined_count.get(key, 0) + 1
                    cond = under_condition or first in conditional
                    # (the cap is for copies the compile may skip: a header every compile sees here is inlined -
                    # glm's _vectorize.hpp, inlined under undecided #ifs more often than that before its
                    # func_common.inl, which every compile takes, included it)
                    if key in self.inlined_once or depth > 40 or (cond and self.inlined_count[key] > MAX_INCLUDES):
                        replacements[first] = ""
                        continue
                    # once inlined, a header with #pragma once or an include guard is not again: kaldi's guarded
                    # headers include each other (kaldi-common.h, io-funcs.h, kaldi-math.h), and inlining each
                    # again at every include doubled the text at every level, to 40 levels
                    # (not where the include is under an #if, here or in a file that includes this one: the
                    # compile may skip that copy - kaldi's #ifdef __IS_HIP_COMPILE__ branch - and need the next)
                    once = re.search(r"^\s*#\s*pragma\s+once", inner, re.M) is not None
                    if not cond and (once or include_guard(*_lines_and_directives(inner))):
                        self.inlined_once.add(key)
                    processed = self.process(target, key, inner, depth + 1, cond)
                    replacements[first] = (f'#line 1 "{_escape(key)}"\n{processed}\n'
                                           f'#line {last + 2} "{_escape(display)}"')
                    if once:
                        # its `#pragma once` goes with the inlining (NVRTC would take the whole text as one file):
                        # a guard of its own keeps a second copy out where the header is inlined again (glm's
                        # type_vecN.inl under #ifndef GLM_EXTERNAL_TEMPLATE includes one more each time)
                        guard_name = "PERFMODEL_ONCE_" + hashlib.sha1(key.encode()).hexdigest()[:16]
                        replacements[first] = (f"#ifndef {guard_name}\n#define {guard_name}\n"
                                               f"{replacements[first]}\n#endif\n"
                                               f'#line {last + 2} "{_escape(display)}"')
            elif word in ("define", "undef"):
                m = re.match(r"(?:define|undef)\s+([A-Za-z_]\w*)", body)
                if m and m.group(1) in self.defines:
                    replacements[first] = ""
            elif word == "pragma" and re.match(r"pragma\s+once", body):
                replacements[first] = ""
        dead = self.device_dead[display]
        if dead:
            # code on lines no compile takes is not scanned: an #ifdef DEBUG / #else pair of signatures, each with
            # its own '{', read as two declarations and one brace too many
            pos = 0
            for li, m in enumerate(mlines, start=1):
                if li in dead and li - 1 not in directive_lines:
                    code[pos:pos + len(m)] = " " * len(m)
                pos += len(m) + 1
        code_s = "".join(code)
        if self.reachable is not None:
            self.result.launches += [(n, a, display, code_s.count("\n", 0, at) + 1) for n, a, at in _launches(code_s)]
        else:       # the first pass: what a launch's template arguments name (scale<real, BLOCK><<<...>>>)
            self.launch_words.update(w for _n, a, _at in _launches(code_s) for w in re.findall(r"[A-Za-z_]\w*", a or ""))
        toks = self.token_cache.get(code_s)
        if toks is None:
            toks = self.token_cache[code_s] = tokenize(code_s)
        toks = self._scope_macros(toks)
        blank: list[tuple[int, int]] = []
        self.respell = []
        self._classify(toks, split_chunks(toks, 0, len(toks)), blank, display, text)
        for t, after in zip(toks, toks[1:]):
            # extern "C"__global__: nvcc's front end warns and reads two tokens; NVRTC (C++11 and later) reads a
            # user-defined string literal and fails with "expected an identifier" - spelt with the space
            if t.kind == "str" and text[t.start:t.end] == '"C"' and after.kind == "id" and after.start == t.end:
                self.respell.append((t.start, t.end, '"C" '))
        for a, b, new in self.respell:
            out[a:b] = [new] + [""] * (b - a - 1)
        for a, b in blank:
            for k in range(a, b):
                if out[k] != "\n":
                    out[k] = " "
        new_lines = "".join(out).split("\n")
        for li in directive_lines:   # blanking never touches directives
            new_lines[li] = lines[li]
        for li, rep in replacements.items():
            new_lines[li] = rep
            # continuation lines of a replaced directive become empty
            k = li + 1
            while k < len(lines) and lines[k - 1].rstrip().endswith("\\") and k in directive_lines:
                new_lines[k] = ""
                k += 1
        # an include replaced by several lines ends with a #line back to the file's next line; inside an #if the
        # compile skips, that #line is skipped too and every later line was off by the lines inserted (glm's
        # setup.hpp: `#if !defined(CUDA_VERSION)` around `#include <cuda.h>`): each later #elif, #else and #endif
        # says the line again
        shifted = min((li for li, rep in replacements.items() if "\n" in rep and li in conditional), default=None)
        if shifted is not None:
            for first, last, _off in directives:
                word = re.match(r"\s*#\s*(\w*)", mlines[first])
                if first > shifted and first not in replacements and word and word.group(1) in ("elif", "else",
                                                                                                  "endif"):
                    new_lines[last] += f'\n#line {last + 2} "{_escape(display)}"'
        return "\n".join(new_lines)

    def _scope_macros(self, toks: list[Tok]) -> list[Tok]:
        """``toks`` with the uses of object-like macros that open or close a scope (a namespace through
        ``BEGIN_NS`` / ``END_NS``) replaced by their replacement's tokens: otherwise ``BEGIN_NS`` reads as a word of
        the next declaration and ``END_NS``'s brace is missing, and the chunks (and what is set aside) go wrong."""
        scoped = {name: body for name, body in self.macro_bodies.items()
                  if name not in self.defines and body.count("{") != body.count("}")}
        if not scoped or not any(t.kind == "id" and t.text in scoped for t in toks):
            return toks
        out: list[Tok] = []
        for t in toks:
            expanded = _scope_tokens(scoped[t.text], t) if t.kind == "id" and t.text in scoped else None
            out.extend(expanded if expanded is not None else (t,))
        return out

    def _classify(self, toks: list[Tok], chunks: list[Chunk], blank: list, display: str, text: str) -> None:
        kept_ids: set[str] = set()
        aside_templates: set[str] = set()
        classes: list[Chunk] = []
        instantiations: list[tuple[Chunk, str | None]] = []

        def span(c: Chunk) -> tuple[int, int]:
            return toks[c.first].start, toks[c.last].end

        dead = self.device_dead.get(display) or set()
        newlines = [k for k, ch in enumerate(text) if ch == "\n"] if dead else []

        def keep(c: Chunk) -> None:
            # words on lines no device compile takes (#ifndef __CUDA_ARCH__: a __host__ __device__ function's
            # host-only throw) name nothing device code needs
            kept_ids.update(t.text for t in toks[c.first:c.last + 1] if t.kind == "id"
                            and not (dead and bisect.bisect_left(newlines, t.start) + 1 in dead))

        for c in chunks:
            head = head_words(toks, c)
            # a function-like macro's invocation with no ';' after it (DEFINE_SCALE(triple, 3.0f)) in front of a
            # declaration: it stays as it is, and the declaration after it is read on its own
            # (set aside where the macro's replacement is host code, as a lone invocation would be)
            while len(head) > 2 and head[0] in self.function_macros and head[1] == "(":
                close = match_close(toks, c.first + 1)
                if close + 1 >= (c.body[0] if c.body else c.last):
                    break
                if self.macro_braces.get(head[0], 0) > 0:
                    # an invocation that opens a brace: through the invocations that close it, one declaration
                    close = self._macro_brace_end(toks, close, c.body[0] if c.body else c.last + 1,
                                                  self.macro_braces[head[0]])
                if head[0] in self.host_macros:
                    blank.append(span(Chunk(c.first, close, "decl", None, c.namespace, c.extern_c)))
                else:
                    keep(Chunk(c.first, close, "decl", None, c.namespace, c.extern_c))
                c = Chunk(close + 1, c.last, c.kind, c.body, c.namespace, c.extern_c)
                head = head_words(toks, c)
                if c.kind == "function" and c.body and _class_head(head):
                    # what follows the invocation is a class (FFmpeg's `DEF_CONVERT_REORDER(bgra, rgb0)` then
                    # `struct Convert_bgr0_bgra {...};`): the invocation's parentheses made the chunk a function
                    c = Chunk(c.first, c.last, "class", c.body, c.namespace, c.extern_c)
            hs = self._words(head)
            if c.kind == "class":
                classes.append(c)
                continue
            if head == [";"]:       # an empty declaration: the `;` after a class the chunking read as a function
                continue
            if head and head[0] == "template" and (len(head) < 2 or head[1] != "<"):
                instantiations.append((c, function_name(head[1:])[0]))
                continue
            if head[:2] == ["extern", "template"]:
                instantiations.append((c, function_name(head[2:])[0]))
                continue
            name, paren = function_name(head, self.function_macros)
            is_function = c.kind == "function" or (paren >= 0 and "=" not in head[template_prefix_end(head):paren]
                                                   and name is not None
                                                   and "typedef" not in hs and "using" not in hs)
            if is_function and head and head[0] in self.device_macros and len(head) > 1 and head[1] == "(":
                # a file-level invocation of a macro that declares device code (BUILD_SHAREDMEMORY_TYPE(float,
                # s_float);), not a host function's prototype
                keep(c)
                continue
            if is_function:
                if hs & DEVICE_WORDS:
                    keep(c)
                    if re.search(r"<\s*<\s*<", text[toks[c.first].start:toks[c.last].end]):
                        self.result.device_launch = True
                    if name:
                        self.result.device_functions.add(name)
                    if "__global__" in hs and name:
                        self._record_kernel(toks, c, head, name, paren, display, text)
                else:
                    blank.append(span(c))
                    if name:
                        self.host_functions.add(name)
                    if name and head[0] == "template":
                        aside_templates.add(name)
                continue
            if hs & DEVICE_VAR_WORDS or not head:
                keep(c)
                continue
            own = head[template_prefix_end(head):] if head[0] == "template" else head
            if own and own[0] in ("using", "typedef") and names_std_member(own) and not self._libcudacxx_has(own):
                # using std::cout; typedef std::vector<int> V; -- <iostream> etc. are set aside; an alias template
                # too (ArrayFire's `template<typename T> using uptr = std::unique_ptr<T[], std::function<...>>;`)
                blank.append(span(c))
                continue
            alias = _alias_name(head) if c.kind != "class" and not c.body else None
            if alias is not None:
                # a plain alias (typedef pthread_t CUTThread;) is kept where kept code names it: the first pass
                # leaves its own words out of what device code names, the second sets aside one nothing reaches
                # (book.h's thread typedef named a type of a set-aside host header)
                if self.reachable is None:
                    self.class_info.append(({alias}, {t.text for t in toks[c.first:c.last + 1] if t.kind == "id"}))
                    continue
                if alias not in self.reachable:
                    blank.append(span(c))
                    continue
                self._record_alias(head)
                keep(c)
                continue
            if head[0] in ("typedef", "using", "static_assert", "enum", "namespace") or "typedef" in hs:
                self._record_alias(head)
                keep(c)
                continue
            bare = [w for w in head if w != ";"]
            if len(bare) == 2 and bare[0] in CLASS_WORDS:
                # a forward declaration stays as it is, but is no use of the class: convnet2's `class NVMatrix;`
                # would keep the host class NVMatrix, and through it Matrix's <cblas.h> types
                continue
            if head[0] == "template":
                keep(c)
                continue
            # a host global variable: keep only non-pointer const/constexpr ones
            before = head[:head.index("=")] if "=" in head else head
            after = head[len(before) + 1:]
            # (not one initialised by a call of a host function: kaldi-math.h's `static const double
            # kMinLogDiffDouble = Log(DBL_EPSILON);`, whose Log is set aside - no device code can use it, nvcc's either)
            host_call = any(w in self.host_functions and w not in self.result.device_functions and k + 1 < len(after)
                            and after[k + 1] == "(" and (k == 0 or after[k - 1] not in ("::", ".", "->"))
                            for k, w in enumerate(after))
            if host_call and ("const" in before or "constexpr" in before):
                declared = [w for w in before if re.fullmatch(r"[A-Za-z_]\w*", w)]
                if declared:
                    line = text.count("\n", 0, toks[c.first].start) + 1
                    self.result.host_constants.setdefault(declared[-1], (display, line))
            if ("const" in before or "constexpr" in before) and "*" not in before and "extern" not in before \
                    and (not names_std_member(head) or self._libcudacxx_has(head)) and not host_call:
                # (one naming what libcu++ has - `constexpr float kInf = std::numeric_limits<float>::infinity();`
                # - stays for the compile's libcu++ retry)
                keep(c)
                if self.constexpr_floats and "constexpr" not in before and self._floating(before):
                    t = next(t for t in toks[c.first:c.last + 1] if t.text == "const")
                    self.respell.append((t.start, t.end, "constexpr"))
            else:
                blank.append(span(c))
        for c in classes:
            head = head_words(toks, c)
            name = class_name(head)
            lo, hi = c.body
            members = split_chunks(toks, lo + 1, hi)
            names = {name} if name else set()
            if head and head[0] == "typedef":     # typedef struct tag { ... } Name, *PName;
                names |= {t.text for t in toks[c.body[1] + 1:c.last + 1] if t.kind == "id"}
            inner = {t.text for t in toks[c.first:c.last + 1] if t.kind == "id"}
            self.class_info.append((names, inner))
            if _host_class(toks, members, self._words):
                blank.append(span(c))
                continue
            if self.reachable is not None:
                # second pass: a class that no kept code names (kernels, device functions, kept globals, macros,
                # other kept classes -- in any file of the translation unit) is host-only
                if names and not names & self.reachable:
                    blank.append(span(c))
                    continue
            else:
                funcs = [m for m in members if m.kind == "function" or
                         (function_name(head_words(toks, m))[0] is not None
                          and not has_top_level(head_words(toks, m), "="))]
                device = any(self._words(head_words(toks, m)) & DEVICE_WORDS
                             or set(head_words(toks, m)) & self.device_macros for m in members)
                if funcs and not device and (name is None or name not in kept_ids):
                    blank.append(span(c))
                    continue
            for m in members:   # host-only member function definitions of a kept class
                mh = head_words(toks, m)
                # (a member whose head is a function-like macro that holds __device__: FFmpeg's DEF_F(N, T))
                if self._words(mh) & DEVICE_WORDS or set(mh) & self.device_macros:
                    continue
                if m.kind == "function" or (function_name(mh)[0] is not None and names_std_member(mh)
                                            and not has_top_level(mh, "=")):
                    # and host-only member declarations naming the C++ library, whose headers are set aside
                    # (`static void log(int level, const std::string& msg);`); an access specifier in front
                    # (`public: V() {}`) stays
                    first = m.first
                    while first + 1 < m.last and toks[first].text in ACCESS_WORDS and toks[first + 1].text == ":":
                        first += 2
                    own = [t.text for t in toks[first:m.body[0]]] if m.kind == "function" and m.body else None
                    # (not one naming std::: no std header may be there for it - HOOMD's `explicit
                    # BoxDim(const std::array<Scalar, 6>&)` failed a compile that includes none)
                    if own and "virtual" not in own and not has_top_level(own, ":") and not names_std_member(own):
                        # its declaration stays, its body goes: device code may name it where it is never run
                        # (glm's TMax::operator(), unannotated, passed to a __host__ __device__ template), and a
                        # declared function compiles where a missing one does not; one that runs is an
                        # unresolved extern function, which the compile error names
                        brace = toks[m.body[0]]
                        blank.append((brace.start + 1, toks[m.last].end))
                        self.respell.append((brace.start, brace.start + 1, ";"))
                        continue
                    blank.append((toks[first].start, toks[m.last].end))
        for c, name in instantiations:
            if name is None or name in aside_templates or name not in self.result.device_functions:
                blank.append(span(c))
            else:
                keep(c)
        self.kept_ids |= kept_ids

    def _floating(self, words: list[str]) -> bool:
        """Whether a declaration's type is float or double, directly or through a typedef."""
        seen, todo = set(), [w for w in words if re.match(r"[A-Za-z_]\w*$", w)]
        while todo:
            w = todo.pop()
            if w in ("float", "double"):
                return True
            if w not in seen:
                seen.add(w)
                todo += [x for t in self.result.typedefs.get(w, ()) for x in t.split()]
                # and through an object-like macro (miniFE's `typedef MINIFE_SCALAR Scalar;`, -DMINIFE_SCALAR=double)
                text = self.defines.get(w) if w in self.defines else self.macro_bodies.get(w)
                if isinstance(text, str):
                    todo += re.findall(r"[A-Za-z_]\w*", text)
        return False

    def _words(self, head: list[str]) -> set[str]:
        """The words of a declaration's head with the macros among them expanded (transitively), so that
        ``HOST_DEVICE float f()`` is device code where ``#define HOST_DEVICE __host__ __device__``."""
        out = set(head)
        todo = [w for w in head if w in self.macro_words]
        while todo:
            for w in self.macro_words[todo.pop()]:
                if w not in out:
                    out.add(w)
                    if w in self.macro_words:
                        todo.append(w)
        return out

    def _record_alias(self, head: list[str]) -> None:
        """``typedef float real;`` / ``using real = float;`` (no pointers to functions, arrays or bodies)."""
        words = [w for w in head if w != ";"]
        if any(w in ("(", "{", "[", "<") for w in words):
            return
        if words[:1] == ["typedef"] and len(words) >= 3:
            name, target = words[-1], " ".join(words[1:-1])
        elif words[:1] == ["using"] and len(words) >= 4 and words[2] == "=":
            name, target = words[1], " ".join(words[3:])
        else:
            return
        self.result.typedefs.setdefault(name, []).append(target.replace(" *", "*"))

    def _record_kernel(self, toks, c: Chunk, head: list[str], name: str, paren: int, display: str,
                       text: str) -> None:
        po = c.first + paren
        pc = match_close(toks, po)
        params_text = text[toks[po].end:toks[pc].start]
        # preprocessor lines inside the parameter list (`#ifdef DYNAMIC_PARTITION , int *worklist #endif`) go: the
        # parameters of every branch stay, and the compiled entry's mangled name says which ones are there
        params_text = re.sub(r"^[ \t]*#.*$", " ", mask(params_text), flags=re.M)
        params_text = self._expand_params(params_text)
        name_tok = toks[po - 1]
        line = text.count("\n", 0, name_tok.start) + 1
        if line in self.device_dead.get(display, ()):
            return      # in a branch the device compile drops (#else of #if __CUDA_ARCH__ >= 120): not this kernel
        tparams = template_params(head)
        is_template = head[0] == "template" and len(head) > 1 and head[1] == "<"
        extern_c = c.extern_c or (head[0] == "extern" and len(head) > 1 and toks[c.first + 1].kind == "str")
        specialization = None
        if head[:3] == ["template", "<", ">"]:
            # an explicit specialization: its own signature, for its own arguments only (the primary template's
            # instantiations keep theirs)
            m = re.search(re.escape(name) + r"\s*<(.*)>\s*$", mask(text[toks[c.first].start:toks[po].start]), re.S)
            specialization = "".join(m.group(1).split()) if m else None
        decl = KernelDecl(name, is_template, tparams, " ".join(params_text.split()), display, line, extern_c,
                          c.namespace, specialization)
        for k, old in enumerate(self.result.kernels):
            if old.name == decl.name and old.namespace == decl.namespace and \
                    old.specialization == decl.specialization and \
                    (is_template or _param_types(old.params_text) == _param_types(decl.params_text)):
                if c.kind == "function":      # the definition wins over a prototype
                    self.result.kernels[k] = decl
                return
        self.result.kernels.append(decl)      # (a kernel of another parameter list: an overload)


def _scope_tokens(body: str, at: Tok) -> list[Tok] | None:
    """The tokens of an object-like macro's replacement that opens or closes a scope (unbalanced braces: ``#define
    BEGIN_MGPU_NAMESPACE namespace mgpu {``, ``#define END_NS }``, ``extern "C" {``), each at the place of the
    macro's name ``at``; None for any other replacement."""
    if body.count("{") == body.count("}"):
        return None
    return [Tok(t.text, at.start, at.end, t.kind) for t in tokenize(mask(body))]


def _class_head(head: list[str]) -> bool:
    """Whether a declaration's words (before its body) define a class: a class word before any parenthesis."""
    skip = template_prefix_end(head)
    cls = next((k for k, w in enumerate(head) if w in CLASS_WORDS and k >= skip), None)
    if cls is None or (cls and head[cls - 1] == "enum"):
        return False
    return not any(w == "(" and not (k and head[k - 1] in ATTRIBUTE_WORDS) for k, w in enumerate(head[skip:cls], skip))


def _launches(code: str) -> list[tuple[str, str, int]]:
    """``ns::kernel<float, 256><<<grid, block>>>`` in comment- and string-free code: (name, "float, 256", offset)."""
    out = []
    # (`<< <g, b >> >`, spaced: valid CUDA, as the 3D Gaussian Splatting rasterizer writes every launch)
    for m in re.finditer(r">\s*<\s*<\s*<", code):
        j, depth = m.start(), 0
        while j >= 0:
            depth += (code[j] == ">") - (code[j] == "<")
            if depth == 0 or code[j] in ";{}":
                break
            j -= 1
        if j < 0 or code[j] != "<":
            continue
        name = re.search(r"([A-Za-z_][\w:]*)\s*$", code[:j])
        if name:
            out.append((name.group(1), " ".join(code[j + 1:m.start()].split()), name.start(1)))
    return out


def _host_class(toks: list[Tok], members: list[Chunk], words) -> bool:
    """A class with member functions, none of them device code, and a data member of a C++ library type
    (``std::vector<float> times;``): device code cannot use it, whatever names it - Rodinia's dwt2d keeps a timing
    class in a header that a macro names (``#define PERF_BEGIN dwt_cuda::CudaDWTTester PERF_TESTER;``)."""
    if not any(m.kind == "function" for m in members) or any(words(head_words(toks, m)) & DEVICE_WORDS
                                                              for m in members):
        return False
    return any(m.kind != "function" and names_std_member(head_words(toks, m)) for m in members)


def _escape(path: str) -> str:
    return path.replace("\\", "\\\\").replace('"', '\\"')


def prepare(text: str, display: str, path: Path | None, *, defines: dict[str, object] | None = None,
            include_dirs: list[str] = (), sdk_dirs: list[str] = (), name_expressions=(),
            constexpr_floats: bool = False, lacking: frozenset = frozenset()) -> Prepared:
    """Process one translation unit: inline local headers, set host code aside, find the kernels.

    ``constexpr_floats`` spells the kept namespace-scope ``const float``/``double`` globals ``constexpr``. nvcc lets
    device code use a host ``const`` scalar "initialized with a constant expression" (the CUDA C++ Programming
    Guide's "Const-qualified variables") and folds ``const float r = -f;`` or ``1.0 / scale`` where f and scale are
    such constants; NVRTC's ``-default-device`` makes them ``__device__`` variables, and ISO C++ does not count a
    const float as a constant, so it reports "dynamic initialization is not supported for a __device__ variable".
    ``constexpr`` is ISO C++'s way of saying what nvcc does. ``lacking``: std names a compile with libcu++ standing
    in still missed (its headers have them for the host only: ``std::function``), whose aliases go with the host
    code."""
    here = path if path is not None else Path.cwd() / display
    # Pass 1 finds what device code names; pass 2 sets aside the classes it cannot reach.
    first = _FileProcessor(dict(defines or {}), list(include_dirs), list(sdk_dirs))
    first.lacking = set(lacking)
    first.process(here, display, text)
    reachable = set(first.kept_ids)
    for expr in name_expressions:        # testKernel<RGBA32> reaches RGBA32
        reachable.update(re.findall(r"[A-Za-z_]\w*", expr))
    reachable |= first.launch_words         # as does a launch's scale<real, BLOCK><<<...>>>
    changed = True
    while changed:
        changed = False
        for names, inner in first.class_info:
            if (not names or names & reachable) and not inner <= reachable:
                reachable |= inner
                changed = True
        for name in [n for n in first.macro_uses if n in reachable]:     # the text of the macros it names
            if not first.macro_uses[name] <= reachable:
                reachable |= first.macro_uses[name]
                changed = True
        # names a reached macro pastes together (FFmpeg's vf_scale_cuda.cu reaches its `struct Convert_nv12_...`
        # only through `Convert_##C`): the classes whose names begin so
        prefixes = tuple(p for n, ps in first.macro_pastes.items() if n in reachable for p in ps)
        if prefixes:
            for names, inner in first.class_info:
                if any(n.startswith(prefixes) for n in names) and not (names | inner) <= reachable:
                    reachable |= names | inner
                    changed = True
    proc = _FileProcessor(dict(defines or {}), list(include_dirs), list(sdk_dirs), constexpr_floats)
    proc.lacking = set(lacking)
    proc.reachable = reachable
    proc.token_cache = first.token_cache
    proc.result.text = proc.process(here, display, text)
    known = (set(proc.macro_words) | set(proc.defines) | set(proc.result.typedefs)
             | {n for names, _ in first.class_info for n in names})
    proc.result.launched = _launched(proc.result, known)
    return proc.result


# Template arguments a launch site may spell that NVRTC resolves without the host code around it: C++'s type words,
# CUDA's vector and 16-bit float types, <cstdint>'s names (from libcu++), and the file's macros, aliases and classes.
_TYPE_WORDS = frozenset("""bool char short int long signed unsigned float double void true false size_t ptrdiff_t
    half half2 __half __half2 __nv_bfloat16 __nv_bfloat162 nv_bfloat16 nv_bfloat162 sizeof""".split())
_BUILTIN_TYPE = re.compile(r"(u?(char|short|int|long|longlong)|float|double)[1-4]$|u?int(8|16|32|64)_t$")


def _param_types(params_text: str) -> list[str]:
    """A parameter list's types, white space and names left out: a prototype and its definition agree."""
    from perfmodel.compile.signature import parse_params

    def plain(ctype: str) -> str:
        # a by-value parameter's own const is no part of the function's type ([dcl.fct]): `void k(const Vec, Vec)`
        # declares `void k(Vec A, Vec B)` (the CUDA guide's MatMulKernel prototype)
        words = ctype.split()
        if "*" not in ctype and "&" not in ctype:
            words = [w for w in words if w not in ("const", "volatile")]
        elif words and words[-1] in ("const", "volatile"):
            words = words[:-1]
        return "".join(words)
    try:
        return [plain(ctype) for _, ctype, _ in parse_params(params_text)]
    except Exception:   # noqa: BLE001 - a list the parser does not read: compare the text
        return ["".join(params_text.split())]


def _alias_name(head: list[str]) -> str | None:
    """The name a plain alias declares (``typedef unsigned int uint;``, ``using real = float;``, ``typedef
    std::chrono::system_clock Clock;``, ``typedef vector<vector<int>> matrix;``): None for anything else (a typedef
    of a function, an array or a struct body, ``using namespace``, ``using std::min;``), except a pointer to a function
    or a member function (``typedef double &(Domain::* Domain_member)(int);``: the pointer's name)."""
    words = [w for w in head if w != ";"]
    if words[:1] == ["typedef"] and "(" in words and "{" not in words:
        # a pointer to a function or to a member function: typedef double &(Domain::* Domain_member)(int_t);
        # typedef void (*handler)(int); -- the name is the pointer's, inside the first parentheses
        i = words.index("(")
        inner = words[i + 1:words.index(")", i)] if ")" in words[i:] else []
        if inner and inner[-2:-1] == ["*"] and re.fullmatch(r"[A-Za-z_]\w*", inner[-1]):
            return inner[-1]
        return None
    if any(w in ("(", "{", "[") for w in words):
        return None
    if words[:1] == ["typedef"] and len(words) >= 3 and re.fullmatch(r"[A-Za-z_]\w*", words[-1]) \
            and words[-2] not in ("::", ","):
        return words[-1]
    if words[:1] == ["using"] and len(words) >= 4 and words[2] == "=" and re.fullmatch(r"[A-Za-z_]\w*", words[1]):
        return words[1]
    return None


def _launched(result: Prepared, known: set[str]) -> list[str]:
    """``kernel<float, BLOCK>`` for each launch ``kernel<float, BLOCK><<<...>>>`` of a template kernel whose
    arguments name only what NVRTC can resolve in the kept code (not the template parameters of a host function
    around the launch, ``kernel<T><<<...>>>``): the instantiations the file runs, compiled with its kernels."""
    templates = {k.name: k for k in result.kernels if k.is_template}
    out: list[str] = []
    for name, args, _file, _line in result.launches:
        k = templates.get(name.split("::")[-1])
        if k is None or not args:
            continue
        if all(w in _TYPE_WORDS or w in known or _BUILTIN_TYPE.match(w) for w in re.findall(r"[A-Za-z_]\w*", args)):
            expr = f"{k.namespace}{k.name}<{args}>"
            if expr not in out:
                out.append(expr)
    return out
