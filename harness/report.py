"""Render ``harness.diff.Diff`` data: terminal text (the study's style), JSON, Markdown.

Nothing here computes a statistic: every number comes from a ``TensorDiff``. The terminal
text is an API (tests pin it to the letter), so change it deliberately:

    == torch vs engine (train_step)
    logits                   n= 12  max|diff|=1.49e-08  ulp=1
    grads.fc1.weight         n= 32  max|diff|=3.73e-09  ulp=2
    worst=1.19e-07 tol=1e-06 OK

Values are printed with the shortest text that reads back to the same value of their dtype
(``str(np.float32(x))`` for float32, ``repr`` for float64), so two values that differ never
print the same.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.diff import STATUSES, Diff, TensorDiff
from harness.record import json_float, write_report
from harness.tolerances import TABLE_VERSION, Tolerance

SCHEMA_ID = "conformance-report/1"
MIN_NAME_WIDTH = 24
_SPECIAL_FLOATS = ["NaN", "Infinity", "-Infinity"]

# ---------------------------------------------------------------------------------------------
# Shared formatting


def format_value(value: Any, dtype: str | None = None) -> str:
    """Exact, short text for one value of the given dtype name."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if dtype == "float32":
            return str(np.float32(value))
        if dtype == "float16":
            return str(np.float16(value))
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return repr(value)
    if hasattr(value, "type") and hasattr(value, "message"):
        return f"{value.type}({value.message!r})"
    return repr(value)


def format_index(index: Sequence[int] | None) -> str:
    return "[" + ", ".join(str(i) for i in index or ()) + "]"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}es"


def max_abs_text(row: TensorDiff) -> str:
    if row.max_abs is None:  # dtypes compared by equality only (strings, complex)
        return "n/a"
    if isinstance(row.max_abs, int):
        return str(row.max_abs)
    return f"{row.max_abs:.2e}"


def mismatch_details(row: TensorDiff) -> str:
    """``1234 ulp, 3 mismatched, 1 NaN mismatch``: what is wrong at and beyond the worst."""
    parts = []
    if row.worst_ulp is not None:
        parts.append(f"{row.worst_ulp} ulp")
    parts.append(f"{row.mismatches} mismatched")
    if row.nan_mismatches:
        parts.append(_plural(row.nan_mismatches, "NaN mismatch"))
    if row.inf_mismatches:
        parts.append(_plural(row.inf_mismatches, "inf mismatch"))
    return ", ".join(parts)


def structural_problem(row: TensorDiff, labels: tuple[str, str]) -> str | None:
    """The text of a missing / dtype / shape failure, or None for a compared row."""
    la, lb = labels
    if row.status == "missing":
        return f"missing in {lb if row.missing_from == 'b' else la}"
    if row.status == "dtype":
        return f"dtype: {la}={row.dtype_a} {lb}={row.dtype_b}"
    if row.status == "shape":
        return f"shape: {la}={format_index(row.shape_a)} {lb}={format_index(row.shape_b)}"
    return None


def row_summary(row: TensorDiff, labels: tuple[str, str] = ("torch", "engine")) -> str:
    """A failing row in one line: ``2 of 6 differ; worst at [1]: torch=.. engine=.. (tol ..)``.

    For the op matrix and the fuzzer, whose reports list failures rather than tables.
    """
    problem = structural_problem(row, labels)
    if problem is not None:
        return problem
    la, lb = labels
    a, b = format_value(row.a_worst, row.dtype_a), format_value(row.b_worst, row.dtype_b)
    return (
        f"{row.mismatches} of {row.n} differ; worst at {format_index(row.worst_index)}: "
        f"{la}={a} {lb}={b} (tol {row.tol.describe()})"
    )


@dataclass(frozen=True)
class Words:
    """How a table reads: the word on a row outside tolerance, and the two verdicts."""

    row: str
    within: str
    beyond: str


CHECK_WORDS = Words("FAIL", "OK", "FAIL")
# A documented divergence (a ``differ`` check): differing is the expected outcome.
DIVERGENCE_WORDS = Words("DIFF", "SAME (divergence vanished)", "DIFFER as documented")
# A golden rewritten by --update-golden: the table says what changed, nothing failed.
UPDATE_WORDS = Words("CHANGED", "values within tolerance of the old golden", "CHANGED")


