"""The summary statistics of a sidecar: min, max, mean, l2 over the finite values, nan / inf.

They are computed chunk by chunk (``SUMMARY_CHUNK`` elements, counted from the start of the
flat array), so that ``harness.sidecar`` can compute them in the same pass that writes and
hashes the data. Sums run in float64 with NumPy's pairwise summation within a chunk (not
BLAS), added chunk after chunk, so they do not depend on thread counts; mean and l2 are
rounded to 10 significant digits to keep golden diffs quiet (the sha256 is the exact
fingerprint).

A summary read back with a sidecar is checked against the data (:func:`summary_problem`):
the counts, min and max exactly, mean and l2 to 1e-9 of their scale (room for a different
summation order in another NumPy, none for a different number).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from harness.escape import clip, preview

SUMMARY_CHUNK = 1 << 16  # small enough to stay in L2 cache: several passes over each chunk
SUMMARY_KEYS = ("min", "max", "mean", "l2", "nan", "inf")
_REL = 1e-9  # mean and l2 agreement, relative to their scale
_SPECIALS = {"Infinity": math.inf, "-Infinity": -math.inf}  # how record.py writes overflows


class Summary:
    """Accumulates the statistics of consecutive chunks of one flat array."""

    def __init__(self) -> None:
        self.lo, self.hi = math.inf, -math.inf
        self.total = self.squares = 0.0
        self.count = self.nan = self.inf = 0
        self._buffer = np.empty(0, np.float64)

    def add(self, values: np.ndarray) -> None:
        """Add the next elements; chunk boundaries stay at multiples of SUMMARY_CHUNK as long
        as every call but the last passes a multiple of SUMMARY_CHUNK elements."""
        with np.errstate(over="ignore", invalid="ignore"):  # inf - inf, float64 overflow
            for start in range(0, values.size, SUMMARY_CHUNK):
                self._add_chunk(values[start : start + SUMMARY_CHUNK])

    def _add_chunk(self, part: np.ndarray) -> None:
        m = part.size
        if self._buffer.size < m:
            self._buffer = np.empty(m, np.float64)
        wide = self._buffer[:m]
        np.copyto(wide, part, casting="unsafe")
        total = float(wide.sum())
        if not math.isfinite(total):  # a NaN or inf in the chunk (or a float64 overflow)
            self._add_nonfinite(wide)
            return
        self.lo = min(self.lo, float(part.min()))
        self.hi = max(self.hi, float(part.max()))
        self.total += total
        self.squares += float(np.square(wide, out=wide).sum())
        self.count += m

    def _add_nonfinite(self, wide: np.ndarray) -> None:
        """The slow path: mask out NaN and infinities."""
        self.nan += int(np.count_nonzero(np.isnan(wide)))
        self.inf += int(np.count_nonzero(np.isinf(wide)))
        finite = wide[np.isfinite(wide)]
        if finite.size:
            self.lo = min(self.lo, float(finite.min()))
            self.hi = max(self.hi, float(finite.max()))
            self.total += float(finite.sum())
            self.squares += float(np.square(finite).sum())
            self.count += finite.size

    def result(self) -> dict:
        if not self.count:
            return {k: None for k in SUMMARY_KEYS[:4]} | {"nan": self.nan, "inf": self.inf}
        return {
            "min": self.lo,
            "max": self.hi,
            "mean": _round(self.total / self.count),
            "l2": _round(math.sqrt(self.squares)),
            "nan": self.nan,
            "inf": self.inf,
        }


def summarize(array: np.ndarray) -> dict:
    """min, max, mean, l2 over the finite values, and the nan / inf counts."""
    summary = Summary()
    summary.add(np.ascontiguousarray(array).reshape(-1))
    return summary.result()


def _round(x: float) -> float:
    return float(f"{x:.10g}")


def summary_problem(actual: Mapping[str, Any], given: Mapping[str, Any]) -> str | None:
    """None when ``given`` (a summary read from a file) states ``actual``, else the problem."""
    if not isinstance(given, Mapping):
        return f"summary must be an object, not {type(given).__name__}"
    missing = [k for k in SUMMARY_KEYS if k not in given]
    extra = clip(", ".join(sorted(str(k) for k in given if k not in SUMMARY_KEYS)))
    if missing or extra:
        return f"summary must have the keys {', '.join(SUMMARY_KEYS)}" + (
            f" (missing {', '.join(missing)})" if missing else f" (unknown {extra})"
        )
    for key in SUMMARY_KEYS:
        if not _states(key, actual[key], given[key], actual):
            return f"summary {key} is {preview(given[key])} but the data gives {actual[key]!r}"
    return None


def summary_form_problem(given: Mapping[str, Any]) -> str | None:
    """None when ``given`` has the form of a summary (no data to check it against), else
    the problem: the keys, numbers (or null, or an overflow's name) and non-negative counts."""
    if set(given) != set(SUMMARY_KEYS):
        return f"summary must have the keys {', '.join(SUMMARY_KEYS)}"
    for key in SUMMARY_KEYS:
        value = given[key]
        if key in ("nan", "inf"):
            if type(value) is not int or value < 0:
                return f"summary {key} must be a non-negative integer, not {preview(value)}"
        elif not (value is None or value in _SPECIALS or _is_number(value)):
            return f"summary {key} must be a number or null, not {preview(value)}"
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _states(key: str, actual: Any, given: Any, summary: Mapping[str, Any]) -> bool:
    if key in ("nan", "inf"):
        return type(given) is int and given == actual
    if actual is None or given is None:
        return actual is None and given is None
    given = _SPECIALS.get(given, given) if isinstance(given, str) else given
    if isinstance(given, bool) or not isinstance(given, (int, float)):
        return False
    if key in ("min", "max") or not (math.isfinite(actual) and math.isfinite(given)):
        return float(given) == actual
    # |mean| <= max(|min|, |max|), and summation errors scale with the values, not the mean
    scale = abs(actual) if key == "l2" else max(abs(summary["min"]), abs(summary["max"]))
    return abs(float(given) - actual) <= _REL * scale
