"""perfmodel CLI: ``validate`` (run a spec on a real GPU; needs the ``gpu`` extra) and ``accuracy`` (model
against a committed measured dataset; no GPU needed)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfmodel.cli.common import (DefineOption, JsonOption, check_output_path, console, err_console, parse_defines,
                                  require_devices)


def validate(
    kernel: Annotated[str, typer.Argument(help="Shipped kernel name or path to a spec .yaml.")],
    defines: DefineOption = None,
    device_index: Annotated[int, typer.Option("--device-index", help="CUDA device ordinal.")] = 0,
    ncu: Annotated[bool, typer.Option("--ncu", help="Also collect Nsight Compute counters (ncu on PATH).")] = False,
    repeats: Annotated[int, typer.Option("--max-repeats", help="Most timed launches per mode.")] = 100,
    out: Annotated[Path | None, typer.Option("--out", help="Also write the JSON record to this file.")] = None,
    json_out: JsonOption = False,
) -> None:
    """Run KERNEL on a real GPU with the same source, defines, inputs and launch as the simulator: check the
    outputs, time it (CUDA events, median after warm-up), read registers / static shared memory and the CUDA
    occupancy API's blocks per SM; with --ncu also the hardware counters that match our counts."""
    from perfmodel.gpu.env import clocks, device_properties, require_cupy, versions
    from perfmodel.gpu.runner import run_kernel
    from perfmodel.report.jsonout import print_json, to_jsonable

    check_output_path(out, "--out")
    cp = require_cupy()  # exits 2 with an install hint when CuPy is missing
    overrides = parse_defines(defines)
    run = run_kernel(kernel, overrides, device_index=device_index, max_repeats=repeats)
    record = run.to_json()
    if ncu:
        from perfmodel.gpu import ncu as ncu_mod

        found, info = ncu_mod.collect_all([{"kernel": kernel, "overrides": overrides}], device_index=device_index)
        record["ncu"] = found[0]
        record["ncu_info"] = info
    document = {"device": device_properties(cp, device_index), "clocks": clocks(device_index),
                "versions": versions(cp), "cases": [record]}
    if out is not None:
        import json

        out.write_text(json.dumps(to_jsonable(document), indent=1))
    if json_out:
        print_json(document)
        return
    from perfmodel.report.accuracy_view import render_validate

    render_validate(console, document)
    if run.correct is False:
        raise typer.Exit(1)


def accuracy(
    dataset: Annotated[Path, typer.Argument(help="Measured dataset, e.g. validation/h100.json.")],
    device: Annotated[str | None, typer.Option("--device", help="Device profile (default: the dataset's).")] = None,
    sample: Annotated[int | None, typer.Option("--sample", min=0, help="Analyse large grids from N sampled blocks.")] = None,
    kernel: Annotated[list[str] | None, typer.Option("--kernel", "-k", help="Only these kernels (repeatable).")] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Write a markdown table to FILE.")] = None,
    l2: Annotated[str, typer.Option("--l2", help="Compare with the cold (L2 flushed, default) or warm "
                                                 "(back-to-back) measured times, predicting with the same L2 state.")] = "cold",
    json_out: JsonOption = False,
) -> None:
    """Model against measurement for every case of DATASET: predicted vs measured time with the error, our
    global/shared counts vs the hardware counters, our blocks per SM vs the CUDA occupancy API, and a summary."""
    from perfmodel.gpu.accuracy import accuracy as run_accuracy
    from perfmodel.report.accuracy_view import render_accuracy, to_markdown
    from perfmodel.report.jsonout import print_json

    check_output_path(markdown, "--markdown")
    if device is not None:
        require_devices([device])
    from perfmodel.cli.analyze import parse_l2
    from perfmodel.gpu.accuracy import default_analyze, load_dataset
    from perfmodel.report.progress import progress_bar, wants_progress

    total = len([c for c in load_dataset(dataset)["cases"] if not kernel or c["kernel"] in kernel])
    base, done = default_analyze(), [0]
    with progress_bar("accuracy", err_console, wants_progress(err_console, json_out)) as update:
        def analyze_with_progress(*args, **kwargs):
            update(done[0], total, str(args[0]) if args else "")
            try:
                return base(*args, **kwargs)
            finally:
                done[0] += 1
                update(done[0], total)

        report = run_accuracy(dataset, device, sample=sample, kernels=kernel or None, analyze=analyze_with_progress,
                              l2=parse_l2(l2))
    if markdown is not None:
        markdown.write_text(to_markdown(report))
    if json_out:
        print_json(report.to_json())
        return
    render_accuracy(console, report)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
    app.command("accuracy")(accuracy)
