"""The burn-tensor functions the losses call (`activation::softplus`, `activation::log_sigmoid`,
`Tensor::log1p`, `linalg::lp_norm`, `linalg::cosine_similarity`, `Tensor::mean_dims`), written
as composites of the engine's primitive ops in burn's op order, so gradients come from the
backward table and rounding follows burn's formulas.

Two of them stand in for primitives the engine does not have yet (`log1p`, `log_sigmoid`):
each returns flex's value exactly and routes the gradient through tracked ops whose
vector-Jacobian product is burn's backward formula, bit for bit (see each docstring). They go
away when the core gains the primitives.

burn read at commit 2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47):
`crates/burn-tensor/src/tensor/activation/base.rs`, `crates/burn-tensor/src/tensor/linalg/
vector_norm.rs`, `cosine_similarity.rs`, `crates/burn-flex/src/ops/activation.rs`,
`crates/burn-autodiff/src/ops/activation.rs` and `ops/tensor.rs` (`float_log1p`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.engine.loss.reduction import constant, mask_constant
from harness.engine.tensor import Tensor

_U32_MAX = 2**32 - 1
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def log1p(x: Tensor) -> Tensor:
    """`log(1 + x)` with flex's value and burn's gradient `g * recip(x + 1)`
    (`float_log1p` in `burn-autodiff/src/ops/tensor.rs`).

    Composite until the core has `log1p`: the tracked part is `(x + 1).log()`, whose backward
    is `g * recip(fl(x + 1))`, burn's formula exactly. Its value loses digits for small |x|,
    so the exact `np.log1p` value is reached by adding the difference as an untracked constant.
    That difference is exact: both values are within a factor 2 of each other (Sterbenz) or
    the approximation is 0, so `approx + (exact - approx)` rounds to `exact`.
    """
    approx = (x + 1.0).log()
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = np.log1p(x.numpy())
        correction = np.where(np.isfinite(exact), exact - approx.numpy(), 0.0)
    if not correction.any():
        return approx
    return approx + constant(correction, x)


def _flex_sigmoid(x: np.ndarray) -> np.ndarray:
    """flex's `sigmoid_f32`/`sigmoid_f64`: `1 / (1 + exp(-x))` for x >= 0, else
    `exp(x) / (1 + exp(x))`, in the array's dtype."""
    one = x.dtype.type(1)
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
    return np.where(x >= 0, one / (one + e), e / (one + e))


