"""The JSON Schema of the ``--json`` report (``REPORT_SCHEMA``, id ``conformance-report/1``)
and a small validator for it (``schema_errors``); ``harness.report.json_doc`` builds the
documents. Fields may be added within schema 1 (optional ones); consumers ignore keys they do
not know."""

from __future__ import annotations

from typing import Any

from harness.diff import STATUSES
from harness.report.localise import localise_schema
from harness.report.trajectory import trajectory_schema
from harness.results import CheckKind, GoldenStatus

SCHEMA_ID = "conformance-report/1"
_SPECIAL_FLOATS = ["NaN", "Infinity", "-Infinity"]
_OPT_NUMBER = {"anyOf": [{"type": "number"}, {"enum": _SPECIAL_FLOATS}, {"type": "null"}]}
_PRECISION = {
    "type": ["array", "null"],
    "items": {
        "type": "object",
        "required": ["key", "verdict", "excess_bits", "within_tolerance"],
        "additionalProperties": False,
        "properties": {
            "key": {"type": "string"},
            "verdict": {"enum": ["rounding", "formula"]},
            "excess_bits": _OPT_NUMBER,
            "within_tolerance": {"type": "boolean"},
        },
    },
}
_OPT_INT = {"type": ["integer", "null"]}
_COUNT = {"type": "integer", "minimum": 0}
_OPT_SHAPE = {"anyOf": [{"type": "array", "items": _COUNT}, {"type": "null"}]}
_TOL = {
    "type": "object",
    "required": ["atol", "rtol", "ulps", "reason", "label"],
    "additionalProperties": False,
    "properties": {
        "atol": {"type": "number", "minimum": 0},
        "rtol": {"type": "number", "minimum": 0},
        "ulps": {"type": ["integer", "null"], "minimum": 0},
        "reason": {"type": "string"},
        "label": {"type": "string"},
    },
}
_ROW_PROPERTIES: dict[str, Any] = {
    "key": {"type": "string"},
    "kind": {"enum": ["tensor", "value"]},
    "status": {"enum": list(STATUSES)},
    "dtype_a": {"type": ["string", "null"]},
    "dtype_b": {"type": ["string", "null"]},
    "shape_a": _OPT_SHAPE,
    "shape_b": _OPT_SHAPE,
    "n": _COUNT,
    "max_abs": _OPT_NUMBER,
    "max_rel": _OPT_NUMBER,
    "max_ulp": _OPT_INT,
    "worst_index": _OPT_SHAPE,
    "a_worst": {},  # any JSON value: a number, a special-float string, a string, an error...
    "b_worst": {},
    "worst_ulp": _OPT_INT,
    "mismatches": _COUNT,
    "nan_mismatches": _COUNT,
    "inf_mismatches": _COUNT,
    "matched_nans": _COUNT,
    "ulp_histogram": {"type": "array", "items": _COUNT},
    "bit_identical": {"type": "boolean"},
    "tol": _TOL,
}
_ELEMENT_PROPERTIES: dict[str, Any] = {
    "index": {"type": "array", "items": _COUNT},
    "a": {},
    "b": {},
    "abs_diff": _OPT_NUMBER,
    "ulp": _OPT_INT,
    "ratio": _OPT_NUMBER,
}
_ELEMENT = {
    "type": "object",
    "required": list(_ELEMENT_PROPERTIES),
    "additionalProperties": False,
    "properties": _ELEMENT_PROPERTIES,
}
_OPT_ELEMENT = {"anyOf": [_ELEMENT, {"type": "null"}]}
_DETAIL = {  # the elements behind one row (harness.mismatches.RowDetail)
    "type": "object",
    "required": ["key", "dtype", "mismatched", "first", "worst_ratio", "worst_ulp"],
    "additionalProperties": False,
    "properties": {
        "key": {"type": "string"},
        "dtype": {"type": "string"},
        "mismatched": _COUNT,
        "first": {"type": "array", "items": _ELEMENT},
        "worst_ratio": _OPT_ELEMENT,
        "worst_ulp": _OPT_ELEMENT,
        "ulp_left_out": _COUNT,
        "ulp_floor": {"type": "number", "minimum": 0},
    },
}
_RAISED = {
    "anyOf": [
        {"type": "null"},
        {
            "type": "object",
            "required": ["side", "type", "message", "rerun", "omitted", "frames"],
            "additionalProperties": False,
            "properties": {
                "side": {"type": "string"},
                "type": {"type": "string"},
                "message": {"type": "string"},
                "rerun": {"type": "boolean"},
                "omitted": _COUNT,
                "frames": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["file", "line", "function", "code"],
                        "additionalProperties": False,
                        "properties": {
                            "file": {"type": "string"},
                            "line": _COUNT,
                            "function": {"type": "string"},
                            "code": {"type": "string"},
                        },
                    },
                },
            },
        },
    ]
}
_SPOT = {
    "anyOf": [
        {"type": "null"},
        {
            "type": "object",
            "required": ["case", "check", "key", *_ELEMENT_PROPERTIES],
            "additionalProperties": False,
            "properties": {
                "case": {"type": "string"},
                "check": {"type": "string"},
                "key": {"type": "string"},
                **_ELEMENT_PROPERTIES,
            },
        },
    ]
}
_HEADLINE = {  # the summary's worst agree element by tolerance ratio, and by ULP away from 0
    "type": "object",
    "required": ["worst_ratio", "worst_ulp", "ulp_left_out", "elements"],
    "additionalProperties": False,
    "properties": {
        "worst_ratio": _SPOT,
        "worst_ulp": _SPOT,
        "ulp_left_out": _COUNT,
        "elements": _COUNT,
    },
}
_RESULT = {
    "ok": {"type": "boolean"},
    "message": {"type": "string"},
    "comparison": {"type": ["integer", "null"], "minimum": 0},  # index into "comparisons"
}
_CASES = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["case", "ok", "doc", "seconds", "error", "checks", "goldens"],
        "additionalProperties": False,
        "properties": {
            "case": {"type": "string"},
            "ok": {"type": "boolean"},
            "doc": {"type": "string"},
            "seconds": {"type": ["number", "null"]},
            "error": {"type": ["string", "null"]},
            "raised": _RAISED,  # optional (added within schema 1): the traceback of ``error``
            # a case with LOCALISE: the per-module table and verdict (optional, added within
            # schema 1); else null, with ``localise_error`` when a side raised under capture
            "localisation": localise_schema(_OPT_NUMBER),
            "localise_error": {"type": ["string", "null"]},
            "checks": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["label", "kind", "documented_by", *_RESULT],
                    "additionalProperties": False,
                    "properties": {
                        "label": {"type": "string"},
                        "kind": {"enum": list(CheckKind)},
                        "documented_by": {"type": "string"},
                        # differ: the engine object named by ``because``; differ / expect: the
                        # relation's text. Optional (added after format 1 shipped); else null.
                        "because": {"type": ["string", "null"]},
                        "relation": {"type": ["string", "null"]},
                        # trajectory checks and systematic differs: the per-step series and
                        # verdicts (optional, added after format 1 shipped); else null.
                        "trajectory": trajectory_schema(_TOL, _OPT_NUMBER),
                        # agree and differ checks of cases with float64 reruns: the float64
                        # verdict per key (optional, added after format 1 shipped); else null.
                        "precision": _PRECISION,
                        # with it, the explained runs' word on the keys that part; else null.
                        "explanation": {"type": ["string", "null"]},
                        **_RESULT,
                    },
                },
            },
            "goldens": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["side", "status", *_RESULT],
                    "additionalProperties": False,
                    "properties": {
                        "side": {"type": "string"},
                        "status": {"enum": list(GoldenStatus)},
                        **_RESULT,
                    },
                },
            },
        },
    },
}
REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "Conformance comparison report",
    "type": "object",
    "required": ["schema", "tolerance_table_version", "ok", "meta", "comparisons"],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "tolerance_table_version": {"type": "integer", "minimum": 1},
        "ok": {"type": "boolean"},
        "meta": {"type": "object"},
        "cases": _CASES,  # only in case-run reports
        "headline": _HEADLINE,  # only in case-run reports
        "comparisons": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["title", "labels", "ok", "worst", "tol", "verdict", "rows"],
                "additionalProperties": False,
                "properties": {
                    "title": {"type": "string"},
                    "labels": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 2,
                        "maxItems": 2,
                    },
                    "ok": {"type": "boolean"},
                    "worst": _OPT_NUMBER,
                    "tol": _TOL,
                    "verdict": {"type": "string"},
                    "details": {"type": "array", "items": _DETAIL},  # optional: failing rows
                    "rows": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": list(_ROW_PROPERTIES),
                            "additionalProperties": False,
                            "properties": _ROW_PROPERTIES,
                        },
                    },
                },
            },
        },
    },
}


