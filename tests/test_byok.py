"""Bring your own kernel (issue 12): `perfmodel analyze FILE.cu ...` with no YAML, the CuPy-shaped Python API,
and correctness that means something (no reference: not checked; a wrong answer fails `perfmodel check`).

Every output is checked against numpy computed here (or in tests/data/byok/refs.py), never against perfmodel."""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DATA = Path(__file__).resolve().parent / "data" / "byok"
MATRIXMUL = Path(__file__).resolve().parent.parent / "validation" / "kernels" / "cuda-samples" / "Samples" / "0_Introduction" / "matrixMul" / "matrixMul.cu"

SAXPY = [str(EXAMPLES / "saxpy.cu"), "--kernel", "saxpy", "--grid", "cdiv(n,128)", "--block", "128",
         "-D", "n=1000", "--arg", "a=2.0", "--arg", "x=float32[n]:random", "--arg", "y=float32[n]:arange",
         "--device", "h100"]


def analyze_json(cli, *args):
    code, out, err = cli("analyze", *args, "--json")
    assert code == 0, (out, err)
    return json.loads(out)


# ---- perfmodel.analyze stays callable ------------------------------------------------------------------------

def test_analyze_callable_every_time():
    import perfmodel
    import perfmodel.analysis  # importing the module the function lives in must not shadow the function

    first = perfmodel.analyze("vec_add", "h100", {"N": 256})
    second = perfmodel.analyze("vec_add", "h100", {"N": 256})
    assert callable(perfmodel.analyze) and perfmodel.analyze is perfmodel.analysis.analyze
    assert first.predicted_time_s == second.predicted_time_s and second.correct is True


# ---- the command line, one command per kernel, files unchanged -----------------------------------------------

def test_saxpy_cli_not_checked_without_reference(cli):
    doc = analyze_json(cli, *SAXPY)
    assert doc["kernel"] == "saxpy" and doc["launch"]["grid"] == [8, 1, 1]
    assert doc["correct"] is None and doc["checked_outputs"] == [] and "not checked" in doc["correct_detail"]
    # 1000 threads do one FMA each (a*x + y): 2 flops per element, hand-counted
    assert doc["counts"]["flops"] == 2000
    code, out, _ = cli("analyze", *SAXPY)
    assert code == 0 and "not checked" in out and "✓" not in out


def test_saxpy_cli_checked_by_python_reference(cli):
    doc = analyze_json(cli, *SAXPY, "--check", f"y={DATA / 'refs.py'}:saxpy")
    assert doc["correct"] is True and doc["checked_outputs"] == ["y"]


def test_wrong_kernel_is_reported_wrong_with_exit_0(cli):
    wrong = [str(DATA / "saxpy_wrong.cu")] + SAXPY[1:]
    code, out, _ = cli("analyze", *wrong, "--check", f"y={DATA / 'refs.py'}:saxpy")
    assert code == 0 and "✗" in out and "WRONG" in out
    doc = analyze_json(cli, *wrong, "--check", f"y={DATA / 'refs.py'}:saxpy")
    assert doc["correct"] is False


def test_npy_reference_and_file_initialiser(cli, tmp_path):
    rng = np.random.default_rng(5)
    x = rng.random(1000).astype(np.float32)
    y = rng.random(1000).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "expected.npy", 3.0 * x.astype(np.float64) + y)
    args = SAXPY[:9] + ["--arg", "a=3", "--arg", f"x=float32[n]:file={tmp_path / 'x.npy'}",
                         "--arg", f"y=float32[n]:file={tmp_path / 'y.npy'}", "--device", "h100"]
    assert analyze_json(cli, *args, "--check", f"y={tmp_path / 'expected.npy'}")["correct"] is True
    np.save(tmp_path / "expected.npy", 3.0 * x.astype(np.float64) - y)
    assert analyze_json(cli, *args, "--check", f"y={tmp_path / 'expected.npy'}")["correct"] is False


def test_stencil_reduction_matrixmul_vec4_cli(cli):
    refs = f"{EXAMPLES / 'references.py'}"
    stencil = analyze_json(cli, str(EXAMPLES / "stencil2d.cu"), "--kernel", "stencil5", "--grid",
                           "cdiv(nx,16),cdiv(ny,16)", "--block", "16,16", "-D", "nx=40", "-D", "ny=24",
                           "--arg", "in=float32[nx*ny]:random", "--arg", "out=float32[nx*ny]",
                           "--check", f"out={refs}:stencil5", "--device", "h100")
    assert stencil["correct"] is True and stencil["launch"]["grid"] == [3, 2, 1]
    assert stencil["counts"]["shared"]["loads"] > 0      # the tile is read from shared memory
    reduce = analyze_json(cli, str(EXAMPLES / "reduce_shfl.cu"), "--kernel", "reduce_sum", "--grid", "4",
                          "--block", "128", "-D", "n=5000", "--arg", "in=float32[n]:random(0,1)",
                          "--arg", "out=float32[1]", "--check", f"out={refs}:reduce_sum", "--rtol", "1e-4",
                          "--device", "h100")
    assert reduce["correct"] is True
    matmul = analyze_json(cli, str(MATRIXMUL), "--kernel", "MatrixMulCUDA<32>", "--grid", "wB/32,hA/32",
                          "--block", "32,32", "-D", "wA=64", "-D", "hA=64", "-D", "wB=96",
                          "--arg", "C=float32[hA*wB]", "--arg", "A=float32[hA*wA]:random",
                          "--arg", "B=float32[wA*wB]:random", "--arg", "wA=wA", "--arg", "wB=wB",
                          "--check", f"C={refs}:matmul", "--rtol", "1e-4", "--atol", "1e-4", "--device", "h100")
    assert matmul["correct"] is True and matmul["kernel"] == "MatrixMulCUDA<32>"
    assert matmul["launch"]["grid"] == [3, 2, 1] and matmul["launch"]["block"] == [32, 32, 1]
    assert matmul["counts"]["flops"] == 2 * 64 * 64 * 96          # one FMA per (i, j, k)
    vec4 = analyze_json(cli, str(EXAMPLES / "vec4_scale.cu"), "--kernel", "scale_vec4<float, 2>",
                        "--grid", "cdiv(n/4, 2*64)", "--block", "64", "-D", "n=2048",
                        "--arg", "in=float32[n]:random", "--arg", "out=float32[n]", "--arg", "alpha=3.0",
                        "--arg", "3=n/4", "--check", f"out={refs}:scale_vec4", "--device", "h100")
    assert vec4["correct"] is True
    g = vec4["counts"]["global"]
    # 512 float4 loads of 16 bytes: 8,192 bytes = 256 sectors of 32 bytes, 16 warp requests of 32 lanes
    assert g["load_requests"] == 16 and g["load_sectors"] == 256


def test_save_spec_round_trip(cli, tmp_path):
    out = tmp_path / "kept.yaml"
    code, _, err = cli("analyze", *SAXPY, "--check", f"y={DATA / 'refs.py'}:saxpy", "--save-spec", str(out))
    assert code == 0, err
    kept = analyze_json(cli, str(out), "--device", "h100")
    assert kept["correct"] is True and kept["counts"]["flops"] == 2000


# ---- bad input: one paragraph, exit 2, a JSON error document -------------------------------------------------

@pytest.mark.parametrize("change, needle", [
    (["--arg", "z=1"], "no parameter named 'z'"),
    ("drop-x", "'x' (const float*, a pointer"),
    (["--arg", "x=float33[n]"], "unknown dtype 'float33'"),
    (["--arg", "x=float32[n]:values=(1, 2, 3)"], "values=(...) gives 3 numbers for an array of 1,000 elements"),
    (["--arg", "x=float32[n-2000]"], "expected an integer >= 0, got -1000"),
    (["--arg", "x=float32[n/3]"], "expected an integer, got 333.3"),
    (["--arg", "x=float32[m]"], "unknown name(s) m"),
    (["--grid", "cdiv(q,128)"], "unknown name(s) q"),
    (["--arg", "x=2.0"], "is a pointer (const float*)"),
    (["--arg", "x=int32[n]"], "its elements are float32, not int32"),
    (["--check", "y=not_here.npy"], "--check 'y=not_here.npy': no such file 'not_here.npy'"),
])
def test_bad_arguments(cli, change, needle):
    args = list(SAXPY)
    i = args.index("x=float32[n]:random")
    if change == "drop-x":
        del args[i - 1:i + 1]
    elif change[0] == "--grid":
        args[args.index("--grid") + 1] = change[1]
    elif change[1].startswith("x="):
        args[i] = change[1]
    else:
        args += change
    code, out, err = cli("analyze", *args)
    assert code == 2 and needle in err and "Traceback" not in err, err
    assert err.count("error:") == 1
    code, out, _ = cli("analyze", *args, "--json")
    document = json.loads(out)
    assert code == 2 and needle in document["error"]["message"] and document["error"]["kind"] in ("usage", "spec")


def test_template_that_does_not_instantiate(cli):
    code, out, _ = cli("analyze", str(EXAMPLES / "vec4_scale.cu"), "--kernel", "scale_vec4<float>", "--grid", "1",
                       "--block", "32", "--device", "h100", "--json")
    assert code == 2
    error = json.loads(out)["error"]
    assert error["kind"] == "compile" and "scale_vec4<float>" in error["message"]


