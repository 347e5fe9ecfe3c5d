"""Margin losses: hinge embedding (`hinge_embedding.rs`), margin ranking (`margin_ranking.rs`),
soft margin (`soft_margin.rs`) and multi-class margin (`multi_margin.rs`), all in
`crates/burn-nn/src/loss/`.

burn read at commit 2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47).
"""

from __future__ import annotations

import dataclasses

from harness.engine.loss.functional import softplus
from harness.engine.loss.reduction import mean_or_sum
from harness.engine.module import Config, Module, rust_float
from harness.engine.tensor import Tensor

# ---- hinge embedding ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class HingeEmbeddingLossConfig(Config):
    """burn's `HingeEmbeddingLossConfig`: `margin` (an f64, default 1.0, no check). `init()`
    takes no device."""

    margin: float = 1.0

    def init(self) -> HingeEmbeddingLoss:
        return HingeEmbeddingLoss(float(self.margin))


class HingeEmbeddingLoss(Module):
    """`x` where the target is 1, `max(0, margin - x)` everywhere else.

    PyTorch difference: `F.hinge_embedding_loss` adds two terms, `x` where `t != -1` and
    `max(0, margin - x)` where `t != 1`, so a target outside {-1, 1} (say 0) costs
    `x + max(0, margin - x)` there and `max(0, margin - x)` here. For targets in {-1, 1}
    both agree.
    """

    def __init__(self, margin: float) -> None:
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor, reduction) -> Tensor:
        """The reduced loss (`Mean`/`Auto` or `Sum`), shape `[1]`."""
        return mean_or_sum(self.forward_no_reduction(input, target), reduction)

    def forward_no_reduction(self, input: Tensor, target: Tensor) -> Tensor:
        """The elementwise loss, same shape as the inputs."""
        negative = input.neg().add_scalar(self.margin).clamp_min(0.0)
        return negative.mask_where(target.equal_elem(1), input)


# ---- margin ranking -----------------------------------------------------------------------

MARGIN_RANKING_MARGIN = "Margin for margin ranking loss must be a non-negative number."


@dataclasses.dataclass(frozen=True)
class MarginRankingLossConfig(Config):
    """burn's `MarginRankingLossConfig`: `margin` (an f64, default 0.0, must be >= 0; PyTorch
    accepts a negative margin). `init()` takes no device."""

    margin: float = 0.0

    def init(self) -> MarginRankingLoss:
        if not float(self.margin) >= 0.0:
            raise ValueError(MARGIN_RANKING_MARGIN)
        return MarginRankingLoss(float(self.margin))


class MarginRankingLoss(Module):
    """`max(0, -y * (x1 - x2) + margin)`, the max taken by `relu`.

    PyTorch difference: `F.margin_ranking_loss` clamps with `clamp_min(0)`, whose gradient
    passes at exactly 0; burn's `relu` gives gradient 0 there, so a pair sitting exactly on the
    margin gets no gradient here and a full one in PyTorch.
    """

    def __init__(self, margin: float) -> None:
        self.margin = margin

    def forward(self, first: Tensor, second: Tensor, target: Tensor, reduction) -> Tensor:
        """The reduced loss (`Mean`/`Auto` or `Sum`), shape `[1]`."""
        return mean_or_sum(self.forward_no_reduction(first, second, target), reduction)

    def forward_no_reduction(self, first: Tensor, second: Tensor, target: Tensor) -> Tensor:
        """The elementwise loss, same shape as the inputs."""
        return target.mul(first - second).neg().add_scalar(self.margin).relu()


# ---- soft margin --------------------------------------------------------------------------


class SoftMarginLoss(Module):
    """burn's `SoftMarginLoss::new()`: `softplus(-(t * x))` with burn's softplus
    `log(exp(z) + 1)`.

    PyTorch difference: `F.soft_margin_loss` computes `log1p(exp(-t * x))`. Once
    `exp(-t * x)` is below half an ulp of 1 (t * x above about 16.6 in float32) the engine's
    loss is exactly 0 while PyTorch's is about `exp(-t * x)`; the gradients agree.
    """

    @classmethod
    def new(cls) -> SoftMarginLoss:
        """burn's `SoftMarginLoss::new()` (the same as `SoftMarginLoss()`)."""
        return cls()

    def forward(self, logits: Tensor, targets: Tensor, reduction) -> Tensor:
        """The reduced loss (`Mean`/`Auto` or `Sum`), shape `[1]`."""
        return mean_or_sum(self.forward_no_reduction(logits, targets), reduction)

    def forward_no_reduction(self, logits: Tensor, targets: Tensor) -> Tensor:
        """The elementwise loss, same shape as the inputs."""
        return softplus(targets.mul(logits).neg(), 1.0)


# ---- multi margin -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MultiMarginLossConfig(Config):
    """burn's `MultiMarginLossConfig`: `margin` (an f64, default 1.0, >= 0) and `p` (an i32,
    default 1, 1 or 2). PyTorch accepts a negative margin. `init()` takes no device."""

    margin: float = 1.0
    p: int = 1

    def init(self) -> MultiMarginLoss:
        margin = float(self.margin)
        if not margin >= 0.0:
            raise ValueError(
                f"Margin for multi margin loss must be non-negative, got {rust_float(margin)}"
            )
        if isinstance(self.p, bool) or self.p not in (1, 2) or int(self.p) != self.p:
            raise ValueError(f"Multi margin loss only supports p = 1 or p = 2, got {self.p}")
        return MultiMarginLoss(margin, int(self.p))


class MultiMarginLoss(Module):
    """Per sample `(1 / C) * sum over i != y of max(0, margin - x[y] + x[i])^p`.

    burn sums the hinge over **all** classes, then subtracts the target class's own term
    `margin^p` (computed in f64, cast to the dtype) and scales by `1 / C` (f64, cast). PyTorch's
    `F.multi_margin_loss` skips i = y and divides by C: the same function, rounded differently
    (the subtraction costs up to an ulp of `margin^p` when the loss is small). PyTorch also
    takes class `weight=`, burn does not.
    """

    def __init__(self, margin: float, p: int) -> None:
        self.margin = margin
        self.p = p

    def forward(self, input: Tensor, target: Tensor, reduction) -> Tensor:
        """The reduced loss (`Mean`/`Auto` or `Sum`), shape `[1]`."""
        return mean_or_sum(self.forward_no_reduction(input, target), reduction)

    def forward_no_reduction(self, input: Tensor, target: Tensor) -> Tensor:
        """The loss of each sample, shape `[batch]`."""
        batch, classes = input.shape
        correct = input.gather(1, target.reshape([batch, 1]))
        summed = (
            input.sub(correct).add_scalar(self.margin).clamp_min(0.0).powi_scalar(self.p).sum_dim(1)
        )
        margin_pow_p = self.margin * self.margin if self.p == 2 else self.margin
        per_sample = summed.sub_scalar(margin_pow_p).squeeze_dim(1)
        return per_sample.mul_scalar(1.0 / classes)
