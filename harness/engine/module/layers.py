"""Layers (reference-engine.md section 3): Linear, Relu, Dropout, LayerNorm and their configs,
built from the core's Module and Param, and from primitive tensor ops."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from harness.engine.errors import ShapeError
from harness.engine.kernels._common import fmt
from harness.engine.module.core import Config, Module, Param, rust_float, value_rng
from harness.engine.module_ops import layer_norm, linear
from harness.engine.tensor import Tensor

__all__ = [
    "Dropout",
    "DropoutConfig",
    "LayerNorm",
    "LayerNormConfig",
    "Linear",
    "LinearConfig",
    "Relu",
]


# ---- Linear -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LinearConfig(Config):
    """burn's `LinearConfig::new(d_input, d_output)`; `bias` defaults to true.

    The default initializer is burn's `KaimingUniform { gain: 1/sqrt(3), fan_out_only: false }`,
    i.e. U(-a, a) with a = gain * sqrt(3 / fan_in) = 1/sqrt(d_input), for weight and bias.
    PyTorch's `nn.Linear` draws both from the same range (with its own generator, so the
    values differ); its weight layout is `[out, in]`.
    """

    d_input: int
    d_output: int
    bias: bool = True

    def init(self, device) -> Linear:
        bound = 1.0 / math.sqrt(self.d_input)
        rng = value_rng()
        weight = rng.uniform(-bound, bound, (self.d_input, self.d_output)).astype(np.float32)
        linear_bias = None
        if self.bias:
            values = rng.uniform(-bound, bound, (self.d_output,)).astype(np.float32)
            linear_bias = Param.from_tensor(Tensor.from_numpy(values, device))
        return Linear(Param.from_tensor(Tensor.from_numpy(weight, device)), linear_bias)


class Linear(Module):
    """`y = x @ W + b` with W of shape `[d_input, d_output]`.

    PyTorch difference: `nn.Linear.weight` is `[out, in]` and computes `x @ W.T + b`; compare
    after transposing. Build from given values with `Linear(weight=Param.from_tensor(w), ...)`.
    """

    def __init__(self, weight: Param, bias: Param | None = None) -> None:
        self.weight = weight
        self.bias = bias

    def forward(self, x: Tensor) -> Tensor:
        """`x` `[..., d_input]` (rank 1 included, as burn's `linear`) -> `[..., d_output]`.

        A last dim other than `d_input` raises a ShapeError naming the module (burn panics
        inside the matmul with the backend's text, which does not say which layer)."""
        d_input = self.weight._value.shape[0]
        if x.ndim == 0 or x.shape[-1] != d_input:
            last = x.shape[-1] if x.ndim else "none (rank 0)"
            raise ShapeError(
                f"Linear: input last dim {last} != d_input {d_input} (input shape {fmt(x.shape)})"
            )
        # burn's `linear(input, weight, bias)`: with a bias, one graph node (module_ops.linear).
        bias = self.bias
        return linear(x, self.weight._value, None if bias is None else bias._value)


# ---- Relu / Dropout -----------------------------------------------------------------------


class Relu(Module):
    """`max(x, 0)`; no params. The gradient at exactly 0 is 0 (as PyTorch)."""

    def forward(self, x: Tensor) -> Tensor:
        return x.relu()


@dataclasses.dataclass(frozen=True)
class DropoutConfig(Config):
    """burn's `DropoutConfig::new(prob)`; `init()` panics on prob outside [0, 1]."""

    prob: float

    def init(self) -> Dropout:
        if self.prob < 0.0 or self.prob > 1.0:
            raise ValueError(
                f"Dropout probability should be between 0 and 1, but got {rust_float(self.prob)}"
            )
        return Dropout(self.prob)


class Dropout(Module):
    """Zeroes elements with probability `prob` and scales the rest by `1/(1-prob)`.

    PyTorch difference: active exactly when the *input is on an autodiff device* (burn's
    `B::ad_enabled`), not according to a `train()/eval()` flag. With prob = 1 the scale is
    `1/0 = inf` and every element becomes `0 * inf = NaN` (PyTorch returns zeros).
    """

    def __init__(self, prob: float) -> None:
        self.prob = prob

    def forward(self, x: Tensor) -> Tensor:
        if not x.is_autodiff() or self.prob == 0.0:
            return x
        keep = 1.0 - self.prob
        values = value_rng().random(tuple(x.shape)) < keep
        mask = Tensor.from_numpy(values.astype(np.dtype(x.dtype)), x.device)
        scale = math.inf if keep == 0.0 else 1.0 / keep
        with np.errstate(invalid="ignore"):  # prob = 1: 0 * inf = NaN, as in burn
            return (x * mask) * scale


# ---- LayerNorm ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LayerNormConfig(Config):
    """burn's `LayerNormConfig::new(d_model)`: epsilon 1e-5, bias (beta) on by default."""

    d_model: int
    epsilon: float = 1e-5
    bias: bool = True

    def init(self, device) -> LayerNorm:
        gamma = Param.from_tensor(Tensor.from_numpy(np.ones(self.d_model, np.float32), device))
        beta = None
        if self.bias:
            zeros = np.zeros(self.d_model, np.float32)
            beta = Param.from_tensor(Tensor.from_numpy(zeros, device))
        return LayerNorm(gamma, beta, self.epsilon)


class LayerNorm(Module):
    """burn-nn's `LayerNorm` (modules/norm/layer.rs): `module_ops.layer_norm` over the last
    dimension with `gamma` and the optional `beta` (float32 and float64 inputs need no
    widening, burn's `accumulation_dtype` is None for both)."""

    def __init__(self, gamma: Param, beta: Param | None, epsilon: float = 1e-5) -> None:
        self.gamma = gamma
        self.beta = beta
        self.epsilon = epsilon

    def forward(self, x: Tensor) -> Tensor:
        d_model = self.gamma.val().shape[0]
        if x.ndim == 0 or x.shape[-1] != d_model:
            raise ShapeError(
                f"LayerNorm: expected an input of shape [..., {d_model}], got shape {fmt(x.shape)}"
            )
        beta = None if self.beta is None else self.beta.val()
        return layer_norm(x, self.gamma.val(), beta, self.epsilon)
