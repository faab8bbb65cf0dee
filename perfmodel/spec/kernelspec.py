"""A loaded, validated kernel spec: load-time checks of its expressions and references, and
:meth:`KernelSpec.instantiate` (params, constraints, geometry, initial arrays) -> :class:`~perfmodel.spec.launch.Launch`."""
from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel import expr as _expr
from perfmodel import generators as _generators
from perfmodel import references as _references
from perfmodel.errors import SpecError
from perfmodel.spec.launch import ArgValue, Launch
from perfmodel.spec.schema import (_IDENT, DTYPES, Expr, FieldArraySpec, InitSpec, OutputSpec, ParamSpec, SpecModel,
                                   TextureSpec, arg_dtype, macro_names_with_headers)

# ==============================================================================================================
# KernelSpec: a validated spec file


def _offset(arg, params, file: str, i: int, size: int, whose: str) -> int:
    """An array arg's ``offset:`` (elements of its array before the kernel's pointer), checked against ``size``."""
    if arg.offset is None:
        return 0
    offset = _expr.evaluate_int(arg.offset, params, file=file, field=f"args[{i}].offset", minimum=0)
    if offset > size:
        raise SpecError(f"{file}: field 'args[{i}].offset': {offset:,} elements, beyond {whose} {size:,}")
    return offset