def test_spec_rejects_cuda_only_options(cli):
    code, _, err = cli("analyze", "vec_add", "--device", "h100", "--grid", "4")
    assert code == 2 and "--grid" in err and "only for a CUDA file" in err


# ---- perfmodel check: a wrong answer always fails; an unchecked kernel cannot promise correctness ---------------

def test_check_fails_a_wrong_kernel(cli):
    code, out, err = cli("check", str(DATA / "budget_wrong.yaml"), "--no-baseline", "--json")
    assert code == 1, (out, err)
    cases = {c["entry"]: c for c in json.loads(out)["cases"]}
    assert cases["saxpy_right.yaml"]["passed"] is True
    wrong = cases["saxpy_wrong.yaml"]
    assert wrong["passed"] is False
    assert any(c["metric"] == "correct" and c["status"] == "fail" for c in wrong["checks"])


def test_check_correct_threshold_on_unchecked_kernel_is_invalid(cli):
    code, out, err = cli("check", str(DATA / "budget_unchecked.yaml"), "--no-baseline")
    assert code == 2 and "not checked" in err
    code, out, err = cli("check", str(DATA / "budget_unchecked_ok.yaml"), "--no-baseline", "--json")
    assert code == 0, err
    assert "correct" not in json.loads(out)["cases"][0]["metrics"]


def test_unchecked_spec_reported_not_checked(cli):
    doc = analyze_json(cli, str(DATA / "saxpy_unchecked.yaml"), "--device", "h100")
    assert doc["correct"] is None and "not checked" in doc["correct_detail"]
    code, out, _ = cli("analyze", str(DATA / "saxpy_unchecked.yaml"), "--device", "h100")
    assert "not checked" in out and "✓" not in out


# ---- the Python API ----------------------------------------------------------------------------------------

