"""Activation primitives burn-flex / burn-autodiff have as single ops: `erf` and exact `gelu`
(burn commit 2c06be351006851d42fdb6df16b976f4a82d9747).

- `erf`: flex delegates to libm (`erff` / `erf`, burn-flex/src/ops/unary.rs); here Python's
  `math.erf` (the C library's, fdlibm-derived like libm) in float64, rounded once to float32
  for float32 inputs. Its rule is burn-autodiff's (ops/tensor.rs `float_erf`):
  `g * (exp(-(x^2)) * 2 / sqrt(pi))`.
- `gelu`: flex's fused `0.5 * x * (1 + erf(x / sqrt(2)))` and its exact derivative
  `g * (cdf + x * pdf)` (burn-flex/src/ops/activation.rs `gelu_backward`). burn-backend's
  *default* `gelu_backward` is the derivative of the tanh approximation, but flex overrides
  it, so the seed device's gradient is exact (as PyTorch's `gelu(approximate="none")`).

Differences from PyTorch: values agree to the last bit or two (different erf
implementations: float32 erf here is the float64 one rounded, torch's float32 kernel is its
own polynomial).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Array = np.ndarray
Grad = np.ndarray | None

_erf64 = np.frompyfunc(math.erf, 1, 1)
_SQRT_2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_PI = math.sqrt(math.pi)


def erf_values(x: Array) -> Array:
    """erf elementwise in x's dtype (float32 or float64)."""
    return _erf64(x.astype(np.float64)).astype(x.dtype)


@dataclass(slots=True)
class SavedInput:
    x: Array


def erf(x: Array, /):
    return erf_values(x), SavedInput(x)


def erf_backward(s: SavedInput, g: Array, tracked) -> tuple[Grad]:
    x = s.x
    t = x.dtype.type
    value = (np.exp(np.negative(x * x)) * t(2.0)) / t(_SQRT_PI)
    return (g * value,)


def gelu(x: Array, /):
    t = x.dtype.type
    out = t(0.5) * x * (t(1.0) + erf_values(x / t(_SQRT_2)))
    return out, SavedInput(x)


def gelu_backward(s: SavedInput, g: Array, tracked) -> tuple[Grad]:
    x = s.x
    t = x.dtype.type
    cdf = t(0.5) * (t(1.0) + erf_values(x / t(_SQRT_2)))
    pdf = t(_INV_SQRT_2PI) * np.exp(t(-0.5) * x * x)
    return (g * (cdf + x * pdf),)
