"""Per-tensor comparison statistics as data (``TensorDiff`` / ``Diff``); no text here.

``report.py`` renders what this module computes; ``compare.py``, ``case.py`` and the golden
logic all call :func:`diff_values`, so every surface shows the same numbers.

Checks per key, in this order (as pytest-regressions does): present on both sides, then dtype,
then shape, then values. Float32 against float64 is a ``dtype`` failure, never a silent cast.

The agreement rule (see ``harness.tolerances``): ``|a - b| <= atol + rtol * |b|``, or, when
``tol.ulps`` is set, ULP distance ``<= ulps``. NaN against NaN at the same place agrees (counted
as ``matched_nans``); NaN against anything else is a NaN mismatch; an infinity agrees only with
the same infinity, anything else is an inf mismatch. +0 and -0 agree and are 0 ULP apart.

ULP distance is the difference of the ordered-integer images of the float bits (``-(bits &
0x7f..f)`` for negative floats, ``bits`` otherwise). NaN and inf never get a ULP distance.

Speed and memory: float tensors are scanned once, in chunks of ``CHUNK`` elements, into
preallocated buffers. Two facts keep the common chunk in same-width integer arithmetic:
if every ``|a - b| < 2`` in a chunk, all its ordered differences fit the signed integer of
the float's width (a difference can only exceed that range for opposite signs with one
magnitude >= 2.0, whose bit pattern is 0x40..0); and if ``max |a - b|`` over the chunk is
finite, no input in the chunk is NaN or inf (NaN or inf inputs always give a NaN or inf
difference). ``|a - b|`` and the agreement rule are evaluated in the inputs' dtype, as
``torch.isclose`` does (atol rounded down to that dtype); a difference too large for the
dtype (``-max`` against ``max``) is infinite and fails any tolerance. Other chunks take a
slower path with masks and 64-bit integers. Peak extra memory is a few buffers of ``CHUNK``
elements whatever the input size, so memory-mapped inputs of 5e7 elements are fine.
"""

from __future__ import annotations

import fnmatch
import math
import struct
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from harness.tolerances import Tolerance, default_tolerance

CHUNK = 1 << 16  # elements per pass step: big enough to amortise ufunc calls, small for L2
STATUSES = ("ok", "fail", "missing", "dtype", "shape")

# dtype name -> (same-width signed int, magnitude mask, bits of +inf)
_FLOAT_LAYOUT = {
    "float16": (np.int16, 0x7FFF, 0x7C00),
    "float32": (np.int32, 0x7FFF_FFFF, 0x7F80_0000),
    "float64": (np.int64, 0x7FFF_FFFF_FFFF_FFFF, 0x7FF0_0000_0000_0000),
}
_STRUCT_CODE = {"float16": "e", "float32": "f", "float64": "d"}
_POW2_U64 = np.array([1 << k for k in range(64)], dtype=np.uint64)
_HIST_LEN = 66  # buckets 0..65 cover any float64 distance (< 2**65)
_FEW_BUCKETS = 12  # below this many buckets, threshold counting beats np.bincount


@dataclass(frozen=True)
class TensorDiff:
    """The comparison of one key. ``a``/``b`` are the two sides (labels live on ``Diff``).

    ``max_abs``/``max_rel``/``max_ulp`` cover pairs where both values are finite.
    ``worst_index`` points at the element that decides the verdict: the first NaN or inf
    mismatch if there is one, else the largest ``|a - b|`` (first occurrence).
    ``mismatches`` counts every element that does not agree, NaN and inf mismatches included.
    ``ulp_histogram[k]`` counts finite pairs whose ULP distance is 0 (k = 0) or lies in
    ``[2**(k-1), 2**k)``; trailing empty buckets are dropped.
    """

    key: str
    kind: str  # "tensor" | "value"
    tol: Tolerance
    status: str = "ok"  # one of STATUSES
    dtype_a: str | None = None  # None: key absent on that side
    dtype_b: str | None = None
    shape_a: tuple[int, ...] | None = None  # None for non-tensor values
    shape_b: tuple[int, ...] | None = None
    n: int = 0  # elements compared
    max_abs: float | int | None = None
    worst_index: tuple[int, ...] | None = None
    a_worst: Any = None
    b_worst: Any = None
    worst_ulp: int | None = None  # ULP distance at worst_index
    max_rel: float | None = None
    max_ulp: int | None = None
    mismatches: int = 0
    nan_mismatches: int = 0
    inf_mismatches: int = 0
    matched_nans: int = 0
    ulp_histogram: tuple[int, ...] = ()
    bit_identical: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def missing_from(self) -> str | None:
        """``"a"`` or ``"b"`` for a key present on one side only, else None."""
        if self.status != "missing":
            return None
        return "a" if self.dtype_a is None else "b"


