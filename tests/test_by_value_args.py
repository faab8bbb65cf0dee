"""By-value parameters that are not plain numbers: CUDA vector types (``float3 w``, ``int2 shift``) and enums, on
the command line, in a spec and from Python; and out-of-bounds messages that name the array the address was
computed from.

Every kernel result is checked against numpy computed here (float32 arithmetic written out), never against
perfmodel."""
from __future__ import annotations

import json

import numpy as np
import pytest

ROTATE = r"""
__global__ void rotate(const float3 w, float *out, const int2 shift, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = w.x + 2.0f * w.y + 4.0f * w.z + shift.x * i - shift.y;
}
"""

ENUM = r"""
typedef enum { MODE_ADD = 0, MODE_MUL = 1 } mode_t_;
__global__ void apply(mode_t_ mode, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = mode == MODE_MUL ? x[i] * 3.0f : x[i] + 3.0f;
}
"""

WALK = r"""
__global__ void walk(const long steps, const int *keys, const long *start, int *out)
{
    int t = threadIdx.x;
    for (long i = 0; i < steps; i++) {
        if (keys[start[blockIdx.x] * 64 + t] > 0)
            out[blockIdx.x * blockDim.x + t] += 1;
        __syncthreads();
    }
}
"""


def _expected_rotate(w, shift, n):
    i = np.arange(n)
    w = [np.float32(v) for v in w]
    base = np.float32(w[0] + np.float32(2) * w[1]) + np.float32(4) * w[2]     # left to right, in float32
    return (base + (shift[0] * i).astype(np.float32) - np.float32(shift[1])).astype(np.float32)


@pytest.fixture
def rotate_cu(tmp_path):
    path = tmp_path / "rot.cu"
    path.write_text(ROTATE)
    (tmp_path / "refs.py").write_text(
        "import numpy as np\n"
        "def rotate(w, shift, n, **_):\n"
        "    i = np.arange(1024)\n"
        "    y = np.float64(w['x']) + 2 * np.float64(w['y']) + 4 * np.float64(w['z']) + shift['x'] * i - shift['y']\n"
        "    return np.where(i < n, y, 0)\n")
    return path


BASE = ["--grid", "4", "--block", "256", "--device", "h100", "--arg", "n=1000", "--arg", "out=float32[1024]"]


