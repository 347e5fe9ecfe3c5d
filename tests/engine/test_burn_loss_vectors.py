"""burn's own loss tests, transcribed: the `#[cfg(test)]` module of every file in
`crates/burn-nn/src/loss/` at commit 2c06be351006851d42fdb6df16b976f4a82d9747
(v0.22.0-pre.2-47), one test here per burn test (named after it, file cited), checked at burn's
own tolerance. Each expected vector is also re-derived independently, with PyTorch where it has
the same loss or with a float64 formula, at the same tolerance.

`ctc.rs` has its own file (`test_burn_ctc_vectors.py`). Not transcribed: the `display` tests
(burn's `Display` of a module; the engine has none) and the tests of `rnnt.rs` (RNN-T is not
built).

burn's tests run on the default (non-autodiff) device unless their name says `ad`; so do these.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from burn_vectors import AD, DEV, approx, floats, ints

from harness.engine import (
    BinaryCrossEntropyLossConfig,
    CosineEmbeddingLossConfig,
    CrossEntropyLossConfig,
    GaussianNLLLossConfig,
    HingeEmbeddingLossConfig,
    HuberLossConfig,
    KLDivLossConfig,
    LpLossConfig,
    MarginRankingLossConfig,
    MseLoss,
    MultiMarginLossConfig,
    PoissonNllLossConfig,
    Reduction,
    SmoothL1LossConfig,
    SoftMarginLoss,
    Tensor,
    TripletMarginLossConfig,
)
from harness.engine.loss.cross_entropy import smooth


def exact(actual, expected) -> None:
    """burn's `TensorData::assert_eq(&expected, false)`: same shape and values (in f32)."""
    a = np.asarray(actual, dtype=np.float32)
    b = np.asarray(expected, dtype=np.float32)
    assert a.shape == b.shape and np.array_equal(a, b), f"\n{a}\n!=\n{b}"


def relative(tolerance):
    return {"rel": tolerance, "abs_": 0.0}


def absolute(tolerance):
    return {"rel": 0.0, "abs_": tolerance}


def th(data):
    return torch.as_tensor(data, dtype=torch.float32)


# ---- mse.rs -------------------------------------------------------------------------------


def test_mse_loss():
    """mse.rs, `test_mse_loss`."""
    logits, targets = floats([[1.0, 2.0], [3.0, 4.0]]), floats([[2.0, 1.0], [3.0, 2.0]])
    mse = MseLoss()
    exact(mse.forward_no_reduction(logits, targets), [[1.0, 1.0], [0.0, 4.0]])
    exact(mse.forward(logits, targets, Reduction.Auto), [1.5])
    exact(mse.forward(logits, targets, Reduction.Sum), [6.0])
    tl, tt = th([[1.0, 2.0], [3.0, 4.0]]), th([[2.0, 1.0], [3.0, 2.0]])
    exact(F.mse_loss(tl, tt, reduction="none"), [[1.0, 1.0], [0.0, 4.0]])
    exact(F.mse_loss(tl, tt).reshape(1), [1.5])


# ---- binary_cross_entropy.rs --------------------------------------------------------------

BCE_LOGITS = [0.8271, 0.9626, 0.3796, 0.2355]
BCE_TARGETS = [0, 1, 0, 1]
ML_LOGITS = [[0.5150, 0.3097, 0.7556], [0.4974, 0.9879, 0.1564]]
ML_TARGETS = [[1, 0, 1], [1, 0, 0]]


def bce(config, inputs, targets):
    return config.init(DEV).forward(inputs, ints(targets)).numpy()


def torch_bce(inputs, targets, **kwargs):
    return F.binary_cross_entropy(th(inputs), th(targets), **kwargs).reshape(1)


def test_binary_cross_entropy_preds_all_correct():
    """binary_cross_entropy.rs, `test_binary_cross_entropy_preds_all_correct`."""
    preds = [1.0, 0.0, 1.0, 0.0]
    with np.errstate(divide="ignore"):
        approx(bce(BinaryCrossEntropyLossConfig(), floats(preds), [1, 0, 1, 0]), [0.0])
    approx(torch_bce(preds, [1, 0, 1, 0]), [0.0])


def test_binary_cross_entropy_preds_all_incorrect():
    """binary_cross_entropy.rs, `test_binary_cross_entropy_preds_all_incorrect`."""
    preds = [0.0, 1.0, 0.0, 1.0]
    with np.errstate(divide="ignore"):
        approx(bce(BinaryCrossEntropyLossConfig(), floats(preds), [1, 0, 1, 0]), [100.0])
    approx(torch_bce(preds, [1, 0, 1, 0]), [100.0])  # PyTorch floors the logs at -100 too


def test_binary_cross_entropy():
    """binary_cross_entropy.rs, `test_binary_cross_entropy` (expected 0.7491 from PyTorch)."""
    loss = bce(BinaryCrossEntropyLossConfig(), floats(BCE_LOGITS).sigmoid(), BCE_TARGETS)
    approx(loss, [0.7491], **relative(1e-4))
    approx(torch_bce(torch.sigmoid(th(BCE_LOGITS)), BCE_TARGETS), [0.7491], **relative(1e-4))


def test_binary_cross_entropy_with_logits():
    """binary_cross_entropy.rs, `test_binary_cross_entropy_with_logits`."""
    loss = bce(BinaryCrossEntropyLossConfig(logits=True), floats(BCE_LOGITS), BCE_TARGETS)
    approx(loss, [0.7491], **relative(1e-4))
    want = F.binary_cross_entropy_with_logits(th(BCE_LOGITS), th(BCE_TARGETS)).reshape(1)
    approx(want, [0.7491], **relative(1e-4))


def test_binary_cross_entropy_with_weights():
    """binary_cross_entropy.rs, `test_binary_cross_entropy_with_weights`."""
    config = BinaryCrossEntropyLossConfig(weights=[3.0, 7.0])
    approx(bce(config, floats(BCE_LOGITS).sigmoid(), BCE_TARGETS), [3.1531], **relative(1e-4))
    weight = th([3.0, 7.0])[torch.tensor(BCE_TARGETS)]
    want = torch_bce(torch.sigmoid(th(BCE_LOGITS)), BCE_TARGETS, weight=weight)
    approx(want, [3.1531], **relative(1e-4))