def test_notebook_script_runs_the_five_kernels():
    spec = importlib.util.spec_from_file_location("notebook_api", EXAMPLES / "notebook_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.run(MATRIXMUL, small=True)       # asserts every output with numpy
    assert [r.kernel for r in results] == ["saxpy", "saxpy", "stencil5", "reduce_sum", "MatrixMulCUDA<32>",
                                           "scale_vec4<float, 2>"]
    assert [r.device.id for r in results[:2]] == ["h100", "a100"]


def test_raw_kernel_results(cli):
    import perfmodel

    kernel = perfmodel.RawKernel((EXAMPLES / "saxpy.cu").read_text(), "saxpy")
    rng = np.random.default_rng(3)
    x = rng.random(1000).astype(np.float32)
    y = np.arange(1000, dtype=np.float32)
    y0 = y.copy()
    result = kernel((8,), (128,), (1000, np.float32(2.0), x, y), device="h100")
    np.testing.assert_allclose(y, 2 * x + y0, rtol=1e-6)
    assert result.correct is None
    document = result.to_dict()
    cli_doc = analyze_json(cli, *SAXPY)
    assert set(document) == set(cli_doc)                  # the same keys as analyze --json
    assert document["counts"]["flops"] == cli_doc["counts"]["flops"] == 2000
    row = result.to_rows()[0]
    assert row["kernel"] == "saxpy" and row["predicted_time_s"] == document["predicted_time_s"]
    assert "<pre" in result._repr_html_() and "saxpy" in result._repr_html_()
    # a wrong expectation is reported wrong, a right one right
    assert kernel((8,), (128,), (1000, 1.0, x, y.copy()), expected={"y": y + x + 1}).correct is False
    assert kernel((8,), (128,), (1000, 1.0, x, y.copy()), expected={"y": y + x}).correct is True
    assert kernel((8,), (128,), (1000, 1.0, x, y.copy()),
                  reference=lambda a, x, y: a * x + y).correct is True


def test_raw_kernel_bad_arguments():
    import perfmodel
    from perfmodel.errors import PerfmodelError

    kernel = perfmodel.RawKernel((EXAMPLES / "saxpy.cu").read_text(), "saxpy")
    x = np.zeros(16, np.float32)
    with pytest.raises(PerfmodelError, match="takes 4 arguments"):
        kernel((1,), (16,), (16, 1.0, x))
    with pytest.raises(PerfmodelError, match="its elements are float32, the array holds float64"):
        kernel((1,), (16,), (16, 1.0, x, np.zeros(16)))
    with pytest.raises(PerfmodelError, match="a pointer takes a numpy array"):
        kernel((1,), (16,), (16, 1.0, x, 3.0))
    with pytest.raises(PerfmodelError, match="not supported"):
        perfmodel.RawKernel("__global__ void k() {}", "k", options=("--use_fast_math",))


# ---- scaffolding and the schema ----------------------------------------------------------------------------

def test_kernels_init_writes_a_spec_that_runs(cli, tmp_path):
    out = tmp_path / "saxpy.yaml"
    code, _, err = cli("kernels", "init", str(EXAMPLES / "saxpy.cu"), "--kernel", "saxpy", "-o", str(out))
    assert code == 0, err
    from perfmodel.spec import load_spec

    spec = load_spec(out)
    assert [(a.name, a.dtype, a.kind) for a in spec.model.args] == [
        ("n", "int32", "scalar"), ("a", "float32", "scalar"), ("x", "float32", "array"), ("y", "float32", "array")]
    doc = analyze_json(cli, str(out), "--device", "h100", "-D", "N=512")
    assert doc["correct"] is None and doc["launch"]["total_blocks"] == 2


def test_kernels_init_leaves_the_files_own_macros_alone(cli, tmp_path):
    """darknet's `#define BLOCK 512` sizes shared arrays and loops; the starter spec's block-size param was also
    named BLOCK, and a param the source's preprocessor names goes to the compiler: the kernel analysed had
    BLOCK = 256 (1,024 bytes of shared memory, not 2,048), saying nothing. The params take other names there."""
    (tmp_path / "b.cu").write_text(
        "#define BLOCK 512\n#define N 3\n__global__ void block_sum(const float *x, int n, float *out)\n{\n"
        "    __shared__ float part[BLOCK];\n    float s = 0;\n"
        "    for (int i = threadIdx.x; i < n; i += BLOCK) s += x[blockIdx.x * n + i] * N;\n"
        "    part[threadIdx.x] = s;\n    __syncthreads();\n"
        "    if (threadIdx.x == 0) { float t = 0; for (int i = 0; i < BLOCK; ++i) t += part[i]; "
        "out[blockIdx.x] = t; }\n}\n")
    out = tmp_path / "b.yaml"
    code, _, err = cli("kernels", "init", str(tmp_path / "b.cu"), "-o", str(out))
    assert code == 0, err
    text = out.read_text()
    assert 'grid: ["cdiv(NELEMS, THREADS)"]' in text and "block: [THREADS]" in text
    assert "THREADS: {default: 512, help: threads per block (the file's BLOCK)}" in text
    assert "{name: n, dtype: int32, value: NELEMS}" in text
    out.write_text(text.replace("value: NELEMS}", "value: 512}").replace('grid: ["cdiv(NELEMS, THREADS)"]',
                                                                           "grid: [2]").replace("[THREADS]", "[512]"))
    doc = analyze_json(cli, str(out), "--device", "h100", "-D", "NELEMS=1024")
    assert "BLOCK" not in doc["launch"].get("defines", {}), doc["launch"]
    assert doc["compile"]["shared_bytes"] == 2048, doc["compile"]     # part[BLOCK]: 512 floats


def test_enumerators_name_enum_arguments(cli, tmp_path):
    """darknet's activate_array_kernel takes an `ACTIVATION a` (`typedef enum { LOGISTIC, RELU, ... } ACTIVATION;`):
    `--arg a=LEAKY` was "unknown name LEAKY", only the number worked. The file's enumerators are known by value:
    LEAKY is the 8th (7); EXACT follows SLOW = FAST * 2 = 8 (9). By hand: x = 7 * 100 + 9."""
    (tmp_path / "e.cu").write_text(
        "typedef enum{ LOGISTIC, RELU, RELIE, LINEAR, RAMP, TANH, PLSE, LEAKY, ELU } ACTIVATION;\n"   # darknet's
        "enum Mode { FAST = 4, SLOW = FAST * 2, EXACT /* 9 */ };\n"
        "__global__ void act(float *x, int n, ACTIVATION a, Mode m)\n{\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] = (float)a * 100 + (float)m;\n}\n")
    (tmp_path / "r.py").write_text("import numpy as np\ndef ref(x, n, a, m):\n"
                                   "    return np.full(32, 709.0) if (a, m) == (7, 9) else np.zeros(32)\n")
    doc = analyze_json(cli, str(tmp_path / "e.cu"), "--grid", "1", "--block", "32", "--arg", "x=float32[32]",
                       "--arg", "n=32", "--arg", "a=LEAKY", "--arg", "m=EXACT", "--device", "h100",
                       "--check", f"x={tmp_path / 'r.py'}:ref")
    assert doc["correct"] is True, doc
    code, out, err = cli("analyze", str(tmp_path / "e.cu"), "--grid", "1", "--block", "32", "--arg", "x=float32[32]",
                         "--arg", "n=32", "--arg", "a=LEKY", "--arg", "m=1", "--device", "h100")
    assert code == 2 and "unknown name(s) LEKY" in err, err


def test_schema_is_current_and_accepts_every_shipped_spec():
    jsonschema = pytest.importorskip("jsonschema")
    import yaml

    from perfmodel.spec_schema import spec_json_schema

    schema = spec_json_schema()
    assert json.loads((ROOT / "docs" / "spec.schema.json").read_text()) == schema
    validator = jsonschema.Draft202012Validator(schema)
    files = sorted(ROOT.glob("kernels_spec/*.yaml")) + sorted(ROOT.glob("bench/corpus_specs/*.yaml")) + \
        sorted(DATA.glob("saxpy_*.yaml"))
    assert len(files) > 20
    for path in files:
        assert not list(validator.iter_errors(yaml.safe_load(path.read_text()))), path
    bad = yaml.safe_load((DATA / "saxpy_unchecked.yaml").read_text())
    bad["args"][2]["init"] = "randm"
    assert list(validator.iter_errors(bad))
    assert "description" not in schema["required"]


def test_include_dir_and_define_reaching_the_compiler(cli):
    doc = analyze_json(cli, str(DATA / "include_user.cu"), "--grid", "2", "--block", "64", "-I", str(DATA / "inc"),
                       "-D", "n=100", "--arg", "in=float32[n]:arange", "--arg", "out=float32[n]",
                       "--check", f"out={DATA / 'refs.py'}:double_it", "--device", "h100")
    assert doc["correct"] is True and doc["kernel"] == "double_it"
    # -D TILE=8 rebuilds the stencil (#ifndef TILE): its tile is (8 + 2)^2 floats = 400 bytes of shared memory
    doc = analyze_json(cli, str(EXAMPLES / "stencil2d.cu"), "--grid", "cdiv(nx,TILE),cdiv(ny,TILE)", "--block",
                       "TILE,TILE", "-D", "TILE=8", "-D", "nx=20", "-D", "ny=12", "--arg", "in=float32[nx*ny]:random",
                       "--arg", "out=float32[nx*ny]", "--check", f"out={EXAMPLES / 'references.py'}:stencil5",
                       "--device", "h100")
    assert doc["correct"] is True and doc["launch"]["static_shared_bytes"] == 400
    assert doc["launch"]["defines"] == {"TILE": 8}


def test_analysis_renders_with_rich():
    import io

    from rich.console import Console

    import perfmodel

    result = perfmodel.analyze("vec_add", "h100", {"N": 256})
    console = Console(file=io.StringIO(), width=120)
    console.print(result)
    text = console.file.getvalue()
    assert "vec_add on H100" in text and "✓" in text


def test_a_kernel_in_an_included_header_that_the_file_never_names(cli, tmp_path):
    """HeCBench's atomicReduction: kernels.h holds five kernels and reduction.cu launches four of them through a
    macro, so their names never appear in reduction.cu followed by '('. They are analysed all the same; a name
    that is nowhere is an error listing the kernels there are."""
    (tmp_path / "kernels.h").write_text(
        "__global__ void scale2(int *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
        " if (i < n) x[i] *= 2; }\n")
    (tmp_path / "main.cu").write_text(
        '#include "kernels.h"\n#define RUN(k, g) k<<<g, 64>>>(d, n)\n'
        "int main() { int *d = 0; int n = 100; RUN(scale2, 2); return 0; }\n")
    args = [str(tmp_path / "main.cu"), "--grid", "2", "--block", "64", "--arg", "x=int32[100]:arange",
            "--arg", "n=100", "--device", "h100"]
    doc = analyze_json(cli, "--kernel", "scale2", *args)
    g = doc["counts"]["global"]
    assert g["loads"] == 100 and g["stores"] == 100        # the 100 threads of 128 with i < n, one of each
    code, out, _ = cli("analyze", "--kernel", "scale3", *args, "--json")
    assert code == 2
    message = json.loads(out)["error"]["message"]
    assert "no __global__ function 'scale3'" in message and "kernels found: scale2" in message


def test_parameters_named_like_python_keywords(cli, tmp_path):
    (tmp_path / "kw.cu").write_text(
        "__global__ void k(const float *in, float *out, float lambda, int from)\n"
        "{ int i = threadIdx.x; if (i >= from) out[i] = lambda * in[i]; }\n")
    x = np.arange(64, dtype=np.float32)
    np.save(tmp_path / "ref.npy", np.where(np.arange(64) >= 8, 0.5 * x, 0).astype(np.float32))
    doc = analyze_json(cli, str(tmp_path / "kw.cu"), "--kernel", "k", "--grid", "1", "--block", "64",
                       "--arg", "in=float32[64]:arange", "--arg", "out=float32[64]", "--arg", "lambda=0.5",
                       "--arg", "from=8", "--check", f"out={tmp_path / 'ref.npy'}", "--device", "h100")
    assert doc["correct"] is True


def test_a_latin1_source_is_read_as_the_compiler_reads_it(cli, tmp_path):
    """HeCBench's eigenvalue: `Copyright (c) 2010` with the sign in ISO 8859-1 (byte A9), not UTF-8."""
    src = "// Copyright \u00a9 2010\n__global__ void k(float *x) { x[threadIdx.x] += 1.0f; }\n".encode("latin-1")
    (tmp_path / "old.cu").write_bytes(src)
    doc = analyze_json(cli, str(tmp_path / "old.cu"), "--kernel", "k", "--grid", "1", "--block", "32",
                       "--arg", "x=float32[32]", "--device", "h100")
    assert doc["counts"]["global"]["stores"] == 32
    # a spec (YAML) is still refused when it is not UTF-8
    (tmp_path / "k.yaml").write_bytes("entry: k  # \u00a9\n".encode("latin-1"))
    code, out, _ = cli("analyze", str(tmp_path / "k.yaml"), "--device", "h100", "--json")
    assert code == 2 and "not valid UTF-8" in json.loads(out)["error"]["message"]


def test_an_argument_named_like_a_macro_of_the_file_is_no_define(cli, tmp_path):
    """HeCBench's ecdh: the kernel in ecdh.h has a parameter P_x, and main.cu says `#define P_x 5` after including
    it. `--arg P_x=...` is the kernel's argument; passing it to the compile as -D P_x broke the header."""
    (tmp_path / "k.h").write_text("__global__ void scale(float *x, int K) { x[threadIdx.x] *= K; }\n")
    (tmp_path / "main.cu").write_text('#include "k.h"\n#define K 3\nint main() { return K; }\n')
    np.save(tmp_path / "ref.npy", 2 * np.arange(32, dtype=np.float32))
    doc = analyze_json(cli, str(tmp_path / "main.cu"), "--kernel", "scale", "--grid", "1", "--block", "32",
                       "--arg", "x=float32[32]:arange", "--arg", "K=2", "--check", f"x={tmp_path / 'ref.npy'}",
                       "--device", "h100")
    assert doc["correct"] is True


BF16_KERNEL = """\
#include <cuda_bf16.h>
#if defined(ENABLE_FP32)
typedef float floatX;
#else
typedef __nv_bfloat16 floatX;          // llm.c's default
#endif
__global__ void axpb(floatX *out, const floatX *inp, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (floatX)(a * (float)inp[i] + 1.0f);
}
"""


def test_bfloat16_arrays_from_the_command_line_and_the_api(cli, tmp_path):
    """__nv_bfloat16 arrays (llm.c's floatX): numpy's bfloat16 from ml_dtypes holds the same 16 bits. The
    reference rounds the float32 result to bfloat16 with ml_dtypes (round to nearest even, as __float2bfloat16
    does), so the outputs must be equal, bit for bit."""
    import ml_dtypes

    import perfmodel

    path = tmp_path / "bf16.cu"
    path.write_text(BF16_KERNEL)
    x = np.random.default_rng(4).uniform(-3, 3, 1000).astype(ml_dtypes.bfloat16)
    np.save(tmp_path / "x.npy", x.astype(np.float32))
    expected = (np.float32(1.5) * x.astype(np.float32) + np.float32(1)).astype(ml_dtypes.bfloat16)
    np.save(tmp_path / "ref.npy", expected.astype(np.float32))
    args = [str(path), "--kernel", "axpb", "--grid", "cdiv(n,256)", "--block", "256", "-D", "n=1000",
            "--arg", "out=bfloat16[n]", "--arg", f"inp=bfloat16[n]:file={tmp_path / 'x.npy'}", "--arg", "a=1.5",
            "--arg", "n=n", "--device", "h100"]
    doc = analyze_json(cli, *args, "--check", f"out={tmp_path / 'ref.npy'}", "--rtol", "0", "--atol", "0")
    assert doc["correct"] is True
    # 2-byte elements: 1,000 loads of 2,000 bytes
    assert doc["counts"]["global"]["loads"] == 1000 and doc["counts"]["global"]["load_bytes"] == 2000
    # the Python API, with the arrays themselves
    out = np.zeros(1000, ml_dtypes.bfloat16)
    kernel = perfmodel.RawModule(path=str(path)).get_function("axpb")
    kernel((4,), (256,), (out, x, np.float32(1.5), np.int32(1000)), device="h100")
    assert np.array_equal(out.view(np.uint16), expected.view(np.uint16))
    # a reference in float64 fails at float32's default tolerance, and the message says why
    np.save(tmp_path / "exact.npy", 1.5 * x.astype(np.float64) + 1)
    doc = analyze_json(cli, *args, "--check", f"out={tmp_path / 'exact.npy'}")
    assert doc["correct"] is False and "bfloat16, whose rounding alone" in doc["correct_detail"]


def test_a_kernel_that_prints_says_that_printf_is_not_run(cli, tmp_path):
    """printf is not executed (a line per thread) and not modelled: the report says so, with the number of calls
    in the kernel's code (it was dropped silently); a kernel without printf has no such note."""
    src = tmp_path / "hello.cu"
    src.write_text('#include <cstdio>\n__global__ void hello(int *x) {\n    x[threadIdx.x] = threadIdx.x;\n'
                   '    if (threadIdx.x == 0) printf("block %d\\n", blockIdx.x);\n    printf("bye\\n");\n}\n')
    args = ("analyze", str(src), "--grid", "2", "--block", "32", "--arg", "x=int32[32]", "--device", "h100")
    code, out, err = cli(*args)
    assert code == 0, err
    assert "note: the kernel's printf (2 calls in its code) prints nothing here" in " ".join(out.split())
    assert json.loads(cli(*args, "--json")[1])["compile"]["printf_calls"] == 2
    src.write_text("__global__ void hello(int *x) { x[threadIdx.x] = threadIdx.x; }\n")
    code, out, err = cli(*args)
    assert code == 0 and "printf" not in out


def test_a_define_that_only_an_included_header_tests_reaches_the_compiler(cli, tmp_path):
    """HeCBench's md tests SINGLE_PRECISION in its MD.h only: -D SINGLE_PRECISION=1 was not passed to NVRTC (only
    the file's own preprocessor lines were read) and the double build ran, silently. The local headers the file
    includes (beside it or in -I folders, transitively) count as the source too."""
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "deep.h").write_text("#ifdef USE_F\n#define VAL 2.0f\n#else\n#define VAL 1.0f\n#endif\n")
    (tmp_path / "hdr.h").write_text('#include "deep.h"\n')
    (tmp_path / "k.cu").write_text('#include "hdr.h"\n__global__ void k(float *o) { o[threadIdx.x] = VAL; }\n')
    (tmp_path / "refs.py").write_text("import numpy as np\ndef twos(o, **kw):\n    return np.full(o.size, 2.0)\n")
    doc = analyze_json(cli, str(tmp_path / "k.cu"), "--grid", "1", "--block", "32", "-I", str(tmp_path / "inc"),
                       "-D", "USE_F=1", "--arg", "o=float32[32]", "--check", f"o={tmp_path / 'refs.py'}:twos",
                       "--device", "h100")
    assert doc["correct"] is True and doc["launch"]["defines"] == {"USE_F": 1}
    # and through #include <...> found in an -I folder (Parboil's <parboil.h>): it was not followed, so the -D
    # was dropped and the header's #error stopped the compile
    (tmp_path / "inc" / "angle.h").write_text('#if FOO >= 5\n#define VAL2 3.0f\n#else\n#error "FOO too small"\n#endif\n')
    (tmp_path / "a.cu").write_text("#include <angle.h>\n__global__ void k(float *o) { o[threadIdx.x] = VAL2; }\n")
    doc = analyze_json(cli, str(tmp_path / "a.cu"), "--grid", "1", "--block", "32", "-I", str(tmp_path / "inc"),
                       "-D", "FOO=7", "--arg", "o=float32[32]", "--device", "h100")
    assert doc["launch"]["defines"] == {"FOO": 7}


