"""Matrix product over the last two dims, with broadcast batch dims, and burn's fused `linear`
(`x @ weight + bias` as one graph node)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from .arrays import broadcast_error, dtype_error, fmt, unbroadcast
from .base import Array, Grad, Tracked, differentiable
from .elementwise import Operands
from .facts import AB, Abs, Check, FuzzBinary, Input, menu, products


def blas_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`np.matmul(a, b)`, through `ndarray.dot` where that is the very same BLAS call.

    For 2-D operands laid out for BLAS (C or Fortran contiguous, so transposed views too) with
    every dim >= 2, both reach the same gemm (or syrk for `a @ a.T`) and give the same bits;
    `dot` skips the gufunc machinery: ~0.3 us instead of ~0.85 us on small inputs. A dim of 1
    sends them to different gemv calls whose bits differ, so those stay on `np.matmul`.
    """
    if _gemm_ready(a, b):
        return a.dot(b)
    return np.matmul(a, b)


def blas_matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """`blas_matmul(a, b)` written into `out` (C-contiguous, the product's shape and dtype):
    the same gemm or gufunc call on the same operands, so the same bits (the fused recurrent
    steps of harness.engine.nn.rnn.fused write the gates side by side this way)."""
    if _gemm_ready(a, b):
        return a.dot(b, out=out)
    return np.matmul(a, b, out=out)


def _gemm_ready(a: np.ndarray, b: np.ndarray) -> bool:
    sa = a.shape
    sb = b.shape
    return (
        len(sa) == 2
        and len(sb) == 2
        and sa[0] > 1
        and sa[1] > 1
        and sb[1] > 1
        and a.flags.forc
        and b.flags.forc
    )


def matmul(a: Array, b: Array, /) -> tuple[Array, Operands]:
    """Matrix product over the last two dims; leading (batch) dims broadcast."""
    _check_product(a, b)
    return blas_matmul(a, b), Operands(a, b)


def _check_product(a: Array, b: Array) -> None:
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        raise ShapeError(
            f"matmul: shapes {fmt(a.shape)} and {fmt(b.shape)} are incompatible "
            "(need rank >= 2 and lhs.shape[-1] == rhs.shape[-2])"
        )