@dataclass(frozen=True)
class Diff:
    """Every compared key of two value mappings, plus the verdict."""

    title: str
    labels: tuple[str, str]
    rows: tuple[TensorDiff, ...]
    ok: bool
    worst: float | None  # max of max_abs over numeric rows; None without numeric rows
    tol: Tolerance  # the tolerance shown on the verdict line

    @property
    def failures(self) -> tuple[TensorDiff, ...]:
        return tuple(row for row in self.rows if not row.ok)

    @property
    def bit_identical(self) -> bool:
        return all(row.bit_identical for row in self.rows)


# ---------------------------------------------------------------------------------------------
# Scalar ULP helpers (exact, Python ints): used for the worst element and by tests.


def ordered_int(x: float, dtype: str = "float64") -> int:
    """The ordered-integer image of a float's bits: monotone in x, +0 and -0 both map to 0."""
    code = _STRUCT_CODE[dtype]
    bits = int.from_bytes(struct.pack("<" + code, x), "little")
    width = 8 * struct.calcsize(code)
    magnitude = bits & ((1 << (width - 1)) - 1)
    return -magnitude if bits >> (width - 1) else magnitude


def ulp_distance(x: float, y: float, dtype: str = "float64") -> int | None:
    """ULP distance of two values of ``dtype``; None when either is NaN or infinite."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return None
    return abs(ordered_int(x, dtype) - ordered_int(y, dtype))


# ---------------------------------------------------------------------------------------------
# Arrays


def diff_arrays(a: np.ndarray, b: np.ndarray, tol: Tolerance, key: str = "") -> TensorDiff:
    """Compare two arrays: dtype, then shape, then values (one chunked pass)."""
    a, b = np.asarray(a), np.asarray(b)
    base = TensorDiff(
        key=key,
        kind="tensor",
        tol=tol,
        dtype_a=a.dtype.name,
        dtype_b=b.dtype.name,
        shape_a=tuple(a.shape),
        shape_b=tuple(b.shape),
    )
    if a.dtype.name != b.dtype.name:
        return replace(base, status="dtype")
    if a.shape != b.shape:
        return replace(base, status="shape")
    if a.size == 0:
        return replace(base, max_rel=0.0, bit_identical=True, **_empty_extra(a))
    if a.dtype.name in _FLOAT_LAYOUT:
        return _FloatScan(a, b, tol).result(base)
    if a.dtype.kind in "iub":
        return _int_diff(a, b, tol, base)
    return _exact_diff(a, b, base)


def _empty_extra(a: np.ndarray) -> dict[str, Any]:
    """Vacuous statistics of an empty tensor: nothing differs."""
    if a.dtype.name in _FLOAT_LAYOUT:
        return {"max_abs": 0.0, "max_ulp": 0}
    return {"max_abs": 0} if a.dtype.kind in "iub" else {}


def _flat_chunks(
    a: np.ndarray, b: np.ndarray, size: int
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Yield ``(offset, a_chunk, b_chunk)`` in C order, native byte order, bounded memory.

    Contiguous inputs (including memory maps) are sliced as views; other layouts are read
    chunk by chunk through ``.flat`` so that no full-size copy is ever made.
    """
    flat_a, flat_b = _flat_view(a), _flat_view(b)
    for start in range(0, a.size, size):
        stop = min(start + size, a.size)
        yield start, _chunk(a, flat_a, start, stop), _chunk(b, flat_b, start, stop)


