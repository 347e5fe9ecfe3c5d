"""Trajectories: two runs compared step by step, how their gap grows, and whether the gap is
rounding or a formula difference (the float64 reruns).

A trajectory is a set of values whose first axis is the step (``loss`` of shape ``[steps]``,
``params.fc1.weight`` of shape ``[steps, 8, 4]``). Per step, over every key: max|diff|, max
ULP and the number of elements outside the tolerance. Over the run:

- the first step over the tolerance, if any;
- a growth class fitted to the per-step max|diff| of the float32 pair (:func:`fit_growth`):
  ``bounded``, ``linear`` (slope per step), ``exponential`` (factor per step), ``step`` (a jump
  at one step), or ``undetermined`` ("too short to tell") when the series is short or too noisy
  for any of them;
- the float64 verdict (:func:`precision_verdict`): the same experiment run by both sides in
  float64. Rounding shrinks by ``eps64 / eps32 = 2**-29`` from float32 to float64, a formula
  difference (another formula, another constant, or an op order in a precision the dtype does
  not control, such as a float32 scalar) does not;
- per step, which float32 side is closer to the reference (the float64 run of the left side).

Only numbers: ``harness.checks`` builds a :class:`TrajectoryReport` from a case's values and
``harness.report.trajectory`` renders it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from harness.diff import diff_arrays
from harness.tolerances import Tolerance

MIN_STEPS = 8
"""Fewer steps than this: the growth is "too short to tell" (two points fit any line)."""

FIT_R2 = 0.8
"""A growth model explains the series when its R^2 reaches this; below, "too short to tell"."""

CLEARLY_BETTER = 0.5
"""A model other than linear is chosen only if it leaves at most this share of the linear
model's unexplained variance (the simplest model that fits wins)."""

PARTS_BITS = 10.0
"""The float64 pair parts when its gap, in float64 eps at the values' scale, exceeds the
float32 pair's gap in float32 eps by more than 2**10 at some step. Rounding keeps the two about
equal (measured: 0 to 6 bits in this project's cases); a formula difference makes the float64
gap 2**29 times larger than rounding would (measured: 29 to 31 bits)."""

SATURATED_EPS = 2.0**20
"""A float32 gap beyond 2**20 float32 eps of the values' scale keeps only 3 bits in common:
such steps say nothing about rounding and are left out of the float64 verdict."""

_EPS = {"float32": 2.0**-23, "float64": 2.0**-52}


class Growth(StrEnum):
    """How the per-step max|diff| of a trajectory evolves."""

    BOUNDED = "bounded"  # no significant growth (noise around a level, or shrinking)
    LINEAR = "linear"  # a + b*k
    EXPONENTIAL = "exponential"  # c * f**k
    STEP = "step"  # one level, then another from one step on
    SATURATING = "saturating"  # a steady rise that levels off
    UNDETERMINED = "undetermined"  # too short, or too noisy, to tell


class Precision(StrEnum):
    """What the float64 reruns say about the float32 gap."""

    ROUNDING = "rounding"  # the float64 runs agree to float64 rounding
    FORMULA = "formula"  # the float64 runs part too


# ---------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class PairSeries:
    """Per-step statistics of one pair of runs (float32 or float64): tuples indexed by step.

    ``max_abs`` is over finite pairs (0.0 when none); ``max_ulp`` None when a step has no
    finite float pair; ``mismatches`` counts elements outside the tolerance (NaN/inf
    mismatches included); ``nonfinite`` the NaN/inf mismatches alone.
    """

    dtype: str
    max_abs: tuple[float, ...]
    max_ulp: tuple[int | None, ...]
    mismatches: tuple[int, ...]
    nonfinite: tuple[int, ...]
    elements: int  # per step, over every key


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


@dataclass(frozen=True)
class PrecisionVerdict:
    """The float64 verdict. ``excess_bits``: the largest log2 of (float64 gap in float64 eps)
    over (float32 gap in float32 eps, at least 1) of the steps used; ``at`` that step;
    ``used`` the steps used (the unsaturated ones)."""

    verdict: Precision
    excess_bits: float
    at: int | None
    used: int