def test_a_kernel_in_a_header_is_analysed_as_a_cuda_file(cli, tmp_path):
    """Kernels also live in .h / .hpp files (cuda-samples' interval keeps them in cuda_interval.h): analyze takes
    such a file as CUDA source, as `kernels inspect` does (it was taken for a spec that "sets its own launch")."""
    (tmp_path / "kern.h").write_text("__global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }\n")
    doc = analyze_json(cli, str(tmp_path / "kern.h"), "--grid", "1", "--block", "32", "--arg", "x=float32[32]:ones",
                       "--device", "h100")
    assert doc["kernel"] == "twice" and doc["counts"]["global"]["stores"] == 32


def test_a_reference_that_prints_leaves_json_one_document(cli, tmp_path):
    """A user's reference function may print (debugging); under --json stdout stays exactly one JSON document:
    the print goes to stderr."""
    (tmp_path / "refs.py").write_text("import numpy as np\ndef ones(x, **kw):\n    print('computing')\n"
                                      "    return np.full(x.size, 2.0)\n")
    (tmp_path / "kern.cu").write_text("__global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }\n")
    code, out, err = cli("analyze", str(tmp_path / "kern.cu"), "--grid", "1", "--block", "32", "--arg",
                         "x=float32[32]:ones", "--check", f"x={tmp_path / 'refs.py'}:ones", "--device", "h100",
                         "--json")
    assert code == 0 and json.loads(out)["correct"] is True and "computing" in err


def test_hot_lines_of_a_kernel_in_an_included_header_quote_the_header(cli, tmp_path):
    """A kernel defined in a header the .cu file includes: its per-line figures are the header's lines, and the
    hottest-lines table quoted the .cu file's text at those numbers (HeCBench lud showed `exit(EXIT_FAILURE);`)."""
    (tmp_path / "kern.cuh").write_text("// a kernel in a header\n\n__global__ void scale(float *x, int n) {\n"
                                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                       "  if (i < n) x[i] = x[i] * 2.0f;\n}\n")
    (tmp_path / "main.cu").write_text('#include <cstdio>\n#include "kern.cuh"\nint main() {\n'
                                      '  printf("host line 4\\n");\n  printf("host line 5\\n");\n  return 0;\n}\n')
    doc = analyze_json(cli, str(tmp_path / "main.cu"), "--kernel", "scale", "--grid", "4", "--block", "256",
                       "--arg", "x=float32[1024]:random", "--arg", "n=1024", "--device", "h100")
    by_line = {h["line"]: h["source"] for h in doc["hot_lines"]}
    assert by_line[5] == "if (i < n) x[i] = x[i] * 2.0f;" and by_line[4].startswith("int i = blockIdx.x"), by_line
    assert not any("printf" in text for text in by_line.values())


def test_hot_lines_in_nvidias_headers_quote_them(cli, tmp_path):
    """Ray Tracing in One Weekend's render_init spends 70% at curand_kernel.h:326 (curand_init's skip-ahead): the
    table showed the header's line number with no text, since NVRTC reads NVIDIA's headers itself; the text now
    comes from the installed header, the line as the file has it."""
    from perfmodel.compile import nvrtc

    (tmp_path / "cr.cu").write_text("#include <curand_kernel.h>\n__global__ void init(curandState *s, "
                                    "unsigned long long seed) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                    "    curand_init(seed, i, 0, &s[i]);\n}\n")
    doc = analyze_json(cli, str(tmp_path / "cr.cu"), "--grid", "1", "--block", "32", "--arg", "s=uint8[32*48]",
                       "--arg", "seed=1", "--device", "h100")
    sdk = [h for h in doc["hot_lines"] if h["file"] and h["file"].endswith("curand_kernel.h")]
    assert sdk, doc["hot_lines"]
    header = next(p for d in nvrtc.sdk_include_dirs() for p in [Path(d) / "curand_kernel.h"] if p.is_file())
    rows = header.read_text().splitlines()
    for h in sdk:
        assert h["source"] and h["source"] == rows[h["line"] - 1].strip(), h


NEGATIVE_INDEX = "__global__ void diff(const float *s, float *o, int n)\n" \
                 "{ int i = threadIdx.x; if (i < n) o[i] = s[i] - s[i - 1]; }\n"


def test_a_pointer_into_an_array_reads_before_it(cli, tmp_path):
    """cuda-samples' eigenvalues pass `g_b + 1` and read `g_s[-1]`: with no way to say so, every launch ended out of
    bounds. `--arg s=float32[n+1]@1` (the spec's `offset: 1`, and from Python a view `b[1:]` as CuPy passes it)
    gives the kernel a pointer one element into the array; --check sees the whole array. Against numpy."""
    import perfmodel

    (tmp_path / "neg.cu").write_text(NEGATIVE_INDEX)
    (tmp_path / "refs.py").write_text("import numpy as np\ndef diff(s, n, **kw):\n"
                                      "    s = np.asarray(s, np.float64)\n    return s[1:n + 1] - s[:n]\n")
    base = ("analyze", str(tmp_path / "neg.cu"), "--grid", "1", "--block", "32", "-D", "n=32", "--arg", "o=float32[n]",
            "--arg", "n=n", "--check", f"o={tmp_path / 'refs.py'}:diff", "--device", "h100")
    spec = tmp_path / "neg.yaml"
    code, out, err = cli(*base, "--arg", "s=float32[n+1]@1:random", "--json", "--save-spec", str(spec))
    assert code == 0 and json.loads(out)["correct"] is True, err
    assert "offset: '1'" in spec.read_text()
    assert json.loads(cli("analyze", str(spec), "--device", "h100", "--json")[1])["correct"] is True
    code, out, err = cli(*base, "--arg", "s=float32[n+1]:random")
    assert code == 2 and "out-of-bounds global load: s[-1]" in err
    code, out, err = cli(*base, "--arg", "s=float32[n+1]@34:random")
    assert code == 2 and "OFFSET 34 is beyond the array's 33 elements" in err
    s = (np.arange(33, dtype=np.float32) ** 2)
    o = np.zeros(32, np.float32)
    perfmodel.RawKernel(NEGATIVE_INDEX, "diff")((1,), (32,), (s[1:], o, 32), device="h100")
    assert o.tolist() == np.diff(s).tolist()


