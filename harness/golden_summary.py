"""Summary-only goldens: keys a case marks as bulky (``GOLDEN_SUMMARY``, or the fixture's
``conformance.check(values, summary=[...])``) keep no data in the golden.

Their golden entry is a sidecar reference without its file (``record.SummaryOnly``): dtype,
shape, the sha256 of the bytes and the summary statistics of ``harness.summary``. A fresh value
is compared with it as follows:

- equal dtype, shape and sha256: the bytes are the golden's, so the fresh value stands in for
  the golden's and the row is a real, bit-identical comparison;
- a different dtype or shape (or no tensor): the row says so, no value is compared;
- a different sha256: the golden has no elements to compare, so one row per statistic
  (``params.w:max``) compares min, max, mean and l2 (at the key's dtype, with the key's golden
  tolerance) and the NaN and infinity counts (exactly). These rows are never bit-identical,
  so under the golden's own fingerprint the key fails as any golden that is not
  bit-identical; the report says that only the summary was compared (:func:`summary_note`).

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
from harness.diff import Diff
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

    A key compared by its summary is replaced by one 0-d value per statistic, named
    ``<key>:<statistic>`` (``params.w:max``), so a report names the statistic that moved and
    never shows an index that could be read as an element's. ``by_summary``: stand-in name ->
    ``(key, the golden's entry)``.
    """

    golden: dict[str, Any]
    fresh: dict[str, Any]
    by_summary: dict[str, tuple[str, record.SummaryOnly]]

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys compared by their summary, in order."""
        return tuple(dict.fromkeys(key for key, _ in self.by_summary.values()))


def stand_ins(golden: Mapping[str, Any], fresh: Mapping[str, Any]) -> StandIns:
    """Replace every summary-only golden entry (and its fresh value) by comparable values."""
    golden, fresh = dict(golden), dict(fresh)
    replaced: dict[str, tuple[dict, dict]] = {}
    for key, entry in golden.items():
        if not isinstance(entry, record.SummaryOnly):
            continue
        value = fresh.get(key)
        if not _same_layout(entry, value):  # the row reports dtype, shape or kind
            golden[key] = np.broadcast_to(np.zeros((), numpy_dtype(entry.dtype)), entry.shape)
        elif sidecar.sha256_of(value) == entry.sha256:
            golden[key] = value  # the same bytes
        else:
            ours = sidecar.summarize(value)
            replaced[key] = (_statistics(key, entry, entry.summary), _statistics(key, entry, ours))
    by_summary = {name: (key, golden[key]) for key, (g, _) in replaced.items() for name in g}
    clash = sorted(set(by_summary) & (set(golden) | set(fresh)))
    if clash:
        raise ValueError(f"{clash[0]}: a key named as a summary statistic of another key")
    return StandIns(
        _expand(golden, {k: g for k, (g, _) in replaced.items()}),
        _expand(fresh, {k: f for k, (_, f) in replaced.items()}),
        by_summary,
    )


def _expand(values: dict[str, Any], replaced: Mapping[str, dict]) -> dict[str, Any]:
    """``values`` with each replaced key's statistics in its place."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        out.update(replaced.get(key, {key: value}))
    return out


def _same_layout(entry: record.SummaryOnly, value: Any) -> bool:
    return (
        isinstance(value, np.ndarray)
        and value.dtype == numpy_dtype(entry.dtype)
        and value.shape == entry.shape
    )


def _statistics(key: str, entry: record.SummaryOnly, summary: Mapping[str, Any]) -> dict:
    """``<key>:<statistic>`` -> a 0-d value: min, max, mean, l2 at the key's float dtype
    (float64 for integers and bools), so the key's own tolerance applies, NaN for a statistic
    of no finite element (None); the nan / inf counts as int64."""
    dtype = numpy_dtype(entry.dtype)
    dtype = dtype if is_float(dtype) else np.dtype(np.float64)
    out = {}
    for name in STATISTICS:
        out[f"{key}:{name}"] = np.array(np.nan if summary[name] is None else summary[name], dtype)
    for name in COUNTS:
        out[f"{key}:{name}"] = np.array(summary[name], np.int64)
    return out


def tol_for(stand: StandIns, base: Callable[[str, str], Tolerance]) -> Callable:
    """``base`` (``golden_tol_for``) for every key; a statistic gets its key's tolerance at
    the key's dtype, a count is compared exactly."""

    def resolve(name: str, dtype: str) -> Tolerance:
        found = stand.by_summary.get(name)
        if found is None:
            return base(name, dtype)
        if name.endswith(tuple(f":{c}" for c in COUNTS)):
            return Tolerance.exact("a NaN or infinity count of a summary-only golden")
        return base(found[0], found[1].dtype)

    return resolve


def mark(diff: Diff, stand: StandIns) -> Diff:
    """A statistic's row is never bit-identical: it stands for a key whose bytes differ
    from the golden's (equal sha256 would have compared the key itself)."""
    if not stand.by_summary:
        return diff
    rows = tuple(
        dataclasses.replace(row, bit_identical=False) if row.key in stand.by_summary else row
        for row in diff.rows
    )
    return dataclasses.replace(diff, rows=rows)


def summary_note(stand: StandIns, diff: Diff) -> str:
    """What a report must say when statistics stood in for elements ("" when none did)."""
    if not stand.by_summary:
        return ""
    failing = {row.key for row in diff.failures}
    keys = ", ".join(record.one_line(k) for k in stand.keys)
    if not failing & set(stand.by_summary):
        return (
            f"summary only (GOLDEN_SUMMARY) for {keys}: sha256 differs; min/max/mean/l2 within"
            " tolerance and nan/inf counts equal; elements not compared"
        )
    return (
        f"summary only (GOLDEN_SUMMARY) for {keys}: sha256 differs; only min/max/mean/l2"
        " and the nan/inf counts were compared"
    )
