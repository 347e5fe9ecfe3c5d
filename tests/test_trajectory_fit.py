"""harness.trajectory: the growth fit on synthetic series of known class and rate, the per-step
statistics against harness.diff, and the float64 verdict on a toy training loop whose two
sides differ by a reordered sum (rounding) or by a formula (a modified epsilon, a constant
rounded to float32)."""

import math

import numpy as np
import pytest

from harness.diff import diff_arrays, ulp_distance
from harness.tolerances import Tolerance, default_tolerance
from harness.trajectory import (
    MIN_STEPS,
    Growth,
    Precision,
    TrajectoryError,
    analyse,
    fit_growth,
    pair_series,
    ulp_distances,
)

K = np.arange(100, dtype=np.float64)


def rng(seed=0):
    return np.random.default_rng(seed)  # one per test: a test's data never depends on the order


def noisy(series, relative, seed=0):
    """Multiplicative noise: a gap series stays positive, as a max|diff| does."""
    return series * (1 + relative * rng(seed).standard_normal(series.size))


# ---- growth classes ---------------------------------------------------------------------------


def test_bounded_noise_is_bounded_at_its_level():
    fit = fit_growth(1e-7 * (1 + 0.3 * rng().standard_normal(100)).clip(0.1))
    assert fit.growth == Growth.BOUNDED
    assert fit.level == pytest.approx(1e-7, rel=0.1)
    assert fit.reason.startswith("no trend")


def test_linear_growth_and_its_slope():
    fit = fit_growth(noisy(2e-8 + 1.4e-7 * K, 0.03))
    assert fit.growth == Growth.LINEAR
    assert fit.rate == pytest.approx(1.4e-7, rel=0.03)
    assert fit.r2 > 0.99


def test_exponential_growth_and_its_factor():
    fit = fit_growth(noisy(1e-9 * 1.05**K, 0.05))
    assert fit.growth == Growth.EXPONENTIAL
    assert fit.rate == pytest.approx(1.05, abs=0.003)
    assert fit.level == pytest.approx(1e-9, rel=0.3)


def test_a_step_change_is_found_at_its_step():
    series = np.where(K < 60, 1e-8, 1e-6)
    fit = fit_growth(noisy(series, 0.05))
    assert fit.growth == Growth.STEP
    assert fit.at == 60
    assert fit.rate == pytest.approx(100, rel=0.05)


def test_saturating_growth_levels_off_where_it_stops():
    fit = fit_growth(noisy(1e-8 * np.minimum(K, 30) + 1e-9, 0.02))
    assert fit.growth == Growth.SATURATING
    assert fit.at == pytest.approx(30, abs=1)
    assert fit.rate == pytest.approx(1e-8, rel=0.05)
    assert fit.level == pytest.approx(3.01e-7, rel=0.03)


def test_a_shrinking_gap_is_bounded():
    fit = fit_growth(noisy(1e-6 * 0.97**K, 0.02))
    assert fit.growth == Growth.BOUNDED and fit.reason.startswith("shrinks")


@pytest.mark.parametrize("n", [1, 2, MIN_STEPS - 1])
def test_short_series_are_undetermined(n):
    fit = fit_growth(1e-8 * (1 + np.arange(n)))  # a perfect line: still not enough steps
    assert fit.growth == Growth.UNDETERMINED
    assert fit.reason == f"{n} steps (< {MIN_STEPS})"


def test_a_short_noisy_series_is_undetermined_not_a_guess():
    series = np.array([1.0, 5.0, 0.2, 4.0, 0.5, 6.0, 0.1, 3.0, 0.3, 7.0, 0.2, 5.0]) * 1e-8
    fit = fit_growth(series)
    assert fit.growth == Growth.UNDETERMINED
    assert fit.reason.startswith("too noisy (slope ")


def test_a_long_unstructured_series_fits_no_model():
    """A weak real trend under big noise: no model reaches R^2 0.8, so no class is claimed;
    the same series known to be rounding (float64 verdict) is rounding noise: bounded."""
    series = (1 + 0.02 * K) * np.abs(rng().standard_normal(100)) * 1e-8 + 1e-9
    fit = fit_growth(series)
    assert fit.growth == Growth.UNDETERMINED
    assert "no model fits" in fit.reason
    rounding = fit_growth(series, rounding=True)
    assert rounding.growth == Growth.BOUNDED
    assert rounding.reason.startswith("rounding noise")


def test_identical_and_non_finite_series():
    assert fit_growth(np.zeros(20)).growth == Growth.BOUNDED
    assert fit_growth(np.zeros(20)).level == 0.0
    nan = fit_growth(np.r_[np.ones(10), np.nan])
    assert nan.growth == Growth.UNDETERMINED and "non-finite" in nan.reason


# ---- per-step statistics ----------------------------------------------------------------------