class KernelSpec:
    """A loaded, validated kernel spec. ``instantiate(overrides)`` makes a :class:`Launch`."""

    def __init__(self, model: SpecModel, path: Path):
        self.model = model
        self.path = path
        self.source_path = (path.parent / model.source).resolve()
        self._param_exprs: dict[str, Expr] = {}
        self.param_help: dict[str, str] = {}
        for name, value in model.params.items():
            if isinstance(value, ParamSpec):
                self._param_exprs[name] = value.default
                if value.help:
                    self.param_help[name] = value.help
            else:
                self._param_exprs[name] = value
        self.source_defines: tuple[str, ...] = macro_names_with_headers(self.source_path, self.source_text,
                                                                        self.include_dirs)
        self.source_defines += tuple(n for n in model.compile_params if n not in self.source_defines)
        self._check()
        self.params: dict[str, int | float] = self._resolve({})

    # --- simple attributes -------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.model.name

    @property
    def description(self) -> str:
        return self.model.description or ""

    @property
    def label(self) -> str:
        """How reports name the kernel: the spec's name (a command-line launch shows its entry expression)."""
        return self.__dict__.get("_label") or self.model.name

    @property
    def include_dirs(self) -> tuple[str, ...]:
        """``-I`` folders for the compiler, made absolute relative to the spec file."""
        return tuple(str((self.path.parent / d).resolve()) for d in self.model.include_dirs)

    @cached_property
    def fingerprint(self) -> str:
        """A hash of the validated spec: two specs with the same file path but different contents (two command
        lines on one .cu file) never share a cached simulation."""
        import hashlib

        return hashlib.sha256(self.model.model_dump_json().encode()).hexdigest()[:16]

    def input_files_state(self) -> tuple:
        """(path, mtime, size) of the files the launch reads besides the source: ``.npy`` initialisers and
        references, ``file.py:function`` references (a cached simulation is reused only while they are unchanged)."""
        paths = [arg.init.path for arg in self.model.args if arg.init is not None and arg.init.kind == "file"]
        paths += [v.init.path for arg in self.model.args for v in (arg.fields or {}).values()
                  if isinstance(v, FieldArraySpec) and v.init is not None and v.init.kind == "file"]
        for output in self.model.outputs:
            ref = output.reference
            if ref.endswith(".npy"):
                paths.append(ref)
            elif ".py:" in ref:
                paths.append(ref.rpartition(":")[0])
        state = []
        for text in paths:
            path = (self.path.parent / Path(text).expanduser()).resolve()
            state.append((str(path), _stat_key(path)))
        return tuple(state)

    def reference_for(self, output: OutputSpec) -> _references.Reference:
        """The reference function an output is checked against (named, a Python callable or a .npy file)."""
        inline = self.__dict__.get("inline_references") or {}
        if output.reference in inline:
            return inline[output.reference]
        return _references.resolve_reference(output.reference, base_dir=self.path.parent)

    @property
    def entry(self) -> str:
        return self.model.entry

    @property
    def tags(self) -> list[str]:
        return list(self.model.tags)

    @property
    def notes(self) -> str | None:
        return self.model.notes

    @property
    def registers(self) -> dict[str, int]:
        return dict(self.model.registers)

    @property
    def outputs(self) -> list[OutputSpec]:
        return list(self.model.outputs)

    @cached_property
    def source_text(self) -> str:
        from perfmodel import safeload

        try:
            return safeload.read_text(self.source_path, error=SpecError, what="CUDA source", latin1=True)
        except SpecError as err:
            raise SpecError(f"{self.path}: field 'source': {err}", location=err.location) from None

    def __repr__(self) -> str:
        return f"KernelSpec({self.name!r}, path={str(self.path)!r})"

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "path": str(self.path),
            "source": str(self.source_path),
            "entry": self.entry,
            "params": dict(self.params),
            "param_help": dict(self.param_help),
            "defines": [name for name in self._param_exprs if name in self.source_defines],
            "grid": list(self.model.grid),
            "block": list(self.model.block),
            "tags": self.tags,
            "registers": self.registers,
            "notes": self.notes,
        }

    # --- load-time checks --------------------------------------------------------------------------------------
    def _check(self) -> None:
        file = str(self.path)
        model = self.model
        # (whether the entry kernel exists is the compile's to say: it may be in a header the file includes, or
        # defined through a macro, and the compile error lists the kernels it found)
        # params: each default may use only earlier params
        seen: set[str] = set()
        for name, value in self._param_exprs.items():
            field_name = f"params.{name}"
            _expr.check_syntax(value, file=file, field=field_name)
            self._check_names(value, seen, field_name, "earlier params")
            seen.add(name)
        known = set(self._param_exprs) | set(self.source_defines)
        for i, constraint in enumerate(model.constraints):
            field_name = f"constraints[{i}].expr"
            _expr.check_syntax(constraint.expr, file=file, field=field_name)
            self._check_names(constraint.expr, known, field_name)
        for axis, exprs in (("grid", model.grid), ("block", model.block)):
            for i, value in enumerate(exprs):
                _expr.check_syntax(value, file=file, field=f"{axis}[{i}]")
                self._check_names(value, known, f"{axis}[{i}]")
        if model.dynamic_shared_memory is not None:
            _expr.check_syntax(model.dynamic_shared_memory, file=file, field="dynamic_shared_memory")
            self._check_names(model.dynamic_shared_memory, known, "dynamic_shared_memory")
        names = [arg.name for arg in model.args]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise SpecError(f"{file}: field 'args': duplicate arg name(s) {', '.join(sorted(duplicates))}")
        for i, arg in enumerate(model.args):
            base = f"args[{i}]"
            self._check_fields(arg.fields, base, known)
            self._check_sized(arg.length, arg.shape, arg.init, base, known)
            values = arg.value if isinstance(arg.value, list) else [] if arg.value is None else [arg.value]
            for j, value in enumerate(values):
                where = f"{base}.value" + (f"[{j}]" if isinstance(arg.value, list) else "")
                _expr.check_syntax(value, file=file, field=where)
                self._check_names(value, known, where)
        for section in ("constants", "device_variables"):
            for name, constant in getattr(model, section).items():
                if not _IDENT.match(name):
                    raise SpecError(f"{file}: field '{section}': {name!r} is not an identifier")
                self._check_fields(constant.fields, f"{section}.{name}", known)
                self._check_sized(constant.length, constant.shape, constant.init, f"{section}.{name}", known)
        both = sorted(set(model.constants) & set(model.device_variables))
        if both:
            raise SpecError(f"{file}: {', '.join(both)} in both 'constants' and 'device_variables'")
        arrays = {arg.name for arg in model.args if arg.kind in ("array", "surface")}   # a surface is written too
        arrays |= set(model.device_variables)                                         # read back from the symbol
        arrays |= {f"{arg.name}.{key}" for arg in model.args for key, value in (arg.fields or {}).items()
                   if isinstance(value, FieldArraySpec)}                           # a struct's pointer fields
        arrays |= {f"{name}.{key}" for name, c in {**model.constants, **model.device_variables}.items()
                   for key, value in (c.fields or {}).items() if isinstance(value, FieldArraySpec)}
        arrays |= {name for name, c in model.constants.items() if c.pointer}      # what a pointer variable points to
        for i, output in enumerate(model.outputs):
            if output.arg not in arrays:
                raise SpecError(f"{file}: field 'outputs[{i}].arg': {output.arg!r} is not an array arg, surface arg or "
                                f"device variable (those: {', '.join(sorted(arrays)) or 'none'})")
            try:
                ref = self.reference_for(output)
            except SpecError as err:
                raise SpecError(f"{file}: field 'outputs[{i}].reference': {err.message}") from None
            for key in ("rtol", "atol"):
                value = getattr(output, key)
                _expr.check_syntax(value, file=file, field=f"outputs[{i}].{key}")
                self._check_names(value, known, f"outputs[{i}].{key}")
            unknown = set(output.options) - set(ref.options)
            if unknown and ref.options != ("*",):
                raise SpecError(f"{file}: field 'outputs[{i}].reference': reference {ref.name!r} has no option(s) "
                                f"{', '.join(sorted(unknown))} (options: {', '.join(ref.options) or 'none'})")

    def _check_names(self, value: Expr | None, known: set[str], field_name: str, what: str = "params") -> None:
        unknown = _expr.names_in(value) - known if isinstance(value, str) else set()
        if unknown:
            raise SpecError(f"{self.path}: field '{field_name}': unknown name(s) {', '.join(sorted(unknown))} in "
                            f"expression {value!r} (known {what}: {', '.join(sorted(known)) or 'none'})")

    def _check_fields(self, fields, base: str, known: set[str]) -> None:
        """A struct's ``fields:`` (an arg's or a struct variable's): their expressions and arrays' sizes."""
        file = str(self.path)
        for key, value in (fields or {}).items():
            where = f"{base}.fields.{key}"
            if value is None:       # a pointer field given NULL
                continue
            if isinstance(value, FieldArraySpec):
                self._check_sized(value.length, value.shape, value.init, where, known)
                continue
            for j, item in enumerate(value if isinstance(value, list) else [value]):
                at = where + (f"[{j}]" if isinstance(value, list) else "")
                _expr.check_syntax(item, file=file, field=at)
                self._check_names(item, known, at)

    def _check_sized(self, length, shape, init: InitSpec | None, base: str, known: set[str]) -> None:
        file = str(self.path)
        if length is not None:
            _expr.check_syntax(length, file=file, field=f"{base}.length")
            self._check_names(length, known, f"{base}.length")
        for j, value in enumerate(shape or []):
            _expr.check_syntax(value, file=file, field=f"{base}.shape[{j}]")
            self._check_names(value, known, f"{base}.shape[{j}]")
        if init is None:
            return
        for key in ("low", "high", "start", "step", "value"):
            value = getattr(init, key)
            _expr.check_syntax(value, file=file, field=f"{base}.init.{key}")
            self._check_names(value, known, f"{base}.init.{key}")
        if init.kind == "file":
            self._npy_path(init.path or "", f"{base}.init.file")
        if init.kind == "generator":
            try:
                gen = _generators.get_generator(init.generator or "")
            except SpecError as err:
                raise SpecError(f"{file}: field '{base}.init.generator': {err.message}") from None
            unknown = set(init.kwargs) - set(gen.kinds)
            if unknown:
                raise SpecError(f"{file}: field '{base}.init.generator': generator {gen.name!r} has no argument(s) "
                                f"{', '.join(sorted(unknown))} (it takes: {', '.join(gen.kinds) or 'none'})")
            missing = gen.required - set(init.kwargs)
            if missing:
                raise SpecError(f"{file}: field '{base}.init.generator': generator {gen.name!r} needs "
                                f"argument(s) {', '.join(sorted(missing))}")
            if gen.fields and init.field not in gen.fields:
                raise SpecError(f"{file}: field '{base}.init.generator.field': generator {gen.name!r} makes "
                                f"several arrays; pick one with field: {' | '.join(gen.fields)}")
            if not gen.fields and init.field is not None:
                raise SpecError(f"{file}: field '{base}.init.generator.field': generator {gen.name!r} makes one "
                                "array; remove field")
            for key, value in init.kwargs.items():
                if gen.kinds[key] == "expr":
                    _expr.check_syntax(value, file=file, field=f"{base}.init.generator.{key}")
                    self._check_names(value, known, f"{base}.init.generator.{key}")

    def _npy_path(self, text: str, field_name: str) -> Path:
        path = (self.path.parent / Path(text).expanduser()).resolve()
        if not path.is_file():
            raise SpecError(f"{self.path}: field '{field_name}': no such .npy file {text!r} (looked at {path})")
        return path

    # --- instantiation -----------------------------------------------------------------------------------------
    @property
    def known_names(self) -> list[str]:
        return list(self._param_exprs) + [d for d in self.source_defines if d not in self._param_exprs]

    def _resolve(self, overrides: Mapping[str, Any]) -> dict[str, int | float]:
        file = str(self.path)
        known = self.known_names
        unknown = [name for name in overrides if name not in known]
        if unknown:
            raise SpecError(f"{file}: unknown param(s) {', '.join(unknown)} for kernel {self.name!r} "
                            f"(known: {', '.join(known) or 'none'})")
        resolved: dict[str, int | float] = {}
        for name, value in self._param_exprs.items():
            if name in overrides:
                resolved[name] = self._override_value(name, overrides[name])
            else:
                result = _expr.evaluate(value, resolved, file=file, field=f"params.{name}")
                resolved[name] = _normalise_number(result, file, f"params.{name}")
        for name in overrides:
            if name not in resolved:  # a source #define the spec does not declare as a param
                resolved[name] = self._override_value(name, overrides[name])
        return resolved

    def _override_value(self, name: str, value: Any) -> int | float:
        """An override keeps the kind of the param's default: an integral float for an int param becomes int."""
        file = str(self.path)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise SpecError(f"{file}: param {name}: expected a number, got {value!r}")
        value = value.item() if isinstance(value, np.generic) else value
        # (self.params, the defaults, exists once __init__ has resolved them; it resolves without overrides)
        default_is_int = isinstance(self.params.get(name), int)
        if isinstance(value, float) and value.is_integer() and default_is_int:
            value = int(value)
        if isinstance(value, float) and default_is_int:
            raise SpecError(f"{file}: param {name}: expected an integer, got {value!r}")
        return value

    def instantiate(self, overrides: Mapping[str, Any] | None = None, *, values: bool = True) -> Launch:
        """Resolve the params (defaults + ``overrides``), check the constraints, evaluate the launch geometry and
        build the initial args and constants. Unknown param names raise a SpecError listing the known ones.

        ``values=False`` evaluates and checks everything but draws no initial values: every array whose length
        the spec gives is zeros (allocated lazily, untouched) and the launch is ``blank`` - for a caller that
        needs only counts of a kernel whose data reaches no branch, guard or address (the counts are then the
        same whatever the values). An array whose length only its generator knows is still generated."""
        file = str(self.path)
        model = self.model
        params = self._resolve(dict(overrides or {}))
        for i, constraint in enumerate(model.constraints):
            ok = _expr.evaluate(constraint.expr, params, file=file, field=f"constraints[{i}].expr")
            if not ok:
                used = sorted(_expr.names_in(constraint.expr))
                values = ", ".join(f"{n}={params[n]}" for n in used if n in params)
                message = f" ({constraint.message})" if constraint.message else ""
                raise SpecError(f"{file}: constraint {constraint.expr!r} does not hold for {values}{message}")
        defines = {name: params[name] for name in params if name in self.source_defines}
        defines.update(model.macros)
        grid = self._dims(model.grid, params, "grid")
        block = self._dims(model.block, params, "block")
        dynamic = 0
        if model.dynamic_shared_memory is not None:
            dynamic = _expr.evaluate_int(model.dynamic_shared_memory, params, file=file,
                                         field="dynamic_shared_memory", minimum=0)
        cache: dict = {}
        args: list[ArgValue] = []
        for i, arg in enumerate(model.args):
            dtype = arg_dtype(arg.dtype) if arg.dtype is not None else None
            if arg.kind == "scalar" and dtype.names:
                args.append(ArgValue(arg.name, "scalar", dtype, vector_value(arg.value, dtype, params, file,
                                                                             f"args[{i}].value")))
            elif arg.kind == "scalar":
                value = _expr.evaluate(arg.value, params, file=file, field=f"args[{i}].value")
                args.append(ArgValue(arg.name, "scalar", dtype, _scalar(value, dtype, file, f"args[{i}].value")))
            elif arg.kind in ("texture", "surface"):
                args.append(ArgValue(arg.name, arg.kind, dtype, self._texture(
                    getattr(arg, arg.kind), params, f"args[{i}].{arg.kind}", cache, values)))
            elif arg.kind == "struct":
                args.append(ArgValue(arg.name, "struct", np.dtype(np.void),
                                     self._struct(arg.fields or {}, params, f"args[{i}].fields", cache, values)))
            elif arg.kind == "null":
                args.append(ArgValue(arg.name, "null", None, None))
            elif arg.same_as is not None:
                args.append(ArgValue(arg.name, "array", None, None, 0, arg.same_as))     # filled in below
                continue
            else:
                array = self._array(arg.length, arg.shape, arg.init, dtype, params, f"args[{i}]", cache, values)
                args.append(ArgValue(arg.name, "array", dtype, array, _offset(arg, params, file, i, array.size,
                                                                              "the array's")))
        by_name = {a.name: a for a in args}
        for i, arg in enumerate(model.args):
            if arg.same_as is None:
                continue
            other = by_name.get(arg.same_as)
            if other is None or other.kind != "array" or other.alias is not None:
                own = ", ".join(a.name for a in args if a.kind == "array" and a.alias is None) or "none"
                raise SpecError(f"{file}: field 'args[{i}].same_as': {arg.same_as!r} is not an array arg of its own "
                                f"(array args: {own})")
            args[i] = ArgValue(arg.name, "array", other.dtype, other.value,
                               _offset(arg, params, file, i, other.value.size, f"{arg.same_as}'s"), arg.same_as)
        constants = {name: self._symbol(c, params, f"constants.{name}", cache, values)
                     for name, c in model.constants.items()}
        device_variables = {name: self._symbol(v, params, f"device_variables.{name}", cache, values)
                            for name, v in model.device_variables.items()}
        outputs = []
        for i, output in enumerate(model.outputs):
            tolerances = {}
            for key in ("rtol", "atol"):
                value = _expr.evaluate(getattr(output, key), params, file=file, field=f"outputs[{i}].{key}")
                if isinstance(value, bool) or not value >= 0:
                    raise SpecError(f"{file}: field 'outputs[{i}].{key}': expected a number >= 0, got {value!r}")
                tolerances[key] = float(value)
            outputs.append(output.model_copy(update=tolerances))
        return Launch(self, params, defines, grid, block, dynamic, args, constants, outputs, dict(model.registers),
                      blank=not values, device_variables=device_variables)

    def _dims(self, exprs: list[Expr], params: Mapping[str, Any], axis: str) -> tuple[int, int, int]:
        dims = [_expr.evaluate_int(value, params, file=str(self.path), field=f"{axis}[{i}]", minimum=1)
                for i, value in enumerate(exprs)]
        return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]

    def _symbol(self, spec, params: Mapping[str, Any], base: str, cache: dict, values: bool = True):
        """A ``__constant__`` / ``__device__`` variable's value: its array, its struct's fields, or (``pointer``)
        the array a pointer variable points to."""
        from perfmodel.sim.launch import PointedArray

        if spec.fields is not None:
            return self._struct(spec.fields, params, base, cache, values)
        array = self._array(spec.length, spec.shape, spec.init, DTYPES[spec.dtype], params, base, cache, values)
        return PointedArray(array) if spec.pointer else array

    def _struct(self, fields: Mapping[str, Any], params: Mapping[str, Any], base: str, cache: dict,
                values: bool = True) -> dict[str, Any]:
        """A struct arg's fields: numbers (a list for an array or vector field) and the pointer fields' arrays.
        Which fields the struct has, and their types, the simulator checks against the compiled layout."""
        file = str(self.path)
        out: dict[str, Any] = {}
        for key, value in fields.items():
            where = f"{base}.{key}"
            if value is None:
                out[key] = None       # a pointer field given NULL
            elif isinstance(value, FieldArraySpec):
                out[key] = self._array(value.length, value.shape, value.init, DTYPES[value.dtype], params, where,
                                       cache, values)
            elif isinstance(value, list):
                out[key] = [_normalise_number(_expr.evaluate(v, params, file=file, field=f"{where}[{j}]"), file,
                                              f"{where}[{j}]") for j, v in enumerate(value)]
            else:
                out[key] = _normalise_number(_expr.evaluate(value, params, file=file, field=where), file, where)
        return out

    def _texture(self, spec, params: Mapping[str, Any], base: str, cache: dict, values: bool = True):
        """A :class:`perfmodel.sim.texture.Texture` (or ``Surface``) from a texture (surface) arg's description."""
        from perfmodel.errors import PerfmodelError
        from perfmodel.sim.texture import Surface, Texture

        file = str(self.path)
        dims = [_expr.evaluate_int(v, params, file=file, field=f"{base}.shape[{j}]", minimum=1)
                for j, v in enumerate(spec.shape)]
        texels = self._array(None, dims + [spec.channels], spec.init, DTYPES[spec.dtype], params, base, cache,
                             values).reshape(dims + [spec.channels])
        try:
            if not isinstance(spec, TextureSpec):
                return Surface(texels, layered=spec.layered)
            return Texture(texels, filter=spec.filter, address=spec.address, layered=spec.layered,
                           normalized_coords=spec.normalized_coords, read_mode=spec.read_mode)
        except PerfmodelError as exc:
            raise SpecError(f"{file}: field '{base}': {exc}") from None

    def _array(self, length, shape, init: InitSpec | None, dtype: np.dtype, params: Mapping[str, Any],
               base: str, cache: dict, values: bool = True) -> np.ndarray:
        file = str(self.path)
        size: int | None = None
        if length is not None:
            size = _expr.evaluate_int(length, params, file=file, field=f"{base}.length", minimum=0)
        elif shape is not None:
            size = 1
            for j, value in enumerate(shape):
                size *= _expr.evaluate_int(value, params, file=file, field=f"{base}.shape[{j}]", minimum=0)
        init = init or InitSpec(kind="zeros")
        where = f"{file}: field '{base}.init'"
        if size is not None:
            _reserve(cache, size * dtype.itemsize, f"{file}: field '{base}'", size)
        blank = not values and size is not None
        if init.kind == "zeros" or (blank and init.kind == "ones"):
            return np.zeros(size, dtype=dtype)
        if init.kind == "ones":
            return np.ones(size, dtype=dtype)
        if init.kind == "file":
            array = _references.load_npy(self._npy_path(init.path or "", f"{base}.init.file"), where)
            if size is not None and array.size != size:
                raise SpecError(f"{where}: {init.path} holds {array.size:,} elements but the length is {size:,}")
            return array.reshape(-1).astype(dtype)
        if init.kind == "arange":
            start = _expr.evaluate(init.start, params, file=file, field=f"{base}.init.start")
            step = _expr.evaluate(init.step, params, file=file, field=f"{base}.init.step")
            return np.zeros(size, dtype=dtype) if blank else (start + step * np.arange(size)).astype(dtype)
        if init.kind == "constant":
            value = _expr.evaluate(init.value, params, file=file, field=f"{base}.init.constant")
            return np.zeros(size, dtype=dtype) if blank else np.full(size, value, dtype=dtype)
        if init.kind == "random":
            low = _expr.evaluate(init.low, params, file=file, field=f"{base}.init.low")
            high = _expr.evaluate(init.high, params, file=file, field=f"{base}.init.high")
            if not high > low:
                raise SpecError(f"{where}: random needs high > low, got low={low}, high={high}")
            if blank:
                return np.zeros(size, dtype=dtype)
            rng = np.random.default_rng(init.seed)
            if dtype.kind in "iu":
                return rng.integers(int(low), int(high), size=size).astype(dtype)
            if dtype.kind == "b":
                return rng.random(size) < 0.5
            # drawn in chunks (the same stream as one call) so that no float64 copy of a large array is made
            out = np.empty(size, dtype=dtype)
            for start in range(0, size, 1 << 20):
                stop = min(size, start + (1 << 20))
                out[start:stop] = rng.uniform(low, high, size=stop - start)
            return out
        if init.kind == "values":
            array = np.asarray(init.values, dtype=dtype)
            if size is not None and array.size != size:
                raise SpecError(f"{where}: values has {array.size} elements but the length is {size}")
            return array
        # generator
        kwargs = {}
        gen = _generators.get_generator(init.generator or "")
        for key, value in init.kwargs.items():
            if gen.kinds.get(key) == "expr":
                kwargs[key] = _expr.evaluate(value, params, file=file, field=f"{base}.init.generator.{key}")
            else:
                kwargs[key] = value
        if blank:
            _generators.call(gen.name, kwargs, length=size, field_name=init.field, where=where, validate_only=True)
            return np.zeros(size, dtype=dtype)
        array = _generators.call(gen.name, kwargs, length=size, field_name=init.field, cache=cache, where=where)
        return array.astype(dtype, copy=False)      # call() returned a copy already