def test_binary_cross_entropy_with_smoothing():
    """binary_cross_entropy.rs, `test_binary_cross_entropy_with_smoothing`."""
    config = BinaryCrossEntropyLossConfig(smoothing=0.1)
    approx(bce(config, floats(BCE_LOGITS).sigmoid(), BCE_TARGETS), [0.7490], **relative(1e-4))
    smoothed = (np.array(BCE_TARGETS) * 0.9 + 0.05).tolist()
    approx(torch_bce(torch.sigmoid(th(BCE_LOGITS)), smoothed), [0.7490], **relative(1e-4))


def test_binary_cross_entropy_multilabel():
    """binary_cross_entropy.rs, `test_binary_cross_entropy_multilabel`."""
    loss = bce(BinaryCrossEntropyLossConfig(logits=True), floats(ML_LOGITS), ML_TARGETS)
    approx(loss, [0.7112], **relative(1e-4))
    want = F.binary_cross_entropy_with_logits(th(ML_LOGITS), th(ML_TARGETS)).reshape(1)
    approx(want, [0.7112], **relative(1e-4))


def test_binary_cross_entropy_multilabel_with_weights():
    """binary_cross_entropy.rs, `test_binary_cross_entropy_multilabel_with_weights`."""
    config = BinaryCrossEntropyLossConfig(logits=True, weights=[3.0, 7.0, 0.9])
    approx(bce(config, floats(ML_LOGITS), ML_TARGETS), [3.1708])
    want = F.binary_cross_entropy_with_logits(
        th(ML_LOGITS), th(ML_TARGETS), weight=th([3.0, 7.0, 0.9])
    )
    approx(want.reshape(1), [3.1708])


def test_binary_cross_entropy_multilabel_with_smoothing():
    """binary_cross_entropy.rs, `test_binary_cross_entropy_multilabel_with_smoothing`."""
    config = BinaryCrossEntropyLossConfig(smoothing=0.1)
    approx(bce(config, floats(ML_LOGITS).sigmoid(), ML_TARGETS), [0.7228])
    smoothed = (np.array(ML_TARGETS) * 0.9 + 0.1 / 3).tolist()
    approx(torch_bce(torch.sigmoid(th(ML_LOGITS)), smoothed), [0.7228])


def test_multilabel_weights_should_match_target():
    """binary_cross_entropy.rs, `multilabel_weights_should_match_target` (should_panic)."""
    config = BinaryCrossEntropyLossConfig(logits=True, weights=[3.0, 7.0])
    with pytest.raises(ValueError, match="The number of classes"):
        bce(config, floats(ML_LOGITS), ML_TARGETS)


# ---- cross_entropy.rs ---------------------------------------------------------------------
# burn's `setup!` draws logits from Normal(0, 1); any draw exercises the same identities.

CE_TARGETS = [2, 0, 4, 1]
CE_ONEHOT = np.eye(5, dtype=np.float32)[CE_TARGETS]
CE_PADDED_ONEHOT = CE_ONEHOT * np.array([[0], [1], [1], [0]], dtype=np.float32)  # pads 1, 2
CE_WEIGHTS = [1.0, 2.0, 3.0, 4.0, 5.0]


def ce_logits():
    return np.random.default_rng(4).standard_normal((4, 5)).astype(np.float32)


def cross_entropy_with_logits(logits: Tensor, target_probs: np.ndarray) -> Tensor:
    """burn-tensor's `loss::cross_entropy_with_logits`: `-mean(sum(log_softmax * p, -1))`."""
    return (logits.log_softmax(1) * floats(target_probs.tolist())).sum_dim(1).mean().neg()


def ce(config, logits, targets=CE_TARGETS):
    return config.init(DEV).forward(floats(logits.tolist()), ints(targets)).numpy()


def test_cross_entropy_loss_with_weights():
    """cross_entropy.rs, `test_cross_entropy_loss_with_weights`."""
    logits = ce_logits()
    loss_1 = ce(CrossEntropyLossConfig(weights=CE_WEIGHTS), logits)
    weights = floats(CE_WEIGHTS).unsqueeze()
    loss_2 = (floats(logits.tolist()).log_softmax(1) * floats(CE_ONEHOT.tolist()) * weights).sum()
    approx(loss_1, (loss_2.neg() / (1.0 + 2.0 + 3.0 + 5.0)).numpy())
    want = F.cross_entropy(th(logits), torch.tensor(CE_TARGETS), weight=th(CE_WEIGHTS))
    approx(loss_1, want.reshape(1))


def test_label_smoothing_with_weights_and_alpha_zero():
    """cross_entropy.rs, `test_label_smoothing_with_weights_and_alpha_zero`."""
    logits = ce_logits()
    loss_1 = ce(CrossEntropyLossConfig(weights=CE_WEIGHTS), logits)
    loss_2 = ce(CrossEntropyLossConfig(weights=CE_WEIGHTS, smoothing=0.0), logits)
    approx(loss_1, loss_2)


def test_cross_entropy_loss():
    """cross_entropy.rs, `test_cross_entropy_loss`."""
    logits = ce_logits()
    loss_1 = ce(CrossEntropyLossConfig(), logits)
    approx(loss_1, cross_entropy_with_logits(floats(logits.tolist()), CE_ONEHOT).numpy())
    approx(loss_1, F.cross_entropy(th(logits), torch.tensor(CE_TARGETS)).reshape(1))


def test_label_smoothing_alpha_equal_zero():
    """cross_entropy.rs, `test_label_smoothing_alpha_equal_zero`."""
    logits = ce_logits()
    approx(ce(CrossEntropyLossConfig(), logits), ce(CrossEntropyLossConfig(smoothing=0.0), logits))


