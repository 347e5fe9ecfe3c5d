"""Matrix product over the last two dims, with broadcast batch dims."""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .arrays import fmt, unbroadcast
from .base import Array, Grad, Tracked, differentiable
from .elementwise import Operands
from .facts import AB, Abs, Check, FuzzBinary, menu, products


def blas_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`np.matmul(a, b)`, through `ndarray.dot` where that is the very same BLAS call.

    For 2-D operands laid out for BLAS (C or Fortran contiguous, so transposed views too) with
    every dim >= 2, both reach the same gemm (or syrk for `a @ a.T`) and give the same bits;
    `dot` skips the gufunc machinery: ~0.3 us instead of ~0.85 us on small inputs. A dim of 1
    sends them to different gemv calls whose bits differ, so those stay on `np.matmul`.
    """
    sa = a.shape
    sb = b.shape
    if (
        len(sa) == 2
        and len(sb) == 2
        and sa[0] > 1
        and sa[1] > 1
        and sb[1] > 1
        and a.flags.forc
        and b.flags.forc
    ):
        return a.dot(b)
    return np.matmul(a, b)


def matmul(a: Array, b: Array, /) -> tuple[Array, Operands]:
    """Matrix product over the last two dims; leading (batch) dims broadcast."""
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        raise ShapeError(
            f"matmul: shapes {fmt(a.shape)} and {fmt(b.shape)} are incompatible "
            "(need rank >= 2 and lhs.shape[-1] == rhs.shape[-2])"
        )
    return blas_matmul(a, b), Operands(a, b)


def matmul_backward(s: Operands, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    a = s.a
    b = s.b
    pa, pb = tracked
    # swapaxes is a view: BLAS reads the transposed strides, no copy is materialized.
    ga = gb = None
    if pa is not None:
        ga = blas_matmul(g, b.swapaxes(-1, -2))
        if ga.shape != a.shape:  # batch dims were broadcast
            ga = unbroadcast(ga, a.shape)
    if pb is not None:
        gb = blas_matmul(a.swapaxes(-1, -2), g)
        if gb.shape != b.shape:
            gb = unbroadcast(gb, b.shape)
    return ga, gb


def _matmul_interval(a: Abs, b: Abs) -> Abs | None:
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        return None
    k = a.shape[1]
    p = products(a, b)
    return Abs((a.shape[0], b.shape[1]), k * min(min(p), 0), k * max(max(p), 0))


MATMUL = differentiable(
    "matmul",
    matmul,
    matmul_backward,
    checks=(
        Check(
            "matmul",
            "{a}.matmul({b})",
            "torch.matmul({a}, {b})",
            AB,
            menu(
                ("2x3@3x4", [(2, 3), (3, 4)]),
                ("batch", [(2, 2, 3), (3, 4)]),
                ("bcast", [(2, 2, 3), (1, 3, 4)]),
                ("k0", [(2, 0), (0, 3)]),
                ("empty", [(0, 3), (3, 4)]),
            ),
            fuzz=FuzzBinary(_matmul_interval),
        ),
    ),
)
