"""``__constant__`` and ``__device__`` variables of a struct type, whose pointer fields hold the device arrays the
kernels read (AutoDock-GPU's ``__constant__ GpuData cData;``, Rodinia heartwall's ``d_common``): the fields' layout
is probed like a by-value struct parameter's, and ``--symbol 'NAME={FIELD=VALUE, ...}'`` (the spec's
``constants: {NAME: {fields: ...}}``, Python's ``constants={NAME: {...}}``) gives them, each pointer field an array
that outputs name ``NAME.FIELD``. The references are numpy; the layout and the counts are derived by hand."""
from __future__ import annotations

import json

import numpy as np
import pytest

KERNEL = r"""
struct GpuData {
    int n;
    float scale;
    const float *x;
    float *y;
};
__constant__ GpuData cData;
__device__ GpuData gData;

__global__ void axpy()
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < cData.n) cData.y[i] += cData.scale * cData.x[i];
}

__global__ void axpy_device()
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < gData.n) gData.y[i] = gData.scale * gData.x[i];
}
"""

REFS = r"""
import numpy as np

def axpy(n, **kw):
    y = np.array(kw["cData.y"], dtype=np.float64)
    y[:n] += 2.0 * kw["cData.x"][:n]
    return y

def axpy_N(N, **kw):
    return axpy(N, **kw)

def axpy_wrong(n, **kw):
    y = np.array(kw["cData.y"], dtype=np.float64)
    y[:n] += 3.0 * kw["cData.x"][:n]
    return y

def axpy_device(n, **kw):
    y = np.zeros(len(kw["gData.y"]))
    y[:n] = 0.5 * kw["gData.x"][:n]
    return y
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "k.cu").write_text(KERNEL)
    (tmp_path / "refs.py").write_text(REFS)
    return tmp_path


def _run(cli, files, *args):
    code, out, err = cli("analyze", str(files / "k.cu"), "--device", "h100", "--json", *args)
    return code, json.loads(out or err)


def test_the_layout_of_a_struct_variable():
    """C++ lays GpuData out as int at 0, float at 4, the two 8-byte pointers at 8 and 16: 24 bytes."""
    from perfmodel.kernel import load_kernel

    program = load_kernel(source=KERNEL, path="k.cu", entry="axpy")
    layout = program.variable_layouts["cData"]
    assert layout.error is None and layout.size == 24
    assert [(f.path, f.offset, f.pointer) for f in layout.leaves] == [
        ("n", 0, False), ("scale", 4, False), ("x", 8, True), ("y", 16, True)]
    assert program.variable_layouts["gData"].size == 24


def test_symbol_fields_on_the_command_line_are_checked_against_numpy(cli, files):
    base = ["--kernel", "axpy", "--grid", "2", "--block", "128", "-D", "n=250",
            "--symbol", "cData={n=n, scale=2.0, x=float32[300]:random, y=float32[300]:ones}"]
    code, doc = _run(cli, files, *base, "--check", f"cData.y={files / 'refs.py'}:axpy")
    assert code == 0 and doc["correct"] is True, doc
    g = doc["counts"]["global"]
    # 250 threads load x[i] and y[i] and store y[i]: 8 warps, 2 load requests each; 1,000 bytes an array = 32
    # sectors (4 a warp, the last warp's 26 lanes 104 bytes: 4)
    assert g["load_requests"] == 16 and g["load_sectors"] == 64
    assert g["store_requests"] == 8 and g["store_sectors"] == 32
    code, doc = _run(cli, files, *base, "--check", f"cData.y={files / 'refs.py'}:axpy_wrong")
    assert code == 0 and doc["correct"] is False, doc


def test_a_device_struct_variable_and_a_spec_file(cli, files):
    code, doc = _run(cli, files, "--kernel", "axpy_device", "--grid", "4", "--block", "64", "-D", "n=200",
                     "--symbol", "gData={n=n, scale=0.5, x=float32[256]:random, y=float32[256]}",
                     "--check", f"gData.y={files / 'refs.py'}:axpy_device")
    assert code == 0 and doc["correct"] is True, doc
    spec = files / "axpy.yaml"
    spec.write_text(f"""name: axpy