def test_coalescing_advice_counts_the_bytes_a_lane_loads(cli, tmp_path):
    """A warp of 16-byte loads (float4, Packed128) needs 16 sectors at best: it was told "Uncoalesced global loads:
    16.0 sectors per request where 4.0 would do". A stride of 32 floats between lanes still is."""
    (tmp_path / "v4.cu").write_text(
        "__global__ void copy4(const float4 *in, float4 *out, int n)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = in[i]; }\n"
        "__global__ void stride32(const float *in, float *out, int n)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = in[32 * i]; }\n")
    v4 = analyze_json(cli, str(tmp_path / "v4.cu"), "--kernel", "copy4", "--grid", "64", "--block", "256", "--arg",
                      "in=float32[65536]:random", "--arg", "out=float32[65536]", "--arg", "n=16384", "--device", "h100")
    assert v4["counts"]["global"]["load_sectors"] == 16 * v4["counts"]["global"]["load_requests"]
    assert not any(t.startswith("Uncoalesced") for t in v4["advice"]), v4["advice"]
    s32 = analyze_json(cli, str(tmp_path / "v4.cu"), "--kernel", "stride32", "--grid", "64", "--block", "256",
                       "--arg", "in=float32[524288]:random", "--arg", "out=float32[16384]", "--arg", "n=16384",
                       "--device", "h100")
    assert any(t.startswith("Uncoalesced global loads: 32.0 sectors per request where 4.0 would do")
               for t in s32["advice"]), s32["advice"]


def test_bank_conflict_advice_knows_a_wide_access_needs_more_than_one_wavefront(cli, tmp_path):
    """A warp's 32 float4 shared loads of consecutive elements move 512 B: 4 wavefronts of 128 B (32 banks x 4 B)
    with no conflict (Learn CUDA Programming's n-body kernel was told "2.0 wavefronts per request ... pad the
    array"). A stride of two float4 between lanes conflicts: 8 wavefronts where 4 would do."""
    (tmp_path / "v4s.cu").write_text(
        "__global__ void lin(float4 *out) { __shared__ float4 s[512];\n"
        "  s[threadIdx.x] = make_float4(threadIdx.x, 1.f, 2.f, 3.f); s[threadIdx.x + 256] = s[threadIdx.x];\n"
        "  __syncthreads(); out[threadIdx.x] = s[threadIdx.x ^ 1]; }\n"
        "__global__ void strided(float4 *out) { __shared__ float4 s[512];\n"
        "  s[threadIdx.x] = make_float4(threadIdx.x, 1.f, 2.f, 3.f); s[threadIdx.x + 256] = s[threadIdx.x];\n"
        "  __syncthreads(); out[threadIdx.x] = s[2 * threadIdx.x]; }\n")
    args = ("--grid", "1", "--block", "256", "--arg", "out=float32[1024]", "--device", "h100")
    lin = analyze_json(cli, str(tmp_path / "v4s.cu"), "--kernel", "lin", *args)
    sh = lin["counts"]["shared"]
    assert sh["load_wavefronts"] == 4 * sh["load_requests"]
    assert not any(t.startswith("Shared-memory bank conflicts") for t in lin["advice"]), lin["advice"]
    strided = analyze_json(cli, str(tmp_path / "v4s.cu"), "--kernel", "strided", *args)
    assert any(t.startswith("Shared-memory bank conflicts") and "where 4 would do" in t
               for t in strided["advice"]), strided["advice"]


def test_uncoalesced_stores_are_advised_and_a_kernel_without_flops_is_not_told_to_tile(cli, tmp_path):
    """The NVIDIA blog's naive transpose stores 32 sectors a request; its advice spoke only of CGMA 0 and tiling for
    data reuse, nothing of the stores."""
    (tmp_path / "tr.cu").write_text(
        "__global__ void transposeNaive(float *odata, const float *idata, int n)\n"
        "{ int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
        "  for (int j = 0; j < 32; j += 8) odata[x * n + (y + j)] = idata[(y + j) * n + x]; }\n")
    doc = analyze_json(cli, str(tmp_path / "tr.cu"), "--grid", "32,32", "--block", "32,8", "--arg",
                       "odata=float32[1048576]", "--arg", "idata=float32[1048576]:random", "--arg", "n=1024",
                       "--device", "h100")
    g = doc["counts"]["global"]
    assert g["store_sectors"] == 32 * g["store_requests"] and g["load_sectors"] == 4 * g["load_requests"]
    assert any(t.startswith("Uncoalesced global stores: 32.0 sectors per request where 4.0 would do")
               for t in doc["advice"]), doc["advice"]
    assert not any("Uncoalesced global loads" in t or "CGMA" in t for t in doc["advice"]), doc["advice"]


def test_one_buffer_passed_twice_is_one_array():
    """An in-place kernel called with one buffer for two pointers (HeCBench bitpermute's bit_rev(d, d)): CuPy passes
    the same pointer twice; the Python API copied each argument apart, so the kernel saw two buffers and its writes
    to one were lost (x came back unchanged, `out == in` false). A view one element in (x, x[1:]) shares the array
    too."""
    import perfmodel

    k = perfmodel.RawKernel(r'''
    extern "C" __global__ void inc(float *out, const float *in, int *same) {
        int i = threadIdx.x; out[i] = in[i] + 1.0f; if (i == 0) same[0] = (out == in); }''', "inc")
    x, s = np.zeros(4, np.float32), np.zeros(1, np.int32)
    k((1,), (4,), (x, x, s), device="h100")
    assert x.tolist() == [1.0] * 4 and s[0] == 1
    shift = perfmodel.RawKernel(r'''
    extern "C" __global__ void shift(float *out, const float *in) { out[threadIdx.x] = in[threadIdx.x] * 10.0f; }''',
                                "shift")
    y = np.arange(5, dtype=np.float32)
    shift((1,), (1,), (y, y[1:]), device="h100")          # out[0] = in[0] = y[1] * 10: y[0] becomes 10
    assert y.tolist() == [10.0, 1.0, 2.0, 3.0, 4.0]


def test_an_in_place_kernel_gets_one_buffer_for_two_pointers(cli, tmp_path):
    """`--arg out=in` (the spec's `same_as: in`) gives two pointer parameters one array, as the host's rev(d, d):
    a reversal in place through shared timing (every thread reads before the barrier, writes after) is right only
    if both pointers see the same memory. With two arrays `out` came back as the reversal of zeros' neighbour."""
    (tmp_path / "rev.cu").write_text("__global__ void rev(float *out, const float *in, int n)\n"
                                     "{ int i = threadIdx.x; float v = in[n - 1 - i]; __syncthreads(); out[i] = v; }\n")
    (tmp_path / "refs.py").write_text("import numpy as np\ndef rev(**kw):\n    return np.asarray(kw['in'])[::-1]\n")
    spec = tmp_path / "rev.yaml"
    doc = analyze_json(cli, str(tmp_path / "rev.cu"), "--grid", "1", "--block", "32", "--arg", "in=float32[32]:random",
                       "--arg", "out=in", "--arg", "n=32", "--check", f"out={tmp_path / 'refs.py'}:rev",
                       "--device", "h100", "--save-spec", str(spec))
    assert doc["correct"] is True
    assert "{name: out, same_as: in}" in spec.read_text()
    assert analyze_json(cli, str(spec), "--device", "h100")["correct"] is True
    code, out, err = cli("analyze", str(tmp_path / "rev.cu"), "--grid", "1", "--block", "32", "--arg", "in=out",
                         "--arg", "out=in", "--arg", "n=32", "--device", "h100")
    assert code == 2 and "must have an array of its own" in err


CONV_CONSTANT = str(ROOT / "kernels_spec" / "conv1d_constant.cu")
CONV_ARGS = [CONV_CONSTANT, "--grid", "4", "--block", "256", "--arg", "N=float32[1000]:random",
             "--arg", "P=float32[1000]", "--arg", "Mask_Width=5", "--arg", "Width=1000", "--device", "h100"]


