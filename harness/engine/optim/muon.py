"""Muon, momentum orthogonalised by Newton-Schulz (burn-optim `optim/muon.rs`, read at burn
commit 2c06be351006851d42fdb6df16b976f4a82d9747; https://kellerjordan.github.io/posts/muon/)."""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import ClassVar

import numpy as np

from harness.engine.errors import ShapeError
from harness.engine.optim.base import (
    MomentumConfig,
    OptimizerConfig,
    TensorOptimizer,
    WeightDecayConfig,
    f32,
    sub_scaled_into,
)
from harness.engine.optim.sgd import momentum_direction
from harness.engine.tensor import Tensor

__all__ = ["AdjustLrFn", "Muon", "MuonConfig"]


class AdjustLrFn(enum.Enum):
    """How Muon scales the learning rate by the param's first two dims `A x B` (burn's
    `AdjustLrFn`): `Original` (Keller Jordan) `sqrt(max(1, A / B))`, `MatchRmsAdamW`
    (Moonshot) `0.2 * sqrt(max(A, B))`; rank < 2 gives 1. Computed in f64."""

    Original = "original"
    MatchRmsAdamW = "match_rms_adamw"

    def adjustment_ratio(self, shape) -> float:
        """The factor the learning rate is multiplied by for a param of `shape`."""
        if len(shape) < 2:
            return 1.0
        a, b = float(shape[0]), float(shape[1])
        if self is AdjustLrFn.Original:
            return math.sqrt(max(a / b, 1.0))
        return 0.2 * math.sqrt(max(a, b))


_MUON_MOMENTUM = MomentumConfig(momentum=0.95, dampening=0.0, nesterov=True)
NOT_2D = "Newton-Schulz iteration requires 2D tensors, got {}D"
"""burn's panic message for a param of another rank (`muon.rs`, `Muon::step`)."""


@dataclasses.dataclass(frozen=True)
class Muon(TensorOptimizer):
    """Muon: burn's momentum (see MomentumConfig), then the update replaced by its
    Newton-Schulz orthogonalisation, the weight decayed as `theta * (1 - lr * penalty)` with
    the **unadjusted** lr, then `theta - update * lr * adjustment_ratio(shape)`.

    Only 2-D params: any other rank raises `ShapeError` with burn's panic text at its step,
    before the momentum is touched (a Linear's bias fails after its weight was updated).
    State: the momentum velocity (`SgdState`, updated in place); the iteration itself builds
    new matrices at every step, as burn's does.

    PyTorch differences (`torch.optim.Muon`): PyTorch runs the Newton-Schulz iteration in
    **bfloat16**, burn in the param's dtype, so the updates agree to about 1e-2 relative only;
    PyTorch's momentum is a lerp (`buf = mu buf + (1 - mu) g`, nesterov `(1 - mu) g + mu buf`),
    burn's is `v = mu v + g`, `g + mu v`, the same direction scaled by `1 - mu`, which the
    normalisation removes; PyTorch's default weight_decay is 0.1 (burn: none); PyTorch rejects
    non-2-D params at construction with a ValueError.
    """

    momentum: MomentumConfig
    ns_coefficients: tuple[float, float, float]
    epsilon: float
    ns_steps: int
    adjust_lr_fn: AdjustLrFn
    weight_decay: WeightDecayConfig | None

    def update(self, lr, tensor, grad, state):
        if tensor.ndim != 2:
            raise ShapeError(NOT_2D.format(tensor.ndim))
        direction, state = momentum_direction(self.momentum, grad, state)
        update = self.zeropower_via_newtonschulz(Tensor._plain(direction))._data
        adjusted_lr = lr * self.adjust_lr_fn.adjustment_ratio(tensor.shape)
        decayed = tensor
        if self.weight_decay is not None:
            decay_factor = 1.0 - lr * float(f32(self.weight_decay.penalty))
            decayed = tensor * tensor.dtype.type(decay_factor)
        return sub_scaled_into(np.empty_like(tensor), decayed, update, adjusted_lr), state

    def zeropower_via_newtonschulz(self, g: Tensor) -> Tensor:
        """burn's quintic Newton-Schulz iteration on a plain tensor, in its dtype: a tall
        matrix is transposed; `X = X / max(||X||_F, eps)`; `steps` times `A = X X^T`,
        `B = b A + c A A`, `X = a X + B X`; transposed back. Coefficients and eps are f32."""
        d = g.ndim
        needs_transpose = g.shape[d - 2] > g.shape[d - 1]
        x = g.swap_dims(d - 2, d - 1) if needs_transpose else g
        eps = float(f32(self.epsilon))
        norm = x.powf_scalar(2.0).sum().sqrt().clamp_min(eps).unsqueeze()
        x = x.div(norm)
        a, b, c = (float(f32(k)) for k in self.ns_coefficients)
        for _ in range(self.ns_steps):
            a_matrix = x.matmul(x.swap_dims(d - 2, d - 1))
            a_squared = a_matrix.matmul(a_matrix)
            b_matrix = a_matrix.mul_scalar(b).add(a_squared.mul_scalar(c))
            x = x.mul_scalar(a).add(b_matrix.matmul(x))
        return x.swap_dims(d - 2, d - 1) if needs_transpose else x


@dataclasses.dataclass(frozen=True)
class MuonConfig(OptimizerConfig):
    """burn's `MuonConfig`: weight_decay none, momentum `MomentumConfig(0.95, 0.0, nesterov
    true)`, ns_coefficients (3.4445, -4.775, 2.0315), epsilon 1e-7, ns_steps 5,
    adjust_lr_fn `AdjustLrFn.Original`. No gradient clipping (burn's config has none)."""

    weight_decay: WeightDecayConfig | None = None
    momentum: MomentumConfig = _MUON_MOMENTUM
    ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315)
    epsilon: float = 1e-7
    ns_steps: int = 5
    adjust_lr_fn: AdjustLrFn = AdjustLrFn.Original

    _optimizer: ClassVar[type] = Muon  # build() and init(): OptimizerConfig
    _clipping: ClassVar[str | None] = None  # burn's MuonConfig has no clipping
