"""Which compiler a measurement used, and what it made: NVRTC's version and the SASS opcode histogram of kernels
compiled the way perfmodel compiles them (``perfmodel.compile.compile_cuda``, sm_90), so that a cubin measured on
a GPU machine can be compared with the one the analysis reads on another (docs/validation.md, "Compiler").

    python validation/compiler_check.py sgemm_10_warptiling sgemm_12_double_buffering2 [--json OUT]
    python validation/compiler_check.py --dataset validation/h100.json [--dataset ...] [--as-measured] --json OUT

``--dataset``: every distinct (kernel, defines) of the datasets' cases, per SASS function of the cubin.
``--as-measured`` (on the GPU machine, with CuPy): the cubin the measurement loaded, made the way
``perfmodel.gpu.runner.compile_launch`` makes it (perfmodel's compile; under ``PERFMODEL_GPU_COMPILE=cupy``, as the
datasets' older cases were built, CuPy's NVRTC first and perfmodel's compile where CuPy cannot build the file);
without it, perfmodel's compile (what the analysis reads). Compare two such files with
``python validation/compiler_check.py --compare A.json B.json``. A cubin the GPU machine's nvdisasm cannot read is
kept (base64) and disassembled by the comparing machine.

Kernels are spec names (PERFMODEL_KERNEL_PATH=validation/kernels for the validation specs); the histogram counts
each opcode with its width modifiers (``LDS.128``), from ``nvdisasm`` (the nvidia-cuda-nvdisasm wheel, or
``$PERFMODEL_NVDISASM``).
"""
from __future__ import annotations

import base64
import collections
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def histogram(kernel: str, cache: bool = False) -> dict:
    """NVRTC's version and the SASS opcode histogram of ``kernel`` (a spec name) compiled for sm_90; ``cache``: take
    the compile from perfmodel's compile cache where it is there (a GPU machine compiles afresh)."""
    from perfmodel.compile import nvrtc
    from perfmodel.spec import load_spec

    spec = load_spec(kernel)
    compiled = _analysed(spec, spec.instantiate({}), cache)
    counts = _functions(compiled.cubin).get(compiled.kernel(spec.entry).mangled, {})
    return {"kernel": kernel, "nvrtc": ".".join(map(str, nvrtc.version())), "instructions": sum(counts.values()),
            "opcodes": counts}


def _analysed(spec, launch, cache: bool = True):
    """The compile the analysis reads (``perfmodel.compile.compile_cuda`` for sm_90 with the launch's defines)."""
    from perfmodel.compile import compile_cuda

    return compile_cuda(path=str(spec.source_path), arch="sm_90", name_expressions=[spec.entry],
                        defines=dict(launch.defines), include_dirs=spec.include_dirs, cache=cache)


def _functions(cubin: bytes) -> dict[str, dict]:
    """SASS function name -> opcode histogram of a cubin."""
    from perfmodel.compile.sass import _disassemble

    out: dict[str, collections.Counter] = {}
    name = None
    for line in (_disassemble(cubin) or "").splitlines():
        if line.startswith(".text."):
            name = line.strip().rstrip(":")[len(".text."):]
            out.setdefault(name, collections.Counter())
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line) if name else None
        if m:
            out[name][m.group(1)] += 1
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def _elf(data: bytes) -> bytes:
    """The ELF image at the start of ``data``, to the end of its last section or header table (ELF64), anything
    after it left out, and the zero byte CuPy's NVRTC wrapper leaves off the end of the program header table put
    back (nvdisasm rejects the image without it)."""
    import struct

    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    end = max(shoff + shentsize * shnum, phoff + phentsize * phnum)
    for k in range(shnum):
        sh_type, = struct.unpack_from("<I", data, shoff + k * shentsize + 4)
        offset, size = struct.unpack_from("<QQ", data, shoff + k * shentsize + 0x18)
        if sh_type != 8:                    # SHT_NOBITS has no bytes in the file
            end = max(end, offset + size)
    return data[:end] + b"\0" * max(0, end - len(data))


def _measured_cubin(cp, spec, launch) -> tuple[bytes, str]:
    """(cubin, how) as perfmodel.gpu.runner.compile_launch built it: perfmodel's compile (the default), or, under
    ``PERFMODEL_GPU_COMPILE=cupy``, what CuPy's NVRTC call returned (perfmodel's where CuPy could not build the
    file)."""
    import os

    from perfmodel.gpu.runner import compile_launch, compile_mode

    made: list = []
    real = None
    if compile_mode() == "cupy":
        # empty CuPy's kernel cache, so that CuPy compiles rather than loads (the folder stays: its backend writes
        # there), and capture what its NVRTC call returns
        cache = Path(os.environ.get("CUPY_CACHE_DIR", os.path.expanduser("~/.cupy/kernel_cache")))
        for old in cache.rglob("*") if cache.is_dir() else []:
            if old.is_file():
                old.unlink()
        real = getattr(cp.cuda.compiler, "_compile_using_nvrtc_no_warning", None)
    if real is not None:
        def capture(*args, **kwargs):
            out = real(*args, **kwargs)
            made.append(out[0])
            return out

        cp.cuda.compiler._compile_using_nvrtc_no_warning = capture
    try:
        _module, _kernel, _options, built = compile_launch(cp, spec, launch)
    finally:
        if real is not None:
            cp.cuda.compiler._compile_using_nvrtc_no_warning = real
    if built is not None:
        return built[0], "perfmodel"
    if made and not isinstance(made[-1], str) and bytes(made[-1]).startswith(b"\x7fELF"):
        return _elf(bytes(made[-1])), "cupy"
    return b"", "cupy (no cubin seen)"      # another CuPy version, or PTX for the driver: not compared