def test_vector_arguments_on_the_command_line(cli, rotate_cu):
    code, out, err = cli("analyze", str(rotate_cu), *BASE, "--arg", "w=1.5,2,3", "--arg", "shift=(1<<2, 7)",
                         "--check", f"out={rotate_cu.parent / 'refs.py'}:rotate", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["correct"] is True and doc["checked_outputs"] == ["out"]


def test_vector_arguments_in_a_spec_and_the_saved_spec(cli, rotate_cu, tmp_path):
    saved = tmp_path / "saved.yaml"
    code, _, err = cli("analyze", str(rotate_cu), *BASE, "--arg", "w=1.5,2,3", "--arg", "shift=4,7",
                       "--save-spec", str(saved))
    assert code == 0, err
    text = saved.read_text()
    assert "dtype: float3" in text and "dtype: int2" in text
    # the saved spec, edited by hand as a user would: other values, checked against numpy
    edited = tmp_path / "edited.yaml"
    edited.write_text(text.replace("['1.5', '2', '3']", "[-1, 0.25, 8]").replace("['4', '7']", "[n, '-2']")
                      + f"outputs:\n- {{arg: out, reference: '{rotate_cu.parent / 'refs.py'}:rotate'}}\n")
    code, out, err = cli("analyze", str(edited), "--device", "h100", "--json")
    assert code == 0, err
    assert json.loads(out)["correct"] is True
    code, out, err = cli("kernels", "show", str(edited), "--json")
    assert code == 0, err
    args = {a["name"]: a for a in json.loads(out)["launch"]["args"]}
    assert args["w"]["dtype"] == "float3" and args["w"]["value"] == {"x": -1.0, "y": 0.25, "z": 8.0}
    assert args["shift"]["value"] == {"x": 1000, "y": -2}


@pytest.mark.parametrize("args, needle", [
    (["--arg", "w=1.5,2", "--arg", "shift=4,7"], "3 components (x, y, z); give one value each"),
    (["--arg", "w=1,2,3", "--arg", "shift=(1.5, 7)"], "component x of 'shift' (const int2) is an integer"),
    (["--arg", "shift=4,7"], "no value for parameter 'w' (const float3: --arg w=X,Y,Z"),
    (["--arg", "w=1,2,nope", "--arg", "shift=4,7"], "nope"),
])
def test_vector_argument_errors(cli, rotate_cu, args, needle):
    code, out, err = cli("analyze", str(rotate_cu), *BASE, *args)
    assert code == 2 and needle in err and "Traceback" not in err, err


@pytest.mark.parametrize("arg, needle", [
    ({"name": "w", "dtype": "float3", "value": 1.0}, "a float3 takes value: [x, y, z]"),
    ({"name": "w", "dtype": "float3", "value": [1, 2]}, "a float3 takes value: [x, y, z]"),
    ({"name": "n", "dtype": "int32", "value": [1, 2]}, "int32 takes one EXPR"),
    ({"name": "w", "dtype": "float3", "length": 4}, "an array of them is an array of its component type"),
])
def test_vector_values_in_a_spec_are_checked(cli, rotate_cu, tmp_path, arg, needle):
    import yaml

    spec = {"name": "r", "source": str(rotate_cu), "grid": [1], "block": [32], "args": [arg]}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, _, err = cli("analyze", str(path), "--device", "h100")
    assert code == 2 and needle in err and str(path) in err, err


def test_vector_arguments_from_python(rotate_cu):
    import perfmodel
    from perfmodel.errors import PerfmodelError

    kernel = perfmodel.RawKernel(rotate_cu.read_text(), "rotate")
    out = np.zeros(1024, np.float32)
    kernel((4,), (256,), ((1.5, 2, 3), out, (4, 7), 1000), device="h100")
    np.testing.assert_array_equal(out[:1000], _expected_rotate((1.5, 2, 3), (4, 7), 1000))
    w = np.zeros((), [("x", "<f4"), ("y", "<f4"), ("z", "<f4")])
    w["z"] = 0.5
    out[:] = 0
    kernel((4,), (256,), (w, out, np.array((1, 2), [("x", "<i4"), ("y", "<i4")]), 1000), device="h100")
    np.testing.assert_array_equal(out[:1000], _expected_rotate((0, 0, 0.5), (1, 2), 1000))
    for bad, needle in [((1, 2), "expected 3 numbers (x, y, z)"), ("abc", "expected 3 numbers"),
                        ((1, 2, "x"), "component z: expected a number"),
                        (np.zeros(2, [("x", "<f4")]), "expected one float3")]:
        with pytest.raises(PerfmodelError, match=needle.replace("(", r"\(").replace(")", r"\)")):
            kernel((4,), (256,), (bad, out, (4, 7), 1000), device="h100")
    with pytest.raises(PerfmodelError, match="component x: int32 scalar got non-integer 4.5"):
        kernel((4,), (256,), ((1, 2, 3), out, (4.5, 7), 1000), device="h100")


def test_an_enum_parameter_takes_an_integer(cli, tmp_path):
    path = tmp_path / "enum.cu"
    path.write_text(ENUM)
    code, out, _ = cli("kernels", "inspect", str(path), "--json")
    assert code == 0
    assert [(p["name"], p["dtype"]) for p in json.loads(out)[0]["params"]][0] == ("mode", "int32")
    import perfmodel

    kernel = perfmodel.RawKernel(ENUM, "apply")
    x = np.arange(64, dtype=np.float32)
    for mode, expected in ((0, x + np.float32(3)), (1, x * np.float32(3))):
        y = np.zeros(64, np.float32)
        kernel((1,), (64,), (mode, x, y, 64), device="h100")
        np.testing.assert_array_equal(y, expected)


def test_out_of_bounds_names_the_array_the_address_comes_from(cli, tmp_path):
    """keys[6400] of a 256-element keys lies past the later array out: the message names keys, element 6400
    (100 x 64 + thread 0), at the if on line 6 of WALK (which starts with a newline), not the array nearest below
    the address."""
    path = tmp_path / "walk.cu"
    path.write_text(WALK)
    code, out, err = cli("analyze", str(path), "--grid", "2", "--block", "32", "--device", "h100", "--arg",
                         "steps=4", "--arg", "keys=int32[256]", "--arg", "start=int64[2]:value=100", "--arg",
                         "out=int32[64]", "--json")
    assert code == 2
    error = json.loads(out)["error"]
    assert "out-of-bounds global load: keys[6400] but keys has 256 elements" in error["message"], error
    assert error["line"] == 6 and error["block"] in ([0, 0, 0], [1, 0, 0])


def test_a_fault_at_an_instruction_without_a_source_line_shows_the_instruction(tmp_path):
    """NVRTC ties code it moves (a load hoisted out of a loop) to `.loc 1 0 0`: the message then quotes the PTX
    instruction."""
    from perfmodel.errors import SimulationError
    from perfmodel.kernel import load_kernel
    from perfmodel.sim import simulate

    path = tmp_path / "walk.cu"
    path.write_text(WALK)
    program = load_kernel(path, entry="walk")
    loads = [ins for ins in program.module.functions[program.entry].instrs
             if ins.opcode == "ld" and "global" in ins.mods and ins.mods[-1] == "u32"]
    assert loads
    for ins in loads:
        ins.line = 0
    out = np.zeros(64, np.int32)
    with pytest.raises(SimulationError) as info:
        simulate(program, (2,), (32,), [4, np.zeros(256, np.int32), np.full(2, 100, np.int64), out])
    text = " ".join(loads[0].text.split())
    assert f"in `{text}`, which the compiler tied to no source line" in str(info.value)
    assert "keys[6400]" in str(info.value) and info.value.location.line is None


def test_grid_with_a_shift(cli):
    from pathlib import Path

    saxpy = Path(__file__).resolve().parents[1] / "examples" / "saxpy.cu"
    code, out, err = cli("analyze", str(saxpy), "--grid", "1<<3,1", "--block", "128", "-D", "n=1024", "--arg",
                         "a=2", "--arg", "x=float32[n]", "--arg", "y=float32[n]", "--device", "h100", "--json")
    assert code == 0, err
    assert json.loads(out)["launch"]["grid"] == [8, 1, 1]


def test_kernels_init_gives_vector_parameters_one_value_per_component(cli, rotate_cu, tmp_path):
    out = tmp_path / "start.yaml"
    code, _, err = cli("kernels", "init", str(rotate_cu), "--out", str(out))
    assert code == 0, err
    text = out.read_text()
    assert "  - {name: w, dtype: float3, value: [1.0, 1.0, 1.0]}   # const float3: set me" in text
    assert "  - {name: shift, dtype: int2, value: [N, N]}   # const int2: set me" in text
    code, _, err = cli("analyze", str(out), "--device", "h100", "-D", "N=4096")
    assert code == 0, err
