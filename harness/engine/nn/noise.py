"""burn's `GaussianNoiseConfig` / `GaussianNoise` (crates/burn-nn/src/modules/noise.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747; tests `with_ad_backend_should_mark_input`,
`without_ad_backend_should_not_change_input`, `negative_std_should_panic`).

PyTorch has no such module. As `Dropout`, it is active exactly when its input is on an
autodiff device (burn's `is_autodiff()`), not under a `train()` flag.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.engine.module import Config, Module, rust_float, value_rng
from harness.engine.tensor import Tensor

__all__ = ["GaussianNoise", "GaussianNoiseConfig"]


@dataclass(frozen=True)
class GaussianNoiseConfig(Config):
    """burn's `GaussianNoiseConfig::new(std)`; `init()` panics on a negative std (`-0.0`
    included: burn tests `is_sign_negative()`)."""

    std: float

    def init(self) -> GaussianNoise:
        if np.signbit(self.std):
            raise ValueError(
                f"Standard deviation is required to be non-negative, but got {rust_float(self.std)}"
            )
        return GaussianNoise(self.std)


class GaussianNoise(Module):
    """`x + N(0, std)` noise on the autodiff device when std != 0, else `x` itself.

    The noise is drawn from the engine's seeded generator in the input's dtype (burn draws
    from its device's generator, so the values differ); it is a constant of the graph, so
    the gradient passes unchanged."""

    def __init__(self, std: float) -> None:
        self.std = std

    def forward(self, x: Tensor) -> Tensor:
        if not x.is_autodiff() or self.std == 0.0:
            return x
        values = value_rng().normal(0.0, self.std, tuple(x.shape)).astype(np.dtype(x.dtype))
        return x + Tensor.from_numpy(values, x.device)
