"""Renderer for ``perfmodel kernels inspect``: a data function (``--json``) and a rich table drawing the same data."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text


def inspect_json(mod) -> list[dict]:
    """One object per compiled kernel of a ``CompiledModule``."""
    from perfmodel.compile.support import ptx_instructions, unsupported_opcodes

    from perfmodel.kernel import _parsed
    from perfmodel.sim.program import first_unsupported

    module = _parsed(mod)
    rows = []
    for k in mod.kernels:
        body = mod.ptx_body(k)
        unsupported = unsupported_opcodes(body)
        if not unsupported and k.mangled in module.functions:
            # a form of a supported opcode the executor does not run: the instruction, in full
            err = first_unsupported(module, k.mangled, mod.source_path or "<source>")
            if err is not None:
                unsupported = [getattr(err, "short", None) or "see analyze"]
        rows.append({
            "name": k.name,
            "expression": k.expression,
            "mangled": k.mangled,
            "is_template": k.is_template,
            "file": k.file,
            "line": k.line,
            "arch": mod.arch,
            "registers": k.registers,
            "shared_bytes": k.static_shared_bytes,
            "local_bytes": k.local_bytes,
            "spill_stores": k.spill_stores,
            "spill_loads": k.spill_loads,
            "barriers": k.barriers,
            "params": [{"name": p.name, "type": p.ctype, "pointer": p.is_pointer,
                        "dtype": None if p.dtype is None else str(p.dtype), "size": p.size, "align": p.align,
                        **({"struct": _struct_json(p.layout)} if getattr(p, "layout", None) is not None else {})}
                       for p in k.params],
            "ptx_instructions": len(ptx_instructions(body)),
            "unsupported": unsupported,
        })
    return rows


def _struct_json(layout) -> dict:
    """A by-value struct parameter's fields (perfmodel/compile/structs.py), or why they are not known."""
    if layout.error is not None:
        return {"error": layout.error}
    return {"size": layout.size, "fields": [
        {"name": f.path, "type": f.ctype, "dtype": f.dtype, "offset": f.offset, "count": f.count,
         "pointer": f.pointer, **({"pointee": f.pointee} if f.pointer else {})} for f in layout.leaves]}


def render_inspect(mod, rows: list[dict], console: Console) -> None:
    title = f"{mod.source_path or 'source'}: {len(rows)} kernel{'s' if len(rows) != 1 else ''} ({mod.arch})"
    if not rows:
        if mod.templates:
            console.print(f"{title}: its kernels are templates, compiled once instantiated: name one with --kernel "
                          "'NAME<ARGS>'.", style="yellow")
        elif mod.declared_only:
            console.print(f"{title}: its kernels are only declared here.", style="yellow")
        else:
            console.print(f"{title}: no __global__ function in the file, nor in the headers it includes from its "
                          "own folders (-I adds folders); nothing to launch.", style="yellow")
        _inspect_notes(mod, console)
        return
    table = Table(title=title, title_justify="left", expand=False)
    widest = max((len(r["expression"]) for r in rows), default=6)
    table.add_column("kernel", style="bold cyan", min_width=min(widest, 40), overflow="fold")
    table.add_column("regs", justify="right")
    table.add_column("smem B", justify="right")
    table.add_column("local B", justify="right")
    table.add_column("spills B", justify="right")
    table.add_column("PTX", justify="right")
    table.add_column("unsupported", style="yellow")
    for r in rows:
        table.add_row(r["expression"], str(r["registers"]), str(r["shared_bytes"]), str(r["local_bytes"]),
                      f"{r['spill_stores']}/{r['spill_loads']}", str(r["ptx_instructions"]),
                      ", ".join(r["unsupported"]) or "—")
    console.print(table)
    for r in rows:
        params = ", ".join(f"{p['type']} {p['name']}" for p in r["params"])
        where = ""
        if r.get("file"):
            from pathlib import Path

            same = mod.source_path and Path(mod.source_path).resolve() == Path(r["file"])
            where = f"  line {r['line']}" if same else f"  {Path(r['file']).name}:{r['line']}"
        # one of an overload set is listed as name(types); its signature line is the name and the parameters
        shown = r["name"] if r["expression"].endswith(")") and "<" not in r["expression"] else r["expression"]
        console.print(Text.assemble((shown, "cyan"), f"({params})", (where, "dim")))
        for p in r["params"]:
            struct = p.get("struct")
            if struct is None:
                continue
            fields = "; ".join(f"{f['name']} ({f['type']})" for f in struct.get("fields", []))
            console.print(Text(f"  {p['name']}: {fields or struct.get('error')}", style="dim"))
    if mod.arch_note:
        console.print(Text(mod.arch_note, style="dim"))
    _inspect_notes(mod, console)


def _inspect_notes(mod, console: Console) -> None:
    """The template kernels not instantiated, the kernels declared only, the file compiled around a header."""
    if mod.templates:
        console.print(Text("template kernels not instantiated (add --kernel 'NAME<ARGS>'): "
                           + ", ".join(mod.templates), style="dim"))
        for t in mod.templates:
            for seen in mod.template_launches.get(t, [])[:4]:
                console.print(Text(f"  launched as {seen}", style="dim"))
    if mod.declared_only:
        console.print(Text("declared here, defined in another file of the project (analyse that file): "
                           + ", ".join(f"{k} ({where})" for k, where in mod.declared_only.items()), style="dim"))
    if getattr(mod, "context_path", None):
        console.print(Text(f"compiled inside {mod.context_path}, which includes this header", style="dim"))
