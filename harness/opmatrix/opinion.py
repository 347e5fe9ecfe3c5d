"""A float64 third opinion: when the float32 results of both sides disagree, which is right?

Both float32 results are measured against a float64 reference of the same computation (the
callers recompute it with PyTorch in float64 on the same inputs). Per tensor, the error of a
side is its largest |side - reference| (infinite when it has a NaN or infinity that the
reference does not share); at the worst element of the torch-vs-engine comparison the same is
done for that one element. A side is "within tol" when every element agrees with the reference
under the float32 tolerance (`harness.diff` rules: NaN matches NaN, infinities must match).

Note: the reference is PyTorch's definition of the op computed in float64. For a deliberate
semantic difference (a declared divergence) the verdict therefore leans towards torch; it is
meant for rounding and formula bugs, where float64 is close to the exact answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.diff import diff_arrays
from harness.record import json_float
from harness.report import format_index
from harness.tolerances import Tolerance, default_tolerance

TORCH_CLOSER = "torch closer"
ENGINE_CLOSER = "engine closer"
BOTH_WITHIN = "both within tol of float64"
EQUALLY_FAR = "equally far from float64"


@dataclass(frozen=True)
class Opinion:
    """The verdict for one tensor and for its worst element (None when there is none)."""

    verdict: str
    torch_error: float
    engine_error: float
    worst_index: tuple[int, ...] | None
    torch_worst: float | None
    engine_worst: float | None
    reference_worst: float | None
    worst_verdict: str | None
    tol: Tolerance
    # What the reference is: float64, or a half cell's float32 run rounded once (opmatrix.half).
    reference: str = "float64"


def third_opinion(
    torch_value: np.ndarray,
    engine_value: np.ndarray,
    reference: np.ndarray,
    tol: Tolerance | None = None,
    worst_index: tuple[int, ...] | None = None,
    reference_name: str = "float64",
) -> Opinion:
    """Judge two float32 results against a float64 `reference` of the same shape.

    `worst_index` is where the two sides differ most (from their `TensorDiff`); by default it
    is computed here. `tol` defaults to the float32 row of the tolerance table.
    """
    t = np.asarray(torch_value)
    e = np.asarray(engine_value)
    ref = np.asarray(reference, dtype=np.float64)
    if not t.shape == e.shape == ref.shape:
        raise ValueError(f"third_opinion: shapes differ: {t.shape}, {e.shape}, {ref.shape}")
    tol = tol or default_tolerance(t.dtype.name)
    t64, e64 = t.astype(np.float64), e.astype(np.float64)
    t_err, t_ok = _error(t64, ref, tol)
    e_err, e_ok = _error(e64, ref, tol)
    verdict = _verdict(t_ok, e_ok, t_err, e_err)
    if worst_index is None:
        worst_index = diff_arrays(t, e, tol).worst_index
    if worst_index is None or t.size == 0:
        return Opinion(verdict, t_err, e_err, None, None, None, None, None, tol, reference_name)
    tw, ew, rw = (float(x[worst_index]) for x in (t64, e64, ref))
    tw_err, tw_ok = _error(np.array(tw), np.array(rw), tol)
    ew_err, ew_ok = _error(np.array(ew), np.array(rw), tol)
    return Opinion(
        verdict,
        t_err,
        e_err,
        tuple(int(i) for i in worst_index),
        tw,
        ew,
        rw,
        _verdict(tw_ok, ew_ok, tw_err, ew_err),
        tol,
        reference_name,
    )


def _error(side: np.ndarray, ref: np.ndarray, tol: Tolerance) -> tuple[float, bool]:
    """(largest error, all within tol) of a float64 array against the reference."""
    row = diff_arrays(side, ref, tol)
    if row.nan_mismatches or row.inf_mismatches:
        return math.inf, False
    return float(row.max_abs or 0.0), row.ok


def _verdict(t_ok: bool, e_ok: bool, t_err: float, e_err: float) -> str:
    if t_ok and e_ok:
        return BOTH_WITHIN
    if t_err < e_err:
        return TORCH_CLOSER
    if e_err < t_err:
        return ENGINE_CLOSER
    # Equal errors with one side out of tol cannot happen; both out of tol and equally far can.
    return EQUALLY_FAR


def render_opinion(op: Opinion) -> str:
    """One line: the tensor verdict with both errors, then the worst element's verdict."""
    text = (
        f"{op.reference} opinion: {op.verdict} "
        f"(max err torch {op.torch_error:.3g}, engine {op.engine_error:.3g})"
    )
    if op.worst_index is not None:
        text += (
            f"; at {format_index(op.worst_index)}: torch={op.torch_worst!r} "
            f"engine={op.engine_worst!r} {op.reference}={op.reference_worst!r}: {op.worst_verdict}"
        )
    return text


def opinion_json(op: Opinion) -> dict:
    """A JSON-able dict (non-finite numbers as strings, as the report schema does)."""
    return {
        "verdict": op.verdict,
        "torch_error": _num(op.torch_error),
        "engine_error": _num(op.engine_error),
        "worst_index": list(op.worst_index) if op.worst_index is not None else None,
        "torch_worst": _num(op.torch_worst),
        "engine_worst": _num(op.engine_worst),
        "reference_worst": _num(op.reference_worst),
        "worst_verdict": op.worst_verdict,
        "tol": op.tol.describe(),
    }


def _num(x: float | None) -> float | str | None:
    return None if x is None else json_float(x)
