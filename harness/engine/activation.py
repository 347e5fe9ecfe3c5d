"""burn's `burn::tensor::activation` functions (crates/burn-tensor/src/tensor/activation/base.rs,
burn commit 2c06be351006851d42fdb6df16b976f4a82d9747), on engine tensors.

Where the autodiff backend has no rule of its own (crates/burn-autodiff/src/ops/activation.rs
overrides only gelu, relu, sigmoid and log_sigmoid), burn's autodiff runs the backend trait's
default decomposition (crates/burn-backend/src/backend/ops/activation.rs): the functions here
are that composite of engine primitives, so gradients follow burn's. `gelu` and `erf` are
primitives (harness.engine.ops), as in burn-flex and burn-autodiff.

Differences from PyTorch (`torch.nn.functional`):
- `leaky_relu` / `prelu` are `mask_where(x < 0, slope * x, x)`: the gradient at exactly 0 is
  1 (the `x` branch); PyTorch's is the slope (`x > 0 ? g : slope * g`).
- `softplus(x, beta)` is `log(exp(beta * x) + 1) / beta` without PyTorch's `threshold=20`:
  it overflows to inf once `beta * x` exceeds the dtype's exp range (about 88.7 in float32),
  where PyTorch returns x; below that the two agree to rounding.
- `hard_sigmoid(x, alpha, beta)` takes burn's (ONNX) parameters, module default alpha 0.2,
  beta 0.5; PyTorch's `hardsigmoid` is alpha 1/6, beta 0.5. burn's autodiff default computes
  it in float32 (`float_cast`); the engine's cast is untracked, so the engine keeps the
  input's dtype (float64 inputs are not rounded to float32: not reproduced).
- `gelu_approximate` is the tanh form, PyTorch's `gelu(x, approximate="tanh")`.
"""

from __future__ import annotations

import math

from harness.engine.errors import ShapeError
from harness.engine.methods import unary_result
from harness.engine.ops import activation as _ops
from harness.engine.tensor import Tensor

__all__ = [
    "erf",
    "gelu",
    "gelu_approximate",
    "hard_sigmoid",
    "leaky_relu",
    "log_softmax",
    "prelu",
    "relu",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "tanh",
]

# burn: FRAC_2_SQRT_PI * FRAC_1_SQRT_2, computed in f64
_SQRT_2_OVER_PI = (2.0 / math.sqrt(math.pi)) * (1.0 / math.sqrt(2.0))


def relu(x: Tensor) -> Tensor:
    return x.relu()


def sigmoid(x: Tensor) -> Tensor:
    return x.sigmoid()


def tanh(x: Tensor) -> Tensor:
    return x.tanh()


def softmax(x: Tensor, dim: int) -> Tensor:
    """`exp(x - max) / sum(exp(x - max))` along `dim` (negative counts from the end), burn's
    `activation::softmax(tensor, dim)`: the `softmax` primitive, which `Tensor.softmax` is
    too (harness.engine.ops.nn; burn's composite, its backward fused in burn's order).

    PyTorch difference: an empty `dim` raises ShapeError (burn's composite starts with a
    `max_dim`, which has no value); `torch.softmax` returns an empty tensor."""
    return x.softmax(dim)


def log_softmax(x: Tensor, dim: int) -> Tensor:
    """`(x - max) - log(sum(exp(x - max)))` along `dim`, burn's
    `activation::log_softmax(tensor, dim)`: the `log_softmax` primitive, which
    `Tensor.log_softmax` is too (harness.engine.ops.nn).

    PyTorch difference: an empty `dim` raises ShapeError, as for `softmax`."""
    return x.log_softmax(dim)


def gelu(x: Tensor) -> Tensor:
    """Exact GELU, `x * (1 + erf(x / sqrt(2))) / 2`: the `gelu` primitive (flex fuses it and
    its exact derivative `g * (cdf + x * pdf)`; see harness.engine.ops.activation)."""
    out, saved = _ops.GELU.forward(x._data)
    return unary_result(x, _ops.GELU, out, saved)


def erf(x: Tensor) -> Tensor:
    """The error function, elementwise (the `erf` primitive)."""
    out, saved = _ops.ERF.forward(x._data)
    return unary_result(x, _ops.ERF, out, saved)


def gelu_approximate(x: Tensor) -> Tensor:
    """`0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`, burn's op order
    (powf_scalar, mul_scalar, add, mul_scalar, tanh, add_scalar, mul, mul_scalar)."""
    inner = x + x.powf_scalar(3.0) * 0.044715
    inner = inner * _SQRT_2_OVER_PI
    return (x * (inner.tanh() + 1.0)) * 0.5


def silu(x: Tensor) -> Tensor:
    """`x * sigmoid(x)` (burn's composite)."""
    return x * x.sigmoid()


def leaky_relu(x: Tensor, negative_slope: float) -> Tensor:
    """`x` where x >= 0, `negative_slope * x` elsewhere (see the module doc for the gradient
    at 0)."""
    return x.mask_where(x.lower_elem(0.0), x.mul_scalar(negative_slope))


def prelu(x: Tensor, alpha: Tensor) -> Tensor:
    """`x` where x >= 0, `alpha * x` elsewhere; `alpha` `[1]` (shared) or `[channels]` (dim 1).
    A channel count that does not match raises burn's `check_prelu_shape` text."""
    n = alpha.shape[0]
    if n == 1:
        weight = alpha.reshape([1] * x.ndim)
    else:
        channels = x.shape[1] if x.ndim >= 2 else 1
        if channels != n:
            raise ShapeError(
                "PReLu: Number of channels in input tensor and  number of weights must be "
                f"equal. Got no. of channels: {channels}, no. of weights: {n}"
            )
        shape = [1] * x.ndim
        shape[1] = n
        weight = alpha.reshape(shape)
    return x.mask_where(x.lower_elem(0.0), x * weight)


def softplus(x: Tensor, beta: float = 1.0) -> Tensor:
    """burn's `activation::softplus`: `log(exp(x * beta) + 1) / beta`, no `log1p` and no
    shift, so it is 0 once `exp(x * beta)` drops below half an ulp of 1 and inf once it
    overflows (PyTorch's `softplus` switches to `x` above its threshold 20)."""
    return (x.mul_scalar(beta).exp() + 1.0).log().div_scalar(beta)


def hard_sigmoid(x: Tensor, alpha: float, beta: float) -> Tensor:
    """`clamp(alpha * x + beta, 0, 1)`."""
    return x.mul_scalar(alpha).add_scalar(beta).clamp(0.0, 1.0)
