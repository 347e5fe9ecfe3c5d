"""Trigonometric and hyperbolic primitives, their inverses, `atan2` and `hypot`, each with
burn-autodiff's own backward node (`crates/burn-autodiff/src/ops/tensor.rs`: `float_sin` ...
`float_atanh`, `float_atan2`, `float_hypot`, burn commit
2c06be351006851d42fdb6df16b976f4a82d9747).

Forwards are flex's (`crates/burn-flex/src/ops/unary.rs`: Rust's `f32::sin` ... on each
element; `float_atan2` and `float_hypot` in `ops/float.rs`); NumPy's ufuncs in the tensor's
dtype here. Rules are burn's formulas in its order, `x^2` being `powi_scalar(x, 2)`, which the
inner backend computes as `x * x`: `tan`'s is `g * (tan(x)^2 + 1)`, `asin`'s
`g * recip(sqrt(-(x^2) + 1))`, `atan2`'s `g * (x / (x^2 + y^2))` and `g * -(y / (x^2 + y^2))`.

Difference from PyTorch: float32 values agree to a few ulp (different libm kernels: NumPy's
SIMD loops here, Rust's libm in flex, SLEEF or the C library in torch).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import facts
from .arrays import unbroadcast
from .base import Array, Grad, SavedInput, Tracked, differentiable
from .elementwise import Operands
from .facts import Condition, Diverges, binary, unary


def _squared(x: Array) -> Array:
    # burn's powi_scalar(x, 2), which flex and the backend default compute as x * x.
    return x * x


def _one(x: Array):
    return x.dtype.type(1)


def _elementwise(name: str, fn: Callable, slope: Callable, torch: str, doc: str, **check):
    """Register a one-input primitive `fn` whose rule is `g * slope(x)` (burn's formula)."""

    def forward(x: Array, /) -> tuple[Array, SavedInput]:
        return fn(x), SavedInput(x)

    def backward(s: SavedInput, g: Array, tracked: Tracked) -> tuple[Grad]:
        return (g * slope(s.x),)

    forward.__name__ = name
    forward.__doc__ = doc
    backward.__name__ = f"{name}_backward"
    return differentiable(
        name, forward, backward, checks=(unary(name, f"{{a}}.{name}()", torch, **check),)
    )


SIN = _elementwise("sin", np.sin, np.cos, "torch.sin({a})", "Elementwise sine.")
COS = _elementwise(
    "cos", np.cos, lambda x: np.negative(np.sin(x)), "torch.cos({a})", "Elementwise cosine."
)
TAN = _elementwise(
    "tan",
    np.tan,
    lambda x: _squared(np.tan(x)) + _one(x),
    "torch.tan({a})",
    "Elementwise tangent; the gradient `g * (tan(x)^2 + 1)` recomputes tan (burn's rule).",
)
SINH = _elementwise("sinh", np.sinh, np.cosh, "torch.sinh({a})", "Elementwise hyperbolic sine.")
COSH = _elementwise("cosh", np.cosh, np.sinh, "torch.cosh({a})", "Elementwise hyperbolic cosine.")
ASIN = _elementwise(
    "asin",
    np.arcsin,
    lambda x: np.reciprocal(np.sqrt(np.negative(_squared(x)) + _one(x))),
    "torch.asin({a})",
    "Elementwise arcsine (NaN outside [-1, 1]).",
    domain="unit",
)
ACOS = _elementwise(
    "acos",
    np.arccos,
    lambda x: np.negative(np.reciprocal(np.sqrt(np.negative(_squared(x)) + _one(x)))),
    "torch.acos({a})",
    "Elementwise arccosine (NaN outside [-1, 1]).",
    domain="unit",
)
ATAN = _elementwise(
    "atan",
    np.arctan,
    lambda x: np.reciprocal(_squared(x) + _one(x)),
    "torch.atan({a})",
    "Elementwise arctangent.",
)
ASINH = _elementwise(
    "asinh",
    np.arcsinh,
    lambda x: np.reciprocal(np.sqrt(_squared(x) + _one(x))),
    "torch.asinh({a})",
    "Elementwise inverse hyperbolic sine.",
)
ACOSH = _elementwise(
    "acosh",
    np.arccosh,
    lambda x: np.reciprocal(np.sqrt(_squared(x) - _one(x))),
    "torch.acosh({a})",
    "Elementwise inverse hyperbolic cosine (NaN below 1).",
    domain="above_one",
)
ATANH = _elementwise(
    "atanh",
    np.arctanh,
    lambda x: np.reciprocal(np.negative(_squared(x)) + _one(x)),
    "torch.atanh({a})",
    "Elementwise inverse hyperbolic tangent (infinite at -1 and 1, NaN outside).",
    domain="unit",
    kinks=(1.0, -1.0, 0.0, -0.0, 0.5, -0.5),
)


# ---- atan2 and hypot ----------------------------------------------------------------------------


def atan2(y: Array, x: Array, /) -> tuple[Array, Operands]:
    """`atan2(self, other)`: the angle of the point (other, self), self being y, with
    broadcasting (Rust's `f32::atan2`, NumPy's `arctan2`).

    PyTorch difference: at subnormal or infinite operands burn's gradient
    `x / (x^2 + y^2)` is inf or NaN (the squares underflow or overflow); torch's is finite.
    """
    return np.arctan2(y, x), Operands(y, x)


def atan2_backward(s: Operands, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    # burn's formulas: g * (x / (x^2 + y^2)) for y, g * -(y / (x^2 + y^2)) for x.
    y, x = s.a, s.b
    py, px = tracked
    denom = _squared(x) + _squared(y)
    gy = unbroadcast(g * (x / denom), y.shape) if py is not None else None
    gx = unbroadcast(g * np.negative(y / denom), x.shape) if px is not None else None
    return gy, gx


ATAN2 = differentiable(
    "atan2",
    atan2,
    atan2_backward,
    checks=(
        binary(
            "atan2",
            "{a}.atan2({b})",
            "torch.atan2({a}, {b})",
            b_domain="nonzero",
            diverges=(
                Diverges(
                    "*/*/specials/vjp.*",
                    "atan2's gradient at subnormal or infinite operands: burn's x / (x^2 + y^2) "
                    "underflows the denominator to 0 (x/0 = inf, 0/0 = NaN) or divides inf by "
                    "inf; torch's kernel gives a finite value (harness.engine.ops.trig)",
                    facts.ENGINE_NONFINITE,
                ),
            ),
        ),
    ),
)


def hypot(a: Array, b: Array, /) -> tuple[Array, Operands]:
    """`sqrt(self^2 + other^2)` without overflow, with broadcasting (Rust's `hypot`).

    PyTorch difference: at a subnormal operand torch's gradient `(g * b) / h` rounds `g * b`
    to the subnormal grid, burn's `g * (b / h)` does not (float64 agrees with burn's).
    """
    return np.hypot(a, b), Operands(a, b)


def hypot_backward(s: Operands, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    # burn's formulas: g * (a / hypot(a, b)) and g * (b / hypot(a, b)), hypot recomputed.
    a, b = s.a, s.b
    pa, pb = tracked
    h = np.hypot(a, b)
    ga = unbroadcast(g * (a / h), a.shape) if pa is not None else None
    gb = unbroadcast(g * (b / h), b.shape) if pb is not None else None
    return ga, gb


HYPOT = differentiable(
    "hypot",
    hypot,
    hypot_backward,
    checks=(
        binary(
            "hypot",
            "{a}.hypot({b})",
            "torch.hypot({a}, {b})",
            a_domain="nonzero",
            diverges=(
                Diverges(
                    "*/*/specials/vjp.*",
                    "hypot's gradient at a subnormal operand: burn's g * (b / hypot(a, b)) "
                    "divides first (b / h = +-1, as float64 says); torch's (g * b) / h rounds "
                    "g * b to the subnormal grid first, so its value is an integer (0 included)",
                    Condition.only_where(
                        "torch's value is an integer (g * b rounded to the subnormal grid)",
                        lambda t, e: t == np.round(t),
                    ),
                ),
            ),
        ),
    ),
)
