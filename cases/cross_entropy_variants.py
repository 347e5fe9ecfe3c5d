"""Loss corner cases: cross-entropy variants, MSE reductions, binary cross-entropy.

Cross-entropy on fixed logits ``[4, 3]`` with targets ``[0, 1, 2, 2]``:

- pad tokens (engine ``pad_tokens=[2]``) against ``ignore_index=2``: both zero the pad rows, but
  the engine still divides by **all** rows where PyTorch divides by the kept rows, so the loss
  and its gradient are PyTorch's times ``kept / total``; with class weights the engine divides by
  the target weights of all rows, pads included (PyTorch: kept rows only);
- class weights alone, label smoothing, and probabilities instead of logits (``logits=False``
  against ``nll_loss(log(p))``) agree;
- a probability of exactly 0 at a target: the engine clamps at sqrt(float32 tiny) before the log
  and stays finite, PyTorch's ``log(0)`` makes the loss infinite;
- the loss itself is ``[1]`` in the engine and 0-d in PyTorch (the other keys record PyTorch's
  loss reshaped to ``[1]`` so the values can be compared).

MSE with mean, sum and no reduction agrees (``BatchMean`` is rejected by both). Binary
cross-entropy agrees on logits (``binary_cross_entropy_with_logits``) and on probabilities.
"""

import numpy as np
import torch
import torch.nn.functional as F

from harness.case import agree, capture, differ, expect, predicate, same_values_other_shape, scaled
from harness.engine import (
    BinaryCrossEntropyLossConfig,
    CrossEntropyLossConfig,
    Device,
    MseLoss,
    Reduction,
    Tensor,
)

# Values computed in float64 and rounded to float32 once, so both sides start bit-identical.
_R, _C = np.meshgrid(np.arange(4), np.arange(3), indexing="ij")
LOGITS = (0.5 * ((2 * _R + 3 * _C) % 5) - 1.0).astype(np.float32)
_E = np.exp(LOGITS.astype(np.float64))
PROBS = (_E / _E.sum(axis=1, keepdims=True)).astype(np.float32)
TARGETS = np.array([0, 1, 2, 2], dtype=np.int64)
PAD = 2
WEIGHTS = [0.2, 0.3, 0.5]
ALPHA = 0.1
ZERO_PROBS = PROBS.copy()
ZERO_PROBS[0] = [0.0, 0.5, 0.5]  # row 0's target (class 0) has probability exactly 0

_B = np.arange(6).reshape(2, 3)
PRED = (0.3 * _B - 0.7).astype(np.float32)
MSE_TARGET = (0.2 * (5 - _B)).astype(np.float32)
BCE_LOGITS = (0.8 * _B - 2.0).astype(np.float32)
BCE_PROBS = (1.0 / (1.0 + np.exp(-BCE_LOGITS.astype(np.float64)))).astype(np.float32)
BCE_TARGETS = (_B % 2).astype(np.int64)

_KEPT = TARGETS != PAD
KEPT_FRACTION = _KEPT.sum() / TARGETS.size
_W = np.asarray(WEIGHTS)[TARGETS]
KEPT_WEIGHT_FRACTION = _W[_KEPT].sum() / _W.sum()


# ---- PyTorch side ---------------------------------------------------------------------------


def _torch_loss(loss_fn, inputs, targets):
    """(loss reshaped to burn's [1], gradient w.r.t. the inputs)."""
    x = torch.tensor(inputs, requires_grad=True)
    loss = loss_fn(x, torch.from_numpy(targets))
    loss.sum().backward()
    return {"loss": loss.reshape(-1) if loss.dim() == 0 else loss, "grad": x.grad}


def torch_side():
    ce = F.cross_entropy
    w = torch.tensor(WEIGHTS)
    mse = F.mse_loss
    return {
        "plain": _torch_loss(ce, LOGITS, TARGETS),
        "pad": _torch_loss(lambda x, t: ce(x, t, ignore_index=PAD), LOGITS, TARGETS),
        "weights": _torch_loss(lambda x, t: ce(x, t, weight=w), LOGITS, TARGETS),
        "weights_pad": _torch_loss(
            lambda x, t: ce(x, t, weight=w, ignore_index=PAD), LOGITS, TARGETS
        ),
        "smoothing": _torch_loss(lambda x, t: ce(x, t, label_smoothing=ALPHA), LOGITS, TARGETS),
        "probabilities": _torch_loss(lambda p, t: F.nll_loss(p.log(), t), PROBS, TARGETS),
        "zero_probability": {
            "loss": F.nll_loss(torch.tensor(ZERO_PROBS).log(), torch.from_numpy(TARGETS)).reshape(1)
        },
        "shape": {"loss": ce(torch.tensor(LOGITS), torch.from_numpy(TARGETS))},
        "mse": {
            "mean": _torch_loss(lambda p, t: mse(p, t, reduction="mean"), PRED, MSE_TARGET),
            "sum": _torch_loss(lambda p, t: mse(p, t, reduction="sum"), PRED, MSE_TARGET),
            "none": _torch_loss(lambda p, t: mse(p, t, reduction="none"), PRED, MSE_TARGET),
            "batch_mean": capture(
                lambda: mse(torch.tensor(PRED), torch.tensor(MSE_TARGET), reduction="batchmean")
            ),
        },
        "bce": {
            "logits": _torch_loss(
                lambda x, t: F.binary_cross_entropy_with_logits(x, t.float()),
                BCE_LOGITS,
                BCE_TARGETS,
            ),
            "probabilities": _torch_loss(
                lambda p, t: F.binary_cross_entropy(p, t.float()), BCE_PROBS, BCE_TARGETS
            ),
        },
    }