source: {files / 'k.cu'}
entry: axpy
params:
  n: {{default: 1000}}
grid: ['cdiv(n, 128)']
block: [128]
args: []
constants:
  cData:
    fields:
      n: n
      scale: 2.0
      x: {{dtype: float32, length: n, init: {{random: {{seed: 3, low: -1, high: 1}}}}}}
      y: {{dtype: float32, length: n, init: ones}}
outputs:
  - {{arg: cData.y, reference: "{files / 'refs.py'}:axpy"}}
""")
    code, out, err = cli("analyze", str(spec), "--device", "h100", "--json")
    doc = json.loads(out or err)
    assert code == 0 and doc["correct"] is True, doc


def test_symbol_fields_from_python_come_back_into_the_callers_arrays():
    from perfmodel.api import RawModule

    kernel = RawModule(code=KERNEL).get_function("axpy")
    x = np.random.default_rng(2).random(300, dtype=np.float32)
    y = np.ones(300, np.float32)
    want = y.copy()
    want[:250] += np.float32(2) * x[:250]
    result = kernel((2,), (128,), (), constants={"cData": {"n": 250, "scale": 2.0, "x": x, "y": y}},
                    expected={"cData.y": want})
    assert result.correct is True and np.allclose(y, want)


@pytest.mark.parametrize("symbol, needle", [
    ("cData={n=5}", "no value for fields scale, x, y of GpuData"),
    ("cData={n=5, scale=1, x=float32[8], y=float32[8], z=1}", "GpuData has no field 'z'"),
    ("cData=5", "or, for __constant__ cData (GpuData), its fields in braces, e.g. --symbol 'cData={n=1, scale=1, "
                "x=float32[N]:random, y=float32[N]:random}'"),
    ("cData={n=5, scale=1, x=int32[8], y=float32[8]}", "so its elements are float32, not int32"),
])
def test_symbol_field_mistakes(cli, files, symbol, needle):
    code, doc = _run(cli, files, "--kernel", "axpy", "--grid", "1", "--block", "32", "--symbol", symbol)
    assert code == 2 and needle in doc["error"]["message"], doc


def test_a_struct_variable_not_given_names_its_fields(cli, tmp_path):
    """Rodinia heartwall's kernels read their arrays through pointers in `__constant__ d_common`: not given, the
    load is through a null pointer, and the message shows how to give the struct."""
    path = tmp_path / "cp.cu"
    path.write_text("struct Common { float *in; float *out; };\n__constant__ Common d_common;\n"
                    "__global__ void k() { d_common.out[threadIdx.x] = d_common.in[threadIdx.x] * 2.0f; }\n")
    code, out, err = cli("analyze", str(path), "--grid", "1", "--block", "32", "--device", "h100")
    assert code == 2 and "--symbol 'd_common={in=float32[N]:random, out=float32[N]:random}'" in err, err
    code, out, err = cli("analyze", str(path), "--grid", "1", "--block", "32", "--device", "h100",
                         "--symbol", "d_common={in=float32[32]:arange, out=float32[32]}", "--json")
    assert code == 0, err


def test_kernels_init_writes_the_struct_variables_fields(cli, files, tmp_path):
    """A kernel with no parameters whose data all comes through `__constant__ GpuData cData`: the starter spec
    lists every field of it under `constants:` (the pointer to const an input, the other an output), and runs as
    written; checked against numpy once a reference is named."""
    spec = tmp_path / "axpy.yaml"
    code, _, err = cli("kernels", "init", str(files / "k.cu"), "--kernel", "axpy", "-o", str(spec))
    assert code == 0, err
    text = spec.read_text()
    assert "constants:\n  cData:" in text and "      n: N   # int" in text
    assert "x: {dtype: float32, length: N, init: {random:" in text and "y: {dtype: float32, length: N, init: zeros}" in text
    assert "#   - {arg: cData.y," in text
    text = text.replace("scale: 1.0", "scale: 2.0").replace("source: k.cu", f"source: {files / 'k.cu'}")
    text = text.replace("init: zeros}", "init: ones}")
    spec.write_text(text + f"outputs:\n  - {{arg: cData.y, reference: \"{files / 'refs.py'}:axpy_N\"}}\n")
    code, out, err = cli("analyze", str(spec), "-D", "N=1000", "--device", "h100", "--json")
    doc = json.loads(out or err)
    assert code == 0 and doc["correct"] is True, doc
    assert doc["counts"]["global"]["load_requests"] == 2 * 32      # 1,000 threads: 32 warps (4 blocks of 8)


POINTER = """// the host: cudaMemcpyToSymbol(d_table, &dev_ptr, sizeof(float*)) (ethminer's d_dag)
__constant__ float* d_table;
__constant__ unsigned d_n;
__global__ void gather(unsigned start)
{
    unsigned i = start + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < d_n) d_table[i] *= 2.0f;
}
"""

POINTER_REF = """import numpy as np
def doubled(start, **kw):
    t = np.array(kw["d_table"], dtype=np.float64)
    t[start:int(kw["d_n"][0])] *= 2
    return t
