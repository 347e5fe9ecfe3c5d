"""The growth class of a per-step gap series: bounded, linear, exponential, a step change,
saturating, or ``undetermined`` (too short or too noisy to tell), with the fit's numbers.

A class has one name everywhere (text, JSON, HTML): its ``Growth`` value; ``reason`` says why,
never repeating the class."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

MIN_STEPS = 8
"""Fewer steps than this: the growth is undetermined (two points fit any line)."""

FIT_R2 = 0.8
"""A growth model explains the series when its R^2 reaches this; below, undetermined."""

CLEARLY_BETTER = 0.5
"""A model with more parameters (or exponential over linear) is chosen only if it leaves at
most this share of the unexplained variance of the one it replaces: the simplest model that
fits wins."""


class Growth(StrEnum):
    """How the per-step max|diff| of a trajectory evolves."""

    BOUNDED = "bounded"  # no growth: noise around a level, shrinking, or rounding noise
    LINEAR = "linear"  # a + b*k
    EXPONENTIAL = "exponential"  # c * f**k
    STEP = "step"  # one level, then another from one step on
    SATURATING = "saturating"  # a steady rise that levels off
    UNDETERMINED = "undetermined"  # too short, or too noisy, to tell


@dataclass(frozen=True)
class GrowthFit:
    """The growth class of a series and the fit's numbers.

    ``rate``: linear and saturating, the slope per step (saturating: while it rises);
    exponential, the factor per step; step, the ratio of the second level to the first.
    ``level``: bounded, the mean; linear, the value at step 0; exponential, the value at step
    0; step, the first level; saturating, the plateau. ``at``: the step where a step change
    starts or a saturating gap levels off. ``r2``: the chosen model's R^2 (None for bounded).
    ``reason``: one line on why this class.
    """

    growth: Growth
    rate: float | None = None
    level: float | None = None
    r2: float | None = None
    at: int | None = None
    reason: str = ""


# ---------------------------------------------------------------------------------------------
# The growth fit


@dataclass(frozen=True)
class _Fit:
    growth: Growth
    r2: float
    params: tuple[float, ...]


def fit_growth(series: Sequence[float], *, rounding: bool = False) -> GrowthFit:
    """The growth class of a per-step gap series (non-negative; non-finite values are refused).

    ``rounding``: the float64 verdict says the gap is rounding. A rounding gap of at least
    ``MIN_STEPS`` steps that no growth model explains is rounding noise, which is bounded
    ("rounding-level, no trend") rather than undetermined.

    1. Fewer than ``MIN_STEPS`` steps: undetermined. All zero: bounded at 0.
    2. A least-squares line over the run; the gap grows when the slope exceeds twice its
       standard error. Without growth the series is bounded if it shrinks, or if the rise over
       the run with its 2-sigma margin stays within the mean level; otherwise the noise could
       hide a trend: undetermined.
    3. A growing gap is fitted by the two-parameter models, linear and exponential (log-linear,
       weighted by y^2, which approximates least squares on y), then by the three-parameter
       ones, a step (two levels) and saturating (``a + b * min(k, s)``: a steady rise that
       levels off at step s). A model with more parameters, or exponential over linear, wins
       only if it leaves at most ``CLEARLY_BETTER`` of the unexplained variance of the one it
       replaces. The winner must reach R^2 >= ``FIT_R2``; otherwise: undetermined.
    """
    y = np.asarray(series, np.float64)
    n = y.size
    if n < MIN_STEPS:
        reason = f"{n} steps (< {MIN_STEPS})"
        return GrowthFit(Growth.UNDETERMINED, reason=reason)
    if not np.isfinite(y).all() or (y < 0).any():
        return GrowthFit(Growth.UNDETERMINED, reason="non-finite gaps")
    if not y.any():
        return GrowthFit(Growth.BOUNDED, level=0.0, reason="identical at every step")
    k = np.arange(n, dtype=np.float64)
    a, b, se = _line(k, y)
    level = float(y.mean())
    if b > 2 * se:
        fit = _choose(y, _Fit(Growth.LINEAR, _r2(y, a + b * k), (b, a)))
    elif b < -2 * se:
        return GrowthFit(Growth.BOUNDED, level=level, reason=f"shrinks ({b:.2g}/step)")
    else:
        rise, margin = b * (n - 1), 2 * se * (n - 1)
        if abs(rise) + margin <= level:
            reason = f"no trend: rise {rise:.2g} +- {margin:.2g} over the run, level {level:.2g}"
            return GrowthFit(Growth.BOUNDED, level=level, reason=reason)
        reason = f"too noisy (slope {b:.2g} +- {se:.2g} per step)"
        fit = GrowthFit(Growth.UNDETERMINED, level=level, reason=reason)
    if fit.growth == Growth.UNDETERMINED and rounding:
        reason = f"rounding noise, no trend a model explains ({fit.reason})"
        return GrowthFit(Growth.BOUNDED, level=level, reason=reason)
    return fit


def _choose(y: np.ndarray, linear: _Fit) -> GrowthFit:
    fits = [linear, _exponential(y), _step(y), _saturating(y)]
    best = linear
    if fits[1] is not None and _clearly_better(fits[1], linear):
        best = fits[1]
    richer = [f for f in fits[2:] if f is not None and _clearly_better(f, best)]
    if richer:
        best = max(richer, key=lambda f: f.r2)
    others = ", ".join(f"{f.growth} R2={f.r2:.3f}" for f in fits if f is not None and f is not best)
    if best.r2 < FIT_R2:
        reason = f"no model fits (best {best.growth} R2={best.r2:.3f}; {others})"
        return GrowthFit(Growth.UNDETERMINED, r2=best.r2, reason=reason)
    reason = f"R2={best.r2:.3f} ({others})"
    rate, level, *at = best.params
    return GrowthFit(
        best.growth,
        rate=rate,
        level=level,
        r2=best.r2,
        at=int(at[0]) if at else None,
        reason=reason,
    )


def _clearly_better(fit: _Fit, than: _Fit) -> bool:
    return 1 - fit.r2 <= CLEARLY_BETTER * (1 - than.r2)


def _line(k: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Least-squares intercept, slope and the slope's standard error."""
    kc = k - k.mean()
    sxx = float(kc @ kc)
    b = float(kc @ (y - y.mean())) / sxx
    a = float(y.mean()) - b * float(k.mean())
    residual = y - (a + b * k)
    se = math.sqrt(float(residual @ residual) / max(k.size - 2, 1) / sxx)
    return a, b, se


