"""One instantiation of a spec: the launch geometry, the initial args and constants, and the check of the
outputs after a run against their references (``correct`` is None when no output names a reference)."""
from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from perfmodel import references as _references
from perfmodel.errors import SpecError
from perfmodel.spec.schema import OutputSpec

if TYPE_CHECKING:
    from perfmodel.spec.kernelspec import KernelSpec

# ==============================================================================================================
# Launch: one instantiation of a spec

@dataclass(frozen=True)
class ArgValue:
    name: str
    kind: str                  # "array" | "scalar" | "texture" | "surface" (perfmodel.sim.texture objects) | "struct"
                               # | "null" (a pointer given NULL: value None)
    dtype: np.dtype
    value: Any                 # np.ndarray (initial contents) or a Python int/float; a struct's: field -> number,
                               # list of numbers, or np.ndarray (a pointer field's array)
    offset: int = 0            # an array arg: elements of the array before the kernel's pointer (d + offset)
    alias: str | None = None   # an array arg that is another arg's very array (the host passes one buffer twice)

    def arrays(self, value: Any = None) -> dict[str, np.ndarray]:
        """The arrays this arg puts in global memory, by the name outputs give them: an array arg's own, a
        struct's pointer fields' as ``ARG.FIELD``. ``value``: the arg after a run (default: its initial value)."""
        value = self.value if value is None else value
        if self.kind == "array":
            return {self.name: value}
        if self.kind == "struct":
            return {f"{self.name}.{k}": v for k, v in value.items() if isinstance(v, np.ndarray)}
        return {}

    def with_arrays(self, arrays: Mapping[str, np.ndarray]) -> Any:
        """This arg's value with its arrays (named as :meth:`arrays` names them) replaced where ``arrays`` has them."""
        if self.kind == "struct":
            return {k: arrays.get(f"{self.name}.{k}", v) if isinstance(v, np.ndarray) else v
                    for k, v in self.value.items()}
        return arrays.get(self.name, self.value)

    def to_json(self) -> dict:
        from perfmodel.compile.signature import vector_name

        if self.kind == "null":
            return {"name": self.name, "kind": "null"}
        if self.kind == "struct":
            return {"name": self.name, "kind": "struct", "fields": {
                k: {"dtype": str(v.dtype), "length": int(v.size)} if isinstance(v, np.ndarray) else v
                for k, v in self.value.items()}}
        out: dict[str, Any] = {"name": self.name, "kind": self.kind,
                               "dtype": vector_name(self.dtype) or str(self.dtype)}
        if self.kind == "array":
            out["length"] = int(self.value.size)
            if self.offset:
                out["offset"] = int(self.offset)
        elif self.kind in ("texture", "surface"):
            out[self.kind] = self.value.describe()
        elif self.dtype.names:
            out["value"] = {f: self.value[f].item() for f in self.dtype.names}     # a vector type: its components
        else:
            out["value"] = self.value
        return out


class OutputResult(NamedTuple):
    name: str
    max_abs_error: float
    max_rel_error: float
    ok: bool
    reference: str = ""
    checked_elements: int = 0

    def to_json(self) -> dict:
        return self._asdict()


#: The message of a launch that names no reference: its outputs are not checked (``correct`` is None, never True).
NOT_CHECKED = ("not checked: no reference given (name one with --check OUTPUT=REFERENCE, or 'outputs:' in a "
               "spec: a Python function module:function or the expected values in a .npy file)")


#: A blank launch's outputs (``instantiate(values=False)``): counts only, nothing to check.
BLANK_NOT_CHECKED = ("outputs not computed: counts only (check=False), and the kernel's data reaches no branch, "
                     "guard or address, so its inputs were not drawn (the counts do not depend on their values)")


@dataclass(frozen=True)
class OutputCheck:
    correct: bool | None           # None: no reference, nothing was checked
    outputs: list[OutputResult]
    message: str

    def to_json(self) -> dict:
        return {"correct": self.correct, "outputs": [o.to_json() for o in self.outputs], "message": self.message}


