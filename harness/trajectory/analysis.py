"""Two trajectories compared step by step, and whether their gap is rounding or a formula
difference (the float64 reruns).

A trajectory is a set of values whose first axis is the step (``loss`` of shape ``[steps]``,
``params.fc1.weight`` of shape ``[steps, 8, 4]``). Per step, over every key: max|diff|, max
ULP and the number of elements outside the tolerance. Over the run:

- the first step over the tolerance, if any;
- a growth class fitted to the per-step max|diff| of the float32 pair
  (``harness.trajectory.growth``);
- the float64 verdict (:func:`precision_verdict`): the same experiment run by both sides in
  float64. Rounding shrinks by ``eps64 / eps32 = 2**-29`` from float32 to float64, a formula
  difference (another formula, another constant, or an op order in a precision the dtype does
  not control, such as a float32 scalar) does not;
- per step, which float32 side is closer to the reference (the float64 run of the left side).

Only numbers: ``harness.checks`` builds a :class:`TrajectoryReport` from a case's values and
``harness.report.trajectory`` renders it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from harness.diff import diff_arrays
from harness.float_dtypes import is_float
from harness.tolerances import Tolerance
from harness.trajectory.growth import Growth, GrowthFit, fit_growth
from harness.ulp import FLOAT_LAYOUT, wide_distance

PARTS_BITS = 10.0
"""The float64 pair parts when its gap, in float64 eps at the values' scale, exceeds the
float32 pair's gap in float32 eps by more than 2**10 at some step. Rounding keeps the two about
equal (measured: 0.2 to 5.3 bits in this project's cases and tests); a formula difference
makes the float64 gap 2**29 times larger than rounding would (measured: 29 to 31 bits, more
where the float32 runs saturate)."""

SATURATED_EPS = 2.0**20
"""A float32 gap beyond 2**20 float32 eps of the values' scale keeps only 3 bits in common:
such steps say nothing about rounding and are left out of the float64 verdict."""

EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}
"""The eps of each float format (the gap between 1 and the next float): the unit gaps are
counted in (:func:`eps_gaps`)."""


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
    # A half pair (float16, bfloat16): its verdict against the float32 and float64 reruns
    # (``harness.trajectory.half.HalfVerdict``), which ``precision`` then states; else None.
    half: Any = None

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
        if not isinstance(value, np.ndarray) or value.ndim == 0 or not is_float(value.dtype):
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
    itype, mask, _ = FLOAT_LAYOUT[x.dtype.name]
    bx, by = (np.ascontiguousarray(v).view(itype) for v in (x, y))
    # Exact in uint64 (two large float64 magnitudes of opposite signs exceed int64), clipped
    # to int64 for the caller.
    return np.minimum(wide_distance(bx, by, mask), np.iinfo(np.int64).max).astype(np.int64)


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
    eps = EPS[dtype]
    out = np.zeros(steps)
    for key in a:
        gap = np.abs(a[key].astype(np.float64) - b[key].astype(np.float64)).reshape(steps, -1)
        size = np.abs(scale[key].astype(np.float64)).reshape(steps, -1).max(axis=1, initial=0.0)
        size = np.maximum(size, np.finfo(np.float64).tiny)
        gap = np.where(np.isfinite(gap), gap, np.inf)
        out = np.maximum(out, gap.max(axis=1, initial=0.0) / (eps * size))
    return out


def precision_verdict(
    eps32: Sequence[float], eps64: Sequence[float], *, saturated: float = SATURATED_EPS
) -> PrecisionVerdict:
    """Rounding or formula, from both pairs' per-step gaps in their own eps (:func:`eps_gaps`).

    Rounding leaves about as many float64 eps between the float64 runs as float32 eps between
    the float32 runs (the same operations round, amplified alike); a formula difference leaves
    about the same *absolute* gap, ``2**29`` float64 eps per float32 eps. Steps where the
    float32 runs are saturated are left out (they have parted beyond what rounding predicts);
    if every step is, the float64 gap alone decides against the same bound. ``saturated``:
    the gap (in the first pair's eps) from which a step is saturated; the half verdict
    (``harness.trajectory.half``) passes its format's, comparing a half pair to float32.
    """
    n32, n64 = np.asarray(eps32, np.float64), np.asarray(eps64, np.float64)
    used = n32 <= saturated
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


def same_formula(report: TrajectoryReport) -> tuple[bool, str]:
    """A trajectory check: holds while the float64 runs agree to float64 rounding."""
    if report.precision.verdict == Precision.ROUNDING:
        return True, "same formula: the float64 runs agree to float64 rounding"
    # The cause (a documented divergence or not) is harness.explain's: no advice here.
    return False, "formula difference: the float64 runs part too"


def systematic_text(expected: bool | Growth) -> str:
    """The relation a systematic differ states, as the report shows it."""
    growth = "" if expected is True else f", growth={expected}"
    return f"systematic: the float64 runs part too{growth}"


def systematic_holds(report: TrajectoryReport, expected: bool | Growth) -> tuple[bool, str]:
    """A systematic differ: holds while the float64 runs part (a formula difference) and, when
    a growth class is declared, the gap grows that way."""
    if report.precision.verdict == Precision.ROUNDING:
        return False, (
            "expected divergence vanished: the float64 runs agree to float64 rounding "
            "(the gap is rounding now)"
        )
    growth = report.growth.growth
    if expected is not True and growth != expected:
        return False, f"the float64 runs part, but growth={growth}, not {expected} as declared"
    return True, f"systematic divergence as documented: the float64 runs part, growth={growth}"


# ---------------------------------------------------------------------------------------------
# The float64 verdict of values that are not trajectories (agree and differ checks)


@dataclass(frozen=True)
class KeyPrecision:
    """The float64 verdict of one key of an agree or differ check: its values compared as one
    step (rounding or formula, as :func:`precision_verdict` says); ``within_tol`` whether the
    float32 pair is within the check's tolerance."""

    key: str
    verdict: Precision
    excess_bits: float
    within_tol: bool

    @property
    def sentence(self) -> str:
        """One sentence for a report; empty for a key within tolerance whose gap is rounding."""
        bits = f"{self.excess_bits:.1f} bits over rounding"
        if self.verdict == Precision.FORMULA:
            if self.within_tol:
                return f"{self.key}: within tolerance, but formula: the float64 runs part ({bits})"
            return f"{self.key}: formula: the float64 runs part too ({bits})"
        if self.within_tol:
            return ""
        return f"{self.key}: rounding: the float64 runs agree to float64 rounding"


def key_precisions(
    left: Mapping, right: Mapping, left64: Mapping, right64: Mapping, within: Mapping[str, bool]
) -> tuple[KeyPrecision, ...]:
    """Per key present as float arrays of one shape in all four runs, its float64 verdict
    (the whole value as one step); ``within[key]``: the float32 pair is within tolerance."""
    found = []
    for key in left:
        values = [run.get(key) for run in (left, right, left64, right64)]
        if not all(_float_array(v) for v in values) or len({v.shape for v in values}) != 1:
            continue
        a, b, a64, b64 = (np.asarray(v).reshape(1, -1) for v in values)
        verdict = precision_verdict(
            eps_gaps({key: a}, {key: b}, {key: a64}, 1, a.dtype.name),
            eps_gaps({key: a64}, {key: b64}, {key: a64}, 1, a64.dtype.name),
        )
        found.append(KeyPrecision(key, verdict.verdict, verdict.excess_bits, within.get(key, True)))
    return tuple(found)


def _float_array(value) -> bool:
    return isinstance(value, np.ndarray | np.floating) and np.asarray(value).dtype.kind == "f"
