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
    sample: Annotated[int | None, typer.Option(
        "--sample", min=1, help="Simulate only about N blocks (corners, edges, interior) of a large grid; "
                                "the counts are then those of the simulated blocks and outputs are not checked.",
    )] = None,
    json_output: JsonOption = False,
) -> None:
    """The kernel's source, highlighted, with the counts of a small run beside each line (global sectors,
    shared wavefronts, flops), like Nsight Compute's source view; plus the launch and which blocks idle."""
    from perfmodel.report.kernels_view import kernel_show_json, render_kernel_show
    from perfmodel.spec import load_spec, run

    params = parse_defines(defines)
    spec = load_spec(kernel)
    block_ids = None
    if sample is not None:
        from perfmodel.sampling import stratified_blocks

        block_ids = stratified_blocks(spec.instantiate(params).grid, sample).block_ids
    outcome = run(spec, params, block_ids=block_ids)
    if json_output:
        from perfmodel.report.jsonout import print_json

        print_json(kernel_show_json(outcome))
    else:
        render_kernel_show(outcome, console)


def register(app: typer.Typer) -> None:
    app.add_typer(kernels_app, name="kernels")
