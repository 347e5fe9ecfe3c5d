"""Summary-only goldens: keys a case marks as bulky (``GOLDEN_SUMMARY``, or the fixture's
``conformance.check(values, summary=[...])``) keep no data in the golden.

Their golden entry is a sidecar reference without its file (``record.SummaryOnly``): dtype,
shape, the sha256 of the bytes and the summary statistics of ``harness.summary``. A fresh value
is compared with it as follows:

- equal dtype, shape and sha256: the bytes are the golden's, so the fresh value stands in for
  the golden's and the row is a real, bit-identical comparison;
- a different dtype or shape (or no tensor): the row says so, no value is compared;
- a different sha256: the golden has no elements to compare, so the row compares the four
  statistics min, max, mean and l2 (at the key's dtype, with the key's golden tolerance) and
  requires equal NaN and infinity counts. The row is never bit-identical, so under the
  golden's own fingerprint it fails as any other golden that is not bit-identical; the
  report says that only the summary was compared (:func:`summary_note`).

``.obtained`` files and ``out/`` keep the full data, so a reviewer sees the elements.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import numpy as np

from harness import record, sidecar
from harness.diff import Diff, RowStatus
from harness.float_dtypes import is_float, numpy_dtype
from harness.tolerances import Tolerance

STATISTICS = ("min", "max", "mean", "l2")  # compared within tolerance
COUNTS = ("nan", "inf")  # compared exactly


def summarised_keys(patterns: Sequence[str], values: Mapping[str, Any]) -> tuple[str, ...]:
    """The tensor keys of ``values`` that match one of the glob ``patterns``."""
    return tuple(
        key
        for key, value in values.items()
        if isinstance(value, np.ndarray) and any(fnmatchcase(key, p) for p in patterns)
    )


@dataclass(frozen=True)
class StandIns:
    """Golden and fresh mappings ``diff_values`` can compare, and what was replaced.

    ``by_summary``: key -> the golden's entry, for keys whose rows compare statistics only;
    ``counts_differ``: those of them whose NaN or infinity counts differ.
    """

    golden: dict[str, Any]
    fresh: dict[str, Any]
    by_summary: dict[str, record.SummaryOnly]
    counts_differ: frozenset[str]


def stand_ins(golden: Mapping[str, Any], fresh: Mapping[str, Any]) -> StandIns:
    """Replace every summary-only golden entry (and its fresh value) by comparable values."""
    golden, fresh = dict(golden), dict(fresh)
    by_summary, counts_differ = {}, set()
    for key, entry in golden.items():
        if not isinstance(entry, record.SummaryOnly):
            continue
        value = fresh.get(key)
        if not _same_layout(entry, value):  # the row reports dtype, shape or kind
            golden[key] = np.broadcast_to(np.zeros((), numpy_dtype(entry.dtype)), entry.shape)
        elif sidecar.sha256_of(value) == entry.sha256:
            golden[key] = value  # the same bytes
        else:
            summary = sidecar.summarize(value)
            golden[key] = _statistics(entry.summary, entry.dtype)
            fresh[key] = _statistics(summary, entry.dtype)
            by_summary[key] = entry
            if any(summary[c] != entry.summary[c] for c in COUNTS):
                counts_differ.add(key)
    return StandIns(golden, fresh, by_summary, frozenset(counts_differ))


def _same_layout(entry: record.SummaryOnly, value: Any) -> bool:
    return (
        isinstance(value, np.ndarray)
        and value.dtype == numpy_dtype(entry.dtype)
        and value.shape == entry.shape
    )


def _statistics(summary: Mapping[str, Any], dtype: str) -> np.ndarray:
    """min, max, mean, l2 at the key's float dtype (float64 for integers and bools), so the
    key's own tolerance applies; a statistic of no finite element (None) is NaN."""
    wide = [np.nan if summary[s] is None else float(summary[s]) for s in STATISTICS]
    return np.array(wide, numpy_dtype(dtype) if is_float(numpy_dtype(dtype)) else np.float64)


def tol_for(stand: StandIns, base: Callable[[str, str], Tolerance]) -> Callable:
    """``base`` (``golden_tol_for``), resolving a summarised key's tolerance at its own dtype
    (its statistics row is float64 for integer tensors)."""

    def resolve(key: str, dtype: str) -> Tolerance:
        entry = stand.by_summary.get(key)
        return base(key, entry.dtype if entry is not None else dtype)

    return resolve


def mark(diff: Diff, stand: StandIns) -> Diff:
    """The rows of summarised keys: their real dtype and shape, never bit-identical, and
    failing when the NaN or infinity counts differ."""
    if not stand.by_summary:
        return diff
    rows = []
    for row in diff.rows:
        entry = stand.by_summary.get(row.key)
        if entry is not None:
            failed = row.key in stand.counts_differ
            status = RowStatus.FAIL if failed else row.status
            shapes = {"shape_a": entry.shape, "shape_b": entry.shape}
            dtypes = {"dtype_a": entry.dtype, "dtype_b": entry.dtype}
            row = dataclasses.replace(row, **shapes, **dtypes, status=status, bit_identical=False)
        rows.append(row)
    return dataclasses.replace(diff, rows=tuple(rows), ok=all(r.ok for r in rows))


def summary_note(stand: StandIns, diff: Diff) -> str:
    """What a report must say when statistics stood in for elements ("" when none did)."""
    if not stand.by_summary:
        return ""
    failing = {row.key for row in diff.failures}
    keys = ", ".join(record.one_line(k) for k in stand.by_summary)
    if not failing & set(stand.by_summary):
        return (
            f"summary only (GOLDEN_SUMMARY) for {keys}: sha256 differs; min/max/mean/l2 within"
            " tolerance and nan/inf counts equal; elements not compared"
        )
    return (
        f"summary only (GOLDEN_SUMMARY) for {keys}: sha256 differs; only min/max/mean/l2"
        " and the nan/inf counts were compared"
    )
