"""Registers per thread for the occupancy calculation inside ``analyze``.

Sources, in order (the first that applies wins; the report names it as ``registers_source``):

1. ``"flag"``: ``--regs N`` / ``regs=N``.
2. ``"spec"``: the kernel spec's measured value for the device's compute capability (``registers: {"9.0": 32}``).
3. ``"compiler"``: what ptxas allocated when NVRTC compiled the kernel for the device's architecture (the same
   compile the simulation runs). Used by default when NVRTC targets the device's own architecture, and with
   ``--regs auto`` also when it compiled for the nearest architecture it supports (said in the note).
4. ``"estimate"``: :func:`estimate_registers` - a documented guess for devices NVRTC cannot target (CC < 7.5),
   flagged in the report.
"""
from __future__ import annotations

from dataclasses import dataclass

from perfmodel.errors import PerfmodelError

# A 32-bit pointer ABI and the simpler ISA of CC 1.x gave ~10 registers for the tiled matmul (the seed slides'
# examples use 10 and 11 registers per thread on G80); Fermi-era code ~20. Estimates for devices NVRTC 13
# cannot compile for.
ESTIMATE_BY_CC_MAJOR = {1: 10, 2: 20}
ESTIMATE_DEFAULT = 32


@dataclass(frozen=True)
class Registers:
    per_thread: int
    source: str            # "flag" | "spec" | "compiler" | "estimate"
    note: str = ""

    def to_json(self) -> dict:
        return {"per_thread": self.per_thread, "source": self.source, "note": self.note}


def estimate_registers(device) -> int:
    """The documented estimate: 10 registers on CC 1.x, 20 on 2.x, 32 later (capped by the device max)."""
    major = device.cc[0]
    estimate = ESTIMATE_BY_CC_MAJOR.get(major, ESTIMATE_DEFAULT)
    return min(estimate, int(device.max_registers_per_thread))


def resolve_registers(device, *, regs: int | str | None, spec_registers: dict | None,
                      compiled: dict | None = None) -> Registers:
    """Apply the order flag > spec > compiler > estimate. ``compiled``: the compile's figures
    (``registers``, ``arch``, ``arch_note``) for this device's architecture, when known."""
    auto = isinstance(regs, str) and regs.strip().lower() == "auto"
    if isinstance(regs, str) and not auto:
        try:
            regs = int(regs)
        except ValueError:
            raise PerfmodelError(f"--regs {regs!r}: expected a number of registers per thread or 'auto'") from None
    if isinstance(regs, int):
        if regs <= 0:
            raise PerfmodelError(f"--regs {regs}: registers per thread must be positive")
        if regs > int(device.max_registers_per_thread):
            raise PerfmodelError(f"--regs {regs}: {device.name} allows at most {device.max_registers_per_thread} "
                                 "registers per thread")
        return Registers(regs, "flag")
    spec_value = None
    for key, value in (spec_registers or {}).items():
        if str(key) == device.compute_capability:
            spec_value = int(value)
    if spec_value is not None and not auto:
        return Registers(spec_value, "spec", f"the spec's value for CC {device.compute_capability}")
    compiled = compiled or {}
    count = compiled.get("registers")
    exact = not compiled.get("arch_note")
    if count and (exact or auto):
        note = f"ptxas for {compiled.get('arch')} (NVRTC)"
        if not exact:
            note += f"; {compiled.get('arch_note')}"
        return Registers(min(int(count), int(device.max_registers_per_thread)), "compiler", note)
    why = compiled.get("arch_note") or f"no compiler figure for CC {device.compute_capability}"
    return Registers(estimate_registers(device), "estimate",
                     f"{why}; documented estimate for CC {device.compute_capability} (pass --regs N, or --regs auto "
                     "for the nearest architecture's compiler figure)")
