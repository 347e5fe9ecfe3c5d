"""Binary cross-entropy (`crates/burn-nn/src/loss/binary_cross_entropy.rs`), on probabilities
(the default) or on logits.

burn read at commit 2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47), with flex's
`log_sigmoid` (`crates/burn-flex/src/ops/activation.rs`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from harness.engine.loss.cross_entropy import checked_fields, smooth
from harness.engine.loss.reduction import constant, targets_shape_error
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor


@dataclasses.dataclass(frozen=True)
class BinaryCrossEntropyLossConfig(Config):
    """burn's `BinaryCrossEntropyLossConfig`: per-class `weights`, `smoothing`, and
    `logits` (default **False**: inputs are probabilities)."""

    weights: Sequence[float] | None = None
    smoothing: float | None = None
    logits: bool = False

    def init(self, device) -> BinaryCrossEntropyLoss:
        return BinaryCrossEntropyLoss(**checked_fields(self, device))


class BinaryCrossEntropyLoss(Module):
    """Binary cross-entropy of `logits` against int `targets` of the same shape, mean over all
    elements.

    - probabilities (default): `(t - 1) * max(log1p(-p), -100) - t * max(log(p), -100)`; the
      -100 floor is the same as PyTorch's `binary_cross_entropy`;
    - `logits=True`: `(1 - t) * x - log_sigmoid(x)` with flex's `ln_1p`-based log-sigmoid, the
      same formula as PyTorch's `binary_cross_entropy_with_logits` (so a confident correct
      logit, x = 20 with t = 1, costs exp(-20), not exactly 0). The gradient is not PyTorch's
      formula: burn's autodiff adds `g * (1 - t)` and `-g * sigmoid(-x)`, PyTorch computes
      `g * (sigmoid(x) - t)`; for confident logits each side rounds a different term to 0
      (x = -20, t = 0: 0 here, `g * exp(-20)` in PyTorch; x = 20, t = 1: the reverse). They
      differ by at most an ulp of 1 times g (the `losses` case);
    - weights: rank 1 gathers `weights[target]` per element; rank > 1 weights the last dim
      (per class). PyTorch's `weight=` is an elementwise tensor instead.
    """

    def __init__(self, weights, smoothing, logits) -> None:
        self.weights = weights
        self.smoothing = smoothing
        self.logits = logits

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        self._assertions(logits, targets)
        shape = targets.shape
        target_values = targets.numpy().astype(logits.dtype)
        if self.smoothing is not None:
            classes = shape[-1] if len(shape) > 1 else 2
            target_values = smooth(target_values, self.smoothing, classes)
        t = constant(target_values, logits)
        if self.logits:
            loss = (t.neg() + 1.0) * logits - logits.log_sigmoid()
        else:
            loss = (t - 1.0) * logits.neg().log1p().clamp_min(-100.0) - t * logits.log().clamp_min(
                -100.0
            )
        if self.weights is not None:
            # rank > 1: one weight per class (last dim); rank 1: the weight of each target.
            per_class = len(shape) > 1
            loss = loss * (self.weights if per_class else self.weights.gather(0, targets))
        return loss.mean()

    def _assertions(self, logits: Tensor, targets: Tensor) -> None:
        if logits.shape != targets.shape:
            raise targets_shape_error(targets, "logits", logits)
        if self.weights is not None and targets.ndim > 1:
            weights_classes = self.weights.shape[0]
            targets_classes = targets.shape[-1]
            if weights_classes != targets_classes:
                raise ValueError(
                    f"The number of classes ({weights_classes}) does not match the weights "
                    f"provided ({targets_classes})."
                )
