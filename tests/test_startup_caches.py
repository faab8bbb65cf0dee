"""Start-up shortcuts give what the slow paths give: libyaml's parser under perfmodel's composer against PyYAML's
pure-Python safe loader (the reference implementation), and NVRTC's facts kept on disk against the library."""
import json
from pathlib import Path

import pytest
import yaml

from perfmodel.errors import PerfmodelError
from perfmodel.safeload import parse_yaml

ROOT = Path(__file__).resolve().parent.parent
YAML_FILES = sorted(p for folder in ("devices", "kernels_spec", "perf", "validation", "bench", "examples")
                    for p in (ROOT / folder).rglob("*.yaml"))


def _marks(node):
    out = [(node.start_mark.line, node.start_mark.column, node.end_mark.line, node.end_mark.column)]
    if isinstance(node.value, list):
        for item in node.value:
            for sub in (item if isinstance(item, tuple) else (item,)):
                out += _marks(sub)
    return out


def test_every_yaml_file_parses_as_pyyaml_pure_python_parses_it():
    assert len(YAML_FILES) > 50
    for path in YAML_FILES:
        text = path.read_text()
        reference = yaml.SafeLoader(text)
        ref_node = reference.get_single_node()
        ref_data = reference.construct_document(ref_node)
        data, node = parse_yaml(text, str(path), with_node=True)
        assert data == ref_data, path
        assert _marks(node) == _marks(ref_node), path


@pytest.mark.parametrize("text,line,column", [
    ("a: [1, 2\nb: 3", 2, 2),          # an unclosed flow sequence
    ("a: b: c", 1, 5),                   # a mapping value in a plain scalar
    ("x:\n  - 1\n - 2", 3, 2),           # bad indentation
    ("a: *nope", 1, 4),                  # an undefined alias
])
def test_malformed_yaml_is_reported_where_pure_python_pyyaml_reports_it(text, line, column):
    with pytest.raises(yaml.YAMLError) as ref:
        yaml.safe_load(text)
    mark = ref.value.problem_mark
    assert (mark.line + 1, mark.column + 1) == (line, column)
    with pytest.raises(PerfmodelError, match=rf"^doc\.yaml:{line}:{column}: not valid YAML"):
        parse_yaml(text, "doc.yaml")


def test_nvrtc_facts_on_disk_equal_the_library_and_follow_it(tmp_path, monkeypatch):
    from perfmodel.compile import nvrtc

    if not nvrtc.available():
        pytest.skip("NVRTC is not installed")
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))
    nvrtc.facts.cache_clear()
    try:
        direct = nvrtc._read_facts()
        assert nvrtc.facts() == direct                       # read from the library, then saved
        saved = json.loads((tmp_path / "nvrtc-facts.json").read_text())
        assert saved["version"] == direct["version"] and saved["archs"] == direct["archs"]
        assert 90 in saved["archs"]                          # sm_90 (H100): every NVRTC 12/13 has it
        # a file kept for another library (another path, size or time) is not used
        saved.update(archs=[1, 2, 3], library=["/elsewhere/libnvrtc.so", 1, 1])
        (tmp_path / "nvrtc-facts.json").write_text(json.dumps(saved))
        nvrtc.facts.cache_clear()
        assert nvrtc.facts()["archs"] == direct["archs"]
    finally:
        nvrtc.facts.cache_clear()


def test_the_sass_is_disassembled_when_a_count_needs_it_not_at_load(monkeypatch):
    """A program used for its registers or PTX runs no nvdisasm (0.2 s per kernel with a cold cache); the first
    simulation disassembles it once, and its weights are those an eager load computed (the same function)."""
    import numpy as np

    import perfmodel.compile.sass as sass
    from perfmodel.kernel import _sass_facts, load_kernel
    from perfmodel.sim import simulate

    calls = []
    real = sass.kernel_flow
    monkeypatch.setattr(sass, "kernel_flow", lambda *a, **k: calls.append(1) or real(*a, **k))
    src = "__global__ void k(float *a) { int i = threadIdx.x; for (int j = 0; j < i; ++j) a[i] += a[j]; }"
    program = load_kernel(source=src, path="lazy.cu")
    assert program.registers and program.module.functions[program.entry].instrs
    assert calls == []
    r = simulate(program, 1, 32, [np.ones(32, np.float32)])
    assert len(calls) == 3      # the loop grouping, the weights and the merged shared loads, once each
    simulate(program, 1, 32, [np.ones(32, np.float32)])
    assert len(calls) == 3
    eager = _sass_facts(*program.sass_source, program.module, program.entry)
    assert program.sass_weights == eager.weights and r.counts.warp_instructions > 0
