"""burn-nn's `ActivationConfig` / `Activation` wrapper (crates/burn-nn/src/activation/
activation_wrapper.rs, burn 2c06be351006851d42fdb6df16b976f4a82d9747), spelled as burn's enum:
the variants without a config are members, `ActivationConfig.Gelu.init()` (`Identity`, `Gelu`,
`GeluApproximate`, `Relu`, `Sigmoid`, `Tanh`, `Selu`, `HardSwish`, `Softsign`); those with a
parameter-only config are functions of it, `ActivationConfig.Elu(EluConfig(0.5)).init()`
(`LeakyRelu`, `HardSigmoid`, `Softplus`, `Elu`, `Celu`, `ThresholdedRelu`, `HardShrink`,
`SoftShrink`, `Shrink`). Not here: burn's `PRelu` and `SwiGlu` variants, whose modules hold
params (use `PReluConfig` / `SwiGluConfig` directly).

`Gelu` (exact, `0.5 * x * (1 + erf(x / sqrt(2)))`, burn's default for the transformer) is
the `gelu` primitive (harness.engine.ops.activation: flex's fused forward and exact
derivative), PyTorch's `F.gelu(x)`.

`GeluApproximate` is burn's `gelu_approximate` composite (burn-tensor activation/base.rs):
`0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))`, PyTorch's
`F.gelu(x, approximate="tanh")`.
"""

from __future__ import annotations

import dataclasses
import enum

from harness.engine import activation
from harness.engine.module import Module
from harness.engine.tensor import Tensor

__all__ = ["Activation", "ActivationConfig", "ConfiguredActivation", "gelu_approximate"]

gelu_approximate = activation.gelu_approximate

_FORWARD = {
    "identity": lambda x: x,
    "gelu": activation.gelu,
    "gelu_approximate": gelu_approximate,
    "relu": Tensor.relu,
    "sigmoid": Tensor.sigmoid,
    "tanh": Tensor.tanh,
    "selu": activation.selu,
    "hard_swish": activation.hard_swish,
    "softsign": activation.softsign,
}


class ActivationConfig(enum.Enum):
    """The activation variants (burn's enum names); `init()` builds the module."""

    Identity = "identity"
    Gelu = "gelu"
    GeluApproximate = "gelu_approximate"
    Relu = "relu"
    Sigmoid = "sigmoid"
    Tanh = "tanh"
    Selu = "selu"
    HardSwish = "hard_swish"
    Softsign = "softsign"

    def init(self, device=None) -> Activation:
        return Activation(self)

    # burn's variants that carry a config (functions: not enum members)
    @staticmethod
    def LeakyRelu(config) -> ConfiguredActivation:
        return ConfiguredActivation("LeakyRelu", config)

    @staticmethod
    def HardSigmoid(config) -> ConfiguredActivation:
        return ConfiguredActivation("HardSigmoid", config)

    @staticmethod
    def Softplus(config) -> ConfiguredActivation:
        return ConfiguredActivation("Softplus", config)

    @staticmethod
    def Elu(config) -> ConfiguredActivation:
        return ConfiguredActivation("Elu", config)

    @staticmethod
    def Celu(config) -> ConfiguredActivation:
        return ConfiguredActivation("Celu", config)

    @staticmethod
    def ThresholdedRelu(config) -> ConfiguredActivation:
        return ConfiguredActivation("ThresholdedRelu", config)

    @staticmethod
    def HardShrink(config) -> ConfiguredActivation:
        return ConfiguredActivation("HardShrink", config)

    @staticmethod
    def SoftShrink(config) -> ConfiguredActivation:
        return ConfiguredActivation("SoftShrink", config)

    @staticmethod
    def Shrink(config) -> ConfiguredActivation:
        return ConfiguredActivation("Shrink", config)


@dataclasses.dataclass(frozen=True)
class ConfiguredActivation:
    """A variant of burn's `ActivationConfig` holding its config (`Elu(EluConfig)`):
    `init()` builds the config's module inside an `Activation`."""

    name: str
    config: object

    def __post_init__(self) -> None:
        expected = f"{self.name}Config"
        if type(self.config).__name__ != expected:
            raise TypeError(
                f"ActivationConfig.{self.name}: expected {expected}, got "
                f"{type(self.config).__name__}"
            )

    def init(self, device=None) -> Activation:
        return Activation(self, self.config.init())


class Activation(Module):
    """An activation without params; `forward(x)` applies the configured function (a
    config-carrying variant, its module's `forward`)."""

    def __init__(self, config, module: Module | None = None) -> None:
        self.config = config
        self._fn = _FORWARD[config.value] if module is None else module.forward

    def forward(self, x: Tensor) -> Tensor:
        return self._fn(x)

    def __repr__(self) -> str:
        return f"Activation({self.config.name})"
