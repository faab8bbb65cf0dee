"""Mutation testing of perfmodel's core with mutmut, one area at a time (issue 18; docs/testing.md).

    pip install -e ".[test,mutation]"
    python bench/mutation.py models                # run the area's mutants, then print its summary
    python bench/mutation.py occupancy counters correctness --max-children 2
    python bench/mutation.py --summary [--json]    # the summary of what has been run so far (no run)
    python bench/mutation.py --survivors models    # the surviving mutants of an area, with their diffs
    python bench/mutation.py --minutes 120         # the ~2-hour job: samples sized from the measured wall time
    python bench/mutation.py --together --sample 40    # a fixed random sample of 40 mutants of each area
    python bench/mutation.py --recheck tests/test_x.py models   # the area's survivors against tests/test_x.py

A full run of every area is ~8,900 mutants, ~27 hours on a shared 2-core machine (docs/testing.md); ``--sample N`` tests a uniform random sample of N
mutants per area (fixed ``--seed``), which estimates the kill rate when a full run does not fit, and the summary
then covers the sample only (on a fresh checkout mutmut first generates ``mutants/``).

The configuration is ``[tool.mutmut]`` in pyproject.toml: the files to mutate (every area's), the fast test files
mutmut records coverage with, and the fork server. mutmut copies ``perfmodel/`` into ``mutants/``, records which
tests reach each function, and runs only those tests against each of that function's mutants (per-mutant test
selection); a mutant runs under a CPU-time limit (mutmut: 15 x the tests' clean time + 1 s) and is a *timeout* past
it. Results persist in ``mutants/``: a second run of an area only runs what is left unchecked (or what changed).

An area is a set of mutant-name patterns (mutmut names a mutant ``module.x_function__mutmut_N`` and a method's
``module.xǁClassǁmethod__mutmut_N``). Statuses: killed (a test failed), survived (every selected test passed),
no tests (no selected test reaches the function), timeout, and mutmut's others (suspicious, segfault, skipped).
A survivor whose diff matches an entry of ``bench/mutation_equivalent.toml`` (a mutant proved equivalent: no
program behaviour differs, with the reason) is counted as *equivalent*. The kill rate is killed / (mutants -
equivalent): every other status (survived, no tests, timeout, ...) counts against it; the raw rate killed /
mutants is printed beside it.

The run is niced (``nice -n 19``) by default: it is a background job, not part of the default CI.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter, defaultdict
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "mutants"

# area -> (description, the files it covers, mutmut name patterns)
AREAS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "occupancy": ("NVIDIA's occupancy rules", ("perfmodel/occupancy.py",), ("perfmodel.occupancy.*",)),
    "counters": ("the simulator's counters: memory requests, sectors, wavefronts; the result; issue classes; "
                 "cp.async's groups and data races",
                 ("perfmodel/sim/memory.py", "perfmodel/sim/result.py", "perfmodel/sim/issue.py",
                  "perfmodel/sim/async_copy.py"),
                 ("perfmodel.sim.memory.*", "perfmodel.sim.result.*", "perfmodel.sim.issue.*",
                  "perfmodel.sim.async_copy.*")),
    "models": ("the seed CGMA model, the traffic estimate and the bottleneck model",
               ("perfmodel/model/seed.py", "perfmodel/model/traffic.py", "perfmodel/model/bottleneck.py"),
               ("perfmodel.model.seed.*", "perfmodel.model.traffic.*", "perfmodel.model.bottleneck.*")),
    "correctness": ("the output check: the references (those without a decorator; mutmut does not mutate "
                    "decorated functions) and the sampled run's merge-and-check of the outputs",
                    ("perfmodel/references.py", "perfmodel/analysis.py (_sampled)"),
                    ("perfmodel.references.*", "perfmodel.analysis.x__sampled__mutmut_*")),
    "shortcuts": ("the simulator's exact shortcuts: the invariance proof, block replication, loop fast-forward",
                  ("perfmodel/sim/invariance.py", "perfmodel/sim/replicate.py", "perfmodel/sim/loops.py"),
                  ("perfmodel.sim.invariance.*", "perfmodel.sim.replicate.*", "perfmodel.sim.loops.*")),
    "coalescing": ("per-generation coalescing rules and atomic contention counts",
                   ("perfmodel/sim/coalesce.py", "perfmodel/sim/atomic_count.py"),
                   ("perfmodel.sim.coalesce.*", "perfmodel.sim.atomic_count.*")),
    "compiled": ("what the compiled code decides: loads in flight per warp (PTX basic blocks), which atomics the "
                 "compiler combines across a warp, ptxas's further unrolling of loops regrouped from the SASS",
                 ("perfmodel/model/mlp.py", "perfmodel/sim/uniform.py", "perfmodel/sim/regroup.py"),
                 ("perfmodel.model.mlp.*", "perfmodel.sim.uniform.*", "perfmodel.sim.regroup.*")),
}


def _status(exit_code) -> str:
    from mutmut.stats import status_by_exit_code   # the tool's own mapping of its worker exit codes

    return status_by_exit_code[exit_code]


def _module_of(meta: Path) -> str:
    rel = meta.relative_to(MUTANTS).with_suffix("").with_suffix("")     # x/y.py.meta -> x/y
    return ".".join(rel.parts)


def load_results() -> dict[str, tuple[str, str, float | None]]:
    """mutant name -> (source file, status, seconds) for every mutant mutmut generated."""
    out = {}
    for meta in sorted(MUTANTS.rglob("*.py.meta")):
        data = json.loads(meta.read_text())
        durations = data.get("durations_by_key", {}) or {}
        source = str(meta.relative_to(MUTANTS))[: -len(".meta")]
        for name, code in (data.get("exit_code_by_key") or {}).items():
            out[name] = (source, _status(code), durations.get(name))
    return out


EQUIVALENT_FILE = ROOT / "bench" / "mutation_equivalent.toml"


def equivalents() -> list[dict]:
    """The mutants proved equivalent (bench/mutation_equivalent.toml): each entry names the file, the source line
    as it is (``before``) and as the mutant has it (``after``), both stripped, and why no test can tell them apart.
    An entry matches a mutant by its diff, not its number, so it survives mutmut renumbering a function's mutants
    and stops matching (the mutant counts against the area again) as soon as the line is rewritten."""
    import tomllib

    if not EQUIVALENT_FILE.exists():
        return []
    return tomllib.loads(EQUIVALENT_FILE.read_text())["equivalent"]


def mutant_diff(name: str) -> tuple[list[str], list[str]]:
    """The removed and added source lines of one mutant (``mutmut show``), stripped."""
    out = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=ROOT, capture_output=True,
                         text=True).stdout.splitlines()
    minus = [ln[1:].strip() for ln in out if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln[1:].strip() for ln in out if ln.startswith("+") and not ln.startswith("+++")]
    return minus, plus


def equivalent_reason(name: str, source: str) -> str | None:
    """Why the surviving mutant ``name`` of ``source`` is equivalent, or None when no entry matches it."""
    entries = [e for e in equivalents() if e["file"] == source]
    if not entries:
        return None
    minus, plus = mutant_diff(name)
    for e in entries:
        if minus == [e["before"]] and plus == [e["after"]]:
            return e["why"]
    return None


def in_area(name: str, area: str) -> bool:
    return any(fnmatch(name, pattern) for pattern in AREAS[area][2])


def sample_names(area: str, n: int, seed: int) -> list[str]:
    """A uniform random sample of ``n`` of the area's mutant names (all of them when it has at most ``n``)."""
    names = sorted(name for name in load_results() if in_area(name, area))
    if not names:
        # a fresh checkout: let mutmut generate mutants/ (and record the tests' coverage) with one tiny mutant
        run([], 1, 19, ["perfmodel.occupancy.x__round_up__mutmut_1"])
        names = sorted(name for name in load_results() if in_area(name, area))
    if not names:
        raise SystemExit(f"mutation.py: no mutants of area {area!r} in {MUTANTS}")
    return sorted(random.Random(f"{seed}:{area}").sample(names, min(n, len(names))))


