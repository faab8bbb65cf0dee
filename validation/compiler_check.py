"""Which compiler a measurement used, and what it made: NVRTC's version and the SASS opcode histogram of kernels
compiled the way perfmodel compiles them (``perfmodel.compile.compile_cuda``, sm_90), so that a cubin measured on
a GPU machine can be compared with the one the analysis reads on another (docs/validation.md, "Compiler").

    python validation/compiler_check.py sgemm_10_warptiling sgemm_12_double_buffering2 [--json OUT]

Kernels are spec names (PERFMODEL_KERNEL_PATH=validation/kernels for the validation specs); the histogram counts
each opcode with its width modifiers (``LDS.128``), from ``nvdisasm`` (the nvidia-cuda-nvdisasm wheel, or
``$PERFMODEL_NVDISASM``).
"""
from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def histogram(kernel: str, cache: bool = False) -> dict:
    """NVRTC's version and the SASS opcode histogram of ``kernel`` (a spec name) compiled for sm_90; ``cache``: take
    the compile from perfmodel's compile cache where it is there (a GPU machine compiles afresh)."""
    from perfmodel.compile import compile_cuda
    from perfmodel.compile import nvrtc
    from perfmodel.compile.sass import _disassemble
    from perfmodel.spec import load_spec

    spec = load_spec(kernel)
    launch = spec.instantiate({})
    compiled = compile_cuda(path=str(spec.source_path), arch="sm_90", name_expressions=[spec.entry],
                            defines=dict(launch.defines), include_dirs=spec.include_dirs, cache=cache)
    text = _disassemble(compiled.cubin) or ""
    mangled = compiled.kernel(spec.entry).mangled
    counts: collections.Counter = collections.Counter()
    inside = False
    for line in text.splitlines():
        if line.startswith(".text."):
            inside = line.strip().rstrip(":") == f".text.{mangled}"
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line) if inside else None
        if m:
            counts[m.group(1)] += 1
    return {"kernel": kernel, "nvrtc": ".".join(map(str, nvrtc.version())), "instructions": sum(counts.values()),
            "opcodes": dict(sorted(counts.items()))}


def main(argv: list[str]) -> int:
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
