"""Losses (reference-engine.md section 4) against PyTorch and float64 hand formulas; gradients
through the core's backward table against PyTorch's autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from harness.engine import (
    BinaryCrossEntropyLossConfig,
    CrossEntropyLossConfig,
    Device,
    MseLoss,
    Reduction,
    Tensor,
)

AD = Device.flex().autodiff()
RNG = np.random.default_rng(11)
LOGITS = RNG.standard_normal((5, 4)).astype(np.float32)
TARGETS = np.array([2, 0, 3, 1, 1], dtype=np.int64)
WEIGHTS = [1.0, 2.0, 3.0, 4.0]


def engine_ce(config, logits=LOGITS, targets=TARGETS):
    """(loss array, d loss / d logits) through the engine."""
    x = Tensor.from_numpy(logits, AD).require_grad()
    loss = config.init(AD).forward(x, Tensor.from_numpy(targets, AD))
    return loss.numpy(), x.grad(loss.backward()).numpy()


def torch_ce(logits=LOGITS, targets=TARGETS, **kwargs):
    x = torch.from_numpy(logits).requires_grad_()
    loss = F.cross_entropy(x, torch.from_numpy(targets), **kwargs)
    loss.backward()
    return loss.detach().numpy(), x.grad.numpy()


def log_softmax64(logits):
    x = logits.astype(np.float64)
    shifted = x - x.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


# ---- cross-entropy ------------------------------------------------------------------------


def test_cross_entropy_returns_shape_1_and_matches_torch():
    loss, grad = engine_ce(CrossEntropyLossConfig())
    tloss, tgrad = torch_ce()
    assert loss.shape == (1,) and tloss.shape == ()
    np.testing.assert_allclose(loss[0], tloss, rtol=1e-6)
    np.testing.assert_allclose(grad, tgrad, atol=1e-7)


def test_cross_entropy_equals_float64_formula():
    loss, _ = engine_ce(CrossEntropyLossConfig())
    want = -log_softmax64(LOGITS)[np.arange(5), TARGETS].mean()
    np.testing.assert_allclose(loss[0], want, rtol=1e-6)


def test_pad_tokens_are_zeroed_but_counted_in_the_denominator():
    loss, grad = engine_ce(CrossEntropyLossConfig(pad_tokens=[1]))
    kept = TARGETS != 1
    picked = log_softmax64(LOGITS)[np.arange(5), TARGETS]
    np.testing.assert_allclose(loss[0], -picked[kept].sum() / 5, rtol=1e-6)  # all 5 rows
    assert np.all(grad[~kept] == 0)
    tloss, tgrad = torch_ce(ignore_index=1)
    np.testing.assert_allclose(tloss, -picked[kept].mean(), rtol=1e-6)  # kept rows only
    # The difference is exactly the denominator: engine * rows = torch * kept rows.
    np.testing.assert_allclose(loss[0] * 5, tloss * kept.sum(), rtol=1e-6)
    np.testing.assert_allclose(grad * 5, tgrad * kept.sum(), atol=1e-6)


def test_class_weights_divide_by_sum_of_target_weights():
    loss, grad = engine_ce(CrossEntropyLossConfig(weights=WEIGHTS))
    w = np.array(WEIGHTS)[TARGETS]
    picked = log_softmax64(LOGITS)[np.arange(5), TARGETS]
    np.testing.assert_allclose(loss[0], -(w * picked).sum() / w.sum(), rtol=1e-6)
    tloss, tgrad = torch_ce(weight=torch.tensor(WEIGHTS))
    np.testing.assert_allclose(loss[0], tloss, rtol=1e-6)  # same without pads
    np.testing.assert_allclose(grad, tgrad, atol=1e-6)


def test_weights_with_pads_keep_pad_weights_in_the_denominator():
    loss, _ = engine_ce(CrossEntropyLossConfig(pad_tokens=[1], weights=WEIGHTS))
    w = np.array(WEIGHTS)[TARGETS]
    kept = TARGETS != 1
    picked = log_softmax64(LOGITS)[np.arange(5), TARGETS]
    np.testing.assert_allclose(loss[0], -(w * picked)[kept].sum() / w.sum(), rtol=1e-6)
    tloss, _ = torch_ce(weight=torch.tensor(WEIGHTS), ignore_index=1)
    np.testing.assert_allclose(tloss, -(w * picked)[kept].sum() / w[kept].sum(), rtol=1e-6)
    assert abs(loss[0] - tloss) > 1e-3


def test_label_smoothing_matches_torch_and_formula():
    alpha = 0.1
    loss, grad = engine_ce(CrossEntropyLossConfig(smoothing=alpha))
    target = np.eye(4)[TARGETS] * (1 - alpha) + alpha / 4
    want = -(target * log_softmax64(LOGITS)).sum(axis=1).mean()
    np.testing.assert_allclose(loss[0], want, rtol=1e-6)
    tloss, tgrad = torch_ce(label_smoothing=alpha)
    np.testing.assert_allclose(loss[0], tloss, rtol=1e-6)
    np.testing.assert_allclose(grad, tgrad, atol=1e-6)


def test_smoothing_with_weights_divides_by_sum_of_target_weights():
    alpha = 0.2
    loss, _ = engine_ce(CrossEntropyLossConfig(smoothing=alpha, weights=WEIGHTS))
    target = np.eye(4)[TARGETS] * (1 - alpha) + alpha / 4
    per_class = target * log_softmax64(LOGITS) * np.array(WEIGHTS)
    want = -per_class.sum() / np.array(WEIGHTS)[TARGETS].sum()
    np.testing.assert_allclose(loss[0], want, rtol=1e-6)


def test_smoothing_with_pads_averages_over_all_rows():
    alpha = 0.1
    loss, _ = engine_ce(CrossEntropyLossConfig(smoothing=alpha, pad_tokens=[1]))
    target = np.eye(4)[TARGETS] * (1 - alpha) + alpha / 4
    rows = (target * log_softmax64(LOGITS)).sum(axis=1)
    np.testing.assert_allclose(loss[0], -rows[TARGETS != 1].sum() / 5, rtol=1e-6)


def test_probabilities_are_clamped_before_the_log():
    probs = np.array([[0.0, 1.0], [0.25, 0.75]], dtype=np.float32)
    targets = np.array([0, 1], dtype=np.int64)
    loss, _ = engine_ce(CrossEntropyLossConfig(logits=False), probs, targets)
    floor = np.float32(np.sqrt(np.finfo(np.float32).tiny))
    want = -(np.log(np.float64(floor)) + np.log(0.75)) / 2
    np.testing.assert_allclose(loss[0], want, rtol=1e-6)
    assert np.isfinite(loss).all()


def test_probabilities_with_smoothing_take_the_log_unclamped():
    probs = np.array([[0.0, 1.0], [0.25, 0.75]], dtype=np.float32)
    targets = np.array([1, 1], dtype=np.int64)
    x = Tensor.from_numpy(probs, AD)
    config = CrossEntropyLossConfig(logits=False, smoothing=0.1)
    with np.errstate(divide="ignore"):
        loss = config.init(AD).forward(x, Tensor.from_numpy(targets, AD))
    assert np.isinf(loss.numpy()).all()


def test_cross_entropy_targets_must_match_batch():
    with pytest.raises(ValueError) as info:
        engine_ce(CrossEntropyLossConfig(), LOGITS, TARGETS[:3])
    assert str(info.value) == "Shape of targets (3) should correspond to outer shape of logits (5)."


@pytest.mark.parametrize(("alpha", "text"), [(1.5, "1.5"), (-0.1, "-0.1"), (2.0, "2")])
def test_smoothing_outside_0_1_raises_at_init(alpha, text):
    message = (
        f"Alpha of Cross-entropy loss with smoothed labels should be in interval [0, 1]. Got {text}"
    )
    for config in (
        CrossEntropyLossConfig(smoothing=alpha),
        BinaryCrossEntropyLossConfig(smoothing=alpha),
    ):
        with pytest.raises(ValueError) as info:
            config.init(AD)
        assert str(info.value) == message


def test_non_positive_weights_raise_at_init():
    for config in (
        CrossEntropyLossConfig(weights=[1.0, 0.0]),
        BinaryCrossEntropyLossConfig(weights=[-1.0, 2.0]),
    ):
        with pytest.raises(ValueError) as info:
            config.init(AD)
        assert str(info.value) == "Weights of cross-entropy have to be positive."


# ---- MSE ----------------------------------------------------------------------------------

PRED = RNG.standard_normal((3, 4)).astype(np.float32)
TARGET = RNG.standard_normal((3, 4)).astype(np.float32)


@pytest.mark.parametrize(
    ("reduction", "torch_reduction"),
    [(Reduction.Mean, "mean"), (Reduction.Auto, "mean"), (Reduction.Sum, "sum")],
)
def test_mse_matches_torch(reduction, torch_reduction):
    x = Tensor.from_numpy(PRED, AD).require_grad()
    loss = MseLoss().forward(x, Tensor.from_numpy(TARGET, AD), reduction)
    grad = x.grad(loss.backward()).numpy()
    tx = torch.from_numpy(PRED).requires_grad_()
    tloss = F.mse_loss(tx, torch.from_numpy(TARGET), reduction=torch_reduction)
    tloss.backward()
    assert loss.shape == (1,)
    np.testing.assert_allclose(loss.numpy()[0], tloss.item(), rtol=1e-6)
    np.testing.assert_allclose(grad, tx.grad.numpy(), atol=1e-6)


def test_mse_no_reduction_is_elementwise_square():
    out = MseLoss().forward_no_reduction(Tensor.from_numpy(PRED, AD), Tensor.from_numpy(TARGET, AD))
    np.testing.assert_allclose(out.numpy(), (PRED - TARGET) ** 2, rtol=1e-6)


def test_mse_batch_mean_raises():
    with pytest.raises(ValueError) as info:
        MseLoss().forward(
            Tensor.from_numpy(PRED, AD), Tensor.from_numpy(TARGET, AD), Reduction.BatchMean
        )
    assert str(info.value) == "BatchMean reduction is not supported"


# ---- binary cross-entropy -----------------------------------------------------------------

PROBS = np.array([[0.7, 0.2, 0.9], [0.4, 0.6, 0.1]], dtype=np.float32)
BIN = np.array([[1, 0, 1], [0, 0, 1]], dtype=np.int64)


def engine_bce(config, inputs, targets):
    x = Tensor.from_numpy(inputs, AD).require_grad()
    loss = config.init(AD).forward(x, Tensor.from_numpy(targets, AD))
    return loss.numpy(), x.grad(loss.backward()).numpy()


def torch_bce(fn, inputs, targets, **kwargs):
    x = torch.from_numpy(inputs).requires_grad_()
    loss = fn(x, torch.from_numpy(targets.astype(np.float32)), **kwargs)
    loss.backward()
    return loss.detach().numpy(), x.grad.numpy()


def test_bce_probabilities_match_torch():
    loss, grad = engine_bce(BinaryCrossEntropyLossConfig(), PROBS, BIN)
    tloss, tgrad = torch_bce(F.binary_cross_entropy, PROBS, BIN)
    assert loss.shape == (1,)
    np.testing.assert_allclose(loss[0], tloss, rtol=1e-6)
    np.testing.assert_allclose(grad, tgrad, atol=1e-6)
    p, t = PROBS.astype(np.float64), BIN
    want = -(t * np.log(p) + (1 - t) * np.log1p(-p)).mean()
    np.testing.assert_allclose(loss[0], want, rtol=1e-6)


def test_bce_log_terms_are_floored_at_minus_100():
    preds = np.array([0.0, 1.0, 0.0, 1.0], dtype=np.float32)
    targets = np.array([1, 0, 1, 0], dtype=np.int64)
    x = Tensor.from_numpy(preds, AD)
    with np.errstate(divide="ignore"):
        loss = BinaryCrossEntropyLossConfig().init(AD).forward(x, Tensor.from_numpy(targets, AD))
    assert loss.tolist() == [100.0]
    tloss = F.binary_cross_entropy(torch.from_numpy(preds), torch.from_numpy(targets).float())
    assert tloss.item() == 100.0


def test_bce_logits_match_torch_with_logits():
    logits = RNG.standard_normal((2, 3)).astype(np.float32) * 4
    loss, grad = engine_bce(BinaryCrossEntropyLossConfig(logits=True), logits, BIN)
    tloss, tgrad = torch_bce(F.binary_cross_entropy_with_logits, logits, BIN)
    np.testing.assert_allclose(loss[0], tloss, rtol=1e-6)
    np.testing.assert_allclose(grad, tgrad, atol=1e-6)


def test_bce_per_class_weights_on_the_last_dim():
    weights = [3.0, 7.0, 0.9]
    loss, grad = engine_bce(BinaryCrossEntropyLossConfig(weights=weights), PROBS, BIN)
    tloss, tgrad = torch_bce(
        F.binary_cross_entropy, PROBS, BIN, weight=torch.tensor(weights).expand(2, 3)
    )
    np.testing.assert_allclose(loss[0], tloss, rtol=1e-6)
    np.testing.assert_allclose(grad, tgrad, atol=1e-6)


def test_bce_rank_1_weights_are_gathered_by_target():
    probs = np.array([0.6, 0.8, 0.3, 0.2], dtype=np.float32)
    targets = np.array([0, 1, 0, 1], dtype=np.int64)
    weights = [3.0, 7.0]
    loss, _ = engine_bce(BinaryCrossEntropyLossConfig(weights=weights), probs, targets)
    tloss, _ = torch_bce(
        F.binary_cross_entropy, probs, targets, weight=torch.tensor(weights)[targets]
    )
    np.testing.assert_allclose(loss[0], tloss, rtol=1e-6)


def test_bce_smoothing_matches_torch_on_smoothed_targets():
    loss, _ = engine_bce(BinaryCrossEntropyLossConfig(smoothing=0.1), PROBS, BIN)
    smoothed = BIN * 0.9 + 0.1 / 3
    tloss = F.binary_cross_entropy(torch.from_numpy(PROBS), torch.tensor(smoothed).float())
    np.testing.assert_allclose(loss[0], tloss.item(), rtol=1e-6)


def test_bce_shape_and_class_count_assertions():
    with pytest.raises(ValueError) as info:
        engine_bce(BinaryCrossEntropyLossConfig(), PROBS, BIN[:, :2])
    assert str(info.value) == (
        "Shape of targets ([2, 2]) should correspond to outer shape of logits ([2, 3])."
    )
    with pytest.raises(ValueError) as info:
        engine_bce(BinaryCrossEntropyLossConfig(weights=[3.0, 7.0]), PROBS, BIN)
    assert str(info.value) == "The number of classes (2) does not match the weights provided (3)."


def test_bce_defaults_to_probabilities():
    assert BinaryCrossEntropyLossConfig().logits is False
    assert CrossEntropyLossConfig().logits is True


def test_bce_logits_follow_flex_log_sigmoid_for_confident_logits():
    """flex's `log_sigmoid` is `-ln_1p(exp(-x))`: a correct logit of 20..80 costs about
    exp(-x), as in PyTorch, not exactly 0 (burn's default backend formula, the engine before)."""
    logits = np.array([17.0, 20.0, 30.0, 50.0, 80.0], dtype=np.float32)
    targets = np.ones(5, dtype=np.int64)
    loss, grad = engine_bce(BinaryCrossEntropyLossConfig(logits=True), logits, targets)
    tloss, _ = torch_bce(F.binary_cross_entropy_with_logits, logits, targets)
    assert loss[0] > 0
    np.testing.assert_allclose(loss[0], tloss, rtol=1e-6)
    x = logits.astype(np.float64)
    np.testing.assert_allclose(loss[0], np.log1p(np.exp(-x)).mean(), rtol=1e-6)
    # d/dx of (1 - t) x - log_sigmoid(x) with t = 1: -sigmoid(-x) / n, tiny but not 0
    np.testing.assert_allclose(grad, -1 / (1 + np.exp(x)) / 5, rtol=1e-6)


def test_empty_pad_tokens_raise_at_forward_like_burn():
    """burn indexes `pad_tokens[0]` in `padding_mask`: an empty list panics at forward."""
    loss = CrossEntropyLossConfig(pad_tokens=[]).init(AD)  # init accepts it, as burn's does
    for smoothing in (None, 0.1):
        loss = CrossEntropyLossConfig(pad_tokens=[], smoothing=smoothing).init(AD)
        with pytest.raises(IndexError) as info:
            loss.forward(Tensor.from_numpy(LOGITS, AD), Tensor.from_numpy(TARGETS, AD))
        assert str(info.value) == "index out of bounds: the len is 0 but the index is 0"


@pytest.mark.parametrize("pad_tokens", [[-1], [1.5], [True]])
def test_pad_tokens_must_be_non_negative_integers(pad_tokens):
    with pytest.raises(TypeError, match="pad_tokens must be non-negative integers"):
        CrossEntropyLossConfig(pad_tokens=pad_tokens).init(AD)
