"""burn-nn's activation modules (crates/burn-nn/src/activation/*.rs, burn commit
2c06be351006851d42fdb6df16b976f4a82d9747): `Gelu`, `Relu`, `Sigmoid`, `Tanh`, `SiLU` (alias
`Swish`), `LeakyReluConfig`, `PReluConfig`, `SoftplusConfig`, `HardSigmoidConfig`, and the
parameter-only ones (celu.rs, elu.rs, hard_shrink.rs, hardtanh.rs, shrink.rs, soft_shrink.rs,
threshold.rs, thresholded_relu.rs): `CeluConfig`, `EluConfig`, `HardShrinkConfig`,
`HardtanhConfig`, `ShrinkConfig`, `SoftShrinkConfig`, `ThresholdConfig`,
`ThresholdedReluConfig`. Each forwards to the function of the same name in
harness.engine.activation, whose docstring lists where they differ from PyTorch (hardtanh's
gradient at the bounds, elu's and celu's `exp(x) - 1`).

PyTorch difference in the defaults: `HardSigmoidConfig` alpha 0.2 (PyTorch's `Hardsigmoid`
is 1/6); `PReluConfig` alpha 0.25 and `num_parameters` 1 (the same as PyTorch's `PReLU`).
The other defaults are PyTorch's: Celu / Elu / ThresholdedRelu alpha 1, HardShrink /
SoftShrink lambda 0.5, Hardtanh (-1, 1); `ShrinkConfig` (ONNX `Shrink`, no PyTorch module)
lambda 0.5, bias 0.5; `ThresholdConfig` has no defaults (burn's fields are required, as
PyTorch's `Threshold(threshold, value)` arguments). burn's field is `lambda` (a Python keyword):
here `lambd`, PyTorch's spelling. `ThresholdedRelu` has no PyTorch module
(`x * (x > alpha)`). These modules hold no params: their records are empty.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.engine import activation
from harness.engine.module import Config, Module, Param, Relu, rust_float, value_rng
from harness.engine.tensor import Tensor

from .initializer import Initializer

__all__ = [
    "Celu",
    "CeluConfig",
    "Elu",
    "EluConfig",
    "Gelu",
    "HardShrink",
    "HardShrinkConfig",
    "HardSigmoid",
    "HardSigmoidConfig",
    "Hardtanh",
    "HardtanhConfig",
    "LeakyRelu",
    "LeakyReluConfig",
    "PRelu",
    "PReluConfig",
    "RRelu",
    "RReluConfig",
    "Relu",
    "Shrink",
    "ShrinkConfig",
    "SiLU",
    "Sigmoid",
    "SoftShrink",
    "SoftShrinkConfig",
    "Softplus",
    "SoftplusConfig",
    "Swish",
    "Tanh",
    "Threshold",
    "ThresholdConfig",
    "ThresholdedRelu",
    "ThresholdedReluConfig",
]


class Gelu(Module):
    """burn's `Gelu { approximate }`: `Gelu()` exact (erf), `Gelu.new_approximate()` tanh."""

    def __init__(self, approximate: bool = False) -> None:
        self.approximate = approximate

    @classmethod
    def new(cls) -> Gelu:
        return cls(False)

    @classmethod
    def new_approximate(cls) -> Gelu:
        return cls(True)

    def forward(self, x: Tensor) -> Tensor:
        return activation.gelu_approximate(x) if self.approximate else activation.gelu(x)


