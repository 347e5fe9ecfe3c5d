"""The spellings every report shares: values, indices, a row's numbers and problems, verdicts.

Values are printed with the shortest text that reads back to the same value of their dtype
(``str(np.float32(x))`` for float32, ``repr`` for float64), so two values that differ never
print the same. Nothing here computes a statistic: every number comes from a ``TensorDiff``.
Text from input (keys, labels, titles, strings, error types) leaves here escaped by
``harness.escape.one_line``; the Markdown and HTML renderers add their own syntax escaping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.diff import Diff, TensorDiff
from harness.escape import clip, one_line, preview
from harness.record import CapturedError

SAMPLE_ELEMENTS = 6  # elements shown per value in a one-line summary


def format_value(value: Any, dtype: str | None = None) -> str:
    """Exact, short text for one value of the given dtype name; a string, an error message or
    a plain value from a file is quoted in at most ``escape.MAX_ECHO`` characters."""
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
        return preview(value)  # repr escapes what one_line escapes, and quotes
    if hasattr(value, "type") and hasattr(value, "message"):
        return f"{one_line(clip(str(value.type)))}({preview(value.message)})"
    return preview(value)


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


def ratio_text(ratio: float, exact: bool = False) -> str:
    """``400x tol``: a distance as a multiple of its tolerance (1x = at the limit); ``tol
    exact`` when the tolerance allows no difference (every difference is infinitely many)."""
    return "tol exact" if exact else f"{ratio:.3g}x tol"


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
    la, lb = (one_line(label) for label in labels)
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
    la, lb = (one_line(label) for label in labels)
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
# A systematic differ: the float64 runs judge it, so values within tolerance vanish nothing.
SYSTEMATIC_WORDS = Words(
    "DIFF", "within tolerance (a systematic divergence: the float64 runs judge it)", "DIFFER"
)


# A differ whose values are within tolerance while the float64 runs part: nothing vanished.
PARTING_WORDS = Words("DIFF", "within tolerance, but the float64 runs part", "DIFFER")


def words_for(kind: str, systematic: bool, parts64: bool = False) -> Words:
    """How a check's table reads: an agree check's, a differ's, or a systematic differ's (or a
    differ's whose float64 runs part, ``parts64``)."""
    if kind != "differ":
        return CHECK_WORDS
    if systematic:
        return SYSTEMATIC_WORDS
    return PARTING_WORDS if parts64 else DIVERGENCE_WORDS


PRECISION_KEYS = 3  # keys named in the one line for the keys within tolerance but formula


def precision_lines(precisions, explanation: str = "") -> list[str]:
    """The float64 verdicts of an agree or differ check as report lines: one sentence per key
    outside the tolerance, then one line for the keys within it whose float64 runs part
    (a small formula difference under the tolerance), then ``explanation``: whether the
    divergence switches explain those that part."""
    lines = [f"float64: {p.sentence}" for p in precisions if not p.within_tol]
    quiet = [p for p in precisions if p.within_tol and p.sentence]
    if len(quiet) == 1:
        lines.append(f"float64: {quiet[0].sentence}")
    elif quiet:
        shown = ", ".join(p.key for p in quiet[:PRECISION_KEYS])
        more = f" and {len(quiet) - PRECISION_KEYS} more" if len(quiet) > PRECISION_KEYS else ""
        worst = max(p.excess_bits for p in quiet)
        lines.append(
            f"float64: {len(quiet)} keys within tolerance, but formula: the float64 runs part "
            f"({shown}{more}; up to {worst:.1f} bits over rounding)"
        )
    return lines + ([explanation] if explanation else [])


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
    return one_line(f"{la} vs {lb}" + (f" ({diff.title})" if diff.title else ""))


def table_cells(row: TensorDiff, labels: tuple[str, str]) -> list[str]:
    """One row of the Markdown and HTML tables as plain text: key, status, n, max|diff|,
    max rel, max ulp, worst at, the two values there, details."""
    numeric = row.status in ("ok", "fail")  # compared values, not a structural problem
    return [
        one_line(row.key),
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


def value_summary(value: Any, limit: int = SAMPLE_ELEMENTS) -> str:
    """``float32[2] [4.0, 8.0]``, ``RuntimeError: ...``, ``True``: a value in one line."""
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        dtype = str(value.dtype)
        flat = value.reshape(-1)
        shown = [format_value(x.item(), dtype) for x in flat[:limit]]
        if value.ndim == 0:
            return f"{dtype} {shown[0]}"
        more = f", ... ({flat.size} values)" if flat.size > limit else ""
        return f"{dtype}{format_index(value.shape)} [{', '.join(shown)}{more}]"
    if isinstance(value, CapturedError):
        return one_line(f"{value.type}: {first_line(value.message, 160)}")
    return format_value(value)


def first_line(text: str, width: int) -> str:
    line = next(iter((text or "").strip().splitlines()), "")
    return line if len(line) <= width else line[: width - 3] + "..."
