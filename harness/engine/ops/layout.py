"""Layout primitives burn-autodiff has its own node for: permute, flip, expand, repeat_dim and
unfold; and the op-matrix facts of the shape functions burn-tensor composes from primitives
(stack, narrow, chunk, split, roll, repeat, movedim, squeeze_dims, unsqueeze_dims, tril, triu:
`crates/burn-tensor/src/tensor/api/{base,numeric}.rs`), whose gradients are those primitives'.

Forwards follow flex (`crates/burn-flex/src/ops/{flip,expand,repeat_dim,unfold}.rs`), rules
burn-autodiff (`crates/burn-autodiff/src/ops/tensor.rs`: `float_permute`, `float_flip`,
`float_expand`, `float_repeat_dim`, `float_unfold`), burn commit
2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from .arrays import fmt, norm_dim
from .base import Array, Grad, SavedShape, Tracked, differentiable
from .facts import (
    AB,
    TWO_D,
    Check,
    Condition,
    Diverges,
    NotDerivative,
    composite,
    menu,
    unary,
)

# ---- permute --------------------------------------------------------------------------------


@dataclass(slots=True)
class Permuted:
    axes: tuple[int, ...]


def permute_axes(op: str, axes, ndim: int) -> tuple[int, ...]:
    """`axes` with negative entries counted from the end; burn's `TensorCheck::permute`
    messages when one is out of range or they repeat."""
    if len(axes) != ndim:
        raise ShapeError(f"{op}: {len(axes)} axes for a tensor of rank {ndim}")
    fixed = tuple(norm_dim(op, a, ndim) for a in axes)
    if len(set(fixed)) != ndim:
        raise ShapeError(f"{op}: The axes must be unique. The axes '{list(fixed)}' are not unique.")
    return fixed


def permute(x: Array, /, axes) -> tuple[Array, Permuted]:
    """The dims reordered: dim i of the result is dim `axes[i]` of self (negative axes count
    from the end; one axis per dim, each once, as burn's `permute` checks)."""
    fixed = permute_axes("permute", axes, x.ndim)
    return x.transpose(fixed), Permuted(fixed)


def permute_backward(s: Permuted, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn-autodiff's `PermuteDim`: permute the gradient by the inverse permutation.
    return (g.transpose(np.argsort(s.axes)),)


PERMUTE = differentiable(
    "permute",
    permute,
    permute_backward,
    checks=(
        unary(
            "permute",
            "{a}.permute([2, 0, 1])",
            "torch.permute({a}, (2, 0, 1))",
            shapes=menu(("2x3x4", [(2, 3, 4)]), ("0x3x2", [(0, 3, 2)])),
        ),
        # movedim is burn-tensor's sugar for permute (api/base.rs `movedim`).
        unary(
            "movedim",
            "{a}.movedim(0, -1)",
            "torch.movedim({a}, 0, -1)",
            shapes=menu(("2x3x4", [(2, 3, 4)]), ("3x2", [(3, 2)])),
        ),
        unary(
            "movedim[pairs]",
            "{a}.movedim([0, 1], [2, 0])",
            "torch.movedim({a}, (0, 1), (2, 0))",
            shapes=menu(("2x3x4", [(2, 3, 4)])),
        ),
    ),
)

# ---- flip -----------------------------------------------------------------------------------


@dataclass(slots=True)
class Flipped:
    axes: tuple[int, ...]


def flip(x: Array, /, axes) -> tuple[Array, Flipped]:
    """The values in reverse order along each of `axes` (negative axes count from the end;
    repeated axes raise, as burn's `TensorCheck::flip`)."""
    fixed = tuple(norm_dim("flip", a, x.ndim) for a in axes)
    if len(set(fixed)) != len(fixed):
        raise ShapeError(f"flip: The axes must be unique. The axes '{list(fixed)}' are not unique.")
    return np.flip(x, fixed), Flipped(fixed)


def flip_backward(s: Flipped, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn-autodiff's `FlipDim`: flip the gradient along the same axes.
    return (np.flip(g, s.axes),)


FLIP = differentiable(
    "flip",
    flip,
    flip_backward,
    checks=(
        unary(
            "flip",
            "{a}.flip([0, -1])",
            "torch.flip({a}, (0, -1))",
            shapes=menu(("3x2", [(3, 2)]), ("2x3x2", [(2, 3, 2)]), ("0x2", [(0, 2)])),
        ),
    ),
)

# ---- expand ---------------------------------------------------------------------------------


def expand_shape(shape: tuple[int, ...], target) -> tuple[int, ...]:
    """burn's `BroadcastArgs` for an array of sizes: -1 keeps the size (aligned from the
    right); the target has at least the tensor's rank, no size is 0 or below -1, and each
    size of the tensor is 1 or the target's (`TensorCheck::expand`)."""
    target = tuple(int(n) for n in target)
    if len(target) < len(shape):
        raise ShapeError(
            "expand: Broadcast arguments must be greater than the number of dimensions! "
            f"got {len(target)}, need at least {len(shape)}"
        )
    if any(n < -1 or n == 0 for n in target):
        bad = next(n for n in target if n < -1 or n == 0)
        raise ShapeError(f"expand: Broadcast arguments must be positive or -1! Got {bad}")
    padded = (1,) * (len(target) - len(shape)) + shape
    out = tuple(p if n == -1 else n for n, p in zip(target, padded, strict=True))
    for n, p in zip(out, padded, strict=True):
        if p not in (1, n):
            raise ShapeError(
                "expand: The provided tensor can't be broadcasted to the target shape. "
                f"Tensor shape {fmt(shape)}, Target shape {fmt(out)}."
            )
    return out


def expand(x: Array, /, shape) -> tuple[Array, SavedShape]:
    """Broadcast to `shape` (see `expand_shape`; -1 keeps a size), a read-only view."""
    return np.broadcast_to(x, expand_shape(x.shape, shape)), SavedShape(x.shape)


def expand_backward(s: SavedShape, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn-autodiff's `ExpandDim`: sum over the dims that were 1 (or added) and grew, then
    # reshape to the input's shape.
    lead = g.ndim - len(s.shape)
    padded = (1,) * lead + s.shape
    axes = tuple(i for i, n in enumerate(padded) if n == 1 and g.shape[i] != 1)
    summed = np.add.reduce(g, axis=axes, keepdims=True) if axes else g
    return (summed.reshape(s.shape),)


EXPAND = differentiable(
    "expand",
    expand,
    expand_backward,
    checks=(
        unary(
            "expand",
            "{a}.expand([2, 3, -1])",
            "{a}.expand(2, 3, -1)",
            shapes=menu(("3x2", [(3, 2)]), ("1x2", [(1, 2)]), ("3x1", [(3, 1)])),
        ),
    ),
)

# ---- repeat_dim -----------------------------------------------------------------------------


@dataclass(slots=True)
class Repeated:
    shape: tuple[int, ...]  # the input's shape
    dim: int
    times: int


def repeat_dim(x: Array, /, dim: int, times: int) -> tuple[Array, Repeated]:
    """`times` copies of self one after another along `dim` (flex tiles: `[a, b]` twice is
    `[a, b, a, b]`, torch's `repeat`, not `repeat_interleave`); `times = 0` gives an empty
    dim.

    PyTorch difference, burn's own gradient: burn-autodiff's `Repeat` backward reshapes the
    gradient to `[..., size, times, ...]` and sums over `times`, which is the layout of an
    interleaved repeat; for the tiled forward it adds up the wrong elements when the dim's size
    is above 1 and the cotangent varies along it (burn's tests `should_diff_repeat*` use a
    cotangent constant along the dim, where the two agree). The engine reproduces burn's rule;
    torch sums each element's copies.
    """
    d = norm_dim("repeat_dim", dim, x.ndim)
    if times < 0:
        raise ShapeError(f"repeat_dim: times must be >= 0, got {times}")
    reps = [1] * x.ndim
    reps[d] = times
    return np.tile(x, reps), Repeated(x.shape, d, times)


def repeat_dim_backward(s: Repeated, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn-autodiff's `Repeat`, literally: [.., n * times, ..] -> [.., n, times, ..], sum the
    # `times` axis (see the forward's docstring: an interleaved layout, not flex's).
    d, times = s.dim, s.times
    size = s.shape[d]
    if size == 0 or times == 0:  # nothing was copied: burn returns an untracked empty tensor
        return (np.zeros(s.shape, dtype=g.dtype),)
    if size > 1:
        split = [*s.shape[: d + 1], times, *s.shape[d + 1 :]]
        return (np.add.reduce(g.reshape(split), axis=d + 1),)
    return (np.add.reduce(g, axis=d, keepdims=True),)


_REPEAT_LAYOUT = Diverges(
    "*/*/*/vjp.a",
    "burn-autodiff's repeat_dim backward sums the gradient as if the copies were interleaved "
    "([.., n, times, ..]); flex tiles them, so where the dim's size is above 1 each element "
    "gets other elements' cotangents; torch sums its own copies "
    "(harness.engine.ops.layout.repeat_dim)",
    Condition.whole("the same total, distributed differently", lambda t, e: _same_sum(t, e)),
)


def _same_sum(t, e) -> bool:
    return t is not None and e is not None and bool(np.isclose(np.sum(t), np.sum(e)))


# The same rule against the engine's own forward (the float64 finite-difference test): the
# VJP puts the right total on the wrong elements.
_NOT_TILED = NotDerivative(
    "burn-autodiff's repeat_dim backward sums the cotangent in the interleaved layout "
    "[.., n, times, ..] while flex's forward tiles (burn commit 2c06be35)",
    _REPEAT_LAYOUT.condition,
)


REPEAT_DIM = differentiable(
    "repeat_dim",
    repeat_dim,
    repeat_dim_backward,
    checks=(
        unary(
            "repeat_dim",
            "{a}.repeat_dim(1, 3)",
            "{a}.repeat(1, 3)",
            shapes=menu(("3x2", [(3, 2)]), ("0x2", [(0, 2)])),
            diverges=(_REPEAT_LAYOUT,),
            not_derivative=_NOT_TILED,
        ),
        # Where the dim's size is 1 burn's rule is right: no divergence.
        unary(
            "repeat_dim[1]",
            "{a}.repeat_dim(1, 3)",
            "{a}.repeat(1, 3)",
            shapes=menu(("3x1", [(3, 1)]), ("1x1", [(1, 1)])),
        ),
        # repeat(sizes) is repeat_dim per dim with a size above 1 (api/base.rs `repeat`).
        unary(
            "repeat",
            "{a}.repeat([2, 1])",
            "{a}.repeat(2, 1)",
            shapes=menu(("3x2", [(3, 2)])),
            diverges=(
                Diverges(
                    "*/3x2/*/vjp.a",
                    "repeat is repeat_dim per dim: burn's repeat_dim backward (interleaved "
                    "layout) on a dim of size above 1 (harness.engine.ops.layout.repeat_dim)",
                    _REPEAT_LAYOUT.condition,
                ),
            ),
            not_derivative=_NOT_TILED,
        ),
        # A dim of size 1 repeated: burn's rule is right there.
        unary(
            "repeat[1]", "{a}.repeat([2, 1])", "{a}.repeat(2, 1)", shapes=menu(("1x2", [(1, 2)]))
        ),
    ),
)

# ---- unfold ---------------------------------------------------------------------------------


@dataclass(slots=True)
class Unfolded:
    shape: tuple[int, ...]  # the input's shape
    dim: int
    size: int
    step: int


def unfold(x: Array, /, dim: int, size: int, step: int) -> tuple[Array, Unfolded]:
    """The windows of `size` elements every `step` along `dim`: that dim becomes the window
    count `(n - size) // step + 1` (0 when `size > n`) and a last dim of `size` is appended,
    as flex's `unfold` and torch's `Tensor.unfold`.

    PyTorch difference: a window longer than the dim gives 0 windows, as burn's
    `calculate_unfold_windows` (`crates/burn-backend/src/backend/ops/modules/unfold.rs`);
    torch raises.
    """
    d = norm_dim("unfold", dim, x.ndim)
    if size < 1 or step < 1:
        raise ShapeError(f"unfold: size and step must be >= 1, got size {size}, step {step}")
    n = x.shape[d]
    windows = (n - size) // step + 1 if n >= size else 0
    starts = np.arange(windows) * step
    index = starts[:, None] + np.arange(size)  # [windows, size]
    taken = np.take(x, index.reshape(-1), axis=d)
    shape = (*x.shape[:d], windows, size, *x.shape[d + 1 :])
    out = np.moveaxis(taken.reshape(shape), d + 1, -1)
    return np.ascontiguousarray(out), Unfolded(x.shape, d, size, step)


def unfold_backward(s: Unfolded, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn-autodiff's `Unfold`: for each window in order, add its gradient (the last axis moved
    # back to `dim`) into that window's slice of a zero gradient.
    d = s.dim
    z = np.zeros(s.shape, dtype=g.dtype)
    windows = g.shape[d]
    for w in range(windows):
        window = np.moveaxis(np.take(g, w, axis=d), -1, d)
        index = [slice(None)] * len(s.shape)
        index[d] = slice(w * s.step, w * s.step + s.size)
        z[tuple(index)] += window
    return (z,)


UNFOLD = differentiable(
    "unfold",
    unfold,
    unfold_backward,
    checks=(
        # Overlapping windows (step < size), so the backward adds copies.
        unary(
            "unfold",
            "{a}.unfold(1, 3, 2)",
            "{a}.unfold(1, 3, 2)",
            shapes=menu(("2x7", [(2, 7)]), ("2x6x3", [(2, 6, 3)]), ("2x2", [(2, 2)])),
            diverges=(
                Diverges(
                    "*/2x2/*/error",
                    "unfold with a window longer than the dim: burn's calculate_unfold_windows "
                    "gives 0 windows (an empty dim), torch raises "
                    "(harness.engine.ops.layout.unfold)",
                ),
            ),
        ),
    ),
)

# ---- composites: checks only ----------------------------------------------------------------


COMPOSITE_CHECKS: tuple[Check, ...] = tuple(
    composite(c)
    for c in (
        Check(
            "stack",
            "Tensor.stack([{a}, {b}], {dim})",
            "torch.stack([{a}, {b}], {dim})",
            AB,
            menu(("3x2", [(3, 2), (3, 2)]), ("0x2", [(0, 2), (0, 2)])),
            params={"dim": 1},
        ),
        Check(
            "stack[-1]",
            "Tensor.stack([{a}, {b}], {dim})",
            "torch.stack([{a}, {b}], {dim})",
            AB,
            menu(("3x2", [(3, 2), (3, 2)]), ("3", [(3,), (3,)])),
            params={"dim": -1},
        ),
        unary("narrow", "{a}.narrow(1, 1, 2)", "torch.narrow({a}, 1, 1, 2)", shapes=TWO_D[1:2]),
        unary(
            "narrow[0]",
            "{a}.narrow(0, 1, 2)",
            "torch.narrow({a}, 0, 1, 2)",
            shapes=menu(("3x2", [(3, 2)]), ("3", [(3,)])),
        ),
        # 7 into 3: burn's chunk size is 7 // 3 + 1 = 3, then the remainder 7 % 3 = 1.
        unary(
            "chunk",
            "{a}.chunk(3, 0)",
            "torch.chunk({a}, 3, 0)",
            shapes=menu(("7x2", [(7, 2)]), ("6x2", [(6, 2)]), ("2x2", [(2, 2)])),
        ),
        unary(
            "split",
            "{a}.split(2, 1)",
            "torch.split({a}, 2, 1)",
            shapes=menu(("2x5", [(2, 5)]), ("2x4", [(2, 4)]), ("0x3", [(0, 3)])),
        ),
        unary(
            "split_with_sizes",
            "{a}.split_with_sizes([1, 0, 3], 1)",
            # burn skips the empty piece; torch keeps it.
            "tuple(p for p in torch.split({a}, [1, 0, 3], 1) if p.shape[1])",
            shapes=menu(("2x4", [(2, 4)]), ("0x4", [(0, 4)])),
        ),
        # burn's roll moves the element at `shift` to the front, torch's to the back: burn's
        # `roll_dim(s, d)` is torch's `roll(-s, d)` (burn's tests `test_roll*`).
        unary(
            "roll",
            "{a}.roll([1, -3], [0, 1])",
            "torch.roll({a}, (-1, 3), (0, 1))",
            shapes=menu(("3x2", [(3, 2)]), ("2x3x2", [(2, 3, 2)]), ("0x2", [(0, 2)])),
        ),
        unary(
            "roll_dim",
            "{a}.roll_dim(2, -1)",
            "torch.roll({a}, -2, -1)",
            shapes=menu(("3x5", [(3, 5)]), ("4", [(4,)])),
        ),
        unary(
            "squeeze_dims",
            "{a}.squeeze_dims([0, -1])",
            "torch.squeeze({a}, (0, -1))",
            shapes=menu(("1x3x1", [(1, 3, 1)]), ("1x0x1", [(1, 0, 1)])),
        ),
        unary(
            "squeeze_dims[all]",
            "{a}.squeeze_dims([])",
            "torch.squeeze({a})",
            shapes=menu(("1x3x1", [(1, 3, 1)]), ("3x1x2", [(3, 1, 2)])),
        ),
        unary(
            "unsqueeze_dims",
            "{a}.unsqueeze_dims([0, -1])",
            "{a}.unsqueeze(0).unsqueeze(-1)",
            shapes=menu(("3x2", [(3, 2)]), ("3", [(3,)])),
        ),
        unary(
            "unsqueeze_dims[repeated]",
            "{a}.unsqueeze_dims([1, 1])",
            "{a}.unsqueeze(1).unsqueeze(1)",
            shapes=menu(("3x2", [(3, 2)])),
        ),
        unary(
            "tril",
            "{a}.tril(0)",
            "torch.tril({a}, 0)",
            shapes=menu(("3x4", [(3, 4)]), ("2x3x3", [(2, 3, 3)]), ("0x2", [(0, 2)])),
        ),
        unary("tril[-1]", "{a}.tril(-1)", "torch.tril({a}, -1)", shapes=menu(("4x3", [(4, 3)]))),
        unary("t", "{a}.t()", "{a}.transpose(-2, -1)", shapes=TWO_D),
        unary(
            "pad[constant]",
            "{a}.pad((1, 2, 0, 1), 0.5)",
            "torch.nn.functional.pad({a}, (1, 2, 0, 1), value=0.5)",
            shapes=menu(("3x2", [(3, 2)]), ("2x3x4", [(2, 3, 4)])),
        ),
        unary(
            "pad[reflect]",
            "{a}.pad((2, 1, 1, 2), 'reflect')",
            "torch.nn.functional.pad({a}, (2, 1, 1, 2), mode='reflect')",
            shapes=menu(("1x3x4", [(1, 3, 4)]), ("2x3x3", [(2, 3, 3)])),
        ),
        unary(
            "pad[edge]",
            "{a}.pad([(1, 2), (2, 0)], 'edge')",
            "torch.nn.functional.pad({a}, (2, 0, 1, 2), mode='replicate')",
            shapes=menu(("1x3x4", [(1, 3, 4)]), ("2x1x2", [(2, 1, 2)])),
        ),
        unary(
            "slice_dim",
            "{a}.slice_dim(1, (1, 3))",
            "{a}[:, 1:3]",
            shapes=menu(("2x4", [(2, 4)])),
        ),
        unary("select_dim", "{a}.select_dim(0, 1)", "{a}[1]", shapes=menu(("3x2", [(3, 2)]))),
        unary(
            "slice_fill",
            "{a}.slice_fill([(0, 2), None], 0.5)",
            "torch.cat([torch.full_like({a}[0:2], 0.5), {a}[2:]])",
            shapes=menu(("3x2", [(3, 2)])),
        ),
        unary(
            "sum_dims_squeeze",
            "{a}.sum_dims_squeeze([0, 2])",
            "torch.sum({a}, (0, 2))",
            shapes=menu(("2x3x2", [(2, 3, 2)])),
        ),
        unary(
            "iter_dim",
            "tuple({a}.iter_dim(1))",
            "tuple(torch.split({a}, 1, 1))",
            shapes=menu(("2x3", [(2, 3)])),
        ),
        unary(
            "triu",
            "{a}.triu(1)",
            "torch.triu({a}, 1)",
            shapes=menu(("3x4", [(3, 4)]), ("2x3x3", [(2, 3, 3)])),
        ),
    )
)
