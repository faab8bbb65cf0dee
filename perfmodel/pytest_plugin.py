"""pytest plugin: assert modelled performance in your own tests.

Installed with perfmodel (entry point ``pytest11: perfmodel``), so with perfmodel installed you can write::

    def test_tiled_matmul_is_fast_on_g80(assert_perf):          # the fixture ...
        assert_perf("matmul_tiled", "g80", {"TILE_WIDTH": 16, "Width": 64},
                    predicted_gflops__min=300, occupancy__occupancy__min=0.5, correct=True)

    from perfmodel.pytest_plugin import assert_perf               # ... or the plain function

A keyword is a dotted path of the ``perfmodel analyze --json`` document with ``__`` for the dots, ending in
``__min`` or ``__max`` for a limit; without that suffix (``correct=True``, ``bound="dram"``) it requires
equality. Thresholds mean exactly what they mean in a `perfmodel check` budget. On failure an
``AssertionError`` lists every broken limit with the value and by how much it misses. It returns the analysis
JSON for further assertions. Importing this module is cheap: perfmodel's analyzer loads on first use.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

try:
    import pytest
except ImportError:  # the plain function works without pytest, e.g. in a script
    pytest = None

_SUFFIXES = ("min", "max")


def thresholds_from_keywords(keywords: Mapping[str, Any]) -> dict[str, Any]:
    """``{"predicted_gflops__min": 300, "correct": True}`` -> ``{"predicted_gflops": Threshold(min=300),
    "correct": Threshold(equals=True)}``."""
    from perfmodel.check.budget import Threshold

    limits: dict[str, dict[str, Any]] = {}
    for keyword, value in keywords.items():
        parts = keyword.split("__")
        if any(not part for part in parts):
            raise TypeError(f"assert_perf: keyword '{keyword}' is not a metric path (use '__' between fields)")
        if len(parts) > 1 and parts[-1] in _SUFFIXES:
            limits.setdefault(".".join(parts[:-1]), {})[parts[-1]] = value
        else:
            limits.setdefault(".".join(parts), {})["equals"] = value
    try:
        return {metric: Threshold.model_validate(limit) for metric, limit in limits.items()}
    except Exception as err:  # pydantic's ValidationError: a wrong keyword value in the test itself
        raise TypeError(f"assert_perf: invalid limits {limits}: {err}") from None


def assert_perf(kernel: str, device: str, params: Mapping[str, int | float] | None = None, *,
                regs: int | str | None = None, sample: int | None = None,
                analyze: Callable[..., Any] | None = None, **limits: Any) -> dict[str, Any]:
    """Analyze ``kernel`` on ``device`` with ``params`` and assert every limit given as a keyword.

    Returns the analysis JSON. Raises ``AssertionError`` naming each broken limit, ``TypeError`` for a
    keyword that is malformed or addresses a field the analysis does not have."""
    from perfmodel.check.budget import lookup
    from perfmodel.report.jsonout import to_jsonable

    if not limits:
        raise TypeError("assert_perf: give at least one limit, e.g. predicted_gflops__min=300")
    thresholds = thresholds_from_keywords(limits)
    if analyze is None:
        from perfmodel.analysis import analyze
    analysis = to_jsonable(analyze(kernel, device, params=dict(params) if params else None, regs=regs,
                                   sample=sample))
    failures = []
    for metric, threshold in thresholds.items():
        try:
            passed, message = threshold.evaluate(metric, lookup(analysis, metric))
        except KeyError as err:
            raise TypeError(f"assert_perf: {metric}: {err.args[0]}") from None
        if not passed:
            failures.append(message)
    if failures:
        setting = ", ".join(f"{k}={v}" for k, v in (params or {}).items()) or "default params"
        lines = [f"perfmodel: {kernel} on {device} ({setting}) misses {len(failures)} of "
                 f"{len(thresholds)} limit{'s' if len(thresholds) > 1 else ''}:"]
        lines += [f"  - {message}" for message in failures]
        raise AssertionError("\n".join(lines))
    return analysis


if pytest is not None:

    @pytest.fixture(name="assert_perf")
    def _assert_perf_fixture() -> Callable[..., dict[str, Any]]:
        """``assert_perf(kernel, device, params, predicted_gflops__min=..., ...)``: see perfmodel.pytest_plugin."""
        return assert_perf
