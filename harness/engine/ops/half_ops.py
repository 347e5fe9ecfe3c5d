"""The half forwards and rules that are not "the float32 code, rounded once" (harness.engine.ops.
half): each one follows the flex kernel or burn composite it names (burn commit
2c06be351006851d42fdb6df16b976f4a82d9747). Imported last by `harness.engine.ops`, it replaces
`half_forward` / `half_rule` of those primitives.

- `sum`, `sum_dim`: flex's `reduce_scalar_half` / `reduce_dim_half` (reduce.rs) fold the
  elements in order in an f32 accumulator and round once. NumPy's float32 `add.reduce` sums
  pairwise, so the fold is a float32 `cumsum` (sequential) read at its end. (`prod` and
  `prod_dim` need nothing: NumPy's multiply reduction is already a sequential float32 fold.
  `mean` and `mean_dim` neither: flex's `mean_scalar_half` / `mean_dim_half` sum with its f32
  kernel and divide in f32 before the one rounding, which the float32 path does.)
- `mean`, `mean_dim` backward: burn-autodiff's rule is `ones * (1/n)` then `* grad`
  (`float_mean` in burn-autodiff/src/ops/tensor.rs), and flex rounds the scalar `1/n` to the
  half format first (`scalar_op`): `round(half(1/n) * g)`, not `round(g / n)`.
- `linear`: flex runs burn's default linear, a matmul then an add (burn-backend
  `modules/linear.rs`): two roundings.
- `softmax`: on the autodiff device burn runs `ActivationOps::softmax`'s default (burn-autodiff
  overrides none), five backend ops each rounded: `max_dim`, `sub`, `exp`, `sum_dim`, `div`. On
  the plain device flex's fused kernel (`softmax_row_half`, activation.rs) runs instead:
  `exp(x - max)` in f32 stored rounded, summed unrounded in f32, then each stored value times
  `1/sum` in f32, rounded again (`fused_softmax`; `Tensor.softmax` picks it).
- `log_softmax`: the default composite on both devices (flex has no fused one): `max_dim`,
  `sub`, `exp`, `sum_dim`, `log`, `sub`, each rounded.
- `softmax` and `log_softmax` backward: the composites' backward, op by op, each rounded
  (`softmax_rule`, `log_softmax_rule`); the float32 rules are the same algebra fused. Run as one
  float32 computation rounded once instead, they would part from burn's on about half (softmax)
  and a tenth (log_softmax) of the gradient's elements: by up to 9 float16 / 11 bfloat16 ULP
  (softmax) and 16 / 35 ULP (log_softmax) where |grad| >= 1/16, far more ULP near zero where
  the sum cancels (measured on 20 64x32 normal inputs, tests/engine/test_half.py).

PyTorch difference: torch's CPU half softmax and log_softmax compute in float32 and round once,
and its half sum accumulates float32 partials in its own order; the engine's results differ from
torch's by the extra roundings (about 1 ULP; the op matrix's half rows declare them).
"""

from __future__ import annotations

import numpy as np

from . import linalg, nn, reductions
from .arrays import filled, norm_dim
from .half import FLOAT32, half_scalar, narrow


def _fold_sum(x32: np.ndarray, axis: int) -> np.ndarray:
    """The in-order f32 fold of flex's half reductions along `axis`, the axis kept."""
    if x32.shape[axis] == 0:
        return np.add.reduce(x32, axis=axis, keepdims=True)
    end = x32.shape[axis] - 1
    return np.take(np.cumsum(x32, axis=axis), [end], axis=axis)


def sum_all(x, /):
    out = narrow(_fold_sum(x.astype(FLOAT32).reshape(-1), 0), x.dtype)
    return out, reductions.SavedShape(x.shape)


def sum_dim(x, /, dim: int):
    d = norm_dim("sum_dim", dim, x.ndim)
    return narrow(_fold_sum(x.astype(FLOAT32), d), x.dtype), reductions.SavedShape(x.shape)


