"""perfmodel CLI: ``analyze``."""
from __future__ import annotations

from typing import Annotated

import typer

from perfmodel.cli.common import DefineOption, JsonOption, console, parse_defines

KernelArg = Annotated[str, typer.Argument(help="A shipped kernel name (perfmodel kernels list) or a spec .yaml path.")]
DeviceOption = Annotated[str, typer.Option("--device", "-d", help="Device profile name or .yaml path.")]
RegsOption = Annotated[
    str | None,
    typer.Option("--regs", help="Registers per thread: a number, or 'auto' to ask the local nvcc/ptxas "
                                "(default: the spec's value for the device, else a flagged estimate)."),
]
SampleOption = Annotated[
    int | None,
    typer.Option("--sample", min=0, help="Simulate a stratified sample of about N blocks and extrapolate "
                                  "(default: exact unless the grid is too large; 0 forces exact)."),
]


def parse_regs(value: str | None) -> int | str | None:
    if value is None:
        return None
    text = value.strip().lower()
    if text == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        from perfmodel.errors import PerfmodelError

        raise PerfmodelError(f"--regs {value!r}: expected a number of registers per thread or 'auto'") from None


def register(app: typer.Typer) -> None:
    @app.command("analyze")
    def analyze_command(kernel: KernelArg, device: DeviceOption, define: DefineOption = None,
                        regs: RegsOption = None, sample: SampleOption = None, json_out: JsonOption = False) -> None:
        """Predict a kernel's time on a device: counts, CGMA, occupancy, per-resource bounds and advice."""
        from perfmodel.analyze import analyze

        analysis = analyze(kernel, device, parse_defines(define), regs=parse_regs(regs), sample=sample)
        doc = analysis.to_json()
        if json_out:
            from perfmodel.report.jsonout import print_json

            print_json(doc)
            return
        from perfmodel.report.analyze_view import render_analysis

        render_analysis(doc, console)
