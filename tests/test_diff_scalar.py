"""The one-element fast path (``harness.diff_scalar``) against the chunked pass, field by field.

The chunked pass (``harness.diff_stats.float_stats``) is the reference: it is what every tensor
of two or more elements goes through and what the other diff tests pin. Each hostile pair is
compared as a 0-d, a [1] or a [1, 1] array (in turn), in native and swapped byte order, under
tolerances with and without rtol and ULPs, including tolerances that sit exactly on the
pair's distance.
"""

import dataclasses
import itertools
import math

import numpy as np
import pytest

from harness.diff import CHUNK, TensorDiff, diff_arrays, diff_value, ulp_distance
from harness.diff_scalar import scalar_float_stats
from harness.diff_stats import dtype_name, float_stats
from harness.tolerances import Tolerance

DTYPES = [np.float16, np.float32, np.float64]


def menu(dtype) -> list:
    info = np.finfo(dtype)
    tiny = np.nextafter(dtype(0), dtype(1))
    one = dtype(1)
    values = [
        0.0,
        -0.0,
        one,
        -one,
        np.nextafter(one, dtype(2)),
        np.nextafter(one, dtype(0)),
        tiny,
        -tiny,
        info.tiny,  # smallest normal
        np.nextafter(info.tiny, dtype(0)),  # largest subnormal
        info.max,
        -info.max,
        np.nextafter(info.max, dtype(0)),
        dtype(1e-3),
        dtype(-2.5),
        dtype(3.0),
        np.inf,
        -np.inf,
        np.nan,
        -np.nan,
    ]
    out = [np.array(v, dtype) for v in values]
    payload = np.array(np.nan, dtype).view(f"u{np.dtype(dtype).itemsize}") | 1
    out.append(payload.view(dtype))  # a NaN with another payload: not bit-identical
    return out


def tolerances(a: np.ndarray, b: np.ndarray) -> list[Tolerance]:
    tols = [
        Tolerance.exact(),
        Tolerance(1e-6),
        Tolerance(1e-3, rtol=1e-2),
        Tolerance(0.0, rtol=0.5),
        Tolerance(0.0, ulps=1),
        Tolerance(1e-9, rtol=1e-5, ulps=4),
        Tolerance(1e300),
    ]
    x, y = float(a), float(b)
    if math.isfinite(x) and math.isfinite(y):
        d = abs(x - y)
        if math.isfinite(d):
            ratio = d / abs(y) if y else 0.0
            tols += [Tolerance(d)] + ([Tolerance(0.0, rtol=ratio)] if math.isfinite(ratio) else [])
            # on the boundary in the inputs' dtype: |a - b| <= rtol * |b| exactly
            with np.errstate(all="ignore"):
                d_native = float(np.abs(a - b))
                rel = float(d_native / np.abs(b)) if y else 0.0
            if math.isfinite(rel):
                tols += [Tolerance(d_native), Tolerance(0.0, rtol=rel)]
        row = diff_arrays(a.reshape(2 * [1]), b.reshape(2 * [1]), Tolerance(1e300))
        if row.max_ulp is not None:
            tols += [Tolerance(0.0, ulps=row.max_ulp), Tolerance(0.0, ulps=max(row.max_ulp - 1, 0))]
    return tols


def chunked(a: np.ndarray, b: np.ndarray, tol: Tolerance) -> dict:
    return float_stats(a, b, tol, CHUNK)


SHAPES = [(), (1,), (1, 1)]  # one per pair, in turn


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_fast_path_equals_chunked_pass(dtype):
    values = menu(dtype)
    checked = 0
    for n, (x, y) in enumerate(itertools.product(values, repeat=2)):
        shape = SHAPES[n % len(SHAPES)]
        for tol in tolerances(x, y):
            for order in ("=", ">" if np.little_endian else "<"):
                a = x.reshape(shape).astype(x.dtype.newbyteorder(order))
                b = y.reshape(shape).astype(y.dtype.newbyteorder(order))
                want = chunked(a, b, tol)
                got = scalar_float_stats(a, b, dtype_name(a.dtype), tol)
                assert _same(got, want), (x, y, tol, shape, order, got, want)
                checked += 1
    assert checked > 2000


def _same(got: dict, want: dict) -> bool:
    """Equal dicts, NaN equal to NaN (a_worst of a NaN pair), types equal too."""
    if got.keys() != want.keys():
        return False
    for name, value in want.items():
        other = got[name]
        if type(other) is not type(value):
            return False
        if isinstance(value, float) and math.isnan(value):
            if not math.isnan(other):
                return False
        elif other != value:
            return False
    return True


def test_diff_arrays_uses_the_fast_path_for_one_element(monkeypatch):
    """The fast path is taken (and only) for one-element float arrays."""
    calls = []
    import harness.diff as diff

    real = diff.scalar_float_stats
    monkeypatch.setattr(diff, "scalar_float_stats", lambda *args: calls.append(args) or real(*args))
    diff_arrays(np.float32([1.0]), np.float32([1.5]), Tolerance(1e-6))
    assert len(calls) == 1
    diff_arrays(np.float32([1.0, 2.0]), np.float32([1.5, 2.0]), Tolerance(1e-6))
    diff_arrays(np.int64([1]), np.int64([1]), Tolerance(1e-6))
    assert len(calls) == 1


def test_python_float_rows_keep_their_fields():
    """Python floats go through the 0-d float64 path; the row still names the pair."""
    row = diff_value(0.1, 0.2, Tolerance(1e-6), "x")
    assert isinstance(row, TensorDiff)
    assert row.status == "fail" and row.max_abs == abs(0.1 - 0.2)
    assert row.worst_ulp == row.max_ulp and row.max_ulp > 0
    assert row.shape_a is None and row.worst_index is None
    nan = diff_value(math.nan, math.nan, Tolerance(1e-6), "y")
    assert nan.status == "ok" and nan.matched_nans == 1 and nan.bit_identical
    fields = {f.name for f in dataclasses.fields(TensorDiff)}
    assert {"ulp_histogram", "matched_nans", "bit_identical"} <= fields


class _Float(float):
    """A float subclass: still a Python float value (``value_dtype`` says "float")."""


def test_python_float_rows_have_the_float64_ulp_distance_as_worst_ulp():
    """A Python float pair's ``worst_ulp`` is ``ulp_distance(a, b)`` on the float64 grid (None
    when either is NaN or infinite) under any tolerance: finite, signed zeros, subnormals,
    the extremes of the float16 / float32 / float64 grids, NaN payloads and infinities."""
    values = sorted({float(v) for dtype in DTYPES for v in menu(dtype)}, key=repr)
    values += [_Float(-0.0), _Float(5e-324), _Float(math.inf)]
    assert len(values) > 40
    tols = [Tolerance.exact(), Tolerance(1e-6), Tolerance(0.0, ulps=1), Tolerance(1e300)]
    for x, y in itertools.product(values, repeat=2):
        want = ulp_distance(x, y)
        for tol in tols:
            got = diff_value(x, y, tol, "x").worst_ulp
            assert got == want and type(got) is type(want), (x, y, tol, got, want)