SETUP_SECONDS = 600      # mutmut's own start of a run: changed mutants generated, the clean test run (measured)
DEFAULT_WALL_PER_MUTANT = 10.0
RUN_LOG = MUTANTS / "bench-runs.json"   # one entry per run of this script: mutants tested and wall time


def _log_run(names: list[str] | None, before: dict, wall: float) -> None:
    after = load_results()
    tested = [n for n, (_src, status, _d) in after.items()
              if status != "not checked" and before.get(n, (None, "not checked"))[1] == "not checked"]
    log = json.loads(RUN_LOG.read_text()) if RUN_LOG.exists() else []
    log.append({"tested": len(tested), "wall_seconds": round(wall), "requested": len(names) if names else None,
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    RUN_LOG.write_text(json.dumps(log, indent=1))


def wall_per_mutant() -> tuple[float, int]:
    """Wall seconds a mutant, after mutmut's set-up, over the runs logged so far (mutmut 3.8's fork server does
    not record a mutant's own time), and how many mutants that is over; DEFAULT_WALL_PER_MUTANT without a log."""
    log = json.loads(RUN_LOG.read_text()) if RUN_LOG.exists() else []
    runs = [r for r in log if r["tested"] >= 10]
    n = sum(r["tested"] for r in runs)
    if not n:
        return DEFAULT_WALL_PER_MUTANT, 0
    return max(1.0, sum(max(0, r["wall_seconds"] - SETUP_SECONDS) for r in runs) / n), n


def sizes_for(areas: list[str], minutes: float, least: int = 40) -> dict[str, int]:
    """Sample sizes that fit one run of ``areas`` in about ``minutes`` at the measured wall time per mutant,
    split evenly between the areas (at least ``least`` each)."""
    rate, _n = wall_per_mutant()
    per_area = max(0.0, minutes * 60 - SETUP_SECONDS) / rate / len(areas)
    return {area: max(least, int(per_area)) for area in areas}


def summary(areas: list[str], samples: dict[str, list[str]] | None = None) -> dict:
    results = load_results()
    doc = {}
    for area in areas:
        per_file: dict[str, Counter] = defaultdict(Counter)
        seconds = 0.0
        chosen = set(samples[area]) if samples else None
        for name, (source, status, dur) in results.items():
            if in_area(name, area) and (chosen is None or name in chosen):
                if status == "survived" and equivalent_reason(name, source) is not None:
                    status = "equivalent"
                per_file[source][status] += 1
                seconds += dur or 0.0
        total = Counter()
        for c in per_file.values():
            total.update(c)
        doc[area] = {"files": {f: dict(c) for f, c in sorted(per_file.items())}, "total": dict(total),
                     "mutant_seconds": round(seconds),
                     "population": sum(1 for name in results if in_area(name, area)),
                     "sampled": chosen is not None}
    return doc


def _row(label: str, c: dict) -> str:
    n = sum(c.values())
    checked = n - c.get("not checked", 0)
    killed, survived, equivalent = c.get("killed", 0), c.get("survived", 0), c.get("equivalent", 0)
    raw = f"{100 * killed / checked:5.1f}%" if checked else "   - "
    counted = checked - equivalent
    rate = f"{100 * killed / counted:5.1f}%" if counted else "   - "
    other = sum(v for k, v in c.items() if k not in ("killed", "survived", "equivalent", "no tests", "timeout",
                                                      "not checked"))
    return (f"  {label:34s} {n:6d} {checked:7d} {killed:6d} {survived:8d} {equivalent:5d} {c.get('no tests', 0):8d} "
            f"{c.get('timeout', 0):7d} {other:5d}  {raw}  {rate}")


def print_summary(doc: dict) -> None:
    head = (f"  {'file':34s} {'mutants':>6s} {'checked':>7s} {'killed':>6s} {'survived':>8s} {'equiv':>5s} "
            f"{'no tests':>8s} {'timeout':>7s} {'other':>5s}   raw%  kill%")
    for area, d in doc.items():
        if area not in AREAS:
            continue
        print(f"{area}: {AREAS[area][0]}")
        print(head)
        for f, c in d["files"].items():
            print(_row(f, c))
        print(_row("total", d["total"]))
        what = f"a random sample of the area's {d['population']} mutants" if d["sampled"] else "every mutant"
        print(f"  ({what})")


def run(areas: list[str], max_children: int, nice: int, names: list[str] | None = None) -> float:
    patterns = names if names is not None else [p for a in areas for p in AREAS[a][2]]
    cmd = ["nice", "-n", str(nice), sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children),
           *patterns]
    print("+", " ".join(cmd), flush=True)
    before = load_results()
    started = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=False, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    wall = time.perf_counter() - started
    _log_run(names, before, wall)
    return wall


def survivors(areas: list[str], samples: dict[str, list[str]] | None = None) -> None:
    results = load_results()
    chosen = {n for names in samples.values() for n in names} if samples else None
    for name, (source, status, _) in sorted(results.items()):
        if status in ("survived", "no tests", "timeout") and any(in_area(name, a) for a in areas) and (
                chosen is None or name in chosen):
            diff = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=ROOT, capture_output=True,
                                  text=True).stdout
            why = equivalent_reason(name, source) if status == "survived" else None
            label = f"equivalent: {why}" if why else status
            print(f"### {name} ({label})\n{diff}")


