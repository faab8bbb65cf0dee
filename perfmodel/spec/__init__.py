"""Kernel specs: ``kernels_spec/NAME.yaml`` beside ``NAME.cu`` - what to launch, with which inputs, checked how.

A spec names the CUDA C source and its entry kernel, the params (problem sizes and tunable ``#define``\\ s) with
defaults, the launch geometry as expressions over the params, the kernel's args in order with their
initialisers, the initial values of ``__constant__`` symbols, and the outputs to check against a reference.
docs/spec.md documents every field with an example; ``perfmodel analyze FILE.cu --arg ...`` builds the same
object from a command line (:mod:`perfmodel.adhoc`). Modules: ``schema`` (the YAML models), ``launch``
(:class:`Launch`, output checks), ``kernelspec`` (:class:`KernelSpec`), ``loading`` (:func:`load_spec`, :func:`run`).
Example (``kernels_spec/vec_add.yaml``)::

    name: vec_add                           # = the file stem; what users type
    description: "C = A + B, ..."           # one line (optional)
    source: vec_add.cu                      # relative to the yaml
    entry: VecAdd                           # the __global__ function
    params:                                 # name -> default, in order
      N: {default: 10000, help: "vector length"}
      BLOCK_SIZE: 256                       # a plain default is fine too
    grid: ["cdiv(N, BLOCK_SIZE)"]           # 1-3 expressions; quote those with a comma in a [..] list
    block: [BLOCK_SIZE]
    args:                                   # the kernel's parameters, in order
      - {name: A, dtype: float32, length: N, init: {random: {seed: 1, low: -1, high: 1}}}
      - {name: C, dtype: float32, length: N, init: zeros}
      - {name: N, dtype: int32, value: N}   # a scalar: an expression
    outputs:
      - {arg: C, reference: vec_add, rtol: 1e-6, atol: 1e-6}

All fields (unknown ones are errors; every error names the file and the field):

- ``params``: ``NAME: DEFAULT`` or ``NAME: {default: DEFAULT, help: TEXT}``. A default may be an expression over
  *earlier* params (``TILE_SIZE: BLOCK_SIZE``): overriding ``BLOCK_SIZE`` then moves ``TILE_SIZE`` with it. A
  param whose name matches a ``#define`` of the source overrides that define (``Launch.defines``, passed to the
  compiler), so ``-D TILE_WIDTH=32`` really rebuilds the kernel. A source ``#define`` that is not declared as a
  param can be overridden too.
- ``constraints``: ``[{expr: "Width % TILE_WIDTH == 0", message: "..."}]`` - checked at instantiation.
- ``grid``, ``block``: lists of 1-3 expressions giving positive integers (padded with 1s).
- ``dynamic_shared_memory``: optional expression, bytes.
- ``args``: arrays ``{name, dtype, length: EXPR | shape: [EXPR, ..], init}``, scalars ``{name, dtype, value: EXPR}``.
  dtypes: float32/float, float64/double, int32/int, uint32/unsigned, int64, int16, int8, uint8, bool.
- ``init``: ``zeros`` (default) | ``ones`` | ``random`` | ``{file: x.npy}`` | ``arange`` | ``{arange: {start, step}}`` | ``{random: {seed, low, high}}``
  (uniform floats, or ints in [low, high)) | ``{constant: EXPR}`` | ``{values: [..]}`` |
  ``{generator: {name: NAME, field: F, ...args}}`` - a named generator of :mod:`perfmodel.generators`; its
  numeric args are expressions over the params, ``field`` picks one array of a multi-array generator (CSR).
  ``length`` may be left out for ``values`` and ``generator``.
- ``constants``: ``NAME: {dtype, length | shape, init}`` - the initial value of a ``__constant__`` symbol, what
  the host's ``cudaMemcpyToSymbol`` would copy.
- ``outputs``: ``{arg, reference: NAME | {name: NAME, ...options}, rtol, atol}`` - a named numpy reference of
  :mod:`perfmodel.references`, a Python function ``module:function`` / ``file.py:function`` or a ``.npy`` file
  of expected values, compared as ``numpy.isclose`` does (a NaN matches a NaN; integer outputs exactly, in their
  own width: perfmodel.spec.launch.compare_elements); with no outputs the launch is "not checked" (correct
  None); ``rtol``/``atol`` may be expressions over the
  params (float32 rounding of a long sum grows with its length).
- ``registers``: optional ``{"9.0": 32, ...}`` registers per thread per compute capability (measured).
- ``include_dirs``: ``-I`` folders, relative to the yaml.
- ``tags``, ``notes``: free text.

Expressions (:mod:`perfmodel.expr`): numbers, params, ``+ - * / // % **``, integer ``<< >>``, comparisons, ``and/or/not``,
``a if c else b``, ``ceil cdiv floor min max int abs``; never ``eval``.

Specs are found by name in ``$PERFMODEL_KERNEL_PATH`` (os.pathsep-separated folders), then in the shipped
``kernels_spec/``; anything ending in ``.yaml``/``.yml`` or naming a file is loaded as a path.

Usage::

    spec = load_spec("matmul_tiled")                   # shipped name, or a path to a .yaml
    launch = spec.instantiate({"TILE_WIDTH": 32, "Width": 256})
    args = launch.arg_values()                         # fresh copies; the simulator mutates the arrays
    ... simulate(program, launch.grid, launch.block, args, launch.constant_values()) ...
    check = launch.check_outputs(args)                 # OutputCheck(correct, outputs, message)

    outcome = run("matmul_tiled", {"Width": 256})      # all of the above: (launch, program, result, check, args)
"""

from __future__ import annotations

from perfmodel import expr as _expr
from perfmodel.spec.kernelspec import KernelSpec
from perfmodel.spec.launch import NOT_CHECKED, ArgValue, Launch, OutputCheck, OutputResult, check_outputs
from perfmodel.spec.loading import SPEC_PATH_ENV, RunResult, list_specs, load_spec, run, spec_search_path
from perfmodel.spec.schema import (
    DTYPES,
    ArgSpec,
    ConstantSpec,
    ConstraintSpec,
    InitSpec,
    OutputSpec,
    ParamSpec,
    SpecModel,
    macro_names,
    macro_names_with_headers,
)

__all__ = [
    "KernelSpec", "Launch", "ArgValue", "OutputSpec", "OutputResult", "OutputCheck", "RunResult",
    "load_spec", "list_specs", "spec_search_path", "evaluate", "run", "check_outputs", "DTYPES", "SpecModel",
    "InitSpec", "ArgSpec", "ConstantSpec", "ConstraintSpec", "ParamSpec", "NOT_CHECKED", "SPEC_PATH_ENV",
    "macro_names", "macro_names_with_headers",
]

evaluate = _expr.evaluate