def test_a_constant_array_from_the_command_line(cli, tmp_path):
    """``--symbol M=float32[5]:values=(...)`` plays the host's cudaMemcpyToSymbol: the convolution with that mask
    matches numpy's (np.convolve of a symmetric mask, 'same' mode = the kernel's zero-padded halo). Without it
    the mask holds zeros, and the report says so instead of passing silently."""
    (tmp_path / "ref.py").write_text(
        "import numpy as np\n"
        "def P(N, Mask_Width):\n"
        "    mask = np.array([1, 2, 3, 2, 1], np.float64)[:Mask_Width]\n"
        "    return np.convolve(N.astype(np.float64), mask, 'same').astype(np.float32)\n")
    check = ["--check", f"P={tmp_path / 'ref.py'}:P", "--rtol", "1e-5", "--atol", "1e-5"]
    doc = analyze_json(cli, *CONV_ARGS, "--symbol", "M=float32[5]:values=(1, 2, 3, 2, 1)", *check)
    assert doc["correct"] is True, doc["correct_detail"]
    assert not doc["simulation_notes"]
    unset = analyze_json(cli, *CONV_ARGS, *check)
    assert unset["correct"] is False
    assert any("__constant__ M (40 bytes) was given no values" in n for n in unset["simulation_notes"])


@pytest.mark.parametrize("const, needle", [
    ("X=float32[5]", "names no __constant__ or __device__ variable 'X' (it names: M)"),
    ("M=float32[11]", "__constant__ M holds 40 bytes; 44 given"),
    ("M=float32[2]:values=(1, x)", "values=(...) takes numbers, not 'x'"),
    ("M=float32[5]:values=(1, 2)", "values=(...) gives 2 numbers for an array of 5 elements"),
    ("M=2.0", "expected NAME=DTYPE[COUNT][:INIT]"),
])
def test_bad_constant_arrays(cli, const, needle):
    code, out, err = cli("analyze", *CONV_ARGS, "--symbol", const, "--json")
    document = json.loads(out)
    assert code == 2 and needle in document["error"]["message"], document


def test_a_pointer_to_pointers_is_refused_by_name(cli, tmp_path):
    """``float** rows``: its elements are 8-byte device addresses (not floats), which no command-line array of
    numbers can hold; both a given and a missing one say so, exit 2. N NULL pointers the kernel fills (Ray Tracing
    in One Weekend's create_world writes its hitable **d_list) are `uint64[N]`: read here, they are null."""
    path = tmp_path / "pp.cu"
    path.write_text("__global__ void k(float **rows, float *out, int n)\n"
                    "{ int i = threadIdx.x; if (i < n) out[i] = rows[i][0]; }\n")
    base = [str(path), "--grid", "1", "--block", "32", "--arg", "out=float32[32]", "--arg", "n=32", "--device", "h100"]
    code, _, err = cli("analyze", *base, "--arg", "rows=float32[32]:random")
    assert code == 2 and "float**, an array of device pointers" in err and "--arg rows=uint64[N]" in err, err
    code, _, err = cli("analyze", *base)
    assert code == 2 and "'rows' (float**, an array of device pointers" in err, err
    code, _, err = cli("analyze", *base, "--arg", "rows=uint64[32]")
    assert code == 2 and "null pointer" in err, err
    (tmp_path / "fill.cu").write_text("struct Obj { float v; };\n__device__ Obj g_obj;\n"
                                      "__global__ void point(Obj **slot) { slot[threadIdx.x] = &g_obj; }\n")
    code, out, err = cli("analyze", str(tmp_path / "fill.cu"), "--grid", "1", "--block", "32", "--arg",
                         "slot=uint64[32]", "--device", "h100", "--json")
    assert code == 0 and json.loads(out)["counts"]["global"]["store_sectors"] == 8, err   # 32 x 8 bytes
    from perfmodel.compile.signature import dtype_of

    assert dtype_of("float**", True) == np.dtype("uint64") and dtype_of("const int* const*", True) == np.uint64


OPTIONAL_BIAS = r"""
__global__ void bias_add(const float *x, const float *bias, float *out, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    if (bias != NULL) v += bias[i % 4];
    out[i] = v;
  }
}
"""


def test_a_null_pointer_from_the_command_line_a_spec_and_python(cli, tmp_path):
    """An optional array the kernel tests against NULL (llm.c's bias): ``--arg bias=null``, ``null: true`` in a
    spec, None from Python. The outputs are x itself (numpy), no load reaches bias (the 32 load requests are x's:
    1,000 floats in 4 blocks of 8 warps); a kernel that dereferences the NULL fails naming it, exit 2."""
    path = tmp_path / "opt.cu"
    path.write_text(OPTIONAL_BIAS + "__global__ void deref(const float *x, float *out) { out[0] = x[threadIdx.x]; }\n")
    (tmp_path / "r.py").write_text("def out(x):\n    return x.copy()\n")
    args = [str(path), "-k", "bias_add", "--grid", "4", "--block", "256", "--arg", "x=float32[1000]:random",
            "--arg", "bias=null", "--arg", "out=float32[1000]", "--arg", "n=1000", "--device", "h100"]
    doc = analyze_json(cli, *args, "--check", f"out={tmp_path / 'r.py'}:out", "--save-spec", str(tmp_path / "s.yaml"))
    assert doc["correct"] is True and doc["counts"]["global"]["load_requests"] == 32
    assert "'null': true" in (tmp_path / "s.yaml").read_text()
    again = analyze_json(cli, str(tmp_path / "s.yaml"), "--device", "h100")
    assert again["counts"] == doc["counts"]
    # as docs/spec.md writes it, unquoted: YAML reads that key as None (it failed: "Keys should be strings")
    (tmp_path / "u.yaml").write_text((tmp_path / "s.yaml").read_text().replace("'null': true", "null: true"))
    assert "null: true" in (tmp_path / "u.yaml").read_text()
    assert analyze_json(cli, str(tmp_path / "u.yaml"), "--device", "h100")["counts"] == doc["counts"]

    code, out, err = cli("analyze", str(path), "-k", "deref", "--grid", "1", "--block", "32", "--arg", "x=null",
                         "--arg", "out=float32[1]", "--device", "h100")
    assert code == 2 and "global load through a null pointer" in err and "x was given NULL" in err, err
    code, out, err = cli("analyze", *args[:-6], "--arg", "n=null", "--arg", "out=float32[1000]", "--device", "h100")
    assert code == 2 and "'n' of bias_add is int, not a pointer; only a pointer can be NULL" in err, err

    from perfmodel.api import RawModule

    kernel = RawModule(code=OPTIONAL_BIAS).get_function("bias_add")
    x = np.random.default_rng(3).random(1000, dtype=np.float32)
    out = np.zeros(1000, np.float32)
    kernel((4,), (256,), (x, None, out, np.int32(1000)))
    assert np.array_equal(out, x)


DEVICE_VARIABLES = r"""
#define N 4096
__device__ float d_out[N];
__device__ int d_count = 0;
__constant__ float c_scale[1];
__global__ void scale(const float *x, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { d_out[i] = x[i] * c_scale[0]; atomicAdd(&d_count, 1); }
}
"""


@pytest.mark.parametrize("sample", [[], ["--sample", "4"]])
def test_device_variables_are_given_and_read_back(cli, tmp_path, sample):
    """``__device__`` variables as the host uses them: ``--symbol`` copies values in (cudaMemcpyToSymbol: the
    counter starts at 5, the scale is a __constant__), ``--check`` reads them back (cudaMemcpyFromSymbol) with the
    element type of their declaration. Against numpy; a sampled run checks the elements its blocks wrote. A
    reference that expects another scale fails."""
    path = tmp_path / "dv.cu"
    path.write_text(DEVICE_VARIABLES)
    (tmp_path / "r.py").write_text(
        "import numpy as np\n"
        "def out(x, c_scale):\n    return x * c_scale[0]\n"
        "def wrong(x):\n    return x * 2.0\n"
        "def count(x, d_count):\n    return d_count + len(x)\n")
    base = [str(path), "--grid", "16", "--block", "256", "--arg", "x=float32[4096]:random", "--arg", "n=4096",
            "--symbol", "c_scale=float32[1]:values=(2.5)", "--device", "h100", *sample]
    counts = [] if sample else ["--symbol", "d_count=int32[1]:values=(5)", "--check", f"d_count={tmp_path}/r.py:count"]
    doc = analyze_json(cli, *base, "--check", f"d_out={tmp_path}/r.py:out", *counts)
    assert doc["correct"] is True, doc["correct_detail"]
    assert ("d_count" in doc["correct_detail"]) is not bool(sample)
    wrong = analyze_json(cli, *base, "--check", f"d_out={tmp_path}/r.py:wrong")
    assert wrong["correct"] is False and "d_out" in wrong["correct_detail"]
    code, out, err = cli("analyze", *base, "--check", f"d_nothing={tmp_path}/r.py:out")
    assert code == 2 and "is not an array argument or __device__ variable" in err and "d_out" in err, err
    code, out, err = cli("analyze", *base, "--symbol", "d_out=float32[5000]")
    assert code == 2 and "__device__ d_out holds 16,384 bytes; 20,000 given" in err, err


def test_device_variables_from_python_come_back_into_the_callers_array():
    """From Python, a ``__device__`` variable given in ``constants=`` is copied in and, after the run, back into
    the caller's array (as cudaMemcpyFromSymbol would); ``expected=`` may name it. Against numpy."""
    from perfmodel.api import RawModule

    kernel = RawModule(code=DEVICE_VARIABLES).get_function("scale")
    x = np.random.default_rng(5).random(4096, dtype=np.float32)
    d_out = np.zeros(4096, np.float32)
    d_count = np.array([7], np.int32)
    result = kernel((16,), (256,), (x, np.int32(4096)), constants={"c_scale": np.array([3.0], np.float32),
                                                                   "d_out": d_out, "d_count": d_count},
                    expected={"d_out": x * np.float32(3)}, rtol=0, atol=0)
    assert result.correct is True
    assert np.array_equal(d_out, x * np.float32(3)) and d_count[0] == 7 + 4096


