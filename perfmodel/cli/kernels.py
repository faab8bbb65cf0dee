"""perfmodel CLI: ``perfmodel kernels list``, ``perfmodel kernels show NAME [-D NAME=VALUE ...]`` and
``perfmodel kernels inspect FILE [--kernel EXPR ...]``."""
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


@kernels_app.command("inspect", no_args_is_help=True)
def inspect_command(
    file: Annotated[str, typer.Argument(help="A CUDA source file (.cu or .cuh), host code and all.",
                                        show_default=False)],
    kernels: Annotated[list[str] | None, typer.Option(
        "--kernel", "-k", help="Also compile this template instantiation, as the host code launches it: "
                               "--kernel 'reduce6<int, 256, true>' (repeatable; adds to the list, never filters).",
    )] = None,
    defines: Annotated[list[str] | None, typer.Option(
        "-D", "--define", help="Define a macro: -D NAME=VALUE or -D NAME; overrides the file's own "
                               "#define NAME (repeatable).",
    )] = None,
    include_dirs: Annotated[list[str] | None, typer.Option(
        "-I", "--include", help="A folder to search for #include \"...\" headers (repeatable).",
    )] = None,
    device: Annotated[str | None, typer.Option(
        "--device", help="Compile for this device profile's compute capability (default sm_90).",
    )] = None,
    json_output: JsonOption = False,
) -> None:
    """Compile a CUDA file with NVRTC (host code set aside) and list its kernels: parameters, registers,
    shared/local memory, spills, PTX instruction count and PTX instructions the simulator does not support."""
    from perfmodel.compile import compile_cuda
    from perfmodel.report.inspect_view import inspect_json, render_inspect

    arch = "sm_90"
    if device is not None:
        from perfmodel.devices import load_device

        major, minor = load_device(device).compute_capability.split(".")
        arch = f"sm_{major}{minor}"
    mod = compile_cuda(file, arch=arch, name_expressions=tuple(kernels or ()),
                       defines=parse_macro_defines(defines), include_dirs=tuple(include_dirs or ()))
    rows = inspect_json(mod)
    if json_output:
        from perfmodel.report.jsonout import print_json

        print_json(rows)
    else:
        from perfmodel.report.analyze_view import wide_console

        render_inspect(mod, rows, wide_console(console))     # piped, rich would clip the table at 80 columns


@kernels_app.command("init", no_args_is_help=True)
def init_command(
    file: Annotated[str, typer.Argument(help="A CUDA source file (.cu or .cuh).", show_default=False)],
    kernel: Annotated[str | None, typer.Option(
        "--kernel", "-k", help="The kernel: a name or a template name expression ('MatrixMulCUDA<32>'); optional "
                               "when the file has one kernel.")] = None,
    out: Annotated[str | None, typer.Option("--out", "-o", help="Write the spec here (default: stdout).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --out if it exists.")] = False,
    defines: DefineOption = None,
    include_dirs: Annotated[list[str] | None, typer.Option(
        "-I", "--include", help="A folder to search for #include \"...\" headers (repeatable).")] = None,
    json_output: JsonOption = False,
) -> None:
    """Write a starter spec for a kernel from its signature: edit the sizes, name a reference, analyse it."""
    from pathlib import Path

    from perfmodel.adhoc import starter_spec
    from perfmodel.cli.common import check_output_path
    from perfmodel.errors import OutputError

    if out is not None:
        check_output_path(out, "--out")
        if Path(out).exists() and not force:
            raise OutputError(f"--out {out}: the file exists; pass --force to overwrite it")
    text = starter_spec(file, kernel, out=out, defines=parse_defines(defines), include_dirs=include_dirs or ())
    if out is not None:
        Path(out).write_text(text, encoding="utf-8")
    if json_output:
        from perfmodel.report.jsonout import print_json

        print_json({"spec": text, "out": out})
    elif out is None:
        typer.echo(text, nl=False)
    else:
        console.print(f"wrote {out}")


@kernels_app.command("schema")
def schema_command(
    out: Annotated[str | None, typer.Option("--out", "-o", help="Write the schema here (default: stdout).")] = None,
) -> None:
    """The kernel-spec format as JSON Schema, for editors (e.g. a yaml-language-server modeline)."""
    import json

    from perfmodel.spec_schema import spec_json_schema

    text = json.dumps(spec_json_schema(), indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        from pathlib import Path

        from perfmodel.cli.common import check_output_path

        check_output_path(out, "--out")
        Path(out).write_text(text, encoding="utf-8")


def parse_macro_defines(items: list[str] | None) -> dict[str, str | None]:
    """``-D NAME=VALUE`` / ``-D NAME`` for the C preprocessor: any VALUE text, kept as written."""
    from perfmodel.errors import PerfmodelError

    result: dict[str, str | None] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not name.isidentifier():
            raise PerfmodelError(f"-D {item!r}: expected NAME=VALUE or NAME, e.g. -D TILE_WIDTH=32")
        result[name] = value.strip() if sep else None
    return result


def register(app: typer.Typer) -> None:
    app.add_typer(kernels_app, name="kernels")