def _r2(y: np.ndarray, pred: np.ndarray) -> float:
    total = float(((y - y.mean()) ** 2).sum())
    return 1.0 - float(((y - pred) ** 2).sum()) / total if total else 1.0


def _exponential(y: np.ndarray) -> _Fit | None:
    """``y = c * f**k`` from ``log y`` on the positive steps, weighted by y^2; R^2 on y.
    params: (factor per step, value at step 0)."""
    k = np.arange(y.size, dtype=np.float64)
    positive = y > 0
    if positive.sum() < MIN_STEPS // 2:
        return None
    kp, ly, w = k[positive], np.log(y[positive]), y[positive] ** 2
    w = w / w.sum()
    km, lm = float(w @ kp), float(w @ ly)
    sxx = float(w @ (kp - km) ** 2)
    if sxx == 0:
        return None
    r = float(w @ ((kp - km) * (ly - lm))) / sxx
    log_c = lm - r * km
    return _Fit(Growth.EXPONENTIAL, _r2(y, np.exp(log_c + r * k)), (math.exp(r), math.exp(log_c)))


def _step(y: np.ndarray) -> _Fit | None:
    """Two levels split at the best step (each at least 3 steps long), the second higher.
    params: (second level / first, first level, the step where the second starts)."""
    n = y.size
    cum, cum2 = np.cumsum(y), np.cumsum(y * y)
    at = np.arange(3, n - 2)
    low = cum[at - 1] / at
    high = (cum[-1] - cum[at - 1]) / (n - at)
    ssr = (cum2[at - 1] - at * low**2) + (cum2[-1] - cum2[at - 1] - (n - at) * high**2)
    ssr = np.where(high > low, ssr, np.inf)
    if not at.size or not np.isfinite(ssr).any():
        return None
    i = int(np.argmin(ssr))
    total = float(((y - y.mean()) ** 2).sum())
    ratio = float(high[i] / low[i]) if low[i] > 0 else math.inf
    r2 = 1.0 - max(float(ssr[i]), 0.0) / total
    return _Fit(Growth.STEP, r2, (ratio, float(low[i]), float(at[i])))


def _saturating(y: np.ndarray) -> _Fit | None:
    """``a + b * min(k, s)`` with the best s (at least 3 steps before the plateau and 3 on
    it) and b > 0. params: (b per step, the plateau level a + b*s, s)."""
    n = y.size
    k = np.arange(n, dtype=np.float64)
    s = np.arange(3, n - 3, dtype=np.float64)
    if not s.size:
        return None
    z = np.minimum(k[None, :], s[:, None])  # one regressor per candidate s
    zc = z - z.mean(axis=1, keepdims=True)
    yc = y - y.mean()
    b = (zc @ yc) / (zc * zc).sum(axis=1)
    ssr = ((yc[None, :] - b[:, None] * zc) ** 2).sum(axis=1)
    ssr = np.where(b > 0, ssr, np.inf)
    if not np.isfinite(ssr).any():
        return None
    i = int(np.argmin(ssr))
    a = float(y.mean() - b[i] * z[i].mean())
    total = float((yc**2).sum())
    r2 = 1.0 - float(ssr[i]) / total
    return _Fit(Growth.SATURATING, r2, (float(b[i]), a + float(b[i]) * s[i], float(s[i])))