def recheck(areas: list[str], tests: list[str], samples: dict[str, list[str]] | None = None,
            statuses: tuple[str, ...] = ("survived", "no tests", "timeout")) -> int:
    """Run ``tests`` (files of this checkout's tests/) against each surviving, untested or timed-out mutant of
    ``areas`` in mutants/, the way mutmut's workers do (``MUTANT_UNDER_TEST``) but in a fresh process with no CPU
    limit: shows a new test killing survivors before the next full run records it, tells a real timeout from a
    worker whose tests simply outran mutmut's estimate, and exercises code that runs at import (a decorator's
    registration), which a fork-server worker never re-runs."""
    results = load_results()
    chosen = {n for names in samples.values() for n in names} if samples else None
    names = [n for n, (src, status, _) in sorted(results.items()) if status in statuses
             and any(in_area(n, a) for a in areas) and (chosen is None or n in chosen)
             and not (status == "survived" and equivalent_reason(n, src) is not None)]
    killed = 0
    for name in names:
        env = dict(os.environ, MUTANT_UNDER_TEST=name, PYTHONDONTWRITEBYTECODE="1")
        # one process (-n 0): under pytest-xdist a run stopped by -x exits 2 ("interrupted"), not 1
        proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-x", "-q", "-p", "no:cacheprovider",
                               *[str(ROOT / t) for t in tests]], cwd=MUTANTS, env=env, capture_output=True,
                              text=True)
        status = "killed" if proc.returncode == 1 else ("survived" if proc.returncode == 0 else
                                                        f"pytest exit {proc.returncode}")
        killed += status == "killed"
        print(f"{status:9s} {name}", flush=True)
    print(f"{killed} of {len(names)} surviving mutants killed by {' '.join(tests)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("areas", nargs="*", help=f"areas: {', '.join(AREAS)} (default: all)")
    parser.add_argument("--summary", action="store_true", help="print the summary of the results so far, run nothing")
    parser.add_argument("--survivors", action="store_true", help="show the surviving mutants' diffs, run nothing")
    parser.add_argument("--json", action="store_true", help="the summary as one JSON document")
    parser.add_argument("--status", action="append", default=[],
                        help="with --recheck: only the mutants of this mutmut status (repeatable)")
    parser.add_argument("--recheck", action="append", default=[], metavar="TEST_FILE",
                        help="run this test file against the area's survivors (repeatable), run nothing else")
    parser.add_argument("--max-children", type=int, default=2, help="mutants tested at once (default 2)")
    parser.add_argument("--nice", type=int, default=19, help="niceness of the run (default 19)")
    parser.add_argument("--together", action="store_true",
                        help="one mutmut run for all the areas (one clean-test run instead of one per area)")
    parser.add_argument("--sample", type=int, default=0, help="test a random sample of N mutants per area")
    parser.add_argument("--seed", type=int, default=18, help="the sample's random seed (default 18)")
    parser.add_argument("--minutes", type=float, default=0,
                        help="choose each area's sample size so that one --together run fits in about this many "
                             "minutes, from the seconds per mutant measured so far (e.g. 120: the two-hour job)")
    args = parser.parse_args(argv)
    areas = args.areas or list(AREAS)
    unknown = [a for a in areas if a not in AREAS]
    if unknown:
        parser.error(f"unknown area(s) {unknown}; known: {list(AREAS)}")
    if args.recheck:
        return recheck(areas, args.recheck,
                       {a: sample_names(a, args.sample, args.seed) for a in areas} if args.sample else None,
                       tuple(args.status) or ("survived", "no tests", "timeout"))
    if args.survivors:
        survivors(areas, {a: sample_names(a, args.sample, args.seed) for a in areas} if args.sample else None)
        return 0
    if args.minutes:
        sizes = sizes_for(areas, args.minutes)
        rate, count = wall_per_mutant()
        print(f"{rate:.1f} s of wall time a mutant (measured over {count} mutants), {SETUP_SECONDS} s of set-up: "
              + ", ".join(f"{area} {n}" for area, n in sizes.items()))
        samples = {a: sample_names(a, sizes[a], args.seed) for a in areas}
        if not args.summary:
            args.together = True
    else:
        samples = {a: sample_names(a, args.sample, args.seed) for a in areas} if args.sample else None
    walls = {}
    if not args.summary and args.together:
        names = [n for a in areas for n in samples[a]] if samples else None
        wall = run(areas, args.max_children, args.nice, names)
        walls = {"+".join(areas): wall}
    elif not args.summary:
        for area in areas:
            walls[area] = run([area], args.max_children, args.nice, samples[area] if samples else None)
            print_summary(summary([area], samples))
    doc = summary(areas, samples)
    for area, wall in walls.items():
        doc.setdefault(area, {})["wall_seconds"] = round(wall)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print_summary(doc)
        for area, wall in walls.items():
            print(f"{area}: wall time {wall / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
