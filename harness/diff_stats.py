"""Chunked statistics of two same-dtype, same-shape arrays: the numbers of a ``TensorDiff``.

``harness.diff`` checks keys, dtypes and shapes and calls :func:`float_stats`,
:func:`int_stats` or :func:`exact_stats`; each returns the row's numeric fields as a dict
(``mismatches`` decides the status).

Float arrays are scanned once, in chunks, into scratch buffers that are kept per thread (one
set per dtype and power-of-two size up to the chunk), so a call allocates no chunk-sized
buffer after the first (``harness.diff_scalar`` has the one-pass path of small inputs, which
reuses this module's helpers). Per chunk, in this order of cost avoided:

- a chunk whose ``max |a - b|`` is 0 is bit-identical when no pair has opposite sign bits (an
  XOR of the bit patterns says), and only adds to the 0-ULP bucket;
- otherwise the extremes of ``(a - b) / b`` (needed for ``max_rel``) mostly prove that no pair
  has opposite sign bits (:func:`signs_may_differ`), and the XOR runs only when they do not;
- ``max |a - b|`` is finite exactly when no input is NaN or inf (NaN or inf inputs always give
  a NaN or inf difference), so only such chunks take the masking path;
- without opposite signs the ULP distance is ``|bits_a - bits_b|`` in the float's own width
  (see ``harness.ulp``);
- when ``max |a - b| <= atol`` (or the largest ULP distance is within ``ulps``), nothing in the
  chunk can fail and the per-element rule is not evaluated.

``|a - b|`` and the agreement rule are evaluated in the inputs' dtype, as ``torch.isclose``
does, with atol rounded down to that dtype (no boundary value accepted by rounding); a
difference too large for the dtype (``-max`` against ``max``) is infinite and fails any
tolerance. Integer and bool arrays get exact integer distances; bools always compare exactly.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from harness.tolerances import Tolerance
from harness.ulp import FLOAT_LAYOUT, Log2Histogram, finite_distances

_SMALL = 4096  # inputs up to this size get a workspace of their own power-of-two size
_CUTS_KEPT = 16  # lengths of views kept per workspace
# The bit patterns' dtypes as instances: ndarray.view converts a scalar type on every call
BITS = {name: np.dtype(layout[0]) for name, layout in FLOAT_LAYOUT.items()}
_NEAR = 2.0**-50  # relative margin beyond which a float64 verdict on integers is certain


# ---------------------------------------------------------------------------------------------
# Chunks and element access


def flat_chunks(
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


def multi_index(flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The C-order multi-index of a flat position (``np.unravel_index`` without its cost)."""
    if len(shape) == 1:
        return (flat_index,)
    index = []
    for extent in reversed(shape):
        flat_index, i = divmod(flat_index, extent)
        index.append(i)
    return tuple(reversed(index))


def value_at(x: np.ndarray, flat_index: int) -> Any:
    """The element at a C-order flat position as a Python scalar, whatever the layout."""
    return x.item(flat_index)


_NAMES: dict[np.dtype, str] = {}


def dtype_name(dtype: np.dtype) -> str:
    """``dtype.name``, cached: the property costs microseconds, a dict lookup nanoseconds."""
    name = _NAMES.get(dtype)
    if name is None:
        name = _NAMES[dtype] = dtype.name
    return name


def worst_fields(a: np.ndarray, b: np.ndarray, flat_index: int) -> dict[str, Any]:
    return {
        "worst_index": multi_index(flat_index, a.shape),
        "a_worst": value_at(a, flat_index),
        "b_worst": value_at(b, flat_index),
    }


# ---------------------------------------------------------------------------------------------
# Floats


def empty_stats(dtype: np.dtype) -> dict[str, Any]:
    """Vacuous statistics of an empty tensor: nothing differs."""
    fields: dict[str, Any] = {"max_rel": 0.0, "bit_identical": True}
    if dtype_name(dtype) in FLOAT_LAYOUT:
        fields.update(max_abs=0.0, max_ulp=0)
    elif dtype.kind in "iub":
        fields["max_abs"] = 0
    return fields


_BUFFERS = ("diff", "rel", "signs", "tmp", "mask", "mask2", "keys", "as_f32", "as_f64")