def test_cross_entropy_loss_with_pad_token():
    """cross_entropy.rs, `test_cross_entropy_loss_with_pad_token` (pads 1 and 2; the mean still
    runs over all four rows)."""
    logits = ce_logits()
    loss_1 = ce(CrossEntropyLossConfig(pad_tokens=[1, 2]), logits)
    approx(loss_1, cross_entropy_with_logits(floats(logits.tolist()), CE_PADDED_ONEHOT).numpy())
    logp = torch.log_softmax(th(logits).double(), 1)
    picked = logp[torch.arange(4), torch.tensor(CE_TARGETS)] * torch.tensor([0, 1, 1, 0])
    approx(loss_1, (-picked.sum() / 4).reshape(1))


def test_label_smoothing_with_zero_alpha_and_pad_token():
    """cross_entropy.rs, `test_label_smoothing_with_zero_alpha_and_pad_token`."""
    logits = ce_logits()
    loss_1 = ce(CrossEntropyLossConfig(pad_tokens=[1, 2]), logits)
    loss_2 = ce(CrossEntropyLossConfig(pad_tokens=[1, 2], smoothing=0.0), logits)
    approx(loss_1, loss_2)


SMOOTHED_005 = [
    [0.01, 0.01, 0.96, 0.01, 0.01],
    [0.96, 0.01, 0.01, 0.01, 0.01],
    [0.01, 0.01, 0.01, 0.01, 0.96],
    [0.01, 0.96, 0.01, 0.01, 0.01],
]


def test_label_smoothing_target_conversion():
    """cross_entropy.rs, `test_label_smoothing_target_conversion` (burn's private
    `compute_smoothed_targets`; here `loss.cross_entropy.smooth`)."""
    approx(smooth(CE_ONEHOT, 0.05, 5), SMOOTHED_005)
    approx(CE_ONEHOT.astype(np.float64) * 0.95 + 0.05 / 5, SMOOTHED_005)


def test_label_smoothing():
    """cross_entropy.rs, `test_label_smoothing`."""
    logits = ce_logits()
    loss_1 = ce(CrossEntropyLossConfig(smoothing=0.05), logits)
    approx(loss_1, cross_entropy_with_logits(floats(logits.tolist()), np.array(SMOOTHED_005)))
    want = F.cross_entropy(th(logits), torch.tensor(CE_TARGETS), label_smoothing=0.05)
    approx(loss_1, want.reshape(1))


def test_logits_flag_affects_output():
    """cross_entropy.rs, `test_logits_flag_affects_output`."""
    probs = [
        [0.1, 0.2, 0.7, 0.0, 0.0],
        [0.7, 0.1, 0.1, 0.1, 0.0],
        [0.2, 0.2, 0.2, 0.2, 0.2],
        [0.0, 0.3, 0.3, 0.2, 0.2],
    ]
    loss_logits = ce(CrossEntropyLossConfig(), np.array(probs))
    loss_probs = ce(CrossEntropyLossConfig(logits=False), np.array(probs))
    approx(loss_logits, [1.354197])
    approx(loss_probs, [0.88169014])
    assert loss_logits.tolist() != loss_probs.tolist()
    targets = torch.tensor(CE_TARGETS)
    approx(F.cross_entropy(th(probs), targets).reshape(1), [1.354197])
    approx(F.nll_loss(th(probs).log(), targets).reshape(1), [0.88169014])


# ---- huber.rs -----------------------------------------------------------------------------

HUBER_PREDICT = [-2.0, -0.5, 0.0, 0.3, 1.0]


def test_huber_loss():
    """huber.rs, `test_huber_loss`."""
    predict, targets = floats(HUBER_PREDICT), floats([0.0] * 5)
    huber = HuberLossConfig(0.5).init()
    expected = [0.875, 0.125, 0.0, 0.045, 0.375]
    approx(huber.forward_no_reduction(predict, targets), expected)
    approx(huber.forward(predict, targets, Reduction.Auto), [0.284])
    approx(huber.forward(predict, targets, Reduction.Sum), [1.42])
    approx(F.huber_loss(th(HUBER_PREDICT), th([0.0] * 5), delta=0.5, reduction="none"), expected)


def test_huber_ad_loss():
    """huber.rs, `test_huber_ad_loss` (the gradient of the unreduced loss, seeded with ones)."""
    predict = floats(HUBER_PREDICT, AD).require_grad()
    loss = HuberLossConfig(0.5).init().forward_no_reduction(predict, floats([0.0] * 5, AD))
    expected = [-0.5, -0.5, 0.0, 0.3, 0.5]
    approx(predict.grad(loss.backward()), expected)
    tp = th(HUBER_PREDICT).requires_grad_()
    F.huber_loss(tp, th([0.0] * 5), delta=0.5, reduction="sum").backward()
    approx(tp.grad, expected)


# ---- kldiv.rs -----------------------------------------------------------------------------


def test_kl_div_loss():
    """kldiv.rs, `test_kl_div_loss`."""
    predict = floats([[-1.0, -0.5], [-2.0, -0.2]])
    targets = floats([[0.4, 0.6], [0.1, 0.9]])
    kl_loss = KLDivLossConfig(log_target=False).init()
    expected = [[0.0334837139, -0.0064953566], [-0.0302585065, 0.0851755068]]
    approx(kl_loss.forward_no_reduction(predict, targets), expected, **absolute(1e-5))
    approx(kl_loss.forward(predict, targets, Reduction.Sum), [0.08191], **absolute(1e-5))
    approx(kl_loss.forward(predict, targets, Reduction.BatchMean), [0.04095], **absolute(1e-5))
    tp, tt = th(predict.tolist()), th(targets.tolist())
    approx(F.kl_div(tp, tt, reduction="none"), expected, **absolute(1e-5))
    approx(F.kl_div(tp, tt, reduction="batchmean").reshape(1), [0.04095], **absolute(1e-5))