@dataclass(frozen=True)
class TrajectoryReport:
    """Everything a trajectory check found, as numbers (renderers read this only).

    ``labels``: the two sides; ``reference``: whose float64 run is "exact";
    ``distance``: per side label, the per-step max|float32 value - reference|;
    ``closer``: per step ``"left"``, ``"right"`` or ``"tie"``.
    """

    keys: tuple[str, ...]
    steps: int
    labels: tuple[str, str]
    reference: str
    tol: Tolerance
    float32: PairSeries
    float64: PairSeries
    first_over_tol: int | None
    growth: GrowthFit
    precision: PrecisionVerdict
    distance: tuple[tuple[float, ...], tuple[float, ...]]
    closer: tuple[str, ...]

    def closer_counts(self) -> dict[str, int]:
        return {side: self.closer.count(side) for side in ("left", "right", "tie")}


class TrajectoryError(ValueError):
    """The values do not form a trajectory (one line, naming the key)."""


# ---------------------------------------------------------------------------------------------
# Per-step statistics


def step_count(values: Mapping[str, np.ndarray]) -> int:
    """The common length of the first axis of every value, or a TrajectoryError."""
    lengths = {}
    for key, value in values.items():
        if not isinstance(value, np.ndarray) or value.ndim == 0 or value.dtype.kind != "f":
            raise TrajectoryError(
                f"{key}: a trajectory value is a float tensor whose first axis is the step, "
                f"got {_kind(value)}"
            )
        lengths[key] = value.shape[0]
    if len(set(lengths.values())) > 1:
        raise TrajectoryError(f"keys have different step counts: {lengths}")
    return next(iter(lengths.values()))


def _kind(value) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{list(value.shape)}"
    return type(value).__name__


def pair_series(
    a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray], tol_for, steps: int
) -> PairSeries:
    """Per-step max|diff|, max ULP and mismatches of two same-keyed trajectories.

    max|diff| and ULP distances are computed for all steps at once; the tolerance rule is
    ``harness.diff``'s, applied (per step and key) only where a step could hold a mismatch.
    """
    dtypes = {v.dtype.name for v in (*a.values(), *b.values())}
    if len(dtypes) != 1:
        raise TrajectoryError(f"mixed dtypes in one pair: {sorted(dtypes)}")
    (dtype,) = dtypes
    max_abs = np.zeros(steps)
    max_ulp = np.full(steps, -1, np.int64)
    mismatches = np.zeros(steps, np.int64)
    nonfinite = np.zeros(steps, np.int64)
    elements = 0
    for key in a:
        x, y = a[key].reshape(steps, -1), b[key].reshape(steps, -1)
        if x.shape != y.shape:
            raise TrajectoryError(
                f"{key}: shapes differ: {list(a[key].shape)} vs {list(b[key].shape)}"
            )
        elements += x.shape[1]
        finite = np.isfinite(x) & np.isfinite(y)
        gap = np.where(finite, np.abs(x.astype(np.float64) - y.astype(np.float64)), 0.0)
        max_abs = np.maximum(max_abs, gap.max(axis=1, initial=0.0))
        ulp = np.where(finite, ulp_distances(x, y), -1)
        max_ulp = np.maximum(max_ulp, ulp.max(axis=1, initial=-1))
        tol = tol_for(key, dtype)
        # All |diff| <= atol / 2 agree under any rule (|diff| in the input dtype is within a
        # relative 2**-24 of the exact one): only the other steps need diff's full pass.
        suspect = (gap.max(axis=1, initial=0.0) > tol.atol / 2) | ~finite.all(axis=1)
        for k in np.flatnonzero(suspect):
            row = diff_arrays(x[k], y[k], tol, key)
            mismatches[k] += row.mismatches
            nonfinite[k] += row.nan_mismatches + row.inf_mismatches
    return PairSeries(
        dtype=dtype,
        max_abs=tuple(float(v) for v in max_abs),
        max_ulp=tuple(int(v) if v >= 0 else None for v in max_ulp),
        mismatches=tuple(int(v) for v in mismatches),
        nonfinite=tuple(int(v) for v in nonfinite),
        elements=elements,
    )


