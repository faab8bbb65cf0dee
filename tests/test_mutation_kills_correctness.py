"""Tests written against the mutants of the sampled run (perfmodel/analysis.py ``_sampled``) the suite let survive:
its extrapolated idle blocks, against a kernel whose busy, half-idle and fully idle blocks are known by hand."""
from __future__ import annotations

import numpy as np
import pytest

from perfmodel.analysis import analyze

PATTERN_CU = """
__global__ void Pattern(float* out)
{
    int b = blockIdx.x, t = threadIdx.x;
    int kind = b % 4;                        // 0 and 3: every thread works; 1: half of them; 2: none
    if (kind == 2) return;
    if (kind == 1 && t >= blockDim.x / 2) return;
    out[b * blockDim.x + t] = 1.0f;
}
"""

PATTERN_SPEC = """
name: idle_pattern
description: "blocks that are busy, half idle or fully idle by their index"
source: idle.cu
entry: Pattern
params:
  B: {default: 64}
grid: [B]
block: [128]
args:
  - {name: out, dtype: float32, length: B * 128, init: zeros}
"""


@pytest.fixture(scope="module")
def pattern(tmp_path_factory):
    folder = tmp_path_factory.mktemp("idle")
    (folder / "idle.cu").write_text(PATTERN_CU)
    (folder / "idle_pattern.yaml").write_text(PATTERN_SPEC)
    return str(folder / "idle_pattern.yaml")


def test_idle_blocks_exact_and_sampled(pattern):
    # 64 blocks: 16 with half their 128 threads idle, 16 with all of them idle
    exact = analyze(pattern, "h100", sample=0).to_json()
    assert exact["idle"]["partially_idle_blocks"] == 16
    assert exact["idle"]["fully_idle_blocks"] == 16
    assert exact["counts"]["idle_threads"] == 16 * 64 + 16 * 128
    sampled = analyze(pattern, "h100", sample=24).to_json()
    assert sampled["sampled"] and sampled["idle"]["extrapolated"]
    # an estimate from 24 of the 64 blocks: within a quarter of the true 16
    assert 12 <= sampled["idle"]["partially_idle_blocks"] <= 20
    assert 12 <= sampled["idle"]["fully_idle_blocks"] <= 20


