"""Activation primitives: relu, tanh, sigmoid, and the (log-)softmax along a dim."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .arrays import norm_dim, zero_of, zero_where
from .base import Array, Grad, SavedOutput, Tracked, differentiable
from .facts import (
    SOFTMAX_KINKS,
    ZERO_KINKS,
    Abs,
    FuzzElementwise,
    FuzzStructural,
    along_dim1,
    each_dim,
    mono,
    unary,
)


def relu(x: Array, /) -> tuple[Array, SavedOutput]:
    """max(x, 0); the gradient at exactly 0 is 0 (burn masks where output <= 0)."""
    out = np.maximum(x, zero_of(x.dtype))
    return out, SavedOutput(out)


def relu_backward(s: SavedOutput, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn masks where output <= 0: the gradient at exactly 0 is 0; NaN passes through.
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


def sigmoid(x: Array, /) -> tuple[Array, SavedOutput]:
    """Elementwise logistic function, computed without overflow for large |x|."""
    e = np.exp(-np.abs(x))
    out = np.where(x >= 0, 1 / (1 + e), e / (1 + e))
    return out, SavedOutput(out)


def sigmoid_backward(s: SavedOutput, g: Array, tracked: Tracked) -> tuple[Grad]:
    out = s.out
    return (g * (out * (1 - out)),)


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

# ---- softmax family -------------------------------------------------------------------------
# burn builds both from primitives on x' = x - detach(max): e = exp(x'), s = sum_dim(e). These
# rules are that composite's backward, fused, with burn's operation order (its rounding).


@dataclass(slots=True)
class Softmaxed:
    e: Array  # exp(x - max)
    s: Array  # sum of e along dim, kept
    dim: int


def log_softmax(x: Array, /, dim: int) -> tuple[Array, Softmaxed]:
    """log(softmax(x)) along `dim`, stable as burn's: (x - max) - log(sum(exp(x - max)))."""
    d = norm_dim("log_softmax", dim, x.ndim)
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
    """exp(x - max) / sum(exp(x - max)) along `dim`."""
    d = norm_dim("softmax", dim, x.ndim)
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
