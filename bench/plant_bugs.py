"""Plant issue 18's five bugs, one at a time, in a scratch copy of this checkout and run the tests against each.

    python bench/plant_bugs.py                 # the README test command (python -m pytest -x) per bug
    python bench/plant_bugs.py --fast          # only the test files that cover the planted code (seconds)
    python bench/plant_bugs.py --without tests/test_mutation_kills_planted.py --fast   # the suite before them
    python bench/plant_bugs.py --only seed-no-div4 --json

Each bug is a textual patch of one or two lines of the current source; a patch that no longer matches exactly
once stops the script (exit 2) instead of passing silently, so a rewrite of the planted code shows up here and the
patch is updated with it. The copy is every file git tracks plus untracked, not ignored files (a new test file
counts before it is committed); pytest runs in the copy, so ``import perfmodel`` is the patched copy (the script
checks that). A bug is *killed* when pytest exits non-zero with failed tests, *survived* when it exits 0.
Exit status: 0 when every planted bug is killed, 1 otherwise, 2 on a patch that does not apply.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Bug:
    name: str
    description: str
    patches: tuple[tuple[str, str, str], ...]     # (file, old text, new text), each old text found exactly once
    fast_tests: tuple[str, ...]                    # the test files that exercise the patched code


BUGS = (
    Bug("seed-no-div4",
        "the seed model's bandwidth bound computed without dividing by the 4-byte operand (bound and achievable "
        "GFLOPS 4x too high; tiled matmul on G80 labelled 'compute peak')",
        (("perfmodel/model/seed.py", "bandwidth_bound = None if ratio is None else ratio * bandwidth / FLOAT_BYTES",
          "bandwidth_bound = None if ratio is None else ratio * bandwidth"),
         ("perfmodel/model/seed.py", "return min(peak_gflops, cgma_ratio * dram_gb_per_s / operand_bytes)",
          "return min(peak_gflops, cgma_ratio * dram_gb_per_s)")),
        ("tests/test_model_seed.py", "tests/test_mutation_kills_planted.py")),
    Bug("seed-no-div4-label",
        "the same, in the bound and its label only (achievable GFLOPS still right: tiled G80 labelled "
        "'compute peak')",
        (("perfmodel/model/seed.py", "bandwidth_bound = None if ratio is None else ratio * bandwidth / FLOAT_BYTES",
          "bandwidth_bound = None if ratio is None else ratio * bandwidth"),),
        ("tests/test_model_seed.py", "tests/test_mutation_kills_planted.py")),
    Bug("syncthreads-ignored",
        "__syncthreads ignored in the loads-in-flight term of the bottleneck model (all of a warp's loads "
        "counted as one interval)",
        (("perfmodel/model/bottleneck.py",
          "mlp = loads_in_flight_per_warp(requests_per_warp, barriers_per_warp + 1.0, rates, loads_in_flight)",
          "mlp = loads_in_flight_per_warp(requests_per_warp, 1.0, rates, loads_in_flight)"),),
        ("tests/test_model_bottleneck.py", "tests/test_mutation_kills_planted.py")),
    Bug("syncthreads-ignored-in-helper",
        "the same bug inside loads_in_flight_per_warp (its barrier intervals argument unused)",
        (("perfmodel/model/bottleneck.py",
          "per_interval = load_requests_per_warp / max(1.0, barrier_intervals_per_warp)",
          "per_interval = load_requests_per_warp"),),
        ("tests/test_model_bottleneck.py", "tests/test_mutation_kills_planted.py")),
    Bug("no-compulsory-floor",
        "the compulsory-miss floor removed from the L2 traffic estimate",
        (("perfmodel/model/traffic.py", "    l2_load = max(l2_load, unique_load_sectors)\n", ""),),
        ("tests/test_model_bottleneck.py", "tests/test_mutation_kills_planted.py")),
    Bug("correct-always-exact",
        "analyze reports correct = True whatever the output check said (exact path)",
        (("perfmodel/analysis.py", "correct, detail = output_check.correct, output_check.message",
          "correct, detail = True, output_check.message"),),
        ("tests/test_analyze.py", "tests/test_mutation_kills_planted.py")),
    Bug("correct-always-sampled",
        "analyze reports correct = True whatever the output check said (sampled path)",
        (("perfmodel/analysis.py", "        correct = check.correct\n", "        correct = True\n"),),
        ("tests/test_analyze.py", "tests/test_sampling.py", "tests/test_mutation_kills_planted.py")),
)


def checkout_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         check=True, capture_output=True).stdout.decode()
    return [f for f in out.split("\0") if f and (ROOT / f).is_file()]


def make_copy(dest: Path, files: list[str]) -> None:
    for f in files:
        target = dest / f
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, target)


def apply(dest: Path, bug: Bug) -> None:
    for file, old, new in bug.patches:
        path = dest / file
        text = path.read_text()
        found = text.count(old)
        if found != 1:
            raise SystemExit(f"plant_bugs: {bug.name}: the text to patch occurs {found} times in {file} "
                             f"(expected once): {old!r}; update the patch to the current source")
        path.write_text(text.replace(old, new))


def run_tests(dest: Path, tests: list[str], without: list[str]) -> tuple[int, str, float]:
    # one process (-n 0): under pytest-xdist a run stopped by -x exits 2 ("interrupted"), not 1
    cmd = [sys.executable, "-m", "pytest", "-n", "0", "-x", "-q", "-p", "no:cacheprovider", *tests]
    cmd += [f"--ignore={w}" for w in without]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=dest, env=env, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr, time.perf_counter() - started


def summary_line(output: str) -> str:
    lines = [ln for ln in output.strip().splitlines() if ln.strip()]
    failed = [ln for ln in lines if ln.startswith("FAILED ")]
    last = lines[-1] if lines else ""
    return (failed[0] + " | " if failed else "") + last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fast", action="store_true", help="run only the test files covering each bug")
    parser.add_argument("--only", action="append", default=[], help="a bug name (repeatable)")
    parser.add_argument("--without", action="append", default=[], help="a test file to leave out (repeatable)")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    args = parser.parse_args(argv)
    bugs = [b for b in BUGS if not args.only or b.name in args.only]
    unknown = set(args.only) - {b.name for b in BUGS}
    if unknown:
        parser.error(f"unknown bug(s) {sorted(unknown)}; known: {[b.name for b in BUGS]}")
    files = checkout_files()
    results = []
    with tempfile.TemporaryDirectory(prefix="plant_bugs_") as tmp:
        for bug in bugs:
            dest = Path(tmp) / bug.name
            make_copy(dest, files)
            apply(dest, bug)
            where = subprocess.run([sys.executable, "-c", "import perfmodel; print(perfmodel.__file__)"],
                                   cwd=dest, capture_output=True, text=True).stdout.strip()
            if not where.startswith(str(dest)):
                raise SystemExit(f"plant_bugs: the copy imports perfmodel from {where}, not from {dest}")
            tests = [t for t in bug.fast_tests if t not in args.without] if args.fast else []
            code, output, seconds = run_tests(dest, tests, args.without)
            status = "survived" if code == 0 else ("killed" if code == 1 else f"error (pytest exit {code})")
            results.append({"bug": bug.name, "description": bug.description, "status": status,
                            "pytest_exit": code, "seconds": round(seconds, 1),
                            "command": "python -m pytest -x -q -p no:cacheprovider " + " ".join(
                                tests + [f"--ignore={w}" for w in args.without]),
                            "evidence": summary_line(output)})
            if not args.json:
                print(f"{bug.name:32s} {status:9s} {seconds:6.1f} s  {results[-1]['evidence']}", flush=True)
            shutil.rmtree(dest, ignore_errors=True)
    if args.json:
        print(json.dumps({"bugs": results}, indent=2))
    else:
        killed = sum(r["status"] == "killed" for r in results)
        print(f"{killed} of {len(results)} planted bugs killed")
    return 0 if all(r["status"] == "killed" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
