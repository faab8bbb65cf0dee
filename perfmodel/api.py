"""The Python API, shaped like CuPy's ``RawKernel``/``RawModule``: launch a kernel on numpy arrays, get the outputs
back in the arrays and an :class:`~perfmodel.analysis.Analysis` of the launch.

    import numpy as np
    import perfmodel

    saxpy = perfmodel.RawKernel(r'''
    extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }''', "saxpy")
    n = 4096
    x, y = np.random.rand(n).astype(np.float32), np.ones(n, np.float32)
    result = saxpy(((n + 255) // 256,), (256,), (n, np.float32(2), x, y), device="h100")
    assert np.allclose(y, 2 * x + 1)            # the simulator wrote y back
    result.predicted_time_s, result.to_dict()["correct"]   # None: nothing named a reference

    mod = perfmodel.RawModule(path="examples/vec4_scale.cu", name_expressions=["scale_vec4<float, 2>"])
    scale = mod.get_function("scale_vec4<float, 2>")

Differences from CuPy: arguments are numpy arrays (host memory: the simulator's "device"), ``device=`` picks
the GPU profile to model, and a call can name a reference (``expected={"y": array}`` or ``reference=function``)
so that ``result.correct`` is True or False instead of None. Compile ``options`` accept ``-DNAME[=VALUE]``,
``-I DIR`` and ``-std=c++17`` (the standard perfmodel compiles with).
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel.errors import PerfmodelError


class ApiError(PerfmodelError):
    """A call of the Python API with arguments that do not fit the kernel."""

    kind = "usage"


def _parse_options(options: Sequence[str] | str) -> tuple[dict[str, str | None], tuple[str, ...]]:
    if isinstance(options, str):
        options = (options,)
    defines: dict[str, str | None] = {}
    includes: list[str] = []
    items = list(options)
    i = 0
    while i < len(items):
        opt = str(items[i])
        if opt in ("-D", "--define-macro", "-I", "--include-path"):
            if i + 1 >= len(items):
                raise ApiError(f"options: {opt} needs a value")
            opt = opt[:2] if opt.startswith("-D") or opt == "--define-macro" else opt
            opt = ("-D" if opt in ("-D", "--define-macro") else "-I") + str(items[i + 1])
            i += 1
        if opt.startswith(("-D", "--define-macro=")):
            body = opt[2:] if opt.startswith("-D") else opt.split("=", 1)[1]
            name, sep, value = body.partition("=")
            if not name.isidentifier():
                raise ApiError(f"options: {opt!r}: expected -DNAME or -DNAME=VALUE")
            defines[name] = value if sep else None
        elif opt.startswith(("-I", "--include-path=")):
            folder = opt[2:] if opt.startswith("-I") else opt.split("=", 1)[1]
            includes.append(str(Path(folder).expanduser().resolve()))
        elif opt in ("-std=c++17", "--std=c++17"):
            pass
        else:
            raise ApiError(f"options: {opt!r} is not supported (perfmodel compiles with NVRTC -std=c++17 -lineinfo; "
                           "it takes -DNAME[=VALUE] and -I DIR)")
        i += 1
    return defines, tuple(includes)


def _source_file(code: str) -> Path:
    """Source text given as a string is kept in a file (named by its hash) so that reports can show its lines."""
    from perfmodel.compile.cache import cache_dir

    digest = hashlib.sha256(code.encode()).hexdigest()[:20]
    folder = cache_dir() / "rawkernel"
    path = folder / f"k{digest}.cu"
    if not path.is_file() or path.read_text(encoding="utf-8", errors="replace") != code:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{digest}.{os.getpid()}.tmp"
        tmp.write_text(code, encoding="utf-8")
        os.replace(tmp, path)
    return path


def _dims(value: Any, what: str) -> tuple[int, int, int]:
    if isinstance(value, (int, np.integer)):
        value = (value,)
    try:
        dims = [int(v) for v in value]
        exact = all(int(v) == v for v in value)
    except (TypeError, ValueError):
        raise ApiError(f"{what}: expected an int or a tuple of 1 to 3 ints, got {value!r}") from None
    if not 1 <= len(dims) <= 3 or not exact or any(d < 1 for d in dims):
        raise ApiError(f"{what}: expected 1 to 3 positive ints, got {value!r}")
    return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]


def _pointer_into(value: np.ndarray) -> tuple[np.ndarray, int]:
    """(array, offset): a view that starts inside a larger contiguous array of the same type (``b[1:]``) is
    passed as CuPy passes it, a pointer ``offset`` elements into that array - the kernel may read the elements
    before it (``g_s[-1]``) and its writes land in the array; anything else is its own array, offset 0."""
    base = value.base
    while isinstance(base, np.ndarray) and base.base is not None and isinstance(base.base, np.ndarray):
        base = base.base
    if not isinstance(base, np.ndarray) or base.dtype != value.dtype or not base.flags.c_contiguous \
            or not value.flags.c_contiguous or not base.flags.writeable:
        return value, 0
    start = value.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if start <= 0 or start % value.itemsize or start + value.nbytes > base.nbytes:
        return value, 0
    return base.reshape(-1), start // value.itemsize


class RawModule:
    """CUDA source (``code=``) or a ``.cu`` file (``path=``), compiled with NVRTC; ``get_function(name)`` gives a
    launchable kernel. ``name_expressions`` lists the template instantiations to make (``"f<float, 2>"``)."""

    def __init__(self, code: str | None = None, *, path: str | os.PathLike | None = None,
                 options: Sequence[str] | str = (), name_expressions: Sequence[str] | None = None,
                 backend: str = "nvrtc", jitify: bool = False, **unsupported: Any):
        if (code is None) == (path is None):
            raise ApiError("RawModule: give either code= (CUDA source text) or path= (a .cu file), not both")
        if backend != "nvrtc" or jitify:
            raise ApiError("RawModule: perfmodel compiles with NVRTC only (backend='nvrtc', jitify=False)")
        if unsupported:
            raise ApiError(f"RawModule: unsupported argument(s) {', '.join(sorted(unsupported))}")
        self.code = code
        self.path = _source_file(code) if code is not None else Path(path).expanduser().resolve()
        if code is None and not self.path.is_file():
            raise ApiError(f"RawModule: no such file {self.path}")
        self.options = tuple([options] if isinstance(options, str) else options)
        self.defines, self.include_dirs = _parse_options(self.options)
        self.name_expressions = tuple(name_expressions or ())
        self._functions: dict[str, RawKernel] = {}

    def get_function(self, name: str) -> RawKernel:
        """The kernel ``name``: a ``__global__`` function or one of the ``name_expressions``."""
        if name not in self._functions:
            kernel = RawKernel.__new__(RawKernel)
            kernel._init(self, name)
            self._functions[name] = kernel
        return self._functions[name]

    def __repr__(self) -> str:
        return f"<perfmodel.RawModule {self.path.name}>"


class RawKernel:
    """One kernel, compiled on first use; ``kernel(grid, block, args, device="h100")`` simulates a launch.

    ``RawKernel(code, name, options=())`` is ``RawModule(code=code, options=options).get_function(name)``."""

    def __init__(self, code: str, name: str, options: Sequence[str] | str = (), **kwargs: Any):
        self._init(RawModule(code=code, options=options, name_expressions=[name] if "<" in name else None,
                             **kwargs), name)

    def _init(self, module: RawModule, name: str) -> None:
        self.module = module
        self.name = name
        self._programs: dict[str, Any] = {}

    def program(self, arch: str = "sm_90"):
        """The compiled kernel (:class:`perfmodel.kernel.KernelProgram`) for an NVRTC target."""
        if arch not in self._programs:
            from perfmodel.kernel import load_kernel

            self._programs[arch] = load_kernel(self.module.path, entry=self.name, defines=self.module.defines,
                                               arch=arch, include_dirs=self.module.include_dirs)
        return self._programs[arch]

    @property
    def num_regs(self) -> int | None:
        """Registers per thread ptxas gives the kernel (sm_90)."""
        return self.program().registers

    @property
    def params(self) -> list:
        """The kernel's parameters: name, C type, pointer or not, dtype."""
        return list(self.program().params)

    def __repr__(self) -> str:
        return f"<perfmodel.RawKernel {self.name} in {self.module.path.name}>"

    def __call__(self, grid, block, args: Sequence[Any], *, device: Any = "h100", shared_mem: int = 0,
                 expected: Mapping[str, Any] | None = None, reference: Callable[..., Any] | None = None,
                 rtol: float = 1e-5, atol: float = 1e-6, constants: Mapping[str, Any] | None = None,
                 sample: int | None = None, regs: int | str | None = None, max_steps: int | None = None,
                 timeout: float | None = None):
        """Simulate ``kernel<<<grid, block, shared_mem>>>(*args)`` and model it on ``device``.

        ``args``: one per kernel parameter, numpy arrays for pointers (the outputs are written back into them)
        and numbers (Python or numpy scalars) for the rest. ``expected`` (output name -> array) or
        ``reference`` (a function of the initial arguments by name returning the expected output, or a dict of
        them) makes the result say whether the outputs are right (``result.correct``); without either it is None.
        ``constants``: initial values of ``__constant__`` symbols, and of ``__device__`` variables, whose values
        after the run are copied back into the given arrays (cudaMemcpyFromSymbol). ``sample``/``regs``/``max_steps``/``timeout``
        as in :func:`perfmodel.analyze`. Returns the :class:`~perfmodel.analysis.Analysis`."""
        from perfmodel.analysis import _check_launch_fits, _counts_cc1, device_arch, model_launch, simulate_launch
        from perfmodel.devices import Device, load_device

        dev = device if isinstance(device, Device) else load_device(device)
        program = self.program(device_arch(dev))
        grid3, block3 = _dims(grid, "grid"), _dims(block, "block")
        if isinstance(shared_mem, bool) or not isinstance(shared_mem, (int, np.integer)) or shared_mem < 0:
            raise ApiError(f"shared_mem: expected a number of bytes >= 0, got {shared_mem!r}")
        spec, launch, arrays = self._launch(program, grid3, block3, int(shared_mem), args, expected, reference,
                                            rtol, atol, constants)
        _check_launch_fits(dev, launch)
        limits = {k: v for k, v in (("max_steps", max_steps), ("timeout", timeout)) if v is not None}
        launch, sim = simulate_launch(spec, sample=sample, launch=launch, arch=device_arch(dev), limits=limits,
                                      keep_args=True, cc1_counts=_counts_cc1(dev))
        for index, user in arrays.items():
            if isinstance(index, tuple) and index[0] == "symbol":
                user[...] = np.asarray(sim.final_symbols[index[1]]).reshape(user.shape).astype(user.dtype, copy=False)
                continue
            index, field_name = index if isinstance(index, tuple) else (index, None)
            final = np.asarray(sim.final_args[index] if field_name is None else sim.final_args[index][field_name])
            user[...] = final.reshape(user.shape).astype(user.dtype, copy=False)
        return model_launch(spec, launch, sim, dev, regs=regs)

    # ------------------------------------------------------------------------------------------------------
    def _launch(self, program, grid, block, shared_mem, args, expected, reference, rtol, atol, constants):
        from perfmodel.adhoc import _dtype_name, _identifier
        from perfmodel.compile.signature import array_fits
        from perfmodel.references import Reference, callable_reference
        from perfmodel.spec import DTYPES, ArgValue, KernelSpec, Launch, OutputSpec, SpecModel
        from perfmodel.spec.kernelspec import _scalar

        params = program.params
        signature = ", ".join(f"{p.ctype} {p.name}" for p in params) or "no parameters"
        if isinstance(args, (np.ndarray, str)) or not isinstance(args, Sequence):
            raise ApiError(f"args: expected a tuple of {len(params)} arguments ({signature})")
        if len(args) != len(params):
            raise ApiError(f"{self.name} takes {len(params)} arguments ({signature}); got {len(args)}")
        values: list[ArgValue] = []
        arrays: dict[int, np.ndarray] = {}
        for i, (p, value) in enumerate(zip(params, args)):
            where = f"argument {i} ({p.ctype} {p.name})"
            if p.is_pointer and value is None:
                values.append(ArgValue(p.name, "null", None, None))     # None: a NULL pointer
            elif p.is_pointer:
                if not isinstance(value, np.ndarray):
                    raise ApiError(f"{where}: a pointer takes a numpy array (or None for NULL), got "
                                   f"{type(value).__name__}")
                pointee = _dtype_name(p.dtype)
                if pointee is not None and not array_fits(DTYPES[pointee], value.dtype):
                    raise ApiError(f"{where}: its elements are {pointee}, the array holds {value.dtype}")
                if value.dtype.kind not in "biuf" and value.dtype != DTYPES["bfloat16"]:
                    raise ApiError(f"{where}: arrays of {value.dtype} are not supported (numbers only)")
                if not value.flags.writeable:
                    raise ApiError(f"{where}: the array is read-only; the kernel's writes could not be returned")
                host, offset = _pointer_into(value)
                # the same buffer as an earlier pointer (k(x, x), or x and x[1:]): one array, as CuPy passes it
                alias = next((values[j].name for j, h in arrays.items() if not isinstance(j, tuple) and
                              h.__array_interface__["data"][0] == host.__array_interface__["data"][0]
                              and h.nbytes == host.nbytes and h.dtype == host.dtype), None)
                arrays[i] = host
                values.append(ArgValue(p.name, "array", value.dtype, np.ascontiguousarray(host).reshape(-1).copy(),
                                       offset, alias))
            elif p.dtype is not None and p.dtype.names:
                values.append(ArgValue(p.name, "scalar", p.dtype, _vector(value, p.dtype, where)))
            elif p.layout is not None:
                if p.layout.error is not None:
                    raise ApiError(f"{where}: a struct passed by value, whose fields perfmodel could not find: "
                                   f"{p.layout.error}")
                if not isinstance(value, Mapping):
                    raise ApiError(f"{where}: a struct passed by value takes a dict of its fields: "
                                   f"{p.layout.describe()}")
                fields: dict[str, Any] = {}
                for key, item in value.items():
                    leaf = p.layout.leaf(str(key))
                    if isinstance(item, np.ndarray) and item.ndim and leaf is not None and leaf.pointer:
                        if not item.flags.writeable:
                            raise ApiError(f"{where}: field {key}: the array is read-only; the kernel's writes "
                                           "could not be returned")
                        arrays[(i, key)] = item
                        item = np.ascontiguousarray(item).reshape(-1).copy()
                    fields[key] = item
                values.append(ArgValue(p.name, "struct", np.dtype(np.void), fields))
            else:
                dtype_name = _dtype_name(p.dtype)
                if dtype_name is None:
                    raise ApiError(f"{where}: this parameter type cannot be passed from Python (numbers, CUDA "
                                   "vector types and pointers only)")
                if isinstance(value, np.ndarray) and value.ndim == 0:
                    value = value.item()
                if isinstance(value, np.generic):
                    value = value.item()
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise ApiError(f"{where}: expected a number, got {value!r}")
                dtype = DTYPES[dtype_name]
                try:
                    scalar = _scalar(value, dtype, "args", f"[{i}] {p.name}")
                except PerfmodelError as err:
                    raise ApiError(f"{where}: {err.message.split(': ', 2)[-1]}") from None
                values.append(ArgValue(p.name, "scalar", dtype, scalar))
        names = [v.name for v in values]
        inline: dict[str, Reference] = {}
        outputs: list[OutputSpec] = []
        array_names = {values[i].name if not isinstance(i, tuple) else f"{values[i[0]].name}.{i[1]}" for i in arrays}
        device_names = {v.name for v in program.module.variables if v.space == "global"}
        array_names |= {name for name in (constants or {}) if name in device_names}   # read back: expected= may name
        array_names |= {f"{name}.{k}" for name, v in (constants or {}).items() if isinstance(v, Mapping)
                        for k, a in v.items() if isinstance(a, np.ndarray)}             # a struct variable's arrays
        array_names |= {name for name in (constants or {})
                        if name in (getattr(program, "pointer_variables", None) or {})}   # a pointer variable's
        if expected is not None and reference is not None:
            raise ApiError("give expected= or reference=, not both")
        if expected is not None:
            for name, array in dict(expected).items():
                if name not in array_names:
                    raise ApiError(f"expected: {name!r} is not an array argument of {self.name} nor a __device__ "
                                   f"variable given in constants= (those: "
                                   f"{', '.join(sorted(array_names)) or 'none'})")
                data = np.asarray(array)
                inline[f"expected:{name}"] = Reference(f"expected:{name}", lambda ctx, _d=data: _d,
                                                       "expected values given to the call", ())
                outputs.append(OutputSpec(arg=name, reference=f"expected:{name}", rtol=rtol, atol=atol))
        elif reference is not None:
            if not callable(reference):
                raise ApiError(f"reference: expected a function, got {type(reference).__name__}")
            ref_name = getattr(reference, "__name__", "reference")
            inline[ref_name] = callable_reference(reference, ref_name)
            written = [values[i].name for i in arrays if not isinstance(i, tuple) and not _is_const(params[i].ctype)]
            written += [f"{values[i[0]].name}.{i[1]}" for i in arrays if isinstance(i, tuple) and
                        not _is_const(params[i[0]].layout.leaf(i[1]).ctype)]
            for name in written:
                outputs.append(OutputSpec(arg=name, reference=ref_name, rtol=rtol, atol=atol))
        model = SpecModel(name=_identifier(self.name), source=str(self.module.path), entry=self.name,
                          grid=list(grid), block=list(block),
                          include_dirs=list(self.module.include_dirs))
        spec = KernelSpec(model, self.module.path.parent / f"{self.module.path.stem}.api")
        spec.__dict__["_label"] = self.name
        spec.__dict__["inline_references"] = inline
        const_values, device_values = {}, {}
        layouts = getattr(program, "variable_layouts", None) or {}
        for name, array in dict(constants or {}).items():
            if isinstance(array, Mapping):
                # a struct-typed variable (`__constant__ Params cData;`): its fields, a pointer field's array
                # written back into the caller's after the run like a struct argument's
                if name not in layouts:
                    raise ApiError(f"constants[{name!r}]: a dict of fields is for a __constant__ or __device__ "
                                   f"variable of a struct type; {name!r} is not one perfmodel laid out")
                fields = {}
                for key, value in array.items():
                    if isinstance(value, np.ndarray):
                        if not value.flags.writeable:
                            raise ApiError(f"constants[{name!r}][{key!r}]: a pointer field takes a writeable "
                                           "numpy array (the kernel's writes are copied back into it)")
                        fields[key] = np.ascontiguousarray(value).reshape(-1).copy()
                        arrays[("symbol", f"{name}.{key}")] = value
                    else:
                        fields[key] = value
                (device_values if name in device_names else const_values)[name] = fields
                continue
            if name in (getattr(program, "pointer_variables", None) or {}) and isinstance(array, np.ndarray):
                # a pointer variable (`__constant__ float *d_table;`): the array it points to, written back
                from perfmodel.sim.launch import PointedArray

                pointed = PointedArray(np.ascontiguousarray(array).reshape(-1).copy())
                (device_values if name in device_names else const_values)[name] = pointed
                if array.flags.writeable:
                    arrays[("symbol", name)] = array
                continue
            if name in device_names:
                # a __device__ variable: its values go in, and come back into the caller's array after the run
                if not isinstance(array, np.ndarray) or not array.flags.writeable:
                    raise ApiError(f"constants[{name!r}]: a __device__ variable takes a writeable numpy array (the "
                                   "kernel's writes are copied back into it)")
                device_values[name] = np.ascontiguousarray(array).reshape(-1).copy()
                arrays[("symbol", name)] = array
            else:
                const_values[name] = np.ascontiguousarray(array).reshape(-1).copy()
        launch = Launch(spec, {}, dict(self.module.defines), grid, block, shared_mem, values, const_values, outputs,
                        device_variables=device_values)
        del names
        return spec, launch, arrays


