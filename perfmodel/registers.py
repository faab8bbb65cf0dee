"""Registers per thread for the occupancy calculation inside ``analyze``.

Sources, in order (the first that applies wins; the report names it as ``registers_source``):

1. ``"flag"``: ``--regs N`` / ``regs=N``.
2. ``"spec"``: the kernel spec's measured value for the device's compute capability (``registers: {"9.0": 32}``).
3. ``"ptxas"``: ``--regs auto`` - compile the kernel with the local ``nvcc -cubin -arch=sm_XY -Xptxas -v`` and the
   same ``#define``\\ s, and read ptxas' "Used N registers". Targets the installed nvcc supports (sm_75 and up
   for nvcc 13) only; the result is cached on disk under ``~/.cache/perfmodel/registers/`` (or
   ``$PERFMODEL_CACHE_DIR``) keyed by the source's hash, the defines, the entry and the architecture.
4. ``"estimate"``: :func:`estimate_registers` - a documented guess, flagged in the report.

``--regs auto`` on a device nvcc cannot target falls back to the spec value or the estimate and says why.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from perfmodel.errors import PerfmodelError

# ptxas -v on sm_90 gives 16-40 registers for the shipped kernels (nvcc 13); a 32-bit pointer ABI and the
# simpler ISA of CC 1.x gave ~10 for the same tiled matmul (the seed slides' examples use 10 and 11 registers
# per thread on G80). These are the estimates used when nothing better is known.
ESTIMATE_BY_CC_MAJOR = {1: 10, 2: 20}
ESTIMATE_DEFAULT = 32

_USED_REGISTERS = re.compile(r"Used (\d+) registers")


@dataclass(frozen=True)
class Registers:
    per_thread: int
    source: str            # "flag" | "spec" | "ptxas" | "estimate"
    note: str = ""

    def to_json(self) -> dict:
        return {"per_thread": self.per_thread, "source": self.source, "note": self.note}


def estimate_registers(device) -> int:
    """The documented estimate: 10 registers on CC 1.x, 20 on 2.x, 32 later (capped by the device max)."""
    major = device.cc[0]
    estimate = ESTIMATE_BY_CC_MAJOR.get(major, ESTIMATE_DEFAULT)
    return min(estimate, int(device.max_registers_per_thread))


def cache_dir() -> Path:
    root = os.environ.get("PERFMODEL_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "perfmodel"
    return base / "registers"


def _arch(device) -> str:
    major, minor = device.cc
    return f"sm_{major}{minor}"


def nvcc_path() -> str | None:
    return shutil.which("nvcc") or (
        "/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)


def _supported_arches(nvcc: str) -> set[str]:
    try:
        out = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return set()
    return {line.strip().replace("compute_", "sm_") for line in out.stdout.splitlines() if line.strip()}


def ptxas_registers(source_path: str | Path, entry: str, defines: dict, device, *, nvcc: str | None = None,
                    use_cache: bool = True) -> int:
    """Registers per thread that ptxas allocates for ``entry`` compiled for ``device``'s architecture.

    Raises PerfmodelError when nvcc is missing, does not support the architecture, or the compile fails."""
    nvcc = nvcc or nvcc_path()
    arch = _arch(device)
    if nvcc is None:
        raise PerfmodelError("--regs auto needs nvcc on the PATH (none found); pass --regs N instead")
    source = Path(source_path).read_text()
    key_text = json.dumps({"source": hashlib.sha256(source.encode()).hexdigest(), "entry": entry, "arch": arch,
                           "defines": sorted((str(k), str(v)) for k, v in (defines or {}).items())})
    key = hashlib.sha256(key_text.encode()).hexdigest()[:24]
    cached = cache_dir() / f"{key}.json"
    if use_cache and cached.exists():
        try:
            return int(json.loads(cached.read_text())["registers"])
        except (OSError, ValueError, KeyError):
            pass
    if arch not in _supported_arches(nvcc):
        raise PerfmodelError(f"--regs auto: the local nvcc ({nvcc}) cannot compile for {arch} "
                             f"({device.name}, CC {device.compute_capability}); pass --regs N")
    with tempfile.TemporaryDirectory(prefix="perfmodel-ptxas-") as tmp:
        # the source's own `#define NAME ...` lines would override -D: rewrite them in a copy (line for line)
        copy = Path(tmp) / Path(source_path).name
        copy.write_text(override_defines(source, defines or {}))
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-Xptxas", "-v", "-o", str(Path(tmp) / "k.cubin"),
               f"-I{Path(source_path).resolve().parent}"]
        cmd += [f"-D{name}={value}" for name, value in (defines or {}).items()]
        cmd.append(str(copy))
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as err:
            raise PerfmodelError(f"--regs auto: running nvcc failed: {err}") from None
    text = out.stdout + out.stderr
    if out.returncode != 0:
        raise PerfmodelError(f"--regs auto: nvcc failed on {source_path} for {arch}: {text.strip()[-800:]}")
    registers = _parse_ptxas(text, entry)
    if registers is None:
        raise PerfmodelError(f"--regs auto: no 'Used N registers' line for {entry} in ptxas' output")
    if use_cache:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_text(json.dumps({"registers": registers, "key": json.loads(key_text)}))
        except OSError:
            pass
    return registers


def override_defines(source: str, defines: dict) -> str:
    """``source`` with each ``#define NAME ...`` of a name in ``defines`` replaced by ``#define NAME value``."""
    for name, value in defines.items():
        source = re.sub(rf"^([ \t]*#[ \t]*define[ \t]+{re.escape(str(name))})\b.*$", rf"\g<1> {value}", source,
                        flags=re.MULTILINE)
    return source


