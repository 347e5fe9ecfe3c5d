"""Gradient clipping (burn-optim `grad_clipping/base.rs`, read at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747)."""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.engine.ops.half import finfo
from harness.engine.tensor import Tensor

__all__ = ["GradientClipping", "GradientClippingConfig"]


class GradientClipping:
    """Clips one parameter's gradient: by value (elementwise clamp to [-c, c]) or by norm
    (scale by `min(1, c / (||g|| + tiny))`, tiny = the dtype's smallest positive normal).

    PyTorch difference: norm clipping is **per parameter**; `torch.nn.utils.clip_grad_norm_`
    scales all gradients by one global norm (and adds eps 1e-6 instead of `tiny`).
    """

    __slots__ = ("kind", "threshold")

    def __init__(self, kind: str, threshold: float) -> None:
        self.kind = kind
        self.threshold = np.float32(threshold)

    @classmethod
    def value(cls, threshold: float) -> GradientClipping:
        """burn's `GradientClipping::Value(threshold)`."""
        return cls("value", threshold)

    @classmethod
    def norm(cls, threshold: float) -> GradientClipping:
        """burn's `GradientClipping::Norm(threshold)`."""
        return cls("norm", threshold)

    Value = value
    Norm = norm

    def clip_gradient(self, grad: Tensor) -> Tensor:
        """The clipped gradient, a new tensor on the same device."""
        return Tensor._wrap(self.clip_array(grad._data), grad.device)

    def clip_array(self, g: np.ndarray) -> np.ndarray:
        """Clip a NumPy gradient into a new array, in its dtype, with burn's op order (the
        input may be shared, so it is never written)."""
        dt = g.dtype.type
        c = dt(self.threshold)
        if self.kind == "value":
            # burn fills `g > c` with c, then (from the same original g) `g < -c` with -c.
            return np.where(g < -c, -c, np.where(g > c, c, g))
        norm = np.sqrt(np.add.reduce(np.square(g), axis=None))
        # burn writes `threshold / (norm + tiny)` as `(norm + tiny).recip() * threshold`.
        coef = (dt(1.0) / (norm + dt(finfo(g.dtype).tiny))) * c
        coef = np.minimum(coef, dt(1.0))
        return g * coef

    def __repr__(self) -> str:
        return f"GradientClipping.{self.kind}({self.threshold})"


@dataclasses.dataclass(frozen=True)
class GradientClippingConfig:
    """burn's enum `GradientClippingConfig::{Value(c), Norm(c)}`: build it with
    `GradientClippingConfig.value(c)` or `.norm(c)`; `.init()` gives a `GradientClipping`."""

    kind: str
    threshold: float

    @classmethod
    def value(cls, threshold: float) -> GradientClippingConfig:
        """Clamp each gradient element into [-threshold, threshold]."""
        return cls("value", threshold)

    @classmethod
    def norm(cls, threshold: float) -> GradientClippingConfig:
        """Scale each parameter's gradient so its L2 norm is at most `threshold`."""
        return cls("norm", threshold)

    Value = value
    Norm = norm

    def init(self) -> GradientClipping:
        return GradientClipping(self.kind, self.threshold)
