"""Structs passed by value (``__global__ void k(Params p)``): their fields' layout (from the declaration and
NVRTC's offsetof/sizeof/alignof), and the three ways to give one - the command line, a spec, Python.

Layouts are checked against offsets derived by hand from the C++ layout rules (each member at the next offset its
alignment allows, the size rounded up to the largest alignment); kernel results against numpy computed here."""
from __future__ import annotations

import json

import numpy as np
import pytest

# a macro named like a template parameter or a probe helper (N, P, K, T) must not reach the probe
PARAMS_DECLS = r"""
struct Inner { float a; double b[2]; };
struct Params {
  unsigned int n;
  float scale;
  float2 shift;
  Inner in[2];
  float* out;
  const int* idx;
};
"""
PARAMS = "#define N 1024\n#define P double\n" + PARAMS_DECLS + r"""
__global__ void apply(Params p, float* y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) {
    float v = p.scale * i + p.shift.x - p.shift.y + p.in[1].a + (float)p.in[0].b[1];
    p.out[i] = v * p.idx[i];
    y[i] = v;
  }
}
"""

# Params by hand: n 0..3, scale 4..7, shift (float2, align 8) 8..15, in (Inner: a 0..3, b at 8, 8-aligned,
# 24 bytes) 16..63, out 64..71, idx 72..79; 80 bytes
LAYOUT = [("n", "uint32", 0, (), ()), ("scale", "float32", 4, (), ()), ("shift", "float32", 8, (2,), (4,)),
          ("in.a", "float32", 16, (2,), (24,)), ("in.b", "float64", 24, (2, 2), (24, 8)),
          ("out", "uint64", 64, (), ()), ("idx", "uint64", 72, (), ())]

OTHERS_DECLS = r"""
template <class T, int K> struct Pair { T first[K]; char tag; };       // commas in the type's name
typedef struct { short s; long long w; bool on; } anon_t;              // typedef'd, anonymous
class Hidden { public: __device__ int get() const { return d * m; } Hidden& operator=(int x) { d = x; return *this; }
               private: int d; char m; };                              // private members, operator=
namespace ns { struct Q { int a; unsigned char c[3]; }; }
struct Base { int a; };
template <class T> struct TB { T x; };
struct Derived : public Base, TB<double> { int c; };                   // bases first, in order
struct PB { int a; char c; };                                           // a POD base: its tail padding is kept
struct PD : PB { char d; };
struct NB { __device__ NB() {} int a; char c; };                        // not POD: PD's d goes in its tail padding
struct ND : NB { char d; };
"""
OTHERS = OTHERS_DECLS + r"""
union U { int i; float f; };
struct Bits { int a : 3; int b; };
struct Cond {
#if 1
  int a;
#else
  double a;
#endif
  int b;
};
struct Virt { virtual __device__ int f() { return 1; } int a; };
__global__ void k1(Pair<float, 3> p, anon_t t, Hidden h, float* out) { out[0] = p.first[2] + p.tag + t.s + t.w + t.on + h.get(); }
namespace ns { __global__ void k2(Q q, float* out) { out[0] = q.a + q.c[2]; } }
__global__ void k4(Derived d, PD p, ND n, float* out) { out[0] = d.a + d.x + d.c + p.d + n.d; }
__global__ void k3(U u, Bits b, Cond c, Virt v, float* out) { out[0] = u.f + b.b + c.b + v.a; }
"""


@pytest.fixture
def params_cu(tmp_path):
    path = tmp_path / "st.cu"
    path.write_text(PARAMS)
    (tmp_path / "refs.py").write_text(
        "import numpy as np\n"
        "def out(p, **_):\n"
        "    i = np.arange(256)\n"
        "    v = (np.float32(p['scale']) * i.astype(np.float32) + np.float32(p['shift'][0]) - np.float32(p['shift'][1])\n"
        "         + np.float32(p['in.a'][1]) + np.float32(p['in.b'][1])).astype(np.float32)\n"
        "    return np.where(i < p['n'], v * p['idx'], 0)\n")
    return path


def _leaves(layout):
    return [(f.path, f.dtype, f.offset, f.shape, f.strides) for f in layout.leaves]


