"""Opposite sign bits decided from the quotients ``(a - b) / b`` (``diff_stats.signs_may_differ``).

The scan skips the XOR of the bit patterns when every quotient is above -1 (none NaN). These
tests check the claim behind that on every pair of a pool of adversarial values (signed zeros,
subnormals, the largest value, neighbours of 1) and on random finite bit patterns of every
float dtype, with the quotient rounded in the dtype as the scan computes it; then that a single
opposite-sign pair whose quotient is exactly -1 (a signed zero against a number) among pairs
of tiny quotients is found by both the one-pass and the chunked path.
"""

import numpy as np
import pytest

import harness.diff as diff_module
from harness.diff import diff_arrays
from harness.diff_stats import dtype_name, signs_may_differ
from harness.tolerances import Tolerance
from harness.ulp import ordered_int
from tests.test_diff_few import DTYPES, UINT, finite_pool


def pool(dtype) -> np.ndarray:
    """test_diff_few's finite pool, with the largest negative value it leaves out (its pairs
    with +max overflow, and assert_claim drops the overflowing pairs as the scan does)."""
    values = finite_pool(dtype)
    return np.append(values, -values.max())


def random_finite(dtype, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, np.iinfo(UINT[dtype.itemsize]).max, n, dtype=UINT[dtype.itemsize],
                        endpoint=True)  # fmt: skip
    values = bits.view(dtype)
    with np.errstate(invalid="ignore"):  # NaN patterns cast to float64
        return values[np.isfinite(values.astype(np.float64))]


def assert_claim(a: np.ndarray, b: np.ndarray) -> None:
    """Wherever the scan would skip the XOR, the pair's sign bits agree."""
    with np.errstate(all="ignore"):
        diff = np.subtract(a, b)
        quotient = np.divide(diff, b)
    finite_diff = np.isfinite(diff.astype(np.float64))  # the scan's finite pairs only
    q = quotient.astype(np.float64)[finite_diff]
    skipped = np.array([not signs_may_differ(-x) for x in q.tolist()], bool)
    width = UINT[a.dtype.itemsize]
    sign = np.array(1, width) << np.array(8 * a.dtype.itemsize - 1, width)
    differ = ((a.view(width) ^ b.view(width)) & sign)[finite_diff] != 0
    assert not np.any(skipped & differ), (a[finite_diff][skipped & differ][:5],
                                          b[finite_diff][skipped & differ][:5])  # fmt: skip
    assert np.any(differ), "the inputs hold no opposite-sign pair: the test proves nothing"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_every_pool_pair_of_opposite_signs_has_a_quotient_outside_the_skip_range(dtype):
    values = pool(dtype)
    a, b = np.repeat(values, values.size), np.tile(values, values.size)
    assert_claim(a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_random_bit_patterns_of_opposite_signs_have_a_quotient_outside_the_skip_range(dtype):
    a, b = random_finite(dtype, 200_000, 1), random_finite(dtype, 200_000, 2)
    n = min(a.size, b.size)
    assert_claim(a[:n], b[:n])


def test_the_skip_range_is_open_at_minus_one_and_excludes_nan():
    assert signs_may_differ(1.0)  # a quotient of exactly -1: -0 against a number
    assert signs_may_differ(float("inf")) and signs_may_differ(float("nan"))
    assert not signs_may_differ(1.0 - 2**-53) and not signs_may_differ(-1e30)


@pytest.mark.parametrize("chunk", [3, diff_module.CHUNK], ids=["chunks of 3", "one chunk"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_one_signed_zero_among_tiny_quotients_is_found(dtype, chunk, monkeypatch):
    monkeypatch.setattr(diff_module, "CHUNK", chunk)
    ones = np.ones(100, np.float64)
    a = np.append(ones, -0.0).astype(dtype)
    b = np.append(ones + 2.0**-6, 5.0).astype(dtype)
    row = diff_arrays(a, b, Tolerance(1e-6))
    assert row.max_ulp == ordered_int(5.0, dtype_name(dtype))  # -0 is 0 in the ordering
    assert not row.bit_identical
