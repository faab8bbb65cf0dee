"""perfmodel CLI: ``perfmodel devices list|show|validate|probe`` - the device profiles."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfmodel.cli.common import JsonOption, console

devices_app = typer.Typer(help="Device profiles: list them, show one with the source of every value, validate "
                               "your own.", no_args_is_help=True)


def _device_json(device) -> dict:
    from perfmodel.report.devices_view import device_fields

    return {
        "id": device.id, "name": device.name, "compute_capability": device.compute_capability,
        "file": device.source_file,
        "fields": {name: {"value": value, "source": device.source_of(name).source,
                          "note": device.source_of(name).note} for name, value in device_fields(device)},
        "sources": device.sources, "notes": device.notes, "measured": device.measured,
    }


@devices_app.command("list")
def list_command(json_output: JsonOption = False) -> None:
    """Every profile on the search path (PERFMODEL_DEVICE_PATH folders first, then the shipped ones)."""
    from perfmodel.devices import check_device_file, device_files

    devices, problems = [], []
    for path in device_files().values():
        device, found = check_device_file(path)
        if device is not None:
            devices.append(device)
        problems.extend(found)
    devices.sort(key=lambda d: (d.cc, d.id))
    if json_output:
        from perfmodel.report.jsonout import print_json

        print_json({"devices": [{"id": d.id, "name": d.name, "compute_capability": d.compute_capability,
                                 "architecture": d.architecture, "sm_count": d.sm_count,
                                 "clock_hz": d.clock_hz, "peak_fp32_flops": d.peak_fp32_flops,
                                 "dram_bandwidth_bytes_per_s": d.dram_bandwidth_bytes_per_s,
                                 "file": d.source_file} for d in devices],
                    "problems": problems})
    else:
        from perfmodel.report.devices_view import render_device_list

        render_device_list(devices, problems, console)
    if problems:
        raise typer.Exit(2)


@devices_app.command("show", no_args_is_help=True)
def show_command(
    name: Annotated[str, typer.Argument(help="Profile name (e.g. g80) or path to a .yaml profile.")],
    json_output: JsonOption = False,
) -> None:
    """Every value of one profile with its source and note."""
    from perfmodel.devices import load_device

    device = load_device(name)
    if json_output:
        from perfmodel.report.jsonout import print_json

        print_json(_device_json(device))
        return
    from perfmodel.report.devices_view import render_device

    render_device(device, console)


@devices_app.command("validate", no_args_is_help=True)
def validate_command(
    files: Annotated[list[Path], typer.Argument(help="Profile files to check.")],
    strict: Annotated[bool, typer.Option("--strict", help="Also require every value to name its source "
                                         "(the standard for shipped profiles).")] = False,
    json_output: JsonOption = False,
) -> None:
    """Check profile files against the schema and for plausibility (finite, in-range values; peak FP32 against
    lanes x SMs x clock; DRAM bandwidth against bus width x memory clock); exit 2 if any is invalid, listing every
    problem. Values far from the compute capability's norm are warnings, never fatal."""
    from perfmodel.devices import check_device_file, plausibility_warnings, unsourced_fields

    results = []
    for path in files:
        device, problems = check_device_file(path)
        if device is not None and strict:
            problems = [f"{path}: field {field!r}: expected a source (write {{value: ..., source: KEY}})"
                        for field in unsourced_fields(device)]
        warnings = [f"{path}: {w}" for w in plausibility_warnings(device)] if device is not None else []
        results.append({"file": str(path), "valid": not problems, "id": device.id if device else None,
                        "problems": problems, "warnings": warnings})
    if json_output:
        from perfmodel.report.jsonout import print_json

        print_json({"valid": all(r["valid"] for r in results), "files": results})
    else:
        from rich.text import Text

        for r in results:
            if r["valid"]:
                console.print(Text.assemble(("ok ", "bold green"), f"{r['file']} ({r['id']})"))
            else:
                console.print(Text.assemble(("invalid ", "bold red"), r["file"]))
                for problem in r["problems"]:
                    console.print(f"  {problem}", soft_wrap=True, highlight=False, markup=False)
            for warning in r["warnings"]:
                console.print(Text.assemble(("  warning ", "yellow"), warning), soft_wrap=True, highlight=False)
    if not all(r["valid"] for r in results):
        raise typer.Exit(2)


@devices_app.command("probe")
def probe_command(
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the profile here (default: print it).")] = None,
    device_index: Annotated[int, typer.Option("--device-index", help="CUDA device ordinal.")] = 0,
    measure: Annotated[bool, typer.Option("--measure", help="Also run the microbenchmarks (DRAM copy, FMA peak, L2 "
                                          "reads; about 10 s) and record them as measured values with the date.")] = False,
    profile_id: Annotated[str | None, typer.Option("--id", help="Profile id (default: the output file's name, "
                                                   "else the GPU's name).")] = None,
    from_attributes: Annotated[Path | None, typer.Option("--from-attributes", help="Build the profile from a recorded "
                                                         "attribute set (JSON, as --save-attributes writes it) "
                                                         "instead of a GPU.")] = None,
    save_attributes: Annotated[Path | None, typer.Option("--save-attributes", help="Also write the raw attributes "
                                                         "and measurements as JSON.")] = None,
) -> None:
    """Build a profile from the GPU in this machine: its device attributes (CuPy, the gpu extra), the rules of its
    compute capability (perfmodel/generations.py) for what attributes cannot give, and with --measure short
    microbenchmarks. The profile is validated before it is written; exit 2 if it is not valid."""
    import json

    from perfmodel.gpu import probe

    if from_attributes is not None:
        record = json.loads(from_attributes.read_text())
        measured = record.get("measured")
    else:
        record = probe.read_attributes(device_index)
        measured = probe.measure(device_index, record) if measure else None
        if measured is not None:
            record["measured"] = measured
    if save_attributes is not None:
        save_attributes.write_text(json.dumps(record, indent=1, default=str))
    if profile_id is None and output is not None:
        profile_id = output.stem
    text = probe.dump_profile(probe.profile_from_attributes(record, measured, profile_id))
    if output is None:
        import sys

        sys.stdout.write(text)
        return
    output.write_text(text)
    _validate_written(output)


def _validate_written(path: Path) -> None:
    from perfmodel.devices import check_device_file, plausibility_warnings

    device, problems = check_device_file(path)
    if device is None:
        for problem in problems:
            console.print(f"  {problem}", soft_wrap=True, highlight=False, markup=False)
        raise typer.Exit(2)
    console.print(f"wrote {path} ({device.name}, CC {device.compute_capability}, {device.sm_count} SMs)",
                  highlight=False, markup=False)
    for warning in plausibility_warnings(device):
        console.print(f"  warning {warning}", soft_wrap=True, highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.add_typer(devices_app, name="devices")
