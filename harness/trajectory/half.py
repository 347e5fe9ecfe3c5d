"""The trajectory verdict of a pair of half-precision runs (float16 or bfloat16): is their gap
half-precision rounding, or a formula difference? The references are the same experiment
rerun by both sides in float32 and in float64.

Three measurements, each a ratio in bits (``log2``) of gaps expressed in their format's eps at
the values' scale (:func:`harness.trajectory.analysis.eps_gaps`):

- **shrink**: the float32 reruns' gap in float32 eps over the half gap in half eps, per step.
  Rounding shrinks with the format (the same operations round, amplified alike: about as many
  float32 eps as half eps); a difference that does not depend on the precision (another
  formula, another constant) keeps its absolute size, ``eps_half / eps32`` = 2**16 (bfloat16)
  or 2**13 (float16) times more float32 eps. Over ``PARTS_BITS`` (10) at some step: the gap
  does not shrink in float32, a **formula** difference.
- **accumulation**: each half run's own rounding, its distance to its own float32 rerun (in
  half eps); the half pair's gap over the smaller of the two, as means over the steps. Two
  runs that round the same computation to the same format have own roundings of one size and
  a gap no larger (independent roundings: about sqrt(2) times one side's; shared rounding
  points: less). A side that keeps a part of the computation in float32 (torch's autocast
  keeps master weights, softmax, norms and losses in float32; a matmul or a reduction may
  accumulate in float32) rounds less, and the gap is the other side's rounding: over
  ``ACCUMULATION_BITS`` (1.5, a gap 2.8 times the smaller own rounding) it is an
  **accumulation** difference, a formula difference that the float32 reruns cannot show
  (in float32 both sides compute the same float32 formula).
- the float32 reruns' own float64 verdict (``harness.trajectory.analysis.precision_verdict``),
  reported beside: a formula difference far below the half format's resolution (burn's float32
  ``sqrt(d_k)``, 1e-9 in a loss) leaves the half gap rounding.

Measured (``tests/test_trajectory_half.py`` asserts each): on the A1 MLP (50 SGD steps, lr
0.1, bfloat16) torch's bf16 parameters against the same loop with burn's two-rounding update
(``p - g * lr``: mul, then sub) have own roundings of 2.6 half eps on average each and a gap
of 0.5: -1.4 bits, rounding; against torch's autocast with float32 master weights (own
rounding 0.5): 2.4 bits, accumulation. On a toy least-squares loop: one rounding of the update
against two, 0.3 to 0.8 bits; float32 master weights far from the minimum, 3.4 bits; a 2%
larger rate does not shrink: 16.3 bits (bfloat16), 13.1 (float16).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np

from harness.trajectory.analysis import (
    PARTS_BITS,
    PairSeries,
    Precision,
    PrecisionVerdict,
    TrajectoryError,
    TrajectoryReport,
    analyse,
    eps_gaps,
    pair_series,
    precision_verdict,
    step_count,
)
from harness.trajectory.growth import fit_growth

HALF_DTYPES = ("float16", "bfloat16")

ACCUMULATION_BITS = 1.5
"""The half pair is an accumulation difference when its mean gap exceeds the smaller side's
mean own rounding (at least half an eps: one rounding to nearest) by more than 2**1.5. Two
independent roundings of one size give sqrt(2), 0.5 bits. Measured (module docstring and
``cases/bf16_train.py``): same-formula pairs -1.9 to 0.8 bits, float32 master weights 2.2 to
3.4: the bound sits midway."""

SATURATED_BITS_KEPT = 3
"""A step whose half gap leaves fewer than 3 bits of the format's precision in common says
nothing about rounding (as ``SATURATED_EPS`` for float32): left out of the shrink measure."""

_MANTISSA = {"float16": 10, "bfloat16": 7}


class HalfCause(StrEnum):
    """Why a half pair parts, or that it does not."""

    ROUNDING = "rounding"  # the gap shrinks in float32 and both sides round alike
    ACCUMULATION = "accumulation"  # one side keeps more of the computation in float32
    FORMULA = "formula"  # the gap does not shrink in float32


@dataclass(frozen=True)
class HalfVerdict:
    """The half verdict and its numbers (``own``: per side, the mean per-step distance to its
    own float32 rerun in half eps; ``gap``: the half pair's, likewise; ``shrink``: the shrink
    measure as a float64 verdict is, float32 gap over half gap; ``float32``: the float32
    reruns' float64 verdict; ``float32_pair``: the float32 reruns' per-step statistics)."""

    dtype: str
    cause: HalfCause
    shrink: PrecisionVerdict
    accumulation_bits: float
    own: tuple[float, float]
    gap: float
    float32: PrecisionVerdict
    float32_pair: PairSeries

    @property
    def verdict(self) -> Precision:
        return Precision.ROUNDING if self.cause == HalfCause.ROUNDING else Precision.FORMULA

    @property
    def excess_bits(self) -> float:
        """The measure that decided: the shrink bits for a formula, else the accumulation's."""
        if self.cause == HalfCause.FORMULA:
            return self.shrink.excess_bits
        return self.accumulation_bits


def saturated_eps(dtype: str) -> float:
    """The half gap (in eps) beyond which fewer than ``SATURATED_BITS_KEPT`` bits agree."""
    return 2.0 ** (_MANTISSA[dtype] - SATURATED_BITS_KEPT)