def survey(datasets: list[str], as_measured: bool) -> list[dict]:
    from perfmodel.compile import nvrtc
    from perfmodel.spec import load_spec

    cp = None
    if as_measured:
        from perfmodel.gpu.env import require_cupy

        cp = require_cupy()
    rows, seen = [], set()
    for ds in datasets:
        for case in json.loads(Path(ds).read_text())["cases"]:
            spec = load_spec(case["kernel"])
            launch = spec.instantiate(case.get("overrides") or {})
            key = (case["kernel"], json.dumps(dict(launch.defines), sort_keys=True))
            if key in seen:
                continue
            seen.add(key)
            if cp is not None:
                cubin, how = _measured_cubin(cp, spec, launch)
            else:
                cubin, how = _analysed(spec, launch).cubin, "analysis"
            row = {"kernel": case["kernel"], "defines": dict(launch.defines), "entry": spec.entry, "how": how,
                   "nvrtc": ".".join(map(str, nvrtc.version())), "functions": _functions(cubin)}
            if cubin and not row["functions"]:
                row["cubin_base64"] = base64.b64encode(cubin).decode()    # for another machine's nvdisasm
            rows.append(row)
            print(f"{case['kernel']} {dict(launch.defines)}: {how}, {len(rows[-1]['functions'])} functions",
                  flush=True)
    return rows


def _entry_functions(row: dict) -> dict:
    if not row["functions"] and row.get("cubin_base64"):
        row["functions"] = _functions(_elf(base64.b64decode(row["cubin_base64"])))
    base = row["entry"].split("<")[0].split("::")[-1]
    # a C++ name holds the identifier with its length before it (_Z17bitonicSortShared...); an extern "C" one is it
    return {k: v for k, v in row["functions"].items() if k == base or f"{len(base)}{base}" in k}


def _instructions(functions: dict, ftz: bool = True) -> collections.Counter:
    """The functions' opcodes without the NOPs that pad a function to 128 bytes, and (``ftz``) with ``.FTZ`` taken
    off (CuPy compiles with ``-ftz=true``: the same instructions, flushing denormals)."""
    out: collections.Counter = collections.Counter()
    for histogram in functions.values():
        for op, n in histogram.items():
            if op != "NOP":
                out[op.replace(".FTZ", "") if ftz else op] += n
    return out


def compare(a_path: str, b_path: str) -> int:
    """Print, per (kernel, defines), how the entry's SASS in two survey files compares: the same, the same but
    for ``.FTZ``, or different (the instruction counts, NOPs aside)."""
    def rows(path):
        data = json.loads(Path(path).read_text())
        return {(r["kernel"], json.dumps(r["defines"], sort_keys=True)): r
                for r in (data["rows"] if isinstance(data, dict) else data)}

    a, b = rows(a_path), rows(b_path)
    tally: collections.Counter = collections.Counter()
    for key in sorted(a.keys() & b.keys()):
        fa, fb = _entry_functions(a[key]), _entry_functions(b[key])
        if not fa or not fb:
            tally["not disassembled"] += 1
        elif _instructions(fa, ftz=False) == _instructions(fb, ftz=False):
            tally["the same"] += 1
        elif _instructions(fa) == _instructions(fb):
            tally["the same but .FTZ"] += 1
        else:
            tally["different"] += 1
            na, nb = sum(_instructions(fa).values()), sum(_instructions(fb).values())
            print(f"DIFFERS {key[0]} {key[1]} ({a[key]['how']} vs {b[key]['how']}): {na} vs {nb} SASS "
                  f"instructions ({100 * (na / nb - 1):+.0f}%)")
    tally["in one file only"] = len(a.keys() ^ b.keys())
    print(", ".join(f"{n} {what}" for what, n in tally.items()))
    return 0


def main(argv: list[str]) -> int:
    if "--compare" in argv:
        i = argv.index("--compare")
        return compare(argv[i + 1], argv[i + 2])
    if "--dataset" in argv:
        datasets = [argv[i + 1] for i, a in enumerate(argv) if a == "--dataset"]
        rows = survey(datasets, "--as-measured" in argv)
        Path(argv[argv.index("--json") + 1]).write_text(json.dumps(rows) + "\n")
        return 0
    out = argv[argv.index("--json") + 1] if "--json" in argv else None
    names = [a for i, a in enumerate(argv) if a != "--json" and (i == 0 or argv[i - 1] != "--json")]
    rows = [histogram(k) for k in names]
    for r in rows:
        wide = {k: v for k, v in r["opcodes"].items() if k.startswith(("LDS", "LDG", "STS", "LDGSTS"))}
        print(f"{r['kernel']}: NVRTC {r['nvrtc']}, {r['instructions']} SASS instructions, {wide}")
    if out:
        Path(out).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
