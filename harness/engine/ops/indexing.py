"""Indexing primitives: gather along a dim, and the two masked selections."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from .arrays import (
    INT64,
    along_axis_index,
    broadcast_error,
    fmt,
    norm_dim,
    scalar_of,
    scatter_added,
    unbroadcast,
    zero_where,
)
from .base import Array, Grad, Tracked, differentiable
from .facts import BOOL, INDEX, Check, Input, menu


@dataclass(slots=True)
class Gathered:
    shape: tuple[int, ...]  # the input's shape
    index: tuple[np.ndarray, ...]  # the fancy index that picked the elements


def check_indices(op: str, indices: Array, size: int) -> None:
    """Raise IndexError naming `op`, the first bad index and the dim size unless every index is
    in `0..size`: flex panics there ("index {raw} out of bounds for dimension of size
    {dim_size}", `checked_index` in `crates/burn-flex/src/ops/gather_scatter.rs`, burn commit
    2c06be351006851d42fdb6df16b976f4a82d9747). NumPy would wrap a negative index silently."""
    if not indices.size:
        return
    low = indices.min()
    high = indices.max()
    if low < 0 or high >= size:
        raw = low if low < 0 else high
        raise IndexError(f"{op}: index {raw} out of bounds for dimension of size {size}")


# Up to this many indices, Python's min over a list is cheaper than a NumPy reduction (~0.4
# vs ~1.5 us for a batch of 4 targets; even at ~32).
_LIST_MIN_SIZE = 32


def _lowest(indices: Array) -> int:
    """The smallest index (indices non-empty)."""
    if indices.size <= _LIST_MIN_SIZE:
        return min(indices.ravel().tolist())
    return np.minimum.reduce(indices, axis=None)


def gather(x: Array, /, dim: int, indices: Array) -> tuple[Array, Gathered]:
    """`out[i][j] = self[i][indices[i][j]]` along `dim` (indices int64, same rank).

    An index outside `0..size` of `dim` raises IndexError naming the op, the index and the
    size, as flex panics (`check_indices`). PyTorch raises too; NumPy indexing would wrap a
    negative index to the end, which neither burn nor PyTorch does.
    """
    if indices.dtype is not INT64 and indices.dtype != INT64:
        raise TypeError(f"gather: indices must be int64, got {indices.dtype}")
    d = norm_dim("gather", dim, x.ndim)
    if indices.ndim != x.ndim:
        raise ShapeError(
            f"gather: indices shape {fmt(indices.shape)} and tensor shape {fmt(x.shape)} "
            "differ in rank"
        )
    # NumPy raises IndexError past the end but wraps a negative index, so only the negative
    # ones need a pass of their own before indexing: one reduction where check_indices makes
    # two (each ~0.8 us on a loss-sized array; a list's min for a few indices). The errors
    # are check_indices' either way.
    if indices.size and _lowest(indices) < 0:
        check_indices("gather", indices, x.shape[d])
    index = along_axis_index(indices, d)
    try:
        out = x[index]
    except IndexError as exc:
        check_indices("gather", indices, x.shape[d])  # an index past the end of `dim`
        raise IndexError(f"gather: {exc}") from None  # another dim of indices is longer
    return out, Gathered(x.shape, index)


def gather_backward(s: Gathered, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (scatter_added(s.shape, s.index, g),)


GATHER = differentiable(
    "gather",
    gather,
    gather_backward,
    checks=(
        Check(
            "gather",
            "{a}.gather({dim}, {i})",
            "torch.gather({a}, {dim}, {i})",
            (Input("a"), Input("i", INDEX)),
            # The wider index repeats columns, so the backward scatter-add must sum duplicates.
            menu(("3x2", [(3, 2), (3, 2)]), ("3x2->3x4", [(3, 2), (3, 4)])),
            params={"dim": 1},
        ),
    ),
)


@dataclass(slots=True)
class Masked:
    mask: Array  # bool: where the value was replaced


def mask_fill(x: Array, /, mask: Array, value) -> tuple[Array, Masked]:
    """`value` where `mask` (bool) is true, self elsewhere; no gradient where filled."""
    try:
        out = np.where(mask, scalar_of(x, value), x)
    except ValueError:
        raise broadcast_error("mask_fill", x, mask) from None
    if out.shape != x.shape:
        raise broadcast_error("mask_fill", x, mask)
    return out, Masked(mask)


def mask_fill_backward(s: Masked, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (zero_where(s.mask, g),)


MASK_FILL = differentiable(
    "mask_fill",
    mask_fill,
    mask_fill_backward,
    checks=(
        Check(
            "mask_fill",
            "{a}.mask_fill({m}, 2.5)",
            "{a}.masked_fill({m}, 2.5)",
            (Input("a"), Input("m", BOOL)),
            menu(
                ("3x2", [(3, 2), (3, 2)]),
                ("bcast", [(3, 2), (1, 2)]),
                ("empty", [(0, 2), (0, 2)]),
            ),
        ),
    ),
)


@dataclass(slots=True)
class MaskedPair:
    mask: Array  # bool: where the second input was taken
    a: tuple[int, ...]  # the inputs' shapes
    b: tuple[int, ...]


def mask_where(a: Array, b: Array, /, mask: Array) -> tuple[Array, MaskedPair]:
    """`value` where `mask` (bool) is true, self elsewhere (broadcasting)."""
    return np.where(mask, b, a), MaskedPair(mask, a.shape, b.shape)


def mask_where_backward(s: MaskedPair, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    pa, pb = tracked
    mask = s.mask
    return (
        unbroadcast(zero_where(mask, g), s.a) if pa is not None else None,
        unbroadcast(zero_where(~mask, g), s.b) if pb is not None else None,
    )


MASK_WHERE = differentiable(
    "mask_where",
    mask_where,
    mask_where_backward,
    checks=(
        Check(
            "mask_where",
            "{a}.mask_where({m}, {b})",
            "torch.where({m}, {b}, {a})",
            (Input("a"), Input("m", BOOL), Input("b")),
            menu(
                ("3x2", [(3, 2), (3, 2), (3, 2)]),
                ("bcast", [(3, 2), (3, 2), (1, 2)]),
                ("empty", [(0, 2), (0, 2), (0, 2)]),
            ),
        ),
    ),
)
