"""Where the shipped device profiles and kernel specs are.

In a source checkout (and an editable install) they are the repository's top-level ``devices/`` and
``kernels_spec/`` folders; a regular ``pip install .`` copies them into the data packages
``perfmodel_shipped.devices`` and ``perfmodel_shipped.kernels_spec`` (see setup.py / pyproject.toml).
"""
from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable
from functools import cache
from pathlib import Path


@cache
def shipped_dir(kind: str) -> Path:
    """Folder of shipped data: ``kind`` is ``"devices"`` or ``"kernels_spec"``."""
    repo = Path(__file__).resolve().parent.parent / kind
    if repo.is_dir():
        return repo
    spec = importlib.util.find_spec(f"perfmodel_shipped.{kind}")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            return Path(location)
    raise FileNotFoundError(f"perfmodel's shipped {kind}/ folder is missing from this installation")


def search_path(env_var: str, kind: str) -> list[Path]:
    """Folders searched for a name (``--device NAME``, a kernel spec name): the ``$env_var`` entries
    (os.pathsep-separated, blank ones skipped) first, then the shipped ``kind/`` folder where this installation has
    it (user folders still work without it)."""
    folders = [Path(p) for p in os.environ.get(env_var, "").split(os.pathsep) if p.strip()]
    try:
        folders.append(shipped_dir(kind))
    except FileNotFoundError:
        pass
    return folders


def yaml_files(folders: Iterable[Path]) -> dict[str, Path]:
    """Name (file stem) -> ``.yaml``/``.yml`` file in ``folders``, an earlier folder winning over a later one (so a
    user folder can shadow a shipped name); folders that do not exist are skipped."""
    found: dict[str, Path] = {}
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix in (".yaml", ".yml") and path.is_file():
                found.setdefault(path.stem, path)
    return found