def test_kl_div_loss_log_target():
    """kldiv.rs, `test_kl_div_loss_log_target`."""
    predict, targets = floats([-1.0, -2.0]), floats([-0.5, -1.5])
    kl_loss = KLDivLossConfig(log_target=True).init()
    expected = [0.3032653299, 0.1115650801]
    approx(kl_loss.forward_no_reduction(predict, targets), expected, **absolute(1e-5))
    bm = [0.207415204965]
    approx(kl_loss.forward(predict, targets, Reduction.BatchMean), bm, **absolute(1e-5))
    approx(kl_loss.forward(predict, targets, Reduction.Sum), [0.414830409931], **absolute(1e-5))
    want = F.kl_div(th([-1.0, -2.0]), th([-0.5, -1.5]), reduction="none", log_target=True)
    approx(want, expected, **absolute(1e-5))


def test_kl_div_ad_loss():
    """kldiv.rs, `test_kl_div_ad_loss` (d/d_pred = -target)."""
    predict = floats([[-1.0, -0.5]], AD).require_grad()
    loss = (
        KLDivLossConfig(log_target=False)
        .init()
        .forward(predict, floats([[0.4, 0.6]], AD), Reduction.Sum)
    )
    approx(predict.grad(loss.backward()), [[-0.4, -0.6]])
    tp = th([[-1.0, -0.5]]).requires_grad_()
    F.kl_div(tp, th([[0.4, 0.6]]), reduction="sum").backward()
    approx(tp.grad, [[-0.4, -0.6]])


# ---- poisson.rs ---------------------------------------------------------------------------

POISSON_PRED = [0.0, 0.0, -40.0, 1.0, 2.0, 3.0]
POISSON_TARGETS = [1.0, 4.5, 2.5, 0.0, 0.0, 2.0]


def test_poisson_nll_loss():
    """poisson.rs, `test_poisson_nll_loss`."""
    predictions, targets = floats(POISSON_PRED), floats(POISSON_TARGETS)
    poisson = PoissonNllLossConfig().init()
    expected = [1.0000, 1.0000, 100.0000, 2.7183, 7.3891, 14.0855]
    approx(poisson.forward_no_reduction(predictions, targets), expected)
    approx(poisson.forward(predictions, targets, Reduction.Auto), [21.0321])
    approx(poisson.forward(predictions, targets, Reduction.Sum), [126.1929])
    want = F.poisson_nll_loss(th(POISSON_PRED), th(POISSON_TARGETS), reduction="none")
    approx(want, expected)


def test_poisson_nll_loss_no_log_input():
    """poisson.rs, `test_poisson_nll_loss_no_log_input`."""
    preds = [0.0, 0.5, 1.0, 1.0, 2.71828, 7.38905, 20.0855]
    targets = [2.0, 3.0, 1.0, 4.5, 0.0, 0.0, 2.0]
    poisson = PoissonNllLossConfig(log_input=False).init()
    expected = [36.84136, 2.579441, 1.0, 1.0, 2.71828, 7.38905, 14.0855]
    approx(poisson.forward_no_reduction(floats(preds), floats(targets)), expected)
    want = F.poisson_nll_loss(th(preds), th(targets), log_input=False, reduction="none")
    approx(want, expected)


def test_poisson_nll_loss_full():
    """poisson.rs, `test_poisson_nll_loss_full`."""
    predictions, targets = floats(POISSON_PRED), floats(POISSON_TARGETS)
    poisson = PoissonNllLossConfig(full=True).init()
    expected = [1.0000, 4.9393, 101.1678, 2.7183, 7.3891, 14.7373]
    approx(poisson.forward_no_reduction(predictions, targets), expected)
    approx(poisson.forward(predictions, targets, Reduction.Auto), [21.9920])
    approx(poisson.forward(predictions, targets, Reduction.Sum), [131.9518])
    want = F.poisson_nll_loss(th(POISSON_PRED), th(POISSON_TARGETS), full=True, reduction="none")
    approx(want, expected)


def test_poisson_nll_loss_gradients():
    """poisson.rs, `test_poisson_nll_loss_gradients` (the Stirling term has no gradient)."""
    expected = [0.0000, -3.5000, -2.5000, 2.7183, 7.3891, 18.0855]
    for full in (False, True):
        predictions = floats(POISSON_PRED, AD).require_grad()
        poisson = PoissonNllLossConfig(full=full).init()
        loss = poisson.forward(predictions, floats(POISSON_TARGETS, AD), Reduction.Sum)
        approx(predictions.grad(loss.backward()), expected)
        tp = th(POISSON_PRED).requires_grad_()
        F.poisson_nll_loss(tp, th(POISSON_TARGETS), full=full, reduction="sum").backward()
        approx(tp.grad, expected)


def test_negative_eps():
    """poisson.rs, `test_negative_eps` (should_panic; eps = 0)."""
    with pytest.raises(ValueError, match=r"^eps for PoissonNllLoss must be a positive number\.$"):
        PoissonNllLossConfig(eps=0.0).init()


def test_targets_with_negative_values():
    """poisson.rs, `test_targets_with_negative_values` (should_panic)."""
    predictions = floats([0.0, 0.0, -40.0, 1.0, 2.0, 3.0, 4.0])
    targets = floats([1.0, 4.5, 2.5, 0.0, 0.0, 2.0, -0.42])
    with pytest.raises(ValueError, match=r"^All the values of `targets` must be non-negative\.$"):
        PoissonNllLossConfig().init().forward(predictions, targets, Reduction.Auto)


def test_shape_tensors():
    """poisson.rs, `test_shape_tensors` (should_panic)."""
    with pytest.raises(ValueError, match="Shape of targets"):
        PoissonNllLossConfig().init().forward_no_reduction(
            floats([0.0, 1.0, 2.0]), floats([0.0, 1.0])
        )


def test_exp_predictions_non_negative():
    """poisson.rs, `test_exp_predictions_non_negative` (should_panic)."""
    message = "When `log_input` is `false`, all the values of `predictions` must be non-negative."
    with pytest.raises(ValueError, match=f"^{message}$".replace("`", r"\`")):
        PoissonNllLossConfig(log_input=False).init().forward_no_reduction(
            floats([0.3, -0.1, 0.4]), floats([0.0, 1.0, 0.0])
        )


