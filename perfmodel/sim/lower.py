"""Compile the checked pycparser AST of a kernel into Python closures over numpy lane arrays.

Each expression becomes ``fn(ctx) -> value`` and each statement ``fn(ctx) -> None``; a statement runs once per batch
of blocks for all lanes together, with the active mask in ``ctx.mask``. Device functions are inlined at each call.
Anything outside the supported subset raises FrontendError naming the construct and file:line:col.
"""
from __future__ import annotations

import numpy as np
from pycparser import c_ast

from perfmodel.errors import FrontendError, Location, SimulationError
from perfmodel.frontend import ctypes as T
from perfmodel.sim import memory as M
from perfmodel.sim import warps as W
from perfmodel.sim.memory import is_lanes
from perfmodel.sim.runtime import BatchArray, Site

EMPTY = np.zeros((1, 1, 1, 1), bool)


def set_mask(ctx, m, empty=False):
    ctx.mask = m
    ctx._stats = None
    ctx.empty = empty


def union(a, b):
    """Union of two lane sets; None = all lanes, EMPTY = none."""
    if a is None or b is None:
        return None
    if a is EMPTY:
        return b
    if b is EMPTY:
        return a
    return a | b


def store_var(ctx, slot, v):
    """Assign a variable for the active lanes. A variable declared under mask m is only ever seen by lanes of m
    (masks only shrink inside its scope), so when the active mask is still the declaration's mask the value is
    replaced outright; otherwise the inactive lanes keep their old values."""
    m = ctx.mask
    if m is None or m is ctx.decl_mask[slot]:
        ctx.vals[slot] = v
    else:
        old = ctx.vals[slot]
        ctx.vals[slot] = v if old is None else np.where(m, v, old)


def store_ptr(ctx, slot, ref):
    m = ctx.mask
    old = ctx.vals[slot]
    if m is None or old is None or m is ctx.decl_mask[slot]:
        ctx.vals[slot] = ref
        return
    if old[0] is not ref[0]:
        raise FrontendError(f"pointer would point into different arrays ({old[0].name}, {ref[0].name}) in "
                            "different threads; not supported")
    ctx.vals[slot] = (ref[0], np.where(m, ref[1], old[1]))


def declare(ctx, slot):
    ctx.decl_mask[slot] = ctx.mask


def cast(v, src: T.ScalarType, dst: T.ScalarType):
    if src is dst or src.dtype == dst.dtype:
        return v
    if dst is T.BOOL:
        return v != 0
    if src.is_float and dst.kind == "int":
        # PTX cvt.rzi saturates: out-of-range values clamp to the type's range, NaN becomes 0
        info = np.iinfo(dst.dtype)
        v = np.nan_to_num(np.trunc(v), nan=0.0)
        v = np.clip(v, info.min, info.max)
        if dst.itemsize >= 8:       # float64 cannot hold 2^63 - 1: clamp the top explicitly
            big = v >= 2.0 ** (63 if dst.signed else 64)
            out = np.asarray(v).astype(dst.dtype)
            out = np.where(big, info.max, out).astype(dst.dtype)
            return out if is_lanes(v) else dst.dtype.type(out)
    if is_lanes(v):
        return v.astype(dst.dtype)
    return dst.dtype.type(v)


# ------------------------------------------------------------------ symbols ----------------------------------
class Var:
    __slots__ = ("slot", "t")

    def __init__(self, slot, t):
        self.slot, self.t = slot, t


class Arr:
    """An array name: kind "global" (param index), "shared" (index), "constant" (index), "local" (slot) or
    "ptr" (a pointer variable in a slot holding (mem, offset))."""
    __slots__ = ("kind", "index", "t")

    def __init__(self, kind, index, t):
        self.kind, self.index, self.t = kind, index, t


class E:
    """A compiled expression: fn(ctx) -> value, its static type, and its value if a compile-time constant."""
    __slots__ = ("fn", "t", "const", "node")

    def __init__(self, fn, t, const=None, node=None):
        self.fn, self.t, self.const, self.node = fn, t, const, node


def const_e(value, t, node=None):
    v = t.dtype.type(value) if t is not T.BOOL else np.bool_(value)
    return E(lambda ctx, v=v: v, t, v, node)


_SPECIAL_F = {
    "sqrtf": np.sqrt, "expf": np.exp, "exp2f": np.exp2, "logf": np.log, "log2f": np.log2, "log10f": np.log10,
    "sinf": np.sin, "cosf": np.cos, "tanf": np.tan, "tanhf": np.tanh, "atanf": np.arctan, "asinf": np.arcsin,
    "acosf": np.arccos, "sinhf": np.sinh, "coshf": np.cosh, "cbrtf": np.cbrt, "__expf": np.exp, "__logf": np.log,
    "__sinf": np.sin, "__cosf": np.cos, "__tanf": np.tan, "__log2f": np.log2, "__log10f": np.log10,
    "exp10f": lambda x: np.power(x.dtype.type(10) if hasattr(x, "dtype") else 10.0, x),
    "rsqrtf": lambda x: 1 / np.sqrt(x), "erff": None,
}
_SPECIAL_BIN_F = {"powf": np.power, "atan2f": np.arctan2, "hypotf": np.hypot, "__powf": np.power}
_MISC_F = {"fabsf": np.abs, "floorf": np.floor, "ceilf": np.ceil, "truncf": np.trunc, "roundf": None,
           "rintf": np.rint, "nearbyintf": np.rint}
_MISC_BIN_F = {"fminf": np.fmin, "fmaxf": np.fmax, "fmodf": np.fmod, "copysignf": np.copysign}


def _round_half_away(x):
    return np.copysign(np.floor(np.abs(x) + x.dtype.type(0.5) if hasattr(x, "dtype") else abs(x) + 0.5), x)


_MISC_F["roundf"] = _round_half_away

# Double (and overloaded, C++ style) spellings: the argument type decides float or double.
for _name in list(_SPECIAL_F):
    if _name.endswith("f") and not _name.startswith("__"):
        _SPECIAL_F.setdefault(_name[:-1], _SPECIAL_F[_name])
for _name in list(_SPECIAL_BIN_F):
    if _name.endswith("f") and not _name.startswith("__"):
        _SPECIAL_BIN_F.setdefault(_name[:-1], _SPECIAL_BIN_F[_name])
for _name in list(_MISC_F):
    _MISC_F.setdefault(_name[:-1], _MISC_F[_name])
for _name in list(_MISC_BIN_F):
    _MISC_BIN_F.setdefault(_name[:-1], _MISC_BIN_F[_name])
_SPECIAL_F.pop("erff")
_SPECIAL_F.pop("erf", None)

_ATOMICS = {"atomicAdd": "add", "atomicSub": "sub", "atomicMin": "min", "atomicMax": "max", "atomicExch": "exch",
            "atomicCAS": "cas", "atomicAnd": "and", "atomicOr": "or", "atomicXor": "xor", "atomicInc": "inc",
            "atomicDec": "dec"}

_WARP_FUNCS = {"__shfl_sync": ("idx", (3, 4)), "__shfl_up_sync": ("up", (3, 4)),
               "__shfl_down_sync": ("down", (3, 4)), "__shfl_xor_sync": ("xor", (3, 4)),
               "__ballot_sync": ("ballot", (2,)), "__any_sync": ("any", (2,)), "__all_sync": ("all", (2,)),
               "__activemask": ("activemask", (0,))}

_BUILTIN_VECS = {"threadIdx": "tid", "blockIdx": "bid", "blockDim": "bdim", "gridDim": "gdim"}


class LoopRec:
    __slots__ = ("brk", "cont")

    def __init__(self):
        self.brk = EMPTY
        self.cont = EMPTY


