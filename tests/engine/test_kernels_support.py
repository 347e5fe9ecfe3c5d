"""Shared checks of the kernel tests (test_kernels_*.py import them), and tests of the checks.

Tolerance rule (`assert_close`). An output element that sums K products is compared with
PyTorch as `max |engine - torch| <= atol * sqrt(K) * max(1, rms(torch))`, atol 1e-6 for float32
(the project's table) and 1e-12 for float64. Why sqrt(K): both sides round each of the K
partial sums (unit roundoff u = 6e-8 in float32) in their own order; with O(1) partial sums the
errors add up like a random walk to about u * sqrt(K) per side, and the largest difference
over a few thousand elements stays within ~4 standard deviations of their difference, that
is ~3.4e-7 * sqrt(K): the rule keeps a factor 3 of margin in float32 (10^4 in float64).
`max(1, rms)` makes it relative for sums that grow like sqrt(K) (weight gradients).
Elements that are NaN on both sides agree; an infinity only agrees with itself.

Finite differences (`finite_difference`): central, step 1e-6, float64, of
`L(x) = sum(f(x) * c)` for a seeded random cotangent `c` (the VJP, not the gradient of sum).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

ATOL = {np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-12}


def tolerance(expected: np.ndarray, terms: int) -> float:
    finite = expected[np.isfinite(expected)]
    rms = float(np.sqrt(np.mean(finite.astype(np.float64) ** 2))) if finite.size else 0.0
    return ATOL[expected.dtype] * np.sqrt(max(terms, 1)) * max(1.0, rms)


def assert_close(actual: np.ndarray, expected: np.ndarray, terms: int, what: str = "") -> None:
    """`actual` has `expected`'s dtype and shape and agrees within the rule above."""
    assert isinstance(actual, np.ndarray), f"{what}: {type(actual)}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    both_nan = np.isnan(actual) & np.isnan(expected)
    same_inf = np.isinf(expected) & (actual == expected)
    other = ~(both_nan | same_inf)
    assert np.all(np.isfinite(actual[other]) & np.isfinite(expected[other])), (
        f"{what}: non-finite values at different places"
    )
    err = float(np.max(np.abs(actual[other] - expected[other]), initial=0.0))
    bound = tolerance(expected, terms)
    assert err <= bound, f"{what}: max |diff| {err:.3g} > {bound:.3g} ({terms} terms)"


def cotangent(shape, dtype=np.float64, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def finite_difference(
    f: Callable[..., np.ndarray], inputs: list[np.ndarray], c: np.ndarray, eps: float = 1e-6
) -> list[np.ndarray]:
    """d/dx_i of sum(f(*inputs) * c), element by element (float64 inputs)."""
    grads = []
    for i, x in enumerate(inputs):
        g = np.zeros_like(x)
        for j in np.ndindex(x.shape):
            values = [v.copy() for v in inputs]
            values[i][j] = x[j] + eps
            up = np.sum(f(*values) * c)
            values[i][j] = x[j] - eps
            down = np.sum(f(*values) * c)
            g[j] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


def assert_fd(analytic: np.ndarray, numeric: np.ndarray, what: str = "") -> None:
    """A VJP against finite differences: the kernels are (piecewise) linear in each input, so
    central differences are exact up to rounding, ~1e-16 * |L| / eps ~ 1e-9 here."""
    assert analytic.dtype == np.float64 and analytic.shape == numeric.shape, what
    scale = max(1.0, float(np.max(np.abs(numeric))))
    err = float(np.max(np.abs(analytic - numeric), initial=0.0))
    assert err <= 1e-7 * scale, f"{what}: max |VJP - FD| {err:.3g}"


# ---------------------------------------------------------------------------------------------
# the checks can fail
# ---------------------------------------------------------------------------------------------


def test_finite_difference_matches_an_analytic_vjp():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 2))
    c = cotangent((3, 2))
    (g,) = finite_difference(lambda a: a**3, [x], c)
    assert_fd(3 * x**2 * c, g)
    with pytest.raises(AssertionError):
        assert_fd(3 * x**2 * c + 1e-5, g)


def test_assert_close_rejects_what_the_rule_does_not_allow():
    expected = np.ones(100, dtype=np.float32)
    bound = tolerance(expected, 16)
    assert bound == pytest.approx(4e-6)
    assert_close(expected + np.float32(3e-6), expected, 16)
    with pytest.raises(AssertionError, match="max"):
        assert_close(expected + np.float32(6e-6), expected, 16)
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(expected.astype(np.float64), expected, 16)
    nan = np.array([np.nan, np.inf, 1.0])
    assert_close(nan.copy(), nan, 1)
    with pytest.raises(AssertionError, match="non-finite"):
        assert_close(np.array([np.nan, np.nan, 1.0]), nan, 1)
