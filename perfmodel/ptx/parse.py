"""PTX text -> :class:`perfmodel.ptx.ir.Module`: one pass over the statements, then basic blocks and
immediate post-dominators per function (:mod:`perfmodel.ptx.cfg`).

Written for the PTX that NVRTC emits (PTX ISA 9.x): one statement per line, ``.loc`` lines without semicolons,
``{ ... }`` scopes around call sequences, vector operands in braces, initialisers in braces.
"""
from __future__ import annotations

import re
import struct

from perfmodel.errors import PerfmodelError
from perfmodel.ptx.cfg import build_blocks
from perfmodel.ptx.ir import (TYPES, Addr, Function, Imm, Instr, Module, Param, PredPair, Reg, Sink, Special, Sym,
                              Variable, Vec)


class PtxError(PerfmodelError):
    """PTX the parser does not understand (a bug or an unsupported construct, named with its PTX line)."""


SPECIAL_BASES = {
    "tid", "ntid", "ctaid", "nctaid", "laneid", "warpid", "nwarpid", "smid", "nsmid", "gridid", "lanemask_eq",
    "lanemask_le", "lanemask_lt", "lanemask_ge", "lanemask_gt", "clock", "clock64", "clock_hi", "globaltimer",
    "globaltimer_lo", "globaltimer_hi", "dynamic_smem_size", "total_smem_size", "aggr_smem_size",
    "reserved_smem_offset_begin", "reserved_smem_offset_end", "reserved_smem_offset_cap", "reserved_smem_offset_0",
    "reserved_smem_offset_1", "is_explicit_cluster",
    "clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid", "cluster_ctarank", "cluster_nctarank",
    "current_graph_exec",
} | {f"envreg{i}" for i in range(32)} | {f"pm{i}" for i in range(8)} | {f"pm{i}_64" for i in range(8)}

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LABEL = re.compile(r"^([A-Za-z_$%][\w$.]*)\s*:\s*$")
_PROTOTYPE = re.compile(r"^[A-Za-z_$%][\w$.]*\s*:\s*\.callprototype\b")
_REG_DECL = re.compile(r"^([%\w$]+)<(\d+)>$")
_VAR = re.compile(r"^([\w$.]+)((?:\[\d*\])*)\s*(?:=\s*(.*))?$", re.S)
_SPACES = ("global", "const", "shared", "local", "param", "tex")


def parse_ptx(text: str, name: str = "<ptx>") -> Module:
    return _Parser(text, name).parse()


def _split_top(s: str, sep: str = ",") -> list[str]:
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail or out:
        out.append(tail)
    return out


def _int(tok: str) -> int:
    t = tok.strip().rstrip("Uu")
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    v = int(t, 16) if t[:2] in ("0x", "0X") else int(t, 8) if len(t) > 1 and t[0] == "0" and t.isdigit() else int(t)
    return -v if neg else v


_ADDRESS_INIT = re.compile(r"^(?:(0[xX][0-9a-fA-F]+)\((.*)\)|(.*))$")
_SYMBOL_PLUS = re.compile(r"^(generic\(\s*([A-Za-z_$][\w$]*)\s*\)|([A-Za-z_$][\w$]*))\s*(?:([+-])\s*(\d+))?$")


def _address_init(item: str) -> tuple:
    """(symbol, addend, generic, mask) of an address in a variable's initialiser (PTX ISA, "Variables -
    Initializers": ``var``, ``generic(var)``, either plus an offset, and a byte mask of one, ``0xFF00(generic(var))``);
    (None, item, False, None) for an expression not of these forms."""
    m = _ADDRESS_INIT.match(item.strip())
    mask = int(m.group(1), 16) if m.group(1) else None
    body = (m.group(2) if m.group(1) else m.group(3)).strip()
    s = _SYMBOL_PLUS.match(body)
    if not s:
        return None, item, False, None
    generic = s.group(2) is not None
    addend = int(s.group(5) or 0) * (-1 if s.group(4) == "-" else 1)
    return (s.group(2) or s.group(3)), addend, generic, mask


