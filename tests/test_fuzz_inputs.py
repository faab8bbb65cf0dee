"""Property-based fuzzing of every user input (issue 16): device profiles, kernel specs, budgets, baselines,
hostile files, output paths and command-line arguments.

Whatever the input, the CLI must answer with exit code 0, 1 or 2 - never 3 (an internal error) - print no
traceback, and under ``--json`` print exactly one JSON document on stdout; an error there is
``{"error": {"kind", "message", "file", "line"}}``.

Seeded (``derandomize=True``) and small enough for CI (well under 30 s on 2 cores); ``bench/fuzz_inputs.py``
is the long run (subprocesses, timeouts, a memory limit). Mutations of the CUDA *source* are left out for now:
the simulation engine is being rewritten (runaway loops, memory estimates before allocation).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
DEVICE_TEXT = (REPO / "devices" / "g80.yaml").read_text()
SPEC_TEXT = (REPO / "kernels_spec" / "vec_add.yaml").read_text().replace("default: 10000", "default: 512")

#: PERFMODEL_FUZZ_SCALE=10 runs ten times as many examples (a local deep run; CI runs 1).
SCALE = float(os.environ.get("PERFMODEL_FUZZ_SCALE", "1"))


def examples(n: int) -> int:
    return max(1, int(n * SCALE))


FUZZ = settings(derandomize=True, deadline=None, database=None, max_examples=examples(25),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])


def invoke(*args: str) -> tuple[int, str, str]:
    """``perfmodel ARGS`` in-process: (exit code, stdout, stderr)."""
    from perfmodel.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["perfmodel", *map(str, args)]
    code: int | None = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.argv = argv
    return int(code or 0), out.getvalue(), err.getvalue()


def assert_clean(args: tuple[str, ...], code: int, out: str, err: str) -> None:
    text = out + err
    assert code in (0, 1, 2), f"perfmodel {' '.join(map(str, args))[:300]} -> exit {code}\n{text[-2000:]}"
    assert "Traceback (most recent call last)" not in text, text[-2000:]
    if "--json" in args and (code == 2 or out.strip()):
        try:
            document = json.loads(out)
        except ValueError:
            pytest.fail(f"--json printed no single JSON document (exit {code}): {out[:500]!r} / {err[:500]!r}")
        if code == 2 and "error" in document:
            error = document["error"]
            assert set(error) >= {"kind", "message", "file", "line"}, error
            assert isinstance(error["message"], str) and error["message"]
            assert error["line"] is None or isinstance(error["line"], int)


def run(*args: str) -> tuple[int, str, str]:
    code, out, err = invoke(*args)
    assert_clean(args, code, out, err)
    return code, out, err


# ---------------------------------------------------------------------------------------------------------
# Values and text mutations

weird_scalars = st.sampled_from([
    "0", "-1", "-0.5", "1e400", ".nan", ".inf", "-.inf", "''", "\"x\"", "null", "true", "[]", "{}", "[1, 2]",
    "9" * 40, "1e-320", "0x10", "&a 1", "*nope", "!!python/object:os.system x", "'" + "a" * 300 + "'",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
    "]]]]]]]]]]]]]]]]]]]]]]]]", "{value: -5, source: X}", "{value: abc}", "{value: [1]}", "1 GHz", "-3 KiB",
])


@st.composite
def mutated_text(draw, text: str) -> bytes:
    """``text`` with one to three mutations: a value replaced, a line dropped or duplicated, a cut, junk bytes."""
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["value", "value", "drop", "dup", "cut", "bytes", "indent", "bomb"]))
        index = draw(st.integers(0, max(0, len(lines) - 1)))
        line = lines[index] if lines else ""
        if kind == "value" and ":" in line:
            key = line.split(":", 1)[0]
            lines[index] = f"{key}: {draw(weird_scalars)}"
        elif kind == "drop" and lines:
            del lines[index]
        elif kind == "dup" and lines:
            lines.insert(index, line)
        elif kind == "cut":
            joined = "\n".join(lines)
            lines = joined[:draw(st.integers(0, len(joined)))].splitlines()
        elif kind == "indent" and lines:
            lines[index] = "   " + line
        elif kind == "bomb":
            lines.insert(0, 'lol: &a ["x","x","x","x","x","x","x","x","x","x"]')
            for level in range(8):
                lines.insert(level + 1, f"lol{level}: &{'b' * (level + 1)} [" + ",".join(
                    [f"*{'b' * level if level else 'a'}"] * 10) + "]")
    data = "\n".join(lines).encode()
    if draw(st.booleans()) and draw(st.booleans()):
        junk = draw(st.binary(min_size=1, max_size=8))
        at = draw(st.integers(0, len(data)))
        data = data[:at] + junk + data[at:]
    return data


# ---------------------------------------------------------------------------------------------------------
# Device profiles


@FUZZ
@given(data=mutated_text(DEVICE_TEXT), command=st.sampled_from(["show", "validate", "occupancy"]))
def test_mutated_device_profiles(tmp_path_factory, data, command):
    path = tmp_path_factory.mktemp("dev") / "fuzzdev.yaml"
    path.write_bytes(data)
    if command == "occupancy":
        run("occupancy", "-d", path, "-t", "256", "-r", "16", "--no-sweeps", "--json")
    else:
        run("devices", command, path, "--json")


# ---------------------------------------------------------------------------------------------------------
# Kernel specs (the CUDA source itself is not mutated)


@FUZZ
@given(data=mutated_text(SPEC_TEXT))
def test_mutated_kernel_specs(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("spec")
    shutil.copy(REPO / "kernels_spec" / "vec_add.cu", folder / "vec_add.cu")
    path = folder / "fuzzspec.yaml"
    path.write_bytes(data)
    run("analyze", path, "-d", "g80", "--json")


# ---------------------------------------------------------------------------------------------------------
# Budgets and baselines

threshold_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6), st.booleans(), st.text(max_size=5),
    st.fixed_dictionaries({}, optional={"min": st.floats(), "max": st.floats(), "equals": st.integers(),
                                        "nope": st.integers()}),
    st.lists(st.integers(), max_size=2), st.none())
metric_names = st.sampled_from(["predicted_gflops", "occupancy.occupancy", "correct", "cgma", "nope.x", "",
                                "counts.global.load_sectors", "bound", "a..b"])
entries = st.fixed_dictionaries(
    {"kernel": st.sampled_from(["vec_add", "nope", "", "specs/missing.yaml", 5])},
    optional={"device": st.sampled_from(["g80", "h100", "nope", "", "/dev/zero", None]),
              "devices": st.one_of(st.lists(st.sampled_from(["g80", "h100", "nope"]), max_size=3),
                                   st.just([{"device": "g80", "thresholds": {"cgma": {"min": 0}}}]), st.none()),
              "params": st.dictionaries(st.sampled_from(["N", "BLOCK_SIZE", "NOPE"]),
                                        st.one_of(st.integers(-64, 4096), st.floats(), st.text(max_size=3)),
                                        max_size=2),
              "thresholds": st.dictionaries(metric_names, threshold_values, max_size=3),
              "regs": st.one_of(st.integers(-5, 300), st.just("auto"), st.text(max_size=3)),
              "sample": st.one_of(st.integers(-3, 100), st.floats()),
              "name": st.text(max_size=4)})
budgets = st.fixed_dictionaries({"entries": st.lists(entries, max_size=3)},
                                optional={"version": st.sampled_from([1, 2, "1", None]),
                                          "tolerances": st.dictionaries(metric_names, st.one_of(
                                              st.just(False), st.fixed_dictionaries(
                                                  {}, optional={"better": st.sampled_from(["higher", "up"]),
                                                                "relative": st.floats(),
                                                                "absolute": st.floats(-1, 1)})), max_size=2),
                                          "baseline": st.sampled_from(["b.json", "", "/dev/zero", 3])})


def _yaml(document) -> str:
    import yaml

    return yaml.safe_dump(document, default_flow_style=None, allow_unicode=True)


def _safe_params(document) -> bool:
    """Budgets the engine can run quickly: small N only (memory limits are the engine's issue)."""
    for entry in document.get("entries", []):
        params = entry.get("params") or {}
        if isinstance(params.get("N"), (int, float)) and params["N"] > 4096:
            return False
    return True


@FUZZ
@given(document=budgets, json_out=st.booleans())
def test_generated_budgets(tmp_path_factory, document, json_out):
    if not _safe_params(document):
        return
    path = tmp_path_factory.mktemp("budget") / "budget.yaml"
    path.write_text(_yaml(document))
    run("check", path, "--no-baseline", *(["--json"] if json_out else []))


@FUZZ
@given(data=mutated_text("version: 1\nentries:\n  - kernel: vec_add\n    device: g80\n    params: {N: 512}\n"
                         "    thresholds: {predicted_gflops: {min: 0.001}, correct: true}\n"))
def test_mutated_budget_text(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("budget") / "budget.yaml"
    path.write_bytes(data)
    run("check", path, "--no-baseline", "--json")


BASELINE = json.dumps({"format": "perfmodel-baseline", "version": 1, "entries": {"vec_add": {
    "kernel": "vec_add", "params": {"N": 512},
    "devices": {"g80": {"predicted_gflops": 1.0, "occupancy.occupancy": 1.0, "correct": True}}}}}, indent=1)


@FUZZ
@given(data=mutated_text(BASELINE))
def test_mutated_baselines(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("baseline")
    (folder / "budget.yaml").write_text("entries:\n  - {kernel: vec_add, device: g80, params: {N: 512}}\n")
    (folder / "baseline.json").write_bytes(data)
    run("check", folder / "budget.yaml", "--baseline", folder / "baseline.json", "--json")


# ---------------------------------------------------------------------------------------------------------
# Hostile files and output paths


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, Path]:
    import os

    folder = tmp_path_factory.mktemp("hostile")
    (folder / "afile").write_text("x")
    os.mkfifo(folder / "fifo.yaml")
    (folder / "deep.yaml").write_text("a: " + "[" * 3000 + "]" * 3000 + "\n")
    (folder / "deep.json").write_text("[" * 100000 + "]" * 100000)
    (folder / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    (folder / "empty.yaml").write_text("")
    return {"dir": folder, "file": folder / "afile", "fifo": folder / "fifo.yaml", "deep": folder / "deep.yaml",
            "deep_json": folder / "deep.json", "latin1": folder / "latin1.yaml", "empty": folder / "empty.yaml",
            "zero": Path("/dev/zero"), "long": folder / ("x" * 300 + ".yaml"),
            "under_file": folder / "afile" / "x.yaml", "missing": folder / "missing.yaml"}


HOSTILE = ["dir", "file", "fifo", "deep", "deep_json", "latin1", "empty", "zero", "long", "under_file", "missing"]


@settings(FUZZ, max_examples=examples(30))
@given(which=st.sampled_from(HOSTILE), where=st.sampled_from(["device", "spec", "budget", "baseline", "dataset",
                                                              "validate"]))
def test_hostile_input_files(hostile, which, where):
    path = hostile[which]
    budget = hostile["dir"] / "ok-budget.yaml"
    budget.write_text("entries:\n  - {kernel: vec_add, device: g80, params: {N: 512}}\n")
    args = {"device": ("analyze", "vec_add", "-D", "N=512", "-d", path, "--json"),
            "spec": ("analyze", path, "-d", "g80", "--json"),
            "budget": ("check", path, "--json"),
            "baseline": ("check", budget, "--baseline", path, "--json"),
            "dataset": ("accuracy", path, "--json"),
            "validate": ("devices", "validate", path, "--json")}[where]
    code, out, err = run(*args)
    assert code == 2, (args, out, err)


@settings(FUZZ, max_examples=examples(20))
@given(which=st.sampled_from(["dir", "under_file", "fifo", "long", "missing_dir"]),
       option=st.sampled_from(["csv", "junit", "markdown", "update-baseline"]))
def test_bad_output_paths_fail_before_work(hostile, which, option):
    path = hostile["dir"] / "no" / "such" / "x.out" if which == "missing_dir" else hostile[which]
    if which == "missing_dir" and option != "csv":
        return  # these create missing folders
    budget = hostile["dir"] / "ok-budget.yaml"
    budget.write_text("entries:\n  - {kernel: vec_add, device: g80, params: {N: 512}}\n")
    if option == "csv":
        args = ("compare", "vec_add", "--devices", "g80", "-D", "N=512", "--csv", path, "--json")
    elif option == "update-baseline":
        args = ("check", budget, "--update-baseline", "--baseline", path, "--json")
    else:
        args = ("check", budget, f"--{option}", path, "--json")
    code, out, err = run(*args)
    assert code == 2 and json.loads(out)["error"]["kind"] == "output", (args, out, err)


# ---------------------------------------------------------------------------------------------------------
# Command-line arguments

numbers = st.sampled_from(["-1", "0", "1", "16", "512", "nan", "inf", "-inf", "1e400", "x", "", "1.5", "0x10",
                           "2**8", "__import__('os')", "9" * 30])
defines = st.builds(lambda name, value: f"{name}={value}",
                    st.sampled_from(["N", "BLOCK_SIZE", "NOPE", "1N", ""]), numbers)
vary = st.sampled_from(["N=64:32:x2", "N=0,0", "N=", "N=1:8:x1", "N=256:1024:x2", "N=,", "BLOCK_SIZE=32,64",
                        "N=64:128:+0", "N=1:1e9:+1", "N=nan,1", "N=256,512", "=1", "N=64:128:-1", "NOPE=1,2"])
devices = st.sampled_from(["g80", "h100", "nope", "g80,nope", "", ",", "g80,g80", "x" * 300, "/dev/zero"])


@st.composite
def argv(draw) -> tuple[str, ...]:
    command = draw(st.sampled_from(["analyze", "sweep", "compare", "occupancy", "kernels", "devices"]))
    json_flag = ["--json"] if draw(st.booleans()) else []
    size = ["-D", "N=512"]
    if command == "analyze":
        args = ["analyze", draw(st.sampled_from(["vec_add", "nope", ""])), "-d", draw(devices), *size]
        for item in draw(st.lists(defines, max_size=2)):
            args += ["-D", item]
        if draw(st.booleans()):
            args += ["--regs", draw(st.sampled_from(["-1", "0", "16", "100000", "auto", "x", "nan"]))]
        if draw(st.booleans()):
            args += ["--sample", draw(st.sampled_from(["-1", "1", "4", "x", "1e9"]))]
    elif command == "sweep":
        args = ["sweep", "vec_add", "-d", draw(devices), *size]
        for item in draw(st.lists(vary, min_size=0, max_size=2)):
            args += ["--vary", item]
    elif command == "compare":
        args = ["compare", "vec_add", "--devices", draw(devices), *size]
        for item in draw(st.lists(defines, max_size=1)):
            args += ["-D", item]
    elif command == "occupancy":
        args = ["occupancy", "-d", draw(devices), "-t", draw(st.sampled_from(["256", "16x16", "0", "-4", "x",
                                                                             "99999999999", "1x1x1x1"])),
                "-r", draw(st.sampled_from(["0", "16", "-3", "x", "99999"])),
                "--smem", draw(st.sampled_from(["0", "-1", "2 KiB", "1e400", "x", "-3 KiB"])), "--no-sweeps"]
        if draw(st.booleans()):
            args += ["--carveout", draw(st.sampled_from(["50%", "-5%", "200%", "x", "1 GiB"]))]
        if draw(st.booleans()):
            args += ["-g", draw(st.sampled_from(["-1", "0", "10", "x"]))]
    elif command == "kernels":
        args = ["kernels", "show", draw(st.sampled_from(["vec_add", "nope"])), *size]
        if draw(st.booleans()):
            args += ["--sample", draw(st.sampled_from(["-1", "0", "1", "x"]))]
    else:
        args = ["devices", "show", draw(devices)]
    return tuple(args + json_flag)


@settings(FUZZ, max_examples=examples(60))
@given(args=argv())
def test_command_line_arguments(args):
    run(*args)


# ---------------------------------------------------------------------------------------------------------
# Known invalid inputs are exit 2, never a silent 0


@pytest.mark.parametrize("args", [
    ("compare", "vec_add", "--devices", "g80,nope", "-D", "N=512"),
    ("sweep", "vec_add", "-d", "nope", "--vary", "N=256,512"),
    ("sweep", "vec_add", "-d", "g80", "--vary", "N=64:32:x2"),
    ("sweep", "vec_add", "-d", "g80", "--vary", "N=0,0"),
    ("sweep", "vec_add", "-d", "g80", "--vary", "N=nan,512"),
    ("analyze", "vec_add", "-d", "g80", "--sample", "-1"),
    ("analyze", "vec_add", "-d", "g80", "-D", "N=nan"),
    ("analyze", "vec_add", "-d", "g80", "--regs", "0"),
    ("occupancy", "-d", "g80", "-t", "256", "-r", "16", "--smem", "-1"),
])
@pytest.mark.parametrize("json_out", [False, True])
def test_known_invalid_arguments_exit_2(args, json_out):
    args = args + (("--json",) if json_out else ())
    code, out, err = run(*args)
    assert code == 2, (args, out, err)
    if json_out:
        assert json.loads(out)["error"]["message"]


@pytest.mark.parametrize("text", [
    "entries:\n  - {kernel: vec_add, device: g80, thresholds: {predicted_gflops: {min: .nan}}}\n",
    "entries:\n  - {kernel: vec_add, device: g80, thresholds: {predicted_gflops: {max: .inf}}}\n",
    "entries:\n  - {kernel: vec_add, device: g80, thresholds: {cgma: .nan}}\n",
    "entries:\n  - {kernel: vec_add, devices: []}\n",
    "entries:\n  - {kernel: vec_add}\n",
    "entries:\n  - {kernel: vec_add, device: g80, regs: 0}\n",
    "entries:\n  - {kernel: vec_add, device: g80, params: {N: .nan}}\n",
    "entries:\n  - {kernel: vec_add, device: nope}\n",
])
def test_known_invalid_budgets_exit_2(tmp_path, text):
    path = tmp_path / "budget.yaml"
    path.write_text(text)
    code, out, err = run("check", path, "--no-baseline", "--json")
    assert code == 2 and json.loads(out)["error"]["kind"] == "budget", (out, err)
    assert json.loads(out)["error"]["file"]


def test_anchor_bomb_is_refused_fast(tmp_path):
    import time

    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = name
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    for args in (("devices", "show", path, "--json"), ("check", path, "--json"), ("analyze", path, "-d", "g80")):
        start = time.perf_counter()
        code, out, err = run(*args)
        assert code == 2 and "alias bomb" in out + err
        assert time.perf_counter() - start < 2


def test_invalid_utf8_names_file_line_and_offset(tmp_path):
    path = tmp_path / "dev.yaml"
    path.write_bytes(b"id: x\nname: caf\xe9\n")
    code, out, err = run("devices", "show", path, "--json")
    error = json.loads(out)["error"]
    assert code == 2 and error["kind"] == "device" and error["line"] == 2 and "byte offset 15" in error["message"]