"""


def test_a_pointer_variable_takes_the_array_it_points_to(cli, tmp_path):
    """`__constant__ float *d_table;`: --symbol d_table=float32[100] was 8 bytes of pointer (refused, "holds 8
    bytes"), and not given a null pointer; it is now the array the variable points to. Threads 0-127 with start 5
    and d_n 50: elements 5-49 doubled, 45 loads in 2 warp requests: warp 0's 32 lanes are elements 5-36 (bytes
    20-147: sectors 0-4, 5), warp 1's first 13 are elements 37-49 (bytes 148-199: sectors 4-6, 3); 8 sectors."""
    (tmp_path / "p.cu").write_text(POINTER)
    (tmp_path / "ref.py").write_text(POINTER_REF)
    base = [str(tmp_path / "p.cu"), "--grid", "1", "--block", "128", "--arg", "start=5", "--device", "h100"]
    code, out, err = cli("analyze", *base, "--symbol", "d_table=float32[100]:arange", "--symbol",
                         "d_n=uint32[1]:values=(50)", "--check", f"d_table={tmp_path / 'ref.py'}:doubled", "--json")
    doc = json.loads(out or err)
    assert code == 0 and doc["correct"] is True, doc
    g = doc["counts"]["global"]
    assert g["load_requests"] == 2 and g["load_sectors"] == 8 and g["store_sectors"] == 8
    code, out, err = cli("analyze", *base, "--symbol", "d_n=uint32[1]:values=(50)")
    assert code == 2 and "give that array, e.g. --symbol d_table=float32[N]:random" in err, err
    code, out, err = cli("analyze", *base, "--symbol", "d_table=int32[100]")
    assert code == 2 and "so its elements are float32, not int32" in err, err


def test_a_pointer_variable_from_a_spec_and_from_python(cli, tmp_path):
    (tmp_path / "p.cu").write_text(POINTER)
    (tmp_path / "ref.py").write_text(POINTER_REF)
    spec = tmp_path / "p.yaml"
    spec.write_text(f"""name: gather
source: {tmp_path / 'p.cu'}
entry: gather
params:
  n: {{default: 1000}}
grid: ['cdiv(n, 256)']
block: [256]
args:
  - {{name: start, dtype: uint32, value: 0}}
constants:
  d_table: {{dtype: float32, length: n, init: arange, pointer: true}}
  d_n: {{dtype: uint32, length: 1, init: {{constant: n}}}}
outputs:
  - {{arg: d_table, reference: "{tmp_path / 'ref.py'}:doubled"}}
""")
    code, out, err = cli("analyze", str(spec), "--device", "h100", "--json")
    assert code == 0 and json.loads(out)["correct"] is True, (out, err)

    from perfmodel.api import RawModule

    table = np.arange(64, dtype=np.float32)
    want = table.copy()
    want[3:40] *= 2
    result = RawModule(code=POINTER).get_function("gather")(
        (1,), (64,), (np.uint32(3),), constants={"d_table": table, "d_n": np.array([40], np.uint32)},
        expected={"d_table": want})
    assert result.correct is True and np.array_equal(table, want)
