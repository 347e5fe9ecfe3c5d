"""Pooling and embedding primitives over harness.engine.kernels, each forward beside its rule
and its op-matrix facts: `max_pool1d/2d` (the forward's indices saved for the backward, as
burn-autodiff's `max_pool2d_with_indices` node does), `avg_pool1d/2d`,
`adaptive_avg_pool1d/2d/3d`, `embedding` (gather rows; scatter-add backward).

burn: crates/burn-autodiff/src/ops/module.rs, crates/burn-flex/src/ops/pool.rs (commit
2c06be351006851d42fdb6df16b976f4a82d9747). The kernels' docstrings (harness.engine.kernels.
pool, adaptive_pool, embedding) state the differences from PyTorch; the matrix declares the
ones its cells reach:

- ceil mode keeps a last window that starts in the right padding (flex's
  `pool_output_size`), PyTorch drops it: one more output row and column. The window holds no
  input element, so max pool gives -inf there (no gradient) and average pool 0; the checks
  map PyTorch's output to the engine's layout by padding it with those values.
- max pool and NaN: flex takes a window's first element, then any strictly greater one, so a
  NaN wins only as the first element; PyTorch's CPU kernel takes every NaN.
- average pool backward with `count_include_pad` divides a ceil-mode window clipped by the
  end of the padded input by the whole kernel size, where the forward (and PyTorch's
  gradient) divide by the part inside: burn's gradient is not its forward's derivative there
  (declared per check as `NotDerivative`, read by the float64 finite-difference test). This
  is burn-flex's rule (`avg_pool3d_backward_impl`), the backend the engine follows;
  burn-ndarray's `avg_pool2d_backward` divides by the forward's count and is consistent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import kernels
from .base import Array, Grad, SavedShape, Tracked, differentiable
from .facts import INDEX, TIE_KINKS, Check, Condition, Diverges, Input, NotDerivative, menu

_X2D = menu(("b2-c3-5x5", [(2, 3, 5, 5)]), ("empty", [(0, 3, 5, 5)]))
_X1D = menu(("b2-c3-l7", [(2, 3, 7)]), ("empty", [(0, 3, 7)]))
_CEIL_LAYOUT_NOTE = (
    "flex keeps a last ceil-mode window that starts in the right padding, torch drops it "
    "(torch's output padded with that window's value)"
)
_CEIL_SHAPE = Diverges(
    "*/*/*/shape",
    "ceil mode: flex keeps a last window starting in the right padding (one more output row "
    "and column, harness.engine.kernels._common.pool_output_size); torch drops it",
)


def _check(name: str, engine: str, torch: str, shapes=_X2D, **kw) -> Check:
    return Check(name, engine, torch, (Input("a"),), shapes, **kw)


def _same_except_last(n: int, nd: int) -> Condition:
    """Both values agree except in the last `n` input positions of each of the `nd` spatial
    axes: those that a ceil-mode window clipped by the end of the padded input reads."""
    keep = (Ellipsis, *[slice(None, -n)] * nd)
    where = "row and column" if nd == 2 else "positions"
    last = "last" if n == 1 else f"last {n}"
    return Condition.whole(
        f"differs only in the {last} input {where}",
        lambda t, e: t is not None and e is not None and bool(np.allclose(t[keep], e[keep])),
    )


def _clipped(nd: int, n: int, windows: str) -> tuple[Diverges, NotDerivative]:
    """The two declarations of an avg pool whose ceil-mode last window is clipped by the end
    of the padded input (`windows` names it), with `count_include_pad`: burn's backward
    divides that window's gradient by the whole kernel size (flex `avg_pool3d_backward_impl`:
    `kernel_volume`), its forward by the window's positions inside the padded input
    (`avg_pool3d_impl`: `pad_count`, from `padded_len_avgpool`), as PyTorch does both ways."""
    same = _same_except_last(n, nd)
    torch_side = Diverges(
        "*/*/*/vjp.a",
        f"ceil-mode window clipped by the end of the padded input ({windows}): burn's "
        "backward divides by the kernel size, its forward and torch by the clipped count "
        "(harness.engine.kernels.pool)",
        same,
    )
    own_forward = NotDerivative(
        f"burn-flex's avg_pool3d_backward_impl divides the clipped ceil-mode window ({windows}) "
        "by the kernel size, avg_pool3d_impl divided it by its positions inside the padded "
        "input (commit 2c06be35; burn-ndarray's avg_pool2d_backward uses the forward's count)",
        same,
    )
    return torch_side, own_forward


_NAN_FIRST_ONLY = Condition.only_where(
    "torch's value is NaN (flex's max skips a NaN that is not a window's first element)",
    lambda t, e: np.isnan(t),
)
_MAX_NAN = (
    Diverges(
        "*/*/specials/forward",
        "max pool with NaN: flex takes a NaN only as a window's first element, torch's CPU "
        "kernel takes every NaN (harness.engine.kernels.pool)",
        _NAN_FIRST_ONLY,
    ),
    Diverges(
        "*/*/specials/vjp.a",
        "max pool with NaN: each side routes a window's gradient to the element it took",
        Condition.whole("same total, distributed differently", lambda t, e: _same_total(t, e)),
    ),
)


def _same_total(t, e) -> bool:
    if t is None or e is None:
        return False
    return bool(np.isclose(np.nansum(t), np.nansum(e)))


# The `_with_indices` checks run the same primitive as the plain ones, whose specials cells
# declare the NaN divergence; their own index output at a NaN names the element each side
# took (flex: a NaN only as a window's first element; torch: its last NaN), which no relation
# between the two index arrays alone can state, so they run without the specials value set.

# ---- max pools ------------------------------------------------------------------------------


@dataclass(slots=True)
class SavedIndices:
    indices: Array  # per output element, the flat index in its input plane (-1: none)
    x_shape: tuple[int, ...]


def max_pool2d(x: Array, /, kernel_size, stride, padding, dilation, ceil_mode):
    """burn's `max_pool2d`: the window maxima, their indices saved for the backward."""
    r = kernels.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)
    return r.output, SavedIndices(r.indices, x.shape)