# ---- gaussian_nll.rs ----------------------------------------------------------------------

GAUSS = ([1.0, 2.0], [1.5, 1.0], [0.5, 1.0])  # input, target, var


def test_gaussian_nll_loss():
    """gaussian_nll.rs, `test_gaussian_nll_loss`."""
    x, t, v = (floats(a) for a in GAUSS)
    loss = GaussianNLLLossConfig().init()
    expected = [-0.096574, 0.5]
    approx(loss.forward_no_reduction(x, t, v), expected)
    approx(loss.forward(x, t, v, Reduction.Mean), [0.201713])
    approx(loss.forward(x, t, v, Reduction.Sum), [0.403426])
    approx(F.gaussian_nll_loss(*(th(a) for a in GAUSS), reduction="none"), expected)


def test_gaussian_nll_loss_full():
    """gaussian_nll.rs, `test_gaussian_nll_loss_full`."""
    loss = GaussianNLLLossConfig(full=True).init()
    expected = [0.822365, 1.418939]
    approx(loss.forward_no_reduction(*(floats(a) for a in GAUSS)), expected)
    approx(F.gaussian_nll_loss(*(th(a) for a in GAUSS), full=True, reduction="none"), expected)


def test_gaussian_nll_loss_clamps_var_to_eps():
    """gaussian_nll.rs, `test_gaussian_nll_loss_clamps_var_to_eps`."""
    x, t = floats(GAUSS[0]), floats(GAUSS[1])
    loss = GaussianNLLLossConfig().init()
    clamped = loss.forward_no_reduction(x, t, floats([1e-8, 1e-8]))
    at_eps = loss.forward_no_reduction(x, t, floats([1e-6, 1e-6]))
    approx(clamped, at_eps)
    want = F.gaussian_nll_loss(th(GAUSS[0]), th(GAUSS[1]), th([1e-8, 1e-8]), reduction="none")
    approx(clamped, want)


# ---- hinge_embedding.rs -------------------------------------------------------------------


def test_hinge_embedding_loss():
    """hinge_embedding.rs, `test_hinge_embedding_loss`."""
    x, y = [0.5, 2.0, 1.5], [1.0, -1.0, -1.0]
    loss = HingeEmbeddingLossConfig().init()
    approx(loss.forward_no_reduction(floats(x), floats(y)), [0.5, 0.0, 0.0])
    approx(loss.forward(floats(x), floats(y), Reduction.Mean), [0.166_667])
    approx(loss.forward(floats(x), floats(y), Reduction.Sum), [0.5])
    approx(F.hinge_embedding_loss(th(x), th(y), reduction="none"), [0.5, 0.0, 0.0])


# ---- margin_ranking.rs --------------------------------------------------------------------


def test_margin_ranking_loss():
    """margin_ranking.rs, `test_margin_ranking_loss`."""
    first, second, target = [1.0, 2.0, 3.0], [2.0, 1.0, 0.5], [1.0, -1.0, 1.0]
    loss = MarginRankingLossConfig(margin=0.5).init()
    args = (floats(first), floats(second), floats(target))
    approx(loss.forward_no_reduction(*args), [1.5, 1.5, 0.0])
    approx(loss.forward(*args, Reduction.Mean), [1.0])
    approx(loss.forward(*args, Reduction.Sum), [3.0])
    want = F.margin_ranking_loss(th(first), th(second), th(target), margin=0.5, reduction="none")
    approx(want, [1.5, 1.5, 0.0])


# ---- soft_margin.rs -----------------------------------------------------------------------


def test_soft_margin_loss():
    """soft_margin.rs, `test_soft_margin_loss`."""
    logits, targets = [[0.5, -1.0], [2.0, -0.5]], [[1.0, -1.0], [-1.0, 1.0]]
    loss = SoftMarginLoss()
    expected = [[0.474077, 0.313262], [2.126928, 0.974077]]
    approx(loss.forward_no_reduction(floats(logits), floats(targets)), expected)
    approx(loss.forward(floats(logits), floats(targets), Reduction.Mean), [0.972086])
    approx(loss.forward(floats(logits), floats(targets), Reduction.Sum), [3.888344])
    approx(F.soft_margin_loss(th(logits), th(targets), reduction="none"), expected)


# ---- multi_margin.rs ----------------------------------------------------------------------

MM_INPUT = [[0.1, 0.2, 0.7], [0.9, 0.05, 0.05]]
MM_TARGET = [2, 0]


def test_multi_margin_loss():
    """multi_margin.rs, `test_multi_margin_loss`."""
    x, y = floats(MM_INPUT), ints(MM_TARGET)
    loss = MultiMarginLossConfig().init()
    approx(loss.forward_no_reduction(x, y), [0.3, 0.1])
    approx(loss.forward(x, y, Reduction.Mean), [0.2])
    approx(loss.forward(x, y, Reduction.Sum), [0.4])
    want = F.multi_margin_loss(th(MM_INPUT), torch.tensor(MM_TARGET), reduction="none")
    approx(want, [0.3, 0.1])


def test_multi_margin_loss_p2():
    """multi_margin.rs, `test_multi_margin_loss_p2`."""
    loss = MultiMarginLossConfig(p=2).init()
    approx(loss.forward_no_reduction(floats(MM_INPUT), ints(MM_TARGET)), [0.136_667, 0.015])
    want = F.multi_margin_loss(th(MM_INPUT), torch.tensor(MM_TARGET), p=2, reduction="none")
    approx(want, [0.136_667, 0.015])


# ---- triplet_margin.rs --------------------------------------------------------------------


