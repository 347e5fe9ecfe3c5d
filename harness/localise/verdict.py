"""The verdict: the first module, in model order, whose captured value leaves rounding.

Model order, per step: the forward, a module's input where it was called and its output where
it returned (an inner module's before the one holding it), then backward: the forward's calls
and returns replayed backwards, a return being where the gradient into that module's output
is complete and a call where the gradient it passes back to its input is (the head before the
encoder; a layer's output gradient, then its parts', then its input gradient).

Rounding or formula per value, by the float64 reruns, as the trajectory check decides it
(``harness.trajectory.precision_verdict``: the float32 pair's gap in float32 eps against the
float64 pair's in float64 eps, at the scale of the torch float64 value). A module whose
float32 gap is rounding keeps its float64 gap at rounding too; one that computes another
formula leaves the float64 sides as far apart as the float32 ones, 2**29 times rounding.
"""

from __future__ import annotations

import numpy as np

from harness.localise.capture import Capture, Captured, Key
from harness.localise.paths import engine_paths
from harness.results import WHAT, Localisation, ModuleRow
from harness.trajectory import Precision, eps_gaps, precision_verdict


def model_order(capture: Capture) -> list[Key]:
    """The keys of ``capture`` in model order (see the module docstring)."""
    keys: list[Key] = []
    for step in sorted({where[0] for _, where in capture.events}):
        events = [(event, where) for event, where in capture.events if where[0] == step]
        keys += [_at(where, "forward" if event == "finish" else "input") for event, where in events]
        # Backward runs the forward backwards: a call's output gradient arrives where it
        # returned, its input gradient is complete where it started.
        for event, where in reversed(events):
            keys.append(_at(where, "grad_output" if event == "finish" else "grad_input"))
    return [key for key in keys if key in capture.values]


def _at(where: tuple[int, str, int], phase: str) -> Key:
    step, path, call = where
    return (step, phase, path, call)


def compare(
    torch32: Capture, engine32: Capture, torch64: Capture, engine64: Capture
) -> Localisation:
    """The table and verdict of the four captured runs (torch is the left side and the
    reference scale)."""
    spec = torch32.spec
    mapping = engine_paths(
        {path for _, _, path, _ in torch32.values},
        engine32.module_types,
        paths=dict(spec.paths),
        remap=spec.remap,
    )
    rows, unmatched = [], []
    for key in model_order(torch32):
        step, phase, path, call = key
        other = (step, phase, mapping.get(path, path), call)
        four = (torch32.values.get(key), engine32.values.get(other),
                torch64.values.get(key), engine64.values.get(other))  # fmt: skip
        if any(v is None for v in four) or len({v.shape for v in four}) != 1:
            unmatched.append(f"step {step} {path} {WHAT[phase]}")
            continue
        rows.append(_row(key, other[2], *four))
    first = next((row for row in rows if row.verdict == Precision.FORMULA), None)
    steps = len({row.step for row in rows})
    return Localisation(tuple(rows), first, steps, tuple(unmatched))


def _row(key: Key, engine_path: str, a: Captured, b: Captured, a64: Captured, b64: Captured):
    step, phase, path, call = key

    x, y = _same_nonfinite_as_zero(a.values, b.values)
    x64, y64 = _same_nonfinite_as_zero(a64.values, b64.values)
    n32 = eps_gaps({"v": x[None]}, {"v": y[None]}, {"v": x64[None]}, 1, x.dtype.name)
    n64 = eps_gaps({"v": x64[None]}, {"v": y64[None]}, {"v": x64[None]}, 1, x64.dtype.name)
    verdict = precision_verdict(n32, n64)
    return ModuleRow(
        step=step,
        phase=phase,
        path=path,
        engine_path=engine_path,
        call=call,
        shape=a.shape,
        strided=a.strided,
        max_abs32=_max_abs(a, b),
        max_abs64=_max_abs(a64, b64),
        excess_bits=verdict.excess_bits,
        verdict=verdict.verdict,
    )


def _same_nonfinite_as_zero(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both sides NaN, or the same infinity, at an element is agreement (as ``harness.diff``
    counts it): those elements become 0 on both sides, the others stay as they are."""
    same = (np.isnan(x) & np.isnan(y)) | (np.isinf(x) & (x == y))
    if not same.any():
        return x, y
    return np.where(same, 0, x).astype(x.dtype), np.where(same, 0, y).astype(y.dtype)


def _max_abs(a: Captured, b: Captured) -> float:
    """max|diff| over the elements finite on both sides."""
    x, y = a.values.astype(np.float64), b.values.astype(np.float64)
    finite = np.isfinite(x) & np.isfinite(y)
    return float(np.abs(x - y)[finite].max(initial=0.0))


__all__ = ["compare", "model_order"]
