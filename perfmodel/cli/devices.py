"""perfmodel CLI: ``perfmodel devices list|show|validate`` - the device profiles."""
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
    """Check profile files against the schema; exit 2 if any is invalid, listing every problem."""
    from perfmodel.devices import check_device_file, unsourced_fields

    results = []
    for path in files:
        device, problems = check_device_file(path)
        if device is not None and strict:
            problems = [f"{path}: field {field!r}: expected a source (write {{value: ..., source: KEY}})"
                        for field in unsourced_fields(device)]
        results.append({"file": str(path), "valid": not problems, "id": device.id if device else None,
                        "problems": problems})
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
    if not all(r["valid"] for r in results):
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    app.add_typer(devices_app, name="devices")
