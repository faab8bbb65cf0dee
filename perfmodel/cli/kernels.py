"""perfmodel CLI: ``perfmodel kernels list`` and ``perfmodel kernels show NAME [-D NAME=VALUE ...]``."""
from __future__ import annotations

from typing import Annotated

import typer

from perfmodel.cli.common import DefineOption, JsonOption, console, parse_defines

kernels_app = typer.Typer(
    name="kernels",
    help="The shipped kernel specs (kernels_spec/*.yaml): list them, or show one's source with per-line counts.",
    no_args_is_help=True,
)


@kernels_app.command("list")
def list_command(json_output: JsonOption = False) -> None:
    """Every kernel spec: name, one-line description, params with their defaults."""
    from perfmodel.report.kernels_view import kernels_list_json, render_kernels_list
    from perfmodel.spec import list_specs

    specs = list_specs()
    if json_output:
        from perfmodel.report.jsonout import print_json

        print_json(kernels_list_json(specs))
    else:
        render_kernels_list(specs, console)


@kernels_app.command("show", no_args_is_help=True)
def show_command(
    kernel: Annotated[str, typer.Argument(help="A shipped kernel name or a path to a spec .yaml.",
                                          show_default=False)],
    defines: DefineOption = None,
    json_output: JsonOption = False,
) -> None:
    """The kernel's source, highlighted, with the counts of a small run beside each line (global sectors,
    shared wavefronts, flops), like Nsight Compute's source view; plus the launch and which blocks idle."""
    from perfmodel.report.kernels_view import kernel_show_json, render_kernel_show
    from perfmodel.spec import run

    outcome = run(kernel, parse_defines(defines))
    if json_output:
        from perfmodel.report.jsonout import print_json

        print_json(kernel_show_json(outcome))
    else:
        render_kernel_show(outcome, console)


def register(app: typer.Typer) -> None:
    app.add_typer(kernels_app, name="kernels")