def verdict(diff: Diff, divergence: bool = False, *, words: Words | None = None) -> str:
    """``worst=1.19e-07 tol=1e-06 OK`` or ``... FAIL (2 of 14 keys)``.

    ``divergence`` (or other ``words``) changes the wording, for example
    ``DIFFER as documented (2 of 14 keys)`` for a ``differ`` check.
    """
    words = words or (DIVERGENCE_WORDS if divergence else CHECK_WORDS)
    worst = "n/a" if diff.worst is None else f"{diff.worst:.2e}"
    text = f"worst={worst} tol={diff.tol.describe()} "
    if diff.ok:
        return text + words.within
    return text + f"{words.beyond} ({len(diff.failures)} of {len(diff.rows)} keys)"


def header(diff: Diff) -> str:
    la, lb = diff.labels
    return f"{la} vs {lb}" + (f" ({diff.title})" if diff.title else "")


# ---------------------------------------------------------------------------------------------
# Text


def render_text(diff: Diff, divergence: bool = False, *, words: Words | None = None) -> str:
    """The study-style table: header, one row per key, verdict line (no trailing newline).

    ``divergence``: the table of a ``differ`` check; rows say ``DIFF`` where they would say
    ``FAIL``, and the verdict reads as the documented outcome. ``words`` sets another reading
    (``UPDATE_WORDS`` for a rewritten golden).
    """
    words = words or (DIVERGENCE_WORDS if divergence else CHECK_WORDS)
    width = max([MIN_NAME_WIDTH, *(len(row.key) for row in diff.rows)])
    lines = [f"== {header(diff)}"]
    lines += [_text_row(row, width, diff.labels, words.row) for row in diff.rows]
    lines.append(verdict(diff, words=words))
    return "\n".join(line.rstrip() for line in lines)


def _text_row(row: TensorDiff, width: int, labels: tuple[str, str], word: str = "FAIL") -> str:
    name = f"{row.key:<{width}} "
    problem = structural_problem(row, labels)
    if problem is not None:
        return name + f"{word} " + problem
    if row.kind == "value":
        return name + _value_cells(row, labels, word)
    return name + _tensor_cells(row, labels, word)


def _tensor_cells(row: TensorDiff, labels: tuple[str, str], word: str = "FAIL") -> str:
    text = f"n={row.n:3d}  max|diff|={max_abs_text(row)}"
    if row.max_ulp is not None:
        text += f"  ulp={row.max_ulp}"
    if row.matched_nans:
        text += f"  nan={row.matched_nans}"
    if row.ok:
        return text
    la, lb = labels
    a = format_value(row.a_worst, row.dtype_a)
    b = format_value(row.b_worst, row.dtype_b)
    where = format_index(row.worst_index)
    return text + f"  {word} at {where}: {la}={a} {lb}={b} ({mismatch_details(row)})"


def _value_cells(row: TensorDiff, labels: tuple[str, str], word: str = "FAIL") -> str:
    la, lb = labels
    a = format_value(row.a_worst, row.dtype_a)
    b = format_value(row.b_worst, row.dtype_b)
    text = f"value  {la}={a} {lb}={b}"
    if row.ok:
        return text
    if row.max_abs is None:
        return text + f"  {word} (not equal)"
    detail = f"|diff|={max_abs_text(row)}"
    if row.worst_ulp is not None:
        detail += f", {row.worst_ulp} ulp"
    return text + f"  {word} ({detail})"


# ---------------------------------------------------------------------------------------------
# JSON (machine-readable, versioned schema)


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
                        "kind": {"enum": ["agree", "differ", "expect"]},
                        "documented_by": {"type": "string"},
                        # differ: the engine object named by ``because``; differ / expect: the
                        # relation's text. Optional (added after format 1 shipped); else null.
                        "because": {"type": ["string", "null"]},
                        "relation": {"type": ["string", "null"]},
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
                        "status": {"type": "string"},
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


# ---------------------------------------------------------------------------------------------
# Markdown (GitHub-flavoured: a pull-request comment or a book chapter)

_MD_HEAD = (
    "| key | status | n | max\\|diff\\| | max rel | max ulp | worst at | {a} | {b} | details |\n"
    "|:--|:--|--:|--:|--:|--:|:--|--:|--:|:--|"
)