class Lowerer:
    def __init__(self, filename, map_col, funcs, globals_, dynamic_shared, file_consts=None):
        self.file_consts = file_consts or {}
        self.filename = filename
        self.map_col = map_col
        self.funcs = funcs                      # name -> FuncDef
        self.file_globals = globals_            # name -> Decl (file-scope __constant__)
        self.dynamic_shared = dynamic_shared
        self.sites: list[Site] = []
        self._site_index: dict = {}
        self.n_slots = 0
        self.scopes: list[dict] = []
        self.params = []                        # (name, type or ArrayType, slot or index)
        self.shared = []                        # (name, ArrayType, dynamic)
        self._shared_index: dict = {}
        self.shared_scalars: set = set()        # names of `__shared__ T x;` (not arrays)
        self.local_bytes = 0                    # bytes of thread-local arrays per thread
        self.uncounted = 0                      # > 0 while lowering the bookkeeping of an unrolled loop
        self.constants = []                     # (name, ArrayType)
        self.call_stack: list[str] = []
        self.loop_depth = 0
        self.func_stack: list = []              # None for the kernel, (return Var, type) for device functions

    # ---- helpers ---------------------------------------------------------------------------------------------
    def loc(self, node) -> Location:
        c = getattr(node, "coord", None)
        if c is None:
            return Location(self.filename)
        return Location(self.filename, c.line, self.map_col(c.line, c.column))

    def err(self, node, msg) -> FrontendError:
        loc = self.loc(node)
        return FrontendError(f"{loc}: {msg}", location=loc)

    def site(self, node, kind, detail="") -> int:
        loc = self.loc(node)
        key = (loc.line, loc.col, kind, detail)
        i = self._site_index.get(key)
        if i is None:
            i = len(self.sites)
            self.sites.append(Site(self.filename, loc.line or 0, loc.col or 0, kind, detail))
            self._site_index[key] = i
        return i

    def new_slot(self) -> int:
        self.n_slots += 1
        return self.n_slots - 1

    def lookup(self, name, node):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise self.err(node, f"unknown identifier '{name}'")

    def const_int(self, node) -> int:
        e = self.expr(node)
        if e.const is None or not e.t.is_int:
            raise self.err(node, "array size must be an integer constant expression (a #define or a literal)")
        return int(e.const)

    # ---- types ---------------------------------------------------------------------------------------------
    def scalar_type(self, type_node, node):
        if isinstance(type_node, c_ast.TypeDecl) and isinstance(type_node.type, c_ast.IdentifierType):
            try:
                return T.type_from_names(type_node.type.names)
            except KeyError:
                raise self.err(node, f"unsupported type '{' '.join(type_node.type.names)}'") from None
        if isinstance(type_node, c_ast.TypeDecl):
            raise self.err(node, f"unsupported type {type(type_node.type).__name__} (structs, unions and enums "
                                 "are not supported)")
        raise self.err(node, f"unsupported declarator {type(type_node).__name__}")

    def decl_type(self, decl, space_default="local"):
        """Scalar type, or ArrayType for arrays and pointers."""
        tn = decl.type
        dims = []
        while isinstance(tn, c_ast.ArrayDecl):
            dims.append(tn.dim)
            tn = tn.type
        if isinstance(tn, c_ast.PtrDecl):
            if dims:
                raise self.err(decl, "arrays of pointers are not supported")
            inner = tn.type
            if isinstance(inner, c_ast.PtrDecl):
                raise self.err(decl, "pointers to pointers are not supported")
            elem = self.scalar_type(inner, decl)
            if elem is None:
                raise self.err(decl, "void pointers are not supported")
            return T.ArrayType(elem, space_default, (None,))
        elem = self.scalar_type(tn, decl)
        if not dims:
            return elem
        shape = tuple(None if d is None else self.const_int(d) for d in dims)
        if elem is None:
            raise self.err(decl, "arrays of void")
        return T.ArrayType(elem, space_default, shape)

    # ---- kernel --------------------------------------------------------------------------------------------
    def kernel(self, fdef: c_ast.FuncDef):
        self.scopes = [{}]
        scope = self.scopes[0]
        for name, val in (("true", 1), ("false", 0)):
            scope[name] = ("const", const_e(val, T.BOOL))
        scope["warpSize"] = ("const", const_e(32, T.INT))
        for name, decl in self.file_consts.items():
            t = self.decl_type(decl, "constant")
            init = self.expr(decl.init)
            if not isinstance(t, T.ScalarType) or init.const is None:
                raise self.err(decl, f"file-scope const {name} must be a number with a constant initialiser")
            scope[name] = ("const", const_e(cast(init.const, init.t, t), t))
        # file-scope __constant__ arrays
        for name, decl in self.file_globals.items():
            t = self.decl_type(decl, "constant")
            if not isinstance(t, T.ArrayType):
                t = T.ArrayType(t, "constant", (1,))
                scope[name] = ("const_scalar", len(self.constants), t)
            else:
                scope[name] = Arr("constant", len(self.constants), t)
            self.constants.append((name, t))
        fd = fdef.decl.type
        if self.scalar_type(fd.type, fdef) is not None:
            raise self.err(fdef, "a __global__ function must return void")
        self.scopes.append({})
        for p in (fd.args.params if fd.args else []):
            if isinstance(p, c_ast.Typename):
                continue            # f(void)
            t = self.decl_type(p, "global")
            if isinstance(t, T.ArrayType):
                self.scopes[-1][p.name] = Arr("global", len(self.params), t)
                self.params.append((p.name, t, len(self.params)))
            else:
                slot = self.new_slot()
                self.scopes[-1][p.name] = Var(slot, t)
                self.params.append((p.name, t, slot))
        self.func_stack.append(None)
        body = self.stmt(fdef.body)
        self.func_stack.pop()
        return body

    # ---- statements ----------------------------------------------------------------------------------------
    def stmt(self, node):
        method = getattr(self, "s_" + type(node).__name__, None)
        if method is None:
            raise self.err(node, f"unsupported statement: {type(node).__name__}")
        return method(node)

    def block(self, items):
        fns = [f for f in (self.stmt(s) for s in items) if f is not None]
        if not fns:
            return None
        if len(fns) == 1:
            return fns[0]

        def run(ctx, fns=tuple(fns)):
            for f in fns:
                f(ctx)
                if ctx.empty:
                    return
        return run

    def s_Compound(self, node):
        self.scopes.append({})
        try:
            return self.block(node.block_items or [])
        finally:
            self.scopes.pop()

    def s_EmptyStatement(self, node):
        return None

    def s_Pragma(self, node):
        return None

    def s_DeclList(self, node):
        return self.block(node.decls)

    def s_Decl(self, node):
        if isinstance(node.type, c_ast.FuncDecl):
            raise self.err(node, "function declarations inside a function are not supported")
        storage = node.storage or []
        if "extern" in storage and "static" not in storage:
            raise self.err(node, "extern declarations inside a kernel are not supported")
        if "static" in storage:          # __shared__ (the pre-pass spells it static)
            return self.shared_decl(node)
        if node.quals and "const" not in node.quals and "volatile" not in node.quals:
            raise self.err(node, f"unsupported qualifier {node.quals}")
        t = self.decl_type(node, "local")
        if isinstance(t, T.ArrayType) and t.shape[0] is None:       # pointer variable
            slot = self.new_slot()
            init = self.expr(node.init) if node.init is not None else None
            space = init.t.space if init is not None and isinstance(init.t, T.ArrayType) else "global"
            t = T.ArrayType(t.elem, space, init.t.shape if init is not None and isinstance(init.t, T.ArrayType)
                            else (None,))
            self.scopes[-1][node.name] = Arr("ptr", slot, t)
            if init is None:
                return None
            if not isinstance(init.t, T.ArrayType) or init.t.elem != t.elem:
                raise self.err(node, f"cannot initialise pointer {node.name} from {init.t}")
            f = init.fn

            def run(ctx, f=f, slot=slot):
                ref = f(ctx)
                ctx.decl_mask[slot] = ctx.mask
                store_ptr(ctx, slot, ref)
            return run
        if isinstance(t, T.ArrayType):                            # thread-local array
            if node.init is not None:
                raise self.err(node, "initialisers of local arrays are not supported")
            slot = self.new_slot()
            self.scopes[-1][node.name] = Arr("local", slot, t)
            n = t.elems
            self.local_bytes += n * t.elem.itemsize
            name = node.name

            def run(ctx, slot=slot, n=n, t=t, name=name):
                if ctx.vals[slot] is None:
                    ctx.vals[slot] = BatchArray(name, "local", np.zeros((ctx.nlanes, n), t.elem.dtype))
            return run
        if t is None:
            raise self.err(node, "void variable")
        slot = self.new_slot()
        var = Var(slot, t)
        if node.init is None:
            self.scopes[-1][node.name] = var
            zero = t.dtype.type(0)

            def run(ctx, slot=slot, zero=zero):
                ctx.decl_mask[slot] = ctx.mask
                if ctx.vals[slot] is None:
                    ctx.vals[slot] = zero
            return run
        if isinstance(node.init, c_ast.InitList):
            raise self.err(node, "initialiser lists are not supported")
        init = self.rvalue(node.init)
        self.scopes[-1][node.name] = var
        return self.assign_var_fn(var, init, node, declare=True)

    def shared_decl(self, node):
        t = self.decl_type(node, "shared")
        if not isinstance(t, T.ArrayType):
            t = T.ArrayType(t, "shared", (1,))
            kind = "shared_scalar"
        else:
            kind = "shared"
        dynamic = t.shape[0] is None
        if dynamic and node.name not in self.dynamic_shared:
            raise self.err(node, f"__shared__ array {node.name} needs a size (or `extern __shared__` for the "
                                 "dynamic allocation)")
        if node.init is not None:
            raise self.err(node, "__shared__ variables cannot have initialisers")
        # one allocation per declaration, however many times a __device__ function holding it is inlined
        idx = self._shared_index.get(id(node))
        if idx is None:
            idx = len(self.shared)
            self._shared_index[id(node)] = idx
            self.shared.append((node.name, t, dynamic))
            if kind == "shared_scalar":
                self.shared_scalars.add(node.name)
        self.scopes[-1][node.name] = Arr("shared", idx, t) if kind == "shared" else ("shared_scalar", idx, t)
        return None

    def s_Assignment(self, node):
        f = self.assignment(node).fn
        return f

    def s_UnaryOp(self, node):
        if node.op in ("++", "--", "p++", "p--"):
            return self.incdec(node).fn
        raise self.err(node, f"expression statement has no effect: unary {node.op}")

    def s_FuncCall(self, node):
        return self.call(node, statement=True).fn

    def s_Cast(self, node):
        if isinstance(node.expr, c_ast.ID) or isinstance(node.expr, c_ast.Constant):
            return None                     # (void)x;
        return self.expr(node.expr).fn

    def s_ExprList(self, node):
        return self.block(node.exprs)

    def s_ID(self, node):
        return None

    def s_Constant(self, node):
        return None

    def s_BinaryOp(self, node):
        e = self.expr(node)
        return e.fn

    def s_TernaryOp(self, node):
        return self.expr(node).fn

    def s_If(self, node):
        cond = self.cond(node.cond)
        then = self.stmt(node.iftrue) if node.iftrue is not None else None
        other = self.stmt(node.iffalse) if node.iffalse is not None else None
        site = self.site(node, "branch", "if")
        cf = cond.fn

        def run(ctx):
            c = cf(ctx)
            ctx.count_op(site)
            if not is_lanes(c):
                if c:
                    if then is not None:
                        then(ctx)
                elif other is not None:
                    other(ctx)
                return
            m0 = ctx.mask
            if m0 is None:
                if c.all():
                    if then is not None:
                        then(ctx)
                    return
                if not c.any():
                    if other is not None:
                        other(ctx)
                    return
                tm, em = c, ~c
            else:
                tm = m0 & c
                em = m0 & ~c
            t_any, e_any = bool(tm.any()), bool(em.any())
            if t_any and e_any:
                count_divergence(ctx, site, tm, em)
            mt = me = EMPTY
            if t_any:
                set_mask(ctx, tm)
                if then is not None:
                    then(ctx)
                mt = EMPTY if ctx.empty else ctx.mask
            if e_any:
                set_mask(ctx, em)
                if other is not None:
                    other(ctx)
                me = EMPTY if ctx.empty else ctx.mask
            if mt is tm and me is em:
                set_mask(ctx, m0)
                return
            u = union(mt, me)
            if u is EMPTY:
                set_mask(ctx, EMPTY, True)
            else:
                set_mask(ctx, u)
        return run

    def s_For(self, node):
        self.scopes.append({})
        try:
            init = self.stmt(node.init) if node.init is not None else None
            unrolled = self.static_trip_count(node) is not None
            # nvcc fully unrolls a loop with a small compile-time trip count: its compare, branch and counter
            # update are not executed, so they are not counted (docs/semantics.md, "warp_instructions").
            self.uncounted += unrolled
            try:
                cond = self.cond(node.cond) if node.cond is not None else None
            finally:
                self.uncounted -= unrolled
            body = self.loop_body(node)
            self.uncounted += unrolled
            try:
                step = self.expr(node.next).fn if node.next is not None else None
            finally:
                self.uncounted -= unrolled
        finally:
            self.scopes.pop()
        return self.loop(node, init, cond, body, step, test_first=True, count_branch=not unrolled)

    def static_trip_count(self, node):
        """The trip count of `for (i = C1; i < C2; i += C3)` with constant bounds and an `i` the body never
        assigns, when it is at most UNROLL_LIMIT (what nvcc unrolls completely); else None."""
        var, start = None, None
        init = node.init
        if isinstance(init, c_ast.DeclList) and len(init.decls) == 1 and init.decls[0].init is not None:
            var, start_node = init.decls[0].name, init.decls[0].init
        elif isinstance(init, c_ast.Assignment) and init.op == "=" and isinstance(init.lvalue, c_ast.ID):
            var, start_node = init.lvalue.name, init.rvalue
        else:
            return None
        cond, nxt = node.cond, node.next
        if not (isinstance(cond, c_ast.BinaryOp) and cond.op in ("<", "<=", ">", ">=", "!=")):
            return None
        if isinstance(cond.left, c_ast.ID) and cond.left.name == var:
            op, bound_node = cond.op, cond.right
        elif isinstance(cond.right, c_ast.ID) and cond.right.name == var:
            op, bound_node = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}[cond.op], cond.left
        else:
            return None
        if isinstance(nxt, c_ast.UnaryOp) and nxt.op in ("++", "p++", "--", "p--") and \
                isinstance(nxt.expr, c_ast.ID) and nxt.expr.name == var:
            step = 1 if "++" in nxt.op else -1
        elif isinstance(nxt, c_ast.Assignment) and nxt.op in ("+=", "-=") and \
                isinstance(nxt.lvalue, c_ast.ID) and nxt.lvalue.name == var:
            step = self._const_value(nxt.rvalue)
            if step is None:
                return None
            step = step if nxt.op == "+=" else -step
        else:
            return None
        start, bound = self._const_value(start_node), self._const_value(bound_node)
        if start is None or bound is None or step == 0 or _assigns(node.stmt, var):
            return None
        tests = {"<": lambda v: v < bound, "<=": lambda v: v <= bound, ">": lambda v: v > bound,
                 ">=": lambda v: v >= bound, "!=": lambda v: v != bound}[op]
        v, trips = start, 0
        while tests(v):
            trips += 1
            v += step
            if trips > UNROLL_LIMIT:
                return None
        return trips

    def _const_value(self, node):
        try:
            e = self.expr(node)
        except FrontendError:
            return None
        if e.const is None or not isinstance(e.t, T.ScalarType) or not e.t.is_int:
            return None
        return int(e.const)

    def s_While(self, node):
        cond = self.cond(node.cond)
        body = self.loop_body(node)
        return self.loop(node, None, cond, body, None, test_first=True)

    def s_DoWhile(self, node):
        cond = self.cond(node.cond)
        body = self.loop_body(node)
        return self.loop(node, None, cond, body, None, test_first=False)

    def loop_body(self, node):
        """Lower a loop's body one loop deeper (so break/continue inside it are accepted); None when empty."""
        self.loop_depth += 1
        body = self.stmt(node.stmt) if node.stmt is not None else None
        self.loop_depth -= 1
        return body

    def loop(self, node, init, cond, body, step, test_first, count_branch=True):
        site = self.site(node, "branch", "loop")
        loc = self.loc(node)
        cf = cond.fn if cond is not None else None

        def run(ctx):
            if init is not None:
                init(ctx)
                if ctx.empty:
                    return
            exited = EMPTY
            rec = LoopRec()
            ctx.loops.append(rec)
            steps = 0
            limit = ctx.max_steps
            first = True
            while True:
                if cf is not None and (test_first or not first):
                    c = cf(ctx)
                    if count_branch:
                        ctx.count_op(site)
                    if not is_lanes(c):
                        if not c:
                            exited = union(exited, ctx.mask)
                            break
                    else:
                        m = ctx.mask
                        if m is None and c.all():
                            pass
                        else:
                            stay = c if m is None else (m & c)
                            leave = ~c if m is None else (m & ~c)
                            s_any = bool(stay.any())
                            if not s_any:
                                exited = union(exited, m)
                                break
                            if leave.any():
                                count_divergence(ctx, site, stay, leave)
                                exited = union(exited, leave)
                                set_mask(ctx, stay)
                first = False
                if body is not None:
                    body(ctx)
                if rec.cont is not EMPTY:
                    cur = EMPTY if ctx.empty else ctx.mask
                    set_mask(ctx, union(cur, rec.cont))
                    rec.cont = EMPTY
                if ctx.empty:
                    break
                if step is not None:
                    step(ctx)
                steps += 1
                if steps > limit:
                    thread, blk, _ = ctx.lane_where(np.ones((1, 1, 1, 1), bool) if ctx.mask is None else ctx.mask)
                    raise SimulationError(
                        f"{loc}: runaway loop: more than {limit} iterations of the loop at line {loc.line} "
                        f"(e.g. thread ({thread[0]},{thread[1]},{thread[2]}) of block "
                        f"({blk[0]},{blk[1]},{blk[2]}) is still looping); raise max_steps if this is intended",
                        location=loc, thread=thread, block=blk)
            ctx.loops.pop()
            final = union(exited, rec.brk)
            if final is EMPTY:
                set_mask(ctx, EMPTY, True)
            else:
                set_mask(ctx, final)
        return run

    def s_Break(self, node):
        if self.loop_depth == 0:
            raise self.err(node, "break outside a loop (switch is not supported)")

        def run(ctx):
            rec = ctx.loops[-1]
            rec.brk = union(rec.brk, ctx.mask)
            set_mask(ctx, EMPTY, True)
        return run

    def s_Continue(self, node):
        if self.loop_depth == 0:
            raise self.err(node, "continue outside a loop")

        def run(ctx):
            rec = ctx.loops[-1]
            rec.cont = union(rec.cont, ctx.mask)
            set_mask(ctx, EMPTY, True)
        return run

    def s_Return(self, node):
        frame = self.func_stack[-1]
        if frame is None:                     # kernel: the active threads exit
            if node.expr is not None:
                raise self.err(node, "a __global__ function returns void")

            def run(ctx):
                m = ctx.mask
                if m is None:
                    ctx.live = EMPTY
                else:
                    ctx.live = ~m if ctx.live is None else (ctx.live & ~m)
                set_mask(ctx, EMPTY, True)
            return run
        ret_var, ret_t = frame
        if node.expr is None:
            def run(ctx):
                set_mask(ctx, EMPTY, True)
            return run
        if ret_t is None:
            raise self.err(node, "return with a value in a void function")
        val = self.rvalue(node.expr)
        assign = self.assign_var_fn(ret_var, val, node)

        def run(ctx):
            assign(ctx)
            set_mask(ctx, EMPTY, True)
        return run

    def s_Switch(self, node):
        raise self.err(node, "switch statements are not supported (use if/else)")

    def s_Goto(self, node):
        raise self.err(node, "goto is not supported")

    def s_Label(self, node):
        raise self.err(node, "labels are not supported")

    # ---- expressions ---------------------------------------------------------------------------------------
    def expr(self, node) -> E:
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            raise self.err(node, f"unsupported expression: {type(node).__name__}")
        e = method(node)
        e.node = node
        return e

    def rvalue(self, node) -> E:
        e = self.expr(node)
        if e.t is None:
            raise self.err(node, "a void value is used")
        return e

    def scalar(self, node) -> E:
        e = self.expr(node)
        if not isinstance(e.t, T.ScalarType):
            raise self.err(node, f"expected a number, got {e.t or 'void'}")
        return e

    def cond(self, node) -> E:
        e = self.scalar(node)
        if e.t is T.BOOL:
            return e
        f = e.fn
        return E(lambda ctx: f(ctx) != 0, T.BOOL, None if e.const is None else np.bool_(e.const != 0))

    def e_Constant(self, node):
        v = node.value
        if node.type in ("int", "unsigned int", "long int", "unsigned long int", "long long int",
                         "unsigned long long int", "long", "unsigned long", "long long", "unsigned long long"):
            s = v.rstrip("uUlL")
            suffix = v[len(s):].lower()
            if s.lower().startswith("0x"):
                n = int(s, 16)
            elif len(s) > 1 and s.startswith("0") and s.isdigit():
                n = int(s, 8)
            else:
                n = int(s)
            if "l" in suffix:
                t = T.ULONG if "u" in suffix else T.LONG
            elif "u" in suffix:
                t = T.UINT if n < 2 ** 32 else T.ULONG
            else:
                t = T.INT if n < 2 ** 31 else (T.UINT if s.lower().startswith("0x") and n < 2 ** 32 else T.LONG)
            return const_e(n, t)
        if node.type in ("float", "double", "long double"):
            s = v.rstrip("fFlL")
            if v[-1] in "fF":
                return const_e(float(s), T.FLOAT)
            return const_e(float(s), T.DOUBLE)
        if node.type == "char":
            import ast as _ast
            return const_e(ord(_ast.literal_eval(v)), T.CHAR)
        raise self.err(node, f"unsupported literal {v}")

    def e_ID(self, node):
        sym = self.lookup(node.name, node)
        if isinstance(sym, Var):
            slot = sym.slot
            return E(lambda ctx: ctx.vals[slot], sym.t)
        if isinstance(sym, tuple) and sym[0] == "const":
            return sym[1]
        if isinstance(sym, tuple) and sym[0] in ("shared_scalar", "const_scalar"):
            return self.elem_load(node, self.scalar_ref(sym), sym[2].elem, sym[2].space, node.name)
        if isinstance(sym, Arr):
            return E(self.ref_fn(sym), sym.t)
        raise self.err(node, f"'{node.name}' cannot be used here")

    def scalar_ref(self, sym):
        kind, idx, _t = sym
        zero = np.int32(0)
        if kind == "shared_scalar":
            return lambda ctx: (ctx.shared[idx], zero)
        return lambda ctx: (ctx.consts[idx], zero)

    def ref_fn(self, sym: Arr):
        i = sym.index
        zero = np.int32(0)
        if sym.kind == "global":
            return lambda ctx: (ctx.globals[i], zero)
        if sym.kind == "shared":
            return lambda ctx: (ctx.shared[i], zero)
        if sym.kind == "constant":
            return lambda ctx: (ctx.consts[i], zero)
        if sym.kind == "local":
            return lambda ctx: (ctx.vals[i], zero)
        return lambda ctx: ctx.vals[i]            # pointer variable

    def e_StructRef(self, node):
        if node.type != "." or not isinstance(node.name, c_ast.ID) or not isinstance(node.field, c_ast.ID):
            raise self.err(node, "structs are not supported")
        base, fld = node.name.name, node.field.name
        if base not in _BUILTIN_VECS:
            self.lookup(base, node.name)         # unknown identifier first
            raise self.err(node, f"unsupported member access {base}.{fld} (structs are not supported)")
        if fld not in ("x", "y", "z"):
            raise self.err(node, f"unsupported member access {base}.{fld}")
        attr = _BUILTIN_VECS[base]
        k = "xyz".index(fld)
        t = T.UINT  # CUDA's built-in index vectors are unsigned int (uint3 / dim3)
        if attr == "tid":
            return E(lambda ctx: ctx.tid_u[k], t)
        if attr == "bid":
            return E(lambda ctx: ctx.bid_u[k], t)
        if attr == "bdim":
            return E(lambda ctx: ctx.bdim_u[k], t)
        return E(lambda ctx: ctx.gdim_u[k], t)

    def address(self, node):
        """Compile an lvalue that lives in memory: returns (ref_fn(ctx)->(mem, offset), ArrayType of the element
        position, name)."""
        if isinstance(node, c_ast.ArrayRef):
            base = self.expr(node.name)
            if not isinstance(base.t, T.ArrayType):
                raise self.err(node, f"subscripted value is not an array or pointer ({base.t})")
            idx = self.scalar(node.subscript)
            if not idx.t.is_int:
                raise self.err(node.subscript, "array subscript is not an integer")
            at = base.t
            stride = at.row_elems
            bf, xf = base.fn, idx.fn
            name = _name_of(node.name)
            # Address arithmetic implied by a subscript is not counted as integer ops (the hardware folds much
            # of it into the load's addressing); explicit index expressions are.
            if stride == 1:
                def ref(ctx):
                    mem, off = bf(ctx)
                    return mem, off + xf(ctx)
            else:
                s = np.int32(stride)

                def ref(ctx):
                    mem, off = bf(ctx)
                    return mem, off + xf(ctx) * s
            return ref, at.sub() if len(at.shape) > 1 else T.ArrayType(at.elem, at.space, ()), name
        if isinstance(node, c_ast.UnaryOp) and node.op == "*":
            base = self.expr(node.expr)
            if not isinstance(base.t, T.ArrayType):
                raise self.err(node, "dereferenced value is not a pointer")
            return base.fn, T.ArrayType(base.t.elem, base.t.space, base.t.shape[1:]), _name_of(node.expr)
        raise self.err(node, f"unsupported lvalue {type(node).__name__}")

    def e_ArrayRef(self, node):
        ref, at, name = self.address(node)
        if at.shape:
            return E(ref, at)                 # a row of a multi-dimensional array
        return self.elem_load(node, ref, at.elem, at.space, name)

    def elem_load(self, node, ref, elem, space, name):
        site = self.site(node, f"{space} load", name)
        if space == "global":
            load = M.global_load
        elif space == "shared":
            load = M.shared_load
        elif space == "constant":
            load = M.constant_load
        else:
            load = M.local_load

        def fn(ctx):
            mem, off = ref(ctx)
            return load(ctx, site, mem, off)
        return E(fn, elem)

    def elem_store_fn(self, node, ref, elem, space, name):
        site = self.site(node, f"{space} store", name)
        if space == "global":
            store = M.global_store
        elif space == "shared":
            store = M.shared_store
        elif space == "constant":
            raise self.err(node, f"__constant__ {name} is read-only in a kernel")
        else:
            store = M.local_store
        return site, store

    def e_UnaryOp(self, node):
        op = node.op
        if op in ("++", "--", "p++", "p--"):
            return self.incdec(node)
        if op == "*":
            ref, at, name = self.address(node)
            if at.shape:
                return E(ref, at)
            return self.elem_load(node, ref, at.elem, at.space, name)
        if op == "&":
            target = node.expr
            if isinstance(target, (c_ast.ArrayRef, c_ast.UnaryOp)):
                ref, at, name = self.address(target)
                return E(ref, T.ArrayType(at.elem, at.space, (None,) + tuple(at.shape)))
            if isinstance(target, c_ast.ID):
                sym = self.lookup(target.name, target)
                if isinstance(sym, tuple) and sym[0] == "shared_scalar":
                    return E(self.scalar_ref(sym), T.ArrayType(sym[2].elem, "shared", (None,)))
            raise self.err(node, "address-of is only supported on array elements and __shared__ variables")
        if op == "sizeof":
            if isinstance(node.expr, c_ast.Typename):
                t = self.scalar_type(node.expr.type, node)
                return const_e(t.itemsize, T.ULONG)
            e = self.expr(node.expr)
            if isinstance(e.t, T.ArrayType):
                n = e.t.elem.itemsize
                for d in e.t.shape:
                    n *= d if d is not None else 1
                return const_e(n, T.ULONG)
            return const_e(e.t.itemsize, T.ULONG)
        e = self.scalar(node.expr)
        if op == "!":
            f = self.cond(node.expr).fn
            c = None if e.const is None else np.bool_(not e.const)
            return E(lambda ctx: np.logical_not(f(ctx)), T.BOOL, c)
        if op == "+":
            return self.convert(e, T.promote(e.t))
        if op in ("-", "~"):
            if op == "~" and not e.t.is_int:
                raise self.err(node, "~ on a floating-point value")
            t = T.promote(e.t)
            e2 = self.convert(e, t)
            f = e2.fn
            npop = np.negative if op == "-" else np.invert
            if e2.const is not None:
                return const_e(npop(e2.const), t)
            if t.is_float or self.uncounted:
                # a float negation is an operand modifier of the instruction that consumes it: not counted
                return E(lambda ctx: npop(f(ctx)), t)
            site = self.site(node, "int op", op)

            def fn(ctx):
                ctx.count_op(site)
                return npop(f(ctx))
            return E(fn, t)
        raise self.err(node, f"unsupported unary operator {op}")

    def convert(self, e: E, t):
        if e.t is t or (isinstance(e.t, T.ScalarType) and e.t.dtype == t.dtype and t is not T.BOOL
                        and e.t is not T.BOOL):
            return E(e.fn, t, e.const, e.node)
        if isinstance(e.t, T.ArrayType) or isinstance(t, T.ArrayType):
            raise FrontendError(f"cannot convert {e.t} to {t}")
        src = e.t
        f = e.fn
        if e.const is not None:
            return const_e(cast(e.const, src, t), t)
        return E(lambda ctx: cast(f(ctx), src, t), t)

    def e_Cast(self, node):
        t = self.scalar_type(node.to_type.type, node) if not isinstance(node.to_type.type, c_ast.PtrDecl) else None
        if t is None:
            raise self.err(node, "pointer casts are not supported")
        e = self.scalar(node.expr)
        return self.convert(e, t)

    def e_TernaryOp(self, node):
        c = self.cond(node.cond)
        a = self.expr(node.iftrue)
        b = self.expr(node.iffalse)
        if isinstance(a.t, T.ArrayType) or isinstance(b.t, T.ArrayType):
            raise self.err(node, "conditional pointers are not supported")
        t = T.common_type(a.t, b.t) if not (a.t is T.BOOL and b.t is T.BOOL) else T.BOOL
        a, b = self.convert(a, t), self.convert(b, t)
        cf, af, bf = c.fn, a.fn, b.fn

        def fn(ctx):
            cv = cf(ctx)
            if not is_lanes(cv):
                return af(ctx) if cv else bf(ctx)
            m0 = ctx.mask
            if m0 is None:
                if cv.all():
                    return af(ctx)
                if not cv.any():
                    return bf(ctx)
            tm = cv if m0 is None else (m0 & cv)
            em = ~cv if m0 is None else (m0 & ~cv)
            av = bv = t.dtype.type(0)
            if tm.any():
                set_mask(ctx, tm)
                av = af(ctx)
            if em.any():
                set_mask(ctx, em)
                bv = bf(ctx)
            set_mask(ctx, m0)
            return np.where(cv, av, bv).astype(t.dtype, copy=False)
        return E(fn, t)

    def e_BinaryOp(self, node):
        op = node.op
        if op in ("&&", "||"):
            return self.logical(node)
        a = self.expr(node.left)
        b = self.expr(node.right)
        # pointer arithmetic
        if isinstance(a.t, T.ArrayType) or isinstance(b.t, T.ArrayType):
            return self.pointer_arith(node, op, a, b)
        return self.arith(node, op, a, b)

    def pointer_arith(self, node, op, a, b):
        if op not in ("+", "-") or isinstance(b.t, T.ArrayType) and (op == "-" or isinstance(a.t, T.ArrayType)):
            raise self.err(node, f"unsupported pointer arithmetic '{op}'")
        if isinstance(b.t, T.ArrayType):
            a, b = b, a
        if not b.t.is_int:
            raise self.err(node, "pointer offset is not an integer")
        stride = np.int32(a.t.row_elems)
        af, bf = a.fn, b.fn
        neg = op == "-"
        site = self.site(node, "int op", "ptr")

        def fn(ctx):
            mem, off = af(ctx)
            d = bf(ctx) * stride
            ctx.count_op(site)
            return mem, (off - d) if neg else (off + d)
        return E(fn, a.t)

    def logical(self, node):
        a = self.cond(node.left)
        b = self.cond(node.right)
        af, bf = a.fn, b.fn
        is_and = node.op == "&&"

        def fn(ctx):
            av = af(ctx)
            if not is_lanes(av):
                if is_and:
                    return bf(ctx) if av else np.bool_(False)
                return np.bool_(True) if av else bf(ctx)
            m0 = ctx.mask
            # the right operand runs only for lanes that need it (it may load, e.g. i < n && a[i] > 0)
            need = av if is_and else ~av
            sub = need if m0 is None else (m0 & need)
            if m0 is None and need.all():
                bv = bf(ctx)
            elif not sub.any():
                return av
            else:
                set_mask(ctx, sub)
                bv = bf(ctx)
                set_mask(ctx, m0)
            return (av & bv) if is_and else (av | bv)
        c = None
        if a.const is not None and b.const is not None:
            c = np.bool_((a.const and b.const) if is_and else (a.const or b.const))
        return E(fn, T.BOOL, c)

    def arith(self, node, op, a, b, fused=False):
        if op in ("<<", ">>"):
            if not (a.t.is_int and b.t.is_int):
                raise self.err(node, "shift of a non-integer")
            t = T.promote(a.t)
            a = self.convert(a, t)
            b = self.convert(b, T.promote(b.t))
            return self.make_op(node, op, a, b, t, t)
        if op in ("<", ">", "<=", ">=", "==", "!="):
            t = T.common_type(a.t, b.t)
            return self.make_op(node, op, self.convert(a, t), self.convert(b, t), t, T.BOOL)
        if op in ("&", "|", "^"):
            if not (a.t.is_int and b.t.is_int):
                raise self.err(node, f"bitwise '{op}' on a non-integer")
            if a.t is T.BOOL and b.t is T.BOOL:
                return self.make_op(node, op, a, b, T.BOOL, T.BOOL)
        if op not in ("+", "-", "*", "/", "%", "&", "|", "^"):
            raise self.err(node, f"unsupported operator {op}")
        t = T.common_type(a.t, b.t)
        if op == "%" and t.is_float:
            raise self.err(node, "% on floating-point values (use fmodf)")
        a, b = self.convert(a, t), self.convert(b, t)
        # Fused multiply-add: a float '+'/'-' whose operand is a float '*' counts one fma (2 flops), as nvcc
        # contracts it to FFMA by default (-fmad=true); the numerics stay two float roundings.
        if t.is_float and op in ("+", "-") and not fused:
            for side in (a, b):
                if _is_mul(side.node) and side.t is t:
                    return self.make_op(node, op, a, b, t, t, fma_with=side)
        return self.make_op(node, op, a, b, t, t)

    def make_op(self, node, op, a, b, t, rt, fma_with=None):
        if t.is_float:
            if op in ("+", "-"):
                kind = "fp fma" if fma_with is not None else "fp add"
            elif op == "*":
                kind = "fp mul"
            elif op == "/":
                kind = "fp div"
            else:
                kind = "fp cmp"
        else:
            kind = "int op"
        if t is T.DOUBLE and kind.startswith("fp"):
            kind = kind + " f64"
        site = self.site(node, kind, op)
        flops = 0
        if kind.startswith(("fp add", "fp mul", "fp div")):
            flops = 1
        elif kind.startswith("fp fma"):
            flops = 2
        if fma_with is not None:
            # the multiply is part of the fma: recompile it without its own count
            mnode = fma_with.node
            ml = self.convert(self.expr(mnode.left), t)
            mr = self.convert(self.expr(mnode.right), t)
            mlf, mrf = ml.fn, mr.fn
            mul = E(lambda ctx: mlf(ctx) * mrf(ctx), t, None, mnode)
            prod_first = fma_with is a
            if prod_first:
                a = mul
            else:
                b = mul
        af, bf = a.fn, b.fn
        impl = _binop_impl(op, t, self.loc(node))
        if self.uncounted:
            flops, fma_with = 0, None
        if a.const is not None and b.const is not None and op not in ("/", "%") or \
                a.const is not None and b.const is not None and b.const != 0:
            with np.errstate(all="ignore"):
                return const_e(impl(a.const, b.const), rt)
        if op in ("/", "%") and t.is_int:     # checks for a zero divisor among the active lanes
            counted = not self.uncounted
            where = self.sites[site]

            def fn(ctx):
                x = af(ctx)
                y = bf(ctx)
                if counted:
                    ctx.count_op(site)
                try:
                    return impl(x, y)
                except ZeroDivisionError:
                    # only active lanes matter: an inactive lane may hold a zero divisor (if (d) q = n / d;)
                    active = np.ones((1, 1, 1, 1), bool) if ctx.mask is None else ctx.mask
                    bad = (y == 0) & active
                    if np.any(bad):
                        ctx.error("integer division by zero", where, bad)
                    return impl(x, np.where(y == 0, y.dtype.type(1), y))
        elif fma_with is not None:
            def fn(ctx):
                x = af(ctx)
                y = bf(ctx)
                ctx.count_op(site, flops)
                p, q = (x, y) if prod_first else (y, x)
                # the product is a fresh temporary: add into it when it already has the result's shape
                if is_lanes(p) and p.shape == np.broadcast_shapes(p.shape, np.shape(q)):
                    return impl(x, y, out=p)
                return impl(x, y)
        elif flops:
            def fn(ctx):
                x = af(ctx)
                y = bf(ctx)
                ctx.count_op(site, flops)
                return impl(x, y)
        elif self.uncounted:
            def fn(ctx):
                return impl(af(ctx), bf(ctx))
        else:
            def fn(ctx):
                x = af(ctx)
                y = bf(ctx)
                ctx.count_op(site)
                return impl(x, y)
        return E(fn, rt)

    # ---- assignment ---------------------------------------------------------------------------------------
    def lvalue(self, node):
        """('var', Var) or ('mem', ref_fn, elem, space, name, load_site_node)."""
        if isinstance(node, c_ast.ID):
            sym = self.lookup(node.name, node)
            if isinstance(sym, Var):
                return ("var", sym)
            if isinstance(sym, tuple) and sym[0] == "shared_scalar":
                return ("mem", self.scalar_ref(sym), sym[2].elem, "shared", node.name)
            if isinstance(sym, Arr) and sym.kind == "ptr":
                return ("ptr", sym)
            raise self.err(node, f"cannot assign to '{node.name}'")
        if isinstance(node, (c_ast.ArrayRef, c_ast.UnaryOp)):
            ref, at, name = self.address(node)
            if at.shape:
                raise self.err(node, "cannot assign to an array")
            return ("mem", ref, at.elem, at.space, name)
        if isinstance(node, c_ast.StructRef):
            self.e_StructRef(node)
            raise self.err(node, "cannot assign to a built-in index variable")
        raise self.err(node, f"unsupported assignment target {type(node).__name__}")

    def assign_var_fn(self, var: Var, e: E, node, declare=False):
        e = self.convert(e, var.t)
        f, slot = e.fn, var.slot
        if declare:
            def run(ctx):
                v = f(ctx)
                ctx.decl_mask[slot] = ctx.mask
                ctx.vals[slot] = v
        else:
            def run(ctx):
                store_var(ctx, slot, f(ctx))
        return run

    def assignment(self, node):
        lv = self.lvalue(node.lvalue)
        op = node.op
        if lv[0] == "ptr":
            sym = lv[1]
            if op not in ("=", "+=", "-="):
                raise self.err(node, f"unsupported pointer assignment {op}")
            if op == "=":
                val = self.expr(node.rvalue)
                if not isinstance(val.t, T.ArrayType) or val.t.elem != sym.t.elem:
                    raise self.err(node, f"cannot assign {val.t} to the pointer {sym.t}")
                if val.t.space != sym.t.space or tuple(val.t.shape[1:]) != tuple(sym.t.shape[1:]):
                    raise self.err(node, f"pointer {node.lvalue.name} points into {sym.t.space} memory; assigning a "
                                         f"{val.t.space} address is not supported (declare a pointer for each "
                                         "memory space, with its initialiser)")
            else:
                val = self.pointer_arith(node, op[0], E(self.ref_fn(sym), sym.t), self.scalar(node.rvalue))
            slot = sym.index
            vf = val.fn

            def run(ctx):
                ref = vf(ctx)
                store_ptr(ctx, slot, ref)
                return ref
            return E(run, sym.t)
        rhs = self.expr(node.rvalue)
        if not isinstance(rhs.t, T.ScalarType):
            raise self.err(node, f"cannot assign {rhs.t} to a number")
        if lv[0] == "var":
            var = lv[1]
            if op == "=":
                val = self.convert(rhs, var.t)
            else:
                cur = E(lambda ctx, s=var.slot: ctx.vals[s], var.t, None, node.lvalue)
                val = self.convert(self.arith(node, op[:-1], cur, rhs), var.t)
            vf, slot = val.fn, var.slot

            def run(ctx):
                v = vf(ctx)
                store_var(ctx, slot, v)
                return v
            return E(run, var.t)
        _, ref, elem, space, name = lv
        site, store = self.elem_store_fn(node.lvalue, ref, elem, space, name)
        if op == "=":
            val = self.convert(rhs, elem)
            vf = val.fn

            def run(ctx):
                mem, off = ref(ctx)
                v = vf(ctx)
                store(ctx, site, mem, off, v)
                return v
            return E(run, elem)
        # compound assignment to memory: load, operate, store (address evaluated once)
        load_site = self.site(node.lvalue, f"{space} load", name)
        load = {"global": M.global_load, "shared": M.shared_load, "local": M.local_load}[space]
        holder = {}
        cur = E(lambda ctx: holder["v"], elem, None, node.lvalue)
        val = self.convert(self.arith(node, op[:-1], cur, rhs), elem)
        vf = val.fn

        def run(ctx):
            mem, off = ref(ctx)
            holder["v"] = load(ctx, load_site, mem, off)
            v = vf(ctx)
            store(ctx, site, mem, off, v)
            return v
        return E(run, elem)

    def e_Assignment(self, node):
        return self.assignment(node)

    def incdec(self, node):
        op = "+" if "++" in node.op else "-"
        post = node.op.startswith("p")
        lv = self.lvalue(node.expr)
        if lv[0] == "ptr":
            sym = lv[1]
            one = const_e(1, T.INT)
            val = self.pointer_arith(node, op, E(self.ref_fn(sym), sym.t), one)
            slot, vf = sym.index, val.fn

            def run(ctx):
                old = ctx.vals[slot]
                ref = vf(ctx)
                store_ptr(ctx, slot, ref)
                return old if post else ref
            return E(run, sym.t)
        one = const_e(1, T.INT)
        if lv[0] == "var":
            var = lv[1]
            slot = var.slot
            cur = E(lambda ctx: ctx.vals[slot], var.t, None, node.expr)
            val = self.convert(self.arith(node, op, cur, one), var.t)
            vf = val.fn

            def run(ctx):
                old = ctx.vals[slot]
                v = vf(ctx)
                store_var(ctx, slot, v)
                return old if post else v
            return E(run, var.t)
        _, ref, elem, space, name = lv
        site, store = self.elem_store_fn(node.expr, ref, elem, space, name)
        load_site = self.site(node.expr, f"{space} load", name)
        load = {"global": M.global_load, "shared": M.shared_load, "local": M.local_load}[space]
        holder = {}
        cur = E(lambda ctx: holder["v"], elem, None, node.expr)
        val = self.convert(self.arith(node, op, cur, one), elem)
        vf = val.fn

        def run(ctx):
            mem, off = ref(ctx)
            old = load(ctx, load_site, mem, off)
            holder["v"] = old
            v = vf(ctx)
            store(ctx, site, mem, off, v)
            return old if post else v
        return E(run, elem)

    # ---- calls ---------------------------------------------------------------------------------------------
    def call(self, node, statement=False):
        if not isinstance(node.name, c_ast.ID):
            raise self.err(node, "calls through pointers are not supported")
        name = node.name.name
        if name in ("printf", "assert", "malloc", "free"):
            raise self.err(node, f"{name} is not supported in simulated kernels")
        args = node.args.exprs if node.args is not None else []
        if name == "__syncthreads":
            if args:
                raise self.err(node, "__syncthreads takes no arguments")
            return self.barrier(node)
        if name in _ATOMICS:
            return self.atomic_call(node, name, args)
        if name in ("__syncwarp", "__threadfence", "__threadfence_block", "__threadfence_system"):
            # lockstep execution already orders every lane's memory operations: nothing to do but count
            site = self.site(node, "sync", name)
            for a in args:
                self.expr(a)

            def run(ctx):
                ctx.count_op(site)
            return E(run, None)
        if name in ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"):
            if len(args) != 1:
                raise self.err(node, f"{name} takes 1 argument")
            target = self.expr(args[0])
            if not isinstance(target.t, T.ArrayType):
                raise self.err(node, f"the argument of {name} must be an address (&a[i] or a + i)")
            return self.elem_load(node, target.fn, target.t.elem, target.t.space, _name_of(args[0]))
        if name in _WARP_FUNCS:
            return self.warp_call(node, name, args)
        if name in self.funcs:
            return self.inline_call(node, name, args)
        return self.math_call(node, name, args)

    def warp_call(self, node, name, args):
        kind, nargs = _WARP_FUNCS[name]
        if len(args) not in nargs:
            raise self.err(node, f"{name} takes {' or '.join(map(str, nargs))} arguments")
        site = self.site(node, "warp op", name)
        es = [self.scalar(a) for a in args]
        if kind == "activemask":
            def fn(ctx):
                ctx.count_op(site)
                return warp_vote(ctx, "ballot", np.ones((1, 1, 1, 1), bool))
            return E(fn, T.UINT)
        if kind in ("ballot", "any", "all"):
            pf = self.cond(args[1]).fn

            def fn(ctx):
                p = pf(ctx)
                ctx.count_op(site)
                return warp_vote(ctx, kind, p)
            return E(fn, T.UINT if kind == "ballot" else T.INT)
        val = es[1]
        if not isinstance(val.t, T.ScalarType):
            raise self.err(node, f"{name} of a pointer is not supported")
        vf, af = val.fn, self.convert(es[2], T.INT).fn
        wf = self.convert(es[3], T.INT).fn if len(es) > 3 else (lambda ctx: np.int32(32))
        dt = val.t.dtype

        def fn(ctx):
            v = vf(ctx)
            a = af(ctx)
            w = int(wf(ctx))
            ctx.count_op(site)
            return warp_shuffle(ctx, kind, v, a, w).astype(dt, copy=False)
        return E(fn, val.t)

    def e_ExprList(self, node):
        es = [self.expr(e) for e in node.exprs]
        fns = [e.fn for e in es]

        def fn(ctx):
            v = None
            for f in fns:
                v = f(ctx)
            return v
        return E(fn, es[-1].t)

    def e_FuncCall(self, node):
        return self.call(node)

    def barrier(self, node):
        site = self.site(node, "barrier", "__syncthreads")
        loc = self.loc(node)

        def run(ctx):
            check_barrier(ctx, site, loc)
            return None
        return E(run, None)

    def atomic_call(self, node, name, args):
        op = _ATOMICS[name]
        nargs = 3 if op == "cas" else 2
        if len(args) != nargs:
            raise self.err(node, f"{name} takes {nargs} arguments")
        target = self.expr(args[0])
        if not isinstance(target.t, T.ArrayType):
            raise self.err(node, f"the first argument of {name} must be an address (&a[i])")
        elem = target.t.elem
        space = target.t.space
        if space not in ("global", "shared"):
            raise self.err(node, f"{name} on {space} memory is not supported")
        site = self.site(node, f"{space} atomic", name)
        val = self.convert(self.scalar(args[-1]), elem)
        cmpe = self.convert(self.scalar(args[1]), elem) if op == "cas" else None
        tf, vf = target.fn, val.fn
        cf = cmpe.fn if cmpe is not None else None

        def fn(ctx):
            mem, off = tf(ctx)
            v = vf(ctx)
            c = cf(ctx) if cf is not None else None
            return M.atomic(ctx, site, mem, off, op, v, c)
        return E(fn, elem)

    def math_call(self, node, name, args):
        vals = [self.scalar(a) for a in args]
        if name in ("min", "max", "umin", "umax", "llmin", "llmax"):
            if len(vals) != 2:
                raise self.err(node, f"{name} takes 2 arguments")
            t = T.common_type(vals[0].t, vals[1].t)
            a, b = (self.convert(v, t) for v in vals)
            f = np.minimum if "min" in name else np.maximum
            return self._call_fn(node, name, [a, b], t, f, "int op" if t.is_int else "fp minmax", 0)
        if name in ("abs", "llabs", "labs"):
            t = T.promote(vals[0].t)
            return self._call_fn(node, name, [self.convert(vals[0], t)], t, np.abs,
                                 "int op" if t.is_int else "fp misc", 0)
        if name in ("fmaf", "fma", "__fmaf_rn"):
            t = T.FLOAT if name != "fma" else T.common_type(T.common_type(vals[0].t, vals[1].t), vals[2].t)
            if t.is_int:
                t = T.DOUBLE
            a = [self.convert(v, t) for v in vals]
            return self._call_fn(node, name, a, t, lambda x, y, z: x * y + z, "fp fma", 2)
        if name in ("__fdividef", "fdividef", "__fdiv_rn"):
            a = [self.convert(v, T.FLOAT) for v in vals]
            return self._call_fn(node, name, a, T.FLOAT, np.divide, "fp div", 1)
        if name in ("__fmul_rn", "__fadd_rn", "__fsub_rn"):
            a = [self.convert(v, T.FLOAT) for v in vals]
            f = {"__fmul_rn": np.multiply, "__fadd_rn": np.add, "__fsub_rn": np.subtract}[name]
            return self._call_fn(node, name, a, T.FLOAT, f, "fp mul" if "mul" in name else "fp add", 1)
        for table, nargs, kind, flops in ((_SPECIAL_F, 1, "fp special", 1), (_SPECIAL_BIN_F, 2, "fp special", 1),
                                          (_MISC_F, 1, "fp misc", 0), (_MISC_BIN_F, 2, "fp misc", 0)):
            if name in table:
                if len(vals) != nargs:
                    raise self.err(node, f"{name} takes {nargs} argument(s)")
                if name.endswith("f") or name.startswith("__"):
                    t = T.FLOAT
                else:
                    t = vals[0].t if nargs == 1 else T.common_type(vals[0].t, vals[1].t)
                    if not t.is_float:
                        t = T.DOUBLE
                a = [self.convert(v, t) for v in vals]
                if t is T.DOUBLE:
                    kind = kind + " f64"
                return self._call_fn(node, name, a, t, table[name], kind, flops)
        if name in ("__int2float_rn", "__uint2float_rn", "__float2int_rz", "__float2int_rn", "__float2uint_rz",
                    "int2float"):
            to = T.FLOAT if "2float" in name else (T.UINT if "uint" in name[8:] else T.INT)
            v = vals[0]
            if name == "__float2int_rn":
                f = v.fn
                return E(lambda ctx: np.rint(f(ctx)).astype(np.int32), T.INT)
            return self.convert(v, to)
        if name in ("printf", "assert"):
            raise self.err(node, f"{name} is not supported in simulated kernels")
        raise self.err(node, f"unknown function '{name}' (not a __device__ function in this file or a supported "
                             "math function)")

    def _call_fn(self, node, name, args, t, f, kind, flops):
        site = self.site(node, kind, name)
        fns = [a.fn for a in args]
        dt = t.dtype
        if len(fns) == 1:
            a0 = fns[0]

            def fn(ctx):
                x = a0(ctx)
                ctx.count_op(site, flops)
                r = f(x)
                return r.astype(dt, copy=False) if is_lanes(r) else dt.type(r)
        else:
            def fn(ctx):
                xs = [g(ctx) for g in fns]
                ctx.count_op(site, flops)
                r = f(*xs)
                return r.astype(dt, copy=False) if is_lanes(r) else dt.type(r)
        return E(fn, t)

    def inline_call(self, node, name, args):
        if name in self.call_stack:
            raise self.err(node, f"recursive call of {name} is not supported")
        fdef = self.funcs[name]
        fd = fdef.decl.type
        params = [p for p in (fd.args.params if fd.args else []) if not isinstance(p, c_ast.Typename)]
        if len(params) != len(args):
            raise self.err(node, f"{name} takes {len(params)} arguments, {len(args)} given")
        ret_t = self.scalar_type(fd.type, fdef) if not isinstance(fd.type, c_ast.PtrDecl) else "ptr"
        if ret_t == "ptr":
            raise self.err(fdef, "device functions returning pointers are not supported")
        arg_es = [self.expr(a) for a in args]
        saved_scopes = self.scopes
        self.scopes = [saved_scopes[0], {}]
        binds = []
        for p, a in zip(params, arg_es):
            t = self.decl_type(p, "global")
            if isinstance(t, T.ArrayType):
                if not isinstance(a.t, T.ArrayType):
                    raise self.err(node, f"argument {p.name} of {name} must be a pointer")
                slot = self.new_slot()
                self.scopes[-1][p.name] = Arr("ptr", slot, a.t)
                binds.append(("ptr", slot, a.fn))
            else:
                var = Var(self.new_slot(), t)
                self.scopes[-1][p.name] = var
                binds.append(("var", var.slot, self.convert(a, t).fn))
        ret_var = Var(self.new_slot(), ret_t) if ret_t is not None else None
        self.call_stack.append(name)
        self.func_stack.append((ret_var, ret_t))
        saved_depth = self.loop_depth
        self.loop_depth = 0
        try:
            body = self.stmt(fdef.body)
        finally:
            self.loop_depth = saved_depth
            self.func_stack.pop()
            self.call_stack.pop()
            self.scopes = saved_scopes
        binds = tuple(binds)
        rslot = ret_var.slot if ret_var is not None else None

        def fn(ctx):
            vals = [(slot, f(ctx)) for _k, slot, f in binds]
            m0 = ctx.mask
            saved_loops = ctx.loops
            ctx.loops = []
            for slot, v in vals:
                ctx.vals[slot] = v
                ctx.decl_mask[slot] = m0
            if rslot is not None:
                ctx.vals[rslot] = ret_t.dtype.type(0)
                ctx.decl_mask[rslot] = m0
            if body is not None:
                body(ctx)
            ctx.loops = saved_loops
            set_mask(ctx, m0)
            return ctx.vals[rslot] if rslot is not None else None
        return E(fn, ret_t)