def test_sampled_check_ignores_nan_outputs_the_sampled_blocks_did_not_write(tmp_path):
    # vec_add with C initialised to NaN: the blocks a sampled run skips leave their NaNs (NaN != NaN, yet nothing
    # was written there), so only the elements the simulated blocks wrote are compared, and A + B is correct
    import shutil

    import yaml

    from perfmodel.paths import shipped_dir

    spec = yaml.safe_load((shipped_dir("kernels_spec") / "vec_add.yaml").read_text())
    n = 16 * 256
    spec["name"] = "vec_add_nan"
    spec["params"]["N"]["default"] = n
    for arg in spec["args"]:
        if arg["name"] == "C":
            arg["init"] = {"values": [float("nan")] * n}
    (tmp_path / "vec_add_nan.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    shutil.copy(shipped_dir("kernels_spec") / "vec_add.cu", tmp_path / "vec_add.cu")
    a = analyze(str(tmp_path / "vec_add_nan.yaml"), "h100", sample=4)
    assert a.sim.sampled and a.sim.blocks_simulated < 16
    assert a.sim.correct is True, a.sim.correct_detail


def test_sampled_report_keeps_hot_lines_reason_and_zero_idle_figures():
    # vec_add, 64 full blocks: a sampled run reports what the exact run does - no idle block, the source line of
    # the add among the hot lines - and says why it sampled
    exact = analyze("vec_add", "h100", {"N": 64 * 256}, sample=0).to_json()
    sampled = analyze("vec_add", "h100", {"N": 64 * 256}, sample=4).to_json()
    assert sampled["sampled"] and "--sample 4" in sampled["sample"]["reason"]
    for doc in (exact, sampled):
        assert doc["idle"]["partially_idle_blocks"] == 0 and doc["idle"]["fully_idle_blocks"] == 0
    add_line = next(i for i, text in enumerate(Path_text("vec_add.cu"), 1) if "C[i] = A[i] + B[i];" in text)
    assert add_line in {h["line"] for h in sampled["hot_lines"]}
    assert {h["line"] for h in sampled["hot_lines"]} == {h["line"] for h in exact["hot_lines"]}


def Path_text(name: str) -> list[str]:
    from perfmodel.paths import shipped_dir

    return (shipped_dir("kernels_spec") / name).read_text().splitlines()


def test_a_kernel_that_writes_nothing_is_never_reported_correct(tmp_path):
    # the vec_add spec pointed at a kernel whose store never runs: the exact run is wrong; a sampled run whose
    # blocks wrote nothing has nothing to check (None), and must not claim the outputs are right
    import shutil

    from perfmodel.paths import shipped_dir

    src = shipped_dir("kernels_spec")
    (tmp_path / "nowrite.cu").write_text((src / "vec_add.cu").read_text().replace("if (i < N)", "if (i < 0)"))
    (tmp_path / "nowrite.yaml").write_text((src / "vec_add.yaml").read_text()
                                           .replace("name: vec_add", "name: nowrite")
                                           .replace("source: vec_add.cu", "source: nowrite.cu"))
    shutil.copy(src / "vec_add.cu", tmp_path / "unused.cu")
    assert analyze(str(tmp_path / "nowrite.yaml"), "h100", {"N": 2048}, sample=0).sim.correct is False
    sampled = analyze(str(tmp_path / "nowrite.yaml"), "h100", {"N": 64 * 256}, sample=4)
    assert sampled.sim.sampled
    assert sampled.sim.correct is not True


# ---- the cuda-samples corpus references (perfmodel/references.py ``corpus_*``) ---------------------------------
# bench/corpus_run.py checks them against the corpus kernels' outputs (the corpus is not vendored); here each is
# checked against an oracle of its own: a full network built from the reference's single steps must sort (numpy's
# sort), a constant 8x8 block's orthonormal DCT is 8 x the constant at DC and zero elsewhere (by hand).

def _ctx(output="d_DstKey", **values):
    from perfmodel.references import ReferenceContext

    arrays = {k: np.asarray(v) for k, v in values.items() if isinstance(v, (list, np.ndarray))}
    params = {k: v for k, v in values.items() if k not in arrays}
    return ReferenceContext(args=arrays, constants={}, params=params, output=output)


KEYS16 = [13, 2, 9, 15, 0, 7, 11, 4, 14, 1, 8, 6, 3, 12, 10, 5]


@pytest.mark.parametrize("network", ["bitonic", "odd_even"])
@pytest.mark.parametrize("direction", [1, 0])
def test_corpus_sorting_network_steps_compose_to_a_sort(network, direction):
    """sortingNetworks' host loop (bitonicSort / oddEvenMergeSort): for size = 2, 4, .. N, for stride = size / 2
    .. 1, one merge step; the whole network sorts the keys (dir 1 ascending, 0 descending) and moves the values
    with them. Oracle: numpy's sort of the same keys."""
    from perfmodel.references import corpus_bitonic_merge, corpus_odd_even_merge

    keys = np.array(KEYS16, np.int64)
    vals = 100 + np.arange(16)                    # value i belongs to the key at position i
    n = keys.size
    size = 2
    while size <= n:
        stride = size // 2
        while stride > 0:
            common = dict(d_SrcKey=keys, d_SrcVal=vals, arrayLength=n, size=size, stride=stride, dir=direction)
            if network == "bitonic":
                k = corpus_bitonic_merge(_ctx(**common), output="keys")
                v = corpus_bitonic_merge(_ctx(**common), output="vals")
            else:
                k = corpus_odd_even_merge(_ctx(**common), output="keys")
                v = corpus_odd_even_merge(_ctx(**common), output="vals")
            keys, vals = k, v
            stride //= 2
        size *= 2
    order = np.argsort(KEYS16, kind="stable")
    if not direction:
        order = order[::-1]
    assert keys.dtype == np.int64 and vals.dtype == np.int64
    assert keys.tolist() == np.asarray(KEYS16)[order].tolist()
    assert vals.tolist() == (100 + order).tolist()


def test_corpus_bitonic_merge_shared_steps_sort_a_bitonic_sequence():
    """bitonicMergeShared: with ``shared`` = 16 the strides 8, 4, 2, 1 of the last size's merge run in one call;
    on a bitonic sequence (ascending half, descending half) with size = length = 16 they sort it."""
    from perfmodel.references import corpus_bitonic_merge

    keys = np.r_[np.sort(KEYS16[:8]), np.sort(KEYS16[8:])[::-1]]
    vals = 100 + np.arange(16)
    ctx = _ctx(d_SrcKey=keys, d_SrcVal=vals, arrayLength=16, size=16, stride=1, dir=1)
    assert corpus_bitonic_merge(ctx, shared=16).tolist() == sorted(KEYS16)
    moved = corpus_bitonic_merge(ctx, shared=16, output="vals")
    assert (keys[moved - 100]).tolist() == sorted(KEYS16)


def test_corpus_dct_of_a_constant_block_is_8_times_it_at_dc():
    """Orthonormal 2D DCT-II of a constant c on 8 x 8: DC = (1/sqrt 8)^2 x 64 c = 8 c, every other coefficient 0;
    a 16 x 8 plane (two blocks) with row stride 18 keeps the two padding columns as they are."""
    from perfmodel.references import corpus_dct8x8

    plane = np.full((8, 18), -1.0)
    plane[:, :8] = 2.0
    plane[:, 8:16] = -0.5
    plane[:, 16:] = 77.0                            # the padding columns past the width
    out = corpus_dct8x8(_ctx(output="dst", src=plane.reshape(-1), width=16, height=8, stride=18)).reshape(8, 18)
    expected = np.zeros((8, 18))
    expected[0, 0], expected[0, 8] = 16.0, -4.0
    expected[:, 16:] = 77.0
    np.testing.assert_allclose(out, expected, atol=1e-12)
    back = corpus_dct8x8(_ctx(output="dst", src=out.reshape(-1), width=16, height=8, stride=18), inverse=True)
    np.testing.assert_allclose(back.reshape(8, 18), plane, atol=1e-12)


def test_corpus_quantize_short_by_hand():
    """dct8x8's short quantization: sign(c) x ((|c| + (Q >> 1)) / Q) x Q with C's truncating division. Q[0][0] = 32:
    c = 47 -> (47 + 16) / 32 = 1 -> 32; Q[1][0] = 33: c = -49 -> -((49 + 16) / 33) x 33 = -33; Q[0][1] = 33:
    c = 16 -> (16 + 16) / 33 = 0 (Q from cuda-samples' dct8x8_kernel_quantization.cuh, 1st column 32 33 51 81 ...)."""
    from perfmodel.references import corpus_quantize

    plane = np.zeros((8, 10), np.int64)
    plane[0, 0], plane[1, 0], plane[0, 1] = 47, -49, 16
    plane[0, 8:] = 5                                # padding columns kept
    out = corpus_quantize(_ctx(output="SrcDst", SrcDst=plane.reshape(-1), width=8, height=8, stride=10),
                          short=True).reshape(8, 10)
    assert out[0, 0] == 32 and out[1, 0] == -33 and out[0, 1] == 0
    assert out[0, 8:].tolist() == [5, 5]
    assert int(np.abs(out[:, :8]).sum()) == 65


def test_sampled_run_final_arrays_hold_the_simulated_blocks_outputs_and_the_rest_unchanged():
    """A sampled vec_add (N = 64 blocks x 256, 4 blocks simulated) returns its final arrays (what the API copies
    back into the caller's arrays): C holds A + B (numpy) wherever a simulated block wrote and its initial zeros
    everywhere else, as float32; the inputs come back as they went in; the scalar N is N."""
    from perfmodel.analysis import simulate_launch

    n = 64 * 256
    launch, sim = simulate_launch("vec_add", {"N": n}, sample=4, keep_args=True)
    assert sim.sampled and sim.blocks_simulated < 64
    final = dict(zip([a.name for a in launch.args], sim.final_args))
    a, b = (np.asarray(next(x.value for x in launch.args if x.name == name)) for name in ("A", "B"))
    c = np.asarray(final["C"])
    assert c.dtype == np.float32 and c.shape == (n,)
    wrote = c != 0
    assert 0 < int(wrote.sum()) < n and int(wrote.sum()) % 256 == 0
    np.testing.assert_allclose(c[wrote], (a + b)[wrote], rtol=1e-6)
    assert not c[~wrote].any()
    assert np.array_equal(np.asarray(final["A"]), a) and final["N"] == n


def test_sampled_run_reports_the_block_spread_like_the_exact_run():
    """Every vec_add block with N a multiple of the block runs the same instructions: the spread over the sampled
    blocks, like the exact run's over all of them, has min = max for every per-block metric."""
    from perfmodel.analysis import simulate_launch

    _, exact = simulate_launch("vec_add", {"N": 16 * 256}, sample=0)
    _, sampled = simulate_launch("vec_add", {"N": 64 * 256}, sample=4)
    assert sampled.sampled and sampled.spread
    assert set(sampled.spread) == set(exact.spread)
    for name, s in sampled.spread.items():
        assert s["min"] == s["max"] == exact.spread[name]["max"], name


def test_reference_registry_records_name_and_keyword_options():
    """``@reference(name)`` registers the function under its name with its keyword options, the parameters after
    the context (the spec loader refuses an option a reference does not have): vec_add(ctx, *, A, B) and
    matmul(ctx, *, M, N, Width) as written in perfmodel/references.py."""
    from perfmodel.references import get_reference

    assert get_reference("vec_add").name == "vec_add" and get_reference("vec_add").options == ("A", "B")
    assert get_reference("matmul").options == ("M", "N", "Width")


def test_byok_reference_from_a_module_beside_the_spec_and_a_missing_one(tmp_path):
    """``module:function`` imports the module from the spec's folder: a module there is found and its function
    used; a module that exists nowhere is a one-paragraph SpecError naming it."""
    from perfmodel.errors import SpecError
    from perfmodel.references import _import_callable

    (tmp_path / "my_ref_mod_18.py").write_text("def twice(x):\n    return 2 * x\n")
    assert _import_callable("my_ref_mod_18:twice", tmp_path)(21) == 42
    with pytest.raises(SpecError, match="cannot import module 'no_such_module_18'"):
        _import_callable("no_such_module_18:f", tmp_path)


def test_a_reference_file_imports_the_modules_beside_it(tmp_path):
    """XSBench's reference `xsref.py` does `from xslib import ...`, a module beside it: run from another folder,
    ModuleNotFoundError. The file's own folder is on sys.path while it imports, as Python runs a script."""
    from perfmodel.references import _import_callable

    lib = tmp_path / "refs"
    lib.mkdir()
    (lib / "helper_lib_19.py").write_text("def thrice(x):\n    return 3 * x\n")
    (lib / "ref19.py").write_text("from helper_lib_19 import thrice\n\ndef f(x):\n    return thrice(x)\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert _import_callable("../refs/ref19.py:f", elsewhere)(5) == 15


def test_npy_reference_errors_name_the_file(tmp_path):
    """Expected values from a .npy file: a missing file, a file that is not .npy and a non-numeric array are each a
    SpecError that names the file; a numeric array is returned as saved."""
    from perfmodel.errors import SpecError
    from perfmodel.references import load_npy, resolve_reference

    with pytest.raises(SpecError, match=r"no such \.npy file 'missing\.npy'"):
        resolve_reference("missing.npy", tmp_path)
    (tmp_path / "text.npy").write_text("not an array")
    with pytest.raises(SpecError, match=r"ref: cannot read .*text\.npy as a \.npy array"):
        load_npy(tmp_path / "text.npy", "ref")
    np.save(tmp_path / "words.npy", np.array(["a", "b"]))
    with pytest.raises(SpecError, match=r"words\.npy does not hold a numeric array \(dtype <U1\)"):
        load_npy(tmp_path / "words.npy", "ref")
    np.save(tmp_path / "ok.npy", np.arange(3, dtype=np.int16))
    got = load_npy(str(tmp_path / "ok.npy"), "ref")
    assert got.dtype == np.int16 and got.tolist() == [0, 1, 2]


def test_callable_reference_names_what_is_available_when_a_parameter_is_missing():
    """A user's reference that needs ``z`` when the launch has x and y (args) and n (a param): the SpecError
    names the missing parameter and lists what there is, comma-separated."""
    from perfmodel.errors import SpecError
    from perfmodel.references import ReferenceContext, callable_reference

    def ref(x, z):
        return x

    ctx = ReferenceContext(args={"x": np.zeros(2), "y": np.ones(2)}, constants={}, params={"n": 2}, output="x")
    with pytest.raises(SpecError, match=r"needs 'z', .*\(available: n, x, y\)"):
        callable_reference(ref, "mine.py:ref").function(ctx)


# ---- third pass (2026-11-24): survivors of a fresh sample (seed 24) ----

def test_a_reference_reads_a_launch_scalar_as_a_python_number():
    # an int32 scalar argument of 70,000: a reference multiplying two of them (a matrix's element count) must get
    # 4.9e9, which int32 arithmetic would wrap to 605,032,704
    from perfmodel.references import ReferenceContext

    ctx = ReferenceContext(args={"n": np.int32(70_000)}, constants={}, params={"s": np.float32(0.5)}, output="y")
    n = ctx.number("n")
    assert type(n) is int and n * n == 4_900_000_000
    assert type(ctx.number("s")) is float and ctx.number(3) == 3


def test_sampled_idle_figures_name_the_grid_size(pattern):
    sampled = analyze(pattern, "h100", sample=24).to_json()
    assert sampled["idle"]["blocks"] == 64 and sampled["idle"]["extrapolated"] is True


INT_CU = """
__global__ void Triple(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 3 * in[i];
}
"""


def test_a_sampled_run_checks_integer_outputs(tmp_path):
    # integer outputs are merged stratum by stratum like float ones (no NaN to mask in them) and checked against
    # the reference: out = 3 x in; a wrong reference (4 x in) fails the same check
    (tmp_path / "triple.cu").write_text(INT_CU)
    (tmp_path / "refs.py").write_text("import numpy as np\n"
                                      "def triple(inp):\n    return 3 * np.asarray(inp, np.int64)\n"
                                      "def quadruple(inp):\n    return 4 * np.asarray(inp, np.int64)\n")
    for ref, ok in (("triple", True), ("quadruple", False)):
        spec = (f"name: triple_{ref}\nsource: triple.cu\nentry: Triple\nparams:\n  N: {{default: 16384}}\n"
                "grid: ['cdiv(N, 256)']\nblock: [256]\nargs:\n"
                "  - {name: inp, dtype: int32, length: N, init: arange}\n"
                "  - {name: out, dtype: int32, length: N, init: zeros}\n"
                "  - {name: n, dtype: int32, value: N}\n"
                f"outputs:\n  - {{arg: out, reference: 'refs.py:{ref}', rtol: 0, atol: 0}}\n")
        (tmp_path / f"triple_{ref}.yaml").write_text(spec)
        a = analyze(str(tmp_path / f"triple_{ref}.yaml"), "h100", sample=4)
        assert a.sim.sampled and a.sim.blocks_simulated < 64
        assert a.sim.correct is ok, a.sim.correct_detail
        # the H100's model reads no CC 1.x transaction counts: a sampled run leaves them out, as an exact one does
        assert not any(k.startswith(("cc10_", "cc12_")) for k in a.sim.counts["global"])
    g80 = analyze(str(tmp_path / "triple_triple.yaml"), "g80", sample=4)
    assert g80.sim.sampled and g80.sim.counts["global"]["cc10_load_transactions"] > 0


def test_corpus_stereo_disparity_is_the_samples_cpu_gold():
    """The vectorised reference against a line-by-line port of the sample's cpu_gold_stereo (clamped window, four
    byte channels, first least-cost disparity, stored as an unsigned d + 8) on a small random pair."""
    from perfmodel.references import corpus_stereo_disparity

    rng = np.random.default_rng(4)
    w, h, lo, hi, rad = 12, 7, -4, 0, 2
    left = rng.integers(0, 2 ** 32, w * h, dtype=np.uint64).astype(np.uint32)
    right = rng.integers(0, 2 ** 32, w * h, dtype=np.uint64).astype(np.uint32)
    got = corpus_stereo_disparity(_ctx("g_odata", g_img0=left, g_img1=right, w=w, h=h, minDisparity=lo,
                                       maxDisparity=hi), radius=rad)
    a = left.reshape(h, w).view(np.uint8).reshape(h, w, 4).astype(int)
    b = right.reshape(h, w).view(np.uint8).reshape(h, w, 4).astype(int)
    gold = []
    for y in range(h):
        for x in range(w):
            best_cost, best = 9999999, 0
            for d in range(lo, hi + 1):
                cost = 0
                for i in range(-rad, rad + 1):
                    for j in range(-rad, rad + 1):
                        yy = min(max(y + i, 0), h - 1)
                        xx, xxd = min(max(x + j, 0), w - 1), min(max(x + j + d, 0), w - 1)
                        cost += int(np.abs(a[yy, xx] - b[yy, xxd]).sum())
                if cost < best_cost:
                    best_cost, best = cost, d + 8
            gold.append(best % 2 ** 32)
    assert got.tolist() == gold
    assert min(gold) >= 4 and max(gold) <= 8
