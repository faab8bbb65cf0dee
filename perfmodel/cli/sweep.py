"""perfmodel CLI: ``sweep`` (what-if over params on one or more devices) and ``compare`` (one launch, or each
``--vary`` combination, across devices)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfmodel.cli.analyze import L2Option, RegsOption, SampleOption, SpecArg, parse_l2, parse_regs
from perfmodel.cli.common import (DefineOption, JsonOption, check_output_path, console, err_console, parse_defines,
                                  require_devices)
from perfmodel.errors import PerfmodelError

VaryOption = Annotated[
    list[str] | None,
    typer.Option("--vary", help="NAME=v1,v2,... or NAME=start:stop:x2 (or :+step, or :Nlog); repeat for a "
                                "Cartesian product."),
]
CsvOption = Annotated[Path | None, typer.Option("--csv", help="Also write every column of the table as CSV to FILE.")]
JobsOption = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Run points in N parallel processes.")]
SchedulerOption = Annotated[
    str | None,
    typer.Option("--scheduler", help="Send the points to a Dask distributed scheduler at ADDRESS "
                                     "(tcp://host:8786; needs perfmodel[distributed]; docs/sweep.md)."),
]
NoCacheOption = Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the on-disk result cache "
                                                                "($PERFMODEL_RESULT_CACHE_DIR, docs/sweep.md).")]
PlotOption = Annotated[
    Path | None,
    typer.Option("--plot", help="Export the metric against the varied parameter, one series per device: "
                                "FILE.png, FILE.svg or FILE.html."),
]
MetricOption = Annotated[str, typer.Option("--metric", help="What the plot shows: gflops or time.")]
DEFAULT_DEVICES = "g80,fermi,kepler_gk110,v100,a100,h100"


def split_devices(text: str, option: str) -> list[str]:
    names = [d.strip() for d in text.split(",") if d.strip()]
    if not names:
        raise PerfmodelError(f"{option} {text!r}: give at least one device, e.g. {option} g80,h100")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise PerfmodelError(f"{option} {text!r}: {', '.join(duplicates)} given more than once")
    return names


def register(app: typer.Typer) -> None:
    @app.command("sweep")
    def sweep_command(
        kernel: SpecArg, vary: VaryOption = None,
        device: Annotated[str | None, typer.Option("--device", "-d", help="Device name(s) or .yaml path(s), "
                                                   "comma-separated.")] = None,
        devices: Annotated[str | None, typer.Option("--devices", help="Same as --device.")] = None,
        define: DefineOption = None, regs: RegsOption = None, sample: SampleOption = None, jobs: JobsOption = 1,
        scheduler: SchedulerOption = None, no_cache: NoCacheOption = False, plot: PlotOption = None,
        metric: MetricOption = "gflops", l2: L2Option = "cold", json_out: JsonOption = False,
        csv_path: CsvOption = None,
    ) -> None:
        """Analyse a kernel at every combination of the --vary values on each device: occupancy, CGMA, predicted
        GFLOPS; the best tile per device and problem size is marked."""
        l2 = parse_l2(l2)
        if device and devices:
            raise PerfmodelError("give the devices once: --device or --devices")
        if not (device or devices):
            raise PerfmodelError("sweep: give --device NAME (or --devices g80,fermi,h100)")
        if not vary:
            raise PerfmodelError("sweep: give at least one --vary NAME=values, e.g. --vary TILE_WIDTH=4,8,16,32")
        names = split_devices(device or devices, "--device" if device else "--devices")
        _run(kernel, names, list(vary), define, regs, sample, jobs, scheduler, no_cache, plot, metric, json_out,
             csv_path, "sweep", l2)

    @app.command("compare")
    def compare_command(
        kernel: SpecArg,
        devices: Annotated[str, typer.Option("--devices", help="Comma-separated device names or paths.")]
        = DEFAULT_DEVICES,
        vary: VaryOption = None, define: DefineOption = None, regs: RegsOption = None, sample: SampleOption = None,
        jobs: JobsOption = 1, scheduler: SchedulerOption = None, no_cache: NoCacheOption = False,
        plot: PlotOption = None, metric: MetricOption = "gflops", l2: L2Option = "cold", json_out: JsonOption = False,
        csv_path: CsvOption = None,
    ) -> None:
        """The same kernel launch side by side on several devices (with --vary: every combination on each)."""
        l2 = parse_l2(l2)
        _run(kernel, split_devices(devices, "--devices"), list(vary or []), define, regs, sample, jobs, scheduler,
             no_cache, plot, metric, json_out, csv_path, "compare", l2)


def _run(kernel, names, vary, define, regs, sample, jobs, scheduler, no_cache, plot, metric, json_out, csv_path,
         command, l2: str = "cold") -> None:
    from perfmodel.cache import ResultCache
    from perfmodel.report.progress import progress_bar, wants_progress
    from perfmodel.sweep import parse_vary, run_points

    check_output_path(csv_path, "--csv")
    if plot is not None:
        from perfmodel.report.plots import check_plot_path

        check_plot_path(plot)
    if metric not in ("gflops", "time"):
        raise PerfmodelError(f"--metric {metric!r}: expected gflops or time")
    from perfmodel.cli.analyze import is_cuda_file

    if is_cuda_file(kernel):
        raise PerfmodelError(f"{kernel}: {command} takes a spec; keep the CUDA file's launch as one first: perfmodel "
                             f"analyze {kernel} --kernel ... --grid ... --block ... --arg ... --save-spec k.yaml, "
                             f"then perfmodel {command} k.yaml")
    for item in vary:
        parse_vary(item)   # a bad range is an error before any device is loaded or anything runs
    require_devices(names)
    cache = ResultCache(enabled=not no_cache)
    try:
        with progress_bar(command, err_console, wants_progress(err_console, json_out)) as update:
            result = run_points(kernel, names, vary, params=parse_defines(define), regs=parse_regs(regs),
                                sample=sample, jobs=jobs, scheduler=scheduler, cache=cache,
                                progress=lambda done, total: update(done, total), l2=l2)
    finally:
        cache.close()
    doc = result.to_json()
    doc["cache"] = {"hits": result.cache_hits, "enabled": cache.enabled, "folder": str(cache.directory)}
    _output(doc, json_out, csv_path, plot, metric)


def _output(doc: dict, json_out: bool, csv_path: Path | None, plot: Path | None = None, metric: str = "gflops") -> None:
    """Write the CSV and the plot when asked, then print it as JSON or as the rendered table."""
    from perfmodel.report.sweep_view import render_sweep, sweep_csv

    points = doc.get("points") or []
    if points and not any(p.get("valid") for p in points):
        reasons = list(dict.fromkeys(str(p.get("reason") or "no reason given") for p in points))
        shown = "; ".join(reasons[:3]) + (f" (and {len(reasons) - 3} other reasons)" if len(reasons) > 3 else "")
        raise PerfmodelError(f"none of the {len(points)} launch(es) can run: {shown}")
    if csv_path is not None:
        csv_path.write_text(sweep_csv(doc))
    if plot is not None:
        from perfmodel.report.plots import sweep_figure_export

        sweep_figure_export(doc, plot, metric)
    if json_out:
        from perfmodel.report.jsonout import print_json

        print_json(doc)
        return
    render_sweep(doc, console)
    for path, what in ((csv_path, "CSV"), (plot, "plot")):
        if path is not None:
            console.print(f"wrote {what} {path}", style="dim")
