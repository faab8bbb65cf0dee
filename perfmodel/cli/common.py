"""Shared CLI plumbing: consoles, error printing, ``-D NAME=VALUE`` parsing, the ``--json`` switch."""
from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from perfmodel.errors import PerfmodelError

console = Console()
err_console = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document on stdout.")]
DefineOption = Annotated[
    list[str] | None,
    typer.Option("-D", "--define", help="Override a spec param or #define: -D NAME=VALUE (repeatable)."),
]


def print_error(message: str) -> None:
    err_console.print(f"[bold red]error:[/bold red] {escape(message)}", markup=True, highlight=False, soft_wrap=True)


def parse_defines(items: list[str] | None) -> dict[str, int | float]:
    """Parse ``-D NAME=VALUE`` items into numbers. Values are numeric literals only (never evaluated)."""
    result: dict[str, int | float] = {}
    for item in items or []:
        name, sep, raw = item.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep or not name.isidentifier() or not raw:
            raise PerfmodelError(f"-D {item!r}: expected NAME=VALUE with a numeric VALUE, e.g. -D TILE_WIDTH=16")
        try:
            value: int | float = int(raw, 0)
        except ValueError:
            try:
                value = float(raw)
            except ValueError:
                raise PerfmodelError(f"-D {item!r}: VALUE {raw!r} is not a number") from None
        result[name] = value
    return result
