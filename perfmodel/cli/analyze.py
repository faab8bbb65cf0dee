"""perfmodel CLI: ``analyze``."""
from __future__ import annotations

from typing import Annotated

import typer

from perfmodel.cli.common import DefineOption, JsonOption, console, parse_defines

KernelArg = Annotated[str, typer.Argument(help="A shipped kernel name (perfmodel kernels list) or a spec .yaml path.")]
DeviceOption = Annotated[str, typer.Option("--device", "-d", help="Device profile name or .yaml path.")]
RegsOption = Annotated[
    str | None,
    typer.Option("--regs", help="Registers per thread: a number, or 'auto' for the compiler's figure even on a device "
                                "NVRTC compiles for the nearest architecture (default: the spec's value for the "
                                "device, else the compiler's, else a flagged estimate)."),
]
MaxStepsOption = Annotated[
    int | None,
    typer.Option("--max-steps", min=1, help="End a runaway kernel after this many basic-block executions of one "
                                           "batch of blocks (default 786,432: under 10 s for a small loop)."),
]
TimeoutOption = Annotated[
    float | None,
    typer.Option("--timeout", min=0.001, help="End the simulation after this many seconds (default: no limit)."),
]
SampleOption = Annotated[
    int | None,
    typer.Option("--sample", min=0, help="Simulate a stratified sample of about N blocks and extrapolate "
                                  "(default: exact unless the grid is too large; 0 forces exact)."),
]


L2Option = Annotated[
    str,
    typer.Option("--l2", help="L2 state at launch: 'cold' (default: nothing resident, as an L2-flushed or first "
                              "launch) or 'warm' (a previous identical launch left what fits in L2, as back-to-back "
                              "launches in a timing loop)."),
]


def parse_l2(value: str) -> str:
    text = (value or "cold").strip().lower()
    if text not in ("cold", "warm"):
        from perfmodel.errors import PerfmodelError

        raise PerfmodelError(f"--l2 {value!r}: expected 'cold' or 'warm'")
    return text


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
                        regs: RegsOption = None, sample: SampleOption = None, max_steps: MaxStepsOption = None,
                        timeout: TimeoutOption = None, l2: L2Option = "cold", json_out: JsonOption = False) -> None:
        """Predict a kernel's time on a device: counts, CGMA, occupancy, per-resource bounds and advice."""
        from perfmodel.analyze import analyze

        analysis = analyze(kernel, device, parse_defines(define), regs=parse_regs(regs), sample=sample,
                           max_steps=max_steps, timeout=timeout, l2=parse_l2(l2))
        doc = analysis.to_json()
        if json_out:
            from perfmodel.report.jsonout import print_json

            print_json(doc)
            return
        from perfmodel.report.analyze_view import render_analysis

        render_analysis(doc, console)