class _Workspace:
    """Scratch buffers for chunks of up to ``size`` elements of one float dtype.

    ``cut(m)`` gives the same buffers as views of length m, made once per length and kept (a
    call's last, partial chunk; a small input's one chunk): slicing ten buffers per chunk
    costs a sixth of a 1e3-element diff.
    """

    __slots__ = ("size", "_cuts", *_BUFFERS)

    def __init__(self, dtype: np.dtype, size: int, views: dict[str, Any] | None = None) -> None:
        self.size, self._cuts = size, {}
        if views is not None:
            for name, buffer in views.items():
                setattr(self, name, buffer)
            return
        itype = FLOAT_LAYOUT[dtype_name(dtype)][0]
        self.diff = np.empty(size, dtype)
        self.rel = np.empty(size, dtype)  # the quotients, later |b| when counting mismatches
        self.signs = np.empty(size, itype)  # the sign-bit differences, then the distances
        self.tmp = np.empty(size, itype)
        self.mask = np.empty(size, bool)
        self.mask2 = np.empty(size, bool)
        self.keys = np.empty(size + 1, np.uint8)  # one spare: Log2Histogram pads odd counts
        self.as_f32 = np.empty(size, np.float32)
        self.as_f64 = np.empty(size, np.float64) if dtype.itemsize == 8 else None

    def cut(self, m: int) -> _Workspace:
        """The buffers as views of length ``m`` (``keys`` ``m + 1``), cached per length."""
        if m == self.size:
            return self
        ws = self._cuts.get(m)
        if ws is None:
            if len(self._cuts) >= _CUTS_KEPT:
                self._cuts.clear()
            views = {name: getattr(self, name) for name in _BUFFERS}
            views = {k: v if v is None else v[: m + (k == "keys")] for k, v in views.items()}
            ws = self._cuts[m] = _Workspace(self.diff.dtype, m, views)
        return ws


_LOCAL = threading.local()


def _workspace(dtype: np.dtype, n: int, chunk: int) -> _Workspace:
    """This thread's buffers for ``dtype``: chunk-sized, or the next power of two for small n."""
    size = chunk if n > min(chunk, _SMALL) else 1 << (min(n, chunk) - 1).bit_length()
    cache = _LOCAL.__dict__.setdefault("workspaces", {})
    key = (dtype, size)
    ws = cache.get(key)
    if ws is None:
        ws = cache[key] = _Workspace(dtype, size)
    return ws


def float_stats(a: np.ndarray, b: np.ndarray, tol: Tolerance, chunk: int) -> dict[str, Any]:
    """Every statistic of two same-shape float arrays, in one chunked pass."""
    dtype = a.dtype if a.dtype.isnative else a.dtype.newbyteorder("=")
    scan = _FloatScan(dtype, tol, _workspace(dtype, a.size, chunk))
    with np.errstate(all="ignore"):
        if a.size <= chunk:  # one chunk: no generator
            scan.chunk(0, flat_native(a), flat_native(b))
        else:
            for start, ca, cb in flat_chunks(a, b, chunk):
                scan.chunk(start, ca, cb)
    return scan.fields(a, b)


def flat_native(x: np.ndarray) -> np.ndarray:
    """``x`` as one flat chunk in native byte order: a view when it is contiguous and native."""
    if x.flags.c_contiguous and x.dtype.isnative:
        return x.reshape(-1)
    return _chunk(x, _flat_view(x), 0, x.size)


