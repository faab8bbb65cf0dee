"""The kernel-spec format as JSON Schema (draft 2020-12), for editors: ``perfmodel kernels schema`` prints it and
``docs/spec.schema.json`` is its committed copy (a test keeps them equal).

It is generated from the pydantic models of :mod:`perfmodel.spec`, with the forms those models accept *before*
validation written out: an initialiser is ``zeros`` or ``{random: {seed, low, high}}``, not the internal
``{kind: ...}``; a reference is ``NAME`` or ``{name: NAME, ...options}``. The schema checks the shape of a spec;
``perfmodel`` itself checks the rest (names in expressions, the entry kernel in the source, ...).
"""
from __future__ import annotations

from typing import Any

SCHEMA_ID = "https://perfmodel.invalid/spec.schema.json"
_EXPR = {"anyOf": [{"type": "number"}, {"type": "string"}],
         "description": "a number or an expression over the params (perfmodel.expr)"}
_NO_OPTIONS = {"anyOf": [{"type": "null"}, {"type": "object", "maxProperties": 0}]}


def _init_schema() -> dict:
    forms = {
        "zeros": _NO_OPTIONS,
        "ones": _NO_OPTIONS,
        "arange": {"anyOf": [{"type": "null"}, {"type": "object", "additionalProperties": False,
                                                "properties": {"start": _EXPR, "step": _EXPR}}]},
        "random": {"anyOf": [{"type": "null"}, {"type": "object", "additionalProperties": False,
                                                "properties": {"seed": {"type": "integer"}, "low": _EXPR,
                                                               "high": _EXPR}}]},
        "constant": _EXPR,
        "values": {"type": "array", "items": {"type": "number"}},
        "file": {"type": "string", "description": "a .npy file, relative to the spec"},
        "generator": {"type": "object", "required": ["name"],
                      "properties": {"name": {"type": "string"}, "field": {"type": "string"}}},
    }
    return {
        "description": "An initialiser: zeros | ones | arange | random, or a one-key mapping "
                       "({random: {seed, low, high}}, {arange: {start, step}}, {constant: EXPR}, {values: [...]}, "
                       "{file: PATH.npy}, {generator: {name, field, ...}}).",
        "oneOf": [
            {"type": "string", "enum": ["zeros", "ones", "arange", "random"]},
            {"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
             "properties": forms},
        ],
    }


def _output_schema() -> dict:
    return {
        "type": "object", "additionalProperties": False, "required": ["arg", "reference"],
        "description": "An output array checked after the run as numpy.isclose(rtol, atol) does: a NaN matches a NaN, integers are compared exactly.",
        "properties": {
            "arg": {"type": "string", "description": "an array arg"},
            "reference": {"anyOf": [
                {"type": "string", "description": "a built-in reference name, module:function, "
                                                  "path/to/file.py:function, or path/to/expected.npy"},
                {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}},
                 "description": "{name: NAME, ...options}"}]},
            "options": {"type": "object"},
            "rtol": _EXPR, "atol": _EXPR,
        },
    }


def spec_json_schema() -> dict[str, Any]:
    from perfmodel.spec import SpecModel

    schema = SpecModel.model_json_schema(mode="validation")
    defs = schema["$defs"]
    defs["InitSpec"] = _init_schema()
    defs["OutputSpec"] = _output_schema()
    from perfmodel.sim.texture import CHANNEL_DTYPES
    from perfmodel.spec import DTYPES

    from perfmodel.compile.signature import VECTOR_TYPES

    defs["ArgSpec"]["properties"]["dtype"] = {"enum": sorted(DTYPES) + sorted(VECTOR_TYPES)}
    defs["ConstantSpec"]["properties"]["dtype"] = {"enum": sorted(DTYPES), "default": "float32"}
    defs["TextureSpec"]["properties"]["dtype"] = {
        "enum": sorted(k for k, v in DTYPES.items() if v.name in CHANNEL_DTYPES), "default": "float32"}
    schema["properties"]["description"] = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None,
                                           "description": "one line (optional)"}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "title": "perfmodel kernel spec", **schema}