UNROLL_LIMIT = 64      # trip counts up to this are taken as fully unrolled by nvcc


def _assigns(node, var) -> bool:
    """Whether ``node`` (a statement) assigns or increments the variable ``var``."""
    found = False

    class V(c_ast.NodeVisitor):
        def visit_Assignment(self, n):
            nonlocal found
            if isinstance(n.lvalue, c_ast.ID) and n.lvalue.name == var:
                found = True
            self.generic_visit(n)

        def visit_UnaryOp(self, n):
            nonlocal found
            if n.op in ("++", "--", "p++", "p--", "&") and isinstance(n.expr, c_ast.ID) and n.expr.name == var:
                found = True
            self.generic_visit(n)

        def visit_Decl(self, n):
            nonlocal found
            if n.name == var:          # shadowed inside the body: be conservative
                found = True
            self.generic_visit(n)
    if node is not None:
        V().visit(node)
    return found


def _name_of(node) -> str:
    while isinstance(node, (c_ast.ArrayRef, c_ast.UnaryOp, c_ast.BinaryOp)):
        node = node.name if isinstance(node, c_ast.ArrayRef) else (
            node.expr if isinstance(node, c_ast.UnaryOp) else node.left)
    return node.name if isinstance(node, c_ast.ID) else "?"


def _is_mul(node) -> bool:
    return isinstance(node, c_ast.BinaryOp) and node.op == "*"


