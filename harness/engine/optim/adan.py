"""Adan, adaptive Nesterov momentum (burn-optim `optim/adan.rs`, read at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747; Xie et al., https://arxiv.org/abs/2208.06677)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from harness.engine.lr_scheduler.base import powi
from harness.engine.optim.base import (
    ONE,
    OptimizerConfig,
    OptimizerState,
    TensorOptimizer,
    axpy_into,
    f32,
    sub_scaled_into,
)
from harness.engine.optim.clipping import GradientClippingConfig

__all__ = ["Adan", "AdanConfig", "AdaptiveNesterovMomentumState"]


@dataclasses.dataclass
class AdaptiveNesterovMomentumState(OptimizerState):
    """Adan's state (burn's `AdaptiveNesterovMomentumState`), updated in place: the step
    count, the first moment, the gradient-difference weighted second moment, the
    gradient-difference momentum and the negated previous gradient."""

    time: int
    exp_avg: np.ndarray
    exp_avg_sq: np.ndarray
    exp_avg_diff: np.ndarray
    neg_pre_grad: np.ndarray


@dataclasses.dataclass(frozen=True)
class Adan(TensorOptimizer):
    """Adan: with `d = g - g_prev`, `m = b1 m + (1-b1) g`, `n = b2 n + (1-b2) d`,
    `v = b3 v + (1-b3) (b2 d + g)^2` (first step: `m = (1-b1) g`, `n = 0`,
    `v = (1-b3) g^2`); `denom = sqrt(v) / sqrt(1 - b3^t) + eps`; update
    `m / (1 - b1^t) / denom + (n * b2 / (1 - b2^t)) / denom`, times lr. Weight decay is
    proximal, `(theta - delta) / (1 + lr wd)`, or with `no_prox` decoupled,
    `theta (1 - lr wd) - delta`. Betas and epsilon are f32, the bias corrections f32
    arithmetic, the decay rate f64, in `adan.rs`'s order.

    PyTorch difference: PyTorch has no Adan optimizer.
    """

    beta_1: float
    beta_2: float
    beta_3: float
    epsilon: float
    weight_decay: float
    no_prox: bool

    def update(self, lr, tensor, grad, state):
        dt = tensor.dtype.type
        state = self._moments(grad, state)
        time = state.time
        b1, b2, b3 = f32(self.beta_1), f32(self.beta_2), f32(self.beta_3)
        denominator = state.work_buffer(tensor)
        np.sqrt(state.exp_avg_sq, out=denominator)
        denominator /= dt(np.sqrt(ONE - powi(b3, time)))
        denominator += dt(f32(self.epsilon))
        out = np.divide(state.exp_avg, dt(ONE - powi(b1, time)))
        out /= denominator
        # neg_pre_grad is rewritten last, so it serves as the second term's buffer.
        second = state.neg_pre_grad
        np.multiply(state.exp_avg_diff, dt(b2), out=second)
        second /= dt(ONE - powi(b2, time))
        second /= denominator
        out += second
        np.multiply(grad, dt(-1.0), out=state.neg_pre_grad)
        return self._apply(lr, tensor, out, denominator), state

    def _moments(self, grad, state):
        """burn's `AdaptiveNesterovMomentum::transform` up to the bias corrections."""
        dt = grad.dtype.type
        b1, b2, b3 = f32(self.beta_1), f32(self.beta_2), f32(self.beta_3)
        if state is None:
            exp_avg_sq = np.square(grad)
            exp_avg_sq *= dt(ONE - b3)
            return AdaptiveNesterovMomentumState(
                1, grad * dt(ONE - b1), exp_avg_sq, np.zeros_like(grad), grad * dt(-1.0)
            )
        scratch = state.work_buffer(grad)
        grad_diff = state.neg_pre_grad  # becomes `neg_pre_grad + g`, rewritten in `update`
        grad_diff += grad
        grad_diff_sq = np.multiply(grad_diff, dt(b2), out=scratch)
        grad_diff_sq += grad
        np.square(grad_diff_sq, out=grad_diff_sq)
        # `exp_avg_sq` first, while `scratch` still holds grad_diff_sq.
        axpy_into(state.exp_avg_sq, dt(b3), grad_diff_sq, dt(ONE - b3), scratch)
        axpy_into(state.exp_avg, dt(b1), grad, dt(ONE - b1), scratch)
        axpy_into(state.exp_avg_diff, dt(b2), grad_diff, dt(ONE - b2), scratch)
        state.time += 1
        return state

    def _apply(self, lr, tensor, update, buffer):
        """`tensor - update * lr` with burn's proximal or decoupled weight decay."""
        dt = tensor.dtype.type
        decay_rate = lr * float(f32(self.weight_decay))
        if self.no_prox:
            if decay_rate == 0.0:
                return sub_scaled_into(update, tensor, update, lr)
            decayed = np.multiply(tensor, dt(1.0 - decay_rate), out=buffer)
            return sub_scaled_into(update, decayed, update, lr)
        updated = sub_scaled_into(update, tensor, update, lr)
        if decay_rate != 0.0:
            updated /= dt(1.0 + decay_rate)
        return updated


@dataclasses.dataclass(frozen=True)
class AdanConfig(OptimizerConfig):
    """burn's `AdanConfig`: beta_1 0.98, beta_2 0.92, beta_3 0.99, epsilon 1e-8,
    weight_decay 0, no_prox false, optional `grad_clipping`."""

    beta_1: float = 0.98
    beta_2: float = 0.92
    beta_3: float = 0.99
    epsilon: float = 1e-8
    weight_decay: float = 0.0
    no_prox: bool = False
    grad_clipping: GradientClippingConfig | None = None

    _optimizer: ClassVar[type] = Adan  # build() and init(): OptimizerConfig
