"""Embedding losses: triplet margin (`triplet_margin.rs`) and cosine embedding
(`cosine_embedding.rs`), both in `crates/burn-nn/src/loss/`.

burn read at commit 2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47), with
`crates/burn-tensor/src/tensor/linalg/` (`lp_norm`, `cosine_similarity`).
"""

from __future__ import annotations

import dataclasses

from harness.engine.loss.functional import cosine_similarity, lp_norm
from harness.engine.loss.reduction import Reduction, f32, mean_or_sum
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

# ---- triplet margin -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TripletMarginLossConfig(Config):
    """burn's `TripletMarginLossConfig`: `margin` (an f64, default 1.0) and `p` (an f64, the
    norm degree, default 2.0); no checks. `init()` takes no device."""

    margin: float = 1.0
    p: float = 2.0

    def init(self) -> TripletMarginLoss:
        return TripletMarginLoss(float(self.margin), float(self.p))


class TripletMarginLoss(Module):
    """Per triplet `max(0, ||a - p||_p - ||a - n||_p + margin)` with burn's `lp_norm` over the
    embedding dim.

    PyTorch differences (`F.triplet_margin_loss`, see the `losses` case):
    - PyTorch's distance is `pairwise_distance(a, p, eps=1e-6)`, the norm of `a - p + eps`;
      burn adds no eps. The losses differ by about `eps` per component;
    - so where `a == p` (a zero distance) the engine's gradient is NaN for p = 2 (the
      derivative of `sqrt` at 0 is inf, times 0) while PyTorch's is finite;
    - no `swap` option.
    """

    def __init__(self, margin: float, p: float) -> None:
        self.margin = margin
        self.p = p

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor, reduction) -> Tensor:
        """The reduced loss (`Mean`/`Auto` or `Sum`), shape `[1]`."""
        return mean_or_sum(self.forward_no_reduction(anchor, positive, negative), reduction)

    def forward_no_reduction(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """The loss of each triplet, shape `[batch]`."""
        distance_positive = lp_norm(anchor - positive, self.p, 1).squeeze_dim(1)
        distance_negative = lp_norm(anchor - negative, self.p, 1).squeeze_dim(1)
        return (distance_positive - distance_negative).add_scalar(self.margin).clamp_min(0.0)


# ---- cosine embedding ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CosineEmbeddingLossConfig(Config):
    """burn's `CosineEmbeddingLossConfig`: `margin` (an f32, default 0.0) and `reduction`
    (default `Reduction.Mean`, applied by `forward`). `init()` takes no device."""

    margin: float = 0.0
    reduction: Reduction = Reduction.Mean

    def init(self) -> CosineEmbeddingLoss:
        return CosineEmbeddingLoss(f32(self.margin), self.reduction)


class CosineEmbeddingLoss(Module):
    """`1 - cos(x1, x2)` where the int target is 1, `max(0, cos(x1, x2) - margin)` where it is
    -1, 0 elsewhere; `CosineEmbeddingLoss()` is burn's `new()` (margin 0, `Mean`).

    PyTorch differences (`F.cosine_embedding_loss`, see the `losses` case):
    - the cosine is burn's `cosine_similarity`: `dot / (max(|x1|, tiny) * max(|x2|, tiny))`;
      PyTorch's is `dot / sqrt((|x1|^2 + 1e-12) * (|x2|^2 + 1e-12))`, the same value up to
      rounding for non-zero vectors;
    - for an all-zero input row the engine's gradient is NaN (the derivative of `sqrt` at 0,
      inf, times the clamp's 0) where PyTorch's is finite;
    - the reduction is part of the config (`forward` takes none); the result is `[1]`.
    """

    def __init__(self, margin: float = 0.0, reduction: Reduction = Reduction.Mean) -> None:
        self.margin = margin
        self.reduction = reduction

    @classmethod
    def new(cls) -> CosineEmbeddingLoss:
        """burn's `CosineEmbeddingLoss::new()` (margin 0, `Mean`), the same as `()`."""
        return cls()

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """The loss reduced by the config's reduction (`Mean`/`Auto` or `Sum`), shape `[1]`."""
        return mean_or_sum(self.forward_no_reduction(input1, input2, target), self.reduction)

    def forward_no_reduction(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """The loss of each pair, shape `[batch]`."""
        _assertions(input1, input2, target)
        cos_sim = cosine_similarity(input1, input2, 1).squeeze_dim(1)
        loss = cos_sim.zeros_like()
        similar = cos_sim.neg().add_scalar(1)
        loss = loss.mask_where(target.equal_elem(1), similar)
        dissimilar = cos_sim.sub_scalar(self.margin).relu()
        return loss.mask_where(target.equal_elem(-1), dissimilar)


def _assertions(input1: Tensor, input2: Tensor, target: Tensor) -> None:
    """burn's three `assert_eq!` messages (without Rust's `left`/`right` lines); the ranks
    are burn's types (`Tensor<2>`, `Tensor<2>`, `Tensor<1, Int>`)."""
    for name, tensor, rank in (("input1", input1, 2), ("input2", input2, 2), ("target", target, 1)):
        if tensor.ndim != rank:
            raise ValueError(
                f"CosineEmbeddingLoss: {name} must have rank {rank}, got shape {list(tensor.shape)}"
            )
    (batch1, dim1), (batch2, dim2) = input1.shape, input2.shape
    (batch_target,) = target.shape
    if batch1 != batch2:
        raise ValueError(
            f"Batch size of input1 ({batch1}) must match batch size of input2 ({batch2})"
        )
    if dim1 != dim2:
        raise ValueError(
            f"Embedding dimension of input1 ({dim1}) must match embedding dimension of "
            f"input2 ({dim2})"
        )
    if batch1 != batch_target:
        raise ValueError(
            f"Batch size of inputs ({batch1}) must match batch size of target ({batch_target})"
        )
