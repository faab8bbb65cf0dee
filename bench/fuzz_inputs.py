"""The long fuzz run of issue 16: at least 1,000 seeded cases of bad (and some good) input, each in its own
subprocess with a wall-clock limit and a memory limit, classified and counted.

    python bench/fuzz_inputs.py                      # 1,200 cases, seed 16, 2 workers
    python bench/fuzz_inputs.py --cases 3000 --seed 7 --workers 4 --engine

Input classes (the generator of each case marks the inputs that are invalid for sure):
  device      mutated device profiles (devices show / validate, occupancy -d FILE, analyze -d FILE)
  spec        mutated kernel specs (analyze SPEC; the CUDA source itself is not mutated)
  budget      generated and mutated budgets (check)
  baseline    mutated baselines (check --baseline)
  hostile     directories, FIFOs, /dev/zero, too-long names, anchor bombs, deep nesting, bad UTF-8, for every
              option that reads a file
  output      --csv / --junit / --markdown / --update-baseline into a folder, under a file, into a FIFO ...
  argv        command-line arguments: numbers, ranges, devices, -D values
  engine      (only with --engine) CUDA-source mutations and huge sizes: the simulation engine's business
              (being rewritten), reported apart and not part of the pass/fail totals

Outcome classes:
  clean_error      exit 2 with a one-paragraph message (under --json: one JSON error document)
  success          exit 0 or 1 (a failed check) on input not known to be invalid
  silent_success   exit 0 or 1 on input known to be invalid
  internal         exit 3 (or any other status)
  traceback        "Traceback (most recent call last)" in the output
  bad_json         --json without exactly one JSON document on stdout
  hang             no answer within --timeout seconds (default 20)
  memory           a MemoryError under the address-space limit (--max-memory-gib, default 4) or a peak RSS
                   above it

Exit status 0 when every non-engine case is a clean error or a success.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEVICE_TEXT = (REPO / "devices" / "g80.yaml").read_text()
SPEC_TEXT = (REPO / "kernels_spec" / "vec_add.yaml").read_text().replace("default: 10000", "default: 512")
CUDA_TEXT = (REPO / "kernels_spec" / "vec_add.cu").read_text()
MARK = "@@FUZZ_MAXRSS_KB="


@dataclass
class Case:
    group: str
    args: list[str]
    invalid: bool | None = None   # True: the input is invalid for sure (exit 0/1 would be a silent success)
    files: dict[str, bytes] = field(default_factory=dict)  # name -> content, written into the case folder
    fifo: list[str] = field(default_factory=list)
    note: str = ""


# ---------------------------------------------------------------------------------------------------------
# Generators

WEIRD = ["0", "-1", "-0.5", "1e400", ".nan", ".inf", "''", "\"x\"", "null", "true", "[]", "{}", "[1, 2]",
         "9" * 40, "0x10", "&a 1", "*nope", "!!python/object/apply:os.system [echo hi]", "'" + "a" * 300 + "'",
         "[" * 200 + "]" * 200, "{value: -5, source: X}", "{value: abc}", "{value: [1]}", "1 GHz", "-3 KiB"]
SURELY_INVALID_VALUES = {"-1", "-0.5", ".nan", ".inf", "[]", "{}", "[1, 2]", "*nope", "[" * 200 + "]" * 200,
                         "!!python/object/apply:os.system [echo hi]", "{value: -5, source: X}", "{value: abc}",
                         "{value: [1]}", "-3 KiB"}


def bomb_lines() -> list[str]:
    lines = ['lol: &a ["x","x","x","x","x","x","x","x","x","x"]']
    previous = "a"
    for level in range(8):
        name = "b" * (level + 1)
        lines.append(f"lol{level}: &{name} [" + ",".join([f"*{previous}"] * 10) + "]")
        previous = name
    return lines


def mutate(rng: random.Random, text: str, numeric_keys: set[str] | None = None) -> tuple[bytes, bool | None]:
    """One to three mutations of ``text``; (bytes, True when surely invalid, else None)."""
    lines = text.splitlines()
    invalid: bool | None = None
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["value", "value", "value", "drop", "dup", "cut", "indent", "bomb", "junk", "deep"])
        index = rng.randrange(len(lines)) if lines else 0
        line = lines[index] if lines else ""
        if kind == "value" and ":" in line and not line.lstrip().startswith("#"):
            key, _, _ = line.partition(":")
            value = rng.choice(WEIRD)
            lines[index] = f"{key}: {value}"
            if value in SURELY_INVALID_VALUES and numeric_keys is not None and key.strip() in numeric_keys \
                    and not key.startswith(" "):
                invalid = True
        elif kind == "drop" and lines:
            del lines[index]
        elif kind == "dup" and lines:
            lines.insert(index, line)
        elif kind == "cut":
            joined = "\n".join(lines)
            lines = joined[:rng.randrange(len(joined) + 1)].splitlines()
        elif kind == "indent" and lines:
            lines[index] = "   " + line
        elif kind == "bomb":
            lines = bomb_lines() + lines
            invalid = True
        elif kind == "deep":
            lines.append("deep: " + "[" * 5000 + "]" * 5000)
            invalid = True
        elif kind == "junk":
            joined = "\n".join(lines).encode()
            at = rng.randrange(len(joined) + 1)
            junk = rng.choice([b"\xff", b"\xc3\x28", b"\x00", b"\xe9", b"\x01", bytes(rng.randrange(256) for _ in
                                                                                    range(4))])
            data = joined[:at] + junk + joined[at:]
            try:
                decoded = data.decode("utf-8")
                if "\x00" in decoded or "\x01" in decoded:
                    invalid = True
            except UnicodeDecodeError:
                invalid = True
            return data, invalid
    return "\n".join(lines).encode(), invalid


DEVICE_NUMERIC = {"sm_count", "fp32_lanes_per_sm", "lsu_per_sm", "warp_schedulers_per_sm", "warp_size",
                  "max_threads_per_block", "max_threads_per_sm", "max_warps_per_sm", "max_blocks_per_sm",
                  "registers_per_sm", "max_registers_per_block", "max_registers_per_thread", "base_clock_hz"}


def device_case(rng: random.Random) -> Case:
    data, invalid = mutate(rng, DEVICE_TEXT, DEVICE_NUMERIC)
    json_flag = ["--json"] if rng.random() < 0.5 else []
    args = rng.choice([["devices", "show", "{dir}/dev.yaml"], ["devices", "validate", "{dir}/dev.yaml"],
                       ["occupancy", "-d", "{dir}/dev.yaml", "-t", "256", "-r", "16"],
                       ["analyze", "vec_add", "-D", "N=512", "-d", "{dir}/dev.yaml"]])
    return Case("device", args + json_flag, invalid, {"dev.yaml": data})


def spec_case(rng: random.Random) -> Case:
    data, invalid = mutate(rng, SPEC_TEXT, {"grid", "block", "args", "params", "source", "entry"})
    json_flag = ["--json"] if rng.random() < 0.5 else []
    return Case("spec", ["analyze", "{dir}/spec.yaml", "-d", "g80", *json_flag], invalid,
                {"spec.yaml": data, "vec_add.cu": CUDA_TEXT.encode()})


def budget_doc(rng: random.Random) -> tuple[dict, bool | None]:
    invalid: bool | None = None
    entries = []
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        entry: dict = {"kernel": rng.choice(["vec_add", "vec_add", "nope", "", "missing.yaml", 5])}
        if entry["kernel"] != "vec_add":
            invalid = True
        device_choice = rng.random()
        if device_choice < 0.5:
            entry["device"] = rng.choice(["g80", "g80", "h100", "nope", "", "/dev/zero"])
            invalid = invalid or entry["device"] not in ("g80", "h100")
        elif device_choice < 0.85:
            entry["devices"] = rng.choice([["g80"], ["g80", "h100"], [], ["g80", "g80"], ["nope"],
                                           [{"device": "g80", "thresholds": {"cgma": {"min": 0}}}]])
            invalid = invalid or entry["devices"] in ([], ["g80", "g80"], ["nope"])
        else:
            invalid = True   # no device
        entry["params"] = {"N": rng.choice([512, 512, 0, -64, 1.5, "x", float("nan"), 1024])}
        invalid = invalid or entry["params"]["N"] not in (512, 1024)
        if rng.random() < 0.7:
            metric = rng.choice(["predicted_gflops", "occupancy.occupancy", "correct", "cgma", "nope.x", "",
                                 "a..b"])
            value = rng.choice([{"min": 0.001}, {"max": 1e9}, {"min": float("nan")}, {"max": float("inf")},
                                {"min": 2, "max": 1}, True, float("nan"), None, [1], {"nope": 1}, "x"])
            entry["thresholds"] = {metric: value}
            if metric in ("nope.x", "", "a..b") or value in ({"min": 2, "max": 1}, None, [1], {"nope": 1}) or \
                    (isinstance(value, dict) and any(v != v or v in (float("inf"),) for v in value.values())) or \
                    (isinstance(value, float) and value != value):
                invalid = True
        if rng.random() < 0.2:
            entry["regs"] = rng.choice([-5, 0, 16, 300, "x"])
            invalid = invalid or entry["regs"] in (-5, 0, "x", 300)
        if rng.random() < 0.2:
            entry["sample"] = rng.choice([-3, 0, 4, 1.5])
            invalid = invalid or entry["sample"] in (-3, 0, 1.5)
        entries.append(entry)
    if not entries:
        invalid = True
    document: dict = {"entries": entries}
    if rng.random() < 0.2:
        document["version"] = rng.choice([1, 2, "1"])
        invalid = invalid or document["version"] != 1
    if rng.random() < 0.2:
        document["tolerances"] = {"predicted_gflops": rng.choice([False, {"better": "up"}, {"relative": -1},
                                                                  {"better": "higher", "relative": float("inf")},
                                                                  {"better": "higher", "relative": 0.1}])}
        invalid = invalid or document["tolerances"]["predicted_gflops"] not in (
            False, {"better": "higher", "relative": 0.1})
    return document, invalid


def budget_case(rng: random.Random) -> Case:
    import yaml

    json_flag = ["--json"] if rng.random() < 0.5 else []
    if rng.random() < 0.6:
        document, invalid = budget_doc(rng)
        data = yaml.safe_dump(document, default_flow_style=None).encode()
    else:
        data, invalid = mutate(rng, "version: 1\nentries:\n  - kernel: vec_add\n    device: g80\n"
                                    "    params: {N: 512}\n    thresholds: {predicted_gflops: {min: 0.001}, "
                                    "correct: true}\n", {"version", "entries"})
    return Case("budget", ["check", "{dir}/budget.yaml", "--no-baseline", *json_flag], invalid,
                {"budget.yaml": data})


BASELINE_TEXT = json.dumps({"format": "perfmodel-baseline", "version": 1, "entries": {"vec_add": {
    "kernel": "vec_add", "params": {"N": 512},
    "devices": {"g80": {"predicted_gflops": 1.0, "occupancy.occupancy": 1.0, "correct": True}}}}}, indent=1)


def baseline_case(rng: random.Random) -> Case:
    data, invalid = mutate(rng, BASELINE_TEXT, {'"format"', '"version"', '"entries"'})
    if rng.random() < 0.1:
        data, invalid = ("[" * 100000 + "]" * 100000).encode(), True
    json_flag = ["--json"] if rng.random() < 0.5 else []
    return Case("baseline", ["check", "{dir}/budget.yaml", "--baseline", "{dir}/baseline.json", *json_flag], None
                if invalid is None else True,
                {"budget.yaml": b"entries:\n  - {kernel: vec_add, device: g80, params: {N: 512}}\n",
                 "baseline.json": data})


HOSTILE = {
    "folder": ("{dir}", None), "fifo": ("{dir}/fifo.yaml", None), "dev_zero": ("/dev/zero", None),
    "long_name": ("{dir}/" + "x" * 300 + ".yaml", None), "under_file": ("{dir}/afile/x.yaml", None),
    "missing": ("{dir}/missing.yaml", None), "bomb": ("{dir}/bomb.yaml", "\n".join(bomb_lines()) + "\n"),
    "deep_yaml": ("{dir}/deep.yaml", "a: " + "[" * 5000 + "]" * 5000 + "\n"),
    "deep_json": ("{dir}/deep.json", "[" * 200000 + "]" * 200000),
    "latin1": ("{dir}/latin1.yaml", None), "empty": ("{dir}/empty.yaml", ""),
    "binary": ("{dir}/binary.yaml", None), "long_path": ("{dir}/" + "/".join(["d" * 200] * 25) + "/x.yaml", None),
}


def hostile_case(rng: random.Random) -> Case:
    which = rng.choice(sorted(HOSTILE))
    path, content = HOSTILE[which]
    files: dict[str, bytes] = {"afile": b"x", "ok-budget.yaml":
                               b"entries:\n  - {kernel: vec_add, device: g80, params: {N: 512}}\n"}
    if content is not None:
        files[Path(path).name] = content.encode()
    if which == "latin1":
        files["latin1.yaml"] = "name: caf\xe9\n".encode("latin-1")
    if which == "binary":
        files["binary.yaml"] = bytes(range(256)) * 4
    where = rng.choice(["device", "spec", "budget", "baseline", "dataset", "validate", "occupancy"])
    args = {"device": ["analyze", "vec_add", "-D", "N=512", "-d", path],
            "spec": ["analyze", path, "-d", "g80"],
            "budget": ["check", path],
            "baseline": ["check", "{dir}/ok-budget.yaml", "--baseline", path],
            "dataset": ["accuracy", path],
            "validate": ["devices", "validate", path],
            "occupancy": ["occupancy", "-d", path, "-t", "256", "-r", "16"]}[where]
    if rng.random() < 0.5:
        args.append("--json")
    return Case("hostile", args, True, files, fifo=["fifo.yaml"], note=f"{which} as {where}")


#: Only a real /dev/full (a character device): where it is missing, writing there would create a file in /dev.
HAVE_DEV_FULL = os.path.exists("/dev/full") and __import__("stat").S_ISCHR(os.stat("/dev/full").st_mode)


def output_case(rng: random.Random) -> Case:
    kinds = ["folder", "under_file", "fifo", "long_name", "missing_folder"]
    if HAVE_DEV_FULL:
        kinds.append("dev_full")  # a write error (ENOSPC) after the work: exit 2 too
    which = rng.choice(kinds)
    path = {"folder": "{dir}", "under_file": "{dir}/afile/out.x", "fifo": "{dir}/fifo.out",
            "long_name": "{dir}/" + "y" * 300, "missing_folder": "{dir}/no/such/out.x",
            "dev_full": "/dev/full"}[which]
    option = rng.choice(["csv", "csv-sweep", "junit", "markdown", "update-baseline", "accuracy-markdown"])
    if which == "dev_full" and option == "update-baseline":
        option = "csv"  # the baseline is written through BASELINE.tmp beside it: never create files in /dev
    budget = "{dir}/ok-budget.yaml"
    args = {"csv": ["compare", "vec_add", "--devices", "g80", "-D", "N=512", "--csv", path],
            "csv-sweep": ["sweep", "vec_add", "-d", "g80", "-D", "N=512", "--vary", "BLOCK_SIZE=128,256",
                          "--csv", path],
            "junit": ["check", budget, "--no-baseline", "--junit", path],
            "markdown": ["check", budget, "--no-baseline", "--markdown", path],
            "update-baseline": ["check", budget, "--update-baseline", "--baseline", path],
            "accuracy-markdown": ["accuracy", "{dir}/dataset.json", "--markdown", path]}[option]
    creates_parents = option in ("junit", "markdown", "update-baseline")
    invalid = None if (which == "missing_folder" and creates_parents) else True
    if rng.random() < 0.5:
        args.append("--json")
    dataset = json.dumps({"profile": "g80", "cases": [{"kernel": "vec_add", "overrides": {"N": 512},
                                                       "time_s": 1e-5}]}).encode()
    return Case("output", args, invalid, {"afile": b"x", "ok-budget.yaml":
                                         b"entries:\n  - {kernel: vec_add, device: g80, params: {N: 512}}\n",
                                         "dataset.json": dataset}, fifo=["fifo.out"], note=f"{which} {option}")


NUMBERS = ["-1", "0", "1", "16", "512", "nan", "inf", "-inf", "1e400", "x", "", "1.5", "0x10", "2**8",
           "__import__('os').system('echo pwned')", "9" * 30]
BAD_NUMBERS = {"nan", "inf", "-inf", "1e400", "x", "", "2**8", "__import__('os').system('echo pwned')",
               "9" * 30, "-1", "0", "1.5"}


def argv_case(rng: random.Random) -> Case:
    command = rng.choice(["analyze", "analyze", "sweep", "compare", "occupancy", "kernels", "devices"])
    invalid: bool | None = None
    devices = ["g80", "h100", "nope", "g80,nope", "", ",", "g80,g80", "x" * 300, "/dev/zero", "h100,a100"]
    if command == "analyze":
        device = rng.choice(devices)
        invalid = device not in ("g80", "h100")
        args = ["analyze", rng.choice(["vec_add", "vec_add", "nope", ""]), "-d", device, "-D", "N=512"]
        invalid = invalid or args[1] != "vec_add"
        if rng.random() < 0.5:
            name, value = rng.choice(["N", "BLOCK_SIZE", "NOPE", "1N", ""]), rng.choice(NUMBERS)
            args += ["-D", f"{name}={value}"]
            invalid = invalid or value in BAD_NUMBERS or name in ("1N", "", "NOPE")
        if rng.random() < 0.4:
            regs = rng.choice(["-1", "0", "16", "100000", "auto", "x", "nan"])
            args += ["--regs", regs]
            invalid = invalid or regs in ("-1", "0", "100000", "x", "nan")
        if rng.random() < 0.4:
            sample = rng.choice(["-1", "1", "4", "x", "1e9", "0"])
            args += ["--sample", sample]
            invalid = invalid or sample in ("-1", "x", "1e9")
    elif command == "sweep":
        device = rng.choice(devices)
        args = ["sweep", "vec_add", "-d", device, "-D", "N=512"]
        invalid = device not in ("g80", "h100")
        ranges = rng.sample(["N=64:32:x2", "N=0,0", "N=", "N=1:8:x1", "N=256:1024:x2", "N=,", "BLOCK_SIZE=32,64",
                             "N=64:128:+0", "N=nan,1", "N=256,512", "=1", "N=64:128:-1", "NOPE=1,2", "N=1:1e9:+1",
                             "BLOCK_SIZE=64:256:x2"], rng.randint(0, 2))
        for item in ranges:
            args += ["--vary", item]
        good = {"N=256:1024:x2", "BLOCK_SIZE=32,64", "N=256,512", "BLOCK_SIZE=64:256:x2"}
        invalid = invalid or not ranges or any(r not in good for r in ranges) or \
            len({r.split("=")[0] for r in ranges}) < len(ranges)
    elif command == "compare":
        device = rng.choice(devices)
        args = ["compare", "vec_add", "--devices", device, "-D", "N=512"]
        invalid = device not in ("g80", "h100", "h100,a100")
    elif command == "occupancy":
        device = rng.choice(devices)
        threads = rng.choice(["256", "16x16", "0", "-4", "x", "99999999999", "1x1x1x1", "1024"])
        regs = rng.choice(["0", "16", "-3", "x", "99999"])
        smem = rng.choice(["0", "-1", "2 KiB", "1e400", "x", "-3 KiB", "1 GiB"])
        args = ["occupancy", "-d", device, "-t", threads, "-r", regs, "--smem", smem]
        invalid = device not in ("g80", "h100") or threads not in ("256", "16x16", "1024") or \
            regs not in ("0", "16") or smem not in ("0", "2 KiB", "1 GiB")
        if rng.random() < 0.3:
            carveout = rng.choice(["50%", "-5%", "200%", "x", "100 GiB"])
            args += ["--carveout", carveout]
            invalid = invalid or carveout != "50%"
        if rng.random() < 0.3:
            grid = rng.choice(["-1", "0", "10", "x"])
            args += ["-g", grid]
            invalid = invalid or grid != "10"
        if invalid is False:
            invalid = None  # 1024 threads on g80, 1 GiB of shared memory...: the occupancy answer decides
    elif command == "kernels":
        args = ["kernels", "show", rng.choice(["vec_add", "nope"]), "-D", "N=512"]
        invalid = args[2] == "nope"
        if rng.random() < 0.5:
            sample = rng.choice(["-1", "0", "1", "x"])
            args += ["--sample", sample]
            invalid = invalid or sample != "1"
    else:
        device = rng.choice(devices)
        args = ["devices", "show", device]
        invalid = device not in ("g80", "h100")
    if rng.random() < 0.5:
        args.append("--json")
    return Case("argv", args, True if invalid else None)


CUDA_MUTATIONS = [
    ("for(;;)", "    for (;;) { }\n"),
    ("loop without increment", "    for (int k = 0; k < 10; ) { C[0] = 0; }\n"),
    ("barrier in endless loop", "    while (1) { __syncthreads(); }\n"),
    # each mutation has an effect the compiler must keep (an empty loop or an array only written once is dead
    # code that NVVM deletes, and the kernel is then valid)
    ("long nested loops", "    for (int a = 0; a < 100000; a++) for (int b = 0; b < 100000; b++) { C[0] += A[b]; }\n"),
    ("huge shared array", "    __shared__ float big[1 << 30]; big[threadIdx.x] = A[threadIdx.x]; __syncthreads();"
                          " C[threadIdx.x] = big[(threadIdx.x * 7919) & ((1 << 30) - 1)];\n"),
    ("negative shared array", "    __shared__ float neg[-4]; neg[0] = 0;\n"),
    ("huge local array", "    float local[1 << 28]; for (int k = 0; k < N; k++) local[(k * 7919) & ((1 << 28) - 1)] = A[k];"
                         " C[threadIdx.x] = local[threadIdx.x];\n"),
]


def engine_case(rng: random.Random) -> Case:
    if rng.random() < 0.5:
        name, body = rng.choice(CUDA_MUTATIONS)
        source = CUDA_TEXT.replace("{", "{\n" + body, 1)
        return Case("engine", ["analyze", "{dir}/spec.yaml", "-d", "g80", "--json"], True,
                    {"spec.yaml": SPEC_TEXT.encode(), "vec_add.cu": source.encode()}, note=name)
    size = rng.choice(["Width=1e5", "Width=100000", "Width=8192"])
    kernel = rng.choice(["matmul_tiled", "matmul_naive"])
    return Case("engine", ["analyze", kernel, "-d", "h100", "-D", size, "--sample", "0", "--json"], None,
                note=f"{kernel} {size} exact")


GENERATORS = {"device": device_case, "spec": spec_case, "budget": budget_case, "baseline": baseline_case,
              "hostile": hostile_case, "output": output_case, "argv": argv_case}
WEIGHTS = {"device": 3, "spec": 2, "budget": 3, "baseline": 1, "hostile": 2, "output": 1, "argv": 4}


# ---------------------------------------------------------------------------------------------------------
# Running one case


CHILD = f"""
import atexit, os, resource, sys
limit = int(os.environ["FUZZ_AS_BYTES"])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
atexit.register(lambda: sys.stderr.write("\\n{MARK}%d\\n" % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
sys.argv = ["perfmodel"] + sys.argv[1:]
from perfmodel.cli.main import main
main()
"""


def run_case(case: Case, timeout: float, max_memory: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as folder:
        for name, content in case.files.items():
            (Path(folder) / name).write_bytes(content)
        for name in case.fifo:
            os.mkfifo(Path(folder) / name)
        args = [a.replace("{dir}", folder) for a in case.args]
        env = {**os.environ, "FUZZ_AS_BYTES": str(max_memory), "COLUMNS": "120"}
        env.pop("PERFMODEL_DEBUG", None)
        start = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, timeout=timeout,
                                  env=env, cwd=folder, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return {"outcome": "hang", "seconds": timeout, "code": None, "rss_kb": None, "text": ""}
        except ValueError as err:   # e.g. a NUL byte in an argument: the OS cannot even start the command
            return {"outcome": "not_run", "seconds": 0.0, "code": None, "rss_kb": None, "text": str(err)}
        seconds = time.perf_counter() - start
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    rss_kb = None
    if MARK in err:
        err, _, tail = err.rpartition(MARK)
        try:
            rss_kb = int(tail.strip())
        except ValueError:
            pass
        err = err.rstrip("\n")
    text = out + err
    code = proc.returncode
    if "MemoryError" in text or "Cannot allocate memory" in text or "ArrayMemoryError" in text or \
            (rss_kb is not None and rss_kb * 1024 > max_memory) or code in (-9, 137):
        outcome = "memory"
    elif "Traceback (most recent call last)" in text:
        outcome = "traceback"
    elif code not in (0, 1, 2):
        outcome = "internal"
    elif "--json" in args and not json_ok(out, code):
        outcome = "bad_json"
    elif code == 2:
        outcome = "clean_error"
    elif case.invalid:
        outcome = "silent_success"
    else:
        outcome = "success"
    return {"outcome": outcome, "seconds": seconds, "code": code, "rss_kb": rss_kb, "text": text[-600:]}


def json_ok(out: str, code: int) -> bool:
    if code != 2 and not out.strip():
        return True
    try:
        document = json.loads(out)
    except ValueError:
        return False
    if code == 2 and isinstance(document, dict) and "error" in document:
        error = document["error"]
        return isinstance(error, dict) and {"kind", "message", "file", "line"} <= set(error) and \
            isinstance(error["message"], str)
    return code != 2 or isinstance(document, dict)


# ---------------------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--max-memory-gib", type=float, default=4.0)
    parser.add_argument("--engine", action="store_true", help="also run the engine class (CUDA-source "
                                                               "mutations, huge sizes), reported apart")
    parser.add_argument("--engine-cases", type=int, default=24)
    parser.add_argument("--show", type=int, default=3, help="examples shown per bad outcome")
    options = parser.parse_args()

    rng = random.Random(options.seed)
    names = list(GENERATORS)
    weights = [WEIGHTS[n] for n in names]
    cases = [GENERATORS[rng.choices(names, weights)[0]](rng) for _ in range(options.cases)]
    if options.engine:
        cases += [engine_case(rng) for _ in range(options.engine_cases)]
    max_memory = int(options.max_memory_gib * 2**30)

    start = time.perf_counter()
    with ThreadPoolExecutor(options.workers) as pool:
        results = list(pool.map(lambda c: run_case(c, options.timeout, max_memory), cases))
    elapsed = time.perf_counter() - start

    overall: Counter = Counter()
    engine: Counter = Counter()
    by_group: dict[str, Counter] = defaultdict(Counter)
    examples: dict[str, list] = defaultdict(list)
    for case, result in zip(cases, results):
        outcome = result["outcome"]
        (engine if case.group == "engine" else overall)[outcome] += 1
        by_group[case.group][outcome] += 1
        if outcome not in ("clean_error", "success") and len(examples[outcome]) < options.show * 10:
            examples[outcome].append((case, result))
    order = ["clean_error", "success", "silent_success", "internal", "traceback", "bad_json", "hang", "memory",
             "not_run"]
    print(f"perfmodel input fuzzing: {len(cases) - sum(engine.values())} cases (seed {options.seed}, "
          f"{options.workers} workers, timeout {options.timeout:g} s, address space {options.max_memory_gib:g} "
          f"GiB) in {elapsed:.0f} s")
    print(f"{'class':<16}" + "".join(f"{o:>15}" for o in order))
    for group in [*GENERATORS, "engine"]:
        if group in by_group:
            print(f"{group:<16}" + "".join(f"{by_group[group][o]:>15}" for o in order))
    print(f"{'TOTAL':<16}" + "".join(f"{overall[o]:>15}" for o in order))
    if engine:
        print("(engine: CUDA-source mutations and huge sizes, the simulation engine's issue; not in TOTAL)")
    peak = max((r["rss_kb"] or 0 for r in results), default=0)
    print(f"peak RSS of any case: {peak / 1024:.0f} MiB")
    for outcome in order[2:]:
        for case, result in examples.get(outcome, [])[:options.show if case.group != "engine" else 10]:
            args = " ".join(a if len(a) < 80 else a[:40] + "..." for a in case.args)
            print(f"\n[{outcome}] ({case.group}{': ' + case.note if case.note else ''}) perfmodel {args}"
                  f"\n  exit {result['code']}, {result['seconds']:.1f} s: {result['text'][-300:].strip()!r}")
    bad = sum(overall[o] for o in order[2:] if o != "not_run")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
