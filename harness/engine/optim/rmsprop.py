"""RMSProp (burn-optim `optim/rmsprop.rs`, read at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from harness.engine.optim.base import (
    ONE,
    OptimizerConfig,
    OptimizerState,
    TensorOptimizer,
    WeightDecayConfig,
    axpy_into,
    decay_into,
    f32,
    sub_scaled_into,
)
from harness.engine.optim.clipping import GradientClippingConfig

__all__ = ["RmsProp", "RmsPropConfig", "RmsPropState"]


@dataclasses.dataclass
class RmsPropState(OptimizerState):
    """Running `square_avg`, the centered `grad_avg` (None unless centered), momentum `buf`,
    all updated in place."""

    square_avg: np.ndarray
    grad_avg: np.ndarray | None
    buf: np.ndarray | None


@dataclasses.dataclass(frozen=True)
class RmsProp(TensorOptimizer):
    """RMSProp: `sa = alpha*sa + (1-alpha)*g^2`; centered: `avg = sa - ga^2` with
    `ga = alpha*ga + (1-alpha)*g`; `g = g / (sqrt(avg) + eps)`; momentum `buf = mu*buf + g`.

    PyTorch differences: burn's default **momentum is 0.9** and **epsilon 1e-5** (PyTorch 0 and
    1e-8); with momentum the first buffer is `g / (sqrt(avg) + eps)` in both. burn keeps alpha
    as f32 and computes `1 - alpha` in f32 (PyTorch: in f64, then cast), so the square
    average's weight is 9.3e-7 relative smaller and the update about 5e-7 relative larger from
    the first step, in float64 too: a formula difference (measured: 9.0e-7 on the A1 params
    after 20 float64 steps with PyTorch given alpha 0.99). Given burn's f32 alpha instead, the
    `optimizer_trajectories` case's float64 reruns agree to rounding over 100 steps
    (`aligned.rmsprop`, `aligned.rmsprop_centered`): `1 - alpha` of the f32 alpha is exact.
    """

    alpha: float
    momentum: float
    epsilon: float
    centered: bool
    weight_decay: WeightDecayConfig | None

    def update(self, lr, tensor, grad, state):
        dt = tensor.dtype.type
        out = np.empty_like(tensor)
        grad = decay_into(out, tensor, grad, self.weight_decay)
        state = self._averages(grad, state)
        scratch = state.work_buffer(tensor)
        avg = state.square_avg
        if self.centered:
            np.square(state.grad_avg, out=scratch)
            avg = np.subtract(state.square_avg, scratch, out=scratch)
        np.sqrt(avg, out=scratch)
        scratch += dt(f32(self.epsilon))
        np.divide(grad, scratch, out=out)
        direction = out
        momentum = f32(self.momentum)
        if momentum > 0.0:
            if state.buf is None:
                state.buf = out.copy()
            else:
                np.multiply(state.buf, dt(momentum), out=state.buf)
                state.buf += out
            direction = state.buf
        return sub_scaled_into(out, tensor, direction, lr), state

    def _averages(self, grad, state):
        """burn's `SquareAvgState` and `CenteredState` transforms, in place."""
        dt = grad.dtype.type
        alpha = f32(self.alpha)
        keep, rest = dt(alpha), dt(ONE - alpha)
        if state is None:
            square_avg = np.square(grad)
            square_avg *= rest
            return RmsPropState(square_avg, grad * rest if self.centered else None, None)
        scratch = state.work_buffer(grad)
        np.square(grad, out=scratch)
        axpy_into(state.square_avg, keep, scratch, rest, scratch)
        if self.centered:
            if state.grad_avg is None:
                state.grad_avg = grad * rest
            else:
                axpy_into(state.grad_avg, keep, grad, rest, scratch)
        return state


@dataclasses.dataclass(frozen=True)
class RmsPropConfig(OptimizerConfig):
    """burn's `RmsPropConfig`: alpha 0.99, **momentum 0.9**, **epsilon 1e-5**, centered false,
    optional `weight_decay`, `grad_clipping`."""

    alpha: float = 0.99
    momentum: float = 0.9
    epsilon: float = 1e-5
    centered: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    _optimizer: ClassVar[type] = RmsProp  # build() and init(): OptimizerConfig