class Sigmoid(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.sigmoid()


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.tanh()


class SiLU(Module):
    """`x * sigmoid(x)`."""

    def forward(self, x: Tensor) -> Tensor:
        return activation.silu(x)


Swish = SiLU


@dataclasses.dataclass(frozen=True)
class LeakyReluConfig(Config):
    """burn's `LeakyReluConfig::new()`: negative_slope 0.01 (PyTorch's default too)."""

    negative_slope: float = 0.01

    def init(self, device=None) -> LeakyRelu:
        return LeakyRelu(self.negative_slope)


class LeakyRelu(Module):
    def __init__(self, negative_slope: float = 0.01) -> None:
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        return activation.leaky_relu(x, self.negative_slope)


@dataclasses.dataclass(frozen=True)
class PReluConfig(Config):
    """burn's `PReluConfig::new()`: num_parameters 1, alpha 0.25 (`Constant` init)."""

    num_parameters: int = 1
    alpha: float = 0.25

    def init(self, device) -> PRelu:
        weight = Initializer.Constant(self.alpha).init((self.num_parameters,), device)
        return PRelu(weight, self.alpha)


class PRelu(Module):
    """`alpha` is the learnable param (PyTorch's `weight`, loaded as stored: burn's adapter
    has no PRelu rule, so a PyTorch `weight` key is reported unused and `alpha` missing)."""

    def __init__(self, alpha: Param, alpha_value: float = 0.25) -> None:
        self.alpha = alpha
        self.alpha_value = alpha_value

    def forward(self, x: Tensor) -> Tensor:
        return activation.prelu(x, self.alpha.val())


@dataclasses.dataclass(frozen=True)
class SoftplusConfig(Config):
    """burn's `SoftplusConfig::new()`: beta 1 (no threshold, unlike PyTorch's 20)."""

    beta: float = 1.0

    def init(self, device=None) -> Softplus:
        return Softplus(self.beta)


class Softplus(Module):
    def __init__(self, beta: float = 1.0) -> None:
        self.beta = beta

    def forward(self, x: Tensor) -> Tensor:
        return activation.softplus(x, self.beta)


@dataclasses.dataclass(frozen=True)
class HardSigmoidConfig(Config):
    """burn's `HardSigmoidConfig::new()`: alpha 0.2, beta 0.5."""

    alpha: float = 0.2
    beta: float = 0.5

    def init(self, device=None) -> HardSigmoid:
        return HardSigmoid(self.alpha, self.beta)


class HardSigmoid(Module):
    def __init__(self, alpha: float = 0.2, beta: float = 0.5) -> None:
        self.alpha = alpha
        self.beta = beta

    def forward(self, x: Tensor) -> Tensor:
        return activation.hard_sigmoid(x, self.alpha, self.beta)


# ---- the parameter-only modules: a frozen config, a module holding the same fields -----------


class _LambdaBuilder:
    """burn's builder for a field named `lambda`: `cfg.with_lambda(0.3)` (the field is
    `lambd`, `lambda` being a Python keyword)."""

    def with_lambda(self, value: float):
        return dataclasses.replace(self, lambd=value)


@dataclasses.dataclass(frozen=True)
class EluConfig(Config):
    """burn's `EluConfig::new()`: alpha 1.0."""

    alpha: float = 1.0

    def init(self, device=None) -> Elu:
        return Elu(self.alpha)


class Elu(Module):
    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def forward(self, x: Tensor) -> Tensor:
        return activation.elu(x, self.alpha)


@dataclasses.dataclass(frozen=True)
class CeluConfig(Config):
    """burn's `CeluConfig::new()`: alpha 1.0."""

    alpha: float = 1.0

    def init(self, device=None) -> Celu:
        return Celu(self.alpha)


class Celu(Module):
    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def forward(self, x: Tensor) -> Tensor:
        return activation.celu(x, self.alpha)


@dataclasses.dataclass(frozen=True)
class HardtanhConfig(Config):
    """burn's `HardtanhConfig::new()`: min_val -1.0, max_val 1.0."""

    min_val: float = -1.0
    max_val: float = 1.0

    def init(self, device=None) -> Hardtanh:
        return Hardtanh(self.min_val, self.max_val)


class Hardtanh(Module):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0) -> None:
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: Tensor) -> Tensor:
        return activation.hardtanh(x, self.min_val, self.max_val)


@dataclasses.dataclass(frozen=True)
class HardShrinkConfig(_LambdaBuilder, Config):
    """burn's `HardShrinkConfig::new()`: lambda 0.5."""

    lambd: float = 0.5

    def init(self, device=None) -> HardShrink:
        return HardShrink(self.lambd)


class HardShrink(Module):
    def __init__(self, lambd: float = 0.5) -> None:
        self.lambd = lambd

    def forward(self, x: Tensor) -> Tensor:
        return activation.hard_shrink(x, self.lambd)