@dataclass(frozen=True, eq=False)
class Launch:
    spec: KernelSpec
    params: dict[str, int | float]
    defines: dict[str, int | float]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int
    args: list[ArgValue]
    constants: dict[str, np.ndarray]
    outputs: list[OutputSpec]
    registers: dict[str, int] = field(default_factory=dict)
    blank: bool = False        # drawn with values=False: the arrays are zeros, not the spec's initial values
    # __device__ variables given values or checked as outputs: their initial contents (written back after a run)
    device_variables: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def source_path(self) -> Path:
        return self.spec.source_path

    @property
    def entry(self) -> str:
        return self.spec.entry

    @property
    def total_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def total_threads(self) -> int:
        return self.total_blocks * self.threads_per_block

    def arg(self, name: str) -> ArgValue:
        for arg in self.args:
            if arg.name == name:
                return arg
        raise SpecError(f"{self.spec.path}: no arg named {name!r} (args: {', '.join(a.name for a in self.args)})")

    def pointer_offsets(self) -> dict[str, int]:
        """Bytes into its array that each offset array arg's pointer is (the simulator's ``pointer_offsets``)."""
        return {a.name: int(a.offset) * a.value.dtype.itemsize for a in self.args if a.kind == "array" and a.offset}

    def arg_values(self, copy: bool = True) -> list[Any]:
        """The args for the simulator, in order: fresh array copies (the run mutates them) and Python scalars.
        A blank launch's arrays are fresh zeros (allocated lazily: a run that skips its inputs never touches them).
        ``copy=False``: the launch's own arrays (a run that writes nothing back). An arg that is another's array
        (``alias``) is the same object, which the simulator gives one allocation."""
        def fresh(a: np.ndarray) -> np.ndarray:
            if not copy:
                return a
            return np.zeros(a.shape, a.dtype) if self.blank else a.copy()

        out = [fresh(arg.value) if arg.kind == "array" and arg.alias is None else self._fresh(arg)
               if arg.kind == "surface" else
               {k: fresh(v) if isinstance(v, np.ndarray) else v for k, v in arg.value.items()}
               if arg.kind == "struct" else arg.value for arg in self.args]
        names = [a.name for a in self.args]
        for i, arg in enumerate(self.args):
            if arg.kind == "array" and arg.alias is not None:
                out[i] = out[names.index(arg.alias)]      # the same array object: the simulator shares it
        return out

    @staticmethod
    def _fresh(arg):
        """A surface the run may write: its own copy of the texels."""
        import dataclasses

        return dataclasses.replace(arg.value, data=arg.value.data.copy())

    def constant_values(self) -> dict[str, np.ndarray]:
        """Fresh copies of the ``__constant__`` and ``__device__`` variables' initial values (the simulator writes
        the ``__device__`` ones back after the run, and a struct variable's pointer fields' arrays:
        :meth:`symbols_after`)."""
        return {name: ({k: v.copy() if isinstance(v, np.ndarray) else v for k, v in value.items()}
                       if isinstance(value, Mapping) else value.copy())      # a PointedArray copies its array
                for name, value in {**self.constants, **self.device_variables}.items()}

    def symbol_arrays(self, values: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        """The arrays the variables put in global memory, by the names outputs give them: a ``__device__``
        variable's own, a struct variable's pointer fields' as ``NAME.FIELD``. ``values``: a run's
        :meth:`constant_values` (default: the initial values)."""
        values = {**self.constants, **self.device_variables} if values is None else values
        out = {}
        for name, value in values.items():
            if isinstance(value, Mapping):
                out.update({f"{name}.{k}": v for k, v in value.items() if isinstance(v, np.ndarray)})
            elif hasattr(value, "array"):           # a pointer variable's array (sim.launch.PointedArray)
                out[name] = value.array
            elif name in self.device_variables:
                out[name] = value
        return out

    def symbols_after(self, values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The ``__device__`` variables of ``values`` (a run's :meth:`constant_values`) and the struct variables'
        pointer fields' arrays, by the names outputs give them."""
        return self.symbol_arrays(values)

    def registers_for(self, compute_capability: str) -> int | None:
        return self.registers.get(compute_capability)

    @cached_property
    def _context(self) -> dict[str, Any]:
        args = {}
        for arg in self.args:
            if arg.kind in ("array", "texture", "surface"):
                # a texture's texels: (width, channels) or (height, width, channels)
                view = (arg.value if arg.kind == "array" else arg.value.data).view()
                view.flags.writeable = False
                args[arg.name] = view
            elif arg.kind == "struct":
                # the fields by name, and each pointer field's array also as ARG.FIELD (as outputs name it)
                fields = {}
                for k, v in arg.value.items():
                    if isinstance(v, np.ndarray):
                        v = v.view()
                        v.flags.writeable = False
                        args[f"{arg.name}.{k}"] = v
                    fields[k] = v
                args[arg.name] = fields
            else:
                args[arg.name] = arg.value
        for name, value in self.symbol_arrays().items():     # __device__ variables, struct variables' fields
            view = value.view()
            view.flags.writeable = False
            args.setdefault(name, view)
        return args

    def expected(self, output: str) -> np.ndarray:
        """The reference values of output arg ``output`` (flattened, float64 or int64), computed once."""
        cache = self.__dict__.setdefault("_expected_cache", {})
        if output not in cache:
            spec_output = next((o for o in self.outputs if o.arg == output), None)
            if spec_output is None:
                raise SpecError(f"{self.spec.path}: {output!r} is not a checked output "
                                f"(outputs: {', '.join(o.arg for o in self.outputs)})")
            # a reference that returned a dict of every output answers the next output from it, not a new call
            # (the 3D Gaussian Splatting render reference ran once per output: 3 times)
            dicts = self.__dict__.setdefault("_reference_dicts", {})
            key = (spec_output.reference, repr(sorted(spec_output.options.items())))
            ref = None if key in dicts else self.spec.reference_for(spec_output)
            context = _references.ReferenceContext(self._context, self.constants, self.params, output)
            try:
                # a user's reference may print: to stderr, so that --json keeps one document on stdout
                with contextlib.redirect_stdout(sys.stderr):
                    values = dicts[key] if ref is None else ref.function(context, **spec_output.options)
                if isinstance(values, Mapping):
                    dicts[key] = values
            except SpecError as err:
                raise SpecError(f"{self.spec.path}: field 'outputs' ({output}): {err.message}") from None
            except TypeError as err:
                raise SpecError(f"{self.spec.path}: field 'outputs' ({output}): reference "
                                f"{spec_output.reference!r} rejected its options: {err}") from None
            if isinstance(values, Mapping):   # a user function may return every output by name
                if output not in values:
                    raise SpecError(f"{self.spec.path}: field 'outputs' ({output}): reference "
                                    f"{spec_output.reference!r} returned a dict without {output!r} "
                                    f"(keys: {', '.join(map(str, values))})")
                values = values[output]
            try:
                cache[output] = np.asarray(values, dtype=None if np.asarray(values).dtype != object else float
                                           ).reshape(-1)
            except (TypeError, ValueError) as err:
                raise SpecError(f"{self.spec.path}: field 'outputs' ({output}): reference "
                                f"{spec_output.reference!r} did not return an array of numbers ({err})") from None
        return cache[output]

    def check_outputs(self, args_after_run: Sequence[Any] | Mapping[str, Any],
                      elements: Mapping[str, Any] | None = None) -> OutputCheck:
        """Compare the output args after a run with the references.

        ``args_after_run``: the list given to the simulator (in arg order) or a dict name -> array.
        ``elements`` (optional): output name -> index array or boolean mask of the elements to check (e.g. the
        elements written by the sampled blocks of a sampled run); others are ignored."""
        if self.blank:
            return OutputCheck(None, [], BLANK_NOT_CHECKED)
        if isinstance(args_after_run, Mapping):
            by_name = dict(args_after_run)
        else:
            # a run's args (perfmodel.analysis.RunArgs) carry the __device__ variables after it as .symbols
            if len(args_after_run) != len(self.args):
                raise SpecError(f"{self.spec.path}: check_outputs got {len(args_after_run)} args, "
                                f"the kernel takes {len(self.args)}")
            by_name = {}
            for arg, value in zip(self.args, args_after_run):
                by_name[arg.name] = value
                if arg.kind == "struct":
                    by_name.update(arg.arrays(value))
            by_name.update(getattr(args_after_run, "symbols", {}))
        if not self.outputs:
            return OutputCheck(None, [], NOT_CHECKED)
        results: list[OutputResult] = []
        problems: list[str] = []
        for output in self.outputs:
            if output.arg not in by_name:
                raise SpecError(f"{self.spec.path}: check_outputs is missing output {output.arg!r}")
            actual = np.asarray(by_name[output.arg]).reshape(-1)
            expected = self.expected(output.arg)
            if actual.size != expected.size:
                problems.append(f"{output.arg}: {actual.size} elements, reference has {expected.size}")
                results.append(OutputResult(output.arg, math.inf, math.inf, False, output.reference, 0))
                continue
            if elements is not None and output.arg in elements:
                selector = np.asarray(elements[output.arg])
                actual, expected = actual[selector], expected[selector]
            bad, diff, expected64 = compare_elements(actual, expected, output.rtol, output.atol)
            max_abs = float(diff.max()) if diff.size else 0.0
            nonzero = np.abs(expected64) > 0
            max_rel = float((diff[nonzero] / np.abs(expected64[nonzero])).max()) if nonzero.any() else (
                0.0 if max_abs == 0 else math.inf)
            ok = not bool(bad.any())
            if not ok:
                first = int(np.flatnonzero(bad)[0])
                problems.append(
                    f"{output.arg}: {int(bad.sum())} of {actual.size} elements differ from reference "
                    f"{output.reference!r} (max abs error {max_abs:.3g}, max rel error {max_rel:.3g}; first at "
                    f"[{first}]: got {_shown(actual[first])}, expected {_shown(expected[first])}; "
                    f"rtol={output.rtol:g}, atol={output.atol:g}){_rounding_hint(actual.dtype, output.rtol)}")
            results.append(OutputResult(output.arg, max_abs, max_rel, ok, output.reference, int(actual.size)))
        correct = not problems
        if correct:
            message = "outputs match the reference" + ("s" if len(results) != 1 else "") + ": " + ", ".join(
                f"{r.name} (max abs error {r.max_abs_error:.3g})" for r in results)
        else:
            message = "; ".join(problems)
        return OutputCheck(correct, results, message)

    def to_json(self) -> dict:
        return {
            "kernel": self.spec.name,
            "entry": self.spec.entry,
            "source": str(self.spec.source_path),
            "params": dict(self.params),
            "defines": dict(self.defines),
            "grid": list(self.grid),
            "block": list(self.block),
            "total_blocks": self.total_blocks,
            "threads_per_block": self.threads_per_block,
            "dynamic_shared_bytes": self.dynamic_shared_bytes,
            "args": [a.to_json() for a in self.args],
            "constants": {name: {"dtype": str(v.dtype), "length": int(v.size)} for name, v in self.constants.items()},
            "registers": dict(self.registers),
        }


def compare_elements(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float):
    """(mismatch mask, |actual - expected| as float64, expected as float64) of two flat arrays, element by element
    as ``numpy.isclose``: ``|a - e| <= atol + rtol |e|``. NaN matches NaN and an infinity the same infinity (a
    GPU computing 0 log 0 gives the NaN its reference does). Integer outputs are compared exactly (or within
    ``atol``; ``rtol`` is for floats: 1e-5 of a 64-bit hash word let a flipped bit 40 pass), in their own width:
    the difference of two 64-bit integers (hashes, CRCs) is not rounded to float64's 53 bits first, and a
    reference's integers are taken modulo 2^bits of the output's type, as C stores them."""
    a, e = np.asarray(actual), np.asarray(expected)
    if a.dtype.kind in "iu" and e.dtype.kind in "iub":
        e = e.astype(a.dtype)        # wraps, as the C conversion does
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        au, eu = a.view(unsigned), e.view(unsigned)
        if a.dtype.kind == "i":      # order as signed, subtract as unsigned: exact for any two values
            diff = np.where(a >= e, au - eu, eu - au)
        else:
            diff = np.where(au >= eu, au - eu, eu - au)
        e64 = e.astype(np.float64)
        bad = (diff != 0) & (diff.astype(np.float64) > atol)
        return bad, diff.astype(np.float64), e64
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    bad = ~np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True)
    same = (a64 == e64) | (np.isnan(a64) & np.isnan(e64))
    with np.errstate(invalid="ignore", over="ignore"):      # inf - inf: those elements are `same`
        diff = np.where(same, 0.0, np.abs(a64 - e64))
    return bad, diff, e64


def _shown(x) -> str:
    """An element for a message: an integer in full (a 64-bit hash's last digits matter), a float to 7 digits."""
    return str(int(x)) if np.asarray(x).dtype.kind in "iub" else f"{float(x):.7g}"


def check_outputs(launch: Launch, args_after_run: Sequence[Any] | Mapping[str, Any]) -> OutputCheck:
    """Function form of :meth:`Launch.check_outputs`."""
    return launch.check_outputs(args_after_run)


# significand bits (with the implicit one) of the narrow float formats: their rounding alone is a relative error of
# up to 2^-bits, which a float32-sized rtol does not allow
_SIGNIFICAND_BITS = {"float16": 11, "bfloat16": 8}


def _rounding_hint(dtype: np.dtype, rtol: float) -> str:
    bits = _SIGNIFICAND_BITS.get(np.dtype(dtype).name)
    if bits is None or rtol >= 2.0 ** -bits:
        return ""
    return (f"; the output is {np.dtype(dtype).name}, whose rounding alone is a relative error of up to "
            f"{2.0 ** -bits:.3g} (--rtol / rtol)")
