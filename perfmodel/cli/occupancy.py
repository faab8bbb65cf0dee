"""perfmodel CLI: ``perfmodel occupancy`` - NVIDIA's occupancy calculator in the terminal."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from perfmodel.cli.common import DefineOption, JsonOption, console
from perfmodel.errors import OccupancyError


def _threads(text: str) -> int:
    """``256`` or a block shape ``16x16`` / ``8x8x4``."""
    parts = re.split(r"\s*[x*,]\s*", text.strip().lower())
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        raise OccupancyError(f"--threads {text!r}: expected a number of threads or a block shape such as 16x16") \
            from None
    if not 1 <= len(dims) <= 3 or any(d <= 0 for d in dims):
        raise OccupancyError(f"--threads {text!r}: expected 1 to 3 positive dimensions, e.g. 256 or 16x16")
    total = 1
    for d in dims:
        total *= d
    return total


def _bytes(text: str, option: str) -> int:
    from perfmodel.units import UnitError, parse_int_quantity

    try:
        value = parse_int_quantity(text, "bytes")
    except UnitError as err:
        raise OccupancyError(f"{option}: {err}") from None
    if value < 0:
        raise OccupancyError(f"{option}: expected 0 or more bytes, got {text!r}")
    return value


def _per_block_size(text: str | None, option: str, *, as_bytes: bool) -> tuple[int | None, str | None]:
    """A fixed value (``2048``, ``'2 KiB'``) or, for --best-block, an expression of ``threads`` (``8*threads``)."""
    if text is None:
        return None, None
    try:
        return (_bytes(text, option) if as_bytes else int(text.strip(), 0)), None
    except (OccupancyError, ValueError):
        from perfmodel import expr

        try:
            expr.check_syntax(text, field=option)
        except Exception as err:  # SpecError: a bad expression
            raise OccupancyError(f"{option} {text!r}: expected a number{' of bytes' if as_bytes else ''} or an "
                                 f"expression of threads such as 8*threads ({err})") from None
        unknown = expr.names_in(text) - {"threads"}
        if unknown:
            raise OccupancyError(f"{option} {text!r}: unknown name(s) {', '.join(sorted(unknown))}; only "
                                 "'threads' (the block size) may appear") from None
        return None, text


def _evaluator(fixed: int | None, expression: str | None, option: str):
    from perfmodel import expr

    if expression is None:
        return lambda threads: fixed

    def value(threads: int) -> int:
        result = expr.evaluate_int(expression, {"threads": threads}, field=option, minimum=0)
        return int(result)
    return value


def occupancy_command(
    device: Annotated[str, typer.Option("--device", "-d", help="Device profile name (see `perfmodel devices "
                                        "list`) or path to a .yaml profile.")],
    threads: Annotated[str | None, typer.Option("--threads", "-t", help="Threads per block: 256, or a shape "
                                                "16x16 (not with --best-block).")] = None,
    regs: Annotated[str | None, typer.Option("--regs", "-r", help="Registers per thread (ptxas -v / "
                                             "cudaFuncGetAttributes numRegs); with --best-block also an "
                                             "expression of threads.")] = None,
    smem: Annotated[str, typer.Option("--smem", "-s", help="Shared memory per block, static + dynamic: 2048, "
                                      "'2 KiB'; with --best-block also an expression of threads, e.g. "
                                      "8*threads. On CC 1.x include ptxas' +16 and the parameters.")] = "0",
    grid_blocks: Annotated[int | None, typer.Option("--grid-blocks", "-g", help="Blocks in the grid: also "
                                                    "report waves.")] = None,
    carveout: Annotated[str | None, typer.Option("--carveout", help="Preferred shared memory per SM: bytes "
                                                 "('64 KiB') or a percentage ('50%'); default: the maximum.")] = None,
    no_sweeps: Annotated[bool, typer.Option("--no-sweeps", help="Leave out the three 'impact of varying' "
                                            "views.")] = False,
    best_block: Annotated[bool, typer.Option("--best-block", help="Find the block size with the highest "
                                             "occupancy (cudaOccMaxPotentialOccupancyBlockSize).")] = False,
    kernel: Annotated[str | None, typer.Option("--kernel", "-k", help="With --best-block: take registers and "
                                               "static shared memory from this kernel spec compiled for the "
                                               "device (--smem then adds dynamic shared memory).")] = None,
    define: DefineOption = None,
    block_size_limit: Annotated[int, typer.Option("--block-size-limit", min=0, help="With --best-block: the "
                                                  "largest block to consider (0: the device's).")] = 0,
    plot: Annotated[Path | None, typer.Option("--plot", help="Export the three 'impact of varying' graphs: "
                                              "FILE.png, FILE.svg or FILE.html.")] = None,
    json_output: JsonOption = False,
) -> None:
    """Resident blocks per SM for a launch configuration, which resource limits them, and how the result moves
    with block size, registers per thread and shared memory per block; or (--best-block) the block size with
    the highest occupancy."""
    from perfmodel.devices import load_device
    from perfmodel.occupancy import occupancy, sweep_registers, sweep_runs, sweep_shared_memory, sweep_threads

    if plot is not None:
        from perfmodel.report.plots import check_plot_path

        check_plot_path(plot)
    dev = load_device(device)
    if best_block:
        if threads is not None:
            raise OccupancyError("--best-block finds the block size: leave out --threads")
        _best_block(dev, regs, smem, kernel, define, block_size_limit, carveout, json_output)
        return
    if kernel is not None or define:
        raise OccupancyError("--kernel and -D go with --best-block")
    if threads is None or regs is None:
        raise OccupancyError("give --threads and --regs (or --best-block to find the block size)")
    threads_per_block = _threads(threads)
    regs_value, regs_expr = _per_block_size(regs, "--regs", as_bytes=False)
    if regs_expr is not None:
        raise OccupancyError(f"--regs {regs!r}: expected a number of registers per thread")
    shared = _bytes(smem, "--smem")
    carve = carveout  # bytes with a unit or a percentage: the library parses both
    result = occupancy(dev, threads_per_block, regs_value, shared, grid_blocks=grid_blocks, carveout=carve)
    sweeps = None
    if not no_sweeps or plot is not None:
        sweeps = {
            "threads": sweep_threads(dev, regs_value, shared, carveout=carve, include=threads_per_block),
            "registers": sweep_registers(dev, threads_per_block, shared, carveout=carve, include=regs_value),
            "shared_memory": sweep_shared_memory(dev, threads_per_block, regs_value, carveout=carve,
                                                 include=shared),
        }
    if plot is not None:
        from perfmodel.report.plots import occupancy_export

        occupancy_export(result, dev, sweeps, plot)
        if no_sweeps:
            sweeps = None
    if json_output:
        from perfmodel.report.jsonout import print_json

        document = result.to_json()
        document["device_name"] = dev.name
        if sweeps is not None:
            document["impact"] = {name: [run.to_json() for run in sweep_runs(points)]
                                  for name, points in sweeps.items()}
        print_json(document)
        return
    from perfmodel.report.occupancy_view import render_occupancy

    render_occupancy(result, dev, sweeps, console)
    if plot is not None:
        console.print(f"wrote {plot}", style="dim")


def _best_block(dev, regs, smem, kernel, define, block_size_limit, carveout, json_output) -> None:
    from perfmodel.blocksize import best_block_size

    regs_value, regs_expr = _per_block_size(regs, "--regs", as_bytes=False)
    smem_value, smem_expr = _per_block_size(smem, "--smem", as_bytes=True)
    source = None
    static = 0
    if kernel is not None:
        if regs is None:
            regs_value, source = _kernel_resources(dev, kernel, define)
            static = source["shared_memory_per_block"]
        else:
            source = _kernel_resources(dev, kernel, define)[1]
            static = source["shared_memory_per_block"]
    elif define:
        raise OccupancyError("-D goes with --kernel")
    elif regs is None:
        raise OccupancyError("--best-block needs --regs N (or an expression of threads), or --kernel NAME")
    registers_of = _evaluator(regs_value, regs_expr, "--regs")
    dynamic_of = _evaluator(smem_value, smem_expr, "--smem")
    result = best_block_size(dev, registers_of, lambda t: static + dynamic_of(t),
                             block_size_limit=block_size_limit, carveout=carveout)
    if json_output:
        from perfmodel.report.jsonout import print_json

        doc = result.to_json()
        doc["device_name"] = dev.name
        doc["kernel"] = source
        print_json(doc)
        return
    from perfmodel.report.occupancy_view import render_best_block

    render_best_block(result, dev, source, console)


def _kernel_resources(dev, kernel: str, define) -> tuple[int, dict]:
    """Registers per thread (compiler > spec > estimate, as analyze) and static shared memory of a kernel spec
    compiled for the device."""
    from perfmodel.analysis import device_arch, device_arch_note
    from perfmodel.cli.common import parse_defines
    from perfmodel.kernel import load_kernel
    from perfmodel.occupancy import kernel_shared_memory_bytes
    from perfmodel.registers import resolve_registers
    from perfmodel.spec import load_spec

    spec = load_spec(kernel)
    launch = spec.instantiate(parse_defines(define))
    program = load_kernel(spec.source_path, entry=spec.entry, defines=dict(launch.defines), arch=device_arch(dev))
    registers = resolve_registers(dev, regs=None, spec_registers=launch.registers or spec.registers,
                                  compiled={"registers": program.registers, "arch": program.arch,
                                            "arch_note": device_arch_note(dev)})
    smem = kernel_shared_memory_bytes(dev, int(program.static_shared_bytes), 0, int(program.param_bytes))
    return registers.per_thread, {"name": spec.name, "params": dict(launch.params),
                                  "registers_per_thread": registers.per_thread,
                                  "registers_source": registers.source, "shared_memory_per_block": smem}


def register(app: typer.Typer) -> None:
    app.command("occupancy", no_args_is_help=True)(occupancy_command)
