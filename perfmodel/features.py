"""Which device features a kernel's PTX uses, and the compute capability each needs: the analysis of a kernel on a
device that lacks one (a float atomicAdd on the G80) says so, instead of a report of a kernel that GPU cannot run.

perfmodel compiles for sm_75 at the oldest (NVRTC 13) and models any profile, so nothing else would tell. The
minimum compute capabilities are the CUDA C Programming Guide's: "Feature Support per Compute Capability" (the
4.x-8.0 guides' table of 1.x-3.x features: 32-bit integer atomics in global memory 1.1, in shared memory 1.2,
64-bit integer atomics in global memory 1.2, in shared memory 2.0, float atomicAdd 2.0, warp vote 1.2, __ballot
2.0, __syncthreads_count/_and/_or 2.0, double precision 1.3, warp shuffle 3.0, funnel shift 3.2, dynamic
parallelism 3.5), its atomicAdd section (double atomicAdd 6.x), "Arithmetic Instructions" (half precision 5.3),
and the PTX ISA's per-instruction target requirements (wmma sm_70, match.sync sm_70, redux.sync, cp.async and
mbarrier sm_80, griddepcontrol sm_90)."""
from __future__ import annotations

from perfmodel.ptx.ir import Module

# key -> (minimum compute capability, what it is)
FEATURES: dict[str, tuple[tuple[int, int], str]] = {
    "global_atomic32": ((1, 1), "32-bit integer atomics in global memory"),
    "shared_atomic32": ((1, 2), "atomics in shared memory"),
    "global_atomic64": ((1, 2), "64-bit integer atomics in global memory"),
    "shared_atomic64": ((2, 0), "64-bit integer atomics in shared memory"),
    "float_atomic_add": ((2, 0), "float atomicAdd"),
    "double_atomic_add": ((6, 0), "double atomicAdd"),
    "double": ((1, 3), "double-precision arithmetic"),
    "vote": ((1, 2), "warp vote (__any, __all)"),
    "ballot": ((2, 0), "__ballot"),
    "barrier_reduction": ((2, 0), "__syncthreads_count / _and / _or"),
    "shuffle": ((3, 0), "warp shuffles (__shfl)"),
    "funnel_shift": ((3, 2), "funnel shifts (__funnelshift)"),
    "half": ((5, 3), "half-precision arithmetic"),
    "tensor_core": ((7, 0), "tensor-core matrix operations (wmma, mma)"),
    "match": ((7, 0), "__match_any_sync / __match_all_sync"),
    "redux": ((8, 0), "__reduce_*_sync"),
    "cp_async": ((8, 0), "asynchronous copies (cp.async, memcpy_async)"),
    "mbarrier": ((8, 0), "asynchronous barriers (mbarrier)"),
    "griddepcontrol": ((9, 0), "programmatic dependent launch (griddepcontrol)"),
}

_FP64_OPS = {"add", "sub", "mul", "fma", "mad", "div", "rcp", "sqrt", "rsqrt", "min", "max", "abs", "neg"}


def _atomic(ins) -> list[str]:
    mods, t = set(ins.mods), ins.type
    shared = any(m.startswith("shared") for m in mods)
    wide = t in ("u64", "s64", "b64")
    out = []
    if t in ("u32", "s32", "b32", "u64", "s64", "b64"):      # the integer atomics (a float one is its own row)
        out.append(("shared_atomic64" if wide else "shared_atomic32") if shared else
                   ("global_atomic64" if wide else "global_atomic32"))
    if "add" in mods and t == "f32":
        out.append("float_atomic_add")
    if "add" in mods and t == "f64":
        out.append("double_atomic_add")
    return out


def used_features(module: Module, entry: str) -> list[str]:
    """The :data:`FEATURES` keys the entry function and its callees use, in the table's order."""
    found: set[str] = set()
    for name in [entry, *module.callees(entry)]:
        f = module.functions.get(name)
        if f is None:
            continue
        for ins in f.instrs:
            op = ins.opcode
            if op in ("atom", "red"):
                found.update(_atomic(ins))
            elif op == "vote":
                found.add("ballot" if "ballot" in ins.mods else "vote")
            elif op in ("bar", "barrier") and "red" in ins.mods:
                found.add("barrier_reduction")
            elif op == "shfl":
                found.add("shuffle")
            elif op == "shf":
                found.add("funnel_shift")
            elif op in ("wmma", "mma", "ldmatrix", "stmatrix"):
                found.add("tensor_core")
            elif op in ("match", "redux", "mbarrier", "griddepcontrol"):
                found.add(op)
            elif op == "cp" and ins.mods and ins.mods[0].startswith("async"):
                found.add("cp_async")
            elif op in _FP64_OPS and ins.type == "f64":
                found.add("double")
            elif op in ("add", "sub", "mul", "fma", "neg", "abs", "min", "max") and ins.type in ("f16", "f16x2"):
                found.add("half")
    return [k for k in FEATURES if k in found]


def missing_notes(features: list[str], compute_capability: str, device_name: str) -> list[str]:
    """One note per used feature the device's compute capability lacks."""
    have = tuple(int(x) for x in compute_capability.split("."))
    notes = []
    for key in features:
        need, what = FEATURES.get(key, ((0, 0), key))
        if have < need:
            notes.append(f"the kernel uses {what}, which needs compute capability {need[0]}.{need[1]} (CUDA C "
                         f"Programming Guide); the {device_name} ({compute_capability}) cannot run it: the figures "
                         "are what it would cost if it could")
    return notes