def render_markdown(diffs: Diff | Sequence[Diff]) -> str:
    """One section per Diff: a heading, a table with one row per key, the verdict."""
    diffs = [diffs] if isinstance(diffs, Diff) else list(diffs)
    return "\n\n".join(_markdown_section(d) for d in diffs) + "\n"


def _markdown_section(diff: Diff) -> str:
    la, lb = (_md(label) for label in diff.labels)
    lines = [f"### {_md(header(diff))}", "", _MD_HEAD.format(a=la, b=lb)]
    lines += [_markdown_row(row, diff.labels) for row in diff.rows]
    lines += ["", f"**{_md(verdict(diff))}**"]
    return "\n".join(lines)


def _markdown_row(row: TensorDiff, labels: tuple[str, str]) -> str:
    key, *cells = table_cells(row, labels)
    return "| " + " | ".join(_md(c) for c in [f"`{key}`", *cells]) + " |"


def table_cells(row: TensorDiff, labels: tuple[str, str]) -> list[str]:
    """One row of the Markdown and HTML tables as plain text: key, status, n, max|diff|,
    max rel, max ulp, worst at, the two values there, details."""
    numeric = row.status in ("ok", "fail")  # compared values, not a structural problem
    return [
        row.key,
        row.status.upper() if numeric else row.status,
        str(row.n) if numeric else "",
        max_abs_text(row) if numeric and row.max_abs is not None else "",
        f"{row.max_rel:.2e}" if numeric and row.max_rel is not None else "",
        "" if row.max_ulp is None else str(row.max_ulp),
        "" if row.worst_index is None else format_index(row.worst_index),
        format_value(row.a_worst, row.dtype_a) if row.a_worst is not None or numeric else "",
        format_value(row.b_worst, row.dtype_b) if row.b_worst is not None or numeric else "",
        _row_details(row, labels),
    ]


def _row_details(row: TensorDiff, labels: tuple[str, str]) -> str:
    """The details cell: the structural problem, or the mismatch summary."""
    problem = structural_problem(row, labels)
    if problem is not None:
        return problem
    if row.ok:
        return "bit-identical" if row.bit_identical else ""
    return mismatch_details(row)


def _md(text: str) -> str:
    """Escape what would break a table cell: pipes and line breaks."""
    return text.replace("\\|", "|").replace("|", "\\|").replace("\n", " ")


# ---------------------------------------------------------------------------------------------
# Case runs (harness.session / conftest.py): the same renderers over checks and goldens.
# ``case_data`` turns an outcome into plain picklable data (Diff objects are plain dataclasses),
# so worker processes can send it back; everything else here renders that data.


def case_data(outcome: Any) -> dict:
    """One case's results as plain data: checks, goldens, determinism, all with their Diffs.

    ``html_report`` adds what the HTML page shows beyond the tables: per check ``pattern`` /
    ``because`` / ``relation`` / ``samples`` (value summaries of differ checks) and ``env``
    (each side's recorded environment); per golden, ``env`` is the committed file's.
    """
    from harness import html_report

    case = outcome.case
    return {
        "case": case.name,
        "doc": case.doc,
        "ok": outcome.ok,
        "error": outcome.run.error,
        "checks": [
            {
                "label": r.check.label,
                "kind": r.check.kind,
                "ok": r.ok,
                "message": r.message,
                "documented_by": r.documented_by,
                "diff": r.diff,
                **html_report.check_details(outcome.run, r.check),
            }
            for r in outcome.checks
        ],
        "goldens": [
            {
                "side": side,
                "status": g.status,
                "ok": g.ok,
                "message": g.message,
                "diff": g.diff,
                "env": g.env,
            }
            for side, g in outcome.goldens.items()
        ],
        "nondeterministic": sorted(outcome.run.nondeterministic),
        "env": html_report.run_envs(outcome.run),
    }


def render_check(case_name: str, result: Any) -> str:
    """One check's verdict line, then its table (pytest's failure message)."""
    line = f"{case_name}: {result.check.label}: {'ok' if result.ok else 'FAIL'}: {result.message}"
    if getattr(result, "documented_by", ""):
        line += f" (documented: {result.documented_by})"
    table = _check_table(result.check.kind, result.diff)
    return line + (f"\n{table}" if table else "")