def test_triplet_margin_loss():
    """triplet_margin.rs, `test_triplet_margin_loss` (re-derived in float64: PyTorch adds an
    eps of 1e-6 to the differences)."""
    anchor = [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]
    positive = [[1.0, 1.0], [1.0, 2.0], [0.0, 0.0]]
    negative = [[1.0, 0.0], [0.0, 0.0], [5.0, 0.0]]
    loss = TripletMarginLossConfig().init()
    args = (floats(anchor), floats(positive), floats(negative))
    expected = [1.414214, 0.585786, 0.0]
    approx(loss.forward_no_reduction(*args), expected)
    approx(loss.forward(*args, Reduction.Mean), [0.666_667])
    approx(loss.forward(*args, Reduction.Sum), [2.0])
    a, p, n = (np.array(v, dtype=np.float64) for v in (anchor, positive, negative))
    d = np.linalg.norm(a - p, axis=1) - np.linalg.norm(a - n, axis=1) + 1.0
    approx(np.maximum(d, 0.0), expected)


# ---- cosine_embedding.rs ------------------------------------------------------------------

EYE = [[1.0, 0.0], [0.0, 1.0]]


def cosine(config, target):
    loss = config.init()
    return loss, (floats(EYE), floats(EYE), ints(target))


def test_cosine_embedding_loss_positive_target():
    """cosine_embedding.rs, `cosine_embedding_loss_positive_target` (burn's `loss_sum` uses the
    default Mean config too)."""
    loss, args = cosine(CosineEmbeddingLossConfig(), [1, 1])
    approx(loss.forward_no_reduction(*args), [0.0, 0.0])
    approx(loss.forward(*args), [0.0])
    approx(loss.forward(*args), [0.0])
    want = F.cosine_embedding_loss(th(EYE), th(EYE), torch.tensor([1, 1]), reduction="none")
    approx(want, [0.0, 0.0])


def test_cosine_embedding_loss_negative_target():
    """cosine_embedding.rs, `cosine_embedding_loss_negative_target`."""
    loss, args = cosine(CosineEmbeddingLossConfig(), [-1, -1])
    approx(loss.forward_no_reduction(*args), [1.0, 1.0])
    approx(loss.forward(*args), [1.0])
    sum_loss, _ = cosine(CosineEmbeddingLossConfig(reduction=Reduction.Sum), [-1, -1])
    approx(sum_loss.forward(*args), [2.0])
    margin_loss, _ = cosine(CosineEmbeddingLossConfig(margin=0.5), [-1, -1])
    approx(margin_loss.forward(*args), [0.5])
    target = torch.tensor([-1, -1])
    approx(F.cosine_embedding_loss(th(EYE), th(EYE), target, reduction="sum").reshape(1), [2.0])
    want = F.cosine_embedding_loss(th(EYE), th(EYE), target, margin=0.5)
    approx(want.reshape(1), [0.5])


def test_cosine_embedding_loss_mixed_targets():
    """cosine_embedding.rs, `cosine_embedding_loss_mixed_targets`."""
    loss, args = cosine(CosineEmbeddingLossConfig(), [1, -1])
    approx(loss.forward_no_reduction(*args), [0.0, 1.0])
    approx(loss.forward(*args), [0.5])
    want = F.cosine_embedding_loss(th(EYE), th(EYE), torch.tensor([1, -1]), reduction="none")
    approx(want, [0.0, 1.0])


# ---- smooth_l1.rs -------------------------------------------------------------------------


def torch_smooth_l1(pred, target, beta=1.0, **kwargs):
    return F.smooth_l1_loss(th(pred), th(target), beta=beta, **kwargs)


def test_smooth_l1_config_default_beta():
    """smooth_l1.rs, `test_smooth_l1_config_default_beta`."""
    assert SmoothL1LossConfig().init().beta == 1.0


def test_smooth_l1_config_custom_beta():
    """smooth_l1.rs, `test_smooth_l1_config_custom_beta`."""
    assert SmoothL1LossConfig().with_beta(2.5).init().beta == 2.5


@pytest.mark.parametrize("beta", [0.0, -1.0])
def test_smooth_l1_config_beta_zero_and_negative_panic(beta):
    """smooth_l1.rs, `test_smooth_l1_config_beta_zero_panics`,
    `test_smooth_l1_config_beta_negative_panics` (should_panic)."""
    with pytest.raises(ValueError, match="The parameter beta must be positive"):
        SmoothL1LossConfig().with_beta(beta).init()


@pytest.mark.parametrize(
    ("burn_test", "beta", "pred", "target", "expected"),
    [
        ("test_smooth_l1_forward_l2_region", 1.0, [[0.0, 0.5]], [[0.0, 0.0]], [[0.0, 0.125]]),
        ("test_smooth_l1_forward_l1_region", 1.0, [[0.0, 2.0]], [[0.0, 0.0]], [[0.0, 1.5]]),
        ("test_smooth_l1_forward_zero_error", 1.0, [[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]],
         [[0.0, 0.0, 0.0]]),
        ("test_smooth_l1_forward_negative_errors", 1.0, [-3.0], [0.0], [2.5]),
        ("test_smooth_l1_forward_mixed_regions", 1.0, [0.5, 1.5, 3.0], [0.0] * 3,
         [0.125, 1.0, 2.5]),
        ("test_smooth_l1_custom_beta_values", 0.5, [0.25, 1.0], [0.0, 0.0], [0.0625, 0.75]),
    ],
)  # fmt: skip
def test_smooth_l1_forward(burn_test, beta, pred, target, expected):
    """smooth_l1.rs, the `forward` tests named by `burn_test` (exact: `assert_eq`)."""
    loss = SmoothL1LossConfig(beta=beta).init()
    exact(loss.forward(floats(pred), floats(target)), expected)
    exact(torch_smooth_l1(pred, target, beta, reduction="none"), expected)


@pytest.mark.parametrize(
    ("burn_test", "reduction", "torch_reduction", "expected"),
    [
        ("test_smooth_l1_reduction_mean", Reduction.Mean, "mean", [0.8125]),
        ("test_smooth_l1_reduction_sum", Reduction.Sum, "sum", [1.625]),
    ],
)
def test_smooth_l1_reduction(burn_test, reduction, torch_reduction, expected):
    """smooth_l1.rs, `test_smooth_l1_reduction_mean` / `_sum` (exact)."""
    loss = SmoothL1LossConfig().init()
    out = loss.forward_with_reduction(floats([[0.5, 2.0]]), floats([[0.0, 0.0]]), reduction)
    exact(out, expected)
    exact(
        torch_smooth_l1([[0.5, 2.0]], [[0.0, 0.0]], reduction=torch_reduction).reshape(1), expected
    )