def parse_imm(tok: str) -> Imm:
    t = tok.strip()
    neg = t.startswith("-")
    body = t[1:] if neg else t
    if body[:2] in ("0f", "0F") and len(body) == 10:
        bits = int(body[2:], 16)
        v = struct.unpack("<f", struct.pack("<I", bits))[0]
        return Imm(-v if neg else v, True, bits ^ (0x80000000 if neg else 0), 32)
    if body[:2] in ("0d", "0D") and len(body) == 18:
        bits = int(body[2:], 16)
        v = struct.unpack("<d", struct.pack("<Q", bits))[0]
        return Imm(-v if neg else v, True, bits ^ (1 << 63 if neg else 0), 64)
    if re.fullmatch(r"-?\d+\.\d*(e[+-]?\d+)?|-?\d+e[+-]?\d+", t, re.I):
        return Imm(float(t), True)
    return Imm(_int(t))


class _Parser:
    def __init__(self, text: str, name: str):
        self.name = name
        self.text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        self.files: dict[int, str] = {}
        self.variables: list[Variable] = []
        self.functions: dict[str, Function] = {}
        self.extern_funcs: set[str] = set()
        self.version = ""
        self.target = ""
        self.address_size = 64
        self.loc = (0, 0, 0)
        self.outer = None               # the outermost call site of the current .loc (inlined code), or None
        self.call_site: dict = {}       # .loc (file, line, col) -> the .loc it was inlined at
        self.func: Function | None = None
        self.depth = 0                  # brace depth inside a function body
        self.pending_header: str | None = None
        self.lineno = 0

    def error(self, msg: str) -> PtxError:
        return PtxError(f"{self.name}:{self.lineno}: {msg}")

    # ---- statement splitting ---------------------------------------------------------------------------------
    def statements(self):
        """Yield (kind, text) with kind in {"loc", "file", "label", "stmt", "open", "close"}."""
        buf = ""
        section = None          # brace depth inside a `.section NAME { ... }` (DWARF data: skipped)
        for lineno, raw in enumerate(self.text.split("\n"), 1):
            self.lineno = lineno
            line = raw.strip()
            if not line:
                continue
            if section is not None:
                section += line.count("{") - line.count("}")
                if section <= 0 and "}" in line:
                    section = None
                continue
            if not buf.strip():
                if line.startswith(".section") and self.depth == 0 and self.func is None:
                    # `.section .debug_str` then `{ labels and .b8 data }` on the following lines (NVRTC with
                    # -lineinfo and a non-inlined function); a `.section` on one line with `;` is a no-op too
                    opened = line.count("{") - line.count("}")
                    if "{" in line:
                        section = opened if opened > 0 else None
                    elif not line.rstrip().endswith(";"):
                        section = 0          # the `{` comes on a later line
                    continue
                if line.startswith(".loc") and ";" not in line:
                    yield "loc", line
                    continue
                if line.startswith(".file"):
                    yield "file", line.rstrip(";")
                    continue
                if line.startswith((".version", ".target", ".address_size")):
                    yield "stmt", line.rstrip(";")
                    continue
                m = _LABEL.match(line)
                if m:
                    yield "label", m.group(1)
                    continue
                if _PROTOTYPE.match(line):
                    # an indirect call's prototype (`prototype_0 : .callprototype (...) _ (...);`): a declaration;
                    # the call through it is refused where it executes (perfmodel/sim/program.py)
                    if not line.rstrip().endswith(";"):
                        buf = "\x00prototype"
                    continue
            if buf.startswith("\x00prototype"):
                if line.rstrip().endswith(";"):
                    buf = ""
                continue
            buf += " " + line
            while True:
                item, buf = self._take(buf)
                if item is None:
                    break
                yield item
        if buf.strip():
            raise self.error(f"unterminated statement: {buf.strip()[:80]}")

    def _take(self, buf: str):
        depth = 0
        s = buf.lstrip()
        for i, ch in enumerate(s):
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif ch == "{" and depth == 0:
                head = s[:i].strip()
                if not head:
                    return ("open", ""), s[i + 1:]
                if head.startswith((".visible", ".entry", ".func", ".weak", ".extern")) and "=" not in head:
                    return ("open", head), s[i + 1:]
                # a vector operand or an initialiser: skip to its closing brace
                j = self._match_brace(s, i)
                if j < 0:
                    return None, buf
                return self._take_from(s, j + 1)
            elif ch == "}" and depth == 0:
                head = s[:i].strip()
                if head:
                    raise self.error(f"unexpected '}}' after {head[:60]!r}")
                return ("close", ""), s[i + 1:]
            elif ch == ";" and depth == 0:
                return ("stmt", s[:i].strip()), s[i + 1:]
        return None, buf

    def _take_from(self, s: str, start: int):
        depth = 0
        i = start
        while i < len(s):
            ch = s[i]
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == ";" and depth == 0:
                return ("stmt", s[:i].strip()), s[i + 1:]
            i += 1
        return None, s

    @staticmethod
    def _match_brace(s: str, i: int) -> int:
        depth = 0
        for j in range(i, len(s)):
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                depth -= 1
                if depth == 0:
                    return j
        return -1

    # ---- driver ------------------------------------------------------------------------------------------------
    def parse(self) -> Module:
        for kind, text in self.statements():
            if kind == "file":
                m = re.match(r'\.file\s+(\d+)\s+"([^"]*)"', text)
                if m:
                    self.files[int(m.group(1))] = m.group(2)
            elif kind == "loc":
                parts = text.split(",")[0].split()
                try:
                    self.loc = (int(parts[1]), int(parts[2]), int(parts[3]) if len(parts) > 3 else 0)
                except (IndexError, ValueError):
                    raise self.error(f"bad .loc directive {text!r}") from None
                self.outer = self._outer(text)
                if self.func is not None and not self.func.line and self.loc[1]:
                    self.func.line = self.loc[1]
            elif kind == "label":
                if self.func is None:
                    raise self.error(f"label {text} outside a function")
                self.func.labels[text] = len(self.func.instrs)
            elif kind == "open":
                if self.func is None:
                    self._begin_function(text)
                else:
                    self.depth += 1
            elif kind == "close":
                if self.func is None:
                    raise self.error("unbalanced '}'")
                if self.depth == 0:
                    self._end_function()
                else:
                    self.depth -= 1
            else:
                if self.func is None:
                    self._module_statement(text)
                else:
                    self._body_statement(text)
        if self.func is not None:
            raise self.error(f"function {self.func.name} is not closed")
        _internal_lines_to_call_site(self.functions)
        return Module(self.version, self.target, self.address_size, self.files, self.variables, self.functions,
                      self.extern_funcs)

    # ---- module level ------------------------------------------------------------------------------------------
    def _module_statement(self, s: str):
        if s.startswith(".version"):
            self.version = s.split()[1]
            return
        if s.startswith(".target"):
            self.target = s.split(None, 1)[1]
            return
        if s.startswith(".address_size"):
            self.address_size = int(s.split()[1])
            return
        if s.startswith((".pragma", ".section")):
            return
        words = s.split()
        if ".func" in words or ".entry" in words:          # a prototype (no body)
            name = self._header_name(s)
            if name:
                self.extern_funcs.add(name)
            return
        var = self._variable(s)
        if var is not None:
            self.variables.append(var)
            return
        raise self.error(f"unsupported module-level PTX statement: {s[:100]}")

    def _variable(self, s: str) -> Variable | None:
        words = s.replace("\t", " ")
        toks = words.split(None)
        extern = False
        space = None
        align = 0
        vtype = None
        i = 0
        while i < len(toks) and toks[i].startswith("."):
            t = toks[i][1:]
            if t in ("visible", "weak", "common"):
                pass
            elif t == "extern":
                extern = True
            elif t in _SPACES:
                space = t
            elif t == "align":
                i += 1
                align = int(toks[i])
            elif t in TYPES:
                vtype = t
            elif t in ("texref", "samplerref", "surfref"):
                vtype = t
            elif t in ("ptr", "v2", "v4", "v8", "attribute(.managed)", "managed"):
                pass
            else:
                return None
            i += 1
        if space is None or vtype is None:
            return None
        rest = " ".join(toks[i:])
        if vtype in ("texref", "samplerref", "surfref"):
            return Variable(rest.strip(), "tex", "b64", 8, 1, None, extern)
        m = _VAR.match(rest)
        if not m:
            raise self.error(f"cannot read the variable declaration {s[:100]!r}")
        name, dims, init = m.group(1), m.group(2), m.group(3)
        count: int | None = 1
        if dims:
            sizes = re.findall(r"\[(\d*)\]", dims)
            if any(x == "" for x in sizes):
                count = None
            else:
                count = 1
                for x in sizes:
                    count *= int(x)
        relocs: list = []
        data = self._init_bytes(init, vtype, count, relocs) if init else None
        return Variable(name, space, vtype, align or TYPES[vtype][1], count, data, extern, tuple(relocs))

    def _init_bytes(self, init: str, vtype: str, count: int | None, relocs: list) -> bytes:
        text = init.strip()
        if text.startswith("{"):
            text = text[1:-1]
        items = [t for t in (x.strip() for x in _split_top(text.replace("{", "").replace("}", ""))) if t]
        dt, size = TYPES[vtype]
        out = bytearray()
        for it in items:
            if "(" in it or re.match(r"^[A-Za-z_$]", it):
                # an address: of a variable (`generic(table)+8`, `table`) or of a function (`_Z3addff`, a
                # function-pointer table), or a byte of one (`0xFF00(generic(table))`): placed at load time
                relocs.append((len(out), size, *_address_init(it)))
                out += b"\0" * size
                continue
            imm = parse_imm(it)
            if imm.is_float:
                if imm.bits is not None and imm.width * 1 == size * 8:
                    out += imm.bits.to_bytes(size, "little")
                else:
                    out += struct.pack("<f" if size == 4 else "<d", imm.value)
            else:
                out += (imm.value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        if count is not None and len(out) < count * size:
            out += b"\0" * (count * size - len(out))
        return bytes(out)

    # ---- functions ---------------------------------------------------------------------------------------------
    @staticmethod
    def _header_name(h: str) -> str | None:
        # .visible .entry NAME( ... )  |  .func (.param .b32 func_retval0) NAME( ... )
        h2 = h
        m = re.search(r"\.(?:entry|func)\s*(\([^)]*\))?\s*([\w$]+)", h2)
        return m.group(2) if m else None

    def _begin_function(self, head: str):
        is_entry = ".entry" in head.split("(")[0].split()
        name = self._header_name(head)
        if not name:
            raise self.error(f"cannot read the function header {head[:100]!r}")
        rets: list[Param] = []
        m = re.search(r"\.func\s*\(([^)]*)\)", head)
        if m:
            rets = [self._param(p) for p in _split_top(m.group(1)) if p]
        after = head[head.index(name) + len(name):]
        params: list[Param] = []
        directives = {}
        if "(" in after:
            open_ = after.index("(")
            depth = 0
            for j in range(open_, len(after)):
                if after[j] == "(":
                    depth += 1
                elif after[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
            params = [self._param(p) for p in _split_top(after[open_ + 1:j]) if p]
            tail = after[j + 1:]
        else:
            tail = after
        for dm in re.finditer(r"\.(maxntid|reqntid|minnctapersm|maxnreg|maxclusterrank|reqnctapercluster)\s+"
                              r"([\d,\s]+)", tail):
            directives[dm.group(1)] = tuple(int(x) for x in dm.group(2).replace(",", " ").split())
        self.func = Function(name, is_entry, params, rets, [], {}, [], {}, directives=directives)
        self.depth = 0

    def _param(self, p: str) -> Param:
        toks = p.split()
        align = 0
        ptype = None
        space = None
        i = 0
        while i < len(toks) and toks[i].startswith("."):
            t = toks[i][1:]
            if t == "align":
                i += 1
                align = int(toks[i])
            elif t in TYPES:
                ptype = t
            elif t in ("global", "shared", "const", "local"):
                space = t
            i += 1
        if ptype is None or i >= len(toks):
            raise self.error(f"cannot read the parameter {p!r}")
        m = re.match(r"([\w$]+)(?:\[(\d+)\])?", toks[i])
        count = int(m.group(2)) if m.group(2) else 1
        return Param(m.group(1), ptype, align or TYPES[ptype][1], count, space)

    def _end_function(self):
        f = self.func
        build_blocks(f)
        for i, ins in enumerate(f.instrs):
            ins.index = i
        self.functions[f.name] = f
        self.func = None

    def _body_statement(self, s: str):
        f = self.func
        if s.startswith(".reg"):
            # `.reg .b32 %r<4>` - or, in inline asm, `.reg.b32 f` with no space before the type
            m = re.match(r"^\.reg\s*\.(\w+)\s+(.+)$", s, re.S)
            if m is None:
                raise self.error(f"cannot read the register declaration {s[:100]!r}")
            rtype, names = m.group(1), m.group(2)
            if rtype.startswith("v"):          # .reg .v4 .f32 %x: vector registers are not used by NVRTC
                raise self.error(f"vector registers are not supported: {s}")
            for name in _split_top(names):
                m = _REG_DECL.match(name.strip())
                if m:
                    for k in range(int(m.group(2))):
                        f.regs[f"{m.group(1)}{k}"] = rtype
                else:
                    f.regs[name.strip()] = rtype
            return
        if s.startswith((".local", ".shared", ".global", ".const")) or (s.startswith(".param") and self.depth > 0):
            var = self._variable(s)
            if var is None:
                raise self.error(f"cannot read the declaration {s[:100]!r}")
            f.variables.append(var)
            return
        if s.startswith((".pragma", ".maxnreg", ".maxntid", ".reqntid", ".minnctapersm")):
            return
        if s.startswith("."):
            raise self.error(f"unsupported PTX directive in {f.name}: {s[:100]}")
        f.instrs.extend(lower_cp_async(self._instruction(s), f.regs))

    def _instruction(self, s: str) -> Instr:
        text = s
        guard = None
        neg = False
        if s.startswith("@"):
            g, s = s.split(None, 1)
            neg = g.startswith("@!")
            guard = Reg(g[2:] if neg else g[1:])
        parts = s.split(None, 1)
        op_full = parts[0]
        rest = parts[1] if len(parts) > 1 else ""
        pieces = op_full.split(".")
        opcode, mods = pieces[0], tuple(pieces[1:])
        if opcode == "call":
            operands = self._call_operands(rest)
        else:
            operands = tuple(self._operand(o) for o in _split_top(rest)) if rest.strip() else ()
        file, line, col = self.loc
        return Instr(opcode, mods, operands, guard, neg, file, line, col, text, outer=self.outer)

    def _outer(self, text: str):
        """``.loc F L C, function_name ..., inlined_at F2 L2 C2``: remember where (F, L, C) was inlined and follow
        the chain of call sites to the outermost, the kernel's own line (None when the .loc is not inlined)."""
        m = re.search(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)", text)
        if not m:
            return None
        site = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        self.call_site[self.loc] = site
        seen = {self.loc}
        while site in self.call_site and site not in seen:
            seen.add(site)
            site = self.call_site[site]
        return site

    def _call_operands(self, rest: str) -> tuple:
        # call{.uni} (ret0, ...), func, (arg0, ...)  |  call func, (args)  |  call func
        items = _split_top(rest)
        rets: tuple = ()
        if items and items[0].startswith("("):
            rets = tuple(self._operand(x) for x in _split_top(items[0][1:-1]) if x)
            items = items[1:]
        func = items[0].strip()
        args: tuple = ()
        if len(items) > 1 and items[1].startswith("("):
            args = tuple(self._operand(x) for x in _split_top(items[1][1:-1]) if x)
        return (Vec(rets), Sym(func), Vec(args))

    def _operand(self, o: str):
        o = o.strip()
        if not o:
            raise self.error("empty operand")
        if o == "_":
            return Sink()
        if o.startswith("["):
            inner = o[1:-1].strip()
            parts = _split_top(inner)
            if len(parts) > 1:                  # a texture / surface tuple: [tex0, {%r1, %r2}]
                return Vec(tuple(self._operand(x) for x in parts))
            m = re.match(r"^(.+?)\s*\+\s*(-?(?:0[xX][0-9a-fA-F]+|\d+))$", inner)
            if m:
                base, off = m.group(1), _int(m.group(2))
            else:
                m = re.match(r"^(.+?)\s*-\s*(0[xX][0-9a-fA-F]+|\d+)$", inner)
                base, off = (m.group(1), -_int(m.group(2))) if m else (inner, 0)
            b = self._operand(base)
            if isinstance(b, Imm):
                return Addr(Imm(0), int(b.value) + off)
            return Addr(b, off)
        if o.startswith("{"):
            return Vec(tuple(self._operand(x) for x in _split_top(o[1:-1])))
        if "|" in o:
            a, b = o.split("|")
            return PredPair(Reg(a.strip()), Reg(b.strip()))
        if o.startswith("!%"):
            return Reg(o)                       # negated predicate source
        if o.startswith("%"):
            base = o[1:].split(".")[0]
            if base in SPECIAL_BASES:
                return Special(o)
            return Reg(o)
        if o[0].isdigit() or o[0] == "-" or o[0] == "+":
            return parse_imm(o.lstrip("+"))
        if o == "WARP_SZ":
            return Imm(32)                      # PTX's predefined constant (warpSize)
        if self.func is not None and o.lstrip("!") in self.func.regs:
            return Reg(o)                       # a register declared without '%' (inline asm: .reg .pred p;)
        m = re.match(r"^(generic\()?([\w$]+)\)?(?:\s*\+\s*(\d+))?$", o)
        if m:
            if m.group(3):
                return Addr(Sym(m.group(2)), int(m.group(3)))
            return Sym(m.group(2))
        raise self.error(f"cannot read the operand {o!r}")


# ---- cp.async: a global load and a shared store --------------------------------------------------------------

_CP_ASYNC_TYPE = {4: ("u32", None), 8: ("u32", "v2"), 16: ("u32", "v4")}


def lower_cp_async(ins: Instr, regs: dict) -> list[Instr]:
    """``cp.async.ca|cg.shared.global [dst], [src], cp-size`` as the two accesses it makes: ``ld.global.ca|cg`` of
    ``cp-size`` bytes into registers of its own, then ``st.shared.async`` of them (a store that lands when the
    copy's group completes: :mod:`perfmodel.sim.async_copy`), with the same guard and source line. A copy with a
    ``src-size`` below its ``cp-size`` (the rest zero-filled), an ``ignore-src`` predicate or a cache-policy operand
    is left as written, so the executor stops at it with its source line; so is every other instruction."""
    m = ins.mods
    if ins.opcode != "cp" or m[:1] != ("async",) or len(m) < 2 or m[1] not in ("ca", "cg"):
        return [ins]
    spaces = [x.split("::")[0] for x in m[2:4]]
    ops = ins.operands
    if spaces != ["shared", "global"] or len(ops) not in (3, 4) or not isinstance(ops[2], Imm):
        return [ins]
    size = int(ops[2].value)
    if size not in _CP_ASYNC_TYPE:
        return [ins]
    zero_fill = len(ops) == 4 and not (isinstance(ops[3], Imm) and int(ops[3].value) == size)
    if zero_fill and not isinstance(ops[3], (Reg, Imm)):
        return [ins]
    t, vec = _CP_ASYNC_TYPE[size]
    temps = []
    for k in range(size // 4):
        name = f"%cp_async_{k}"
        regs.setdefault(name, "b32")
        temps.append(Reg(name))
    data = Vec(tuple(temps)) if vec else temps[0]
    shape = (vec,) if vec else ()
    where = dict(file=ins.file, line=ins.line, col=ins.col, text=ins.text, outer=ins.outer)
    common = dict(guard=ins.guard, guard_neg=ins.guard_neg, **where)
    store = Instr("st", ("shared", "async") + shape + (t,), (ops[0], data), **common)
    if not zero_fill:
        return [Instr("ld", ("global", m[1]) + shape + (t,), (data, ops[1]), **common), store]
    return _cp_async_zero_fill(ins, regs, size, ops[3], temps, data, shape, t, where) + [store]


def _cp_async_zero_fill(ins: Instr, regs: dict, size: int, src_size, temps, data, shape, t, where) -> list[Instr]:
    """``cp.async ... [dst], [src], cp-size, src-size``: the first ``src-size`` bytes come from ``src``, the rest are
    zeros (PTX ISA, cp.async), and a copy of 0 bytes reads nothing. As instructions: the data registers zeroed; the
    whole ``cp-size`` load where ``src-size`` is ``cp-size`` (one request, like the plain form); else each 4-byte
    word that ``src-size`` covers whole, loaded on its own, and the word it covers in part loaded whole and masked to
    its first ``src-size mod 4`` bytes (the 1-3 bytes past them are read: past the array's end, that is an
    out-of-bounds error, never a wrong value). Each load is also under the copy's own guard."""
    def pred(name):
        regs.setdefault(name, "pred")
        return Reg(name)

    src = src_size
    out = [Instr("mov", ("b32",), (tmp, Imm(0)), **where) for tmp in temps]
    guard = None
    if ins.guard is not None:
        guard = pred("%cp_async_guard")
        out.append(Instr("not" if ins.guard_neg else "mov", ("pred",), (guard, ins.guard), **where))

    def under_guard(p):
        if guard is not None:
            out.append(Instr("and", ("pred",), (p, p, guard), **where))
        return p

    full = pred("%cp_async_full")
    out.append(Instr("setp", ("eq", "u32"), (full, src, Imm(size)), **where))
    out.append(Instr("ld", ("global", ins.mods[1]) + shape + (t,), (data, ins.operands[1]), guard=under_guard(full),
                     **where))
    addr = ins.operands[1]
    part = pred("%cp_async_part")
    out.append(Instr("setp", ("lt", "u32"), (part, src, Imm(size)), **where))
    for k in range(len(temps)):
        at = Addr(addr.base, addr.offset + 4 * k)
        if k < len(temps) - 1:                      # a whole word of a partial copy (the last: only a full one)
            word = pred(f"%cp_async_w{k}")
            out.append(Instr("setp", ("ge", "u32"), (word, src, Imm(4 * (k + 1))), **where))
            out.append(Instr("and", ("pred",), (word, word, part), **where))
            out.append(Instr("ld", ("global", ins.mods[1], "b32"), (temps[k], at), guard=under_guard(word), **where))
        # the word src-size ends inside: 4k < src-size < 4k + 4, its first src-size - 4k bytes
        above, below, ragged = pred("%cp_async_gt"), pred("%cp_async_lt"), pred(f"%cp_async_r{k}")
        out.append(Instr("setp", ("gt", "u32"), (above, src, Imm(4 * k)), **where))
        out.append(Instr("setp", ("lt", "u32"), (below, src, Imm(4 * k + 4)), **where))
        out.append(Instr("and", ("pred",), (ragged, above, below), **where))
        raw, bits, mask = Reg("%cp_async_raw"), Reg("%cp_async_bits"), Reg("%cp_async_mask")
        for r in (raw, bits, mask):
            regs.setdefault(r.name, "b32")
        out.append(Instr("ld", ("global", ins.mods[1], "b32"), (raw, at), guard=under_guard(ragged), **where))
        out.append(Instr("sub", ("u32",), (bits, src, Imm(4 * k)), **where))
        out.append(Instr("shl", ("b32",), (bits, bits, Imm(3)), **where))
        out.append(Instr("shl", ("b32",), (mask, Imm(1), bits), **where))
        out.append(Instr("sub", ("u32",), (mask, mask, Imm(1)), **where))
        out.append(Instr("and", ("b32",), (temps[k], raw, mask), guard=ragged, **where))
    return out



def _internal_lines_to_call_site(functions: dict) -> None:
    """NVVM's internal math helpers kept as functions (``__internal_accurate_pow`` for ``pow(double, double)``)
    carry the .loc of the kernel's closing brace, so a kernel's pow showed 84% of its instructions on ``}``: the
    instructions of a ``__internal_*`` function called from one source line take that call's line (and file)."""
    sites: dict[str, set] = {}
    for f in functions.values():
        for ins in f.instrs:
            if ins.opcode == "call" and len(ins.operands) > 1:
                name = getattr(ins.operands[1], "name", None)
                if isinstance(name, str) and name.startswith("__internal_"):
                    sites.setdefault(name, set()).add((ins.file, ins.line, ins.outer))
    for name, where in sites.items():
        f = functions.get(name)
        if f is None or len(where) != 1:
            continue
        (file, line, outer), = where
        if not line:
            continue
        for ins in f.instrs:
            ins.file, ins.line, ins.outer = file, line, outer
