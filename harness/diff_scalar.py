"""The statistics of two one-element float arrays, in Python arithmetic: the fast path.

:func:`scalar_float_stats` returns exactly the fields ``harness.diff_stats.float_stats``
returns for the same pair (``tests/test_diff_scalar.py`` checks every field against the
chunked pass), at a tenth of its cost: a loose JSON of 100,000 scalar keys is 100,000 calls.

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

from harness.diff_stats import multi_index, round_down
from harness.float_dtypes import BFLOAT16, numpy_dtype
from harness.tolerances import Tolerance
from harness.ulp import ordered_int

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
