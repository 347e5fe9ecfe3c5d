"""The machine-readable report (``--json``): a dict following ``REPORT_SCHEMA``, and a small
validator for it. Strict RFC 8259 JSON once dumped with ``allow_nan=False``: non-finite numbers
are spelled as in side files (``record.json_float``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.diff import Diff, TensorDiff
from harness.mismatches import Element, RowDetail
from harness.record import json_float
from harness.report.cells import verdict
from harness.report.localise import localise_json
from harness.report.schema import REPORT_SCHEMA, SCHEMA_ID, schema_errors
from harness.report.trajectory import trajectory_json
from harness.results import CaseReport, SideError, Spot, headline
from harness.tolerances import TABLE_VERSION, Tolerance

__all__ = ["REPORT_SCHEMA", "SCHEMA_ID", "cases_json", "render_json", "schema_errors"]


def render_json(
    diffs: Diff | Sequence[Diff],
    *,
    meta: dict | None = None,
    details: Sequence[Sequence[RowDetail]] | None = None,
) -> dict:
    """A JSON-able dict following ``REPORT_SCHEMA``; non-finite numbers become strings.

    ``details[i]``: the elements behind rows of ``diffs[i]`` (``harness.mismatches``), listed
    under ``comparisons[i].details``. Dump with ``json.dumps(..., allow_nan=False)``: the
    output is strict RFC 8259 JSON.
    """
    diffs = [diffs] if isinstance(diffs, Diff) else list(diffs)
    details = list(details or [])
    details += [()] * (len(diffs) - len(details))
    return {
        "schema": SCHEMA_ID,
        "tolerance_table_version": TABLE_VERSION,
        "ok": all(d.ok for d in diffs),
        "meta": _json_value(meta or {}),
        "comparisons": [_json_diff(d, rows) for d, rows in zip(diffs, details, strict=True)],
    }


def _json_diff(diff: Diff, details: Sequence[RowDetail] = ()) -> dict:
    doc = {
        "title": diff.title,
        "labels": list(diff.labels),
        "ok": diff.ok,
        "worst": _json_value(diff.worst),
        "tol": _json_tol(diff.tol),
        "verdict": verdict(diff),
        "rows": [_json_row(row) for row in diff.rows],
    }
    if details:
        doc["details"] = [_json_detail(d) for d in details]
    return doc


def _json_detail(detail: RowDetail) -> dict:
    element = _json_element
    return {
        "key": detail.key,
        "dtype": detail.dtype,
        "mismatched": detail.mismatched,
        "first": [element(e) for e in detail.first],
        "worst_ratio": None if detail.worst_ratio is None else element(detail.worst_ratio),
        "worst_ulp": None if detail.worst_ulp is None else element(detail.worst_ulp),
        "ulp_left_out": detail.ulp_left_out,
        "ulp_floor": detail.ulp_floor,
    }


def _json_element(e: Element) -> dict:
    return {
        "index": list(e.index),
        "a": _json_value(e.a),
        "b": _json_value(e.b),
        "abs_diff": _json_value(e.abs_diff),
        "ulp": e.ulp,
        "ratio": _json_value(e.ratio),
    }


def _json_precision(precisions) -> list[dict] | None:
    """An agree or differ check's float64 verdict per key (None without float64 reruns)."""
    if not precisions:
        return None
    return [
        {
            "key": p.key,
            "verdict": str(p.verdict),
            "excess_bits": json_float(p.excess_bits),
            "within_tolerance": p.within_tol,
        }
        for p in precisions
    ]


def _json_raised(raised: SideError | None) -> dict | None:
    if raised is None:
        return None
    return {
        "side": raised.side,
        "type": raised.type,
        "message": raised.message,
        "rerun": raised.rerun,
        "omitted": raised.omitted,
        "frames": [
            {"file": f.file, "line": f.line, "function": f.function, "code": f.code}
            for f in raised.frames
        ],
    }


def _json_headline(reports: Sequence[CaseReport]) -> dict:
    head = headline(reports)

    def spot(s: Spot | None) -> dict | None:
        if s is None:
            return None
        return {"case": s.case, "check": s.check, "key": s.key, **_json_element(s.element)}

    return {
        "worst_ratio": spot(head.worst_ratio),
        "worst_ulp": spot(head.worst_ulp),
        "ulp_left_out": head.ulp_left_out,
        "elements": head.elements,
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


def cases_json(reports: Sequence[CaseReport], *, timings: bool = False) -> dict:
    """The ``--json`` document of a case run: every Diff in ``comparisons``, cases index them.

    ``seconds`` (wall-clock time) is null unless ``timings``: without it the document is
    byte-identical for the same results, like every other output.
    """
    comparisons: list[Diff] = []
    details: list[Sequence[RowDetail]] = []

    def index(diff: Diff | None, rows: Sequence[RowDetail]) -> int | None:
        if diff is None:
            return None
        comparisons.append(diff)
        details.append(rows)
        return len(comparisons) - 1

    cases = [
        {
            "case": r.case,
            "ok": r.ok,
            "doc": r.doc,
            "seconds": r.seconds if timings else None,
            "error": r.error,
            "raised": _json_raised(r.raised),
            "localisation": localise_json(r.localisation),
            "localise_error": r.localise_error,
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
                    "precision": _json_precision(c.precision),
                    "explanation": c.explanation or None,
                    "comparison": index(c.diff, c.details),
                }
                for c in r.checks
            ],
            "goldens": [
                {
                    "side": g.side,
                    "status": g.status,
                    "ok": g.ok,
                    "message": g.message,
                    "comparison": index(g.diff, g.details),
                }
                for g in r.goldens.values()
            ],
        }
        for r in reports
    ]
    doc = render_json(comparisons, meta={"mode": "cases"}, details=details)
    doc["ok"] = all(r.ok for r in reports)
    doc["cases"] = cases
    doc["headline"] = _json_headline(reports)
    return doc
