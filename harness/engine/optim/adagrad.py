"""AdaGrad (burn-optim `optim/adagrad.rs`, read at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from harness.engine.optim.base import (
    OptimizerConfig,
    OptimizerState,
    TensorOptimizer,
    WeightDecayConfig,
    decay_into,
    f32,
)
from harness.engine.optim.clipping import GradientClippingConfig

__all__ = ["AdaGrad", "AdaGradConfig", "AdaGradState"]


@dataclasses.dataclass
class AdaGradState(OptimizerState):
    """Step count and the running sum of squared gradients (updated in place)."""

    time: int
    sum: np.ndarray


@dataclasses.dataclass(frozen=True)
class AdaGrad(TensorOptimizer):
    """AdaGrad: `sum += g^2`; `clr = lr / (1 + (t-1) * lr_decay)`;
    `theta -= g / (sqrt(sum) + eps) * clr`.

    PyTorch differences: default **epsilon 1e-5** (PyTorch 1e-10); no
    `initial_accumulator_value` (PyTorch's default 0 matches).
    """

    lr_decay: float
    epsilon: float
    weight_decay: WeightDecayConfig | None

    def update(self, lr, tensor, grad, state):
        dt = tensor.dtype.type
        out = np.empty_like(tensor)
        grad = decay_into(out, tensor, grad, self.weight_decay)
        if state is None:
            state = AdaGradState(1, np.square(grad))
            scratch = state.work_buffer(tensor)
        else:
            scratch = state.work_buffer(tensor)
            np.square(grad, out=scratch)
            state.sum += scratch
            state.time += 1
        new_lr = lr / (1.0 + (float(state.time) - 1.0) * self.lr_decay)
        np.sqrt(state.sum, out=scratch)
        scratch += dt(f32(self.epsilon))
        np.divide(grad, scratch, out=out)
        out *= dt(new_lr)
        return np.subtract(tensor, out, out=out), state


@dataclasses.dataclass(frozen=True)
class AdaGradConfig(OptimizerConfig):
    """burn's `AdaGradConfig`: lr_decay 0, **epsilon 1e-5**, optional `weight_decay`,
    `grad_clipping`."""

    lr_decay: float = 0.0
    epsilon: float = 1e-5
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    _optimizer: ClassVar[type] = AdaGrad  # build() and init(): OptimizerConfig
