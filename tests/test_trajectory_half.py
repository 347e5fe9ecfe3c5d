"""harness.trajectory.half: the half-precision verdict on a toy least-squares loop in
bfloat16 and float16 (NumPy, each op computed in float32 and rounded once, as burn-flex does),
whose variants round alike (rounding), keep the weights in float32 (accumulation) or use
another constant (formula); and on the A1 MLP in torch (bf16 parameters, burn's two-rounding
update, autocast with float32 master weights), the measurement behind the module's bounds."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from harness.a1 import a1_torch
from harness.float_dtypes import BFLOAT16
from harness.tolerances import default_tolerance
from harness.trajectory import (
    ACCUMULATION_BITS,
    HalfCause,
    Precision,
    TrajectoryError,
    analyse_half,
    half_text,
    pair_series,
)

STEPS = 50


def tol_for(key, dtype):
    return default_tolerance(dtype)


def _problem():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((32, 16))
    return x, x @ rng.standard_normal(16)


def toy_run(dtype, variant="plain", lr=0.01, start=0.0):
    """Least squares by gradient descent. ``dtype`` a half format: every op in float32, rounded
    to it once; float32/float64: the same experiment in that format. Variants: ``plain``
    (``w - round(lr * g)``: two roundings, as burn's SGD), ``fused`` (``round(w - lr * g)``:
    one, as torch's ``add_(g, alpha=-lr)``), ``master`` (float32 weights, the forward on
    their rounding: autocast's master weights), ``constant`` (lr 2% larger: a formula).
    ``start``: every weight's initial value."""
    half = dtype in ("bfloat16", "float16")
    low = BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)
    work = np.float32 if half else low.type

    def r(v):
        return np.asarray(v, work).astype(low).astype(work)

    x64, y64 = _problem()
    x, y = r(x64.astype(np.float32)), r(y64.astype(np.float32))
    w = r(np.full(16, start, np.float32))
    lr = work(lr * (1.02 if variant == "constant" else 1.0))
    losses, ws = [], []
    for _ in range(STEPS):
        weights = r(w) if variant == "master" else w
        residual = r(r(x @ weights) - y)
        losses.append(r(np.mean(residual * residual)))
        g = r(r(x.T @ residual) * work(2 / len(y)))
        if variant == "master" and half:
            w = (w - lr * g).astype(np.float32)  # float32 master weights
        elif variant == "fused":
            w = r(w - lr * g)
        else:
            w = r(w - r(lr * g))
        ws.append(r(w) if variant == "master" else w)
    return {"loss": np.stack(losses).astype(low), "w": np.stack(ws).astype(low)}


def toy_report(dtype, left="plain", right="fused", lr=0.01, start=0.0):
    runs = {
        d: (toy_run(d, left, lr, start), toy_run(d, right, lr, start))
        for d in (dtype, "float32", "float64")
    }
    return analyse_half(
        runs[dtype], runs["float32"], runs["float64"], tol_for=tol_for, labels=(left, right)
    )


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_two_roundings_of_one_formula_are_rounding(dtype):
    report = toy_report(dtype, "plain", "fused")
    assert report.float32.dtype == dtype
    assert report.half.cause == HalfCause.ROUNDING, half_text(report.half)
    assert report.precision.verdict == Precision.ROUNDING
    assert report.float32.max_abs[-1] > 0  # the runs do part: by rounding
    assert report.half.float32.verdict == Precision.ROUNDING


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_float32_master_weights_are_an_accumulation_difference(dtype):
    # Far from the minimum with a small rate, each update is about a fifth of the weights' ULP
    # (``lr * g`` with ``g`` about ``2 w``): the half weights round it away, the float32
    # master weights keep it.
    eps = {"bfloat16": 2.0**-7, "float16": 2.0**-10}[dtype]
    report = toy_report(dtype, "plain", "master", lr=0.1 * eps, start=1.0)
    v = report.half
    assert v.cause == HalfCause.ACCUMULATION, half_text(v)
    assert report.precision.verdict == Precision.FORMULA
    assert v.accumulation_bits > ACCUMULATION_BITS
    assert v.own[1] < v.own[0]  # the master weights round less
    # In float32 both sides compute one formula: the float32 reruns are bit-identical.
    assert max(v.float32_pair.max_abs) == 0.0


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_another_constant_does_not_shrink_in_float32(dtype):
    report = toy_report(dtype, "plain", "constant")
    assert report.half.cause == HalfCause.FORMULA, half_text(report.half)
    assert report.half.float32.verdict == Precision.FORMULA
    assert report.precision.excess_bits > 10


