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
from harness.engine.ops.arrays import norm_dim
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


# ---- the rest of burn's activation functions (issue 23) -------------------------------------
# Each is burn-tensor's composite (activation/base.rs), so its gradient is the rules of the
# ops it calls; the PyTorch differences are in each docstring, and declared in
# harness.engine.ops.activation_checks.

__all__ += [
    "celu",
    "elu",
    "glu",
    "hard_shrink",
    "hard_swish",
    "hardtanh",
    "log_sigmoid",
    "mish",
    "quiet_softmax",
    "relu6",
    "selu",
    "shrink",
    "soft_shrink",
    "softmin",
    "softsign",
    "tanhshrink",
    "threshold",
    "thresholded_relu",
]

# burn's SELU constants (the SELU paper / ONNX), as f64 literals.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_GAMMA = 1.0507009873554804934193349852946


def hardtanh(x: Tensor, min_val: float, max_val: float) -> Tensor:
    """`clamp(x, min_val, max_val)`. PyTorch difference: at the bounds themselves the
    gradient passes (burn's clamp), where torch's hardtanh gives 0."""
    return x.clamp(min_val, max_val)


def relu6(x: Tensor) -> Tensor:
    """`clamp(x, 0, 6)`: at 0 and 6 the gradient passes (see `hardtanh`), and at NaN too
    (burn's autodiff clamp), where torch's relu6 gives 0."""
    return x.clamp(0.0, 6.0)


def tanhshrink(x: Tensor) -> Tensor:
    """`x - tanh(x)`."""
    return x.sub(x.tanh())


def elu(x: Tensor, alpha: float) -> Tensor:
    """`x` where x > 0, `(exp(x) - 1) * alpha` where x <= 0 (a `mask_where`). PyTorch
    differences: `exp(x) - 1`, not `expm1` (for tiny negative x the value is 0 in float32
    where torch's is about x); at +inf the gradient is NaN (the unselected exp branch's
    0 * exp(inf)), where torch's is g. The same holds for `celu` and `selu`."""
    scaled = x.exp().sub_scalar(1.0).mul_scalar(alpha)
    return x.mask_where(x.lower_equal_elem(0.0), scaled)


def celu(x: Tensor, alpha: float) -> Tensor:
    """`x` where x > 0, `(exp(x / alpha) - 1) * alpha` where x <= 0. The float64 gradient
    carries div_scalar's float32 rounding of 1/alpha (exact for a power of two)."""
    scaled = x.div_scalar(alpha).exp().sub_scalar(1.0).mul_scalar(alpha)
    return x.mask_where(x.lower_equal_elem(0.0), scaled)


def selu(x: Tensor) -> Tensor:
    """`gamma * x` where x >= 0, `gamma * alpha * (exp(x) - 1)` elsewhere. PyTorch
    difference: at exactly 0 the gradient is gamma (burn's mask is `x >= 0`), torch's
    `gamma * alpha`."""
    positive = x.mul_scalar(_SELU_GAMMA)
    negative = x.exp().sub_scalar(1.0).mul_scalar(_SELU_ALPHA * _SELU_GAMMA)
    return negative.mask_where(x.greater_equal_elem(0.0), positive)


def thresholded_relu(x: Tensor, alpha: float) -> Tensor:
    """`x` where x > alpha, 0 elsewhere (`mask_fill(x <= alpha, 0)`)."""
    return x.mask_fill(x.lower_equal_elem(alpha), 0.0)


def threshold(x: Tensor, threshold: float, value: float) -> Tensor:
    """`x` where x > threshold, `value` elsewhere (`mask_fill(x <= threshold, value)`; NaN
    stays NaN, as in torch)."""
    return x.mask_fill(x.lower_equal_elem(threshold), value)


def glu(x: Tensor, dim: int) -> Tensor:
    """`a * sigmoid(b)`, `a` and `b` the two halves of `dim` (which must be even)."""
    d = norm_dim("glu", dim, x.ndim)
    n = x.shape[d]
    if n % 2:
        raise ShapeError(
            f"glu: Input tensor along dimension {d} must have an even size. N is divisible by 2."
        )
    first, second = [None] * x.ndim, [None] * x.ndim
    first[d], second[d] = (0, n // 2), (n // 2, n)
    return x.slice(first).mul(x.slice(second).sigmoid())


def softsign(x: Tensor) -> Tensor:
    """`x / (|x| + 1)`. PyTorch difference: at NaN the gradient is NaN (abs's rule), as
    torch's."""
    return x.div(x.abs().add_scalar(1.0))


def softmin(x: Tensor, dim: int) -> Tensor:
    """`softmax(-x)` along `dim` (burn-backend's default `softmin`)."""
    return x.neg().softmax(dim)


def hard_swish(x: Tensor) -> Tensor:
    """`x * hard_sigmoid(x, 1/6, 0.5)`. PyTorch differences: at x = -3 and 3 the clamp's
    gradient passes (the gradient is -0.5 g and 1.5 g, torch's 0 and g); at NaN and +-inf the
    product rule gives NaN."""
    return x.mul(hard_sigmoid(x, 1.0 / 6.0, 0.5))


def mish(x: Tensor) -> Tensor:
    """`x * tanh(softplus(x, 1))`, with burn's softplus (no threshold, see `softplus`)."""
    return x.mul(softplus(x, 1.0).tanh())


def hard_shrink(x: Tensor, lambd: float) -> Tensor:
    """`x` where |x| > lambda, 0 elsewhere (`mask_fill(|x| <= lambda, 0)`)."""
    return x.mask_fill(x.abs().lower_equal_elem(lambd), 0.0)


def soft_shrink(x: Tensor, lambd: float) -> Tensor:
    """`shrink(x, lambda, lambda)`: x moved towards 0 by lambda, 0 where |x| <= lambda."""
    return shrink(x, lambd, lambd)


def shrink(x: Tensor, lambd: float, bias: float) -> Tensor:
    """`x - sign(x) * bias` where |x| > lambda, 0 elsewhere (burn's / ONNX's `shrink`)."""
    shrunk = x.sub(x.sign().mul_scalar(bias))
    return shrunk.mask_fill(x.abs().lower_equal_elem(lambd), 0.0)


def log_sigmoid(x: Tensor) -> Tensor:
    """`log(sigmoid(x))`: burn-autodiff's own node (the `log_sigmoid` primitive)."""
    return x.log_sigmoid()


def quiet_softmax(x: Tensor, dim: int) -> Tensor:
    """burn's `quiet_softmax`: `exp(x - m) / (sum(exp(x - m)) + exp(-m))` along `dim`, with
    `m = detach(x).max_dim(dim)`: a softmax with an extra zero logit, so a lane can give all
    its entries weight near 0. The max is detached, so no gradient flows through it (burn's
    `detach()`); PyTorch has no such function (its check writes the formula)."""
    m = x.detach().max_dim(dim)
    e = x.sub(m).exp()
    return e.div(e.sum_dim(dim).add(m.neg().exp()))
