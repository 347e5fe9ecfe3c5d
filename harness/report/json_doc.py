"""The machine-readable report (``--json``): a dict following ``REPORT_SCHEMA``, and a small
validator for it. Strict RFC 8259 JSON once dumped with ``allow_nan=False``: non-finite numbers
are spelled as in side files (``record.json_float``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.diff import STATUSES, Diff, TensorDiff
from harness.record import json_float
from harness.report.cells import verdict
from harness.report.trajectory import trajectory_json, trajectory_schema
from harness.results import CaseReport, CheckKind, GoldenStatus
from harness.tolerances import TABLE_VERSION, Tolerance

SCHEMA_ID = "conformance-report/1"
_SPECIAL_FLOATS = ["NaN", "Infinity", "-Infinity"]


def render_json(diffs: Diff | Sequence[Diff], *, meta: dict | None = None) -> dict:
    """A JSON-able dict following ``REPORT_SCHEMA``; non-finite numbers become strings.

    Dump it with ``json.dumps(..., allow_nan=False)``: the output is strict RFC 8259 JSON.
    """
    diffs = [diffs] if isinstance(diffs, Diff) else list(diffs)
    return {
        "schema": SCHEMA_ID,
        "tolerance_table_version": TABLE_VERSION,
        "ok": all(d.ok for d in diffs),
        "meta": _json_value(meta or {}),
        "comparisons": [_json_diff(d) for d in diffs],
    }


def _json_diff(diff: Diff) -> dict:
    return {
        "title": diff.title,
        "labels": list(diff.labels),
        "ok": diff.ok,
        "worst": _json_value(diff.worst),
        "tol": _json_tol(diff.tol),
        "verdict": verdict(diff),
        "rows": [_json_row(row) for row in diff.rows],
    }


def _json_tol(tol: Tolerance) -> dict:
    return {
        "atol": tol.atol,
        "rtol": tol.rtol,
        "ulps": tol.ulps,
        "reason": tol.reason,
        "label": tol.describe(),
    }


def _json_row(row: TensorDiff) -> dict:
    return {
        "key": row.key,
        "kind": row.kind,
        "status": row.status,
        "dtype_a": row.dtype_a,
        "dtype_b": row.dtype_b,
        "shape_a": _json_value(row.shape_a),
        "shape_b": _json_value(row.shape_b),
        "n": row.n,
        "max_abs": _json_value(row.max_abs),
        "max_rel": _json_value(row.max_rel),
        "max_ulp": row.max_ulp,
        "worst_index": _json_value(row.worst_index),
        "a_worst": _json_value(row.a_worst),
        "b_worst": _json_value(row.b_worst),
        "worst_ulp": row.worst_ulp,
        "mismatches": row.mismatches,
        "nan_mismatches": row.nan_mismatches,
        "inf_mismatches": row.inf_mismatches,
        "matched_nans": row.matched_nans,
        "ulp_histogram": list(row.ulp_histogram),
        "bit_identical": row.bit_identical,
        "tol": _json_tol(row.tol),
    }


def _json_value(value: Any) -> Any:
    """Values as in the record format: non-finite floats as strings, errors as objects."""
    if isinstance(value, float):
        return json_float(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if hasattr(value, "type") and hasattr(value, "message"):
        return {"error": value.type, "message": value.message}
    if isinstance(value, np.generic):
        return _json_value(value.item())
    return repr(value)


_OPT_NUMBER = {"anyOf": [{"type": "number"}, {"enum": _SPECIAL_FLOATS}, {"type": "null"}]}
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


def cases_json(reports: Sequence[CaseReport]) -> dict:
    """The ``--json`` document of a case run: every Diff in ``comparisons``, cases index them."""
    comparisons: list[Diff] = []

    def index(diff: Diff | None) -> int | None:
        if diff is None:
            return None
        comparisons.append(diff)
        return len(comparisons) - 1

    cases = [
        {
            "case": r.case,
            "ok": r.ok,
            "doc": r.doc,
            "seconds": r.seconds,
            "error": r.error,
            "checks": [
                {
                    "label": c.label,
                    "kind": c.kind,
                    "ok": c.ok,
                    "message": c.message,
                    "documented_by": c.documented_by,
                    "because": c.because,
                    "relation": c.relation,
                    "trajectory": None
                    if c.trajectory is None
                    else trajectory_json(c.trajectory, _json_tol(c.trajectory.tol)),
                    "comparison": index(c.diff),
                }
                for c in r.checks
            ],
            "goldens": [
                {
                    "side": g.side,
                    "status": g.status,
                    "ok": g.ok,
                    "message": g.message,
                    "comparison": index(g.diff),
                }
                for g in r.goldens.values()
            ],
        }
        for r in reports
    ]
    doc = render_json(comparisons, meta={"mode": "cases"})
    doc["ok"] = all(r.ok for r in reports)
    doc["cases"] = cases
    return doc