def _int_div(a, b):
    """C division: truncates toward zero."""
    if is_lanes(b) or is_lanes(a):
        if np.any(b == 0):
            raise ZeroDivisionError
        if (np.min(a) >= 0 if is_lanes(a) else a >= 0) and (np.min(b) > 0 if is_lanes(b) else b > 0):
            return a // b
        r = np.fmod(a, b)
        return (a - r) // b
    if b == 0:
        raise ZeroDivisionError
    r = np.fmod(a, b)
    return (a - r) // b


def _int_mod(a, b):
    if (is_lanes(b) and np.any(b == 0)) or (not is_lanes(b) and b == 0):
        raise ZeroDivisionError
    return np.fmod(a, b)


def _shift(np_op, bits, left):
    def f(a, b):
        dt = a.dtype
        lo = np.min(b) if is_lanes(b) else b
        hi = np.max(b) if is_lanes(b) else b
        if lo < 0 or hi >= bits:
            # counts outside [0, width) are undefined in C; PTX clamps them: << gives 0, >> the sign fill
            big = b >= bits
            b = np.clip(b, 0, bits - 1)
            r = np_op(a, b.astype(dt) if is_lanes(b) else dt.type(b))
            if left:
                r = np.where(big, dt.type(0), r)
            return r
        return np_op(a, b.astype(dt, copy=False) if is_lanes(b) else dt.type(b))
    return f


