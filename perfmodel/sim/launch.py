"""Everything one launch shares across its batches of blocks: the global heap with the argument arrays, the
constant bank, the shared- and local-memory layouts, the packed kernel parameters and the symbol table."""
from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np

from perfmodel.errors import SimulationError
from perfmodel.ptx.ir import TYPES, Module
from perfmodel.sim import struct_args
from perfmodel.sim.program import ProgramBuilder, Symbols, function_addresses, param_layout
from perfmodel.sim.space import CONST_BASE, SHARED_BASE, BlockSpace, ByteSpace, GlobalHeap

LOCAL_BUDGET = 256 << 20          # bytes of per-thread local memory per batch
MAX_SHARED_PER_BLOCK = 232448      # 227 KB: the largest per-block shared memory of any GPU (CC 9.0, 10.0)
MAX_LOCAL_PER_THREAD = 512 * 1024  # 512 KB: local memory per thread, every CC since 2.0
# shared memory the system reserves per block on CC 8.0 and later (CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability": 1 KB; cudaDevAttrReservedSharedMemoryPerBlock)
RESERVED_SHARED_PER_BLOCK = 1024


def _align(n, a):
    return (n + a - 1) // a * a


def _relocate(v, symbols: Symbols, space: np.ndarray, start: int, named: bool) -> None:
    """Write the addresses of ``v``'s initialiser (ptx.ir.Variable.relocs) into its bytes at ``start`` of
    ``space``: a variable's address in its own space (``table``) or its generic one (``generic(table)``: the window
    base added for a constant or shared variable), a device function's, plus the addend, under a byte mask if one.
    A name not placed (a kernel's, for a launch from device code) or an expression not read is an error for a
    variable the kernel names."""
    for offset, size, name, addend, generic, mask in v.relocs:
        if name is None or symbols.space(name) is None:
            if not named:
                continue
            raise SimulationError(f"the initialiser of the variable {v.name} holds {addend if name is None else name!r}"
                                  ", an address perfmodel cannot place")
        where = symbols.space(name)
        value = symbols.address(name) + addend
        if generic and where == "const":
            value += CONST_BASE
        elif generic and where == "shared":
            value += SHARED_BASE
        if mask is not None:
            value = (value & mask) >> ((mask & -mask).bit_length() - 1)
        value &= (1 << (8 * size)) - 1
        space[start + offset:start + offset + size] = np.frombuffer(value.to_bytes(size, "little"), np.uint8)


def _builder(module: Module, symbols: Symbols, path: str) -> ProgramBuilder:
    """The module's compiled functions for this symbol table: built once and kept on the module, since a
    compiled instruction depends only on the PTX and on what it resolves at build time - the symbols: the offsets of
    the kernel's parameters and the places of its global, constant, shared and local variables. Pointer arguments
    are read from the parameter buffer at run time, so a later launch of the same kernel, on arrays of any size,
    reuses them."""
    key = (path, tuple(sorted(symbols.table.items())))
    cache = module.__dict__.setdefault("_builders", {})
    builder = cache.get(key)
    if builder is None:
        if len(cache) >= 8:
            cache.pop(next(iter(cache)))
        builder = cache[key] = ProgramBuilder(module, symbols, path)
    return builder


class PointedArray:
    """The value of a pointer-typed ``__constant__`` / ``__device__`` variable (``__constant__ float *d_table;``):
    the array it points to, placed in global memory; the variable holds its address (what the host's
    ``cudaMemcpyToSymbol(d_table, &dev_ptr, sizeof(dev_ptr))`` copies)."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def copy(self) -> "PointedArray":
        return PointedArray(self.array.copy())


def _symbol_structs(program, constants, blocks: list, arrays: list, owners: list) -> dict:
    """NAME -> (layout, number fields) of the struct-typed module variables given as dicts of fields; their
    pointer fields' arrays appended to ``blocks``/``arrays``/``owners`` as (NAME, field)."""
    from types import SimpleNamespace

    out = {}
    layouts = getattr(program, "variable_layouts", None) or {}
    for name, value in (constants or {}).items():
        if isinstance(value, PointedArray):     # its array, owned as a pointer argument's: NAME names it
            if not isinstance(value.array, np.ndarray) or not value.array.flags.c_contiguous:
                raise SimulationError(f"symbol {name}: the array it points to must be a C-contiguous numpy array")
            blocks.append((name, value.array.nbytes))
            arrays.append(value.array)
            owners.append((name, None))
            continue
        if not isinstance(value, Mapping):
            continue
        layout = layouts.get(name)
        var = SimpleNamespace(name=name, ctype=layout.ctype if layout is not None else "", layout=layout)
        where = f"symbol {name}" + (f" ({layout.ctype})" if layout is not None else "")
        numbers, fields = struct_args.normalise(var, value, where)
        out[name] = (layout, numbers)
        for path, array in fields.items():
            blocks.append((f"{name}.{path}", array.nbytes))
            arrays.append(array)
            owners.append((name, path))
    return out