def test_identical_half_runs_are_rounding():
    run = toy_run("bfloat16")
    r32, r64 = toy_run("float32"), toy_run("float64")
    report = analyse_half((run, run), (r32, r32), (r64, r64), tol_for=tol_for, labels=("a", "b"))
    assert report.half.cause == HalfCause.ROUNDING
    assert report.half.gap == 0.0


def test_a_float32_pair_or_missing_rerun_keys_are_refused():
    r32, r64 = toy_run("float32"), toy_run("float64")
    with pytest.raises(TrajectoryError, match="half-precision check of float32"):
        analyse_half((r32, r32), (r32, r32), (r64, r64), tol_for=tol_for, labels=("a", "b"))
    half = toy_run("bfloat16")
    with pytest.raises(TrajectoryError, match="float32 rerun has other keys"):
        analyse_half(
            (half, half), ({"loss": r32["loss"]}, r32), (r64, r64), tol_for=tol_for, labels="ab"
        )


# ---- the A1 MLP in torch: the measurement behind ACCUMULATION_BITS --------------------------


def a1_run(mode, lr=0.1):
    """50 SGD steps of A1: ``bf16`` parameters (torch's fused update), ``burn`` (bf16, the
    update as burn writes it, ``p - g * lr``), ``autocast`` (float32 master weights, recorded
    rounded to bfloat16), or ``float32`` / ``float64`` (the reruns of all three)."""
    dtype = {"bf16": torch.bfloat16, "burn": torch.bfloat16, "float64": torch.float64}
    model, x, y = a1_torch()
    model, x = model.to(dtype.get(mode, torch.float32)), x.to(dtype.get(mode, torch.float32))
    optim = torch.optim.SGD(model.parameters(), lr=lr)
    losses, biases = [], []
    for _ in range(STEPS):
        optim.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "autocast"):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        if mode == "burn":
            with torch.no_grad():
                for p in model.parameters():
                    p.copy_(p - p.grad * lr)
        else:
            optim.step()
        losses.append(loss.detach())
        biases.append(torch.cat([model.fc1.bias.detach(), model.fc2.weight.detach().ravel()]))
    out = {"loss": torch.stack(losses), "params": torch.stack(biases)}
    if mode == "autocast":
        out = {k: v.to(torch.bfloat16) for k, v in out.items()}
    return {k: as_numpy(v) for k, v in out.items()}


def as_numpy(t):
    """torch bfloat16 exactly as ml_dtypes' (through float32, which holds every bf16)."""
    return t.float().numpy().astype(BFLOAT16) if t.dtype == torch.bfloat16 else t.numpy()


@pytest.fixture(scope="module")
def a1_runs():
    return {mode: a1_run(mode) for mode in ("bf16", "burn", "autocast", "float32", "float64")}


def a1_report(runs, left, right):
    return analyse_half(
        (runs[left], runs[right]),
        (runs["float32"], runs["float32"]),
        (runs["float64"], runs["float64"]),
        tol_for=tol_for,
        labels=(left, right),
    )


def test_a1_bf16_parameters_against_burns_update_are_rounding(a1_runs):
    v = a1_report(a1_runs, "bf16", "burn").half
    assert v.cause == HalfCause.ROUNDING, half_text(v)
    assert v.accumulation_bits < 0  # shared rounding points: the gap is below either side's


@pytest.mark.parametrize("left", ["bf16", "burn"])
def test_a1_autocast_master_weights_are_accumulation(a1_runs, left):
    v = a1_report(a1_runs, left, "autocast").half
    assert v.cause == HalfCause.ACCUMULATION, half_text(v)
    assert v.own[1] * 4 < v.own[0]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_steps_count_ulps_and_the_one_ulp_default(dtype):
    """Per step: 0, 1 and 2 ULP apart at 1.5; the half default tolerance (1 ULP or eps
    absolute) lets the first two agree and not the third (2 ULP at 1.5 exceed eps)."""
    low = BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)
    base = np.full((3, 4), 1.5, low)
    bits = base.view(np.int16).copy()
    bits[1, 2] += 1
    bits[2, 0] += 2
    series = pair_series({"w": base}, {"w": bits.view(low)}, tol_for, 3)
    assert series.dtype == dtype
    assert series.max_ulp == (0, 1, 2)
    assert series.mismatches == (0, 0, 1)