def _scaled_by_inverse(g, n, shape):
    """`round(half(1/n) * g)` broadcast to `shape` (burn's mean rule in a half dtype)."""
    inv = half_scalar(1.0 / float(n), g.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        return narrow(g.astype(FLOAT32) * inv, g.dtype)


def mean_rule(s, g, tracked):
    return (filled(s.shape, _scaled_by_inverse(g, s.n, s.shape)[0]),)


def mean_dim_rule(s, g, tracked):
    return (np.broadcast_to(_scaled_by_inverse(g, s.n, s.shape), s.shape),)


def linear(x, weight, bias, /):
    """The float32 linear with a -0.0 bias (adds nothing, keeps its checks and error texts)
    is the matmul; rounded, plus the bias, rounded again."""
    dtype = x.dtype
    b32 = bias.astype(FLOAT32)
    product, saved = linalg.linear(x.astype(FLOAT32), weight.astype(FLOAT32), -np.zeros_like(b32))
    out = narrow(_rounded(product, dtype) + b32, dtype)
    return out, linalg.SavedLinear(x, weight, saved.product, bias.shape)


def _rounded(x32: np.ndarray, dtype) -> np.ndarray:
    return narrow(x32, dtype).astype(FLOAT32)


def _shifted_exp_sum(name: str, x, dim: int):
    """The ops softmax and log_softmax share, each rounded to `x`'s dtype: the dim, `x - max`,
    its exp and their sum (float32 values of half numbers)."""
    dtype = x.dtype
    d = nn._softmax_dim(name, x, dim)
    x32 = x.astype(FLOAT32)
    shifted = _rounded(x32 - np.maximum.reduce(x32, axis=d, keepdims=True), dtype)
    e = _rounded(np.exp(shifted), dtype)
    return d, shifted, e, _rounded(_fold_sum(e, d), dtype)


def softmax(x, /, dim: int):
    """burn's five-op softmax composite, each op rounded to `x`'s dtype (autodiff device)."""
    d, _, e, s = _shifted_exp_sum("softmax", x, dim)
    out = narrow(e / s, x.dtype)
    return out, nn.Softmaxed(e.astype(x.dtype), s.astype(x.dtype), d)


def log_softmax(x, /, dim: int):
    """burn's log_softmax composite, each op rounded to `x`'s dtype."""
    d, shifted, e, s = _shifted_exp_sum("log_softmax", x, dim)
    out = narrow(shifted - _rounded(np.log(s), x.dtype), x.dtype)
    return out, nn.Softmaxed(e.astype(x.dtype), s.astype(x.dtype), d)


def softmax_rule(s, g, tracked):
    """The backward of burn's softmax composite in the half dtype, op by op (burn-autodiff's
    rules in `ops/tensor.rs`): div's `grad * recip(rhs)` and `grad * (-lhs / rhs^2)` summed
    back over the dim, the two gradients of `exp`'s output added, exp's `grad * output`."""
    dtype = g.dtype
    e, total, d = s.e.astype(FLOAT32), s.s.astype(FLOAT32), s.dim
    g32 = g.astype(FLOAT32)
    direct = _rounded(g32 * _rounded(np.float32(1) / total, dtype), dtype)
    value = _rounded(np.negative(e) / _rounded(total * total, dtype), dtype)
    through_s = _rounded(_fold_sum(_rounded(g32 * value, dtype), d), dtype)
    g_e = _rounded(direct + through_s, dtype)
    return (narrow(g_e * e, dtype),)


def log_softmax_rule(s, g, tracked):
    """The backward of burn's log_softmax composite in the half dtype, op by op: sub's `-grad`
    summed back over the dim, log's `grad * recip(input)`, exp's `grad * output`, and the two
    gradients of the shifted input added."""
    dtype = g.dtype
    e, total, d = s.e.astype(FLOAT32), s.s.astype(FLOAT32), s.dim
    g32 = g.astype(FLOAT32)
    g_lse = _rounded(_fold_sum(np.negative(g32), d), dtype)
    g_sum = _rounded(g_lse * _rounded(np.float32(1) / total, dtype), dtype)
    return (narrow(g32 + _rounded(g_sum * e, dtype), dtype),)


def fused_softmax(x: np.ndarray, dim: int) -> np.ndarray:
    """flex's fused half softmax (`softmax_row_half`): two roundings per element."""
    dtype = x.dtype
    d = nn._softmax_dim("softmax", x, dim)
    x32 = x.astype(FLOAT32)
    e32 = np.exp(x32 - np.maximum.reduce(x32, axis=d, keepdims=True))
    inv = np.float32(1.0) / _fold_sum(e32, d)
    return narrow(_rounded(e32, dtype) * inv, dtype)


def _install() -> None:
    reductions.SUM.half_forward = sum_all
    reductions.SUM_DIM.half_forward = sum_dim
    reductions.MEAN.half_rule = mean_rule
    reductions.MEAN_DIM.half_rule = mean_dim_rule
    linalg.LINEAR.half_forward = linear
    nn.SOFTMAX.half_forward = softmax
    nn.LOG_SOFTMAX.half_forward = log_softmax
    nn.SOFTMAX.half_rule = softmax_rule
    nn.LOG_SOFTMAX.half_rule = log_softmax_rule


_install()