def test_pair_series_matches_diff_arrays_step_by_step():
    a = rng().standard_normal((12, 3, 4)).astype(np.float32)
    b = a.copy()
    b[3, 1, 2] = np.nextafter(b[3, 1, 2], np.float32(np.inf))
    b[5] += np.float32(3e-6)  # over the 1e-6 tolerance
    b[7, 0, 0] = np.nan
    b[9, 2, 3] = -a[9, 2, 3]  # across zero
    tol = default_tolerance("float32")
    series = pair_series({"w": a}, {"w": b}, lambda key, dtype: tol, 12)
    for k in range(12):
        row = diff_arrays(a[k], b[k], tol)
        assert series.max_abs[k] == pytest.approx(row.max_abs or 0.0, rel=1e-12, abs=0)
        assert series.max_ulp[k] == row.max_ulp
        assert series.mismatches[k] == row.mismatches
        assert series.nonfinite[k] == row.nan_mismatches + row.inf_mismatches
    assert series.mismatches[5] == 12 and series.nonfinite[7] == 1 and series.elements == 12


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ulp_distances_match_the_scalar_definition(dtype):
    r = rng()
    x = (r.standard_normal(500) * 10.0 ** r.integers(-30, 30, 500)).astype(dtype)
    y = (x * (1 + r.standard_normal(500) * 1e-6)).astype(dtype)
    y[::7] = -y[::7]  # pairs across zero
    y[3], x[4], y[5] = 0.0, -0.0, x[5]
    got = ulp_distances(x, y)
    want = [ulp_distance(float(p), float(q), dtype) for p, q in zip(x, y, strict=True)]
    assert got.tolist() == [min(w, 2**63 - 1) for w in want]


def test_values_that_are_not_trajectories_are_refused():
    tol_for = lambda key, dtype: default_tolerance(dtype)  # noqa: E731
    one = {"w": np.zeros((3, 2), np.float32)}
    with pytest.raises(TrajectoryError, match="w: a trajectory value is a float tensor"):
        analyse({"w": np.float32(1.0)}, one, one, one, tol_for=tol_for, labels=("a", "b"))
    other = {"w": np.zeros((4, 2), np.float32)}
    with pytest.raises(TrajectoryError, match="different step counts"):
        analyse(one, other, one, one, tol_for=tol_for, labels=("a", "b"))
    with pytest.raises(TrajectoryError, match="other keys"):
        analyse(one, {"v": one["w"]}, one, one, tol_for=tol_for, labels=("a", "b"))


# ---- the float64 verdict on a toy training loop -------------------------------------------------

STEPS = 60
A = (((np.arange(48).reshape(12, 4) * 7) % 11) * 0.1 - 0.5).astype(np.float32)
B = ((np.arange(12) % 5) * 0.2 - 0.3).astype(np.float32)


def descent(dtype, *, reverse=False, eps=1e-3, f32_rate=False):
    """Least squares by RMS-normalised gradient steps; the gradient's sum over the 12 rows is
    sequential (cumsum), in the order given. Returns the trajectory of w and of the loss."""
    dt = np.dtype(dtype).type
    a, b = A.astype(dtype), B.astype(dtype)
    rate = dt(np.float32(0.05) if f32_rate else 0.05)  # f32_rate: a constant fixed at float32
    w = np.zeros(4, dtype)
    ws, losses = [], []
    for _ in range(STEPS):
        r = a @ w - b
        terms = a * r[:, None]
        g = np.cumsum(terms[::-1] if reverse else terms, axis=0)[-1]
        w = w - rate * g / (np.sqrt(np.mean(g * g)) + dt(eps))
        ws.append(w)
        losses.append(np.mean(r * r))
    return {"w": np.stack(ws), "loss": np.array(losses, dtype)}


def compare(**variant):
    """The reference loop against a variant, in float32 and float64."""
    return analyse(
        descent("float32"),
        descent("float32", **variant),
        descent("float64"),
        descent("float64", **variant),
        tol_for=lambda key, dtype: Tolerance(1e-6, reason="test"),
        labels=("reference", "variant"),
    )


def test_a_reordered_sum_is_rounding():
    report = compare(reverse=True)
    assert max(report.float32.max_abs) > 0  # the float32 runs do part
    assert max(report.float64.max_abs) < 1e-12
    assert report.precision.verdict == Precision.ROUNDING
    assert report.precision.excess_bits < 8


def test_a_modified_epsilon_is_a_formula_difference():
    report = compare(eps=1.001e-3)
    assert report.precision.verdict == Precision.FORMULA
    assert report.precision.excess_bits > 20
    # the same gap in both precisions: a formula difference does not shrink with eps
    ratio = max(report.float64.max_abs) / max(report.float32.max_abs)
    assert 0.5 < ratio < 2


def test_a_constant_rounded_to_float32_parts_only_in_float64():
    """A constant fixed at float32 whatever the dtype: the float32 runs are bit-identical,
    the float64 runs part by the constant's rounding; the verdict says formula."""
    report = compare(f32_rate=True)
    assert max(report.float32.max_abs) == 0
    assert report.precision.verdict == Precision.FORMULA
    assert report.growth.growth == Growth.BOUNDED and report.growth.level == 0


def test_closer_to_exact_is_counted_per_step():
    report = compare(reverse=True)
    assert len(report.closer) == STEPS
    counts = report.closer_counts()
    assert sum(counts.values()) == STEPS
    for k, side in enumerate(report.closer):
        left, right = report.distance[0][k], report.distance[1][k]
        assert side == ("left" if left < right else "right" if right < left else "tie")
    assert all(math.isfinite(d) for d in report.distance[0])