_JSON_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


def schema_errors(doc: Any, schema: dict = REPORT_SCHEMA, path: str = "$") -> list[str]:
    """Validate ``doc`` against the subset of JSON Schema that ``REPORT_SCHEMA`` uses.

    A stand-in for the ``jsonschema`` package (not a dependency): type, const, enum, anyOf,
    required, properties, additionalProperties, items, minItems/maxItems, minimum.
    """
    errors: list[str] = []
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else types
        if not any(_JSON_TYPES[t](doc) for t in names):
            return [f"{path}: expected {' or '.join(names)}, got {type(doc).__name__}"]
    if "const" in schema and doc != schema["const"]:
        errors.append(f"{path}: expected {schema['const']!r}")
    if "enum" in schema and doc not in schema["enum"]:
        errors.append(f"{path}: {doc!r} not one of {schema['enum']}")
    if "anyOf" in schema and all(schema_errors(doc, s, path) for s in schema["anyOf"]):
        errors.append(f"{path}: {doc!r} matches none of the allowed forms")
    if "minimum" in schema and _JSON_TYPES["number"](doc) and doc < schema["minimum"]:
        errors.append(f"{path}: {doc!r} < minimum {schema['minimum']}")
    if isinstance(doc, dict):
        errors += _object_errors(doc, schema, path)
    if isinstance(doc, list):
        errors += _array_errors(doc, schema, path)
    return errors


def _object_errors(doc: dict, schema: dict, path: str) -> list[str]:
    props = schema.get("properties", {})
    errors = [f"{path}: missing {k!r}" for k in schema.get("required", []) if k not in doc]
    if schema.get("additionalProperties") is False:
        errors += [f"{path}: unexpected {k!r}" for k in doc if k not in props]
    for key, sub in props.items():
        if key in doc:
            errors += schema_errors(doc[key], sub, f"{path}.{key}")
    return errors


def _array_errors(doc: list, schema: dict, path: str) -> list[str]:
    errors = []
    if len(doc) < schema.get("minItems", 0) or len(doc) > schema.get("maxItems", len(doc)):
        errors.append(f"{path}: {len(doc)} items, outside the allowed count")
    if "items" in schema:
        for i, item in enumerate(doc):
            errors += schema_errors(item, schema["items"], f"{path}[{i}]")
    return errors