def half_verdict(
    half: tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]],
    float32: tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]],
    float64: tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]],
    *,
    tol_for,
    steps: int,
) -> HalfVerdict:
    """Rounding, accumulation or formula for a half pair (``half``: left and right runs, one
    half dtype) from its float32 and float64 reruns (same keys and steps; the caller checks).
    The scale of every gap is the left float32 rerun's."""
    left, right = half
    left32, right32 = float32
    left64, right64 = float64
    dtype = next(iter(left.values())).dtype.name
    if dtype not in HALF_DTYPES:
        raise ValueError(f"half_verdict: {dtype} is not a half format")
    gap = eps_gaps(left, right, left32, steps, dtype)
    gap32 = eps_gaps(left32, right32, left32, steps, "float32")
    shrink = precision_verdict(gap, gap32, saturated=saturated_eps(dtype))
    own = (
        eps_gaps(left, left32, left32, steps, dtype),
        eps_gaps(right, right32, left32, steps, dtype),
    )
    own_means = (float(np.mean(own[0])), float(np.mean(own[1])))
    gap_mean = float(np.mean(gap))
    smaller = max(min(own_means), 0.5)  # one rounding to nearest: up to half an eps
    accumulation = float(np.log2(max(gap_mean, 1.0) / smaller)) if np.isfinite(gap_mean) else np.inf
    if shrink.verdict == Precision.FORMULA:
        cause = HalfCause.FORMULA
    elif accumulation > ACCUMULATION_BITS:
        cause = HalfCause.ACCUMULATION
    else:
        cause = HalfCause.ROUNDING
    return HalfVerdict(
        dtype=dtype,
        cause=cause,
        shrink=shrink,
        accumulation_bits=accumulation,
        own=own_means,
        gap=gap_mean,
        float32=precision_verdict(gap32, eps_gaps(left64, right64, left32, steps, "float64")),
        float32_pair=pair_series(left32, right32, tol_for, steps),
    )


def analyse_half(
    half: tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]],
    float32: tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]],
    float64: tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]],
    *,
    tol_for,
    labels: tuple[str, str],
) -> TrajectoryReport:
    """:func:`harness.trajectory.analyse` of a half pair, whose ``precision`` is the half
    verdict (``half``: :func:`half_verdict`): a trajectory check holds while the gap is
    half-precision rounding. The float64 reference and the float64 pair are as for float32."""
    keys = tuple(half[0])
    for name, run in (("left float32", float32[0]), ("right float32", float32[1])):
        if tuple(run) != keys:
            raise TrajectoryError(f"{name} rerun has other keys: {sorted(set(keys) ^ set(run))}")
    report = analyse(*half, *float64, tol_for=tol_for, labels=labels)
    if report.float32.dtype not in HALF_DTYPES:
        raise TrajectoryError(f"a half-precision check of {report.float32.dtype} values")
    joined = {**float32[0], **{f"{k} (right)": v for k, v in float32[1].items()}}
    if step_count(joined) != report.steps:
        raise TrajectoryError("the float32 reruns have another number of steps")
    found = half_verdict(half, float32, float64, tol_for=tol_for, steps=report.steps)
    precision = PrecisionVerdict(
        found.verdict, found.excess_bits, found.shrink.at, found.shrink.used
    )
    rounding = found.verdict == Precision.ROUNDING
    return replace(
        report,
        precision=precision,
        growth=fit_growth(report.float32.max_abs, rounding=rounding),
        half=found,
    )


def half_holds(found: HalfVerdict, expect: HalfCause) -> tuple[bool, str]:
    """A half trajectory check: holds while the half verdict is the one ``expect`` states."""
    if found.cause == expect:
        return True, f"{found.dtype} {found.cause} as expected"
    return False, f"expected {expect}, but the {found.dtype} verdict is {found.cause}"


def half_text(v: HalfVerdict) -> str:
    """One clause for a report: ``bfloat16: rounding (shrinks in float32: 1.2 bits; own
    rounding 28.5 / 28.3 eps, gap 7.8: -1.9 bits); float32 reruns: agree (rounding, ...)``."""
    what = {
        HalfCause.ROUNDING: "rounding",
        HalfCause.ACCUMULATION: "formula (accumulation: one side keeps more in float32)",
        HalfCause.FORMULA: "formula (the gap does not shrink in float32)",
    }[v.cause]
    f32 = "agree" if v.float32.verdict == Precision.ROUNDING else "part"
    return (
        f"{v.dtype}: {what}; float32 gap over {v.dtype} gap {_bits(v.shrink.excess_bits)} bits "
        f"(> {PARTS_BITS:g}: formula), gap {v.gap:.1f} eps over own rounding "
        f"{v.own[0]:.1f} / {v.own[1]:.1f} eps: {_bits(v.accumulation_bits)} bits "
        f"(> {ACCUMULATION_BITS:g}: accumulation); float32 reruns {f32} "
        f"({v.float32.verdict}, {_bits(v.float32.excess_bits)} bits over rounding)"
    )


def _bits(bits: float) -> str:
    return f"{bits:.1f}" if np.isfinite(bits) else ("inf" if bits > 0 else "-inf")


__all__ = [
    "ACCUMULATION_BITS",
    "HALF_DTYPES",
    "HalfCause",
    "HalfVerdict",
    "analyse_half",
    "half_holds",
    "half_text",
    "half_verdict",
    "saturated_eps",
]
