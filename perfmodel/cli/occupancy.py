"""perfmodel CLI: ``perfmodel occupancy`` - NVIDIA's occupancy calculator in the terminal."""
from __future__ import annotations

import re
from typing import Annotated

import typer

from perfmodel.cli.common import JsonOption, console
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


def occupancy_command(
    device: Annotated[str, typer.Option("--device", "-d", help="Device profile name (see `perfmodel devices "
                                        "list`) or path to a .yaml profile.")],
    threads: Annotated[str, typer.Option("--threads", "-t", help="Threads per block: 256, or a shape 16x16.")],
    regs: Annotated[int, typer.Option("--regs", "-r", help="Registers per thread (ptxas -v / "
                                      "cudaFuncGetAttributes numRegs).")],
    smem: Annotated[str, typer.Option("--smem", "-s", help="Shared memory per block, static + dynamic: 2048, "
                                      "'2 KiB'. On CC 1.x include ptxas' +16 and the parameters.")] = "0",
    grid_blocks: Annotated[int | None, typer.Option("--grid-blocks", "-g", help="Blocks in the grid: also "
                                                    "report waves.")] = None,
    carveout: Annotated[str | None, typer.Option("--carveout", help="Preferred shared memory per SM: bytes "
                                                 "('64 KiB') or a percentage ('50%'); default: the maximum.")] = None,
    no_sweeps: Annotated[bool, typer.Option("--no-sweeps", help="Leave out the three 'impact of varying' "
                                            "views.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Resident blocks per SM for a launch configuration, which resource limits them, and how the result moves
    with block size, registers per thread and shared memory per block."""
    from perfmodel.devices import load_device
    from perfmodel.occupancy import occupancy, sweep_registers, sweep_runs, sweep_shared_memory, sweep_threads

    dev = load_device(device)
    threads_per_block = _threads(threads)
    shared = _bytes(smem, "--smem")
    carve = carveout  # bytes with a unit or a percentage: the library parses both
    result = occupancy(dev, threads_per_block, regs, shared, grid_blocks=grid_blocks, carveout=carve)
    sweeps = None
    if not no_sweeps:
        sweeps = {
            "threads": sweep_threads(dev, regs, shared, carveout=carve, include=threads_per_block),
            "registers": sweep_registers(dev, threads_per_block, shared, carveout=carve, include=regs),
            "shared_memory": sweep_shared_memory(dev, threads_per_block, regs, carveout=carve, include=shared),
        }
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


def register(app: typer.Typer) -> None:
    app.command("occupancy", no_args_is_help=True)(occupancy_command)