class LaunchState:
    def __init__(self, program, grid, block, args, constants, dynamic_shared_bytes, max_steps, timeout,
                 blank_inputs: bool = False, count_cc1: bool = True, pointer_offsets: dict | None = None):
        self.program = program
        module: Module = program.module
        entry = module.functions[program.entry]
        self.entry = entry
        self.grid, self.block = grid, block
        self.T = block[0] * block[1] * block[2]
        self.nw_real = (self.T + 31) // 32
        self.Tp = self.nw_real * 32
        self.initial_mask = None if self.T == self.Tp else (np.arange(self.Tp) < self.T).reshape(1, -1)
        self.dynamic_shared_bytes = int(dynamic_shared_bytes)
        self.max_steps = max_steps
        self.fast_loops = False
        self.count_cc1 = count_cc1      # count CC 1.x transactions of global accesses (sim/coalesce.py)
        self.keep_outputs = True        # write the heap back into the argument arrays at the end
        self.count_first_touch = False  # count each global load's sectors no earlier load touched (memory.py)
        self.skipped_iterations = 0     # loop iterations counted from identical ones (sim.loops), not executed
        # the first bar.sync that completed with threads of its blocks on their way out of the kernel (a note)
        self.early_exit_barrier = None
        self.deadline = time.perf_counter() + timeout if timeout else float("inf")
        symbols = Symbols()
        self.symbols = symbols

        # global heap: pointer arguments, then module .global variables
        from perfmodel.sim.texture import HANDLE_BASE, Surface, Texture

        blocks = []
        self.arg_arrays: list = []
        owners: list[tuple[str, str | None]] = []     # per arg array: (parameter, struct field or None)
        params = program.params
        self.aliases: dict[str, int] = {}   # a pointer given the very array of an earlier one: that heap block
        self.null_pointers: set[str] = set()    # pointer parameters given NULL: address 0, no array
        for p, a in zip(params, args):
            if p.is_pointer:
                if a is None:
                    self.null_pointers.add(p.name)
                    continue
                if not isinstance(a, np.ndarray):
                    raise SimulationError(f"argument {p.name} ({p.ctype}) must be a numpy array")
                same = next((k for k, b in enumerate(self.arg_arrays) if b is a), None)
                if same is not None:
                    # the host passes one buffer twice (an in-place kernel, bit_rev(d, d)): one allocation
                    self.aliases[p.name] = same
                    continue
                blocks.append((p.name, a.nbytes))
                self.arg_arrays.append(a)
                owners.append((p.name, None))
        # structs passed by value as dicts of fields: their numbers, and their pointer fields' arrays after the
        # pointer arguments' (written back alike)
        structs: dict[str, tuple] = {}
        self.struct_pointers: dict[tuple[str, int], str] = {}    # (parameter, field offset) -> its array's name
        for p, a in zip(params, args):
            if isinstance(a, Mapping):
                numbers, arrays = struct_args.normalise(p, a)
                structs[p.name] = (numbers, arrays)
                for path, array in arrays.items():
                    blocks.append((f"{p.name}.{path}", array.nbytes))
                    self.arg_arrays.append(array)
                    owners.append((p.name, path))
                    self.struct_pointers[(p.name, p.layout.leaf(path).offset)] = f"{p.name}.{path}"
        # struct-typed __constant__ / __device__ variables given as dicts of fields (AutoDock-GPU's cData, whose
        # fields point to the device arrays): their pointer fields' arrays next, their bytes packed below
        symbol_structs = _symbol_structs(program, constants, blocks, self.arg_arrays, owners)
        # texture objects (cudaTextureObject_t arguments): their texels after the pointer arguments
        texture_args = [(p, a) for p, a in zip(params, args) if isinstance(a, (Texture, Surface))]
        for p, a in texture_args:
            blocks.append((p.name, a.data.nbytes))
        # a cooperative launch's grid-sync workspace (its arrival counter), zeroed, read through %envreg1/2
        from perfmodel.sim import grid_sync

        syncs = grid_sync(program)
        if syncs:
            blocks.append(("(grid sync workspace)", 16))
        gvars = [v for v in module.variables if v.space == "global" and v.count is not None]
        for v in gvars:
            blocks.append((v.name, v.nbytes))
        self.heap = GlobalHeap(blocks)
        ptr_values = {}
        self.pointer_offsets = {str(k): int(v) for k, v in (pointer_offsets or {}).items()}
        for name, off in self.pointer_offsets.items():
            k = self.aliases.get(name, next((i for i, (n, path) in enumerate(owners) if n == name and path is None),
                                            None))
            if k is None:
                raise SimulationError(f"pointer offset for {name!r}: not a pointer parameter of {program.name}")
            if not 0 <= off <= self.arg_arrays[k].nbytes:
                raise SimulationError(f"pointer offset for {name!r}: {off} bytes, outside its array's "
                                      f"{self.arg_arrays[k].nbytes} bytes")
        # per heap block: bytes between the array's start and the pointer the kernel gets (bounds messages)
        self.block_pointer_offsets = {k: self.pointer_offsets.get(n, 0) for k, (n, path) in enumerate(owners)
                                      if path is None}
        struct_addresses: dict[str, dict[str, int]] = {name: {} for name in [*structs, *symbol_structs]}
        self.blank_inputs = blank_inputs      # the heap starts zeroed; nothing is copied in or written back
        for k, (a, (name, path)) in enumerate(zip(self.arg_arrays, owners)):
            if not blank_inputs:
                self.heap.write(k, a.reshape(-1).view(np.uint8) if a.size else b"")
            if path is None:
                # a pointer into its array (the host passes d + 1): the array's start plus that many bytes
                ptr_values[name] = self.heap.address(k) + self.pointer_offsets.get(name, 0)
            else:
                struct_addresses[name][path] = int(self.heap.address(k))
        # output names (an array parameter, ARG.FIELD of a struct's pointer field) -> heap block, for write tracking
        self.output_blocks: dict[str, int] = {(n if path is None else f"{n}.{path}"): k
                                              for k, (n, path) in enumerate(owners)}
        self.output_blocks.update(self.aliases)
        self.tracked: dict[int, tuple[int, int, np.ndarray]] = {}   # track_writes(): block -> (start, size, flags)
        self.pointer_blocks: dict[int, int | None] = {}   # global access -> the array its pointer is (sim/memory.py)
        for name in self.null_pointers:
            ptr_values[name] = 0
        for alias, k in self.aliases.items():      # the same buffer as an earlier pointer: its block
            ptr_values[alias] = self.heap.address(k) + self.pointer_offsets.get(alias, 0)
        k = len(self.arg_arrays)
        self.textures: dict = {}         # handle -> (Texture or Surface, heap address of its texels)
        self.surfaces: list = []         # (Surface, heap block): written back after the run
        handles = {}
        for t, (p, a) in enumerate(texture_args):
            if not blank_inputs:
                self.heap.write(k, a.data.reshape(-1).view(np.uint8))
            handles[p.name] = HANDLE_BASE + t
            self.textures[HANDLE_BASE + t] = (a, self.heap.address(k))
            if isinstance(a, Surface):
                self.surfaces.append((a, k))
            k += 1
        self.grid_workspace = None
        if syncs:
            self.grid_workspace = int(self.heap.address(k))
            k += 1
        # __device__ variables: their initialiser, or values given (the host's cudaMemcpyToSymbol), which are
        # written back after the run (cudaMemcpyFromSymbol)
        constants = dict(constants or {})
        for name, (layout, numbers) in symbol_structs.items():
            constants[name] = np.frombuffer(struct_args.pack(layout, numbers, struct_addresses[name]), np.uint8).copy()
        for name, value in list(constants.items()):
            if isinstance(value, PointedArray):     # the variable holds the address of its array
                constants[name] = np.array([ptr_values[name]], np.uint64)
        self.device_variables: list[tuple[np.ndarray, int]] = []     # (given array, heap block)
        self.device_variable_blocks: dict[str, int] = {}                # name -> heap block
        for j, v in enumerate(gvars):
            if v.init:
                self.heap.write(k + j, v.init)
            src = constants.pop(v.name, None)
            if src is not None:
                if not isinstance(src, np.ndarray) or not src.flags.c_contiguous:
                    raise SimulationError(f"__device__ {v.name}: expected a C-contiguous numpy array")
                if src.nbytes > v.nbytes:
                    raise SimulationError(f"__device__ {v.name} holds {v.nbytes} bytes; {src.nbytes} given")
                if not blank_inputs:
                    self.heap.bytes[self.heap.offsets[k + j]:self.heap.offsets[k + j] + src.nbytes] = \
                        src.reshape(-1).view(np.uint8)
                self.device_variables.append((src, k + j))
                self.device_variable_blocks[v.name] = k + j
            symbols.add(v.name, "global", self.heap.address(k + j))

        # constant bank
        coff = 0
        cvars = [v for v in module.variables if v.space == "const"]
        layout = []
        for v in cvars:
            coff = _align(coff, v.align)
            layout.append((v, coff))
            coff += v.nbytes
        self.const = ByteSpace(coff)
        given_constants = set(constants)
        for v, off in layout:
            symbols.add(v.name, "const", off)
            if v.init:
                self.const.bytes[off:off + len(v.init)] = np.frombuffer(v.init, np.uint8)
            src = constants.pop(v.name, None)
            if src is not None:
                raw = np.ascontiguousarray(src).reshape(-1).view(np.uint8)
                if raw.size > v.nbytes:
                    raise SimulationError(f"__constant__ {v.name} holds {v.nbytes} bytes; {raw.size} given")
                self.const.bytes[off:off + raw.size] = raw
        if constants:
            raise SimulationError(f"unknown __constant__ or __device__ symbol(s) {sorted(constants)}; the module "
                                  f"declares {[v.name for v in cvars + gvars]}")
        for name, address in function_addresses(module).items():
            symbols.add(name, "func", address)
        # initialiser words that hold an address (`__device__ float *p = table;`, a function-pointer table, a
        # vtable), now that every variable has its place; not where the values were given
        named = module.named_symbols(program.entry)
        for j, v in enumerate(gvars):
            if v.relocs and v.name not in self.device_variable_blocks:
                start = int(self.heap.offsets[k + j])
                _relocate(v, symbols, self.heap.bytes, start, v.name in named)
        for v, off in layout:
            if v.relocs and v.name not in given_constants:
                _relocate(v, symbols, self.const.bytes, off, v.name in named)
        # __constant__ arrays the kernel names that start as zeros: no initialiser in the source, none given (the
        # host's cudaMemcpyToSymbol does not run here)
        self.unset_constants = [(v.name, v.nbytes) for v in cvars
                                if v.name in named and not v.init and v.name not in given_constants]

        # shared memory: module-level and demoted function-level variables, then the dynamic allocation
        soff = 0
        svars = module.shared_variables(program.entry)
        dyn = []
        for v in svars:
            if v.count is None:
                dyn.append(v)
                continue
            soff = _align(soff, v.align)
            symbols.add(v.name, "shared", soff)
            soff += v.nbytes
        self.static_shared_bytes = soff
        dyn_off = _align(soff, max([v.align for v in dyn] + [16]))
        for v in dyn:
            symbols.add(v.name, "shared", dyn_off)
        self.shared_bytes = (dyn_off + self.dynamic_shared_bytes) if dyn else soff
        self.extern_shared = [v.name for v in dyn]
        if not dyn and self.dynamic_shared_bytes:
            self.shared_bytes = soff + self.dynamic_shared_bytes
        # the reserved shared memory (cooperative groups' scratch), after the block's own: [begin, end) of the
        # window, which the block's own accesses cannot reach (they are checked against shared_bytes)
        from perfmodel.sim import reserved_shared

        self.reserved_shared = None
        self.shared_window = self.shared_bytes
        if reserved_shared(program):
            begin = _align(self.shared_bytes, 128)
            self.reserved_shared = (begin, begin + RESERVED_SHARED_PER_BLOCK)
            self.shared_window = begin + RESERVED_SHARED_PER_BLOCK

        # local memory: every function's .local variables at their own offsets (no recursion)
        loff = 0
        for f in module.functions.values():
            for v in f.variables:
                if v.space == "local":
                    loff = _align(loff, v.align)
                    symbols.add(v.name, "local", loff)
                    loff += v.nbytes
        self.local_bytes = loff
        # before any allocation: no GPU gives a block more than 227 KB of shared memory (CC 9.0) or a thread more
        # than 512 KB of local memory (CUDA C++ Programming Guide, "Technical Specifications per Compute
        # Capability"); larger declarations cannot run anywhere
        if self.shared_bytes > MAX_SHARED_PER_BLOCK:
            raise SimulationError(f"{program.name}: a block needs {self.shared_bytes:,} bytes of shared memory "
                                  f"(static and dynamic); no GPU allows more than {MAX_SHARED_PER_BLOCK:,} per block")
        if self.local_bytes > MAX_LOCAL_PER_THREAD:
            raise SimulationError(f"{program.name}: a thread needs {self.local_bytes:,} bytes of local memory (stack "
                                  f"arrays); no GPU allows more than {MAX_LOCAL_PER_THREAD:,} per thread")

        # kernel parameters, packed as the driver does
        offsets, total = param_layout(entry.params)
        self.param_bytes = total
        if len(entry.params) != len(params):
            raise SimulationError(f"{program.name}: the PTX entry has {len(entry.params)} parameters, the source "
                                  f"signature {len(params)}")
        buf = bytearray(_align(max(total, 8), 8))
        self.param_names = {pp.name: p.name for pp, p in zip(entry.params, params)}     # PTX -> source
        for pp, p, a in zip(entry.params, params, args):
            off = offsets[pp.name]
            if p.is_pointer:
                raw = int(ptr_values[p.name]).to_bytes(8, "little")
            elif p.name in handles:
                raw = int(handles[p.name]).to_bytes(8, "little")
            elif p.name in structs:
                raw = struct_args.pack(p.layout, structs[p.name][0], struct_addresses[p.name])
            elif isinstance(a, (bytes, bytearray)):
                raw = bytes(a)
            elif isinstance(a, np.ndarray) and a.dtype.fields is not None:
                raw = a.tobytes()
            else:
                try:
                    dt = p.dtype if p.dtype is not None else np.dtype(TYPES[pp.type][0])
                    raw = np.asarray(a).astype(dt).tobytes()
                except (TypeError, ValueError):
                    raise SimulationError(f"argument {p.name} ({p.ctype}) must be a number, got {a!r}") from None
            if len(raw) > pp.nbytes:
                raw = raw[:pp.nbytes]
            buf[off:off + len(raw)] = raw
            symbols.add(pp.name, "param", off)
        self.param_buf = bytes(buf)
        self.param_offsets = offsets
        self.builder = _builder(module, symbols, program.path)

    def checkpoint(self):
        """Restore function for the global heap (argument arrays are restored from the caller's arrays, which the
        run leaves untouched until write_back)."""
        sources = list(self.arg_arrays) + [None] * (len(self.heap.names) - len(self.arg_arrays))
        restore_heap = self.heap.checkpoint(sources)
        if not self.tracked:
            return restore_heap
        # the tracked writes too: what a pilot or probe run stores is undone with the heap
        saved = {k: flags.copy() for k, (_start, _size, flags) in self.tracked.items()}

        def restore():
            restore_heap()
            for k, flags in saved.items():
                self.tracked[k][2][...] = flags
        return restore

    def param_at(self, offset: int) -> str:
        """Which parameter (and struct field) byte ``offset`` of the packed parameters is, for messages."""
        spans = [(self.param_offsets[pp.name], pp.nbytes, p) for pp, p in zip(self.entry.params, self.program.params)]
        for start, nbytes, p in spans:
            if start <= offset < start + nbytes:
                where = f"byte {offset - start} of {p.name} ({p.ctype})"
                layout = getattr(p, "layout", None)
                if layout is not None and layout.error is None:
                    rel = offset - start
                    leaf = next((f for f in reversed(layout.leaves) if f.offset <= rel), None)
                    if leaf is not None:
                        where += f", in or after its field {leaf.path} ({leaf.ctype})"
                return where
        if not spans:
            return "the kernel has no parameters"
        start, nbytes, p = max(spans, key=lambda s: s[0])
        where = f"past the parameters, which end at byte {start + nbytes}: the last is {p.name} ({p.ctype}, bytes " \
                f"{start} to {start + nbytes - 1})"
        layout = getattr(p, "layout", None)
        if layout is not None and layout.error is None and layout.leaves:
            leaf = layout.leaves[-1]
            where += f", whose last field is {leaf.path} ({leaf.ctype}, from byte {start + leaf.offset})"
        return where

    def kernel_param(self, name: str, off: int, dt) -> np.ndarray:
        base = self.param_offsets.get(name)
        if base is None:
            raise SimulationError(f"ld.param of '{name}', which is not a parameter of {self.program.name}")
        start = base + off
        raw = self.param_buf[start:start + dt.itemsize]
        return np.frombuffer(raw, dt).reshape(1, 1).copy()

    def new_shared(self, nB: int) -> BlockSpace:
        return BlockSpace(nB, self.shared_window)

    def new_local(self, nB: int) -> BlockSpace:
        return BlockSpace(nB * self.Tp if self.local_bytes else 1, self.local_bytes)

    def batch_blocks(self, max_lanes: int) -> int:
        """Blocks per batch: about ``max_lanes`` lanes, fewer when their shared and local memory would not fit."""
        from perfmodel.limits import human, memory_budget

        per = max(1, max_lanes // self.Tp)
        if self.local_bytes:
            per = max(1, min(per, LOCAL_BUDGET // (self.local_bytes * self.Tp)))
        block_bytes = self.shared_window + self.local_bytes * self.Tp
        budget = memory_budget() - self.heap.bytes.nbytes
        if block_bytes > budget:
            raise SimulationError(
                f"{self.program.name}: one block needs {human(self.shared_bytes)} of shared memory and "
                f"{human(self.local_bytes * self.Tp)} of local memory ({human(self.local_bytes)} per thread), more "
                f"than the {human(max(budget, 0))} left of the memory budget (half the machine's memory, or "
                "$PERFMODEL_MAX_MEMORY); no GPU has that much per block - check the array sizes")
        if block_bytes:
            per = max(1, min(per, budget // 4 // block_bytes))
        return per

    def track_writes(self, names) -> None:
        """Record, element by element, what the run stores into the named arrays (outputs and ``__device__``
        variables) and what its atomics update: a run of some of the blocks is checked where they wrote, whatever
        the value."""
        arrays = {k: a for k, a in enumerate(self.arg_arrays)}
        arrays.update({k: a for a, k in self.device_variables})
        self.tracked_names: dict[str, tuple[int, int]] = {}      # name -> (heap block, element size)
        for name in names:
            k = self.output_blocks.get(name, self.device_variable_blocks.get(name))
            if k is None or k not in arrays:
                continue
            self.tracked_names[name] = (k, arrays[k].dtype.itemsize)
            if k not in self.tracked:
                # one flag per element of the array: STORED, ATOMIC (sim/memory.py _mark_written)
                size = arrays[k].dtype.itemsize
                self.tracked[k] = (self.heap.offsets[k], size, np.zeros(self.heap.sizes[k] // size, np.uint8))

    def written_elements(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per tracked name: (elements stored to, elements an atomic updated)."""
        out = {}
        for name, (k, _size) in getattr(self, "tracked_names", {}).items():
            flags = self.tracked[k][2]
            out[name] = ((flags & 1).astype(bool), (flags & 2).astype(bool))
        return out

    def write_back(self) -> None:
        if self.blank_inputs:
            return
        k = 0
        for a in self.arg_arrays:
            flat = a.reshape(-1)
            flat[...] = self.heap.read(k, a.dtype, flat.size)
            k += 1
        for surface, block in self.surfaces:
            flat = surface.data.reshape(-1)
            flat[...] = self.heap.read(block, surface.data.dtype, flat.size)
        for array, block in self.device_variables:
            flat = array.reshape(-1)
            flat[...] = self.heap.read(block, array.dtype, flat.size)

