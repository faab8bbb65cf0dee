"""Terminal rendering of device profiles: the `devices list` table and `devices show` (value, source, note)."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from perfmodel.devices import Device
from perfmodel.units import format_bandwidth, format_bytes, format_flops, format_frequency

_BYTE_FIELDS = {"shared_memory_per_sm", "shared_memory_per_block", "shared_memory_per_block_optin",
                "shared_memory_allocation_unit", "reserved_shared_memory_per_block", "shared_memory_system_bytes",
                "shared_memory_bank_width_bytes", "shared_memory_carveouts"}
_HIDDEN = {"id", "provenance", "source_file", "sources", "notes", "measured", "throughput", "format_version"}


def format_field(name: str, value: Any) -> str:
    """A profile value in human units: 16384 -> "16 KiB", 86.4e9 B/s -> "86.4 GB/s"."""
    leaf = name.rsplit(".", 1)[-1]
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (tuple, list)):
        if leaf in _BYTE_FIELDS:
            return ", ".join(format_bytes(v) for v in value)
        return " x ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items()) or "none"
    if leaf.endswith("bytes_per_s"):
        return format_bandwidth(value)
    if leaf.endswith("_hz"):
        return format_frequency(value)
    if leaf.endswith("_flops"):
        return format_flops(value)
    if (leaf.endswith("_bytes") or leaf in _BYTE_FIELDS) and isinstance(value, int):
        return format_bytes(value) if value >= 1024 else f"{value} B"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def device_fields(device: Device) -> list[tuple[str, Any]]:
    """(field name, value) in schema order, throughput fields as ``throughput.<name>``."""
    fields = [(name, getattr(device, name)) for name in type(device).model_fields if name not in _HIDDEN]
    fields += [(f"throughput.{name}", getattr(device.throughput, name)) for name in type(device.throughput).model_fields]
    return fields


def _file_label(device: Device) -> str:
    """"shipped" for the profiles that come with perfmodel, else the file's path."""
    from pathlib import Path

    from perfmodel.paths import shipped_dir

    if device.source_file and Path(device.source_file).parent == shipped_dir("devices").resolve():
        return "shipped"
    return device.source_file or ""


def render_device_list(devices: list[Device], problems: list[str], console: Console) -> None:
    table = Table(title="Device profiles", title_justify="left")
    for column, justify in (("name", "left"), ("product", "left"), ("CC", "left"), ("SMs", "right"),
                            ("clock", "right"), ("FP32 peak", "right"), ("DRAM", "right"),
                            ("smem/SM", "right"), ("file", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for d in devices:
        table.add_row(d.id, d.name, d.compute_capability, str(d.sm_count), format_frequency(d.clock_hz),
                      format_flops(d.peak_fp32_flops), format_bandwidth(d.dram_bandwidth_bytes_per_s),
                      format_bytes(d.shared_memory_per_sm), _file_label(d))
    console.print(table)
    for problem in problems:
        console.print(Text.assemble(("invalid: ", "bold red"), problem), soft_wrap=True)


def render_device(device: Device, console: Console) -> None:
    title = f"{device.name} ({device.id}, compute capability {device.compute_capability})"
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("field", style="bold")
    table.add_column("value", justify="right")
    table.add_column("source")
    table.add_column("note", overflow="fold")
    for name, value in device_fields(device):
        where = device.source_of(name)
        source_style = "yellow" if where.source in ("estimate", "default") else None
        table.add_row(name, format_field(name, value), Text(where.source or "-", style=source_style),
                      where.note or "")
    console.print(table)
    sources = Table(title="Sources", title_justify="left", show_header=False)
    sources.add_column("key", style="bold")
    sources.add_column("document", overflow="fold")
    for key, document in device.sources.items():
        sources.add_row(key, document)
    if device.sources:
        console.print(sources)
    if device.notes:
        console.print(Text(device.notes), soft_wrap=True)
    if device.measured:
        measured = Table(title="Measured", title_justify="left")
        for column in ("field", "value", "source", "how"):
            measured.add_column(column, overflow="fold")
        for key, entry in device.measured.items():
            if isinstance(entry, dict) and "value" in entry:
                rest = "; ".join(f"{k}: {v}" for k, v in entry.items() if k not in ("value", "source"))
                measured.add_row(key, format_field(key, entry["value"]), str(entry.get("source", "-")), rest)
            else:
                measured.add_row(key, str(entry), "-", "")
        console.print(measured)
    if device.source_file:
        console.print(Text(f"file: {device.source_file}", style="dim"))