def matmul_backward(s: Operands, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    pa, pb = tracked
    return _product_grads(s.a, s.b, g, pa is not None, pb is not None)


def _product_grads(a: Array, b: Array, g: Array, need_a: bool, need_b: bool):
    """The gradients of `a @ b` given `g`, each only when needed (matmul's and linear's)."""
    # swapaxes is a view: BLAS reads the transposed strides, no copy is materialized.
    ga = gb = None
    if need_a:
        ga = blas_matmul(g, b.swapaxes(-1, -2))
        if ga.shape != a.shape:  # batch dims were broadcast
            ga = unbroadcast(ga, a.shape)
    if need_b:
        if _sum_per_item(a, b, g):
            return ga, _summed_products(a, g)
        gb = blas_matmul(a.swapaxes(-1, -2), g)
        if gb.shape != b.shape:
            gb = unbroadcast(gb, b.shape)
    return ga, gb


# From this many elements of a 2-D right operand on, its gradient under batch dims is summed
# one product at a time (measured with one OpenBLAS thread, batch 16: slower below 256x256
# float32, 1.8x faster at 512x512).
_SUMMED_PRODUCT_SIZE = 1 << 16


def _sum_per_item(a: Array, b: Array, g: Array) -> bool:
    # Floats only: unbroadcast's reduction would widen an integer sum, the loop would not.
    return (
        b.ndim == 2
        and a.ndim > 2
        and b.size >= _SUMMED_PRODUCT_SIZE
        and 0 not in a.shape[:-2]
        and a.dtype.kind == "f"
        and g.dtype == a.dtype
    )


def _summed_products(a: Array, g: Array) -> Array:
    """`unbroadcast(a.swapaxes(-1, -2) @ g, b.shape)` for a 2-D `b`, without the batched
    product (`[*batch, k, n]`: 32 MiB for one d_model-512 layer at batch 16) written out and
    read back: each batch item's product goes into one scratch array and is added to the
    first, in C order of the batch index.

    The same bits: each item is the very `matmul` call the batched product makes for it (a
    2-D slice keeps its strides, so the same BLAS routine and layout), and summing a
    C-contiguous array over its leading axes adds the items in that order, one after another
    (`tests/engine/test_linalg_summed.py` checks both against the batched product).
    """
    at = a.swapaxes(-1, -2)
    items = iter(np.ndindex(a.shape[:-2]))
    first = next(items)
    total = np.matmul(at[first], g[first])
    scratch = np.empty_like(total)
    for i in items:
        np.add(total, np.matmul(at[i], g[i], out=scratch), out=total)
    return total


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


# ---- linear: matmul and bias in one node ----------------------------------------------------


@dataclass(slots=True)
class SavedLinear:
    x: Array
    weight: Array
    product: tuple[int, ...]  # the shape of x @ weight, before the bias broadcast
    bias: tuple[int, ...]  # the bias's shape


def linear(x: Array, weight: Array, bias: Array, /) -> tuple[Array, SavedLinear]:
    """burn's `linear(x, weight, Some(bias))`: `x @ weight + bias`, weight `[d_in, d_out]`.

    burn's autodiff registers it as one node (`LinearWithBias`, `linear` in crates/
    burn-autodiff/src/ops/module.rs, burn commit 2c06be351006851d42fdb6df16b976f4a82d9747);
    flex runs the default forward, a matmul then an add (crates/burn-backend/src/backend/ops/
    modules/linear.rs). The values, gradients and error texts are exactly those of `matmul`
    then `add` here (the same calls), with one graph node instead of two. For inputs of rank
    > 2 burn folds the leading dims into one gemm; the engine's broadcast matmul may round
    the weight gradient's sum over them differently (as `x.matmul(w)` already did).

    Folding would also be faster (bench_scaling's d_model-512 step: its linears' products
    took 1.6x as long one batch item per gemm as folded, one OpenBLAS thread, a loaded
    machine) but not bit-identical: OpenBLAS 0.3.31 rounds a row of float32 `x @ w`
    according to how many rows the call has (a 32-row call and the same rows inside a
    512-row call differ), so the per-item calls stay.
    """
    # The checks and error texts of Tensor.matmul then Tensor.add (methods.binary_result).
    if x.dtype is not weight.dtype and x.dtype != weight.dtype:
        raise dtype_error("matmul", x, weight)
    _check_product(x, weight)
    try:
        product = blas_matmul(x, weight)
    except ValueError:  # batch dims that do not broadcast
        raise broadcast_error("matmul", x, weight) from None
    if bias.dtype is not product.dtype and bias.dtype != product.dtype:
        raise dtype_error("add", product, bias)
    shape = product.shape
    try:
        out = _add_bias(product, bias)
    except ValueError:
        raise broadcast_error("add", product, bias) from None
    return out, SavedLinear(x, weight, shape, bias.shape)


def _add_bias(product: Array, bias: Array) -> Array:
    """`product + bias`, into `product` itself unless the bias broadcasts it to a larger shape:
    the product is a fresh array no one else holds, and the same ufunc on the same operands
    gives the same bits with one allocation fewer (a large one for a wide layer)."""
    try:
        return np.add(product, bias, out=product)
    except ValueError:  # the output would be larger than the product (or no broadcast at all)
        return product + bias


def linear_backward(s: SavedLinear, g: Array, tracked: Tracked) -> tuple[Grad, Grad, Grad]:
    px, pw, pb = tracked
    # add's rule (the product's gradient is g unless the bias broadcast it), then matmul's.
    gb = None if pb is None else g if g.shape == s.bias else unbroadcast(g, s.bias)
    product = g if g.shape == s.product else unbroadcast(g, s.product)
    gx, gw = _product_grads(s.x, s.weight, product, px is not None, pw is not None)
    return gx, gw, gb


LINEAR = differentiable(
    "linear",
    linear,
    linear_backward,
    checks=(
        Check(
            "linear",
            "module_ops.linear({a}, {b}, {c})",
            "torch.matmul({a}, {b}) + {c}",
            (*AB, Input("c")),
            menu(
                ("4x3@3x2", [(4, 3), (3, 2), (2,)]),
                ("batch", [(2, 4, 3), (3, 2), (2,)]),
                ("row", [(1, 3), (3, 2), (2,)]),
                ("empty", [(0, 3), (3, 2), (2,)]),
            ),
        ),
    ),
)