def _vector(value: Any, dtype: np.dtype, where: str) -> np.ndarray:
    """A CUDA vector type's argument (``float3``): a sequence of one number per component, or a numpy
    structured scalar of exactly its dtype."""
    from perfmodel.compile.signature import vector_name
    from perfmodel.spec.kernelspec import _scalar

    if isinstance(value, (np.ndarray, np.void)) and value.dtype.names:
        if value.dtype != dtype or value.size != 1:
            raise ApiError(f"{where}: expected one {vector_name(dtype)}, got {value.dtype} x {value.size}")
        return np.asarray(value).reshape(())
    names = dtype.names
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != len(names):
        raise ApiError(f"{where}: expected {len(names)} numbers ({', '.join(names)}), got {value!r}")
    out = np.zeros((), dtype)
    for name, item in zip(names, value):
        item = item.item() if isinstance(item, np.generic) else item
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            raise ApiError(f"{where}: component {name}: expected a number, got {item!r}")
        try:
            out[name] = _scalar(item, dtype.fields[name][0], "args", f"{where} {name}")
        except PerfmodelError as err:
            raise ApiError(f"{where}: component {name}: {err.message.split(': ', 2)[-1]}") from None
    return out


def _is_const(ctype: str) -> bool:
    """``const float*`` (the pointee is const): an input the kernel cannot write."""
    return ctype.split("*")[0].split().count("const") > 0
