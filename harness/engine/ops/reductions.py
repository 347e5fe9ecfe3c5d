"""Reductions: full sum and mean (shape `[1]`, as burn has no 0-d tensors), sum, mean, max and
min along a dim (kept with size 1), argmax and argmin."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import facts
from .arrays import filled, norm_dim
from .base import Array, Grad, SavedShape, Tracked, differentiable, untracked
from .facts import (
    TIE_KINKS,
    TO_ONE,
    UNARY_NONEMPTY,
    Abs,
    Diverges,
    FuzzStructural,
    along_dim1,
    each_dim,
    kept_dim,
    size,
    unary,
)

_RANK = Diverges(
    "*/*/*/shape",
    "burn has no 0-d tensors: full reductions return [1] where torch returns 0-d "
    "(harness.engine.ops.reductions.sum_all)",
)


@dataclass(slots=True)
class Mean:
    shape: tuple[int, ...]  # the input's shape
    n: np.generic  # the element count, in the tensor's dtype


def sum_all(x: Array, /) -> tuple[Array, SavedShape]:
    """Sum of all elements, shape (1,).

    PyTorch difference: burn has no 0-d tensors; PyTorch returns a 0-d tensor.
    """
    return np.add.reduce(x, axis=None, keepdims=False).reshape(1), SavedShape(x.shape)


def sum_backward(s: SavedShape, g: Array, tracked: Tracked) -> tuple[Grad]:
    # g has the output's shape [1].
    return (filled(s.shape, g[0]),)


SUM = differentiable(
    "sum",
    sum_all,
    sum_backward,
    checks=(
        unary(
            "sum",
            "{a}.sum()",
            "torch.sum({a})",
            diverges=(_RANK,),
            fuzz=FuzzStructural(
                lambda x, dim: Abs((1,), size(x.shape) * min(x.lo, 0), size(x.shape) * max(x.hi, 0))
            ),
            **TO_ONE,
        ),
    ),
)


def mean_all(x: Array, /) -> tuple[Array, Mean]:
    """Mean of all elements, shape (1,) (PyTorch returns 0-d)."""
    n = x.dtype.type(x.size)
    # sum then divide in the tensor dtype, as burn does (np.mean divides in float64).
    # np.array((scalar,)) keeps the scalar's dtype, in half the time of scalar.reshape(1).
    return np.array((np.add.reduce(x, axis=None) / n,)), Mean(x.shape, n)


def mean_backward(s: Mean, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn multiplies by 1/n, it does not divide by n. The forward op saves `n` as a scalar of
    # the tensor's dtype (g's), so `1.0 / n` already has that dtype: no cast needed. (In f32
    # this equals 1/n computed in f64 then cast, checked for every n below 2**20.)
    return (filled(s.shape, g[0] * (1.0 / s.n)),)


MEAN = differentiable(
    "mean",
    mean_all,
    mean_backward,
    checks=(
        unary(
            "mean",
            "{a}.mean()",
            "torch.mean({a})",
            shapes=UNARY_NONEMPTY,
            diverges=(_RANK,),
            fuzz=FuzzStructural(lambda x, dim: Abs((1,), x.lo, max(x.hi, 0))),
            **TO_ONE,
        ),
    ),
)


def sum_dim(x: Array, /, dim: int) -> tuple[Array, SavedShape]:
    """Sum over `dim`, keeping it with size 1 (PyTorch drops it by default)."""
    d = norm_dim("sum_dim", dim, x.ndim)
    return np.add.reduce(x, axis=d, keepdims=True), SavedShape(x.shape)


def sum_dim_backward(s: SavedShape, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (np.broadcast_to(g, s.shape),)


def _sum_dim_interval(x: Abs, dim: int) -> Abs | None:
    if not x.shape:
        return None
    k = x.shape[dim]
    return Abs(kept_dim(x, dim), k * min(x.lo, 0), k * max(x.hi, 0))


def _kept_interval(x: Abs, dim: int) -> Abs | None:
    """mean and max along `dim` stay within the operand's interval."""
    return Abs(kept_dim(x, dim), x.lo, x.hi) if x.shape else None


SUM_DIM = differentiable(
    "sum_dim",
    sum_dim,
    sum_dim_backward,
    checks=(
        along_dim1(
            "sum_dim",
            "{a}.sum_dim({dim})",
            "torch.sum({a}, {dim}, keepdim=True)",
            fuzz=FuzzStructural(_sum_dim_interval, each_dim),
        ),
    ),
)


def mean_dim(x: Array, /, dim: int) -> tuple[Array, Mean]:
    """Mean over `dim`, keeping it with size 1 (PyTorch drops it by default)."""
    d = norm_dim("mean_dim", dim, x.ndim)
    n = x.dtype.type(x.shape[d])
    # An empty `dim` gives 0 / 0 = NaN, as flex's `mean_dim` (crates/burn-flex/src/ops/
    # reduce.rs) does on purpose, so NumPy's warning is silenced; PyTorch gives NaN too.
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.add.reduce(x, axis=d, keepdims=True) / n, Mean(x.shape, n)


def mean_dim_backward(s: Mean, g: Array, tracked: Tracked) -> tuple[Grad]:
    with np.errstate(divide="ignore", invalid="ignore"):  # empty dim: the gradient is empty
        return (np.broadcast_to(g * (1.0 / s.n), s.shape),)


MEAN_DIM = differentiable(
    "mean_dim",
    mean_dim,
    mean_dim_backward,
    checks=(
        along_dim1(
            "mean_dim",
            "{a}.mean_dim({dim})",
            "torch.mean({a}, {dim}, keepdim=True)",
            fuzz=FuzzStructural(_kept_interval, each_dim),
        ),
    ),
)


