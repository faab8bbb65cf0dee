"""Thin typer layer: parse -> call the library -> render. One module per command group."""