def max_pool2d_backward(s: SavedIndices, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (kernels.max_pool2d_backward(g, s.indices, s.x_shape).x,)


MAX_POOL2D = differentiable(
    "max_pool2d",
    max_pool2d,
    max_pool2d_backward,
    checks=(
        _check(
            "max_pool2d",
            "module_ops.max_pool2d({a}, (2, 2), (2, 2), (0, 0), (1, 1))",
            "torch.nn.functional.max_pool2d({a}, 2, 2)",
            kinks=TIE_KINKS,
            diverges=_MAX_NAN,
        ),
        _check(
            "max_pool2d_with_indices",
            "module_ops.max_pool2d_with_indices({a}, (3, 2), (2, 1), (1, 0), (1, 2))",
            "tuple(torch.nn.functional.max_pool2d({a}, (3, 2), (2, 1), (1, 0), (1, 2), "
            "return_indices=True))",
            kinks=TIE_KINKS,
            specials=False,  # NaN: see the note above the max pools
        ),
        _check(
            "max_pool2d[ceil]",
            "module_ops.max_pool2d({a}, (2, 2), (2, 2), (1, 1), (1, 1), True)",
            "torch.nn.functional.max_pool2d({a}, 2, 2, 1, ceil_mode=True)",
            menu(("b1-c2-5x5", [(1, 2, 5, 5)])),
            torch_layout="torch.nn.functional.pad({out}, (0, 1, 0, 1), value=-float('inf'))",
            layout_note=_CEIL_LAYOUT_NOTE,
            diverges=(_CEIL_SHAPE, *_MAX_NAN),
        ),
    ),
)


def max_pool1d(x: Array, /, kernel_size, stride, padding, dilation, ceil_mode):
    """burn's `max_pool1d` (run as a 2-D pool, as burn-backend does)."""
    r = kernels.max_pool1d(x, kernel_size, stride, padding, dilation, ceil_mode)
    return r.output, SavedIndices(r.indices, x.shape)


def max_pool1d_backward(s: SavedIndices, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (kernels.max_pool1d_backward(g, s.indices, s.x_shape).x,)


MAX_POOL1D = differentiable(
    "max_pool1d",
    max_pool1d,
    max_pool1d_backward,
    checks=(
        _check(
            "max_pool1d",
            "module_ops.max_pool1d({a}, 3, 2, 1, 1)",
            "torch.nn.functional.max_pool1d({a}, 3, 2, 1)",
            _X1D,
            kinks=TIE_KINKS,
            diverges=_MAX_NAN,
        ),
        _check(
            "max_pool1d_with_indices",
            "module_ops.max_pool1d_with_indices({a}, 3, 2, 1, 1)",
            "tuple(torch.nn.functional.max_pool1d({a}, 3, 2, 1, return_indices=True))",
            _X1D,
            kinks=TIE_KINKS,
            specials=False,  # NaN: see the note above the max pools
        ),
    ),
)

# ---- average pools --------------------------------------------------------------------------


# 6x6, kernel 3, stride 2, padding 1: the last window covers padded rows 6..8 of 0..7, so 2
# positions inside the padded input (1 input row) against the kernel's 3.
_CLIPPED_2D = _clipped(2, 1, "6x6, kernel 3, stride 2, padding 1: 2 of 3 positions")
# The reported case (issue 23): length 9, kernel 7, stride 3, padding 3: the last window
# covers padded positions 9..15 of 0..14, 6 of them inside (the last 3 input positions).
_CLIPPED_1D = _clipped(1, 3, "length 9, kernel 7, stride 3, padding 3: 6 of 7 positions")


@dataclass(slots=True)
class SavedWindow:
    x_shape: tuple[int, ...]
    options: dict


def _avg_options(kernel_size, stride, padding, count_include_pad, ceil_mode) -> dict:
    """The keyword arguments the avg-pool kernels take, saved once for the backward."""
    return {
        "kernel_size": kernel_size,
        "stride": stride,
        "padding": padding,
        "count_include_pad": count_include_pad,
        "ceil_mode": ceil_mode,
    }


def avg_pool2d(x: Array, /, kernel_size, stride, padding, count_include_pad, ceil_mode):
    """burn's `avg_pool2d`."""
    opts = _avg_options(kernel_size, stride, padding, count_include_pad, ceil_mode)
    return kernels.avg_pool2d(x, **opts), SavedWindow(x.shape, opts)


def avg_pool2d_backward(s: SavedWindow, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (kernels.avg_pool2d_backward(g, s.x_shape, **s.options).x,)


AVG_POOL2D = differentiable(
    "avg_pool2d",
    avg_pool2d,
    avg_pool2d_backward,
    checks=(
        _check(
            "avg_pool2d",
            "module_ops.avg_pool2d({a}, (3, 3), (2, 2), (1, 1), True)",
            "torch.nn.functional.avg_pool2d({a}, 3, 2, 1, count_include_pad=True)",
        ),
        _check(
            "avg_pool2d[exclude_pad]",
            "module_ops.avg_pool2d({a}, (3, 3), (2, 2), (1, 1), False)",
            "torch.nn.functional.avg_pool2d({a}, 3, 2, 1, count_include_pad=False)",
        ),
        _check(
            "avg_pool2d[ceil]",
            "module_ops.avg_pool2d({a}, (2, 2), (2, 2), (1, 1), True, True)",
            "torch.nn.functional.avg_pool2d({a}, 2, 2, 1, ceil_mode=True)",
            menu(("b1-c2-5x5", [(1, 2, 5, 5)])),
            torch_layout="torch.nn.functional.pad({out}, (0, 1, 0, 1), value=0.0)",
            layout_note=_CEIL_LAYOUT_NOTE,
            diverges=(_CEIL_SHAPE,),
        ),
        _check(
            "avg_pool2d[clipped]",
            "module_ops.avg_pool2d({a}, (3, 3), (2, 2), (1, 1), True, True)",
            "torch.nn.functional.avg_pool2d({a}, 3, 2, 1, ceil_mode=True)",
            menu(("b1-c2-6x6", [(1, 2, 6, 6)])),
            diverges=(_CLIPPED_2D[0],),
            not_derivative=_CLIPPED_2D[1],
        ),
    ),
)


def avg_pool1d(x: Array, /, kernel_size, stride, padding, count_include_pad, ceil_mode):
    """burn's `avg_pool1d` (run as a 2-D pool)."""
    opts = _avg_options(kernel_size, stride, padding, count_include_pad, ceil_mode)
    return kernels.avg_pool1d(x, **opts), SavedWindow(x.shape, opts)


def avg_pool1d_backward(s: SavedWindow, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (kernels.avg_pool1d_backward(g, s.x_shape, **s.options).x,)


AVG_POOL1D = differentiable(
    "avg_pool1d",
    avg_pool1d,
    avg_pool1d_backward,
    checks=(
        _check(
            "avg_pool1d",
            "module_ops.avg_pool1d({a}, 3, 2, 1, True)",
            "torch.nn.functional.avg_pool1d({a}, 3, 2, 1, count_include_pad=True)",
            _X1D,
        ),
        _check(
            "avg_pool1d[clipped]",
            "module_ops.avg_pool1d({a}, 7, 3, 3, True, True)",
            "torch.nn.functional.avg_pool1d({a}, 7, 3, 3, ceil_mode=True)",
            menu(("b1-c2-l9", [(1, 2, 9)])),
            diverges=(_CLIPPED_1D[0],),
            not_derivative=_CLIPPED_1D[1],
        ),
    ),
)

# ---- adaptive average pools -----------------------------------------------------------------


def adaptive_avg_pool2d(x: Array, /, output_size):
    """burn's `adaptive_avg_pool2d` (PyTorch's bins: floor(i*n/out) .. ceil((i+1)*n/out))."""
    return kernels.adaptive_avg_pool2d(x, output_size), SavedShape(x.shape)


def adaptive_avg_pool2d_backward(s: SavedShape, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (kernels.adaptive_avg_pool2d_backward(g, s.shape).x,)


ADAPTIVE_AVG_POOL2D = differentiable(
    "adaptive_avg_pool2d",
    adaptive_avg_pool2d,
    adaptive_avg_pool2d_backward,
    checks=(
        _check(
            "adaptive_avg_pool2d",
            "module_ops.adaptive_avg_pool2d({a}, (2, 3))",
            "torch.nn.functional.adaptive_avg_pool2d({a}, (2, 3))",
            menu(("b2-c3-5x7", [(2, 3, 5, 7)]), ("empty", [(0, 3, 5, 7)])),
        ),
    ),
)


def adaptive_avg_pool1d(x: Array, /, output_size):
    """burn's `adaptive_avg_pool1d`."""
    return kernels.adaptive_avg_pool1d(x, output_size), SavedShape(x.shape)


def adaptive_avg_pool1d_backward(s: SavedShape, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (kernels.adaptive_avg_pool1d_backward(g, s.shape).x,)


ADAPTIVE_AVG_POOL1D = differentiable(
    "adaptive_avg_pool1d",
    adaptive_avg_pool1d,
    adaptive_avg_pool1d_backward,
    checks=(
        _check(
            "adaptive_avg_pool1d",
            "module_ops.adaptive_avg_pool1d({a}, 3)",
            "torch.nn.functional.adaptive_avg_pool1d({a}, 3)",
            _X1D,
        ),
    ),
)


def adaptive_avg_pool3d(x: Array, /, output_size):
    """burn's `adaptive_avg_pool3d` (burn-autodiff's own node; flex's 3-D kernel)."""
    return kernels.adaptive_avg_pool3d(x, output_size), SavedShape(x.shape)


def adaptive_avg_pool3d_backward(s: SavedShape, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (kernels.adaptive_avg_pool3d_backward(g, s.shape).x,)


ADAPTIVE_AVG_POOL3D = differentiable(
    "adaptive_avg_pool3d",
    adaptive_avg_pool3d,
    adaptive_avg_pool3d_backward,
    checks=(
        _check(
            "adaptive_avg_pool3d",
            "module_ops.adaptive_avg_pool3d({a}, (2, 3, 4))",
            "torch.nn.functional.adaptive_avg_pool3d({a}, (2, 3, 4))",
            menu(("b2-c2-3x5x3", [(2, 2, 3, 5, 3)]), ("empty", [(0, 2, 3, 5, 3)])),
        ),
    ),
)

# ---- embedding ------------------------------------------------------------------------------


@dataclass(slots=True)
class SavedRows:
    weight_shape: tuple[int, ...]
    indices: Array


def embedding(weight: Array, /, indices):
    """burn's `embedding(weights, indices)`: the rows `weights[indices]`."""
    return kernels.embedding(weight, indices), SavedRows(weight.shape, indices)


def embedding_backward(s: SavedRows, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (kernels.embedding_backward(g, s.weight_shape, s.indices).weight,)


EMBEDDING = differentiable(
    "embedding",
    embedding,
    embedding_backward,
    checks=(
        Check(
            "embedding",
            "module_ops.embedding({a}, {i})",
            "torch.nn.functional.embedding({i}, {a})",
            (Input("a"), Input("i", INDEX)),
            menu(("5x3-idx2x4", [(5, 3), (2, 4)]), ("empty", [(5, 3), (0, 4)])),
            params={"dim": 0},  # the indices draw rows of the weight
        ),
    ),
)