def _check_table(kind: str, diff: Diff | None) -> str:
    """A check's table; a ``differ`` check's reads as the documented outcome."""
    return "" if diff is None else render_text(diff, divergence=kind == "differ")


def render_golden(result: Any) -> str:
    """``golden case/side: status: message``, plus the table when values changed."""
    line = f"golden {result.case}/{result.side}: {result.status}: {result.message}"
    show = _golden_table(result.diff, result.ok, result.status)
    return line + (f"\n{show}" if show else "")


def _golden_table(diff: Diff | None, ok: bool, status: str) -> str:
    """The table of a golden comparison worth showing (it failed, or an update changed it)."""
    if diff is None or (ok and status != "updated"):
        return ""
    return render_text(diff, words=UPDATE_WORDS if status == "updated" else None)


def render_case(outcome: Any) -> str:
    return render_case_data(case_data(outcome))


def render_case_data(data: dict) -> str:
    """The terminal report of one case: every check with its table, then the goldens."""
    doc = (data.get("doc") or "").strip().splitlines()
    lines = [f"=== {data['case']}" + (f": {doc[0]}" if doc else "")]
    if data.get("error"):
        lines.append(f"FAIL: {data['error']}")
    for check in data["checks"]:
        mark = "ok  " if check["ok"] else "FAIL"
        extra = f" (documented: {check['documented_by']})" if check["documented_by"] else ""
        lines.append(f"[{mark}] {check['label']}: {check['message']}{extra}")
        table = _check_table(check["kind"], check["diff"])
        lines += [table] if table else []
    for golden in data["goldens"]:
        mark = "ok  " if golden["ok"] else "FAIL"
        lines.append(f"[{mark}] golden:{golden['side']}: {golden['status']}: {golden['message']}")
        table = _golden_table(golden["diff"], golden["ok"], golden["status"])
        lines += [table] if table else []
    lines.append(f"{data['case']}: {'OK' if data['ok'] else 'FAIL'}")
    return "\n".join(lines)


def render_summary(results: Sequence[dict], stale: Sequence[Any] = ()) -> str:
    """Totals over every case, the failing items by name, stale goldens, the final verdict."""
    checks = [c for d in results for c in d["checks"]]
    goldens = [g for d in results for g in d["goldens"]]
    documented = sum(1 for c in checks if c["kind"] == "differ" and c["ok"])
    failed = [f"{d['case']}::{c['label']}" for d in results for c in d["checks"] if not c["ok"]]
    failed += [
        f"{d['case']}::golden:{g['side']}" for d in results for g in d["goldens"] if not g["ok"]
    ]
    failed += [f"{d['case']}: {d['error']}" for d in results if d.get("error")]
    ulps = [ulp for d in results for ulp, _ in agree_ulps(d)]
    lines = [
        f"== summary: {len(results)} cases, {len(checks)} checks "
        f"({sum(c['ok'] for c in checks)} hold, {documented} documented divergences), "
        f"{len(goldens)} goldens ({sum(g['ok'] for g in goldens)} ok); "
        f"worst agree ulp={max(ulps) if ulps else 'n/a'}"
    ]
    lines += [f"FAIL {name}" for name in failed]
    lines += [f"stale golden: {path} (no case file; delete it)" for path in stale]
    bad_cases = sum(1 for d in results if not d["ok"])
    lines.append("OK" if not bad_cases else f"FAIL ({bad_cases} of {len(results)} cases)")
    return "\n".join(lines)


def agree_ulps(data: dict) -> list[tuple[int, str]]:
    """``(max_ulp, "case::key")`` of every row of the case's ``agree`` checks that has one."""
    return [
        (row.max_ulp, f"{data['case']}::{row.key}")
        for c in data["checks"]
        if c["kind"] == "agree" and c["diff"] is not None
        for row in c["diff"].rows
        if row.max_ulp is not None
    ]


