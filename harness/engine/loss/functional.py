"""The burn-tensor functions the losses call (`activation::softplus`, `linalg::lp_norm`,
`linalg::cosine_similarity`, `Tensor::mean_dims`), written as composites of the engine's
primitive ops in burn's op order, so gradients come from the backward table and rounding follows
burn's formulas. `Tensor::log1p`, `activation::log_sigmoid` and `min_dim` are primitives
(`Tensor.log1p`, `Tensor.log_sigmoid`, `Tensor.min_dim`).

burn read at commit 2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47):
`crates/burn-tensor/src/tensor/activation/base.rs`, `crates/burn-tensor/src/tensor/linalg/
vector_norm.rs`, `cosine_similarity.rs`, `crates/burn-flex/src/ops/activation.rs`,
`crates/burn-autodiff/src/ops/activation.rs` and `ops/tensor.rs` (`float_log1p`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.engine.activation import softplus  # noqa: F401  (re-exported for the losses)
from harness.engine.ops.half import finfo
from harness.engine.tensor import Tensor

_U32_MAX = 2**32 - 1
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


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
        return x.abs().min_dim(dim)
    return x.abs().powf_scalar(p).sum_dim(dim).powf_scalar(1.0 / p)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int, eps: float | None = None) -> Tensor:
    """burn's `linalg::cosine_similarity`: `sum(x1 * x2) / (max(||x1||, eps) * max(||x2||,
    eps))` along `dim` (kept), eps defaulting to the dtype's smallest positive normal.

    PyTorch's `cosine_embedding_loss` divides by `sqrt((|x1|^2 + 1e-12) * (|x2|^2 + 1e-12))`
    instead; `F.cosine_similarity` clamps each norm at 1e-8.
    """
    if eps is None:
        eps = float(finfo(x1.dtype).tiny)
    dot = (x1 * x2).sum_dim(dim)
    norm1 = x1.powi_scalar(2).sum_dim(dim).sqrt()
    norm2 = x2.powi_scalar(2).sum_dim(dim).sqrt()
    return dot / (norm1.clamp_min(eps) * norm2.clamp_min(eps))