@dataclasses.dataclass(frozen=True)
class SoftShrinkConfig(_LambdaBuilder, Config):
    """burn's `SoftShrinkConfig::new()`: lambda 0.5."""

    lambd: float = 0.5

    def init(self, device=None) -> SoftShrink:
        return SoftShrink(self.lambd)


class SoftShrink(Module):
    def __init__(self, lambd: float = 0.5) -> None:
        self.lambd = lambd

    def forward(self, x: Tensor) -> Tensor:
        return activation.soft_shrink(x, self.lambd)


@dataclasses.dataclass(frozen=True)
class ShrinkConfig(_LambdaBuilder, Config):
    """burn's `ShrinkConfig::new()`: lambda 0.5, bias 0.5."""

    lambd: float = 0.5
    bias: float = 0.5

    def init(self, device=None) -> Shrink:
        return Shrink(self.lambd, self.bias)


class Shrink(Module):
    def __init__(self, lambd: float = 0.5, bias: float = 0.5) -> None:
        self.lambd = lambd
        self.bias = bias

    def forward(self, x: Tensor) -> Tensor:
        return activation.shrink(x, self.lambd, self.bias)


@dataclasses.dataclass(frozen=True)
class ThresholdConfig(Config):
    """burn's `ThresholdConfig::new(threshold, value)`: both required."""

    threshold: float
    value: float

    def init(self, device=None) -> Threshold:
        return Threshold(self.threshold, self.value)


class Threshold(Module):
    def __init__(self, threshold: float, value: float) -> None:
        self.threshold = threshold
        self.value = value

    def forward(self, x: Tensor) -> Tensor:
        return activation.threshold(x, self.threshold, self.value)


@dataclasses.dataclass(frozen=True)
class ThresholdedReluConfig(Config):
    """burn's `ThresholdedReluConfig::new()`: alpha 1.0."""

    alpha: float = 1.0

    def init(self, device=None) -> ThresholdedRelu:
        return ThresholdedRelu(self.alpha)


class ThresholdedRelu(Module):
    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def forward(self, x: Tensor) -> Tensor:
        return activation.thresholded_relu(x, self.alpha)


@dataclasses.dataclass(frozen=True)
class RReluConfig(Config):
    """burn's `RReluConfig::new()` (activation/rrelu.rs): lower 0.125, upper 1/3 (PyTorch's
    `RReLU` defaults too); `init()` panics unless lower <= upper."""

    lower: float = 0.125
    upper: float = 1.0 / 3.0

    def init(self, device=None) -> RRelu:
        if not self.lower <= self.upper:
            raise ValueError(
                f"RRelu: lower bound ({rust_float(self.lower)}) must be <= upper bound "
                f"({rust_float(self.upper)})"
            )
        return RRelu(self.lower, self.upper)


class RRelu(Module):
    """burn's `RRelu`: on a plain device, `leaky_relu(x, (lower + upper) / 2)`; on an
    autodiff device (burn's training switch, as `Dropout`), `mask_where(x < 0, x * slope, x)`
    with `slope` drawn per element from Uniform[lower, upper) (burn's `random_like`).

    Randomness: the slopes come from the engine's seeded generator (`harness.engine.seed(n)`,
    `value_rng().uniform`, drawn in float64 and cast to the input's dtype), so a seeded run
    repeats; burn draws from its device's generator, so the slopes differ from burn's and
    torch's. They are constants of the graph: the gradient is the slope where x < 0, else 1.

    PyTorch differences: training is switched by the input's device, not `module.train()`;
    at exactly 0 the output is 0 either way and the gradient is 1 (the `x` branch), where
    torch's rrelu uses the sampled slope for x <= 0 (`x <= 0` in its kernel)."""

    def __init__(self, lower: float = 0.125, upper: float = 1.0 / 3.0) -> None:
        self.lower = lower
        self.upper = upper

    def forward(self, x: Tensor) -> Tensor:
        if not x.is_autodiff():
            return activation.leaky_relu(x, (self.lower + self.upper) / 2.0)
        is_negative = x.lower_elem(0.0)
        draws = value_rng().uniform(self.lower, self.upper, tuple(x.shape))
        slope = Tensor.from_numpy(draws.astype(np.dtype(x.dtype.name)), x.device)
        return x.mask_where(is_negative, x * slope)
