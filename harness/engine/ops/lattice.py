"""The primitives burn's RNN-T loss (`crates/burn-nn/src/loss/rnnt.rs`) is built from, beyond
the core set: `cumsum`, `slice_assign`, `gather_nd` and `max_pair`.

Each forward follows flex (`crates/burn-flex/src/ops/`), each rule burn-autodiff
(`crates/burn-autodiff/src/ops/tensor.rs`); `max_pair` is a composite in burn
(`crates/burn-tensor/src/tensor/api/orderable.rs`) whose gradient is `mask_where`'s, and its
rule here is exactly that. burn read at commit 2c06be351006851d42fdb6df16b976f4a82d9747
(v0.22.0-pre.2-47).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from . import facts
from .arrays import INT64, fmt, norm_dim
from .base import Array, Grad, Tracked, differentiable
from .facts import (
    ALONG_DIM1,
    BINARY,
    Abs,
    Check,
    Condition,
    Diverges,
    FuzzBinary,
    FuzzStructural,
    Input,
    binary,
    menu,
)
from .indexing import (
    Gathered,
    MaskedPair,
    check_indices,
    gather_backward,
    mask_where_backward,
)
from .shape import slice_index

# ---- cumsum ---------------------------------------------------------------------------------


@dataclass(slots=True)
class Cumulated:
    dim: int


def cumsum(x: Array, /, dim: int) -> tuple[Array, Cumulated]:
    """The cumulative sum along `dim` (negative dims count from the end).

    flex's `cumulative_op` (`crates/burn-flex/src/ops/cumulative.rs`) adds left to right in the
    element type, as `np.cumsum` does, so the float32 roundings are the same.
    """
    d = norm_dim("cumsum", dim, x.ndim)
    return np.cumsum(x, axis=d), Cumulated(d)


def cumsum_backward(s: Cumulated, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn-autodiff's `CumSum`: flip, cumsum, flip (the suffix sums of g).
    d = s.dim
    return (np.flip(np.cumsum(np.flip(g, d), axis=d), d),)


def _cumsum_interval(x: Abs, dim: int) -> Abs | None:
    if not x.shape:
        return None
    n = x.shape[dim]
    return Abs(x.shape, min(x.lo, n * x.lo), max(x.hi, n * x.hi))


def _cumsum_last_interval(x: Abs, dim: int) -> Abs | None:
    # The fuzzer's cumsum runs along the last dim (the check's `dim` parameter).
    return _cumsum_interval(x, len(x.shape) - 1) if x.shape else None


CUMSUM = differentiable(
    "cumsum",
    cumsum,
    cumsum_backward,
    checks=(
        Check(
            "cumsum",
            "{a}.cumsum({dim})",
            "torch.cumsum({a}, {dim})",
            shapes=ALONG_DIM1,
            params={"dim": 1},
        ),
        Check(
            "cumsum[-1]",
            "{a}.cumsum({dim})",
            "torch.cumsum({a}, {dim})",
            shapes=menu(("4", [(4,)]), ("3x2", [(3, 2)])),
            params={"dim": -1},
            fuzz=FuzzStructural(_cumsum_last_interval),
        ),
    ),
)

# ---- slice_assign ---------------------------------------------------------------------------


@dataclass(slots=True)
class Assigned:
    index: tuple[slice, ...]


def slice_assign(x: Array, value: Array, /, ranges) -> tuple[Array, Assigned]:
    """`self` with the region `ranges` selects replaced by `value` (burn's `slice_assign`).

    `ranges` are `slice`'s (`(start, end)`, `slice` with a step, int `i` = `i..i+1`, None);
    `value` must have exactly the shape of the region (burn's `TensorCheck::slice_assign`
    panics otherwise; NumPy would broadcast). burn returns `self` unchanged for a region with
    no element; here, as for `slice`, an empty or out-of-bounds range raises. PyTorch has no
    such method: its out-of-place counterpart is `torch.slice_scatter` (one dim at a time).
    """
    index = slice_index("slice_assign", ranges, x.shape)
    out = x.copy()
    region = out[index].shape
    if value.shape != region:
        raise ShapeError(
            f"slice_assign: the value's shape {fmt(value.shape)} is not the shape "
            f"{fmt(region)} of the region {list(ranges)!r} of {fmt(x.shape)}"
        )
    out[index] = value
    return out, Assigned(index)


def slice_assign_backward(s: Assigned, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    # burn-autodiff's `SliceAssign`: g with the region zeroed for self, g's region for value.
    pa, pb = tracked
    ga = None
    if pa is not None:
        ga = g.copy()
        ga[s.index] = 0
    return ga, (g[s.index] if pb is not None else None)


def _assign_first_row(a: Abs, b: Abs) -> Abs | None:
    if not a.shape or b.shape != (1, *a.shape[1:]):
        return None
    return Abs(a.shape, min(a.lo, b.lo), max(a.hi, b.hi))


SLICE_ASSIGN = differentiable(
    "slice_assign",
    slice_assign,
    slice_assign_backward,
    checks=(
        Check(
            "slice_assign",
            "{a}.slice_assign([(0, 1)], {b})",
            "torch.slice_scatter({a}, {b}, 0, 0, 1)",
            (Input("a"), Input("b")),
            menu(("3x2<-1x2", [(3, 2), (1, 2)]), ("2x3x2<-1x3x2", [(2, 3, 2), (1, 3, 2)])),
            fuzz=FuzzBinary(_assign_first_row),
        ),
        Check(
            "slice_assign[dim1]",
            "{a}.slice_assign([None, (1, 3)], {b})",
            "torch.slice_scatter({a}, {b}, 1, 1, 3)",
            (Input("a"), Input("b")),
            menu(("3x4<-3x2", [(3, 4), (3, 2)]), ("0x4<-0x2", [(0, 4), (0, 2)])),
        ),
        Check(
            "slice_assign[step]",
            "{a}.slice_assign([slice(0, None, 2)], {b})",
            "torch.slice_scatter({a}, {b}, 0, 0, None, 2)",
            (Input("a"), Input("b")),
            menu(("5x2<-3x2", [(5, 2), (3, 2)])),
        ),
    ),
)

# ---- gather_nd ------------------------------------------------------------------------------


def gather_nd(x: Array, /, indices: Array) -> tuple[Array, Gathered]:
    """burn's `gather_nd`: the last axis of `indices` (size K) indexes the leading K dims; the
    result has shape `indices.shape[:-1] + self.shape[K:]`.

    burn's `TensorCheck::gather_nd` messages for a rank-0 or empty `indices` and K > rank.
    flex's kernel (`gather_scatter.rs`) does not check the index values; an index outside a
    dim raises IndexError here, naming the op, the index and the size (flex would read out of
    its buffer or panic). PyTorch's counterpart is advanced indexing, `x[tuple(i.unbind(-1))]`.
    """
    if indices.dtype is not INT64 and indices.dtype != INT64:
        raise TypeError(f"gather_nd: indices must be int64, got {indices.dtype}")
    if indices.ndim == 0:
        raise ShapeError("GatherNd: Indices tensor must have rank >= 1")
    if indices.size == 0:
        raise ShapeError("GatherNd: Indices tensor must not be empty")
    k = indices.shape[-1]
    if k > x.ndim:
        raise ShapeError(
            f"GatherNd: Last dimension of indices (K={k}) must be <= data rank (D={x.ndim})"
        )
    index = tuple(indices[..., j] for j in range(k))
    for j, column in enumerate(index):
        check_indices("gather_nd", column, x.shape[j])
    return x[index], Gathered(x.shape, index)


def gather_nd_backward(s: Gathered, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn-autodiff's `GatherNd`: scatter_nd with `Add` into zeros (repeated indices add up),
    # which is gather's rule on the saved fancy index.
    return gather_backward(s, g, tracked)


GATHER_ND = differentiable(
    "gather_nd",
    gather_nd,
    gather_nd_backward,
    checks=(
        Check(
            "gather_nd",
            "{a}.gather_nd({i})",
            "{a}[tuple({i}.unbind(-1))]",
            (Input("a"), Input("i", facts.INDEX)),
            # Index values are drawn below the size of dim 0; the leading dims are equal, so
            # every draw is in bounds. Six draws of three rows repeat some: a scatter-add.
            menu(
                ("3x3x2[6x2]", [(3, 3, 2), (6, 2)]),
                ("3x2[6x1]", [(3, 2), (6, 1)]),
                ("3x3[2x3x2]", [(3, 3), (2, 3, 2)]),
            ),
            params={"dim": 0},
        ),
    ),
)

# ---- max_pair -------------------------------------------------------------------------------


def max_pair(a: Array, b: Array, /) -> tuple[Array, MaskedPair]:
    """The elementwise maximum, as burn composes it: `self.mask_where(self.lower(other),
    other)` (broadcasting).

    PyTorch differences (`torch.maximum`): where `other` is NaN the result is `self` (the
    comparison is false), where PyTorch gives NaN; at a tie the whole gradient goes to `self`
    (`mask_where`'s rule), where PyTorch gives half to each; where either is NaN `other` gets
    no gradient, where PyTorch gives both the whole gradient.
    """
    mask = a < b
    return np.where(mask, b, a), MaskedPair(mask, a.shape, b.shape)


def max_pair_backward(s: MaskedPair, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    # burn-autodiff's `MaskWhere` with the `lower` mask: g to self where not masked, else other.
    return mask_where_backward(s, g, tracked)


HALVED_TIE = Condition.only_where(
    "torch halves a tie's gradient (the engine gives it all to self)", lambda t, e: 2 * t == e
)
ALL_TO_SELF = Condition.only_where("the engine's value is 0 (a tie or a NaN)", lambda t, e: e == 0)
NAN_OTHER = Condition.only_where(
    "torch is NaN and the engine is not (other is NaN)", lambda t, e: np.isnan(t) & ~np.isnan(e)
)

MAX_PAIR = differentiable(
    "max_pair",
    max_pair,
    max_pair_backward,
    checks=(
        binary(
            "max_pair",
            "{a}.max_pair({b})",
            "torch.maximum({a}, {b})",
            a_domain="grid",
            b_domain="grid",
            # Small integers, so that ties occur (20 draws of 5 values in 4x5); broadcasting is
            # the variant below.
            shapes=(*(c for c in BINARY if c.id != "bcast"), *menu(("4x5", [(4, 5), (4, 5)]))),
            diverges=(
                Diverges(
                    "*/*/random/vjp.a",
                    "burn's max_pair is mask_where(lower): at a tie the whole gradient goes to "
                    "self; torch.maximum gives half to each",
                    HALVED_TIE,
                ),
                Diverges(
                    "*/*/*/vjp.b",
                    "burn's max_pair is mask_where(lower): other gets no gradient at a tie or "
                    "where either is NaN; torch gives it half at a tie, all at a NaN",
                    ALL_TO_SELF,
                ),
                Diverges(
                    "*/*/specials/forward",
                    "burn's max_pair keeps self where other is NaN (the comparison is false); "
                    "torch.maximum propagates the NaN",
                    NAN_OTHER,
                ),
            ),
            # Not fuzzed, as max() is not (harness.opmatrix.fuzz): the fuzzer's values sit on a 1/4
            # grid, where ties, at which the conventions differ, are common.
        ),
        # Broadcasting sums the gradient of `other` over ties and non-ties alike, so no
        # elementwise relation holds there: random values (no tie), no specials (the NaN case
        # is the first check's, and tests/engine/test_gradcheck.py's).
        binary(
            "max_pair[bcast]",
            "{a}.max_pair({b})",
            "torch.maximum({a}, {b})",
            shapes=tuple(c for c in BINARY if c.id == "bcast"),
            specials=False,
        ),
    ),
)
