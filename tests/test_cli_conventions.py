"""CLI conventions: --version, shell completion, NO_COLOR, quiet progress without a TTY, `check` printing the
failures and a one-line summary by default (everything with -v), and a cached check re-run equal to an uncached
one."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import version as dist_version
from pathlib import Path

from tests.test_check_cli import TILED, tiled_on, write_budget

# the installed console script (its name is what completion keys on), beside this Python
SCRIPT = Path(sys.executable).with_name("perfmodel")
PERFMODEL = [str(SCRIPT)] if SCRIPT.is_file() else [sys.executable, "-m", "perfmodel.cli.entry"]
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def _run(*args, env=None, **kwargs) -> subprocess.CompletedProcess:
    full = {**os.environ, **(env or {})}
    full = {k: v for k, v in full.items() if v is not None}   # None: leave the variable out
    return subprocess.run([*PERFMODEL, *map(str, args)], capture_output=True, text=True, env=full, timeout=300,
                          **kwargs)


def _colour_codes(text: str) -> list[str]:
    """The SGR parameters that set a foreground or background colour (30-38, 40-48, 90-97, 100-107)."""
    found = []
    for params in SGR.findall(text):
        for p in (params or "0").split(";"):
            if p.isdigit() and (30 <= int(p) <= 38 or 40 <= int(p) <= 48 or 90 <= int(p) <= 97
                                or 100 <= int(p) <= 107):
                found.append(p)
    return found


def test_version_is_the_installed_distributions(cli):
    code, out, _ = cli("--version")
    assert code == 0
    assert out.strip() == f"perfmodel {dist_version('perfmodel')}"


def test_shell_completion_completes_commands_and_options(tmp_path):
    done = _run(env={"_PERFMODEL_COMPLETE": "complete_bash", "COMP_WORDS": "perfmodel sw", "COMP_CWORD": "1"})
    assert done.stdout.split() == ["sweep"]
    done = _run(env={"_PERFMODEL_COMPLETE": "complete_bash", "COMP_WORDS": "perfmodel sweep matmul_tiled --dev",
                     "COMP_CWORD": "3"})
    assert set(done.stdout.split()) == {"--device", "--devices"}
    home = tmp_path / "home"
    home.mkdir()
    # typer detects the user's shell from the parent processes (shellingham), which depends on how the tests were
    # started; its test switch makes --install-completion take the shell's name instead
    done = _run("--install-completion", "bash", env={"HOME": str(home), "SHELL": "/bin/bash",
                                                     "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert done.returncode == 0, done.stderr
    installed = home / ".bash_completions" / "perfmodel.sh"
    assert "_PERFMODEL_COMPLETE=complete_bash" in installed.read_text()
    assert str(installed) in (home / ".bashrc").read_text()


def test_no_color_drops_every_colour(tmp_path):
    args = ("occupancy", "--device", "g80", "--threads", "256", "--regs", "10", "--smem", "2092")
    coloured = _run(*args, env={"FORCE_COLOR": "1", "NO_COLOR": None})
    assert coloured.returncode == 0 and _colour_codes(coloured.stdout), "FORCE_COLOR should give colours"
    env = {"FORCE_COLOR": "1", "NO_COLOR": "1"}
    plain = _run(*args, env=env)
    assert plain.returncode == 0 and _colour_codes(plain.stdout) == []
    sweep = _run("sweep", "matmul_tiled", "--devices", "g80,h100", "--vary", "TILE_WIDTH=8,16", "-D", "Width=32",
                 env=env)
    assert sweep.returncode == 0, sweep.stderr
    assert _colour_codes(sweep.stdout) == [] and "★ best" in sweep.stdout


def test_progress_is_quiet_without_a_tty(tmp_path):
    done = _run("sweep", "matmul_tiled", "--device", "g80", "--vary", "TILE_WIDTH=8,16", "-D", "Width=32",
                "--no-cache")
    assert done.returncode == 0 and done.stderr == ""


def test_check_prints_failures_by_default_and_everything_with_v(tmp_path, cli):
    budget = write_budget(tmp_path, [tiled_on(["g80", "h100"])], baseline="perf-baseline.json")
    code, out, _ = cli("check", budget, "--update-baseline")
    assert code == 0, out
    code, quiet, _ = cli("check", budget)
    assert code == 0
    assert quiet.strip().splitlines()[-1].startswith("PASS: 2 cases")
    assert len(quiet.strip().splitlines()) <= 2          # the summary (and nothing else to say)
    code, regressed, _ = cli("check", budget, "-D", "TILE_WIDTH=8")
    assert code == 1
    lines = regressed.strip().splitlines()
    failing = [line for line in lines if line.startswith("  tiled on ")]
    assert failing and all("fell" in line or "rose" in line or "below" in line or "above" in line
                           or "differ" in line or "changed" in line for line in failing)
    assert lines[-1].startswith("FAIL: 2 of 2 cases failed")
    assert " pass " not in regressed and "│ pass" not in regressed   # no passing rows by default
    code, verbose, _ = cli("check", budget, "-D", "TILE_WIDTH=8", "-v")
    assert code == 1
    assert "pass" in verbose and len(verbose.splitlines()) > len(lines) + 10
    (tmp_path / "line_counts.json").write_text(json.dumps({"default": len(lines),
                                                           "verbose": len(verbose.splitlines())}))


def test_cached_check_equals_uncached(tmp_path, cli):
    budget = write_budget(tmp_path, [TILED])
    code, first, _ = cli("check", budget, "--json", "--no-cache")
    assert code == 0
    for _ in range(2):   # the first fills the cache, the second is served from it
        code, cached, _ = cli("check", budget, "--json")
        assert code == 0
        strip = lambda doc: [{k: v for k, v in c.items() if k != "seconds"} for c in json.loads(doc)["cases"]]
        assert strip(cached) == strip(first)

