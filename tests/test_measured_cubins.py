"""The cubin a GPU machine timed is the cubin the analysis reads (docs/validation.md, "Compiler").

A measured case that carries a ``compiler`` record (``validation/measure.py`` writes one for every case it builds
with perfmodel's compile, the runner's default since 2026-11-27; ``validation/replace_cases.py`` keeps it when
merging) holds NVRTC's version on the GPU machine and the SASS opcode histogram of the kernel it loaded. Here the
same kernel, with the case's defines, is compiled the way the analysis compiles it and disassembled: the two
histograms must be equal, opcode for opcode (the NOP padding included). A case measured under another NVRTC
version is skipped, saying so: the two compiles would not be expected to agree."""
import functools
import importlib.util
import json
from pathlib import Path

import pytest

VALIDATION = Path(__file__).resolve().parent.parent / "validation"


def _recorded():
    """(kernel, overrides, compiler record) of every case of the measured datasets (validation/*.json with a list
    of cases) that has a record, one per dataset and distinct compile."""
    out, seen = [], set()
    for path in sorted(VALIDATION.glob("*.json")):
        cases = json.loads(path.read_text()).get("cases")
        name = path.name
        for case in cases if isinstance(cases, list) else ():
            rec = case.get("compiler")
            if not rec:
                continue
            key = (name, case["kernel"], json.dumps(case.get("defines") or {}, sort_keys=True))
            if key not in seen:
                seen.add(key)
                out.append(pytest.param(case["kernel"], case.get("overrides") or {}, rec, id=f"{name}:{case['id']}"))
    return out


RECORDED = _recorded()


def test_the_datasets_hold_compiler_records():
    """Not vacuous: the SGEMM kernels measured again, and the cases measured with perfmodel's compile."""
    kernels = {p.values[0] for p in RECORDED}
    assert {"sgemm_10_warptiling", "sgemm_12_double_buffering2", "conv1d_tiled", "bitonicSortShared1"} <= kernels
    assert all(p.values[2]["opcodes"] and p.values[2]["instructions"] == sum(p.values[2]["opcodes"].values())
               for p in RECORDED)


@pytest.mark.parametrize("kernel, overrides, recorded", RECORDED)
def test_the_measured_cubin_is_the_one_analysed(kernel, overrides, recorded, monkeypatch):
    from perfmodel.compile import nvrtc
    from perfmodel.spec import load_spec

    here = ".".join(map(str, nvrtc.version()))
    if here != recorded["nvrtc"]:
        pytest.skip(f"this NVRTC is {here}; the measurement's compile was {recorded['nvrtc']}")
    monkeypatch.setenv("PERFMODEL_KERNEL_PATH", str(VALIDATION / "kernels"))
    spec = load_spec(kernel)
    launch = spec.instantiate(overrides)
    check = _compiler_check()
    compiled = check._analysed(spec, launch, cache=True)
    ours = check._functions(compiled.cubin).get(compiled.kernel(spec.entry).mangled, {})
    assert ours == recorded["opcodes"]


@functools.lru_cache(maxsize=None)
def _compiler_check():
    spec = importlib.util.spec_from_file_location("compiler_check", VALIDATION / "compiler_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
