"""Every loss's gradient against central finite differences of its own forward, in float64.

Each check draws inputs away from the losses' kinks, a seeded random cotangent `c` for the
loss's output, and compares the engine's vector-Jacobian product (the gradient of
`sum(loss * c)`) w.r.t. every float input with `(f(x + h) - f(x - h)) / 2h` evaluated on the
plain device. The losses are composites, so this checks the composition (op order, masks,
the `log1p` / `log_sigmoid` stand-ins) on top of the core's per-op rules.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from harness.engine import (
    BinaryCrossEntropyLossConfig,
    CosineEmbeddingLossConfig,
    CrossEntropyLossConfig,
    Device,
    GaussianNLLLossConfig,
    HingeEmbeddingLossConfig,
    HuberLossConfig,
    KLDivLossConfig,
    LpLossConfig,
    MarginRankingLossConfig,
    MultiMarginLossConfig,
    PoissonNllLossConfig,
    Reduction,
    SmoothL1LossConfig,
    SoftMarginLoss,
    Tensor,
    TripletMarginLossConfig,
)

PLAIN = Device.flex()
AD = Device.flex().autodiff()
RNG = np.random.default_rng(17)
SHAPE = (3, 4)


def _away_from(values: np.ndarray, kinks: tuple[float, ...], gap: float = 0.05) -> np.ndarray:
    """`values` pushed at least `gap` away from each kink (finite differences need smoothness)."""
    out = values.copy()
    for k in kinks:
        close = np.abs(out - k) < gap
        out[close] = k + np.where(out[close] >= k, gap, -gap) * 2
    return out


def _normal(shape=SHAPE, scale=1.0):
    return RNG.standard_normal(shape) * scale


def _positive(shape=SHAPE, low=0.2, high=2.0):
    return RNG.uniform(low, high, shape)


def _signs(shape=SHAPE):
    return np.where(RNG.random(shape) < 0.5, -1.0, 1.0)


def _value(fn, arrays: dict, device) -> np.ndarray:
    tensors = {k: Tensor.from_numpy(v, device) for k, v in arrays.items()}
    return np.asarray(fn(**tensors).numpy(), dtype=np.float64)


def check(fn: Callable, arrays: dict, wrt: tuple[str, ...], h: float = 1e-6, tol: float = 1e-6):
    """Engine VJP of `fn(**arrays)` w.r.t. `wrt` == central differences (float64)."""
    out = _value(fn, arrays, PLAIN)
    c = np.random.default_rng(5).uniform(0.5, 1.5, out.shape)
    tensors = {k: Tensor.from_numpy(v, AD) for k, v in arrays.items()}
    tensors = {k: t.require_grad() if k in wrt else t for k, t in tensors.items()}
    loss = (fn(**tensors) * Tensor.from_numpy(c, AD)).sum()
    grads = loss.backward()
    for name in wrt:
        got = tensors[name].grad(grads).numpy()
        want = np.zeros_like(arrays[name])
        for i in np.ndindex(arrays[name].shape):
            plus, minus = dict(arrays), dict(arrays)
            plus[name] = arrays[name].copy()
            minus[name] = arrays[name].copy()
            plus[name][i] += h
            minus[name][i] -= h
            fp = (_value(fn, plus, PLAIN) * c).sum()
            fm = (_value(fn, minus, PLAIN) * c).sum()
            want[i] = (fp - fm) / (2 * h)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)


def _pair(prediction=None, target=None):
    p = _normal() if prediction is None else prediction
    t = _normal() if target is None else target
    return p, t


# ---- regression ---------------------------------------------------------------------------


def test_huber():
    p, t = _normal(), _normal()
    t = p + _away_from(t - p, (-0.5, 0.5))  # residual off +-delta
    loss = HuberLossConfig(0.5).init()
    check(loss.forward_no_reduction, {"predictions": p, "targets": t}, ("predictions", "targets"))


def test_smooth_l1_and_reductions():
    p, t = _normal(), _normal()
    t = p + _away_from(t - p, (-1.0, 1.0))
    loss = SmoothL1LossConfig().init()
    arrays = {"predictions": p, "targets": t}
    check(loss.forward, arrays, ("predictions", "targets"))
    check(
        lambda **a: loss.forward_with_reduction(**a, reduction=Reduction.Sum),
        arrays,
        ("predictions",),
    )
    check(lambda **a: loss.forward_reduce_dims(**a, dims=[1, 0]), arrays, ("predictions",))


@pytest.mark.parametrize("p", [1.0, 2.0, 0.5, 1.5, 3.0, 4.0])
def test_lp(p):
    pred, target = _normal(), _normal()
    target = pred + _away_from(target - pred, (0.0,))
    loss = LpLossConfig(p).init()
    arrays = {"predictions": pred, "targets": target}
    check(loss.forward_no_reduction, arrays, ("predictions", "targets"))
    check(lambda **a: loss.forward(**a, reduction=Reduction.Mean), arrays, ("predictions",))


# ---- likelihood ---------------------------------------------------------------------------


@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(log_target):
    pred = np.log(_positive(low=0.05, high=1.0))
    target = (
        np.log(_positive(low=0.05, high=0.95)) if log_target else _positive(low=0.05, high=0.95)
    )
    loss = KLDivLossConfig(log_target=log_target).init()
    arrays = {"predictions": pred, "targets": target}
    check(loss.forward_no_reduction, arrays, ("predictions", "targets"))
    check(lambda **a: loss.forward(**a, reduction=Reduction.Auto), arrays, ("predictions",))


@pytest.mark.parametrize(("log_input", "full"), [(True, False), (False, False), (True, True)])
def test_poisson(log_input, full):
    pred = _normal() if log_input else _positive()
    target = RNG.integers(0, 6, SHAPE).astype(np.float64)
    loss = PoissonNllLossConfig(log_input=log_input, full=full).init()
    check(loss.forward_no_reduction, {"predictions": pred, "targets": target}, ("predictions",))


@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll(full):
    arrays = {"input": _normal(), "target": _normal(), "var": _positive()}
    loss = GaussianNLLLossConfig(full=full).init()
    check(loss.forward_no_reduction, arrays, ("input", "target", "var"))


# ---- margin -------------------------------------------------------------------------------


def test_hinge_embedding():
    x = _away_from(_normal(), (1.0,))  # off margin - x = 0
    loss = HingeEmbeddingLossConfig().init()
    check(loss.forward_no_reduction, {"input": x, "target": _signs()}, ("input",))


def test_margin_ranking():
    first, second, target = _normal(), _normal(), _signs()
    # keep -y (x1 - x2) + margin off 0
    gap = _away_from(-target * (first - second) + 0.2, (0.0,))
    second = first + target * (gap - 0.2)
    loss = MarginRankingLossConfig(margin=0.2).init()
    arrays = {"first": first, "second": second, "target": target}
    check(loss.forward_no_reduction, arrays, ("first", "second"))


def test_soft_margin():
    loss = SoftMarginLoss()
    arrays = {"logits": _normal(scale=2.0), "targets": _signs()}
    check(loss.forward_no_reduction, arrays, ("logits", "targets"))


@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin(p):
    scores = _normal((4, 5))
    target = np.array([0, 3, 1, 4], dtype=np.int64)
    correct = scores[np.arange(4), target][:, None]
    scores = correct + _away_from(scores - correct + 0.7, (0.0,)) - 0.7
    scores[np.arange(4), target] = correct[:, 0]
    loss = MultiMarginLossConfig(margin=0.7, p=p).init()
    check(loss.forward_no_reduction, {"input": scores, "target": target}, ("input",))


# ---- embedding ----------------------------------------------------------------------------


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 4.0, 1.5, float("inf"), float("-inf")])
def test_triplet_margin(p):
    anchor, positive, negative = _normal((3, 5)), _normal((3, 5)), _normal((3, 5))
    loss = TripletMarginLossConfig(margin=10.0, p=p).init()  # margin large: no clamp kink
    arrays = {"anchor": anchor, "positive": positive, "negative": negative}
    check(loss.forward_no_reduction, arrays, ("anchor", "positive", "negative"))


def test_cosine_embedding():
    x1, x2 = _normal((4, 3)), _normal((4, 3))
    loss = CosineEmbeddingLossConfig(margin=-2.0, reduction=Reduction.Sum).init()  # relu open
    arrays = {"input1": x1, "input2": x2, "target": np.array([1, -1, 1, -1], dtype=np.int64)}
    check(loss.forward, arrays, ("input1", "input2"))


# ---- cross-entropies (the log1p / log_sigmoid stand-ins) -----------------------------------


def test_binary_cross_entropy_with_logits():
    loss = BinaryCrossEntropyLossConfig(logits=True).init(AD)
    arrays = {"logits": _normal(scale=4.0), "targets": RNG.integers(0, 2, SHAPE)}
    check(loss.forward, arrays, ("logits",))


def test_binary_cross_entropy_on_probabilities():
    loss = BinaryCrossEntropyLossConfig().init(AD)
    arrays = {"logits": _positive(low=0.05, high=0.95), "targets": RNG.integers(0, 2, SHAPE)}
    check(loss.forward, arrays, ("logits",))


def test_cross_entropy_smoothed():
    loss = CrossEntropyLossConfig(smoothing=0.1).init(AD)
    arrays = {"logits": _normal(), "targets": np.array([3, 0, 2], dtype=np.int64)}
    check(loss.forward, arrays, ("logits",))
