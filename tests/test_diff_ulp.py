"""ULP meta-test: shift values by exactly k ULP and check the reported distance.

Expected distances come from stepping with ``np.nextafter`` (NumPy's own notion of "next
float") or from the IEEE bit layout, never from harness.diff itself; where NumPy's
``assert_array_max_ulp`` is defined it must agree.
"""

import numpy as np
import pytest

from harness.diff import diff_arrays, ulp_distance
from harness.tolerances import Tolerance

DTYPES = [np.float16, np.float32, np.float64]
LOOSE = Tolerance(1e300)  # statistics only: nothing should fail on value grounds


def shifted(x, k, dtype, toward=np.inf):
    """``x`` moved by exactly ``k`` representable values toward ``toward``."""
    value = dtype(x)
    for _ in range(k):
        value = np.nextafter(value, dtype(toward))
    return value


def reported_ulp(a, b, dtype):
    row = diff_arrays(np.array([a], dtype), np.array([b], dtype), LOOSE)
    # -max vs max overflows |a - b| to inf (a fail by design); every other pair here agrees
    assert row.status == "ok" or abs(float(a)) == np.finfo(dtype).max
    return row.max_ulp


def starts(dtype):
    info = np.finfo(dtype)
    tiny = np.nextafter(dtype(0), dtype(1))  # smallest subnormal
    return [
        (dtype(1.0), np.inf),
        (dtype(-1.0), np.inf),
        (dtype(-1.0), -np.inf),
        (dtype(0.0), np.inf),  # +0 up into the subnormals
        (dtype(-0.0), -np.inf),
        (dtype(-3) * tiny, np.inf),  # walks across zero
        (dtype(0.1), -np.inf),
        (info.max, -np.inf),  # from the largest finite value down
        (-info.max, np.inf),
        (tiny, np.inf),
        (info.smallest_normal, -np.inf),  # normal -> subnormal boundary
    ]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [0, 1, 5, 50])
def test_distance_of_k_steps(dtype, k):
    for start, toward in starts(dtype):
        end = shifted(start, k, dtype, toward)
        assert reported_ulp(start, end, dtype) == k, (start, toward)
        assert reported_ulp(end, start, dtype) == k, (start, toward)
        assert ulp_distance(float(start), float(end), np.dtype(dtype).name) == k


@pytest.mark.parametrize("dtype", DTYPES)
def test_across_zero_and_signed_zeros(dtype):
    tiny = np.nextafter(dtype(0), dtype(1))
    assert reported_ulp(-tiny, tiny, dtype) == 2
    assert reported_ulp(dtype(-0.0), dtype(0.0), dtype) == 0
    assert reported_ulp(dtype(-0.0), tiny, dtype) == 1
    assert reported_ulp(-tiny, dtype(0.0), dtype) == 1


def test_extremes_float32_opposite_signs():
    info = np.finfo(np.float32)
    max_bits = int(np.array(info.max, np.float32).view(np.int32))
    assert max_bits == 0x7F7FFFFF  # the IEEE layout the expectation relies on
    assert reported_ulp(-info.max, info.max, np.float32) == 2 * max_bits
    three = int(np.array(3.0, np.float32).view(np.int32))
    assert reported_ulp(np.float32(3), np.float32(-3), np.float32) == 2 * three


def test_extremes_float64_do_not_wrap():
    """-max..max is ~2**64 ULP: beyond int64, still exact."""
    info = np.finfo(np.float64)
    max_bits = 0x7FEFFFFFFFFFFFFF
    assert int(np.array(info.max).view(np.int64)) == max_bits
    assert reported_ulp(-info.max, info.max, np.float64) == 2 * max_bits
    assert 2 * max_bits > np.iinfo(np.int64).max
    assert ulp_distance(-info.max, info.max) == 2 * max_bits
    assert reported_ulp(-1.0, 1.0, np.float64) == 2 * 0x3FF0000000000000


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 5, 50])
def test_agrees_with_numpy_assert_array_max_ulp(dtype, k):
    rng = np.random.default_rng(k)
    a = rng.standard_normal(64).astype(dtype)
    b = np.array([shifted(x, k, dtype) for x in a], dtype)
    np.testing.assert_array_max_ulp(a, b, maxulp=k, dtype=dtype)
    with pytest.raises(AssertionError):
        np.testing.assert_array_max_ulp(a, b, maxulp=k - 1, dtype=dtype)
    row = diff_arrays(a, b, LOOSE)
    assert row.max_ulp == k
    assert row.ulp_histogram == (0,) * k.bit_length() + (64,)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_and_inf_never_get_a_ulp_distance(dtype):
    a = np.array([np.nan, np.inf, 1.0], dtype)
    b = np.array([1.0, -np.inf, 1.0], dtype)
    row = diff_arrays(a, b, LOOSE)
    assert row.max_ulp == 0
    assert (row.nan_mismatches, row.inf_mismatches) == (1, 1)
    assert ulp_distance(float("nan"), 1.0) is None
    assert ulp_distance(float("inf"), float("inf")) is None


def test_ulps_tolerance_boundary():
    one = np.float32(1.0)
    a = np.array([one, one], np.float32)
    b = np.array([shifted(one, 2, np.float32), shifted(one, 3, np.float32)], np.float32)
    row = diff_arrays(a, b, Tolerance(0.0, ulps=2))
    assert (row.status, row.mismatches, row.worst_index, row.worst_ulp) == ("fail", 1, (1,), 3)
    assert diff_arrays(a, b, Tolerance(0.0, ulps=3)).ok