def ulp_distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Elementwise ULP distance of two float arrays of one dtype (int64; +0 and -0 are 0 apart;
    meaningless where either is not finite)."""
    itype = np.int32 if x.dtype == np.float32 else np.int64
    width = 8 * x.dtype.itemsize - 1
    mask = (1 << width) - 1
    ox, oy = (np.ascontiguousarray(v).view(itype).astype(np.int64) for v in (x, y))
    mx, my = ox & mask, oy & mask
    same_sign = (ox < 0) == (oy < 0)
    # Opposite signs: the distance is the sum of both magnitudes (through zero); uint64 so that
    # two large float64 magnitudes cannot overflow, clipped to int64 for the caller.
    across = np.minimum(mx.astype(np.uint64) + my.astype(np.uint64), np.iinfo(np.int64).max)
    return np.where(same_sign, np.abs(mx - my), across.astype(np.int64))


def distance_series(
    values: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray], steps: int
) -> tuple[float, ...]:
    """Per-step max|value - reference| over every key, in float64 (NaN where non-finite)."""
    out = np.zeros(steps)
    for key, value in values.items():
        gap = np.abs(value.astype(np.float64) - reference[key]).reshape(steps, -1)
        out = np.maximum(out, gap.max(axis=1, initial=0.0))
    return tuple(float(v) for v in out)


def closer_sides(left: Sequence[float], right: Sequence[float]) -> tuple[str, ...]:
    return tuple(
        "left" if a < b else "right" if b < a else "tie" for a, b in zip(left, right, strict=True)
    )


def first_over(series: PairSeries) -> int | None:
    """The first step with an element outside the tolerance."""
    return next((k for k, n in enumerate(series.mismatches) if n), None)


# ---------------------------------------------------------------------------------------------
# The float64 verdict


def eps_gaps(
    a: Mapping[str, np.ndarray],
    b: Mapping[str, np.ndarray],
    scale: Mapping[str, np.ndarray],
    steps: int,
    dtype: str,
) -> np.ndarray:
    """Per step, the largest per-key max|a - b| in units of ``dtype``'s eps at that key's
    scale (max|scale| at the step): how many roundings apart the pair is."""
    eps = _EPS[dtype]
    out = np.zeros(steps)
    for key in a:
        gap = np.abs(a[key].astype(np.float64) - b[key].astype(np.float64)).reshape(steps, -1)
        size = np.abs(scale[key].astype(np.float64)).reshape(steps, -1).max(axis=1, initial=0.0)
        size = np.maximum(size, np.finfo(np.float64).tiny)
        gap = np.where(np.isfinite(gap), gap, np.inf)
        out = np.maximum(out, gap.max(axis=1, initial=0.0) / (eps * size))
    return out


def precision_verdict(eps32: Sequence[float], eps64: Sequence[float]) -> PrecisionVerdict:
    """Rounding or formula, from both pairs' per-step gaps in their own eps (:func:`eps_gaps`).

    Rounding leaves about as many float64 eps between the float64 runs as float32 eps between
    the float32 runs (the same operations round, amplified alike); a formula difference leaves
    about the same *absolute* gap, ``2**29`` float64 eps per float32 eps. Steps where the
    float32 runs are saturated are left out (they have parted beyond what rounding predicts);
    if every step is, the float64 gap alone decides against the same bound.
    """
    n32, n64 = np.asarray(eps32, np.float64), np.asarray(eps64, np.float64)
    used = n32 <= SATURATED_EPS
    if not used.any():
        used = np.ones_like(used)
        n32 = np.ones_like(n32)
    with np.errstate(divide="ignore", invalid="ignore"):
        bits = np.log2(np.maximum(n64, 1.0) / np.maximum(n32, 1.0))
    bits = np.where(used, np.nan_to_num(bits, nan=np.inf, posinf=np.inf), -np.inf)
    at = int(np.argmax(bits)) if bits.size else None
    excess = float(bits[at]) if at is not None else 0.0
    verdict = Precision.FORMULA if excess > PARTS_BITS else Precision.ROUNDING
    return PrecisionVerdict(verdict, excess, at, int(used.sum()))


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
        reason = f"too short to tell: {n} steps (< {MIN_STEPS})"
        return GrowthFit(Growth.UNDETERMINED, reason=reason)
    if not np.isfinite(y).all() or (y < 0).any():
        return GrowthFit(Growth.UNDETERMINED, reason="too short to tell: non-finite gaps")
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
        reason = f"too short to tell: too noisy (slope {b:.2g} +- {se:.2g} per step)"
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
        reason = f"too short to tell: no model fits (best {best.growth} R2={best.r2:.3f}; {others})"
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


# ---------------------------------------------------------------------------------------------
# The whole analysis


def analyse(
    left: Mapping[str, np.ndarray],
    right: Mapping[str, np.ndarray],
    left64: Mapping[str, np.ndarray],
    right64: Mapping[str, np.ndarray],
    *,
    tol_for,
    labels: tuple[str, str],
) -> TrajectoryReport:
    """Compare two float32 trajectories and their float64 reruns (same keys in all four).

    The reference is the left side's float64 run. Raises TrajectoryError naming the key when
    the values are not trajectories or the four runs do not line up.
    """
    keys = tuple(left)
    for name, run in (("right", right), ("left float64", left64), ("right float64", right64)):
        if tuple(run) != keys:
            missing = sorted(set(keys) ^ set(run))
            raise TrajectoryError(f"{name} run has other keys: {missing}")
    steps = step_count({**left, **{f"{k} (right)": v for k, v in right.items()}})
    if step_count({**left64, **{f"{k} (right)": v for k, v in right64.items()}}) != steps:
        raise TrajectoryError("the float64 runs have another number of steps")
    f32 = pair_series(left, right, tol_for, steps)
    f64 = pair_series(left64, right64, tol_for, steps)
    verdict = precision_verdict(
        eps_gaps(left, right, left64, steps, f32.dtype),
        eps_gaps(left64, right64, left64, steps, f64.dtype),
    )
    distance = (distance_series(left, left64, steps), distance_series(right, left64, steps))
    return TrajectoryReport(
        keys=keys,
        steps=steps,
        labels=labels,
        reference=f"{labels[0]} float64",
        tol=_dominant(left, tol_for, f32.dtype),
        float32=f32,
        float64=f64,
        first_over_tol=first_over(f32),
        growth=fit_growth(f32.max_abs, rounding=verdict.verdict == Precision.ROUNDING),
        precision=verdict,
        distance=distance,
        closer=closer_sides(*distance),
    )


def _dominant(values: Mapping[str, np.ndarray], tol_for, dtype: str) -> Tolerance:
    """The tolerance of most elements (the line drawn in the report)."""
    weight: dict[Tolerance, int] = {}
    for key, value in values.items():
        tol = tol_for(key, dtype)
        weight[tol] = weight.get(tol, 0) + value.size
    return max(weight.items(), key=lambda item: item[1])[0]


# ---------------------------------------------------------------------------------------------
# Verdicts of the checks built on a trajectory (harness.checks)

GROWING = (Growth.LINEAR, Growth.EXPONENTIAL, Growth.STEP, Growth.SATURATING)


def same_formula(report: TrajectoryReport) -> tuple[bool, str]:
    """A trajectory check: holds while the float64 runs agree to float64 rounding."""
    if report.precision.verdict == Precision.ROUNDING:
        return True, "same formula: the float64 runs agree to float64 rounding"
    return False, (
        "formula difference: the float64 runs part too (document it with "
        "differ(..., systematic=True))"
    )


def systematic_text(expected: bool | Growth) -> str:
    """The relation a systematic differ states, as the report shows it."""
    growth = "grows" if expected is True else f"growth={expected}"
    return f"systematic: the float64 runs part too and the gap {growth}"


def systematic_holds(report: TrajectoryReport, expected: bool | Growth) -> tuple[bool, str]:
    """A systematic differ: holds while the float64 runs part and the growth is as declared
    (``True``: any of ``GROWING``)."""
    if report.precision.verdict == Precision.ROUNDING:
        return False, (
            "expected divergence vanished: the float64 runs agree to float64 rounding "
            "(the gap is rounding now)"
        )
    growth = report.growth.growth
    wanted = GROWING if expected is True else (expected,)
    if growth not in wanted:
        declared = " / ".join(str(g) for g in wanted)
        return False, f"the float64 runs part, but growth={growth}, not {declared} as declared"
    return True, f"systematic divergence as documented: the float64 runs part, growth={growth}"
