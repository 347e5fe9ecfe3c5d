"""burn's `SwiGluConfig` / `SwiGlu` (crates/burn-nn/src/activation/swiglu.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747; tests `test_swiglu_forward_no_bias`,
`test_swiglu_forward_with_bias`): `silu(linear_inner(x)) * linear_outer(x)`.

PyTorch has no SwiGLU module; a hand-written one is `F.silu(w1(x)) * w3(x)` (LLaMA's naming:
`w1` is `linear_inner`, `w3` is `linear_outer`, the `w2` down projection is not part of burn's
module). Import such weights with a key remapping onto `linear_inner` / `linear_outer`.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.engine import activation
from harness.engine.module import Config, Linear, Module
from harness.engine.tensor import Tensor

from .initializer import KAIMING_UNIFORM, Initializer, linear

__all__ = ["SwiGlu", "SwiGluConfig"]


@dataclass(frozen=True)
class SwiGluConfig(Config):
    """burn's `SwiGluConfig::new(d_input, d_output)`: `bias` false, KaimingUniform(1/sqrt(3))
    for both Linears. burn's `layout` field (Row / Col, how the record stores the weight) is
    not modelled: the engine's weights are always burn's Row layout `[d_input, d_output]`."""

    d_input: int
    d_output: int
    bias: bool = False
    initializer: Initializer = KAIMING_UNIFORM

    def init(self, device) -> SwiGlu:
        return SwiGlu(
            linear(self.d_input, self.d_output, self.bias, self.initializer, device),
            linear(self.d_input, self.d_output, self.bias, self.initializer, device),
        )


class SwiGlu(Module):
    """`[..., d_input] -> [..., d_output]`, burn's op order: inner Linear, silu, times the
    outer Linear."""

    def __init__(self, linear_inner: Linear, linear_outer: Linear) -> None:
        self.linear_inner = linear_inner
        self.linear_outer = linear_outer

    def forward(self, x: Tensor) -> Tensor:
        return activation.silu(self.linear_inner(x)) * self.linear_outer(x)
