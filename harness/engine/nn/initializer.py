"""The two initializers the sequence modules use, as burn's `Initializer` variants.

burn: crates/burn-core/src/module/initializer.rs (2c06be351006851d42fdb6df16b976f4a82d9747).
`KaimingUniform { gain: 1/sqrt(3), fan_out_only: false }` is the Linear / attention default,
U(-a, a) with a = gain * sqrt(3 / fan_in) = 1/sqrt(fan_in); `XavierNormal { gain: 1 }` is the
LSTM / GRU default, N(0, std) with std = gain * sqrt(2 / (fan_in + fan_out)). Values come from
the engine's seeded generator, so they never match PyTorch's draws; import weights to compare.

PyTorch difference: `nn.LSTM` / `nn.GRU` draw every weight and bias from U(-1/sqrt(hidden),
1/sqrt(hidden)), not from a Xavier normal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.engine.module import Linear, Param, value_rng
from harness.engine.tensor import Tensor

__all__ = ["KAIMING_UNIFORM", "XAVIER_NORMAL", "Initializer", "linear"]


@dataclass(frozen=True)
class Initializer:
    """`kind` is "kaiming_uniform" or "xavier_normal"; `gain` as burn's field."""

    kind: str
    gain: float

    def sample(self, shape: tuple[int, ...], fan_in: int, fan_out: int) -> np.ndarray:
        rng = value_rng()
        if self.kind == "kaiming_uniform":
            bound = self.gain * math.sqrt(3.0 / fan_in)
            values = rng.uniform(-bound, bound, shape)
        elif self.kind == "xavier_normal":
            values = rng.normal(0.0, self.gain * math.sqrt(2.0 / (fan_in + fan_out)), shape)
        else:
            raise ValueError(f"unknown initializer {self.kind!r}")
        return values.astype(np.float32)


KAIMING_UNIFORM = Initializer("kaiming_uniform", 1.0 / math.sqrt(3.0))
XAVIER_NORMAL = Initializer("xavier_normal", 1.0)


def linear(d_input: int, d_output: int, bias: bool, init: Initializer, device) -> Linear:
    """burn's `LinearConfig { d_input, d_output, bias, initializer }.init(device)` (row layout:
    weight `[d_input, d_output]`); the bias is drawn with the same fans, as burn does."""

    def param(shape):
        values = init.sample(shape, d_input, d_output)
        return Param.from_tensor(Tensor.from_numpy(values, device))

    weight = param((d_input, d_output))
    return Linear(weight, param((d_output,)) if bias else None)