def _flex_log_sigmoid(x: np.ndarray) -> np.ndarray:
    """flex's fused `log_sigmoid`: `-ln_1p(exp(-x))` for x >= 0, else `x - ln_1p(exp(x))`."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(x >= 0, -np.log1p(np.exp(-x)), x - np.log1p(np.exp(x)))


def log_sigmoid(x: Tensor) -> Tensor:
    """burn's `activation::log_sigmoid` on flex: one fused op, forward
    `x >= 0 ? -ln_1p(exp(-x)) : x - ln_1p(exp(x))`, backward `g * sigmoid(-x)`
    (`crates/burn-flex/src/ops/activation.rs`, `log_sigmoid` / `log_sigmoid_backward`).

    Composite until the core has `log_sigmoid`: with `v` flex's value and `s = sigmoid(-x)`
    (flex's sigmoid), both untracked, it returns `v - (x' - x) * s` where `x'` holds x's values
    untracked. For finite x, `x' - x` is exactly +0, so the value is `v` bit for bit, and the
    backward is `-(-g * s) = g * s`, flex's formula bit for bit. At x = +-inf or NaN the
    gradient is 0 (flex: `g * sigmoid(-x)`, i.e. g at -inf and NaN at NaN); the value is flex's.

    PyTorch computes the same function (`log_sigmoid` in ATen); burn's default backend formula
    (`-max(-x, 0) - log(exp(-max(-x, 0)) + exp(-x - max(-x, 0)))`) rounds
    `log(1 + exp(-x))` to exactly 0 for x above about 17, flex's does not.
    """
    values = x.numpy()
    v = constant(_flex_log_sigmoid(values), x)
    s = constant(_flex_sigmoid(-values), x)
    delta = constant(values, x) - x
    nonfinite = ~np.isfinite(values)
    if nonfinite.any():
        delta = delta.mask_fill(mask_constant(nonfinite, x), 0.0)
    return v - delta * s


def softplus(x: Tensor, beta: float) -> Tensor:
    """burn's `activation::softplus`: `log(exp(x * beta) + 1) / beta`, no `log1p` and no
    shift, so it is 0 once `exp(x * beta)` drops below half an ulp of 1 and inf once it
    overflows (PyTorch's `softplus` switches to `x` above its threshold 20)."""
    return ((x * beta).exp() + 1.0).log() / beta


def mean_dims(x: Tensor, dims: Sequence[int]) -> Tensor:
    """burn's `Tensor::mean_dims`: `mean_dim` over each dim in the given order (kept, size 1)."""
    for dim in dims:
        x = x.mean_dim(dim)
    return x


def _is_even_integer(p: float) -> bool:
    """burn's `is_even_integer`: `p.fract() == 0.0 && (p as i64) % 2 == 0` (`as i64`
    saturates, and i64::MAX is odd)."""
    if not math.isfinite(p) or p != int(p):
        return False
    return min(max(int(p), _I64_MIN), _I64_MAX) % 2 == 0


def lp_norm(x: Tensor, p: float, dim: int) -> Tensor:
    """burn's `linalg::lp_norm(x, p, dim)`, the dim kept, with burn's dispatch on p:
    0 counts non-zeros (no gradient), 1 is `abs().sum_dim`, 2 `square().sum_dim().sqrt()`,
    an even integer `powi(p).sum_dim().powf(1/p)` (no abs), +inf `abs().max_dim`, -inf
    `abs().min_dim`, anything else `abs().powf(p).sum_dim().powf(1/p)`.

    `min_dim` is written `-(max_dim(-x))` (the engine has no `min_dim`): the same value, and the
    gradient goes to the first minimum as burn's `min_dim` backward does.
    """
    p = float(p)
    if p == 0.0:
        nonzero = x.equal_elem(0.0).bool_not()
        return x.zeros_like().mask_fill(nonzero, 1.0).sum_dim(dim)
    if p == 1.0:
        return x.abs().sum_dim(dim)
    if p == 2.0:
        return x.powi_scalar(2).sum_dim(dim).sqrt()
    if _is_even_integer(p):
        # burn passes `p as u32` (a saturating cast) and takes 1 / that u32 as the root.
        p_u32 = min(max(int(p), 0), _U32_MAX)
        root = 1.0 / p_u32 if p_u32 else math.inf
        return x.powi_scalar(p_u32).sum_dim(dim).powf_scalar(root)
    if p == math.inf:
        return x.abs().max_dim(dim)
    if p == -math.inf:
        return x.abs().neg().max_dim(dim).neg()
    return x.abs().powf_scalar(p).sum_dim(dim).powf_scalar(1.0 / p)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int, eps: float | None = None) -> Tensor:
    """burn's `linalg::cosine_similarity`: `sum(x1 * x2) / (max(||x1||, eps) * max(||x2||,
    eps))` along `dim` (kept), eps defaulting to the dtype's smallest positive normal.

    PyTorch's `cosine_embedding_loss` divides by `sqrt((|x1|^2 + 1e-12) * (|x2|^2 + 1e-12))`
    instead; `F.cosine_similarity` clamps each norm at 1e-8.
    """
    if eps is None:
        eps = float(np.finfo(x1.dtype).tiny)
    dot = (x1 * x2).sum_dim(dim)
    norm1 = x1.powi_scalar(2).sum_dim(dim).sqrt()
    norm2 = x2.powi_scalar(2).sum_dim(dim).sqrt()
    return dot / (norm1.clamp_min(eps) * norm2.clamp_min(eps))