@dataclass(slots=True)
class MaxDim:
    shape: tuple[int, ...]  # the input's shape
    idx: Array  # int64 index of the first maximum, dim kept
    dim: int


def max_dim(x: Array, /, dim: int) -> tuple[Array, MaxDim]:
    """Max over `dim`, keeping it; on ties the gradient goes to the first maximum."""
    d = norm_dim("max_dim", dim, x.ndim)
    idx = np.argmax(x, axis=d, keepdims=True)
    return np.take_along_axis(x, idx, axis=d), MaxDim(x.shape, idx, d)


def max_dim_backward(s: MaxDim, g: Array, tracked: Tracked) -> tuple[Grad]:
    # argmax picks the first maximum, so on ties the whole gradient goes to the first one
    # (burn scatters into the index its max_dim_with_indices returned).
    z = np.zeros(s.shape, dtype=g.dtype)
    np.put_along_axis(z, s.idx, g, s.dim)
    return (z,)


MAX_DIM = differentiable(
    "max_dim",
    max_dim,
    max_dim_backward,
    checks=(
        along_dim1(
            "max_dim",
            "{a}.max_dim({dim})",
            "torch.max({a}, {dim}, keepdim=True).values",
            kinks=TIE_KINKS,
            fuzz=FuzzStructural(_kept_interval, each_dim),
        ),
        along_dim1(
            "max_dim_with_indices",
            "{a}.max_dim_with_indices({dim})",
            "tuple(torch.max({a}, {dim}, keepdim=True))",
            kinks=TIE_KINKS,
        ),
        # max() is reshape([-1]) then max_dim(0).
        unary(
            "max",
            "{a}.max()",
            "torch.max({a})",
            shapes=UNARY_NONEMPTY,
            kinks=TIE_KINKS,
            diverges=(
                _RANK,
                Diverges(
                    "*/*/kinks/vjp.a",
                    "full max() on ties: burn sends the whole gradient to the first maximum "
                    "(max_dim indices); torch's max() without dim splits it evenly among the "
                    "tied maxima",
                    facts.SAME_TOTAL,
                ),
            ),
            **TO_ONE,
        ),
    ),
)


def min_dim(x: Array, /, dim: int) -> tuple[Array, MaxDim]:
    """Min over `dim`, keeping it; on ties the gradient goes to the first minimum.

    burn-autodiff's `float_min_dim` scatters the gradient into the index flex's
    `min_dim_with_indices` returns (the `MaxMinDim` backward, `crates/burn-autodiff/src/ops/
    maxmin.rs`, commit 2c06be351006851d42fdb6df16b976f4a82d9747): the first minimum, or the
    first NaN (flex's `extremum_dim` keeps a NaN once met), as NumPy's argmin.
    """
    d = norm_dim("min_dim", dim, x.ndim)
    idx = np.argmin(x, axis=d, keepdims=True)
    return np.take_along_axis(x, idx, axis=d), MaxDim(x.shape, idx, d)


def min_dim_backward(s: MaxDim, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn's MaxMinDim backward, shared with max_dim: scatter g into the saved index.
    return max_dim_backward(s, g, tracked)


MIN_DIM = differentiable(
    "min_dim",
    min_dim,
    min_dim_backward,
    checks=(
        along_dim1(
            "min_dim",
            "{a}.min_dim({dim})",
            "torch.min({a}, {dim}, keepdim=True).values",
            kinks=TIE_KINKS,
            fuzz=FuzzStructural(_kept_interval, each_dim),
        ),
        along_dim1(
            "min_dim_with_indices",
            "{a}.min_dim_with_indices({dim})",
            "tuple(torch.min({a}, {dim}, keepdim=True))",
            kinks=TIE_KINKS,
        ),
        # min() is reshape([-1]) then min_dim(0) (burn-backend's default `float_min`).
        unary(
            "min",
            "{a}.min()",
            "torch.min({a})",
            shapes=UNARY_NONEMPTY,
            kinks=TIE_KINKS,
            diverges=(
                _RANK,
                Diverges(
                    "*/*/kinks/vjp.a",
                    "full min() on ties: burn sends the whole gradient to the first minimum "
                    "(min_dim indices); torch's min() without dim splits it evenly among the "
                    "tied minima",
                    facts.SAME_TOTAL,
                ),
            ),
            **TO_ONE,
        ),
    ),
)


def argmax(x: Array, /, dim: int) -> Array:
    """int64 index of the first maximum along `dim`, keeping it (not differentiable)."""
    return np.argmax(x, axis=norm_dim("argmax", dim, x.ndim), keepdims=True)


def argmin(x: Array, /, dim: int) -> Array:
    """int64 index of the first minimum along `dim`, keeping it (not differentiable)."""
    return np.argmin(x, axis=norm_dim("argmin", dim, x.ndim), keepdims=True)


ARGMIN = untracked(
    "argmin",
    argmin,
    because="integer output",
    checks=(
        along_dim1(
            "argmin",
            "{a}.argmin({dim})",
            "torch.argmin({a}, {dim}, keepdim=True)",
            kinks=TIE_KINKS,
        ),
    ),
)
ARGMAX = untracked(
    "argmax",
    argmax,
    because="integer output",
    checks=(
        along_dim1(
            "argmax",
            "{a}.argmax({dim})",
            "torch.argmax({a}, {dim}, keepdim=True)",
            kinks=TIE_KINKS,
        ),
    ),
)
