"""The elements behind a failing row in text: its first mismatched elements, the worst by ULP,
and the first line of a failure message (the key, the element, both values, the distance).

Every number comes from ``harness.mismatches`` data (``RowDetail`` / ``Element``) and the
row's ``TensorDiff``; ``harness.report.text`` puts these lines into tables and reports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from harness.diff import Diff, TensorDiff
from harness.escape import clip
from harness.mismatches import Element, RowDetail
from harness.report.cells import (
    format_index,
    format_value,
    mismatch_details,
    ratio_text,
    structural_problem,
)

INDENT = "    "
MORE_HINT = "-v or --all-mismatches shows every one"


def detail_lines(row: TensorDiff, detail: RowDetail, labels: tuple[str, str]) -> list[str]:
    """The first mismatched elements of a tensor row, a count of the rest, the worst by ULP
    among the elements away from zero.

    Value rows (Python scalars) name their only element on the row itself.
    """
    if row.kind != "tensor":
        return []
    dtype = row.dtype_a
    lines = [INDENT + "at " + element_text(e, labels, dtype, row.tol) for e in detail.first]
    more = detail.mismatched - len(detail.first)
    if more > 0:
        lines.append(f"{INDENT}... and {more} more mismatched ({MORE_HINT})")
    worst = detail.worst_ulp
    # Worth a line when it is further in ULP than the row's worst element, or when the row's
    # ulp= maximum came from elements next to zero (this is then the maximum away from zero).
    other = worst is not None and (worst.ulp != row.worst_ulp or worst.ulp != row.max_ulp)
    if other and worst.ulp:
        lines.append(
            f"{INDENT}worst ulp away from 0 at {element_text(worst, labels, dtype, row.tol)}"
            f"; {ulp_scope(detail, row.n)}"
        )
    return lines


def element_text(e: Element, labels: tuple[str, str], dtype: str | None, tol: Any) -> str:
    """``[1, 2]: torch=2.0 engine=2.5 |diff|=5.00e-01 2097152 ulp (5e+05x tol)``."""
    text = f"{format_index(e.index)}: {_pair(e, labels, dtype)} {_distance(e, dtype)}"
    return text + _measure(e, dtype, tol, "")


def _measure(e: Element, dtype: str | None, tol: Any, label: str) -> str:
    """`` (5e+05x tol)``, `` (tol exact)``, or nothing where a ratio says nothing more."""
    if e.abs_diff is None or dtype == "bool":
        return ""
    if tol.is_exact:
        return " (tol exact)"
    return f" ({ratio_text(e.ratio)}{label})"


def _pair(e: Element, labels: tuple[str, str], dtype: str | None) -> str:
    la, lb = labels
    return f"{la}={format_value(e.a, dtype)} {lb}={format_value(e.b, dtype)}"


def _distance(e: Element, dtype: str | None) -> str:
    """``|diff|=5.00e-01 2097152 ulp``, or which special value does not match."""
    if dtype == "bool":
        return "(not equal)"
    if e.abs_diff is None:
        return "NaN mismatch" if _is_nan(e.a) or _is_nan(e.b) else "inf mismatch"
    diff = e.abs_diff if isinstance(e.abs_diff, int) else f"{e.abs_diff:.2e}"
    return f"|diff|={diff}" + (f" {e.ulp} ulp" if e.ulp is not None else "")


def ulp_scope(detail: RowDetail, n: int) -> str:
    """Which elements a ULP maximum covers: ``over 30 of 32 (2 within atol of 0 left out)``."""
    if not detail.ulp_left_out:
        return f"over all {n}"
    return f"over {n - detail.ulp_left_out} of {n} ({left_out_text(detail.ulp_left_out)})"


def left_out_text(count: int) -> str:
    return f"{count} within atol of 0 or subnormal left out"


def _is_nan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


# ---------------------------------------------------------------------------------------------
# The first line of a failure: the key, the element, both values, the distance


def failure_headline(diff: Diff, details: Sequence[RowDetail] = ()) -> str | None:
    """``w[1]: torch=2.0 engine=2.5 |diff|=5.00e-01 2097152 ulp (5e+05x tol 1e-06); 2 of 6
    elements and 1 of 3 keys fail``: the first line of a failure message (the key cut at
    ``escape.MAX_ECHO`` characters: the table below names it in full).

    The failing row named is the first structural failure (missing, dtype, shape), else the
    row whose worst element is furthest beyond its tolerance. None when every row holds.
    """
    failures = diff.failures
    if not failures:
        return None
    by_key = {d.key: d for d in details}
    keys = f"{len(failures)} of {len(diff.rows)} keys fail"
    structural = [r for r in failures if structural_problem(r, diff.labels) is not None]
    if structural:
        row = structural[0]
        return f"{clip(row.key)}: {structural_problem(row, diff.labels)}; {keys}"
    row = max(failures, key=lambda r: _ratio_of(by_key.get(r.key)))
    detail = by_key.get(row.key)
    text = _row_headline(row, detail, diff.labels)
    if row.kind == "tensor" and detail is not None:
        return f"{text}; {detail.mismatched} of {row.n} elements and {keys}"
    return f"{text}; {keys}"


def _ratio_of(detail: RowDetail | None) -> float:
    return -1.0 if detail is None else detail.max_ratio


def _row_headline(row: TensorDiff, detail: RowDetail | None, labels: tuple[str, str]) -> str:
    la, lb = labels
    element = detail.worst_ratio if detail is not None else None
    if element is None:  # no element data: the row's own worst element
        a, b = format_value(row.a_worst, row.dtype_a), format_value(row.b_worst, row.dtype_b)
        where = "" if row.kind == "value" else format_index(row.worst_index)
        distance = "not equal" if row.max_abs is None else mismatch_details(row)
        return f"{clip(row.key)}{where}: {la}={a} {lb}={b} ({distance})"
    where = "" if row.kind == "value" else format_index(element.index)
    dtype = row.dtype_a
    text = f"{clip(row.key)}{where}: {_pair(element, labels, dtype)} {_distance(element, dtype)}"
    return text + _measure(element, dtype, row.tol, f" {row.tol.describe()}")
