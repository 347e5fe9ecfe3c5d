"""burn-nn's `ActivationConfig` / `Activation` wrapper, for the variants the sequence modules
take (crates/burn-nn/src/activation/activation_wrapper.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747): `Identity`, `Gelu`, `GeluApproximate`, `Relu`,
`Sigmoid`, `Tanh`. Spelled as burn's enum: `ActivationConfig.Gelu.init()`.

`Gelu` (exact, `0.5 * x * (1 + erf(x / sqrt(2)))`, burn's default for the transformer) is
the `gelu` primitive (harness.engine.ops.activation: flex's fused forward and exact
derivative), PyTorch's `F.gelu(x)`.

`GeluApproximate` is burn's `gelu_approximate` composite (burn-tensor activation/base.rs):
`0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))`, PyTorch's
`F.gelu(x, approximate="tanh")`.
"""

from __future__ import annotations

import enum

from harness.engine import activation
from harness.engine.module import Module
from harness.engine.tensor import Tensor

__all__ = ["Activation", "ActivationConfig", "gelu_approximate"]

gelu_approximate = activation.gelu_approximate

_FORWARD = {
    "identity": lambda x: x,
    "gelu": activation.gelu,
    "gelu_approximate": gelu_approximate,
    "relu": Tensor.relu,
    "sigmoid": Tensor.sigmoid,
    "tanh": Tensor.tanh,
}


class ActivationConfig(enum.Enum):
    """The activation variants (burn's enum names); `init()` builds the module."""

    Identity = "identity"
    Gelu = "gelu"
    GeluApproximate = "gelu_approximate"
    Relu = "relu"
    Sigmoid = "sigmoid"
    Tanh = "tanh"

    def init(self, device=None) -> Activation:
        return Activation(self)


class Activation(Module):
    """An activation without params; `forward(x)` applies the configured function."""

    def __init__(self, config: ActivationConfig) -> None:
        self.config = config
        self._fn = _FORWARD[config.value]

    def forward(self, x: Tensor) -> Tensor:
        return self._fn(x)

    def __repr__(self) -> str:
        return f"Activation({self.config.name})"
