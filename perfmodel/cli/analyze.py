"""perfmodel CLI: ``analyze``."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfmodel.cli.common import DefineOption, JsonOption, console, parse_defines

KernelArg = Annotated[str, typer.Argument(
    help="A shipped kernel name (perfmodel kernels list), a spec .yaml path, or a CUDA file (.cu/.cuh, or a C++ "
         "file holding kernels) launched with --kernel, --grid, --block and --arg.")]
# sweep and compare take a spec: a CUDA file's launch becomes one with analyze's --save-spec
SpecArg = Annotated[str, typer.Argument(
    help="A shipped kernel name (perfmodel kernels list) or a spec .yaml path; for a CUDA file, keep its launch as a "
         "spec first: perfmodel analyze FILE.cu --kernel ... --save-spec k.yaml.")]
# CUDA files, and C++ files kernels also live in (headers a .cu file includes; sources nvcc compiles with -x cu)
CUDA_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".hxx", ".inl", ".inc", ".cpp", ".cc", ".cxx")
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
ExecuteAllOption = Annotated[
    bool,
    typer.Option("--execute-all", help="Execute every block and every loop iteration. Otherwise an exact run of a "
                                       "large grid runs one block per class of blocks proved identical, and a long "
                                       "run counts uniform loops from a few iterations: the same counts, outputs "
                                       "computed only where those ran."),
]
L2Option = Annotated[
    str,
    typer.Option("--l2", help="L2 state at launch: 'cold' (default: nothing resident, as an L2-flushed or first "
                              "launch) or 'warm' (a previous identical launch left what fits in L2, as back-to-back "
                              "launches in a timing loop)."),
]


def parse_l2(value: str | None, option: str = "--l2") -> str:
    """The L2 state an ``--l2`` option names (``cold`` when not given); anything else is an input error."""
    text = (value or "cold").strip().lower()
    if text not in ("cold", "warm"):
        from perfmodel.errors import PerfmodelError

        raise PerfmodelError(f"{option} {value!r}: expected 'cold' (the default: nothing resident in L2, as an "
                             "L2-flushed or first launch measures) or 'warm' (a previous identical launch left what "
                             "fits in L2, as back-to-back launches in a timing loop measure)")
    return text


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


def is_cuda_file(kernel: str) -> bool:
    return kernel.lower().endswith(CUDA_SUFFIXES)


def register(app: typer.Typer) -> None:
    @app.command("analyze")
    def analyze_command(
        kernel: KernelArg, device: DeviceOption, define: DefineOption = None,
        regs: RegsOption = None, sample: SampleOption = None, max_steps: MaxStepsOption = None,
        timeout: TimeoutOption = None, execute_all: ExecuteAllOption = False, l2: L2Option = "cold",
        entry: Annotated[str | None, typer.Option(
            "--kernel", "-k", help="FILE.cu: the kernel, a name or a template name expression "
                                   "('MatrixMulCUDA<32>'); optional when the file has one kernel.")] = None,
        grid: Annotated[str | None, typer.Option(
            "--grid", help="FILE.cu: the grid, X[,Y[,Z]], each a number or an expression ('cdiv(n,256)').")] = None,
        block: Annotated[str | None, typer.Option("--block", help="FILE.cu: the block, X[,Y[,Z]].")] = None,
        smem: Annotated[str | None, typer.Option(
            "--smem", help="FILE.cu: dynamic shared memory per block, bytes (an expression).")] = None,
        args: Annotated[list[str] | None, typer.Option(
            "--arg", "-a", help="FILE.cu: a kernel parameter by name (or position): NAME=EXPR for a scalar, "
                                "NAME=DTYPE[COUNT][:zeros|ones|arange|random|random(LO,HI)|value=EXPR|file=F.npy] "
                                "for a pointer (repeatable).")] = None,
        symbols: Annotated[list[str] | None, typer.Option(
            "--symbol", help="FILE.cu: the values of a __constant__ or __device__ variable, what the host's "
                             "cudaMemcpyToSymbol copies: NAME=DTYPE[COUNT][:INIT], INIT as for --arg "
                             "(repeatable). Without one it holds zeros (or its initialiser); --check can name a "
                             "__device__ variable.")] = None,
        include_dirs: Annotated[list[str] | None, typer.Option(
            "-I", "--include", help="FILE.cu: a folder to search for #include \"...\" headers (repeatable).")] = None,
        checks: Annotated[list[str] | None, typer.Option(
            "--check", help="FILE.cu: check output array NAME after the run: NAME=module:function, "
                            "NAME=file.py:function or NAME=expected.npy (repeatable). Without one, the outputs "
                            "are reported as not checked.")] = None,
        rtol: Annotated[float | None, typer.Option("--rtol", min=0, help="--check: relative tolerance "
                                                                         "(default 1e-5).")] = None,
        atol: Annotated[float | None, typer.Option("--atol", min=0, help="--check: absolute tolerance "
                                                                         "(default 1e-6).")] = None,
        save_spec: Annotated[str | None, typer.Option(
            "--save-spec", help="FILE.cu: also write this launch as a spec .yaml to keep it.")] = None,
        plot: Annotated[Path | None, typer.Option(
            "--plot", help="Export the roofline with the kernel's point: FILE.png or FILE.svg; FILE.html writes "
                           "the whole report as one self-contained page.")] = None,
        json_out: JsonOption = False,
    ) -> None:
        """Predict a kernel's time on a device: counts, CGMA, occupancy, per-resource bounds and advice.

        KERNEL is a spec (name or .yaml), or a CUDA file analysed as it is:
        perfmodel analyze saxpy.cu --kernel saxpy --grid 'cdiv(n,256)' --block 256 -D n=1048576
        --arg a=2.0 --arg x=float32[n]:random --arg y=float32[n]:random --device h100"""
        from perfmodel.analysis import analyze
        from perfmodel.errors import PerfmodelError

        cuda_only = {"--kernel": entry, "--grid": grid, "--block": block, "--smem": smem, "--arg": args,
                     "--symbol": symbols, "-I": include_dirs, "--check": checks, "--rtol": rtol, "--atol": atol, "--save-spec": save_spec}
        texts: dict[str, str] | None = {} if is_cuda_file(kernel) else None
        params = parse_defines(define, texts)
        if plot is not None:
            from perfmodel.report.plots import check_plot_path

            check_plot_path(plot)
        if is_cuda_file(kernel):
            from perfmodel.adhoc import LaunchArgumentError, command_line_spec

            absent = [name for name, value in (("--grid", grid), ("--block", block)) if value is None]
            if absent:
                raise LaunchArgumentError(f"{kernel}: a CUDA file needs {' and '.join(absent)} (and --arg for its "
                                          "pointer parameters); e.g. --grid 'cdiv(n,256)' --block 256")
            from perfmodel.analysis import device_arch
            from perfmodel.devices import load_device

            dev = load_device(device)
            if save_spec is not None:
                from perfmodel.cli.common import check_output_path

                check_output_path(save_spec, "--save-spec")
            spec = command_line_spec(kernel, entry, grid, block, smem=smem, args=args, defines=params, text_macros=texts,
                                     symbols=symbols, include_dirs=include_dirs or (), checks=checks, rtol=rtol, atol=atol,
                                     arch=device_arch(dev))
            if save_spec is not None:
                from pathlib import Path

                from perfmodel.adhoc import spec_yaml

                Path(save_spec).write_text(spec_yaml(spec, save_spec), encoding="utf-8")
            try:
                analysis = analyze(spec, dev, None, regs=parse_regs(regs), sample=sample, max_steps=max_steps,
                                   timeout=timeout, execute_all=execute_all, l2=parse_l2(l2))
            except PerfmodelError as err:
                # what the command line set that the kernel does not see (-D N for a `const N` of the file) is
                # often the cause: the error says it too
                notes = [n for n in getattr(spec, "launch_notes", ()) if n not in err.message]
                if notes:
                    err.message = err.message.rstrip(".") + ". Note: " + " ".join(notes)
                    err.args = (str(err),)
                raise
            for note in getattr(spec, "launch_notes", ()):
                if note not in analysis.sim.notes:
                    analysis.sim.notes.append(note)
        else:
            given = [name for name, value in cuda_only.items() if value]
            if given:
                raise PerfmodelError(f"{', '.join(given)}: only for a CUDA file (perfmodel analyze FILE.cu ...); "
                                     f"the spec {kernel!r} sets its own launch (override its params with -D)")
            analysis = analyze(kernel, device, params, regs=parse_regs(regs), sample=sample,
                               max_steps=max_steps, timeout=timeout, execute_all=execute_all, l2=parse_l2(l2))
        doc = analysis.to_json()
        if plot is not None:
            from perfmodel.report.plots import roofline_export

            roofline_export(doc, plot)
        if json_out:
            from perfmodel.report.jsonout import print_json

            print_json(doc)
            return
        from perfmodel.report.analyze_view import render_analysis

        render_analysis(doc, console)
        if plot is not None:
            console.print(f"wrote {plot}", style="dim")