def test_smooth_l1_reduction_auto_equals_mean():
    """smooth_l1.rs, `test_smooth_l1_reduction_auto_equals_mean`."""
    loss = SmoothL1LossConfig().init()
    mean = loss.forward_with_reduction(floats([2.0]), floats([0.0]), Reduction.Mean)
    exact(loss.forward_with_reduction(floats([2.0]), floats([0.0]), Reduction.Auto), mean.numpy())


def test_smooth_l1_forward_reduce_dims_single_dim():
    """smooth_l1.rs, `test_smooth_l1_forward_reduce_dims_single_dim`."""
    pred, target = [[0.0, 1.0, 4.0], [5.0, 5.0, 5.0]], [[0.0, 0.0, 0.0], [5.0, 5.0, 5.0]]
    loss = SmoothL1LossConfig(beta=2.0).init()
    expected = [[3.25 / 3.0], [0.0]]
    approx(loss.forward_reduce_dims(floats(pred), floats(target), [1]), expected)
    approx(torch_smooth_l1(pred, target, 2.0, reduction="none").mean(1, keepdim=True), expected)


def test_smooth_l1_forward_reduce_dims_image_batch():
    """smooth_l1.rs, `test_smooth_l1_forward_reduce_dims_image_batch` (exact)."""
    pred = [[[[0.5, 2.0], [0.0, 3.0]]], [[[1.0, 0.0], [0.5, 1.5]]]]
    target = np.zeros((2, 1, 2, 2)).tolist()
    out = SmoothL1LossConfig().init().forward_reduce_dims(floats(pred), floats(target), [1, 2, 3])
    expected = [[[[1.03125]]], [[[0.40625]]]]
    exact(out, expected)
    exact(torch_smooth_l1(pred, target, reduction="none").mean((1, 2, 3), keepdim=True), expected)


CUBE = [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]


def test_smooth_l1_forward_reduce_dims_unsorted():
    """smooth_l1.rs, `test_smooth_l1_forward_reduce_dims_unsorted` (exact)."""
    loss = SmoothL1LossConfig().init()
    zeros = np.zeros((2, 2, 2)).tolist()
    out = loss.forward_reduce_dims(floats(CUBE), floats(zeros), [2, 1])
    exact(out, loss.forward_reduce_dims(floats(CUBE), floats(zeros), [1, 2]).numpy())
    exact(out, torch_smooth_l1(CUBE, zeros, reduction="none").mean((1, 2), keepdim=True))


def test_smooth_l1_forward_reduce_dims_empty_dims():
    """smooth_l1.rs, `test_smooth_l1_forward_reduce_dims_empty_dims` (exact)."""
    loss = SmoothL1LossConfig().init()
    pred, target = floats([[0.5, 2.0], [0.0, 3.0]]), floats([[0.0, 0.0], [0.0, 0.0]])
    exact(loss.forward_reduce_dims(pred, target, []), loss.forward(pred, target).numpy())


def test_smooth_l1_forward_reduce_dims_negative_dims():
    """smooth_l1.rs, `test_smooth_l1_forward_reduce_dims_negative_dims`."""
    loss = SmoothL1LossConfig().init()
    zeros = floats(np.zeros((2, 2, 2)).tolist())
    expected = loss.forward_reduce_dims(floats(CUBE), zeros, [1, 2]).numpy()
    approx(loss.forward_reduce_dims(floats(CUBE), zeros, [-2, -1]), expected)


# ---- lp_loss.rs ---------------------------------------------------------------------------

LP_PRED = [[1.0, 2.0], [3.0, 4.0]]
LP_TARGET = [[2.0, 1.0], [3.0, 2.0]]


def lp_all(loss, pred, target):
    """(no reduction, Auto, Sum), as burn's tests compute them."""
    p, t = floats(pred), floats(target)
    return (
        loss.forward_no_reduction(p, t),
        loss.forward(p, t, Reduction.Auto),
        loss.forward(p, t, Reduction.Sum),
    )


def test_lp_loss_l1_constructor():
    """lp_loss.rs, `test_lp_loss_l1_constructor`."""
    assert LpLossConfig.l1().p == 1.0 == LpLossConfig(1.0).init().p


def test_lp_loss_l2_constructor():
    """lp_loss.rs, `test_lp_loss_l2_constructor`."""
    assert LpLossConfig.l2().p == 2.0 == LpLossConfig(2.0).init().p


@pytest.mark.parametrize(
    ("burn_test", "loss", "target", "expected", "torch_p"),
    [
        ("test_lp_loss_l1", LpLossConfig.l1(), LP_TARGET, ([[1.0, 1.0], [0.0, 2.0]], 1.0, 4.0), 1),
        ("test_lp_loss_l2", LpLossConfig.l2(), LP_TARGET, ([[1.0, 1.0], [0.0, 4.0]], 1.5, 6.0), 2),
        ("test_lp_loss_p_half", LpLossConfig(0.5).init(), [[2.0, 1.0], [3.0, 0.0]],
         ([[1.0, 1.0], [0.0, 2.0]], 1.0, 4.0), 0.5),
        ("test_lp_loss_p3", LpLossConfig(3.0).init(), LP_TARGET,
         ([[1.0, 1.0], [0.0, 8.0]], 2.5, 10.0), 3.0),
    ],
)  # fmt: skip
def test_lp_loss_values(burn_test, loss, target, expected, torch_p):
    """lp_loss.rs, the test named by `burn_test` (exact: `assert_eq`)."""
    unreduced, auto, total = lp_all(loss, LP_PRED, target)
    exact(unreduced, expected[0])
    exact(auto, [expected[1]])
    exact(total, [expected[2]])
    elementwise = (th(LP_PRED) - th(target)).abs().pow(torch_p)
    exact(elementwise, expected[0])
    exact(elementwise.mean().reshape(1), [expected[1]])