# ---- engine side ----------------------------------------------------------------------------


def _engine_loss(loss_fn, inputs, targets):
    """(loss, gradient w.r.t. the inputs); burn's backward of a [1] loss seeds it with ones."""
    device = Device.flex().autodiff()
    x = Tensor.from_numpy(inputs, device).require_grad()
    loss = loss_fn(x, Tensor.from_numpy(targets, device))
    grads = loss.backward()
    return {"loss": loss, "grad": x.grad(grads)}


def _ce(**config):
    loss = CrossEntropyLossConfig(**config).init(Device.flex().autodiff())
    return loss.forward


def engine_side():
    device = Device.flex().autodiff()
    mse = MseLoss()
    return {
        "plain": _engine_loss(_ce(), LOGITS, TARGETS),
        "pad": _engine_loss(_ce(pad_tokens=[PAD]), LOGITS, TARGETS),
        "weights": _engine_loss(_ce(weights=WEIGHTS), LOGITS, TARGETS),
        "weights_pad": _engine_loss(_ce(weights=WEIGHTS, pad_tokens=[PAD]), LOGITS, TARGETS),
        "smoothing": _engine_loss(_ce(smoothing=ALPHA), LOGITS, TARGETS),
        "probabilities": _engine_loss(_ce(logits=False), PROBS, TARGETS),
        "zero_probability": {
            "loss": _ce(logits=False)(
                Tensor.from_numpy(ZERO_PROBS, device), Tensor.from_numpy(TARGETS, device)
            )
        },
        "shape": {
            "loss": _ce()(Tensor.from_numpy(LOGITS, device), Tensor.from_numpy(TARGETS, device))
        },
        "mse": {
            "mean": _engine_loss(lambda p, t: mse.forward(p, t, Reduction.Mean), PRED, MSE_TARGET),
            "sum": _engine_loss(lambda p, t: mse.forward(p, t, Reduction.Sum), PRED, MSE_TARGET),
            "none": _engine_loss(mse.forward_no_reduction, PRED, MSE_TARGET),
            "batch_mean": capture(
                lambda: mse.forward(
                    Tensor.from_numpy(PRED, device),
                    Tensor.from_numpy(MSE_TARGET, device),
                    Reduction.BatchMean,
                )
            ),
        },
        "bce": {
            "logits": _engine_loss(
                BinaryCrossEntropyLossConfig(logits=True).init(device).forward,
                BCE_LOGITS,
                BCE_TARGETS,
            ),
            "probabilities": _engine_loss(
                BinaryCrossEntropyLossConfig().init(device).forward, BCE_PROBS, BCE_TARGETS
            ),
        },
    }


# ---- checks ---------------------------------------------------------------------------------


def _raises(error_type):
    return predicate(
        f"raises {error_type}", lambda value, _: getattr(value, "type", None) == error_type
    )


def _engine_finite_torch_inf(torch_loss, engine_loss):
    return bool(np.isinf(torch_loss).all() and np.isfinite(engine_loss).all())


_LOSS = "harness.engine.loss.CrossEntropyLoss"


def _engine_vs_torch(pattern, relation):
    """A cross-entropy divergence whose relation reads the engine's value first."""
    return differ(pattern, left="engine", right="torch", because=_LOSS, relation=relation)


CHECKS = [
    agree("plain.*"),
    _engine_vs_torch("pad.*", scaled(KEPT_FRACTION)),
    agree("weights.*"),
    _engine_vs_torch("weights_pad.*", scaled(KEPT_WEIGHT_FRACTION)),
    agree("smoothing.*"),
    agree("probabilities.*"),
    differ(
        "zero_probability.loss",
        because=_LOSS,
        relation=predicate(
            "PyTorch: log(0) = -inf, loss inf; engine: clamped at sqrt(tiny), finite",
            _engine_finite_torch_inf,
        ),
    ),
    _engine_vs_torch("shape.loss", same_values_other_shape()),
    agree("mse.mean.*"),
    agree("mse.sum.*"),
    agree("mse.none.*"),
    expect("mse.batch_mean", "engine", _raises("ValueError")),
    expect("mse.batch_mean", "torch", _raises("ValueError")),
    agree("bce.*"),
]