class _FloatScan:
    """Accumulates the statistics of successive chunks."""

    __slots__ = (
        "atol", "atol_float", "best_abs", "best_index", "best_ulp", "bit_identical", "first_bad",
        "hist", "inf_bits", "inf_mismatches", "itype", "mag_mask", "matched_nans", "max_rel",
        "max_ulp", "mismatches", "nan_mismatches", "tol", "ws",
    )  # fmt: skip

    def __init__(self, dtype: np.dtype, tol: Tolerance, ws: _Workspace) -> None:
        self.tol, self.ws = tol, ws
        name = dtype_name(dtype)
        self.itype, (_, self.mag_mask, self.inf_bits) = BITS[name], FLOAT_LAYOUT[name]
        self.atol = round_down(tol.atol, dtype)
        self.atol_float = float(self.atol)
        self.hist = Log2Histogram()
        self.best_abs, self.best_index, self.best_ulp = -1.0, -1, -1  # largest |a - b|
        self.first_bad = -1  # first NaN or inf mismatch (flat index)
        self.max_rel, self.max_ulp = 0.0, -1
        self.mismatches = self.nan_mismatches = self.inf_mismatches = self.matched_nans = 0
        self.bit_identical = True

    def chunk(self, start: int, ca: np.ndarray, cb: np.ndarray) -> None:
        ws = self.ws.cut(ca.size)
        bits_a, bits_b = ca.view(self.itype), cb.view(self.itype)
        diff = np.subtract(ca, cb, out=ws.diff)
        k, worst = largest_magnitude(diff)
        index = None  # chunk position -> flat index map, when non-finite pairs were dropped
        opposite = None  # whether some pair has different sign bits; None: not known yet
        if worst == 0.0 or not math.isfinite(worst):
            signs = np.bitwise_xor(bits_a, bits_b, out=ws.signs)
            # x.item(x.argmin()), not x.min(): argmin skips the reduction machinery (a quarter
            # of the time at 1e3 elements)
            opposite = signs.item(signs.argmin()) < 0
            if worst == 0.0 and not opposite:  # equal values of equal signs: the same bits
                self._identical_finite(start, ca.size)
                return
        if not math.isfinite(worst):  # NaN or inf inputs (or an overflow)
            self.bit_identical = self.bit_identical and not opposite
            self.bit_identical = self.bit_identical and signs.item(signs.argmax()) == 0
            ca, cb, diff, index = self._drop_non_finite(start, ca, cb)
            if ca.size == 0:
                return
            ws, (k, worst) = self.ws.cut(ca.size), largest_magnitude(diff)
            bits_a, bits_b = ca.view(self.itype), cb.view(self.itype)
        else:
            self.bit_identical = False  # values differ, or a +-0 pair's sign bits do
        rel = np.divide(diff, cb, out=ws.rel)
        extremes = quotient_extremes(rel)
        self.max_rel = max(self.max_rel, largest_quotient(rel, extremes))
        if opposite is None:
            opposite = signs_may_differ(extremes[1]) and has_opposite_signs(
                bits_a, bits_b, ws.signs
            )
        improved = worst > self.best_abs
        if improved:
            self.best_abs, self.best_index = worst, start + (k if index is None else int(index[k]))
        # the sign bits are spent: their buffer takes the distances
        dist = finite_distances(bits_a, bits_b, opposite, worst, self.mag_mask, ws.signs, ws.tmp)
        dist_max = dist.item(dist.argmax())
        if improved:
            self.best_ulp = dist.item(k)
        self.max_ulp = max(self.max_ulp, dist_max)
        self.hist.add(dist, dist_max, ws.mask, ws.keys, ws.as_f32, ws.as_f64)
        if worst > self.atol_float and (self.tol.ulps is None or dist_max > self.tol.ulps):
            self.mismatches += count_mismatches(diff, cb, dist, self.tol, self.atol, ws)

    def _identical_finite(self, start: int, m: int) -> None:
        """Account for a chunk of m bit-identical pairs without NaN or inf: all 0 ULP apart.

        Every ``a - b`` is 0 exactly when every pair is equal (the difference of two distinct
        finite floats is never 0, subnormals included), and equal floats with equal sign bits
        have the same bits.
        """
        if self.best_abs < 0:
            self.best_abs, self.best_index, self.best_ulp = 0.0, start, 0
        self.max_ulp = max(self.max_ulp, 0)
        self.hist.add_zeros(m)

    def _drop_non_finite(self, start, ca, cb):
        """Count NaN/inf categories; return the finite pairs, their a - b and positions."""
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
        ca, cb = ca[index], cb[index]
        return ca, cb, ca - cb, index

    def fields(self, a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
        return float_fields(
            a,
            b,
            best_index=self.best_index,
            best_ulp=self.best_ulp,
            max_rel=self.max_rel,
            max_ulp=self.max_ulp,
            histogram=self.hist.trimmed(),
            bit_identical=self.bit_identical,
            mismatches=self.mismatches,
            first_bad=self.first_bad,
            nan_mismatches=self.nan_mismatches,
            inf_mismatches=self.inf_mismatches,
            matched_nans=self.matched_nans,
        )


def count_mismatches(diff, cb, dist, tol: Tolerance, atol, ws=None) -> int:
    """How many finite pairs fail ``tol`` (``atol`` rounded down to their dtype), in the
    inputs' dtype; ``ws`` gives scratch buffers. ``diff`` (its last use) becomes ``|a - b|``."""
    absdiff = np.abs(diff, out=diff)
    if tol.rtol:
        limit = np.abs(cb, out=None if ws is None else ws.rel)
        np.multiply(limit, tol.rtol, out=limit)
        np.add(limit, atol, out=limit)
        bad = np.greater(absdiff, limit, out=None if ws is None else ws.mask)
    else:
        bad = np.greater(absdiff, atol, out=None if ws is None else ws.mask)
    if tol.ulps is not None:
        ulps = min(tol.ulps, int(np.iinfo(dist.dtype).max))
        far = np.greater(dist, ulps, out=None if ws is None else ws.mask2)
        np.logical_and(bad, far, out=bad)
    return int(np.count_nonzero(bad))


def float_fields(
    a,
    b,
    *,
    best_index,
    best_ulp,
    max_rel,
    max_ulp,
    histogram,
    bit_identical,
    mismatches,
    first_bad=-1,
    nan_mismatches=0,
    inf_mismatches=0,
    matched_nans=0,
):
    """The row fields of two float arrays from a pass's findings (``best_index``: the first
    largest finite ``|a - b|``, -1 if none; ``first_bad``: the first NaN or inf mismatch)."""
    worst_at = first_bad if first_bad >= 0 else best_index
    fields: dict[str, Any] = {
        "n": int(a.size),
        "max_abs": 0.0,
        "max_rel": max_rel,
        "max_ulp": max_ulp if max_ulp >= 0 else None,
        "mismatches": mismatches + nan_mismatches + inf_mismatches,
        "nan_mismatches": nan_mismatches,
        "inf_mismatches": inf_mismatches,
        "matched_nans": matched_nans,
        "ulp_histogram": histogram,
        "bit_identical": bit_identical,
    }
    if worst_at >= 0:
        fields.update(worst_fields(a, b, worst_at))
        # a NaN / inf mismatch has no ULP distance; else the worst pair is the largest |a - b|
        fields["worst_ulp"] = None if first_bad >= 0 else best_ulp
    if best_index >= 0:
        # Recomputed in float64 from the pair: exact for float16/32, whatever the pass used.
        if best_index == worst_at:
            best_a, best_b = fields["a_worst"], fields["b_worst"]
        else:
            best_a, best_b = value_at(a, best_index), value_at(b, best_index)
        fields["max_abs"] = abs(best_a - best_b)
    return fields


def largest_magnitude(diff: np.ndarray) -> tuple[int, float]:
    """Position (first occurrence) and value of the largest ``|diff|``; NaN if any is NaN.

    From the signed differences' argmax and argmin, without an ``|a - b|`` pass: every
    element of largest magnitude is the maximum or the minus minimum, and each arg* gives the
    first occurrence of its value (the first NaN, when there is one).
    """
    hi, lo = int(diff.argmax()), int(diff.argmin())
    up, down = diff.item(hi), -diff.item(lo)  # item: a Python float, no NumPy scalar
    if up > down or (up == down and hi < lo):
        return hi, abs(up)
    return lo, abs(down)


def quotient_extremes(rel: np.ndarray) -> tuple[float, float]:
    """``(max, -min)`` of the signed quotients ``rel = (a - b) / b``, either NaN if some
    quotient is NaN: ``argmax`` / ``argmin`` cost a fraction of ``np.fmax.reduce`` (a fifth at
    1e3 elements) but stop at the first NaN."""
    return rel.item(rel.argmax()), -rel.item(rel.argmin())


def largest_quotient(rel: np.ndarray, extremes: tuple[float, float] | None = None) -> float:
    """The largest ``|d / b|`` of the signed quotients ``rel``, NaN (0 / 0) skipped; x/0 = inf.

    ``|d / b|`` is ``|d| / |b|`` exactly (IEEE division rounds the magnitude, the sign aside),
    so this is the larger of max and -min (``extremes``, from :func:`quotient_extremes`): no
    ``|b|`` pass. Only when one is NaN does the NaN-skipping reduction run. All NaN gives NaN,
    which ``max`` then ignores.
    """
    up, down = quotient_extremes(rel) if extremes is None else extremes
    if up != up or down != down:  # some 0 / 0
        up, down = float(np.fmax.reduce(rel)), -float(np.fmin.reduce(rel))
    return max(up, down)  # both NaN or neither


def signs_may_differ(down: float) -> bool:
    """Whether finite pairs may include one of opposite sign bits, from ``down``, minus the
    smallest of their quotients ``(a - b) / b`` (NaN if any quotient is NaN).

    False only when every quotient is above -1, and then no pair has opposite sign bits. For
    such a pair, a - b has the sign of a (or is a zero) and b the other sign, so: b = +-0 and
    a = -+0 give 0 / 0, NaN; b = +-0 and a non-zero give -inf; a = -+0 gives -b / b = -1;
    otherwise ``|a - b| = |a| + |b|`` rounds to at least ``|b|`` (rounding is monotone and
    ``|b|`` is a float), so the quotient rounds to at most -1. Deciding it from the quotients,
    which the pass computes anyway for ``max_rel``, saves the XOR of the bit patterns and its
    reduction: a tenth of a chunk.
    """
    return not down < 1.0  # NaN compares False


def has_opposite_signs(bits_a: np.ndarray, bits_b: np.ndarray, out: np.ndarray) -> bool:
    """Whether some pair of bit patterns has different sign bits (``out``: scratch)."""
    signs = np.bitwise_xor(bits_a, bits_b, out=out)
    return signs.item(signs.argmin()) < 0


@functools.lru_cache(maxsize=64)
def round_down(value: float, dtype: np.dtype) -> Any:
    """The largest value of ``dtype`` that is <= ``value``."""
    with np.errstate(over="ignore"):  # beyond the dtype's range: inf, stepped down to max
        rounded = dtype.type(value)
    if float(rounded) > value:
        rounded = np.nextafter(rounded, dtype.type(-np.inf))
    return rounded


# ---------------------------------------------------------------------------------------------
# Integers and bools


def int_agrees(distance: int, b: int, tol: Tolerance) -> bool:
    """``distance <= atol + rtol * |b|`` evaluated exactly (Python ints and fractions)."""
    if not tol.rtol:
        return distance <= tol.atol  # int against float compares exactly in Python
    return distance <= Fraction(tol.atol) + Fraction(tol.rtol) * abs(b)


def int_stats(a: np.ndarray, b: np.ndarray, tol: Tolerance, chunk: int) -> dict[str, Any]:
    """Integers and bools: |a - b| as an exact int, chunked; no ULPs.

    Bools compare exactly whatever the tolerance (True and False are not 1 apart); integer
    distances are tested against the tolerance exactly, never rounded to float64.
    """
    exact = tol.is_exact or a.dtype.kind == "b"
    best, best_at, mismatches, max_rel, identical = -1, -1, 0, 0.0, True
    with np.errstate(all="ignore"):
        for start, ca, cb in flat_chunks(a, b, chunk):
            dist = _int_distance(ca, cb)
            k = int(np.argmax(dist))
            if int(dist[k]) > best:
                best, best_at = int(dist[k]), start + k
            identical = identical and not dist.any()
            as_float, absb = dist.astype(np.float64), np.abs(cb.astype(np.float64))
            if exact:
                mismatches += int(np.count_nonzero(dist))
            else:
                mismatches += _int_failures(dist, cb, as_float, absb, tol)
            max_rel = max(max_rel, float(np.fmax.reduce(as_float / absb)))
    return {
        "n": int(a.size),
        "max_abs": best,
        "max_rel": max_rel,
        "mismatches": mismatches,
        "bit_identical": identical,
        **worst_fields(a, b, best_at),
    }


def _int_distance(ca: np.ndarray, cb: np.ndarray) -> np.ndarray:
    """|a - b| without overflow: int64 for narrow types, wrapped uint64 for 64-bit ones."""
    if ca.dtype.itemsize < 8 or ca.dtype.kind == "b":
        return np.abs(ca.astype(np.int64) - cb.astype(np.int64))
    ua, ub = ca.view(np.uint64), cb.view(np.uint64)
    return np.where(ca >= cb, ua - ub, ub - ua)


def _int_failures(dist, cb, as_float, absb, tol: Tolerance) -> int:
    """How many exact distances exceed ``atol + rtol * |b|``.

    Without rtol the limit is the integer ``floor(atol)``, compared in the distances' own
    integer type. With rtol the float64 verdict is certain unless the distance and the
    limit are within a few roundings of each other; those few are decided by
    :func:`int_agrees`.
    """
    if not tol.rtol:
        limit = math.floor(tol.atol)
        if limit >= np.iinfo(dist.dtype).max:
            return 0
        return int(np.count_nonzero(dist > dist.dtype.type(limit)))
    limit_f = tol.atol + tol.rtol * absb
    failing = as_float > limit_f
    near = np.abs(as_float - limit_f) <= _NEAR * np.maximum(as_float, limit_f)
    unsure = np.flatnonzero(near)
    decided = int(np.count_nonzero(failing & ~near))
    dist_list, b_list = dist[unsure].tolist(), cb[unsure].tolist()
    return decided + sum(not int_agrees(d, y, tol) for d, y in zip(dist_list, b_list, strict=True))


# ---------------------------------------------------------------------------------------------
# Everything else


def exact_stats(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """Dtypes without a numeric rule here (complex, strings, objects): element equality."""
    same = np.asarray(a == b)
    if a.dtype.kind == "c":  # NaN == NaN at the same place agrees, as for floats
        same = same | (np.isnan(a) & np.isnan(b))
    bad = np.flatnonzero(~same.reshape(-1))
    fields: dict[str, Any] = {"n": int(a.size), "mismatches": int(bad.size)}
    if bad.size:
        fields.update(worst_fields(a, b, int(bad[0])))
    fields["bit_identical"] = bad.size == 0 and a.tobytes() == b.tobytes()
    return fields
