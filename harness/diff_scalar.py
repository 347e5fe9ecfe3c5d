"""The fast paths of small float arrays: exactly the fields of the chunked pass, for less.

Both return exactly the fields ``harness.diff_stats.float_stats`` returns for the same pair
(``tests/test_diff_scalar.py`` checks every field against the chunked pass):

- :func:`scalar_float_stats`, one element in Python arithmetic, at a tenth of the pass's
  cost: a loose JSON of 100,000 scalar keys is 100,000 calls;
- :func:`few_float_stats`, up to ``FEW`` finite pairs in one pass, at about half its cost.

The one-element path:

The chunked pass evaluates ``|a - b|``, ``|a - b| / |b|`` and ``atol + rtol * |b|`` in the
inputs' dtype. Here each operation is done in float64 on the exact float16/32 inputs and the
result rounded once to the dtype. That equals the dtype's own correctly rounded operation:
double rounding is harmless for +, -, * and / when the wide format has at least ``2p + 2``
bits of precision for a ``p``-bit narrow one (S. Figueroa, "When is double rounding
innocuous?", SIGNUM Newsletter 30(3), 1995); 53 >= 2 * 24 + 2. NumPy's float16 loops compute
in float32 and round, the same argument with 24 >= 2 * 11 + 2.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from harness.diff_stats import (
    BITS,
    count_mismatches,
    flat_native,
    float_fields,
    has_opposite_signs,
    largest_magnitude,
    largest_quotient,
    multi_index,
    quotient_extremes,
    round_down,
    signs_may_differ,
)
from harness.float_dtypes import BFLOAT16, numpy_dtype
from harness.tolerances import Tolerance
from harness.ulp import FLOAT_LAYOUT, finite_distances, log2_counts, ordered_int

FEW = 4096  # elements up to which diff_arrays takes few_float_stats (if a chunk holds them)

_PACK = {"float16": struct.Struct("<e"), "float32": struct.Struct("<f")}


def _rounder(name: str):
    """Round a float64 to the dtype ``name`` (to nearest even; beyond its range: +-inf)."""
    packer = _PACK.get(name)
    if packer is None:
        return float

    def to_dtype(x: float) -> float:
        try:
            return packer.unpack(packer.pack(x))[0]
        except OverflowError:  # struct refuses what rounds beyond the dtype's largest value
            return math.copysign(math.inf, x)

    return to_dtype


def _to_bfloat16(x: float) -> float:
    """Round as ml_dtypes' bfloat16 arithmetic does: to float32, then to bfloat16, so the one
    element path gives the chunked pass's ``|a - b|`` (both roundings to nearest even)."""
    return float(BFLOAT16.type(_ROUND["float32"](x)))


_ROUND = {name: _rounder(name) for name in ("float16", "float32", "float64")}
_ROUND["bfloat16"] = _to_bfloat16


def scalar_float_stats(a: np.ndarray, b: np.ndarray, name: str, tol: Tolerance) -> dict[str, Any]:
    """Every statistic of two one-element float arrays of dtype ``name`` (any shape)."""
    x, y = a.item(), b.item()
    fields: dict[str, Any] = {
        "n": 1,
        "max_abs": 0.0,
        "max_rel": 0.0,
        "max_ulp": None,
        "mismatches": 0,
        "nan_mismatches": 0,
        "inf_mismatches": 0,
        "matched_nans": 0,
        "ulp_histogram": (),
        "bit_identical": False,
    }
    if not (math.isfinite(x) and math.isfinite(y)):
        return _non_finite(a, b, x, y, fields)
    same_sign = (math.copysign(1.0, x) < 0) == (math.copysign(1.0, y) < 0)
    worst = {"worst_index": multi_index(0, a.shape), "a_worst": x, "b_worst": y}
    if x == y and same_sign:  # bit-identical and finite
        fields.update(worst, bit_identical=True, max_ulp=0, ulp_histogram=(1,), worst_ulp=0)
        return fields
    to_dtype = _ROUND[name]
    absdiff = to_dtype(abs(x - y))
    absb = abs(y)
    dist = abs(ordered_int(x, name) - ordered_int(y, name))
    fields.update(
        worst,
        worst_ulp=dist,
        max_ulp=dist,
        ulp_histogram=(0,) * dist.bit_length() + (1,),
        max_rel=max(0.0, _relative(absdiff, absb, to_dtype)),
        max_abs=abs(x - y),
        mismatches=int(_fails(absdiff, absb, dist, to_dtype, name, tol)),
    )
    return fields