def test_the_layout_is_the_hand_derived_one(params_cu):
    from perfmodel.kernel import load_kernel

    program = load_kernel(params_cu, entry="apply")
    layout = program.params[0].layout
    assert layout.error is None and layout.size == 80
    assert _leaves(layout) == LAYOUT
    assert [(f.path, f.pointee) for f in layout.leaves if f.pointer] == [("out", "float32"), ("idx", "int32")]
    assert program.params[0].size == 80            # the PTX .param's bytes agree
    assert program.params[1].layout is None        # a pointer


def test_other_declarations_and_the_ones_refused(tmp_path):
    from perfmodel.kernel import load_kernel

    path = tmp_path / "others.cu"
    path.write_text(OTHERS)
    p, t, h, _ = load_kernel(path, entry="k1").params
    # Pair<float, 3>: first 0..11, tag 12, size 16 (align 4); anon_t: s 0, w 8, on 16, size 24; Hidden: d 0, m 4, 8
    assert _leaves(p.layout) == [("first", "float32", 0, (3,), (4,)), ("tag", "int8", 12, (), ())]
    assert p.layout.size == 16
    assert _leaves(t.layout) == [("s", "int16", 0, (), ()), ("w", "int64", 8, (), ()), ("on", "bool", 16, (), ())]
    assert t.layout.size == 24
    assert _leaves(h.layout) == [("d", "int32", 0, (), ()), ("m", "int8", 4, (), ())]
    q = load_kernel(path, entry="ns::k2").params[0]
    assert _leaves(q.layout) == [("a", "int32", 0, (), ()), ("c", "uint8", 4, (3,), (1,))]
    d, pd, nd, _ = load_kernel(path, entry="k4").params
    # Derived: Base::a 0, TB<double>::x 8, c 16, size 24; PD: a 0, c 4, d 8 (after PB's 8 bytes), 12;
    # ND: a 0, c 4, d 5 (in NB's tail padding: NB is not POD for the layout), 8
    assert _leaves(d.layout) == [("a", "int32", 0, (), ()), ("x", "float64", 8, (), ()), ("c", "int32", 16, (), ())]
    assert [(f.path, f.offset) for f in pd.layout.leaves] == [("a", 0), ("c", 4), ("d", 8)] and pd.layout.size == 12
    assert [(f.path, f.offset) for f in nd.layout.leaves] == [("a", 0), ("c", 4), ("d", 5)] and nd.layout.size == 8
    u, b, c, v, _ = load_kernel(path, entry="k3").params
    assert "union" in u.layout.error
    assert "bit-field" in b.layout.error
    # both branches of the #if are seen: the second a is at byte 0 again, where 4 was expected
    assert "byte 0 of Cond are not the fields perfmodel found in its declaration before a" in c.layout.error
    # the virtual function table's pointer holds bytes 0 to 7
    assert "bytes 0 to 7 of Virt are not the fields" in v.layout.error