def test_lp_loss_zero_error():
    """lp_loss.rs, `test_lp_loss_zero_error` (exact)."""
    for loss in (LpLossConfig.l1(), LpLossConfig.l2()):
        exact(loss.forward(floats(LP_PRED), floats(LP_PRED), Reduction.Auto), [0.0])
    exact(F.l1_loss(th(LP_PRED), th(LP_PRED)).reshape(1), [0.0])


def test_lp_loss_negative_errors():
    """lp_loss.rs, `test_lp_loss_negative_errors` (exact)."""
    pred, target = floats([1.0, 2.0, 3.0]), floats([3.0, 4.0, 5.0])
    for loss in (LpLossConfig.l1(), LpLossConfig(1.0).init()):
        exact(loss.forward_no_reduction(pred, target), [2.0, 2.0, 2.0])
    exact(F.l1_loss(th([1.0, 2.0, 3.0]), th([3.0, 4.0, 5.0]), reduction="none"), [2.0] * 3)


def test_lp_loss_3d_tensor():
    """lp_loss.rs, `test_lp_loss_3d_tensor` (exact)."""
    target = [[[0.0, 2.0], [3.0, 5.0]], [[4.0, 6.0], [7.0, 10.0]]]
    for loss in (LpLossConfig.l2(), LpLossConfig(2.0).init()):
        exact(loss.forward(floats(CUBE), floats(target), Reduction.Auto), [0.875])
    exact(F.mse_loss(th(CUBE), th(target)).reshape(1), [0.875])


@pytest.mark.parametrize("p", [-1.0, 0.0])
def test_lp_loss_negative_and_zero_p_panic(p):
    """lp_loss.rs, `test_lp_loss_negative_p_panics`, `test_lp_loss_zero_p_panics`."""
    with pytest.raises(ValueError, match=r"^The order of the norm p must be positive\.$"):
        LpLossConfig(p).init()


def test_lp_loss_fractional_p():
    """lp_loss.rs, `test_lp_loss_fractional_p` (exact)."""
    out = LpLossConfig(1.5).init().forward_no_reduction(floats([0.0, 4.0]), floats([1.0, 0.0]))
    exact(out, [1.0, 8.0])
    exact((th([0.0, 4.0]) - th([1.0, 0.0])).abs().pow(1.5), [1.0, 8.0])


ROWS_PRED = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
ROWS_TARGET = [[0.0, 2.0, 6.0], [1.0, 5.0, 6.0]]


@pytest.mark.parametrize(
    ("burn_test", "loss", "pred", "target", "dims", "expected"),
    [
        ("test_forward_reduce_dims_single_dim", LpLossConfig.l2(), ROWS_PRED, ROWS_TARGET, [1],
         [[10.0 / 3.0], [3.0]]),
        ("test_forward_reduce_dims_single_dim", LpLossConfig(2.0).init(), ROWS_PRED, ROWS_TARGET,
         [1], [[10.0 / 3.0], [3.0]]),
        ("test_forward_reduce_dims_first_dim", LpLossConfig.l2(), ROWS_PRED, ROWS_TARGET, [0],
         [[5.0, 0.0, 4.5]]),
        ("test_forward_reduce_dims_multiple_dims", LpLossConfig.l2(), CUBE,
         [[[0.0, 2.0], [3.0, 6.0]], [[4.0, 6.0], [7.0, 10.0]]], [1, 2], [[[1.25]], [[1.25]]]),
        ("test_forward_reduce_dims_all_dims", LpLossConfig.l2(), LP_PRED, LP_TARGET, [0, 1],
         [[1.5]]),
        ("test_forward_reduce_dims_image_batch", LpLossConfig.l2(),
         [[[[1.0, 2.0], [3.0, 4.0]]], [[[5.0, 6.0], [7.0, 8.0]]]],
         [[[[0.0, 2.0], [3.0, 6.0]]], [[[5.0, 5.0], [7.0, 7.0]]]], [1, 2, 3],
         [[[[1.25]]], [[[0.5]]]]),
        ("test_forward_reduce_dims_with_p1", LpLossConfig.l1(), ROWS_PRED,
         [[0.0, 5.0, 3.0], [1.0, 5.0, 9.0]], [1], [[4.0 / 3.0], [2.0]]),
        ("test_forward_reduce_dims_zero_error", LpLossConfig.l2(), CUBE, CUBE, [1, 2],
         [[[0.0]], [[0.0]]]),
    ],
)  # fmt: skip
def test_lp_forward_reduce_dims(burn_test, loss, pred, target, dims, expected):
    """lp_loss.rs, the `forward_reduce_dims` test named by `burn_test`."""
    approx(loss.forward_reduce_dims(floats(pred), floats(target), dims), expected)
    elementwise = (th(pred) - th(target)).abs().pow(loss.p)
    approx(elementwise.mean(tuple(dims), keepdim=True), expected)


def test_forward_reduce_dims_empty_dims():
    """lp_loss.rs, `test_forward_reduce_dims_empty_dims` (exact)."""
    pred, target = floats(LP_PRED), floats([[0.0, 2.0], [3.0, 6.0]])
    loss = LpLossConfig.l2()
    exact(
        loss.forward_reduce_dims(pred, target, []), loss.forward_no_reduction(pred, target).numpy()
    )


def test_forward_reduce_dims_negative_dims():
    """lp_loss.rs, `test_forward_reduce_dims_negative_dims`."""
    loss = LpLossConfig.l2()
    zeros = floats(np.zeros((2, 2, 2)).tolist())
    expected = loss.forward_reduce_dims(floats(CUBE), zeros, [1, 2]).numpy()
    approx(loss.forward_reduce_dims(floats(CUBE), zeros, [-2, -1]), expected)
    assert math.isclose(float(expected.ravel()[0]), (1 + 4 + 9 + 16) / 4)