def _parse_ptxas(text: str, entry: str) -> int | None:
    """The register count of ``entry`` in ptxas -v output (the function's block starts with
    ``Compiling entry function '<mangled or plain name>'``)."""
    blocks = re.split(r"ptxas info\s*: Compiling entry function", text)
    for block in blocks[1:]:
        header = block.split("\n", 1)[0]
        if entry in header:
            match = _USED_REGISTERS.search(block)
            if match:
                return int(match.group(1))
    match = _USED_REGISTERS.search(text)
    return int(match.group(1)) if match else None


def resolve_registers(device, *, regs: int | str | None, spec_registers: dict | None, source_path=None,
                      entry: str | None = None, defines: dict | None = None) -> Registers:
    """Apply the order flag > spec > ptxas (``regs="auto"``) > estimate."""
    if isinstance(regs, str) and regs.strip().lower() != "auto":
        try:
            regs = int(regs)
        except ValueError:
            raise PerfmodelError(f"--regs {regs!r}: expected a number of registers per thread or 'auto'") from None
    if isinstance(regs, int):
        if regs <= 0:
            raise PerfmodelError(f"--regs {regs}: registers per thread must be positive")
        return Registers(regs, "flag")
    spec_value = None
    for key, value in (spec_registers or {}).items():
        if str(key) == device.compute_capability:
            spec_value = int(value)
    if spec_value is not None and regs is None:
        return Registers(spec_value, "spec", f"the spec's value for CC {device.compute_capability}")
    if regs == "auto" or (isinstance(regs, str) and regs.lower() == "auto"):
        reason = ""
        if source_path is not None and entry is not None:
            try:
                return Registers(ptxas_registers(source_path, entry, defines or {}, device), "ptxas",
                                 f"nvcc -arch={_arch(device)} -Xptxas -v")
            except PerfmodelError as err:
                reason = str(err).removeprefix("--regs auto: ")
        if spec_value is not None:
            return Registers(spec_value, "spec", f"--regs auto unavailable ({reason}); the spec's value")
        return Registers(estimate_registers(device), "estimate",
                         f"--regs auto unavailable ({reason}); estimate for CC {device.compute_capability}")
    return Registers(estimate_registers(device), "estimate",
                     f"no measured value for CC {device.compute_capability}; documented estimate "
                     "(pass --regs N or --regs auto)")
