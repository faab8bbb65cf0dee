"""The cuda-samples corpus specs (bench/corpus_specs/*.yaml) load and instantiate: valid fields, entries present in
their sources, launch geometry and args that evaluate. No simulation (bench/corpus_run.py does that).

The corpus is found in $PERFMODEL_CORPUS (a folder holding cuda-samples); the tests skip without it."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

SPECS = sorted((ROOT / "bench" / "corpus_specs").glob("*.yaml"))


def _corpus() -> Path | None:
    from corpus_run import corpus_root

    for candidate in (os.environ.get("PERFMODEL_CORPUS"),):
        if candidate and Path(candidate).exists():
            try:
                return corpus_root(candidate)
            except SystemExit:
                continue
    return None


@pytest.fixture(scope="module")
def resolved(tmp_path_factory):
    root = _corpus()
    if root is None:
        pytest.skip("the cuda-samples corpus is not here (set PERFMODEL_CORPUS)")
    from corpus_run import resolve_specs

    out = tmp_path_factory.mktemp("corpus_specs")
    return {p.stem: p for p in resolve_specs(root, out)}


def test_one_spec_per_corpus_kernel():
    assert len(SPECS) == 69


@pytest.mark.parametrize("spec_file", SPECS, ids=lambda p: p.stem)
def test_spec_instantiates(spec_file, resolved):
    from perfmodel.spec import load_spec

    text = spec_file.read_text()
    assert text.startswith("# Samples/"), "each spec cites its sample file and host-code lines first"
    assert "{CORPUS}/Samples/" in text
    spec = load_spec(str(resolved[spec_file.stem]))
    assert spec.name == spec_file.stem
    launch = spec.instantiate({})
    assert launch.total_blocks >= 1 and launch.threads_per_block >= 1
