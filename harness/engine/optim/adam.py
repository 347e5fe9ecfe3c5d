"""Adam and AdamW (burn-optim `optim/adam.rs`, `optim/adamw.rs`, read at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747). Each follows its own file's order of operations.

PyTorch difference shared by both, a formula-level one (not rounding): burn keeps beta_1,
beta_2 and epsilon as f32 and computes the bias corrections `1 - beta^t` in f32 arithmetic
(`f32::powi`), then casts them to the tensor dtype; PyTorch uses the Python (f64) betas and
computes `1 - beta**t` in f64. `1 - 0.999^t` is small, so its f32 rounding is a relative error
up to ~1e-5 in the early steps, and the update differs by about that much whatever the tensor
dtype. On the A1 model (lr 0.01) the largest param gap grows about linearly, ~1.1e-7 a step,
while the updates are full-size, passes 1e-6 at step 14, and levels off near 6e-6 after step 80
as they shrink (measured over all params for 120 steps); float64 on both sides gives the same
gap. The `optimizer_trajectories` case shows it step by step on the loss and biases (100
steps, `aligned.adam`: saturating 4.5e-8/step until step 59, then 3.0e-6; first over 1e-6 at
step 12; float64: parts, 29.3 bits over rounding), documented there as a systematic differ.
Measured apart: the f32 rounding of `1 - beta^t` is nearly all of it; f32 betas with f64 bias
corrections leave a gap 40 to 200 times smaller.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from harness.engine import divergence
from harness.engine.lr_scheduler.base import powi
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

__all__ = ["Adam", "AdamConfig", "AdamW", "AdamWConfig", "AdaptiveMomentumState"]


@dataclasses.dataclass
class AdaptiveMomentumState(OptimizerState):
    """Adam's state: step count `time`, moments `moment_1`, `moment_2` (and the AMSGrad max),
    updated in place. `masks` are the two boolean work buffers of cautious weight decay."""

    time: int
    moment_1: np.ndarray
    moment_2: np.ndarray
    max_moment_2: np.ndarray | None = None
    masks: tuple | None = OptimizerState.work_buffer_field()


def update_moments(grad, state, beta_1: float, beta_2: float, amsgrad: bool):
    """The moment recurrences both files share: `m = m * b1 + g * (1 - b1)`, `v = v * b2 +
    g^2 * (1 - b2)` (first step without the first terms), AMSGrad `max(max_v, v)`, `t += 1`.
    Every factor is f32 arithmetic cast to the dtype; the state's arrays are updated in place.
    """
    dt = grad.dtype.type
    b1, b2 = f32(beta_1), f32(beta_2)
    factor_1, factor_2 = dt(ONE - b1), dt(ONE - b2)
    if state is None:
        moment_2 = np.square(grad)
        moment_2 *= factor_2
        # The AMSGrad max starts as a copy: moment_2 is updated in place later.
        max_moment_2 = moment_2.copy() if amsgrad else None
        return AdaptiveMomentumState(1, grad * factor_1, moment_2, max_moment_2)
    scratch = state.work_buffer(grad)
    axpy_into(state.moment_1, dt(b1), grad, factor_1, scratch)
    moment_2 = state.moment_2
    np.square(grad, out=scratch)
    axpy_into(moment_2, dt(b2), scratch, factor_2, scratch)
    if amsgrad:
        if state.max_moment_2 is None:  # burn: `unwrap_or_else(|| moment_2.clone())`
            state.max_moment_2 = moment_2.copy()
        else:
            np.maximum(state.max_moment_2, moment_2, out=state.max_moment_2)
    state.time += 1
    return state


ADAM_BIAS_CORRECTION = divergence.register(
    "adam.bias_correction",
    "harness.engine.optim.Adam",
    "PyTorch computes Adam's bias corrections 1 - beta^t in f64",
)
ADAMW_BIAS_CORRECTION = divergence.register(
    "adamw.bias_correction",
    "harness.engine.optim.AdamW",
    "PyTorch computes AdamW's bias corrections 1 - beta^t in f64",
)


def bias_corrections(beta_1: float, beta_2: float, time: int, switch: divergence.Switch):
    """`(1 - b1^t, 1 - b2^t)` of the stored betas: burn's f32 arithmetic (`f32::powi`); with
    ``switch`` on, PyTorch's: `1 - beta ** t` in f64. The arithmetic only: the betas are as
    stored (f32, or f64 with `optim.f32_hyperparameters` on), so each switch undoes one thing.
    """
    b1, b2 = f32(beta_1), f32(beta_2)
    if switch.on:
        return 1.0 - float(b1) ** time, 1.0 - float(b2) ** time
    b1, b2 = np.float32(b1), np.float32(b2)  # f32 arithmetic whatever the betas' storage
    return ONE - powi(b1, time), ONE - powi(b2, time)


def _second_moment(state: AdaptiveMomentumState, amsgrad: bool) -> np.ndarray:
    if amsgrad and state.max_moment_2 is not None:
        return state.max_moment_2
    return state.moment_2


@dataclasses.dataclass(frozen=True)
class Adam(TensorOptimizer):
    """Adam with coupled L2 weight decay (`g += penalty * theta`) and optional AMSGrad, in
    `adam.rs`'s order: `bc2 = sqrt(1 - b2^t)`, `c = bc2 / (1 - b1^t)` (f32 scalars), update
    `(m * c) / (sqrt(v) + eps * bc2)`, then `theta - update * lr`.

    PyTorch differences: default epsilon is **1e-5** (PyTorch 1e-8). The bias corrections are
    computed in f32 from the f32 betas (PyTorch: f64), a formula-level difference whose effect
    on the params grows linearly with the step count, in float64 as in float32 (module
    docstring; switch `adam.bias_correction`, ``harness.engine.divergence``, computes them in
    f64). The arrangement `(m * c) / (sqrt(v) + eps * bc2)` is PyTorch's
    `(m / bc1) / (sqrt(v) / bc2 + eps)` rewritten: the same value up to rounding.
    """

    beta_1: float
    beta_2: float
    epsilon: float
    amsgrad: bool
    weight_decay: WeightDecayConfig | None

    def update(self, lr, tensor, grad, state):
        out = np.empty_like(tensor)
        grad = decay_into(out, tensor, grad, self.weight_decay)
        state = update_moments(grad, state, self.beta_1, self.beta_2, self.amsgrad)
        time = state.time
        correction_1, correction_2 = bias_corrections(
            self.beta_1, self.beta_2, time, ADAM_BIAS_CORRECTION
        )
        bias_correction2_sqrt = np.sqrt(correction_2)
        combined = bias_correction2_sqrt / correction_1
        dt = tensor.dtype.type
        denominator = state.work_buffer(tensor)
        np.sqrt(_second_moment(state, self.amsgrad), out=denominator)
        denominator += dt(f32(self.epsilon) * bias_correction2_sqrt)
        np.multiply(state.moment_1, dt(combined), out=out)
        out /= denominator
        return sub_scaled_into(out, tensor, out, lr), state


@dataclasses.dataclass(frozen=True)
class AdamConfig(OptimizerConfig):
    """burn's `AdamConfig`: beta_1 0.9, beta_2 0.999, **epsilon 1e-5**, amsgrad false,
    optional coupled `weight_decay` and `grad_clipping`.

    PyTorch difference: the default epsilon is 1e-5 (PyTorch 1e-8); a default value, pass
    PyTorch's to compare (no divergence switch: a config cannot tell a default from a value
    given). The update's differences are `Adam`'s.
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    amsgrad: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    _optimizer: ClassVar[type] = Adam  # build() and init(): OptimizerConfig