def _binop_impl(op, t, loc):
    if op == "+":
        return np.add
    if op == "-":
        return np.subtract
    if op == "*":
        return np.multiply
    if op == "/":
        return _int_div if t.is_int else np.divide
    if op == "%":
        return _int_mod
    if op == "<<":
        return _shift(np.left_shift, t.itemsize * 8, True)
    if op == ">>":
        return _shift(np.right_shift, t.itemsize * 8, False)
    return {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor, "<": np.less, ">": np.greater,
            "<=": np.less_equal, ">=": np.greater_equal, "==": np.equal, "!=": np.not_equal}[op]


def count_divergence(ctx, site, taken, not_taken):
    """Count the warps whose active lanes split between the two sides of a branch."""
    if taken.shape[0] == 1 and not_taken.shape[0] == 1:
        t2, f = ctx.lanes2d(taken)
        n2, _ = ctx.lanes2d(not_taken)
    else:
        t2 = np.broadcast_to(taken, ctx.shape).reshape(ctx.nB, ctx.T)
        n2 = np.broadcast_to(not_taken, ctx.shape).reshape(ctx.nB, ctx.T)
        f = 1
    ctx.counters.units[site] += int(np.count_nonzero(W.warp_any(t2) & W.warp_any(n2))) * f


def check_barrier(ctx, site, loc):
    """Every live (not exited) thread of a block must reach the barrier, or none of them."""
    m = ctx.mask
    live = ctx.live
    n, nw, per_block, _ = ctx.stats()
    c = ctx.counters
    c.threads[site] += n
    c.warps[site] += nw
    if m is None:
        c.block_execs[site] += ctx.nB
        return
    act = np.broadcast_to(m, ctx.shape).reshape(ctx.nB, -1)
    liv = np.ones_like(act) if live is None else np.broadcast_to(live, ctx.shape).reshape(ctx.nB, -1)
    arrived = np.count_nonzero(act, axis=1)
    alive = np.count_nonzero(liv, axis=1)
    bad = (arrived != 0) & (arrived != alive)
    if bad.any():
        b = int(np.argmax(bad))
        gx, gy, _ = ctx.grid
        bid = int(ctx.block_ids[b])
        blk = (bid % gx, (bid // gx) % gy, bid // (gx * gy))
        missing = np.flatnonzero(liv[b] & ~act[b])
        waiting = np.flatnonzero(act[b])
        bx, by, _bz = ctx.block

        def tcoord(i):
            return f"({i % bx},{(i // bx) % by},{i // (bx * by)})"
        raise SimulationError(
            f"{loc}: barrier divergence at {loc.file}:{loc.line} in block ({blk[0]},{blk[1]}"
            f"{',' + str(blk[2]) if blk[2] else ''}): {len(waiting)} of the block's {int(alive[b])} live threads "
            f"reach this __syncthreads() (e.g. thread {tcoord(int(waiting[0]))}) but thread "
            f"{tcoord(int(missing[0]))} does not", location=loc, block=blk,
            thread=(int(missing[0]) % bx, (int(missing[0]) // bx) % by, int(missing[0]) // (bx * by)))
    c.block_execs[site] += int(np.count_nonzero(arrived))


def _warp_view(ctx, v, fill):
    """(blocks, warps, 32) view of a lane value, missing lanes of a partial warp set to ``fill``."""
    full = np.broadcast_to(v, ctx.shape).reshape(ctx.nB, ctx.T)
    return W._pad(full, fill).reshape(ctx.nB, ctx.nw, 32)


def _from_warp_view(ctx, w):
    return w.reshape(ctx.nB, ctx.nw * 32)[:, :ctx.T].reshape(ctx.shape)


def warp_shuffle(ctx, kind, v, arg, width):
    """__shfl*_sync: every lane reads a lane of its warp (its own value when the source is outside its
    ``width``-lane segment, as CUDA specifies for up/down)."""
    vals = _warp_view(ctx, v, 0)
    lane = np.arange(32).reshape(1, 1, 32)
    a = _warp_view(ctx, arg, 0).astype(np.int64)
    seg = lane // width * width
    if kind == "idx":
        src = seg + a % width
    elif kind == "up":
        src = np.where(lane - seg >= a, lane - a, lane)
    elif kind == "down":
        src = np.where(lane - seg + a < width, lane + a, lane)
    else:
        x = lane ^ a
        src = np.where(x // width == lane // width, x, lane)
    src = np.broadcast_to(src, vals.shape)
    return _from_warp_view(ctx, np.take_along_axis(vals, src, axis=2))


def warp_vote(ctx, kind, pred):
    """__ballot_sync / __any_sync / __all_sync over the active lanes of each warp."""
    active = np.ones((1, 1, 1, 1), bool) if ctx.mask is None else ctx.mask
    p = _warp_view(ctx, np.asarray(pred, bool) & active, False)
    if kind == "ballot":
        bits = (p.astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=2).astype(np.uint32)
        out = np.broadcast_to(bits[..., None], p.shape)
        return _from_warp_view(ctx, out)
    act = _warp_view(ctx, active, False)
    if kind == "any":
        r = p.any(axis=2)
    else:
        r = (p | ~act).all(axis=2)
    return _from_warp_view(ctx, np.broadcast_to(r[..., None], p.shape)).astype(np.int32)
