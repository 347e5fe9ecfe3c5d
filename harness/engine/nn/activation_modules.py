"""burn-nn's activation modules (crates/burn-nn/src/activation/*.rs, burn commit
2c06be351006851d42fdb6df16b976f4a82d9747): `Gelu`, `Relu`, `Sigmoid`, `Tanh`, `SiLU` (alias
`Swish`), `LeakyReluConfig`, `PReluConfig`, `SoftplusConfig`, `HardSigmoidConfig`. Each
forwards to the function of the same name in harness.engine.activation, whose docstring lists
where they differ from PyTorch.

PyTorch difference in the defaults: `HardSigmoidConfig` alpha 0.2 (PyTorch's `Hardsigmoid`
is 1/6); `PReluConfig` alpha 0.25 and `num_parameters` 1 (the same as PyTorch's `PReLU`).
"""

from __future__ import annotations

import dataclasses

from harness.engine import activation
from harness.engine.module import Config, Module, Param, Relu
from harness.engine.tensor import Tensor

from .initializer import Initializer

__all__ = [
    "Gelu",
    "HardSigmoid",
    "HardSigmoidConfig",
    "LeakyRelu",
    "LeakyReluConfig",
    "PRelu",
    "PReluConfig",
    "Relu",
    "SiLU",
    "Sigmoid",
    "Softplus",
    "SoftplusConfig",
    "Swish",
    "Tanh",
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
