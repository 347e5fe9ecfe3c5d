"""Shape primitives: reshape (which unsqueeze, squeeze and flatten are built on), swap_dims
(transpose), slice with burn's ranges, and cat."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from .arrays import dtype_error, fmt, norm_dim
from .base import Array, Grad, SavedShape, Tracked, differentiable
from .facts import (
    AB,
    TWO_D,
    UNARY,
    Abs,
    Check,
    FuzzBinary,
    FuzzStructural,
    Input,
    each_gap,
    menu,
    size,
    unary,
)


def reshape(x: Array, /, shape) -> tuple[Array, SavedShape]:
    """A tensor with the same values in `shape` (one entry may be -1)."""
    try:
        out = x.reshape(tuple(shape))
    except ValueError:
        raise ShapeError(
            f"reshape: cannot reshape {fmt(x.shape)} into {fmt(tuple(shape))}"
        ) from None
    return out, SavedShape(x.shape)


def reshape_backward(s: SavedShape, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (g.reshape(s.shape),)


def _ranked(result):
    """A structural fuzz step that needs an operand of rank >= 1."""
    return lambda x, dim: result(x, dim) if x.shape else None


RESHAPE = differentiable(
    "reshape",
    reshape,
    reshape_backward,
    checks=(
        unary(
            "reshape",
            "{a}.reshape([-1])",
            "torch.reshape({a}, (-1,))",
            fuzz=FuzzStructural(_ranked(lambda x, dim: Abs((size(x.shape),), x.lo, x.hi))),
        ),
        unary("unsqueeze", "{a}.unsqueeze()", "torch.unsqueeze({a}, 0)"),
        unary(
            "unsqueeze_dim",
            "{a}.unsqueeze_dim({dim})",
            "torch.unsqueeze({a}, {dim})",
            shapes=UNARY[1:],
            params={"dim": 1},
            fuzz=FuzzStructural(
                _ranked(lambda x, dim: Abs((*x.shape[:dim], 1, *x.shape[dim:]), x.lo, x.hi)),
                each_gap,
            ),
        ),
        unary(
            "squeeze",
            "{a}.squeeze()",
            "torch.squeeze({a})",
            shapes=menu(("3x1", [(3, 1)]), ("1x3x1", [(1, 3, 1)]), ("1", [(1,)])),
            fuzz=FuzzStructural(
                lambda x, dim: (
                    Abs(tuple(n for n in x.shape if n != 1), x.lo, x.hi) if 1 in x.shape else None
                )
            ),
        ),
        unary(
            "squeeze_dim",
            "{a}.squeeze_dim({dim})",
            "torch.squeeze({a}, {dim})",
            shapes=menu(("1x3", [(1, 3)]), ("1x0", [(1, 0)])),
            params={"dim": 0},
        ),
        unary("flatten", "{a}.flatten()", "torch.flatten({a})"),
    ),
)


@dataclass(slots=True)
class Swapped:
    dim1: int
    dim2: int


def swap_dims(x: Array, /, dim1: int, dim2: int) -> tuple[Array, Swapped]:
    """Swap two dims (a view of the same values)."""
    a = norm_dim("swap_dims", dim1, x.ndim)
    b = norm_dim("swap_dims", dim2, x.ndim)
    return x.swapaxes(a, b), Swapped(a, b)


def swap_dims_backward(s: Swapped, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (g.swapaxes(s.dim1, s.dim2),)


def _matrix(result):
    """A structural fuzz step that needs an operand of rank >= 2."""
    return lambda x, dim: result(x) if len(x.shape) >= 2 else None


SWAP_DIMS = differentiable(
    "swap_dims",
    swap_dims,
    swap_dims_backward,
    checks=(
        unary(
            "swap_dims",
            "{a}.swap_dims(0, 1)",
            "torch.transpose({a}, 0, 1)",
            shapes=TWO_D,
            fuzz=FuzzStructural(
                _matrix(lambda x: Abs((x.shape[1], x.shape[0], *x.shape[2:]), x.lo, x.hi))
            ),
        ),
        # transpose() is swap_dims(-2, -1).
        unary(
            "transpose",
            "{a}.transpose()",
            "torch.transpose({a}, -2, -1)",
            shapes=TWO_D,
            fuzz=FuzzStructural(
                _matrix(lambda x: Abs((*x.shape[:-2], x.shape[-1], x.shape[-2]), x.lo, x.hi))
            ),
        ),
    ),
)


@dataclass(slots=True)
class Sliced:
    shape: tuple[int, ...]  # the input's shape
    index: tuple[slice, ...]


def slice_view(x: Array, /, ranges) -> tuple[Array, Sliced]:
    """Slice with one range per leading dim: `(start, end)`, `slice`, int `i` (i..i+1,
    dim kept) or None (whole dim). Negative bounds count from the end; a range out of
    bounds or selecting nothing raises (Python would clamp it silently)."""
    index = slice_index("slice", ranges, x.shape)
    return x[index], Sliced(x.shape, index)


def slice_backward(s: Sliced, g: Array, tracked: Tracked) -> tuple[Grad]:
    z = np.zeros(s.shape, dtype=g.dtype)
    z[s.index] = g
    return (z,)


def slice_index(op: str, ranges, shape: tuple[int, ...]) -> tuple[slice, ...]:
    """burn's ranges (one per leading dim, see `slice_view`) as a NumPy index; too many
    ranges, or one out of bounds or empty, raise a ShapeError naming `op`."""
    if len(ranges) > len(shape):
        raise ShapeError(f"{op}: {len(ranges)} ranges for shape {fmt(shape)}")
    return tuple(_to_slice(op, r, axis, shape) for axis, r in enumerate(ranges))


def _to_slice(op: str, r, axis: int, shape: tuple[int, ...]) -> slice:
    """One burn range as a Python slice; like burn, out-of-bounds or empty ranges raise."""
    if r is None:
        s = slice(None)
    elif isinstance(r, slice):
        s = r
    elif isinstance(r, int | np.integer):
        s = slice(r, r + 1 if r != -1 else None)
    else:
        start, end = r
        s = slice(start, end)
    n = shape[axis]
    in_bounds = all(b is None or -n <= b <= n for b in (s.start, s.stop))
    if not in_bounds or (n and not len(range(*s.indices(n)))):
        raise ShapeError(
            f"{op}: range {r!r} is out of bounds or empty for dim {axis} of shape {fmt(shape)}"
        )
    return s


SLICE = differentiable(
    "slice",
    slice_view,
    slice_backward,
    checks=(
        unary(
            "slice",
            "{a}.slice([(0, 2), None])",
            "{a}[0:2, :]",
            shapes=TWO_D[:2],
            fuzz=FuzzStructural(
                _matrix(lambda x: Abs((2, *x.shape[1:]), x.lo, x.hi) if x.shape[0] >= 2 else None)
            ),
        ),
        unary("slice[int]", "{a}.slice([1, (-1, None)])", "{a}[1:2, -1:]", shapes=TWO_D[:2]),
    ),
)


@dataclass(slots=True)
class Concatenated:
    dim: int
    sizes: list[int]  # each input's size along dim


def cat(*arrays: Array, dim: int) -> tuple[Array, Concatenated]:
    """Concatenate along `dim`; all other dims must match."""
    if not arrays:
        raise ValueError("cat: needs at least one tensor")
    first = arrays[0]
    for a in arrays[1:]:
        if a.dtype != first.dtype:
            raise dtype_error("cat", first, a)
    d = norm_dim("cat", dim, first.ndim)
    try:
        out = np.concatenate(arrays, axis=d)
    except ValueError:
        shapes = ", ".join(fmt(a.shape) for a in arrays)
        raise ShapeError(f"cat: shapes {shapes} differ outside dim {dim}") from None
    return out, Concatenated(d, [a.shape[d] for a in arrays])


def cat_backward(s: Concatenated, g: Array, tracked: Tracked) -> tuple[Grad, ...]:
    parts = np.split(g, np.cumsum(s.sizes)[:-1], axis=s.dim)
    return tuple(p if t is not None else None for p, t in zip(parts, tracked, strict=True))


def _cat_interval(a: Abs, b: Abs) -> Abs | None:
    if not a.shape or len(a.shape) != len(b.shape) or a.shape[1:] != b.shape[1:]:
        return None
    return Abs((a.shape[0] + b.shape[0], *a.shape[1:]), min(a.lo, b.lo), max(a.hi, b.hi))


CAT = differentiable(
    "cat",
    cat,
    cat_backward,
    checks=(
        Check(
            "cat",
            "Tensor.cat([{a}, {b}], {dim})",
            "torch.cat([{a}, {b}], {dim})",
            AB,
            menu(
                ("3x2+1x2", [(3, 2), (1, 2)]),
                ("3+2", [(3,), (2,)]),
                ("0x2+3x2", [(0, 2), (3, 2)]),
            ),
            params={"dim": 0},
            fuzz=FuzzBinary(_cat_interval),
        ),
    ),
)


# `harness.engine.module_ops.pad` is burn's `Tensor::pad` (constant mode): a composite of `cat`
# and constant tensors, so no rule of its own; its check holds it to PyTorch's `F.pad`.
COMPOSITE_CHECKS: tuple[Check, ...] = (
    Check(
        "pad",
        "module_ops.pad({a}, (1, 2, 0, 1), 0.5)",
        "torch.nn.functional.pad({a}, (1, 2, 0, 1), value=0.5)",
        (Input("a"),),
        menu(("3x2", [(3, 2)]), ("2x3x4", [(2, 3, 4)]), ("1x0x2", [(1, 0, 2)])),
    ).of("pad"),
)