@dataclasses.dataclass(frozen=True)
class AdamW(TensorOptimizer):
    """AdamW in `adamw.rs`'s order: `m_hat = m / (1 - b1^t)`, `v_hat = v / (1 - b2^t)` (f32
    scalars), `delta = m_hat / (sqrt(v_hat) + eps)`; decoupled decay on the pre-update weight,
    `theta * (1 - lr * wd)`, then `- delta * lr`. AMSGrad as in Adam.

    PyTorch differences: default **weight_decay 1e-4** (PyTorch 1e-2) and **epsilon 1e-5**
    (PyTorch 1e-8); the bias corrections in f32 (module docstring; switch
    `adamw.bias_correction` computes them in f64). `cautious_weight_decay`
    (burn only) skips the decay where the weight's sign differs from the first moment's.
    """

    beta_1: float
    beta_2: float
    epsilon: float
    weight_decay: float
    cautious_weight_decay: bool
    amsgrad: bool = False

    def update(self, lr, tensor, grad, state):
        dt = tensor.dtype.type
        state = update_moments(grad, state, self.beta_1, self.beta_2, self.amsgrad)
        time = state.time
        correction_1, correction_2 = (
            dt(c) for c in bias_corrections(self.beta_1, self.beta_2, time, ADAMW_BIAS_CORRECTION)
        )
        denominator = state.work_buffer(tensor)
        np.divide(_second_moment(state, self.amsgrad), correction_2, out=denominator)
        np.sqrt(denominator, out=denominator)
        denominator += dt(f32(self.epsilon))
        out = np.divide(state.moment_1, correction_1)
        out /= denominator
        decayed = self._decayed(lr, tensor, state, denominator)
        return sub_scaled_into(out, decayed, out, lr), state

    def _decayed(self, lr, tensor, state, buffer):
        """The decoupled decay of `tensor` (into `buffer`, free by then), or `tensor`."""
        # burn computes the rate in f64 from the f32 field, then casts `1 - rate` to the dtype.
        decay_rate = lr * float(f32(self.weight_decay))
        dt = tensor.dtype.type
        if decay_rate == 0.0:
            return tensor
        if not self.cautious_weight_decay:
            return np.multiply(tensor, dt(1.0 - decay_rate), out=buffer)
        # `tensor - (tensor * rate).mask_fill(differ, 0)`, differ: the signs of tensor and m.
        if state.masks is None:
            state.masks = (np.empty(tensor.shape, bool), np.empty(tensor.shape, bool))
        differ, moment_sign = state.masks
        np.greater_equal(tensor, 0, out=differ)
        np.greater_equal(state.moment_1, 0, out=moment_sign)
        np.not_equal(differ, moment_sign, out=differ)
        np.multiply(tensor, dt(decay_rate), out=buffer)
        np.copyto(buffer, dt(0.0), where=differ)
        return np.subtract(tensor, buffer, out=buffer)


@dataclasses.dataclass(frozen=True)
class AdamWConfig(OptimizerConfig):
    """burn's `AdamWConfig`: beta_1 0.9, beta_2 0.999, **epsilon 1e-5**, **weight_decay 1e-4**,
    cautious_weight_decay false, amsgrad false, optional `grad_clipping`.

    PyTorch difference: the defaults epsilon 1e-5 and weight_decay 1e-4 (PyTorch 1e-8 and
    1e-2); default values, pass PyTorch's to compare (no divergence switch). The update's
    differences are `AdamW`'s.
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float = 1e-4
    cautious_weight_decay: bool = False
    amsgrad: bool = False
    grad_clipping: GradientClippingConfig | None = None

    _optimizer: ClassVar[type] = AdamW  # build() and init(): OptimizerConfig