def _relative(absdiff: float, absb: float, to_dtype) -> float:
    """``|a - b| / |b|`` in the dtype; 0/0 is NaN, which the chunked pass's fmax skips."""
    if absb:
        return to_dtype(absdiff / absb)
    return math.nan if absdiff == 0 else math.inf


def _fails(absdiff: float, absb: float, dist: int, to_dtype, name: str, tol: Tolerance) -> bool:
    atol = float(round_down(tol.atol, numpy_dtype(name)))
    if absdiff <= atol or (tol.ulps is not None and dist <= tol.ulps):
        return False
    if tol.rtol:
        limit = to_dtype(to_dtype(absb * to_dtype(tol.rtol)) + atol)
        return absdiff > limit
    return True


def _non_finite(a: np.ndarray, b: np.ndarray, x: float, y: float, fields: dict) -> dict:
    """A NaN or an infinity on either side: categories only, no finite pair to measure."""
    nan_x, nan_y = math.isnan(x), math.isnan(y)
    inf_x, inf_y = math.isinf(x), math.isinf(y)
    if nan_x and nan_y:  # NaN payloads count for bit identity
        native = a.dtype.newbyteorder("=")
        same_bits = a.astype(native).tobytes() == b.astype(native).tobytes()
    else:
        same_bits = x == y  # the same infinity, or never (NaN or inf against something else)
    nan_bad = nan_x != nan_y
    inf_bad = (inf_x or inf_y) and not (nan_x or nan_y) and not (inf_x and inf_y and x == y)
    fields.update(
        bit_identical=same_bits,
        matched_nans=int(nan_x and nan_y),
        nan_mismatches=int(nan_bad),
        inf_mismatches=int(inf_bad),
        mismatches=int(nan_bad) + int(inf_bad),
    )
    if nan_bad or inf_bad:
        fields.update(worst_index=multi_index(0, a.shape), a_worst=x, b_worst=y, worst_ulp=None)
    return fields


def few_float_stats(a: np.ndarray, b: np.ndarray, name: str, tol: Tolerance) -> dict | None:
    """Every statistic of two float arrays of dtype ``name`` in one pass without chunk state,
    or None when some input is NaN or infinite (or ``a - b`` overflows): the chunked pass
    then counts the NaN and inf categories.

    The steps (and helpers) of one chunk of ``harness.diff_stats``' scan, on fresh arrays and
    in local variables: 12 NumPy calls and a few Python ones. At 1e3 elements the scan's
    bookkeeping (workspace views, per-chunk state, the histogram's accumulation, the fields
    from the state) costs about as much as those calls.
    """
    ca, cb = flat_native(a), flat_native(b)
    bits_a, bits_b = ca.view(BITS[name]), cb.view(BITS[name])
    with np.errstate(all="ignore"):
        diff = np.subtract(ca, cb)
        k, worst = largest_magnitude(diff)
        if not math.isfinite(worst):
            return None
        if worst == 0.0 and not has_opposite_signs(bits_a, bits_b, np.empty_like(bits_a)):
            return float_fields(
                a, b, best_index=0, best_ulp=0, max_rel=0.0, max_ulp=0,
                histogram=(a.size,), bit_identical=True, mismatches=0,
            )  # fmt: skip
        rel = np.divide(diff, cb)
        extremes = quotient_extremes(rel)
        max_rel = max(0.0, largest_quotient(rel, extremes))
        # (equal values with a +-0 pair of opposite signs: that pair's 0 / 0 makes the XOR run)
        scratch = rel.view(bits_a.dtype)  # the quotients are spent
        opposite = signs_may_differ(extremes[1]) and has_opposite_signs(bits_a, bits_b, scratch)
        dist = finite_distances(bits_a, bits_b, opposite, worst, FLOAT_LAYOUT[name][1])
        dist_max = dist.item(dist.argmax())
        atol, mismatches = round_down(tol.atol, ca.dtype), 0
        if worst > float(atol) and (tol.ulps is None or dist_max > tol.ulps):
            mismatches = count_mismatches(diff, cb, dist, tol, atol)
    return float_fields(
        a, b, best_index=k, best_ulp=dist.item(k), max_rel=max_rel, max_ulp=dist_max,
        histogram=tuple(log2_counts(dist, dist_max.bit_length())), bit_identical=False,
        mismatches=mismatches,
    )  # fmt: skip