def _normalise_number(value: Any, file: str, field_name: str) -> int | float:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    raise SpecError(f"{file}: field '{field_name}': expected a number, got {value!r}")


def vector_value(exprs: list, dtype: np.dtype, params: Mapping[str, Any], file: str, field_name: str) -> np.ndarray:
    """A CUDA vector type's value (``float3``: x, y, z) from one EXPR per component, each checked as a scalar of
    the component type: a numpy structured scalar (0-d array), whose bytes are the parameter's."""
    out = np.zeros((), dtype)
    for j, (name, text) in enumerate(zip(dtype.names, exprs)):
        where = f"{field_name}[{j}]"
        value = _expr.evaluate(text, params, file=file, field=where)
        out[name] = _scalar(value, dtype.fields[name][0], file, where)
    return out


def _scalar(value: Any, dtype: np.dtype, file: str, field_name: str) -> int | float:
    if dtype.kind in "iu":
        if isinstance(value, float):
            if not value.is_integer():
                raise SpecError(f"{file}: field '{field_name}': {dtype} scalar got non-integer {value!r}")
            value = int(value)
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise SpecError(f"{file}: field '{field_name}': {value} does not fit in {dtype}")
        return int(value)
    if dtype.kind == "b":
        return bool(value)
    return float(value)


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def _reserve(cache: dict, nbytes: int, where: str, size: int) -> None:
    """Refuse an argument array that would take the launch's arrays over the memory budget, before allocating."""
    from perfmodel.limits import human, memory_budget

    total = cache.get("__bytes__", 0) + nbytes
    budget = memory_budget()
    if total > budget:
        raise SpecError(f"{where}: {size:,} elements ({human(nbytes)}) take this launch's argument arrays to "
                        f"{human(total)}, over the memory budget of {human(budget)} (half the machine's memory, or "
                        "$PERFMODEL_MAX_MEMORY); use a smaller problem size - the counts of large grids come from "
                        "a sample of blocks, but the arrays are still allocated whole")
    cache["__bytes__"] = total