def test_a_pointer_read_from_constant_memory_that_was_never_given(cli, tmp_path):
    """A kernel with no pointer parameter that reads its arrays through pointers held in __constant__ memory
    (Rodinia's heartwall): with the constants not given, the pointer is 0 and the load is an error that says so -
    not an internal error on an empty global memory."""
    path = tmp_path / "cp.cu"
    path.write_text("struct Common { float *in; float *out; };\n__constant__ Common d_common;\n"
                    "__global__ void k() { d_common.out[threadIdx.x] = d_common.in[threadIdx.x] * 2.0f; }\n")
    code, out, err = cli("analyze", str(path), "--grid", "1", "--block", "32", "--device", "h100")
    assert code == 2 and "Traceback" not in err and "internal" not in err, err
    assert "global load through a null pointer" in err and "__constant__ d_common was given no values" in err, err


ZERO_WHERE_NEGATIVE = r"""
__global__ void plus_one_bad(const float *x, float *y, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < 16; ++k, i += n / 16)
    y[i] = x[i] > 0.0f ? x[i] + 1.0f : 0.0f;     // wrong: y = x + 1 everywhere
}
"""

ATOMIC_SUM = r"""
__global__ void total(const float *x, float *s)
{
  atomicAdd(s, x[blockIdx.x * blockDim.x + threadIdx.x]);
}
"""


@pytest.mark.parametrize("mode", [["--sample", "6"], []])
def test_a_run_of_some_blocks_checks_every_element_they_stored(cli, tmp_path, mode):
    """A wrong kernel that stores 0 (the array's initial value) where x < 0: the elements the simulated blocks
    stored are checked whatever value they hold, in a sampled run and in an exact run of one block per class of
    identical blocks, so about half of them fail against numpy's x + 1 - a check by changed value passed it."""
    path = tmp_path / "bad.cu"
    path.write_text(ZERO_WHERE_NEGATIVE)
    (tmp_path / "r.py").write_text("def y(x):\n    return x + 1\n")
    n = 16 * 1024 * 256 if not mode else 16 * 64 * 64      # exact: over a million warp instructions (replicated)
    blocks = n // 16 // 256
    doc = analyze_json(cli, str(path), "--grid", str(blocks), "--block", "256", "--arg", f"x=float32[{n}]:random",
                       "--arg", f"y=float32[{n}]", "--arg", f"n={n}", "--check", f"y={tmp_path}/r.py:y",
                       "--device", "h100", *mode)
    assert doc["correct"] is False, doc["correct_detail"]
    ran = doc["blocks_simulated"] if mode else 1
    assert f"checked the {ran * 256 * 16:,} of {n:,} output elements" in doc["correct_detail"], doc["correct_detail"]


def test_a_sampled_atomic_sum_is_not_checked_against_the_whole_launch(cli, tmp_path):
    """Every block adds to one float: a sampled run holds the sampled blocks' part of the sum, which is neither
    right nor wrong against the whole launch's - not checked, where it had been reported wrong (an exact run is
    checked and right: numpy's sum of ones)."""
    path = tmp_path / "sum.cu"
    path.write_text(ATOMIC_SUM)
    (tmp_path / "r.py").write_text("import numpy as np\ndef s(x):\n    return np.array([x.sum()])\n")
    args = [str(path), "--grid", "64", "--block", "128", "--arg", "x=float32[8192]:ones", "--arg", "s=float32[1]",
            "--check", f"s={tmp_path}/r.py:s", "--device", "h100"]
    sampled = analyze_json(cli, *args, "--sample", "8")
    assert sampled["correct"] is None and "atomics add to" in sampled["correct_detail"], sampled["correct_detail"]
    assert analyze_json(cli, *args)["correct"] is True


def test_advice_for_a_block_smaller_than_a_warp_and_a_kernel_that_only_prints(cli, tmp_path):
    """A branch-free kernel in blocks of 16 threads runs at 50% SIMT efficiency (16 of 32 lanes, by hand): the
    advice names the empty lanes, not divergence. A kernel whose threads only printf did something: no
    "threads do no work" advice."""
    path = tmp_path / "half.cu"
    path.write_text("#include <cstdio>\n"
                    "__global__ void half(const float *x, float *y) { y[threadIdx.x] = 2.0f * x[threadIdx.x]; }\n"
                    "__global__ void hello() { printf(\"hello from %d\\n\", threadIdx.x); }\n")
    doc = analyze_json(cli, str(path), "-k", "half", "--grid", "4", "--block", "16", "--arg", "x=float32[16]:random",
                       "--arg", "y=float32[16]", "--device", "h100")
    assert doc["counts"]["simt_efficiency"] == pytest.approx(0.5)
    tip = next(t for t in doc["advice"] if t.startswith("SIMT efficiency"))
    assert "16 lanes of their last warp empty" in tip and "divergent" not in tip
    doc = analyze_json(cli, str(path), "-k", "hello", "--grid", "2", "--block", "4", "--device", "h100")
    assert not any("do no work" in t for t in doc["advice"]), doc["advice"]


def test_an_index_past_one_array_into_the_next_is_out_of_bounds(cli, tmp_path):
    """a[400] of a 256-element array: its address computes from a alone, and lands inside b (the next array in
    memory, 512 bytes on). That is out of bounds of a - not a read of b's 7.0 - while a[100] is fine."""
    path = tmp_path / "peek.cu"
    path.write_text("__global__ void peek(const float *a, const float *b, float *out, int i) { out[0] = a[i]; }\n")
    base = [str(path), "--grid", "1", "--block", "1", "--arg", "a=float32[256]:ones", "--arg", "b=float32[256]:value=7",
            "--arg", "out=float32[1]", "--device", "h100"]
    code, out, err = cli("analyze", *base, "--arg", "i=400")
    assert code == 2 and "out-of-bounds global load: a[400] but a has 256 elements" in err, err
    (tmp_path / "r.py").write_text("import numpy as np\ndef out(a):\n    return np.array([1.0])\n")
    assert analyze_json(cli, *base, "--arg", "i=100", "--check", f"out={tmp_path}/r.py:out")["correct"] is True


def test_an_out_of_bounds_vector_load_says_its_width():
    """A float4 load one vector past the end said "A[128] but A has 128 elements of 4 bytes", not that the
    access was 16 bytes wide (the mma helper's repro)."""
    import perfmodel
    from perfmodel.errors import SimulationError

    k = perfmodel.RawKernel(r'''
    extern "C" __global__ void oob_v4(const float4 *A, float4 *B) { B[threadIdx.x] = A[threadIdx.x + 1]; }''',
                            "oob_v4")
    with pytest.raises(SimulationError, match=r"A\[128\] \(a 16-byte vector load of elements 128\.\.131\) but A has "
                                              r"128 elements of 4 bytes \(thread \(31, 0, 0\)"):
        k((1,), (32,), (np.zeros(128, np.float32), np.zeros(128, np.float32)), device="h100")


def test_a_define_that_names_a_constant_of_the_file_is_noted(cli, tmp_path):
    """Professional CUDA C's samples declare `const int N = 1 << 24;`: `-D N=4096` set no macro (the kernel kept
    its N) and sized the --arg buffers only, silently; the run then wrote a quarter of them or ran out of bounds."""
    (tmp_path / "constn.cu").write_text(
        "const int N = 1024;\n"
        "__global__ void k(float *x) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < N) x[i] = 1.0f; }\n")
    doc = analyze_json(cli, str(tmp_path / "constn.cu"), "--grid", "16", "--block", "256", "--arg", "x=float32[N]",
                       "-D", "N=4096", "--device", "h100")
    assert any(n.startswith("-D N: ") and "constn.cu:1 declares N as a constant" in n
               for n in doc["simulation_notes"]), doc["simulation_notes"]
    plain = analyze_json(cli, str(tmp_path / "constn.cu"), "--grid", "16", "--block", "256", "--arg",
                         "x=float32[n]", "-D", "n=4096", "--device", "h100")
    assert not any(n.startswith("-D ") for n in plain["simulation_notes"])
    # a constant of a host function (or of a macro's body) is not the file's: no note
    (tmp_path / "hostn.cu").write_text(
        "__global__ void k(float *x, int N) { int i = threadIdx.x; if (i < N) x[i] = 1.0f; }\n"
        "void run(float *x, int r, int c)\n{\n    const int N = r * c;\n    k<<<1, 256>>>(x, N);\n}\n")
    host = analyze_json(cli, str(tmp_path / "hostn.cu"), "--grid", "1", "--block", "256", "--arg", "x=float32[N]",
                        "-D", "N=256", "--arg", "N=N", "--device", "h100")
    assert not any(n.startswith("-D ") for n in host["simulation_notes"]), host["simulation_notes"]


