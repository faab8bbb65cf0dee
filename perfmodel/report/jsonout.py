"""The one way a command prints its ``--json`` document: exactly one JSON document on stdout."""
from __future__ import annotations

import json
import math
import sys
from typing import Any

import numpy as np


def to_jsonable(value: Any) -> Any:
    """Recursively convert numpy scalars/arrays, tuples, pydantic models and dataclasses to JSON types.

    Non-finite floats become ``None`` (JSON has no inf/nan)."""
    if hasattr(value, "to_json") and callable(value.to_json):
        return to_jsonable(value.to_json())
    if hasattr(value, "model_dump") and callable(value.model_dump):
        return to_jsonable(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    if hasattr(value, "__dataclass_fields__"):
        return {k: to_jsonable(getattr(value, k)) for k in value.__dataclass_fields__}
    return value


def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(document), indent=2, sort_keys=False) + "\n")
    sys.stdout.flush()
