"""harness.mismatches: the elements behind a row agree with harness.diff's counts, and the
worst elements are the ones an independent float64 computation finds."""

import math

import numpy as np
import pytest

from harness.diff import diff_arrays, diff_value, ulp_distance
from harness.mismatches import CHUNK, LIMIT, inspect_row
from harness.tolerances import Tolerance, default_tolerance

F32 = default_tolerance("float32")


def detail(a, b, tol=F32, limit=LIMIT):
    row = diff_arrays(a, b, tol, key="x")
    return row, inspect_row(a, b, row, limit)


def steps(x: float, n: int, dtype=np.float32):
    """``x`` moved ``n`` representable values up: a known ULP distance, built without ULP code."""
    value = dtype(x)
    for _ in range(n):
        value = np.nextafter(value, dtype(np.inf))
    return value


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "tol", [F32, Tolerance(1e-6, 1e-3, reason="t"), Tolerance(0.0, 0.0, 8, "u")]
)
def test_mismatch_counts_match_the_diff_module(dtype, tol):
    rng = np.random.default_rng(7)
    a = rng.normal(size=(7, 301)).astype(dtype)
    b = a.copy()
    picked = rng.choice(a.size, 40, replace=False)
    b.flat[picked[:20]] += dtype(1e-3)  # beyond every tolerance here
    b.flat[picked[20:30]] += dtype(1e-9)  # within atol, or a few ULP
    b.flat[picked[30:35]] = np.nan
    b.flat[picked[35:]] = np.inf
    a.flat[picked[30]] = np.nan  # a matched NaN: agrees
    row, found = detail(a, b, tol)
    assert found.mismatched == row.mismatches > 0
    assert len(found.first) == LIMIT


def test_first_elements_are_the_first_mismatches_in_c_order():
    a = np.zeros((4, 5), np.float32) + 1
    b = a.copy()
    bad = [(0, 3), (1, 1), (2, 0), (2, 4), (3, 2), (3, 3), (3, 4)]
    for i, j in bad:
        b[i, j] += 0.5 * (i + 1)
    _, found = detail(a, b)
    assert [e.index for e in found.first] == bad[:LIMIT]
    assert found.mismatched == len(bad)
    first = found.first[0]
    assert (first.a, first.b, first.abs_diff) == (1.0, 1.5, 0.5)
    assert first.ulp == ulp_distance(1.0, 1.5, "float32") == 2**22  # [1, 2) spacing 2**-23
    assert first.ratio == pytest.approx(0.5 / 1e-6)
    _, every = detail(a, b, limit=None)
    assert [e.index for e in every.first] == bad


def test_worst_ratio_is_the_largest_float64_ratio_with_rtol():
    tol = Tolerance(1e-6, 1e-2, reason="t")
    b = np.array([100.0, 1.0, 0.0, 10.0], np.float64)
    a = b + np.array([0.5, 0.02, 1e-5, 0.05])
    _, found = detail(a, b, tol)
    ratios = np.abs(a - b) / (tol.atol + tol.rtol * np.abs(b))  # 0.5, 1.98, 10, 0.5
    assert found.worst_ratio.index == (int(np.argmax(ratios)),) == (2,)
    assert found.worst_ratio.ratio == pytest.approx(ratios.max())
    assert found.mismatched == int(np.count_nonzero(ratios > 1)) == 2


def test_ulps_near_zero_are_left_out_of_the_ulp_maximum():
    """The issue's case: 9.3e-10 against 0.0 is ~8e8 float32 ULP, and says nothing."""
    b = np.array([0.0, 1.0, 3.0, 1e-7], np.float32)
    a = np.array([9.3e-10, 1.0, steps(3.0, 4023), 1.5e-7], np.float32)
    row, found = detail(a, b)
    assert row.max_ulp > 800_000_000  # the diff module's maximum is the one at 0.0
    assert found.worst_ulp.index == (2,) and found.worst_ulp.ulp == 4023
    assert found.ulp_left_out == 2  # [0] and [3]: both magnitudes within atol of zero
    assert found.worst_ratio.index == (2,)  # and the ratio names the real failure too


def test_subnormals_are_left_out_even_with_an_exact_tolerance():
    tiny = np.finfo(np.float32).tiny
    b = np.array([0.0, 2.0], np.float32)
    a = np.array([tiny / 4, steps(2.0, 3)], np.float32)  # a subnormal, and 3 ULP
    _, found = detail(a, b, Tolerance.exact())
    assert found.ulp_left_out == 1 and found.worst_ulp.ulp == 3
    assert math.isinf(found.worst_ratio.ratio)  # any difference is infinitely many exact tols


def test_nan_and_inf_mismatches_have_no_distance():
    a = np.array([1.0, np.nan, np.inf, np.nan, -np.inf], np.float32)
    b = np.array([1.0, 2.0, 3.0, np.nan, -np.inf], np.float32)
    row, found = detail(a, b)
    assert found.mismatched == row.mismatches == 2
    nan, inf = found.first
    assert nan.index == (1,) and nan.abs_diff is None and nan.ulp is None
    assert math.isinf(nan.ratio) and math.isinf(inf.ratio)
    assert found.worst_ratio.index == (1,)  # the first infinite ratio


def test_large_and_non_contiguous_inputs_are_read_in_chunks():
    a = np.ones(3 * CHUNK + 17, np.float32)
    b = a.copy()
    b[-1] = 2.0
    b[CHUNK] = 1.5
    _, found = detail(a, b)
    assert [e.index for e in found.first] == [(CHUNK,), (a.size - 1,)]
    grid = np.arange(12, dtype=np.float64).reshape(3, 4)
    other = grid.copy()
    other[2, 1] += 1
    _, found = detail(grid.T, other.T, default_tolerance("float64"))
    assert [e.index for e in found.first] == [(1, 2)]


def test_integers_bools_and_python_scalars():
    _, ints = detail(np.array([1, 2, 3]), np.array([1, 5, 3]), Tolerance.exact())
    assert [(e.index, e.a, e.b, e.abs_diff) for e in ints.first] == [((1,), 2, 5, 3)]
    _, bools = detail(np.array([True, False]), np.array([True, True]), Tolerance.exact())
    assert bools.mismatched == 1 and bools.first[0].index == (1,)
    row = diff_value(1.5, 1.5000001, F32, key="f")
    value = inspect_row(1.5, 1.5000001, row)
    assert value.mismatched == 0 and value.worst_ratio.ratio == pytest.approx(0.1, rel=1e-6)


def test_structural_rows_and_plain_values_have_no_detail():
    shape = diff_arrays(np.zeros(2), np.zeros(3), F32)
    assert inspect_row(np.zeros(2), np.zeros(3), shape) is None
    text = diff_value("a", "b", Tolerance.exact())
    assert inspect_row("a", "b", text) is None


def test_bools_compare_exactly_and_huge_ints_exactly():
    loose = Tolerance(2.0, reason="loose")
    _, bools = detail(np.array([True, False]), np.array([False, False]), loose)
    assert bools.mismatched == 1 and math.isinf(bools.first[0].ratio)
    big = np.array([2**62, -(2**62)], np.int64)
    other = big + np.array([3, 2], np.int64)  # |diff| 3 and 2 against atol 2: exact, no rounding
    _, ints = detail(big, other, loose)
    assert [(e.index, e.abs_diff) for e in ints.first] == [((0,), 3)]
