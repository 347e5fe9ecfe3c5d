"""Activation primitives: relu, tanh, sigmoid, and the (log-)softmax along a dim."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from .arrays import fmt, norm_dim, zero_of, zero_where
from .base import Array, Grad, SavedInput, SavedOutput, Tracked, differentiable
from .facts import (
    ENGINE_ZERO,
    SOFTMAX_KINKS,
    TORCH_NAN_ENGINE_ZERO,
    ZERO_KINKS,
    Abs,
    Diverges,
    FuzzElementwise,
    FuzzStructural,
    along_dim1,
    each_dim,
    mono,
    unary,
)


def relu(x: Array, /) -> tuple[Array, SavedOutput]:
    """max(x, 0) as flex's `x.max(0.0)`: relu(NaN) = 0, and the gradient is 0 at 0 and at NaN.

    flex (`relu` / `relu_backward` in `crates/burn-flex/src/ops/activation.rs`, burn commit
    2c06be351006851d42fdb6df16b976f4a82d9747) uses Rust's `f32::max`, which returns the other
    operand when one is NaN, and passes the gradient only where `out > 0`; burn's autodiff
    `relu` calls both on either device. PyTorch difference: torch.relu(NaN) is NaN, and its
    backward passes the cotangent there (it masks only where x <= 0). burn's other backends
    (the default `relu` is `mask_fill(x <= 0)`) keep NaN; the engine follows flex, the seed's
    device.
    """
    out = _fmax_zero(x)  # fmax, as Rust's max: NaN gives the other operand
    return out, SavedOutput(out)


# np.fmax against a 0-d zero runs NumPy's scalar loop (no SIMD loop for a scalar operand of
# the min/max family); against a contiguous array of zeros it runs the SIMD loop: a 128x256
# float32 activation in ~5 us instead of ~11 us. Elementwise, so the same bits whichever loop
# and however the array is cut (every float32 bit pattern: tests/engine/test_relu_simd.py).
# Below ~2048 elements the scalar loop is the faster one.
_SIMD_MIN = 2048
_ZERO_BLOCK = 1 << 16  # elements: 256 KiB of float32 zeros, 512 KiB of float64


def _zero_block(dtype) -> np.ndarray:
    block = np.zeros(_ZERO_BLOCK, dtype)
    block.flags.writeable = False
    return block


_ZERO_BLOCKS = {np.dtype(t): _zero_block(t) for t in (np.float32, np.float64)}


def _fmax_zero(x: Array) -> Array:
    """`np.fmax(x, 0)` in x's dtype, through the SIMD loop where that is the faster one."""
    block = _ZERO_BLOCKS.get(x.dtype)
    n = x.size
    if block is None or n < _SIMD_MIN or not x.flags.c_contiguous:
        return np.fmax(x, zero_of(x.dtype))
    if n <= _ZERO_BLOCK:
        return np.fmax(x, block[:n].reshape(x.shape))
    out = np.empty_like(x)
    src = x.reshape(-1)
    dst = out.reshape(-1)
    for start in range(0, n, _ZERO_BLOCK):
        stop = min(start + _ZERO_BLOCK, n)
        np.fmax(src[start:stop], block[: stop - start], out=dst[start:stop])
    return out


def relu_backward(s: SavedOutput, g: Array, tracked: Tracked) -> tuple[Grad]:
    # flex passes g where out > 0: 0 at exactly 0, and at NaN inputs (their output is 0).
    out = s.out
    return (zero_where(np.less_equal(out, zero_of(out.dtype)), g),)


RELU = differentiable(
    "relu",
    relu,
    relu_backward,
    checks=(
        unary(
            "relu",
            "{a}.relu()",
            "torch.relu({a})",
            kinks=ZERO_KINKS,
            diverges=(
                Diverges(
                    "*/*/specials/forward",
                    "relu(NaN): flex's x.max(0.0) returns 0, torch.relu keeps NaN "
                    "(harness.engine.ops.nn.relu)",
                    TORCH_NAN_ENGINE_ZERO,
                ),
                Diverges(
                    "*/*/specials/vjp.a",
                    "relu at NaN: flex passes the gradient only where out > 0 (out is 0), so 0; "
                    "torch masks where x <= 0, which NaN is not, so it passes the cotangent "
                    "(harness.engine.ops.nn.relu)",
                    ENGINE_ZERO,
                ),
            ),
            fuzz=FuzzElementwise(mono(lambda v: max(v, 0.0))),
        ),
    ),
)


