"""perfmodel CLI: ``sweep`` (what-if over params on one device) and ``compare`` (one launch across devices)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfmodel.cli.analyze import DeviceOption, KernelArg, RegsOption, SampleOption, parse_regs
from perfmodel.cli.common import DefineOption, JsonOption, check_output_path, console, parse_defines, require_devices
from perfmodel.errors import PerfmodelError

VaryOption = Annotated[
    list[str],
    typer.Option("--vary", help="NAME=v1,v2,... or NAME=start:stop:x2 (or :+step); repeat for a Cartesian product."),
]
CsvOption = Annotated[Path | None, typer.Option("--csv", help="Also write the table as CSV to FILE.")]
DEFAULT_DEVICES = "g80,fermi,kepler_gk110,v100,a100,h100"


def register(app: typer.Typer) -> None:
    @app.command("sweep")
    def sweep_command(kernel: KernelArg, device: DeviceOption, vary: VaryOption, define: DefineOption = None,
                      regs: RegsOption = None, sample: SampleOption = None, json_out: JsonOption = False,
                      csv_path: CsvOption = None) -> None:
        """Analyse a kernel at every combination of the --vary values: occupancy, CGMA, predicted GFLOPS."""
        from perfmodel.sweep import sweep

        check_output_path(csv_path, "--csv")
        require_devices([device])
        result = sweep(kernel, device, list(vary), params=parse_defines(define), regs=parse_regs(regs),
                       sample=sample)
        _output(result.to_json(), json_out, csv_path)
        if csv_path is not None and not json_out:
            console.print(f"wrote {csv_path}", style="dim")

    @app.command("compare")
    def compare_command(kernel: KernelArg,
                        devices: Annotated[str, typer.Option("--devices", help="Comma-separated device names or "
                                                                              "paths.")] = DEFAULT_DEVICES,
                        define: DefineOption = None, regs: RegsOption = None, sample: SampleOption = None,
                        json_out: JsonOption = False, csv_path: CsvOption = None) -> None:
        """The same kernel launch side by side on several devices."""
        from perfmodel.sweep import compare

        check_output_path(csv_path, "--csv")
        names = [d.strip() for d in devices.split(",") if d.strip()]
        if not names:
            raise PerfmodelError(f"--devices {devices!r}: give at least one device, e.g. --devices g80,h100")
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise PerfmodelError(f"--devices {devices!r}: {', '.join(duplicates)} given more than once")
        require_devices(names)
        result = compare(kernel, names, params=parse_defines(define), regs=parse_regs(regs), sample=sample)
        _output(result.to_json(), json_out, csv_path)


def _output(doc: dict, json_out: bool, csv_path: Path | None) -> None:
    """Write the table as CSV when asked, then print it as JSON or as the rendered table."""
    from perfmodel.report.sweep_view import render_sweep, sweep_csv

    points = doc.get("points") or []
    if points and not any(p.get("valid") for p in points):
        reasons = list(dict.fromkeys(str(p.get("reason") or "no reason given") for p in points))
        shown = "; ".join(reasons[:3]) + (f" (and {len(reasons) - 3} other reasons)" if len(reasons) > 3 else "")
        raise PerfmodelError(f"none of the {len(points)} launch(es) can run: {shown}")
    if csv_path is not None:
        csv_path.write_text(sweep_csv(doc))
    if json_out:
        from perfmodel.report.jsonout import print_json

        print_json(doc)
        return
    render_sweep(doc, console)