def cases_json(results: Sequence[dict]) -> dict:
    """The ``--json`` document of a case run: every Diff in ``comparisons``, cases index them."""
    comparisons: list[Diff] = []

    def index(diff: Diff | None) -> int | None:
        if diff is None:
            return None
        comparisons.append(diff)
        return len(comparisons) - 1

    cases = [
        {
            "case": d["case"],
            "ok": d["ok"],
            "doc": d.get("doc") or "",
            "seconds": d.get("seconds"),
            "error": d.get("error"),
            "checks": [
                {
                    **{k: c[k] for k in ("label", "kind", "ok", "message", "documented_by")},
                    "because": c.get("because"),
                    "relation": c.get("relation"),
                    "comparison": index(c["diff"]),
                }
                for c in d["checks"]
            ],
            "goldens": [
                {
                    **{k: g[k] for k in ("side", "status", "ok", "message")},
                    "comparison": index(g["diff"]),
                }
                for g in d["goldens"]
            ],
        }
        for d in results
    ]
    doc = render_json(comparisons, meta={"mode": "cases"})
    doc["ok"] = all(d["ok"] for d in results)
    doc["cases"] = cases
    return doc


def cases_markdown(results: Sequence[dict]) -> str:
    """Every case as a Markdown section: its checks, each with its table."""
    parts = []
    for d in results:
        doc = (d.get("doc") or "").strip().splitlines()
        parts.append(f"## {_md(d['case'])}: {'OK' if d['ok'] else 'FAIL'}")
        if doc:
            parts.append(_md(doc[0]))
        for c in d["checks"]:
            parts.append(
                f"- `{_md(c['label'])}`: {'ok' if c['ok'] else 'FAIL'}: {_md(c['message'])}"
            )
            if c["diff"] is not None:
                parts.append(render_markdown(c["diff"]).rstrip("\n"))
    return "\n\n".join(parts) + "\n"


def write_reports(
    args: Any,
    *,
    json_doc: Callable[[], dict],
    markdown: Callable[[], str],
    html: Callable[[], str],
) -> None:
    """Write the report files ``args`` asks for (``--json``, ``--markdown``, ``--html``).

    The one writer of both modes (two files, a case run); each renderer runs only when its
    file was asked for. Files are written atomically; their folder must exist (OSError).
    """
    requested = (
        (getattr(args, "json", None), lambda: _strict_json(json_doc())),
        (getattr(args, "markdown", None), markdown),
        (getattr(args, "html", None), html),
    )
    for path, render in requested:
        if path:
            text = render()
            try:
                write_report(path, text)
            except OSError as exc:  # name the file the user gave, not a temporary one
                raise OSError(exc.errno, exc.strerror, str(path)) from exc


def _strict_json(doc: dict) -> str:
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def write_requested(results: Sequence[dict], args: Any) -> None:
    """Write the report files a case run asked for."""
    from harness import html_report

    write_reports(
        args,
        json_doc=lambda: cases_json(results),
        markdown=lambda: cases_markdown(results),
        html=lambda: html_report.render_cases_html(results),
    )


class Progress:
    """One line per finished case on ``stream``: running count, case verdict, elapsed time."""

    def __init__(self, total: int, stream: Any = None) -> None:
        self.total, self.done = total, 0
        self.stream = stream if stream is not None else sys.stderr
        self._clock = time.perf_counter
        self.started = self._clock()

    def advance(self, data: dict) -> None:
        self.done += 1
        elapsed = self._clock() - self.started
        verdict = "ok" if data.get("ok") else "FAIL"
        seconds = data.get("seconds")
        took = f" {seconds:.2f}s" if isinstance(seconds, (int, float)) else ""
        width = len(str(self.total))
        self.stream.write(
            f"{self._bar()}[{self.done:{width}d}/{self.total}] {data.get('case', '?')} {verdict}"
            f"{took} (elapsed {elapsed:.1f}s)\n"
        )
        self.stream.flush()

    def _bar(self, width: int = 20) -> str:
        """``#####........... `` on an interactive terminal; nothing in logs and pipes."""
        if not getattr(self.stream, "isatty", lambda: False)():
            return ""
        filled = width * self.done // max(self.total, 1)
        return "#" * filled + "." * (width - filled) + " "


# ---------------------------------------------------------------------------------------------
# HTML: the page layout lives in ``harness.html_report`` (case runs: ``render_cases_html``).


def render_html(diffs: Diff | Sequence[Diff], *, meta: dict | None = None) -> str:
    """A self-contained HTML page: one table per Diff with a log2-ULP histogram per tensor."""
    from harness import html_report

    diffs = [diffs] if isinstance(diffs, Diff) else list(diffs)
    return html_report.render_diffs_html(diffs, meta=meta)
