"""perfmodel CLI: `perfmodel check BUDGET` - fail CI when modelled performance gets worse.

Exit codes: 0 every entry passed; 1 a threshold, a baseline comparison or a launch failed; 2 the budget, the
baseline, a kernel spec or a device profile is invalid (raised as a ``PerfmodelError``, printed by main).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from perfmodel.cli.common import JsonOption, check_output_path, console, err_console, parse_defines


def check(
    budget: Annotated[Path, typer.Argument(help="The budget YAML (e.g. perf-budget.yaml).", show_default=False)],
    baseline: Annotated[Path | None, typer.Option(
        "--baseline", help="Baseline JSON to compare with (default: the budget's 'baseline:' key, else "
                           "BUDGET_STEM.baseline.json beside the budget, compared when it exists).")] = None,
    update_baseline: Annotated[bool, typer.Option(
        "--update-baseline", help="Write every entry's current metrics to the baseline file instead of "
                                  "comparing with it (thresholds are still checked).")] = False,
    no_baseline: Annotated[bool, typer.Option(
        "--no-baseline", help="Check thresholds only, even if a baseline file exists.")] = False,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here.")] = None,
    markdown: Annotated[Path | None, typer.Option(
        "--markdown", help="Write a Markdown summary (for a pull-request comment) here.")] = None,
    defines: Annotated[list[str] | None, typer.Option(
        "-D", "--define", help="Set a param in every entry whose kernel declares it: -D NAME=VALUE "
                               "(repeatable), e.g. -D TILE_WIDTH=8 to try a change against the baseline.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Print every check (the whole table and each "
                                                            "case's notes), not only the failures.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Analyze every entry anew: neither read nor write "
                                                              "the on-disk result cache.")] = False,
    l2: Annotated[str | None, typer.Option(
        "--l2", help="L2 state at launch for every entry: 'cold' (nothing resident, as an L2-flushed or first "
                     "launch) or 'warm' (a previous identical launch left what fits in L2, as back-to-back launches "
                     "in a timing loop). Default: each entry's 'l2:' key, else cold.")] = None,
    json_output: JsonOption = False,
) -> None:
    """Analyze every budget entry on its devices; fail (exit 1) on a broken threshold or a regression
    against the baseline; exit 2 on invalid input."""
    from perfmodel.check import (
        CheckInputError,
        apply_l2,
        apply_overrides,
        baseline_from,
        load_baseline,
        load_budget,
        run_check,
        validate_references,
        write_baseline,
    )
    from perfmodel.check.budget import display_path

    from perfmodel.cli.analyze import parse_l2

    state = None if l2 is None else parse_l2(l2)
    if no_baseline and (baseline is not None or update_baseline):
        raise CheckInputError("--no-baseline cannot be combined with --baseline or --update-baseline")
    check_output_path(junit, "--junit", create_parents=True)
    check_output_path(markdown, "--markdown", create_parents=True)
    plan = load_budget(budget)
    plan = apply_overrides(plan, parse_defines(defines))
    plan = apply_l2(plan, state)
    validate_references(plan)

    baseline_path = baseline if baseline is not None else plan.default_baseline_path()
    declared = baseline is not None or plan.baseline is not None
    if update_baseline:
        check_output_path(baseline_path, "--update-baseline: the baseline", create_parents=True)
        check_output_path(baseline_path.with_name(baseline_path.name + ".tmp"),
                          "--update-baseline: the temporary baseline", create_parents=True)
    reference = None
    notes = []
    if not update_baseline and not no_baseline:
        if declared or baseline_path.exists():
            reference = load_baseline(baseline_path)  # a declared baseline that is missing is an error
        else:
            notes.append(f"no baseline at {display_path(baseline_path)}: thresholds only "
                         "(record one with --update-baseline)")

    from perfmodel.cache import ResultCache, cached_analyze
    from perfmodel.report.progress import progress_bar, wants_progress

    cache = ResultCache(enabled=not no_cache)
    total = sum(len(entry.targets()) for entry in plan.entries)
    started = [0]
    try:
        with progress_bar("check", err_console, wants_progress(err_console, json_output)) as update:
            def progress(what: str) -> None:
                update(started[0], total, what)
                started[0] += 1

            from perfmodel.check import runner

            result = run_check(plan, baseline=reference, analyze=cached_analyze(cache, runner._default_analyze()),
                               progress=progress)
    finally:
        cache.close()
    result.notes.extend(notes)
    if reference is not None:
        result.baseline = display_path(baseline_path)
    if update_baseline:
        write_baseline(baseline_from(result, plan), baseline_path)
        result.baseline, result.baseline_written = display_path(baseline_path), True
        skipped = [case.name for case in result.cases if case.error is not None]
        result.notes.append(f"baseline written to {display_path(baseline_path)}"
                            + (f" (without {', '.join(skipped)}: no metrics)" if skipped else ""))

    if junit is not None:
        from perfmodel.report.junit import write_junit

        write_junit(result, junit)
    if markdown is not None:
        from perfmodel.report.markdown import write_markdown

        write_markdown(result, markdown)
    if json_output:
        from perfmodel.report.jsonout import print_json

        print_json(result.to_json())
    else:
        from perfmodel.report.check_view import render_check

        out = console
        if not console.is_terminal and "COLUMNS" not in os.environ:
            from rich.console import Console

            out = Console(width=160)  # a CI log is wide enough for the table; rich would assume 80 columns
        render_check(result, out, verbose=verbose)
    raise typer.Exit(result.exit_code)


def register(app: typer.Typer) -> None:
    app.command("check", no_args_is_help=True)(check)
