"""Where the shipped device profiles and kernel specs are.

In a source checkout (and an editable install) they are the repository's top-level ``devices/`` and
``kernels_spec/`` folders; a regular ``pip install .`` copies them into the data packages
``perfmodel_shipped.devices`` and ``perfmodel_shipped.kernels_spec`` (see setup.py / pyproject.toml).
"""
from __future__ import annotations

import importlib.util
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