def tanh(x: Array, /) -> tuple[Array, SavedOutput]:
    """Elementwise hyperbolic tangent."""
    out = np.tanh(x)
    return out, SavedOutput(out)


def tanh_backward(s: SavedOutput, g: Array, tracked: Tracked) -> tuple[Grad]:
    out = s.out
    return (g * (1 - out * out),)


TANH = differentiable(
    "tanh",
    tanh,
    tanh_backward,
    checks=(unary("tanh", "{a}.tanh()", "torch.tanh({a})", fuzz=FuzzElementwise(mono(math.tanh))),),
)


def _flex_sigmoid(x: Array) -> Array:
    """flex's `sigmoid_f32` / `sigmoid_f64`: `1 / (1 + exp(-x))` for x >= 0, else
    `exp(x) / (1 + exp(x))`, so no overflow for large |x| (`sigmoid`'s forward and
    `log_sigmoid`'s gradient). With `e = exp(-|x|)` (at most 1: it never overflows) both are
    `n / (1 + e)`, the numerator `n = max(e, x >= 0)`: exactly 1 where x >= 0, e elsewhere
    (NaN included: maximum keeps a NaN operand as it is). One division instead of two and a
    select, so the same bits (tests/engine/test_flex_semantics.py) in about 2/3 of the time;
    the buffers are the result's own (a 0-d input too)."""
    one = x.dtype.type(1)
    e = np.abs(x, out=np.empty(x.shape, x.dtype))
    np.negative(e, out=e)
    np.exp(e, out=e)
    d = one + e
    np.maximum(e, x >= 0, out=e)
    return np.divide(e, d, out=e)


def sigmoid(x: Array, /) -> tuple[Array, SavedOutput]:
    """Elementwise logistic function, computed without overflow for large |x|."""
    out = _flex_sigmoid(x)
    return out, SavedOutput(out)


def sigmoid_backward(s: SavedOutput, g: Array, tracked: Tracked) -> tuple[Grad]:
    # flex's sigmoid_backward, left to right: g * s * (1 - s) = (g * s) * (1 - s).
    out = s.out
    return ((g * out) * (1 - out),)


SIGMOID = differentiable(
    "sigmoid",
    sigmoid,
    sigmoid_backward,
    checks=(
        unary(
            "sigmoid",
            "{a}.sigmoid()",
            "torch.sigmoid({a})",
            fuzz=FuzzElementwise(mono(lambda v: 1 / (1 + math.exp(-v)))),
        ),
    ),
)