def test_a_struct_on_the_command_line_gives_numpys_answer(cli, params_cu):
    fields = "{n=200, scale=0.5, shift=(1, 2), in.a=(0, 3), in.b=(0, 0.25, 0, 0), out=float32[256], " \
             "idx=int32[256]:arange}"
    code, out, err = cli("analyze", str(params_cu), "--grid", "1", "--block", "256", "--device", "h100", "--arg",
                         "y=float32[256]", "--arg", f"p={fields}", "--check",
                         f"p.out={params_cu.parent / 'refs.py'}:out", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["correct"] is True and doc["checked_outputs"] == ["p.out"]


def test_a_struct_in_a_saved_and_edited_spec(cli, params_cu, tmp_path):
    saved = tmp_path / "saved.yaml"
    code, _, err = cli("analyze", str(params_cu), "--grid", "1", "--block", "256", "--device", "h100", "--arg",
                       "y=float32[256]", "--arg", "p={n=10, scale=1, shift=0, in.a=0, in.b=0, out=float32[256], "
                       "idx=int32[256]:arange}", "--save-spec", str(saved))
    assert code == 0, err
    text = saved.read_text()
    assert "fields:" in text and "out: {dtype: float32, length: '256', init: zeros}" in text
    edited = tmp_path / "edited.yaml"
    edited.write_text(text.replace("n: '10'", "n: 256").replace("scale: '1'", "scale: -0.75")
                      .replace("in.a: '0'", "in.a: [5, 0.125]").replace("shift: '0'", "shift: [1, 2]")
                      .replace("in.b: '0'", "in.b: [0, 8, 0, 0]")
                      + f"outputs:\n- {{arg: p.out, reference: '{params_cu.parent / 'refs.py'}:out'}}\n")
    code, out, err = cli("analyze", str(edited), "--device", "h100", "--json")
    assert code == 0, err
    assert json.loads(out)["correct"] is True
    code, out, err = cli("kernels", "show", str(edited), "--json")
    assert code == 0, err
    args = {a["name"]: a for a in json.loads(out)["launch"]["args"]}
    assert args["p"]["kind"] == "struct" and args["p"]["fields"]["in.a"] == [5, 0.125]
    assert args["p"]["fields"]["out"] == {"dtype": "float32", "length": 256}


def test_a_pointer_field_given_null(cli, tmp_path):
    """XSBench's Inputs holds a host `char *HM` its kernels never read: `HM=null` was refused ("give it an
    array") though `--arg p=null` works for a pointer parameter. NULL is address 0: the kernel sees `in.HM == 0`
    (each output element 3 i + 1, by hand), and a saved spec runs the same."""
    (tmp_path / "s.cu").write_text(
        "struct In { int n; char *HM; float scale; };\n"
        "__global__ void k(In in, float *out)\n"
        "{ int i = threadIdx.x; if (i < in.n) out[i] = in.scale * i + (in.HM == 0 ? 1.0f : 0.0f); }\n")
    np.save(tmp_path / "want.npy", (3.0 * np.arange(32) + 1.0).astype(np.float32))
    args = ("--grid", "1", "--block", "32", "--device", "h100", "--arg", "in={n=32, HM=null, scale=3}", "--arg",
            "out=float32[32]", "--check", f"out={tmp_path / 'want.npy'}", "--json")
    code, out, err = cli("analyze", str(tmp_path / "s.cu"), *args, "--save-spec", str(tmp_path / "s.yaml"))
    assert code == 0 and json.loads(out)["correct"] is True, err
    code, out, err = cli("analyze", str(tmp_path / "s.yaml"), "--device", "h100", "--json")
    assert code == 0 and json.loads(out)["correct"] is True, err


def test_a_struct_from_python_writes_its_pointer_fields_back(params_cu):
    import perfmodel

    kernel = perfmodel.RawKernel(params_cu.read_text(), "apply")
    out, y = np.zeros(256, np.float32), np.zeros(256, np.float32)
    idx = np.arange(256, dtype=np.int32)[::-1].copy()
    p = {"n": 100, "scale": 0.5, "shift": (1, 2), "in.a": [0, 3], "in.b": np.array([0, 0.25, 0, 0]), "out": out,
         "idx": idx}
    kernel((1,), (256,), (p, y), device="h100")
    i = np.arange(100)
    v = (np.float32(0.5) * i.astype(np.float32) + np.float32(1) - np.float32(2) + np.float32(3)
         + np.float32(0.25)).astype(np.float32)
    np.testing.assert_array_equal(y[:100], v)
    np.testing.assert_array_equal(out[:100], v * idx[:100].astype(np.float32))
    assert not out[100:].any()


@pytest.mark.parametrize("fields, needle", [
    ("{n=1, scale=1, shift=(1,2), in.a=0, in.b=0, out=float32[256], idx=int32[256], widht=3}",
     "Params has no field 'widht'; its fields are n (uint32), scale (float32)"),
    ("{n=1, scale=1, in.a=0, in.b=0, out=float32[256], idx=int32[256]}", "no value for field shift of Params"),
    ("{n=1.5, scale=1, shift=0, in.a=0, in.b=0, out=float32[256], idx=int32[256]}",
     "n is unsigned int, an integer, but its value is 1.5"),
    ("{n=-1, scale=1, shift=0, in.a=0, in.b=0, out=float32[256], idx=int32[256]}", "-1 does not fit"),
    ("{n=1, scale=1, shift=(1,2,3), in.a=0, in.b=0, out=float32[256], idx=int32[256]}",
     "shift is float2, 2 numbers; give one (for every element) or 2"),
    ("{n=1, scale=1, shift=0, in.a=0, in.b=0, out=3, idx=int32[256]}", "out is a pointer (float*); give it an array"),
    ("{n=1, scale=1, shift=0, in.a=0, in.b=0, out=int32[256], idx=int32[256]}",
     "field out is float*, so its elements are float32, not int32"),
    ("{n=1, scale=float32[2], shift=0, in.a=0, in.b=0, out=float32[256], idx=int32[256]}",
     "scale is float, not a pointer"),
    ("n=3", "a struct passed by value; give its fields in braces"),
])
def test_struct_argument_errors(cli, params_cu, fields, needle):
    code, out, err = cli("analyze", str(params_cu), "--grid", "1", "--block", "256", "--device", "h100", "--arg",
                         "y=float32[256]", "--arg", f"p={fields}")
    assert code == 2 and needle in err and "Traceback" not in err, err


def test_a_missing_struct_shows_how_to_give_it(cli, params_cu):
    code, _, err = cli("analyze", str(params_cu), "--grid", "1", "--block", "256", "--device", "h100", "--arg",
                       "y=float32[256]")
    assert code == 2
    assert "'p' (Params, a struct: --arg 'p={n=1, scale=1, shift=(1, 1), in.a=(1, 1), in.b=(1, 1, 1, ...), " \
           "out=float32[N]:random, idx=int32[N]:random}')" in err, err


def test_out_of_bounds_through_a_pointer_field_names_it(cli, params_cu):
    """out holds 128 floats and the threads 128-255 store past it (n = 256): into idx, which the heap places next;
    the message names p.out, the field the address was loaded from, element 128 (thread 128)."""
    code, out, _ = cli("analyze", str(params_cu), "--grid", "1", "--block", "256", "--device", "h100", "--arg",
                       "y=float32[256]", "--arg", "p={n=256, scale=1, shift=0, in.a=0, in.b=0, out=float32[128], "
                       "idx=int32[256]}", "--json")
    assert code == 2
    error = json.loads(out)["error"]
    assert "out-of-bounds global store: p.out[128] but p.out has 128 elements" in error["message"], error


def test_python_struct_errors(params_cu):
    import perfmodel
    from perfmodel.errors import PerfmodelError

    kernel = perfmodel.RawKernel(params_cu.read_text(), "apply")
    y = np.zeros(256, np.float32)
    good = {"n": 1, "scale": 1, "shift": 0, "in.a": 0, "in.b": 0, "out": np.zeros(4, np.float32),
            "idx": np.zeros(4, np.int32)}
    for bad, needle in [(3, "a struct passed by value takes a dict of its fields"),
                        ({**good, "idx": np.zeros(4, np.int64)}, "field idx points to int32; the array holds int64"),
                        ({**good, "idx": 5}, "field idx is a pointer"),
                        ({**good, "in.b": [1, 2, 3]}, "field in.b (double[2]) holds 4 numbers; 3 given"),
                        ({**good, "n": 2.5}, "field n is uint32, an integer")]:
        with pytest.raises(PerfmodelError, match=needle.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                           .replace("]", r"\]")):
            kernel((1,), (32,), (bad, y), device="h100")


def test_kernels_inspect_lists_the_fields(cli, params_cu):
    code, out, _ = cli("kernels", "inspect", str(params_cu), "--json")
    assert code == 0
    struct = json.loads(out)[0]["params"][0]["struct"]
    assert struct["size"] == 80
    assert [(f["name"], f["offset"], f["count"]) for f in struct["fields"]] == \
        [("n", 0, 1), ("scale", 4, 1), ("shift", 8, 2), ("in.a", 16, 2), ("in.b", 24, 4), ("out", 64, 1),
         ("idx", 72, 1)]


AXPB = r"""
struct Inner { float a; float b; };
typedef struct Inner Inner_t;                     // a member's type through a typedef
struct Params { int n; Inner_t w; float* out; const float* x; };
__global__ void axpb(Params p)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) p.out[i] = p.w.a * p.x[i] + p.w.b;
}
"""


@pytest.mark.parametrize("sample", [[], ["--sample", "8"]])
def test_a_struct_with_an_output_field_in_exact_and_sampled_runs(cli, tmp_path, sample):
    """The sampled run checks the elements its blocks wrote; both against an fma in numpy: the float64 product of
    two float32 values is exact, and the sum rounded to float64 and then float32 equals the fma's single rounding
    except in double-rounding ties (none among these seeded inputs, so the check allows no error)."""
    path = tmp_path / "axpb.cu"
    path.write_text(AXPB)
    (tmp_path / "ref.py").write_text(
        "import numpy as np\n"
        "def out(p):\n"
        "    exact = np.float64(np.float32(p['w.a'])) * p['x'].astype(np.float64) + np.float64(np.float32(p['w.b']))\n"
        "    return exact.astype(np.float32)\n")
    code, out, err = cli("analyze", str(path), "--grid", "256", "--block", "256", "--device", "h100", "--arg",
                         "p={n=65536, w.a=1.5, w.b=-2, out=float32[65536], x=float32[65536]:random}", "--check",
                         f"p.out={tmp_path / 'ref.py'}:out", "--rtol", "0", "--atol", "0", *sample, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["correct"] is True, doc["correct_detail"]
    assert doc["sampled"] is bool(sample)


def test_the_layouts_agree_with_the_host_compiler(tmp_path):
    """What the host passes is laid out by the host compiler (GCC under nvcc on Linux): a C++ program compiled
    with g++ prints offsetof and sizeof of the same declarations (float2 as vector_types.h declares it, 8-byte
    aligned), and every leaf's offset, stride and the struct's size must be those."""
    import shutil
    import subprocess

    from perfmodel.kernel import load_kernel

    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++ on this machine")
    kernels = tmp_path / "k.cu"
    kernels.write_text(PARAMS + OTHERS)
    structs = {"Params": load_kernel(kernels, entry="apply").params[0].layout}
    p, t, h, _ = load_kernel(kernels, entry="k1").params
    structs.update({"Pair<float, 3>": p.layout, "anon_t": t.layout, "Hidden": h.layout,
                    "ns::Q": load_kernel(kernels, entry="ns::k2").params[0].layout})
    d, pd, nd, _ = load_kernel(kernels, entry="k4").params
    structs.update({"Derived": d.layout, "PD": pd.layout, "ND": nd.layout})
    probes, aliases = [], []
    for k, (name, layout) in enumerate(structs.items()):
        aliases.append(f"typedef {name} T{k};")           # offsetof is a macro: no commas in its type
        probes.append(f'printf("{name} size %zu\\n", sizeof(T{k}));')
        for leaf in layout.leaves:
            first = {"in.a": "in[0].a", "in.b": "in[0].b"}.get(leaf.path, leaf.path)   # Inner in[2]
            probes.append(f'printf("{name} {leaf.path} %zu\\n", offsetof(T{k}, {first}));')
            if first != leaf.path:                        # an array of structs: the element stride
                probes.append(f'printf("{name} {leaf.path} stride %zu\\n", offsetof(T{k}, '
                              f'{first.replace("[0]", "[1]")}) - offsetof(T{k}, {first}));')
    program = ("#include <cstddef>\n#include <cstdio>\n#define private public\n#define __device__\n"
               "struct alignas(8) float2 { float x, y; };\n" + PARAMS_DECLS + OTHERS_DECLS + "\n".join(aliases)
               + "\nint main() {\n" + "\n".join(probes) + "\n}\n")
    source = tmp_path / "host.cpp"
    source.write_text(program)
    build = subprocess.run([gxx, "-std=c++17", "-w", str(source), "-o", str(tmp_path / "host")], capture_output=True,
                           text=True)
    assert build.returncode == 0, build.stderr + program
    printed = dict(line.rsplit(" ", 1) for line in subprocess.run(
        [str(tmp_path / "host")], capture_output=True, text=True, check=True).stdout.splitlines())
    for name, layout in structs.items():
        assert int(printed[f"{name} size"]) == layout.size, name
        for leaf in layout.leaves:
            assert int(printed[f"{name} {leaf.path}"]) == leaf.offset, (name, leaf.path)
            if f"{name} {leaf.path} stride" in printed:
                assert int(printed[f"{name} {leaf.path} stride"]) == leaf.strides[0], (name, leaf.path)


TABLE = r"""
struct Table { int n; int v[300]; };
__device__ int find(int idx, const Table &t)
{
  int k = 0;
  for (int j = 0; j < 3; j++) if (t.v[k] <= idx) k++;
  return k;
}
__global__ void look(int* out, const Table t)
{
  int i = threadIdx.x;
  out[i] = t.v[find(i, t) + t.n];
}
"""


def test_a_read_past_a_struct_parameter_names_its_last_field(cli, tmp_path):
    """NVRTC reads a large struct parameter in place (ld.param through a register): with every v 0, find returns
    3 and t.v[3 + 298] = v[301] is byte 8 (out, 8 bytes) + 4 (n) + 301 x 4 = 1216 of the parameters, which end
    at 8 + 4 + 300 x 4 = 1212."""
    path = tmp_path / "look.cu"
    path.write_text(TABLE)
    code, out, _ = cli("analyze", str(path), "--grid", "1", "--block", "32", "--device", "h100", "--arg",
                       "t={n=298, v=0}", "--arg", "out=int32[32]", "--json")
    assert code == 2
    message = json.loads(out)["error"]["message"]
    assert "kernel-parameter load at offset 1216" in message and "which end at byte 1212: the last is t (const " \
        "Table, bytes 8 to 1211), whose last field is v (int[300], from byte 12)" in message, message


@pytest.mark.parametrize("arg, needle", [
    ({"name": "p", "dtype": "float32", "fields": {"n": 1}}, "a struct arg takes fields: only (its layout comes from "
                                                            "the compile), not dtype"),
    ({"name": "p", "fields": {"in b": 1}}, "field 'in b': expected a field name"),
    ({"name": "p", "fields": {"out": {"dtype": "float32"}}}, "a pointer field's array needs length"),
    ({"name": "p", "fields": {"out": {"dtype": "float33", "length": 4}}}, "unknown dtype 'float33'"),
    ({"name": "p", "fields": {"n": "m + 1"}}, "unknown name(s) m"),
])
def test_struct_args_in_a_spec_are_checked(cli, params_cu, tmp_path, arg, needle):
    import yaml

    spec = {"name": "s", "source": str(params_cu), "entry": "apply", "grid": [1], "block": [32], "args": [arg]}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, _, err = cli("analyze", str(path), "--device", "h100")
    assert code == 2 and needle in err and str(path) in err, err


PITCHED = r"""
#include <cuda_runtime.h>
__global__ void fill(cudaPitchedPtr p, float v)
{
  float* row = (float*)((char*)p.ptr + blockIdx.x * p.pitch);
  if (threadIdx.x < p.xsize / sizeof(float)) row[threadIdx.x] = v + blockIdx.x;
}
"""


def test_a_struct_of_the_cuda_headers(tmp_path):
    """cudaPitchedPtr (driver_types.h: void* ptr, size_t pitch, xsize, ysize) is found in the CUDA headers; its
    void* field takes an array of any dtype. Rows of 128 floats (pitch 512 bytes), 100 written per row."""
    import perfmodel

    kernel = perfmodel.RawKernel(PITCHED, "fill")
    assert [(f.path, f.dtype, f.offset) for f in kernel.params[0].layout.leaves] == \
        [("ptr", "uint64", 0), ("pitch", "uint64", 8), ("xsize", "uint64", 16), ("ysize", "uint64", 24)]
    data = np.zeros((6, 128), np.float32)
    kernel((6,), (128,), ({"ptr": data, "pitch": 512, "xsize": 400, "ysize": 6}, 2.5), device="h100")
    expected = np.zeros((6, 128), np.float32)
    expected[:, :100] = 2.5 + np.arange(6)[:, None]
    np.testing.assert_array_equal(data, expected)


def test_kernels_init_writes_every_field_of_a_struct(cli, params_cu, tmp_path):
    """The starter spec sets every field (a const pointee random, the others zeros and listed as outputs) and
    runs as written."""
    out = tmp_path / "start.yaml"
    code, _, err = cli("kernels", "init", str(params_cu), "--out", str(out))
    assert code == 0, err
    text = out.read_text()
    # (the file #defines N: the size param is NELEMS, leaving the file's N to the compile)
    assert "  - name: p   # Params, a struct: set every field\n    fields:\n      n: NELEMS   # unsigned int\n" in text
    assert "      in.b: [1.0, 1.0, 1.0, 1.0]   # double[2]: 4 values, or one for every element\n" in text
    assert "      idx: {dtype: int32, length: NELEMS, init: {random: {seed: 1, low: 0, high: 100}}}   # const int*" \
        in text
    assert '#   - {arg: p.out, reference: "my_reference.py:apply"' in text
    code, _, err = cli("analyze", str(out), "--device", "h100", "-D", "NELEMS=4096")
    assert code == 0, err


ACCESSOR = r"""
template <typename T> struct RestrictPtrTraits { typedef T* __restrict__ PtrType; };
template <typename T, int N, template <typename> class PtrTraits, typename index_t>
class AccessorBase {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  __device__ T& at(index_t i) { return data_[i * strides_[0]]; }
  __device__ index_t size(int d) const { return sizes_[d]; }
 protected:
  PtrType data_;
  index_t sizes_[N];
  index_t strides_[N];
};
template <typename T, int N, template <typename> class PtrTraits, typename index_t>
class Accessor : public AccessorBase<T, N, PtrTraits, index_t> {};
template <typename T, int N, template <typename> class PtrTraits>
using Accessor64 = Accessor<T, N, PtrTraits, long long>;
__global__ void scale(Accessor64<float, 1, RestrictPtrTraits> a, float s)
{
  long long i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < a.size(0)) a.at(i) *= s;
}
"""


def test_a_tensor_accessor_through_an_alias_template_a_base_class_and_a_restrict_pointer(tmp_path):
    """PyTorch's PackedTensorAccessor shape: the type is an alias template of a class whose fields (protected) are
    in its base, the pointer a __restrict__ typedef. 32 elements at stride 2 are scaled by 3."""
    import perfmodel

    kernel = perfmodel.RawKernel(ACCESSOR, "scale")
    layout = kernel.params[0].layout
    assert [(f.path, f.dtype, f.offset, f.pointer) for f in layout.leaves] == \
        [("data_", "uint64", 0, True), ("sizes_", "int64", 8, False), ("strides_", "int64", 16, False)]
    data = np.arange(64, dtype=np.float32)
    kernel((1,), (64,), ({"data_": data, "sizes_": 32, "strides_": 2}, 3.0), device="h100")
    expected = np.arange(64, dtype=np.float32)
    expected[0:64:2] *= np.float32(3)
    np.testing.assert_array_equal(data, expected)


def test_an_array_of_pointers_is_refused(tmp_path):
    from perfmodel.kernel import load_kernel

    path = tmp_path / "ptrs.cu"
    path.write_text("struct Two { float* p[2]; int n; };\n"
                    "__global__ void k(Two t) { t.p[threadIdx.x & 1][0] = t.n; }\n")
    layout = load_kernel(path, entry="k").params[0].layout
    assert layout.error == "its field p is an array of pointers (not supported)"


GRID_CONSTANT_SUM = r"""
#define N 4096
struct Big { int v[N]; };
__global__ void sum_params(__grid_constant__ const Big p, int* out)
{
  int t = 0;
  for (int i = 0; i < N; ++i)
    t += p.v[i];
  *out = t;
}
"""


def test_a_loop_over_a_struct_that_ptxas_unrolls_completely_counts_its_sass_once(cli, tmp_path):
    """A loop over a 4,096-int ``__grid_constant__`` struct: NVVM unrolls it 32x in PTX and ptxas completely, into
    straight-line constant-bank loads (LDC.64, two ints each) and three-input adds (IADD3, two ints each), so the
    one thread issues about one SASS instruction per int: 4,096 and a few. The block reads no global or shared
    memory, so the unrolling shows only in its parameter loads' bytes; counting each PTX run with the whole line's
    SASS had given about 128 times that (the 128 PTX iterations each weighed like the whole unrolled loop). The sum
    is checked against numpy."""
    path = tmp_path / "big.cu"
    path.write_text(GRID_CONSTANT_SUM)
    (tmp_path / "ref.py").write_text("import numpy as np\ndef out(p):\n    return np.array([4096 * 3], np.int32)\n")
    code, out, err = cli("analyze", str(path), "--grid", "1", "--block", "1", "--device", "h100", "--arg",
                         "p={v=3}", "--arg", "out=int32[1]:zeros", "--check", f"out={tmp_path / 'ref.py'}:out",
                         "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["correct"] is True, doc["correct_detail"]
    assert 4096 <= doc["counts"]["warp_instructions"] <= 4096 * 1.01


def test_a_field_of_a_scoped_enum_type_and_enumerators_as_field_values(cli, tmp_path):
    """TeaLeaf's `struct State { bool defined; double density; Geometry geometry; }` with `enum class Geometry`: the
    scan read `enum class Geometry {...}` as a class and probed `.RECTANGULAR` ('expression must have class type');
    it is a number (4 bytes at offset 16, C++'s int-sized scoped enum). Its field takes an enumerator, scoped or
    not, by its value: CIRCULAR is 1 (numpy: density where geometry is CIRCULAR, -1 elsewhere)."""
    (tmp_path / "s.cu").write_text(
        "enum class Geometry { RECTANGULAR, CIRCULAR, POINT };\n"
        "struct State { bool defined; double density; Geometry geometry; };\n"
        "__global__ void k(int n, double *out, State s) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) out[i] = (s.geometry == Geometry::CIRCULAR) ? s.density : -1.0;\n}\n")
    # (the reference reads the field as the number it is: an enumerator on its own reached it as a list, [1])
    (tmp_path / "ref.py").write_text("import numpy as np\ndef hit(s, **kw):\n"
                                     "    return np.full(32, 2.5 if s['geometry'] == 1 else 0.0)\n"
                                     "def miss(s, **kw):\n    return np.full(32, -1.0 if s['geometry'] != 1 else 0.0)\n")
    from perfmodel.kernel import load_kernel

    layout = load_kernel(tmp_path / "s.cu", entry="k").params[2].layout
    assert layout.error is None and [(f.path, f.offset) for f in layout.leaves] == [
        ("defined", 0), ("density", 8), ("geometry", 16)]
    for value, ref in (("1", "hit"), ("Geometry::CIRCULAR", "hit"), ("POINT", "miss"), ("Geometry::POINT", "miss")):
        code, out, err = cli("analyze", str(tmp_path / "s.cu"), "--grid", "1", "--block", "32", "--arg", "n=32",
                             "--arg", "out=float64[32]", "--arg", f"s={{defined=1,density=2.5,geometry={value}}}",
                             "--device", "h100", "--check", f"out={tmp_path / 'ref.py'}:{ref}", "--json")
        assert code == 0, err
        assert json.loads(out)["correct"] is True, value


def test_a_field_typed_with_an_alias_of_a_cuda_vector_type(cli, tmp_path):
    """HOOMD's BoxDim: `typedef double3 Scalar3;` then `Scalar3 m_lo;` - the field was 'Scalar3 perfmodel cannot lay
    out', which refused every kernel taking the box (neighbour lists, pair potentials, integrators). An alias of a
    vector type is that vector type; `using` alike. By hand: L = (4, 5, 6), m_lo.x = 1, m_xy = 0.5,
    m_periodic.z = 1: 4 + 50 + 600 + 1 + 0.5 + 1 = 656.5."""
    (tmp_path / "b.cu").write_text(
        "typedef double Scalar;\ntypedef double3 Scalar3;\nusing Byte3 = uchar3;\nstruct BoxDim\n{\n"
        "    __host__ __device__ Scalar3 getL() const { return m_L; }\n    Scalar3 m_lo;\n    Scalar3 m_L;\n"
        "    Scalar m_xy;\n    Byte3 m_periodic;\n};\n"
        "__global__ void box_kernel(double* out, BoxDim box)\n{\n    Scalar3 L = box.getL();\n"
        "    out[threadIdx.x] = L.x + 10 * L.y + 100 * L.z + box.m_lo.x + box.m_xy + box.m_periodic.z;\n}\n")
    (tmp_path / "ref.py").write_text("import numpy as np\ndef out(**kw):\n    return np.full(32, 656.5)\n")
    code, out, err = cli("analyze", str(tmp_path / "b.cu"), "--kernel", "box_kernel", "--grid", "1", "--block", "32",
                         "--arg", "out=float64[32]", "--arg",
                         "box={m_lo=(1,2,3), m_L=(4,5,6), m_xy=0.5, m_periodic=(1,1,1)}", "--device", "h100",
                         "--check", f"out={tmp_path / 'ref.py'}:out", "--json")
    assert code == 0, err
    assert json.loads(out)["correct"] is True
