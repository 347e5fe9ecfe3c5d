"""burn's `CosineSimilarityConfig` and `PairwiseDistanceConfig` (crates/burn-nn/src/modules/
cosine_similarity.rs, pairwise_distance.rs, burn 2c06be351006851d42fdb6df16b976f4a82d9747;
tests `cosine_similarity_dim1`, `cosine_similarity_negative_dim`, `pairwise_distance_p2`,
`pairwise_distance_p1`), over burn's `linalg::cosine_similarity` / `linalg::lp_norm` (the
composites of harness.engine.loss.functional).

Both take two `[batch, features]` tensors (burn's `Tensor<2>`) and return `[batch]`.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.engine.errors import ShapeError
from harness.engine.kernels._common import fmt
from harness.engine.loss.functional import cosine_similarity, lp_norm
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

__all__ = [
    "CosineSimilarity",
    "CosineSimilarityConfig",
    "PairwiseDistance",
    "PairwiseDistanceConfig",
]


def _pair(module: str, x1: Tensor, x2: Tensor) -> None:
    if x1.ndim != 2 or x1.shape != x2.shape:
        raise ShapeError(
            f"{module}: expected two inputs of one shape [batch_size, features], got shapes "
            f"{fmt(x1.shape)} and {fmt(x2.shape)}"
        )


@dataclass(frozen=True)
class CosineSimilarityConfig(Config):
    """burn's `CosineSimilarityConfig::new()`: dim 1, eps 1e-8 (PyTorch's defaults)."""

    dim: int = 1
    eps: float = 1e-8

    def init(self) -> CosineSimilarity:
        return CosineSimilarity(self.dim, self.eps)


class CosineSimilarity(Module):
    """`sum(x1 * x2, dim) / (max(||x1||, eps) * max(||x2||, eps))`, the dim squeezed.

    PyTorch differences (`nn.CosineSimilarity`): PyTorch divides each input by its clamped
    norm first and then sums the products (`(x1 / n1 * (x2 / n2)).sum(dim)`), so the values
    round differently (a few ulp); its clamp runs without autograd, so for a norm below eps
    its gradient is that of the unclamped norm, burn's `clamp_min` passes no gradient there.
    PyTorch broadcasts the two inputs and takes any rank; burn's module takes two rank-2
    tensors of one shape.
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        _pair("CosineSimilarity", x1, x2)
        if not -2 <= self.dim < 2:
            raise ShapeError(f"CosineSimilarity: dim {self.dim} is out of range for rank 2")
        dim = self.dim % 2
        return cosine_similarity(x1, x2, dim, self.eps).squeeze_dim(dim)


@dataclass(frozen=True)
class PairwiseDistanceConfig(Config):
    """burn's `PairwiseDistanceConfig::new()`: p 2, eps 1e-6 (PyTorch's defaults)."""

    p: float = 2.0
    eps: float = 1e-6

    def init(self) -> PairwiseDistance:
        return PairwiseDistance(self.p, self.eps)


class PairwiseDistance(Module):
    """`||x1 - x2 + eps||_p` over the feature dim (burn's `lp_norm` dispatch on p).

    PyTorch differences (`nn.PairwiseDistance`): no `keepdim` (the result is always
    `[batch]`); PyTorch broadcasts and takes any rank; where `x1 - x2 + eps` is all zeros,
    PyTorch's norm backward gives a zero gradient, burn's `sqrt` (p = 2) or `powf` gives
    NaN.
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6) -> None:
        self.p = p
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        _pair("PairwiseDistance", x1, x2)
        return lp_norm((x1 - x2).add_scalar(self.eps), self.p, 1).squeeze_dim(1)