def log_sigmoid(x: Array, /) -> tuple[Array, SavedInput]:
    """`log(sigmoid(x))` as flex's fused op: `-ln_1p(exp(-x))` for x >= 0, else
    `x - ln_1p(exp(x))`; gradient `g * sigmoid(-x)` (`log_sigmoid` / `log_sigmoid_backward`
    in `crates/burn-flex/src/ops/activation.rs`, burn commit
    2c06be351006851d42fdb6df16b976f4a82d9747; burn-autodiff's `log_sigmoid` calls both).

    PyTorch computes the same function (`log_sigmoid` in ATen). burn's other backends use the
    default `-max(-x, 0) - log(exp(-max(-x, 0)) + exp(-x - max(-x, 0)))`, which rounds
    `log(1 + exp(-x))` to exactly 0 for x above about 17; the engine follows flex.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.where(x >= 0, -np.log1p(np.exp(-x)), x - np.log1p(np.exp(x)))
    return out, SavedInput(x)


def log_sigmoid_backward(s: SavedInput, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (g * _flex_sigmoid(np.negative(s.x)),)


LOG_SIGMOID = differentiable(
    "log_sigmoid",
    log_sigmoid,
    log_sigmoid_backward,
    checks=(
        unary(
            "log_sigmoid",
            "{a}.log_sigmoid()",
            "torch.nn.functional.logsigmoid({a})",
            kinks=(0.0, -0.0, 17.0, 40.0, -40.0, -100.0),
            fuzz=FuzzElementwise(mono(lambda v: -math.log1p(math.exp(-v)))),
        ),
    ),
)

# ---- softmax family -------------------------------------------------------------------------
# burn builds both from primitives on x' = x - detach(max): e = exp(x'), s = sum_dim(e). These
# rules are that composite's backward, fused, with burn's operation order (its rounding).


@dataclass(slots=True)
class Softmaxed:
    e: Array  # exp(x - max)
    s: Array  # sum of e along dim, kept
    dim: int


def _softmax_dim(op: str, x: Array, dim: int) -> int:
    """`dim` normalised; a ShapeError naming the op when it is empty: its max has no value
    (burn's composite starts with max_dim). PyTorch returns an empty tensor there."""
    d = norm_dim(op, dim, x.ndim)
    if x.shape[d] == 0:
        raise ShapeError(f"{op}: dim {dim} of shape {fmt(x.shape)} is empty (no max to shift by)")
    return d


def log_softmax(x: Array, /, dim: int) -> tuple[Array, Softmaxed]:
    """log(softmax(x)) along `dim`, stable as burn's: (x - max) - log(sum(exp(x - max))).

    An empty `dim` raises ShapeError (PyTorch returns an empty tensor)."""
    d = _softmax_dim("log_softmax", x, dim)
    shifted = x - np.maximum.reduce(x, axis=d, keepdims=True)
    e = np.exp(shifted)
    s = np.add.reduce(e, axis=d, keepdims=True)
    return shifted - np.log(s), Softmaxed(e, s, d)


def log_softmax_backward(s: Softmaxed, g: Array, tracked: Tracked) -> tuple[Grad]:
    # out = x' - log(s): g + (-sum(g) * (1/s)) * e
    total = np.negative(np.add.reduce(g, axis=s.dim, keepdims=True))
    return (g + (total * np.reciprocal(s.s)) * s.e,)


def _log_softmax_interval(x: Abs, dim: int) -> Abs | None:
    if not x.shape:
        return None
    return Abs(x.shape, (x.lo - x.hi) - math.log(x.shape[dim]), 0.0)


LOG_SOFTMAX = differentiable(
    "log_softmax",
    log_softmax,
    log_softmax_backward,
    checks=(
        along_dim1(
            "log_softmax",
            "{a}.log_softmax({dim})",
            "torch.log_softmax({a}, {dim})",
            kinks=SOFTMAX_KINKS,
            fuzz=FuzzStructural(_log_softmax_interval, each_dim),
        ),
    ),
)


def _probabilities(x: Abs, dim: int) -> Abs | None:
    return Abs(x.shape, 0.0, 1.0) if x.shape else None


def softmax(x: Array, /, dim: int) -> tuple[Array, Softmaxed]:
    """exp(x - max) / sum(exp(x - max)) along `dim`.

    An empty `dim` raises ShapeError (PyTorch returns an empty tensor)."""
    d = _softmax_dim("softmax", x, dim)
    e = np.exp(x - np.maximum.reduce(x, axis=d, keepdims=True))
    s = np.add.reduce(e, axis=d, keepdims=True)
    return e / s, Softmaxed(e, s, d)


def softmax_backward(s: Softmaxed, g: Array, tracked: Tracked) -> tuple[Grad]:
    e = s.e
    total = s.s
    # out = e / s: (g * (1/s) + sum(g * (-e / s^2))) * e
    through_s = np.add.reduce(g * (np.negative(e) / (total * total)), axis=s.dim, keepdims=True)
    return ((g * np.reciprocal(total) + through_s) * e,)


SOFTMAX = differentiable(
    "softmax",
    softmax,
    softmax_backward,
    checks=(
        along_dim1(
            "softmax",
            "{a}.softmax({dim})",
            "torch.softmax({a}, {dim})",
            kinks=SOFTMAX_KINKS,
            fuzz=FuzzStructural(_probabilities, each_dim),
        ),
    ),
)
