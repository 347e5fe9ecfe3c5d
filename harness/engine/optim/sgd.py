"""SGD and burn's momentum (burn-optim `optim/sgd.rs`, `optim/momentum.rs`, read at burn
commit 2c06be351006851d42fdb6df16b976f4a82d9747)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from harness.engine.optim.base import (
    MomentumConfig,
    OptimizerConfig,
    OptimizerState,
    TensorOptimizer,
    WeightDecayConfig,
    axpy_into,
    decay_into,
    f32,
    sub_scaled,
    sub_scaled_into,
)
from harness.engine.optim.clipping import GradientClippingConfig

__all__ = ["Sgd", "SgdConfig", "SgdState", "momentum_direction"]


@dataclasses.dataclass
class SgdState(OptimizerState):
    """Momentum velocity (None without momentum), updated in place."""

    velocity: np.ndarray | None


# Plain SGD's state, shared by every param: it holds no array, so nothing ever writes to it.
_NO_MOMENTUM = SgdState(None)


def momentum_direction(config: MomentumConfig, grad: np.ndarray, state: SgdState | None):
    """burn's `Momentum::transform`: `(direction, state)`, the velocity updated in place.

    First step `v = g` (a copy: `grad` may be shared); then `v = g * (1 - dampening) +
    v * momentum` (dampening in f64, momentum as f32, both cast to the dtype); the direction
    is `v`, or `v * momentum + g` (in the work buffer) with nesterov.
    """
    dt = grad.dtype.type
    mu = dt(f32(config.momentum))
    if state is None or state.velocity is None:
        state = SgdState(grad.copy())
        velocity = state.velocity
    else:
        velocity = state.velocity
        axpy_into(velocity, mu, grad, dt(1.0 - config.dampening), state.work_buffer(grad))
    if not config.nesterov:
        return velocity, state
    scratch = state.work_buffer(grad)
    np.multiply(velocity, mu, out=scratch)
    scratch += grad
    return scratch, state


@dataclasses.dataclass(frozen=True)
class Sgd(TensorOptimizer):
    """`g += penalty * theta`; momentum (see MomentumConfig); `theta -= lr * g`.

    PyTorch differences: `MomentumConfig()` defaults to dampening 0.1 (PyTorch 0); PyTorch's
    first momentum step also sets `v = g` (no dampening on the first step), like burn.
    """

    weight_decay: WeightDecayConfig | None
    momentum: MomentumConfig | None

    def update(self, lr, tensor, grad, state):
        momentum = self.momentum
        if momentum is None and self.weight_decay is None:
            return sub_scaled(tensor, grad, lr), _NO_MOMENTUM  # plain SGD: the hot path
        out = np.empty_like(tensor)
        grad = decay_into(out, tensor, grad, self.weight_decay)
        if momentum is None:
            return sub_scaled_into(out, tensor, grad, lr), _NO_MOMENTUM
        direction, state = momentum_direction(momentum, grad, state)
        return sub_scaled_into(out, tensor, direction, lr), state


@dataclasses.dataclass(frozen=True)
class SgdConfig(OptimizerConfig):
    """burn's `SgdConfig`: optional `weight_decay`, `momentum`, `gradient_clipping`."""

    weight_decay: WeightDecayConfig | None = None
    momentum: MomentumConfig | None = None
    gradient_clipping: GradientClippingConfig | None = None

    _optimizer: ClassVar[type] = Sgd  # build() and init(): OptimizerConfig
    _clipping: ClassVar[str | None] = "gradient_clipping"