def _flat_view(x: np.ndarray) -> np.ndarray | None:
    return x.reshape(-1) if x.flags.c_contiguous else None


def _chunk(x: np.ndarray, flat: np.ndarray | None, start: int, stop: int) -> np.ndarray:
    part = flat[start:stop] if flat is not None else x.flat[start:stop]
    if not part.dtype.isnative:
        part = part.astype(part.dtype.newbyteorder("="))
    return np.asarray(part)


def _value_at(x: np.ndarray, flat_index: int) -> Any:
    return x[np.unravel_index(flat_index, x.shape)].item()


def _multi_index(flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat_index, shape))


class _FloatScan:
    """One chunked pass over two same-shape float arrays, accumulating every statistic."""

    def __init__(self, a: np.ndarray, b: np.ndarray, tol: Tolerance) -> None:
        self.a, self.b, self.tol = a, b, tol
        self.dtype = a.dtype.newbyteorder("=")
        self.itype, self.mag_mask, self.inf_bits = _FLOAT_LAYOUT[self.dtype.name]
        self.sign_shift = 8 * self.dtype.itemsize - 1
        # atol rounded *down* to the input dtype: comparing in that dtype then gives exactly
        # the verdict of comparing with the real atol (no boundary value accepted by rounding).
        self.atol = _round_down(tol.atol, self.dtype)
        size = min(CHUNK, a.size)
        self.absdiff = np.empty(size, self.dtype)
        self.absb = np.empty(size, self.dtype)
        self.scratch = np.empty(size, self.dtype)
        self.ord_a = np.empty(size, self.itype)
        self.ord_b = np.empty(size, self.itype)
        self.sign = np.empty(size, self.itype)
        self.dist = np.empty(size, self.itype)
        self.mask = np.empty(size, bool)
        self.mask2 = np.empty(size, bool)
        self.exp = np.empty(size, np.int64)
        self.as_f64 = np.empty(size, np.float64)
        self.hist = np.zeros(_HIST_LEN, np.int64)
        self.best_abs, self.best_index = -1.0, -1
        self.first_bad = -1  # first NaN or inf mismatch (flat index)
        self.max_rel, self.max_ulp = 0.0, -1
        self.mismatches = self.nan_mismatches = self.inf_mismatches = self.matched_nans = 0
        self.bit_identical = True

    # -- the pass ------------------------------------------------------------------------------

    def result(self, base: TensorDiff) -> TensorDiff:
        with np.errstate(all="ignore"):
            for start, ca, cb in _flat_chunks(self.a, self.b, CHUNK):
                self._scan_chunk(start, ca, cb)
        return self._finish(base)

    def _scan_chunk(self, start: int, ca: np.ndarray, cb: np.ndarray) -> None:
        m = ca.size
        if self.bit_identical and not np.array_equal(ca.view(self.itype), cb.view(self.itype)):
            self.bit_identical = False
        absdiff = self.absdiff[:m]
        np.subtract(ca, cb, out=absdiff)
        np.abs(absdiff, out=absdiff)
        k = int(np.argmax(absdiff))
        worst = float(absdiff[k])
        index = None  # chunk position -> flat index map, when non-finite pairs were dropped
        if not math.isfinite(worst):
            ca, cb, absdiff, index = self._drop_non_finite(start, ca, cb, absdiff)
            if ca.size == 0:
                return
            k = int(np.argmax(absdiff))
            worst = float(absdiff[k])
        flat_k = start + (k if index is None else int(index[k]))
        if worst > self.best_abs:
            self.best_abs, self.best_index = worst, flat_k
        dist = self._ulp_same_width(ca, cb) if worst < 2.0 else self._ulp_wide(ca, cb)
        dist_max = int(dist.max())
        self.max_ulp = max(self.max_ulp, dist_max)
        self._histogram(dist, dist_max)
        absb = np.abs(cb, out=self.absb[: ca.size])
        self._relative(absdiff, absb)
        self._count_mismatches(absdiff, absb, dist)

    # -- pieces of a chunk ---------------------------------------------------------------------

    def _drop_non_finite(self, start, ca, cb, absdiff):
        """Count NaN/inf categories; return the finite pairs and their chunk positions."""
        bits_a, bits_b = ca.view(self.itype), cb.view(self.itype)
        mag_a, mag_b = bits_a & self.mag_mask, bits_b & self.mag_mask
        nan_a, nan_b = mag_a > self.inf_bits, mag_b > self.inf_bits
        inf_a, inf_b = mag_a == self.inf_bits, mag_b == self.inf_bits
        self.matched_nans += int(np.count_nonzero(nan_a & nan_b))
        nan_bad = nan_a ^ nan_b
        inf_bad = (inf_a | inf_b) & ~(nan_a | nan_b) & ~(inf_a & inf_b & (bits_a == bits_b))
        bad = nan_bad | inf_bad
        if bad.any():
            self.nan_mismatches += int(np.count_nonzero(nan_bad))
            self.inf_mismatches += int(np.count_nonzero(inf_bad))
            if self.first_bad < 0:
                self.first_bad = start + int(np.argmax(bad))
        index = np.flatnonzero(~(nan_a | nan_b | inf_a | inf_b))
        return ca[index], cb[index], absdiff[index], index

    def _ordered(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Sign-flip map into ``out`` (same-width ints): ``-(bits & mask)`` if negative."""
        bits = x.view(self.itype)
        sign = self.sign[: x.size]
        np.bitwise_and(bits, self.mag_mask, out=out)
        np.right_shift(bits, self.sign_shift, out=sign)  # 0 or -1
        np.bitwise_xor(out, sign, out=out)
        np.subtract(out, sign, out=out)  # (m ^ s) - s == -m when s == -1
        return out

    def _ulp_same_width(self, ca: np.ndarray, cb: np.ndarray) -> np.ndarray:
        """Distances in the float's own int width: safe because every |a - b| < 2 here."""
        m = ca.size
        ord_a = self._ordered(ca, self.ord_a[:m])
        ord_b = self._ordered(cb, self.ord_b[:m])
        dist = self.dist[:m]
        np.subtract(ord_a, ord_b, out=dist)
        np.abs(dist, out=dist)
        return dist

    def _ulp_wide(self, ca: np.ndarray, cb: np.ndarray) -> np.ndarray:
        """Distances that may not fit the float's width, as uint64 (exact, no saturation).

        float64 distances reach almost 2**64, beyond int64: the wrapped uint64 difference is
        exact once the larger ordered value is subtracted from the smaller.
        """
        m = ca.size
        ord_a = self._ordered(ca, self.ord_a[:m]).astype(np.int64)
        ord_b = self._ordered(cb, self.ord_b[:m]).astype(np.int64)
        up, down = ord_a.view(np.uint64), ord_b.view(np.uint64)
        return np.where(ord_a >= ord_b, up - down, down - up)

    def _histogram(self, dist: np.ndarray, dist_max: int) -> None:
        """Add log2 buckets of ``dist`` (non-negative ints) to ``self.hist``."""
        m = dist.size
        if dist_max == 0:
            self.hist[0] += m
            return
        top = dist_max.bit_length()  # buckets 0..top are in use
        if top <= _FEW_BUCKETS:
            self._histogram_by_thresholds(dist, top)
        elif dist_max < 2**53:  # exact in float64: the exponent field is the bucket
            as_f64, exp = self.as_f64[:m], self.exp[:m]
            np.copyto(as_f64, dist, casting="unsafe")
            np.right_shift(as_f64.view(np.int64), 52, out=exp)
            np.subtract(exp, 1022, out=exp)
            np.maximum(exp, 0, out=exp)  # 0 has exponent field 0
            self.hist[: top + 1] += np.bincount(exp, minlength=top + 1)
        else:
            buckets = np.searchsorted(_POW2_U64, dist.view(np.uint64), side="right")
            self.hist[: top + 1] += np.bincount(buckets, minlength=top + 1)

    def _histogram_by_thresholds(self, dist: np.ndarray, top: int) -> None:
        mask = self.mask[: dist.size]
        below = dist.size  # elements with distance >= 2**(k-2), starting from all
        for k in range(1, top + 1):
            at_least = int(np.count_nonzero(np.greater_equal(dist, 1 << (k - 1), out=mask)))
            self.hist[k - 1] += below - at_least
            below = at_least
        self.hist[top] += below

    def _relative(self, absdiff: np.ndarray, absb: np.ndarray) -> None:
        rel = np.divide(
            absdiff, absb, out=self.scratch[: absdiff.size]
        )  # x/0 = inf; 0/0 = NaN, which fmax skips
        worst = float(np.fmax.reduce(rel))
        if worst > self.max_rel:
            self.max_rel = worst

    def _count_mismatches(self, absdiff: np.ndarray, absb: np.ndarray, dist: np.ndarray) -> None:
        m = absdiff.size
        bad = self.mask[:m]
        if self.tol.rtol:
            limit = np.multiply(absb, self.tol.rtol, out=self.scratch[:m])
            np.add(limit, self.atol, out=limit)
            np.greater(absdiff, limit, out=bad)
        else:
            np.greater(absdiff, self.atol, out=bad)
        if self.tol.ulps is not None:
            ulps = min(self.tol.ulps, int(np.iinfo(dist.dtype).max))
            far = np.greater(dist, ulps, out=self.mask2[:m])
            np.logical_and(bad, far, out=bad)
        self.mismatches += int(np.count_nonzero(bad))

    # -- the result ----------------------------------------------------------------------------

    def _finish(self, base: TensorDiff) -> TensorDiff:
        a, b = self.a, self.b
        worst_at = self.first_bad if self.first_bad >= 0 else self.best_index
        mismatches = self.mismatches + self.nan_mismatches + self.inf_mismatches
        fields: dict[str, Any] = {
            "status": "ok" if mismatches == 0 else "fail",
            "n": int(a.size),
            "max_abs": 0.0,
            "max_rel": self.max_rel,
            "max_ulp": self.max_ulp if self.max_ulp >= 0 else None,
            "mismatches": mismatches,
            "nan_mismatches": self.nan_mismatches,
            "inf_mismatches": self.inf_mismatches,
            "matched_nans": self.matched_nans,
            "ulp_histogram": _trim(self.hist),
            "bit_identical": self.bit_identical,
        }
        if self.best_index >= 0:
            # Recomputed in float64 from the pair: exact for float16/32, whatever the pass used.
            best_a, best_b = _value_at(a, self.best_index), _value_at(b, self.best_index)
            fields["max_abs"] = abs(best_a - best_b)
        if worst_at >= 0:
            a_worst, b_worst = _value_at(a, worst_at), _value_at(b, worst_at)
            fields.update(
                worst_index=_multi_index(worst_at, a.shape),
                a_worst=a_worst,
                b_worst=b_worst,
                worst_ulp=ulp_distance(a_worst, b_worst, self.dtype.name),
            )
        return replace(base, **fields)


def _round_down(value: float, dtype: np.dtype) -> Any:
    """The largest value of ``dtype`` that is <= ``value``."""
    with np.errstate(over="ignore"):  # beyond the dtype's range: inf, stepped down to max
        rounded = dtype.type(value)
    if float(rounded) > value:
        rounded = np.nextafter(rounded, dtype.type(-np.inf))
    return rounded


def _trim(hist: np.ndarray) -> tuple[int, ...]:
    used = np.flatnonzero(hist)
    return tuple(int(c) for c in hist[: used[-1] + 1]) if used.size else ()


def _int_diff(a: np.ndarray, b: np.ndarray, tol: Tolerance, base: TensorDiff) -> TensorDiff:
    """Integers and bools: |a - b| as an exact int, chunked; no ULPs."""
    best, best_at, mismatches, max_rel, identical = -1, -1, 0, 0.0, True
    with np.errstate(all="ignore"):
        for start, ca, cb in _flat_chunks(a, b, CHUNK):
            dist = _int_distance(ca, cb)
            k = int(np.argmax(dist))
            if int(dist[k]) > best:
                best, best_at = int(dist[k]), start + k
            identical = identical and not dist.any()
            as_float, absb = dist.astype(np.float64), np.abs(cb.astype(np.float64))
            if tol.is_exact:
                mismatches += int(np.count_nonzero(dist))
            else:
                mismatches += int(np.count_nonzero(as_float > tol.atol + tol.rtol * absb))
            max_rel = max(max_rel, float(np.fmax.reduce(as_float / absb)))
    return replace(
        base,
        status="ok" if mismatches == 0 else "fail",
        n=int(a.size),
        max_abs=best,
        max_rel=max_rel,
        mismatches=mismatches,
        worst_index=_multi_index(best_at, a.shape),
        a_worst=_value_at(a, best_at),
        b_worst=_value_at(b, best_at),
        bit_identical=identical,
    )


def _int_distance(ca: np.ndarray, cb: np.ndarray) -> np.ndarray:
    """|a - b| without overflow: int64 for narrow types, wrapped uint64 for 64-bit ones."""
    if ca.dtype.itemsize < 8 or ca.dtype.kind == "b":
        return np.abs(ca.astype(np.int64) - cb.astype(np.int64))
    ua, ub = ca.view(np.uint64), cb.view(np.uint64)
    return np.where(ca >= cb, ua - ub, ub - ua)


def _int_relative(x: int, y: int) -> float:
    return abs(x - y) / abs(y) if y else math.inf


def _exact_diff(a: np.ndarray, b: np.ndarray, base: TensorDiff) -> TensorDiff:
    """Dtypes without a numeric rule here (complex, strings, objects): element equality."""
    same = np.asarray(a == b)
    if a.dtype.kind == "c":  # NaN == NaN at the same place agrees, as for floats
        same = same | (np.isnan(a) & np.isnan(b))
    bad = np.flatnonzero(~same.reshape(-1))
    fields: dict[str, Any] = {"n": int(a.size), "mismatches": int(bad.size)}
    if bad.size:
        fields.update(
            worst_index=_multi_index(int(bad[0]), a.shape),
            a_worst=_value_at(a, int(bad[0])),
            b_worst=_value_at(b, int(bad[0])),
        )
    identical = bad.size == 0 and a.tobytes() == b.tobytes()
    return replace(base, status="fail" if bad.size else "ok", bit_identical=identical, **fields)


# ---------------------------------------------------------------------------------------------
# Non-tensor values and whole mappings


def value_dtype(value: Any) -> str:
    """The dtype name used for tolerances and reports: numpy's for arrays, else a kind name.

    Python values map to ``bool``, ``int``, ``float``, ``str``, ``None`` and ``error``
    (a captured error: anything with ``type`` and ``message`` attributes).
    """
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.name
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if hasattr(value, "type") and hasattr(value, "message"):
        return "error"
    return type(value).__name__


def _is_tensor(value: Any) -> bool:
    return isinstance(value, (np.ndarray, np.generic))


def diff_value(a: Any, b: Any, tol: Tolerance, key: str = "") -> TensorDiff:
    """Compare any two values of a side: arrays via :func:`diff_arrays`, others exactly.

    Python floats follow the float rule (tolerance, NaN, inf, ULPs on the float64 grid);
    ints use the tolerance on exact ints; bools, strings, None and errors must be equal
    (errors: same type and message). Different kinds (an array against a number, an int
    against a float) are a ``dtype`` failure.
    """
    if _is_tensor(a) and _is_tensor(b):
        return diff_arrays(np.asarray(a), np.asarray(b), tol, key)
    dtype_a, dtype_b = value_dtype(a), value_dtype(b)
    base = TensorDiff(
        key=key,
        kind="value",
        tol=tol,
        dtype_a=dtype_a,
        dtype_b=dtype_b,
        shape_a=tuple(np.shape(a)) if _is_tensor(a) else None,
        shape_b=tuple(np.shape(b)) if _is_tensor(b) else None,
        a_worst=a if not _is_tensor(a) else None,
        b_worst=b if not _is_tensor(b) else None,
    )
    if dtype_a != dtype_b or _is_tensor(a) or _is_tensor(b):
        return replace(base, status="dtype")
    if dtype_a == "float":
        return _float_value(a, b, tol, base)
    if dtype_a == "int":
        agree = abs(a - b) <= tol.atol + tol.rtol * abs(b)
        return replace(
            base,
            status="ok" if agree else "fail",
            n=1,
            max_abs=abs(a - b),
            max_rel=_int_relative(a, b) if a != b else 0.0,
            mismatches=0 if agree else 1,
            bit_identical=a == b,
        )
    same = _same_plain(a, b)
    status = "ok" if same else "fail"
    return replace(base, status=status, n=1, mismatches=int(not same), bit_identical=same)


def _same_plain(a: Any, b: Any) -> bool:
    if value_dtype(a) == "error":
        return (a.type, a.message) == (b.type, b.message)
    return a == b


def _float_value(a: float, b: float, tol: Tolerance, base: TensorDiff) -> TensorDiff:
    row = diff_arrays(np.array(a, np.float64), np.array(b, np.float64), tol)
    return replace(
        row,
        key=base.key,
        kind="value",
        dtype_a="float",
        dtype_b="float",
        shape_a=None,
        shape_b=None,
        worst_index=None,
        a_worst=a,
        b_worst=b,
        worst_ulp=ulp_distance(a, b),
    )


def _missing_row(key: str, value: Any, in_a: bool, tol: Tolerance) -> TensorDiff:
    dtype = value_dtype(value)
    shape = tuple(np.shape(value)) if _is_tensor(value) else None
    return TensorDiff(
        key=key,
        kind="tensor" if _is_tensor(value) else "value",
        tol=tol,
        status="missing",
        dtype_a=dtype if in_a else None,
        dtype_b=None if in_a else dtype,
        shape_a=shape if in_a else None,
        shape_b=None if in_a else shape,
    )


def select_keys(names: Sequence[str], keys: str | Sequence[str] | None) -> list[str]:
    """The names matching any of the glob patterns (all names when ``keys`` is None)."""
    if keys is None:
        return list(names)
    patterns = [keys] if isinstance(keys, str) else list(keys)
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


def diff_values(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    *,
    tol_for: Callable[[str, str], Tolerance],
    keys: str | Sequence[str] | None = None,
    title: str = "",
    labels: tuple[str, str] = ("torch", "engine"),
    tol: Tolerance | None = None,
) -> Diff:
    """Compare two value mappings key by key; every selected key gets a row.

    Rows follow ``a``'s key order, then keys only in ``b``. ``tol_for(key, dtype_name)``
    gives each row's tolerance. ``tol`` is the tolerance printed on the verdict line; by
    default the most common row tolerance, weighted by element count.
    """
    names = select_keys(list(a) + [k for k in b if k not in a], keys)
    rows = tuple(_row(name, a, b, tol_for) for name in names)
    numeric = [float(r.max_abs) for r in rows if r.max_abs is not None]
    return Diff(
        title=title,
        labels=(str(labels[0]), str(labels[1])),
        rows=rows,
        ok=all(r.ok for r in rows),
        worst=max(numeric) if numeric else None,
        tol=tol if tol is not None else _dominant_tolerance(rows),
    )


def _row(name: str, a: Mapping[str, Any], b: Mapping[str, Any], tol_for: Callable) -> TensorDiff:
    if name not in b:
        return _missing_row(name, a[name], True, tol_for(name, value_dtype(a[name])))
    if name not in a:
        return _missing_row(name, b[name], False, tol_for(name, value_dtype(b[name])))
    return diff_value(a[name], b[name], tol_for(name, value_dtype(a[name])), name)


def _dominant_tolerance(rows: Sequence[TensorDiff]) -> Tolerance:
    weights: Counter[Tolerance] = Counter()
    for row in rows:
        weights[row.tol] += max(row.n, 1)
    if not weights:
        return default_tolerance("float32")
    return weights.most_common(1)[0][0]