def test_an_atomics_bound_kernel_shows_its_atomic_line_and_advice(cli, tmp_path):
    """CoffeeBeforeArch's global histogram: atomics were 83% of the predicted time, yet the hottest lines (ranked by
    global sectors) showed only the load, and the advice said nothing of atomics."""
    (tmp_path / "hist.cu").write_text(
        "__global__ void hist(const int *in, int *bins, int n)\n{\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    int v = in[i];\n"
        "    if (i < n) atomicAdd(&bins[v % 7], 1);\n}\n")
    doc = analyze_json(cli, str(tmp_path / "hist.cu"), "--grid", "256", "--block", "256", "--arg",
                       "in=int32[65536]:random(0,1000)", "--arg", "bins=int32[7]", "--arg", "n=65536",
                       "--device", "h100")
    assert doc["bound"] == "atomics"
    assert doc["hot_lines"][0]["line"] == 5, doc["hot_lines"]
    assert any(t.startswith("Atomics-bound") for t in doc["advice"]), doc["advice"]


def test_local_memory_traffic_is_in_the_text_report(cli, tmp_path):
    """A per-thread array read at a run-time index lives in local memory: its loads and stores were only in --json
    (GPU MODE's flash_attention_spilling: 146k local loads beside 20k global ones, unseen in the report)."""
    import re

    (tmp_path / "local.cu").write_text(
        "__global__ void k(const int *idx, float *out) {\n  float a[64];\n"
        "  for (int i = 0; i < 64; i++) a[i] = i * 0.5f;\n  out[threadIdx.x] = a[idx[threadIdx.x] & 63];\n}\n")
    code, out, err = cli("analyze", str(tmp_path / "local.cu"), "--grid", "1", "--block", "32", "--arg",
                         "idx=int32[32]:arange", "--arg", "out=float32[32]", "--device", "h100")
    assert code == 0, err
    assert re.search(r"local loads\s+32\s+1", out) and re.search(r"local stores\s+512\s+16", out), out


def test_a_flag_define_a_printf_of_another_kernel_and_header_lines_in_the_shares(cli, tmp_path):
    """HeCBench findings: `-D MILC_COMPLEX` (a Makefile's flag, no value) was refused by analyze; gemv_fp16 was told
    of "the kernel's printf (3 calls)", which were the file's checking kernels'; the hottest lines' shares were of
    the listed lines only, so a file whose work is in an included header showed its index line at 40%."""
    (tmp_path / "heavy.cuh").write_text(
        "__device__ unsigned mix(unsigned x, int n)\n{ for (int i = 0; i < n; ++i) x = x * 1664525u + 1013904223u;"
        " return x; }\n")
    (tmp_path / "k.cu").write_text(
        '#include <cstdio>\n#include "heavy.cuh"\n__global__ void k(unsigned *out, int n)\n'
        "{\n#ifdef FLAG\n  out[threadIdx.x] = mix(threadIdx.x, n);\n#endif\n}\n"
        '__global__ void check(const unsigned *out) { if (out[threadIdx.x] == 0) printf("zero\\n"); }\n')
    doc = analyze_json(cli, str(tmp_path / "k.cu"), "--kernel", "k", "--grid", "1", "--block", "32", "--arg",
                       "out=uint32[32]", "--arg", "n=64", "-D", "FLAG", "--device", "h100")
    assert doc["launch"]["defines"] == {"FLAG": 1}
    assert not doc["compile"].get("printf_calls"), doc["compile"]
    own = [h["share"] for h in doc["hot_lines"] if not h["file"]]
    assert own and sum(own) < 0.5, doc["hot_lines"]       # the loop's instructions are in heavy.cuh


def test_a_hot_line_with_no_source_line_says_so():
    """XSBench's baseline put 7% of its warp instructions on `.loc` line 0 (code the compiler hoisted or generated):
    the table showed line 0 with no text. It says what line 0 is."""
    from types import SimpleNamespace

    from perfmodel.analysis import hot_lines

    sim = SimpleNamespace(lines={0: {"warp_instructions": 7}, 2: {"warp_instructions": 93}}, header_lines={},
                          header_source={}, counts={"warp_instructions": 100}, source_lines=["a", "b = c;"])
    rows = hot_lines(sim, "issue")
    assert [(r["line"], r["source"]) for r in rows] == [
        (2, "b = c;"), (0, "(no source line: code the compiler generated or moved, .loc line 0)")], rows


def test_a_scalar_parameters_default_argument_is_used_when_not_given(cli, tmp_path):
    """ggml's rms_norm_f32 declares 16 parameters with defaults (`const int64_t stride_row = 0`); each had to be
    given with --arg, as if the host's call did not leave them out. A number literal default is used (1.0f, 1); a
    pointer's nullptr is still asked for. By hand: y = 2 x + 1."""
    (tmp_path / "def.cu").write_text(
        "__global__ void k(const float *x, float *y, int n, float scale = 2.0f, int offset = 1)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = scale * x[i] + offset; }\n")
    np.save(tmp_path / "want.npy", 2 * np.arange(32, dtype=np.float32) + 1)
    doc = analyze_json(cli, str(tmp_path / "def.cu"), "--grid", "1", "--block", "32", "--arg", "x=float32[32]:arange",
                       "--arg", "y=float32[32]", "--arg", "n=32", "--check", f"y={tmp_path / 'want.npy'}",
                       "--device", "h100")
    assert doc["correct"] is True, doc["correct_detail"]


def test_a_define_reaches_a_header_found_up_the_tree(cli, tmp_path):
    """ccminer: `-D` reached the compile only if the file or a header on the include path named it; a header the
    compile finds up the folder tree (`#include <hdr.h>` from sub/, the file in the folder above, as cuda-samples'
    Common/) was not read, so `-D MYFLAG=7` was dropped and the kernel ran its other branch (2 where 1)."""
    (tmp_path / "hdr.h").write_text("#if MYFLAG >= 5\n#define VAL 1\n#else\n#define VAL 2\n#endif\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "k.cu").write_text("#include <hdr.h>\n__global__ void k(int *out) { out[threadIdx.x] = VAL; }\n")
    np.save(tmp_path / "ones.npy", np.ones(32, np.int32))
    doc = analyze_json(cli, str(tmp_path / "sub" / "k.cu"), "--grid", "1", "--block", "32", "--arg", "out=int32[32]",
                       "--check", f"out={tmp_path / 'ones.npy'}", "-D", "MYFLAG=7", "--device", "h100")
    assert doc["correct"] is True, doc["correct_detail"]


def test_hot_lines_list_the_lines_of_an_included_header(cli, tmp_path):
    """A kernel whose loop is a header's device function: the hottest-lines table left the header's lines out, so it
    showed the kernel's call line at 1% and nothing for the other 96%. Each header line is listed as file:line with
    its own text. By hand: the loop runs 64 iterations of at least 3 instructions for one warp, against under 20
    instructions on the kernel's own lines, so the header's lines carry over 80% of the warp instructions."""
    (tmp_path / "heavy.cuh").write_text(
        "__device__ unsigned mix(unsigned x, int n)\n{\n  for (int i = 0; i < n; ++i)\n"
        "    x = x * 1664525u + 1013904223u;\n  return x;\n}\n")
    (tmp_path / "k.cu").write_text('#include "heavy.cuh"\n__global__ void k(unsigned *out, int n)\n'
                                   "{\n  out[threadIdx.x] = mix(threadIdx.x, n);\n}\n")
    doc = analyze_json(cli, str(tmp_path / "k.cu"), "--grid", "1", "--block", "32", "--arg", "out=uint32[32]",
                       "--arg", "n=64", "--device", "h100")
    top = doc["hot_lines"][0]
    assert top["file"].endswith("heavy.cuh") and top["line"] in (3, 4), doc["hot_lines"]
    assert top["source"] in ("for (int i = 0; i < n; ++i)", "x = x * 1664525u + 1013904223u;"), top
    header = sum(h["share"] for h in doc["hot_lines"] if h["file"])
    assert header > 0.8, doc["hot_lines"]
    code, out, err = cli("analyze", str(tmp_path / "k.cu"), "--grid", "1", "--block", "32", "--arg",
                         "out=uint32[32]", "--arg", "n=64", "--device", "h100")
    assert code == 0 and re.search(r"heavy\.cuh:[34]\s+\d+%", out), out


def test_an_empty_struct_passed_by_value_needs_no_value(cli, tmp_path):
    """HeCBench's pool passes the functor AvgPoolGrad<float> (member functions only) by value: it was refused,
    "found no data member", whatever was given. An empty struct is laid out as its byte and needs no --arg."""
    (tmp_path / "functor.cu").write_text(
        "struct Add { __device__ void compute(float x, float *y) const { *y += x; } };\n"
        "__global__ void k(const float *x, Add op, float *y, int n)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { float t = 0.f; op.compute(x[i], &t); "
        "y[i] = t; } }\n")
    (tmp_path / "ref.py").write_text("def same(x, **kw):\n    return x\n")
    doc = analyze_json(cli, str(tmp_path / "functor.cu"), "--grid", "1", "--block", "32", "--arg",
                       "x=float32[32]:random", "--arg", "y=float32[32]", "--arg", "n=32", "--check",
                       f"y={tmp_path / 'ref.py'}:same", "--device", "h100")
    assert doc["correct"] is True
