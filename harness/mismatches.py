"""The elements behind a compared row: the first mismatched ones, the worst by tolerance ratio
and the worst by ULP among the elements where a ULP distance means something.

``harness.diff`` computes a row's statistics in one fast pass and keeps no element but the
worst; this module goes back to the two arrays when a report needs more: the failing rows of
a table (their first few mismatched elements) and the rows of ``agree`` checks (the summary's
headline). It never decides a verdict: the row's status and counts come from ``harness.diff``,
and the rule applied here to pick elements is the same (``|a - b| <= atol + rtol * |b|`` in the
inputs' dtype with atol rounded down to it, or within ``ulps``; NaN against NaN and equal
infinities agree), so the elements shown are the ones the row counted.

The tolerance ratio of an element is ``|a - b| / (atol + rtol * |b|)`` (with ``ulps`` set, the
smaller of that and ``ulp / ulps``): 1.0 is at the limit, above 1 a mismatch. Unlike a ULP
distance it does not explode next to zero, where 9e-10 against 0.0 is 800 million float32 ULP.
A ULP distance says how many floats lie between two values, which measures a relative error
only where the floats are dense and the tolerance is not absolute: elements whose magnitudes
are both below the dtype's smallest normal number or within ``atol`` of zero are left out of
the ULP maximum (and counted, so a report can say how many and why).

Work is chunked (``CHUNK`` elements), so memory stays bounded on memory-mapped inputs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.diff import TensorDiff, round_down, ulp_distance
from harness.float_dtypes import smallest_normal
from harness.tolerances import Tolerance
from harness.ulp import FLOAT_LAYOUT, wide_distance

CHUNK = 1 << 16
LIMIT = 5  # mismatched elements shown per failing row unless all are asked for
_FLOATS = ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True)
class Element:
    """One compared pair: where, both values, and how far apart (None where undefined)."""

    index: tuple[int, ...]
    a: Any
    b: Any
    abs_diff: float | int | None  # None when a NaN or an infinity is involved
    ulp: int | None  # float pairs with both values finite only
    ratio: float  # |a - b| over the tolerance; inf for a NaN / inf mismatch


@dataclass(frozen=True)
class RowDetail:
    """The elements behind one row of a ``Diff`` (``key`` and ``dtype`` name the row).

    ``first``: the first mismatched elements in C order (``LIMIT`` of them, or all);
    ``mismatched``: how many there are in all. ``worst_ratio``: the element with the largest
    tolerance ratio (None for an empty row). ``worst_ulp``: the finite pair with the largest
    ULP distance among the elements away from zero; ``ulp_left_out`` counts the finite pairs
    left out of it because both magnitudes are at most ``ulp_floor`` (atol, or the smallest
    normal number when that is larger).
    """

    key: str
    dtype: str
    mismatched: int
    first: tuple[Element, ...]
    worst_ratio: Element | None
    worst_ulp: Element | None
    ulp_left_out: int
    ulp_floor: float

    @property
    def max_ratio(self) -> float:
        return 0.0 if self.worst_ratio is None else self.worst_ratio.ratio


def inspect_row(a: Any, b: Any, row: TensorDiff, limit: int | None = LIMIT) -> RowDetail | None:
    """The detail of one row of ``diff_values(...)`` from the two values it compared.

    None when there is nothing element-wise to show: a structural failure (missing, dtype,
    shape) or values compared by equality only (strings, None, errors, lists).
    """
    if row.status not in ("ok", "fail"):
        return None
    a, b = _as_array(a), _as_array(b)
    if a is None or b is None or a.shape != b.shape or a.dtype != b.dtype:
        return None
    if a.dtype.name in _FLOATS:
        return _Scan(a, b, row, limit, floats=True).detail()
    if a.dtype.kind in "iub":
        return _Scan(a, b, row, limit, floats=False).detail()
    return None


def inspect_rows(
    left: Mapping[str, Any], right: Mapping[str, Any], rows: Iterable[TensorDiff], limit: int | None
) -> tuple[RowDetail, ...]:
    """:func:`inspect_row` of each row from the values under its key; rows without one dropped."""
    found = (inspect_row(left.get(r.key), right.get(r.key), r, limit) for r in rows)
    return tuple(d for d in found if d is not None)


def _as_array(value: Any) -> np.ndarray | None:
    if isinstance(value, np.ndarray | np.generic):
        return np.asarray(value)
    if isinstance(value, bool):
        return np.asarray(value)
    if isinstance(value, float):
        return np.asarray(value, np.float64)
    if isinstance(value, int):
        return np.asarray(value, np.int64)
    return None


class _Scan:
    """One chunked pass collecting the elements a ``RowDetail`` names."""

    def __init__(self, a: np.ndarray, b: np.ndarray, row: TensorDiff, limit, floats: bool):
        self.a, self.b, self.row, self.limit, self.floats = a, b, row, limit, floats
        self.tol: Tolerance = row.tol
        self.dtype = a.dtype.newbyteorder("=")
        if floats:
            self.atol = round_down(self.tol.atol, self.dtype)
            self.tiny = smallest_normal(self.dtype)
        else:
            self.atol, self.tiny = self.tol.atol, 0.0
        self.floor = max(float(self.tol.atol), self.tiny)
        self.first: list[int] = []
        self.mismatched = 0
        self.best_ratio, self.ratio_at = -1.0, -1
        self.best_ulp, self.ulp_at = -1, -1
        self.left_out = 0

    def detail(self) -> RowDetail:
        with np.errstate(all="ignore"):
            for start in range(0, self.a.size, CHUNK):
                stop = min(start + CHUNK, self.a.size)
                self._chunk(start, _flat(self.a, start, stop), _flat(self.b, start, stop))
        return RowDetail(
            key=self.row.key,
            dtype=self.dtype.name,
            mismatched=self.mismatched,
            first=tuple(self._element(i) for i in self.first),
            worst_ratio=self._element(self.ratio_at) if self.ratio_at >= 0 else None,
            worst_ulp=self._element(self.ulp_at) if self.ulp_at >= 0 else None,
            ulp_left_out=self.left_out,
            ulp_floor=self.floor,
        )

    def _chunk(self, start: int, ca: np.ndarray, cb: np.ndarray) -> None:
        ca, cb = ca.astype(self.dtype, copy=False), cb.astype(self.dtype, copy=False)
        if self.floats:
            bad, ratio, dist, meaningful = self._float_chunk(ca, cb)
        else:
            bad, ratio = self._int_chunk(ca, cb)
            dist = meaningful = None
        bad_at = np.flatnonzero(bad)
        self.mismatched += int(bad_at.size)
        if self.limit is None or len(self.first) < self.limit:
            room = bad_at.size if self.limit is None else self.limit - len(self.first)
            self.first += [start + int(i) for i in bad_at[:room]]
        k = int(np.argmax(ratio)) if ratio.size else -1
        if k >= 0 and float(ratio[k]) > self.best_ratio:
            self.best_ratio, self.ratio_at = float(ratio[k]), start + k
        if dist is not None and meaningful is not None:
            self._track_ulp(start, dist, meaningful)

    def _float_chunk(self, ca: np.ndarray, cb: np.ndarray):
        tol = self.tol
        absdiff = np.abs(ca - cb)  # in the inputs' dtype, as the row was judged
        absb = np.abs(cb)
        limit = absb * self.dtype.type(tol.rtol) + self.atol if tol.rtol else self.atol
        nan_a, nan_b = np.isnan(ca), np.isnan(cb)
        finite = np.isfinite(ca) & np.isfinite(cb)
        same_special = (nan_a & nan_b) | (~finite & ~nan_a & ~nan_b & (ca == cb))
        dist = _ulp(ca, cb, self.dtype)
        within = absdiff <= limit
        if tol.ulps is not None:
            within |= finite & (dist <= np.uint64(tol.ulps))
        bad = ~(same_special | (finite & within))
        ratio = _ratio(absdiff.astype(np.float64), absb.astype(np.float64), tol, dist)
        ratio[same_special] = 0.0
        ratio[~finite & ~same_special] = math.inf
        magnitude = np.maximum(np.abs(ca), absb).astype(np.float64)
        near_zero = finite & ((magnitude < self.tiny) | (magnitude <= tol.atol))
        self.left_out += int(np.count_nonzero(near_zero))
        return bad, ratio, dist, finite & ~near_zero

    def _int_chunk(self, ca: np.ndarray, cb: np.ndarray):
        """Bools compare exactly whatever the tolerance; integer distances are exact (uint64)
        and meet an absolute tolerance exactly. With ``rtol`` the limit is compared in float64,
        which can differ from ``harness.diff`` only within one part in 2**53 of the limit."""
        tol = self.tol
        exact = _int_distance(ca, cb)
        dist = exact.astype(np.float64)
        absb = np.abs(cb.astype(np.float64))
        if tol.is_exact or ca.dtype.kind == "b":
            bad = exact != 0
        elif not tol.rtol:
            bad = exact > np.uint64(min(math.floor(tol.atol), 2**64 - 1))
        else:
            bad = dist > tol.atol + tol.rtol * absb
        exact_tol = Tolerance.exact() if ca.dtype.kind == "b" else tol
        return bad, _ratio(dist, absb, exact_tol, None)

    def _track_ulp(self, start: int, dist: np.ndarray, meaningful: np.ndarray) -> None:
        candidates = np.flatnonzero(meaningful)
        if candidates.size == 0:
            return
        k = int(candidates[np.argmax(dist[candidates])])
        if int(dist[k]) > self.best_ulp:
            self.best_ulp, self.ulp_at = int(dist[k]), start + k

    def _element(self, flat: int) -> Element:
        index = tuple(int(i) for i in np.unravel_index(flat, self.a.shape))
        a, b = self.a[index].item(), self.b[index].item()
        if self.floats:
            finite = math.isfinite(a) and math.isfinite(b)
            abs_diff = abs(a - b) if finite else None
            ulp = ulp_distance(a, b, self.dtype.name) if finite else None
        else:
            abs_diff, ulp = abs(int(a) - int(b)), None
        if isinstance(a, bool):
            return Element(index, a, b, abs_diff, None, 0.0 if a == b else math.inf)
        ratio = self._ratio_of(a, b, abs_diff, ulp)
        return Element(index, a, b, abs_diff, ulp, ratio)

    def _ratio_of(self, a: Any, b: Any, abs_diff: Any, ulp: int | None) -> float:
        if abs_diff is None:  # NaN or infinity: equal specials agree, others never do
            same = (a != a and b != b) or a == b
            return 0.0 if same else math.inf
        scale = self.tol.atol + self.tol.rtol * abs(b)
        ratio = _divide(float(abs_diff), scale)
        if self.tol.ulps is not None and ulp is not None:
            ratio = min(ratio, _divide(float(ulp), float(self.tol.ulps)))
        return ratio


def _int_distance(ca: np.ndarray, cb: np.ndarray) -> np.ndarray:
    """|a - b| as uint64, exact for every pair of 64-bit (or narrower) integers."""
    wide = np.uint64 if ca.dtype.kind == "u" else np.int64
    a, b = ca.astype(wide), cb.astype(wide)
    ua, ub = a.view(np.uint64), b.view(np.uint64)
    return np.where(a >= b, ua - ub, ub - ua)


def _divide(x: float, scale: float) -> float:
    if x == 0:
        return 0.0
    return x / scale if scale > 0 else math.inf


def _ratio(absdiff: np.ndarray, absb: np.ndarray, tol: Tolerance, dist: np.ndarray | None):
    ratio = np.where(absdiff == 0, 0.0, absdiff / (tol.atol + tol.rtol * absb))
    if tol.ulps is not None and dist is not None:
        by_ulp = dist.astype(np.float64)
        by_ulp = np.where(by_ulp == 0, 0.0, by_ulp / tol.ulps if tol.ulps else math.inf)
        ratio = np.minimum(ratio, by_ulp)
    return np.nan_to_num(ratio, nan=math.inf)


def _ulp(ca: np.ndarray, cb: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """ULP distances as uint64 (exact; garbage where a value is not finite, masked later)."""
    itype, mask, _ = FLOAT_LAYOUT[dtype.name]
    return wide_distance(ca.view(itype), cb.view(itype), mask)


def _flat(x: np.ndarray, start: int, stop: int) -> np.ndarray:
    if x.flags.c_contiguous:
        return x.reshape(-1)[start:stop]
    return np.asarray(x.flat[start:stop])
