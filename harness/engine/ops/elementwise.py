"""Elementwise primitives: arithmetic (tensor-tensor with broadcasting, tensor-scalar) and
powers (unary math is in `unary`). A scalar operand is cast to the tensor's dtype first, as burn
converts it to the element type. Dtype and broadcasting errors are raised by the Tensor's binary
plumbing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import divergence
from . import facts
from .arrays import scalar_of, unbroadcast
from .base import Array, Grad, Tracked, differentiable
from .facts import (
    FLOAT,
    INT,
    SCALAR,
    ZERO_KINKS,
    Abs,
    Check,
    Diverges,
    FuzzBinary,
    FuzzElementwise,
    Input,
    binary,
    broadcast,
    menu,
    mono,
    products,
    unary,
)

# ---- tensor-tensor, broadcasting ------------------------------------------------------------


@dataclass(slots=True)
class Shapes:
    a: tuple[int, ...]
    b: tuple[int, ...]


@dataclass(slots=True)
class Operands:
    a: Array
    b: Array


def _interval(combine):
    """The fuzzer's result of a broadcasting op from the interval of its operands."""

    def result(a: Abs, b: Abs) -> Abs | None:
        shape = broadcast(a, b)
        return None if shape is None else Abs(shape, *combine(a, b))

    return FuzzBinary(result)


def add(a: Array, b: Array, /) -> tuple[Array, Shapes]:
    """Elementwise `self + other` with broadcasting."""
    return a + b, Shapes(a.shape, b.shape)


def add_backward(s: Shapes, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    sa = s.a
    sb = s.b
    pa, pb = tracked
    # The shape tests inline unbroadcast's no-op case: an add per layer (bias) takes this path.
    return (
        None if pa is None else g if g.shape == sa else unbroadcast(g, sa),
        None if pb is None else g if g.shape == sb else unbroadcast(g, sb),
    )


ADD = differentiable(
    "add",
    add,
    add_backward,
    checks=(
        binary(
            "add",
            "{a}.add({b})",
            "torch.add({a}, {b})",
            fuzz=_interval(lambda a, b: (a.lo + b.lo, a.hi + b.hi)),
        ),
    ),
)


def sub(a: Array, b: Array, /) -> tuple[Array, Shapes]:
    """Elementwise `self - other` with broadcasting."""
    return a - b, Shapes(a.shape, b.shape)


def sub_backward(s: Shapes, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    pa, pb = tracked
    return (
        unbroadcast(g, s.a) if pa is not None else None,
        unbroadcast(np.negative(g), s.b) if pb is not None else None,
    )


SUB = differentiable(
    "sub",
    sub,
    sub_backward,
    checks=(
        binary(
            "sub",
            "{a}.sub({b})",
            "torch.sub({a}, {b})",
            fuzz=_interval(lambda a, b: (a.lo - b.hi, a.hi - b.lo)),
        ),
    ),
)


def mul(a: Array, b: Array, /) -> tuple[Array, Operands]:
    """Elementwise `self * other` with broadcasting."""
    return a * b, Operands(a, b)


def mul_backward(s: Operands, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    a = s.a
    b = s.b
    pa, pb = tracked
    return (
        unbroadcast(g * b, a.shape) if pa is not None else None,
        unbroadcast(g * a, b.shape) if pb is not None else None,
    )


MUL = differentiable(
    "mul",
    mul,
    mul_backward,
    checks=(
        binary(
            "mul",
            "{a}.mul({b})",
            "torch.mul({a}, {b})",
            fuzz=_interval(lambda a, b: (min(products(a, b)), max(products(a, b)))),
        ),
        # square() is powi_scalar(2), which burn's autodiff backend computes as mul(x, x).
        unary("square", "{a}.square()", "torch.square({a})", kinks=ZERO_KINKS),
    ),
)


def div(a: Array, b: Array, /) -> tuple[Array, Operands]:
    """Elementwise `self / other` with broadcasting."""
    return a / b, Operands(a, b)


def div_backward(s: Operands, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    a = s.a
    b = s.b
    pa, pb = tracked
    # burn's formulas (and so its rounding): g * (1/b) and g * (-a / b^2).
    ga = unbroadcast(g * np.reciprocal(b), a.shape) if pa is not None else None
    gb = unbroadcast(g * (np.negative(a) / (b * b)), b.shape) if pb is not None else None
    return ga, gb


def _quotient(a: Abs, b: Abs) -> Abs | None:
    shape = broadcast(a, b)
    if shape is None or not b.away_from_zero():
        return None
    q = [a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi]
    return Abs(shape, min(q), max(q))


DIV = differentiable(
    "div",
    div,
    div_backward,
    checks=(
        binary(
            "div",
            "{a}.div({b})",
            "torch.div({a}, {b})",
            b_domain="nonzero",
            diverges=(
                Diverges(
                    "*/*/specials/vjp.b",
                    "divisor gradient with a subnormal divisor: burn's -a/(b*b) underflows b*b "
                    "to 0 (0/0 = NaN), torch's -(a/b)/b does not",
                    facts.ENGINE_NONFINITE,
                ),
            ),
            fuzz=FuzzBinary(_quotient),
        ),
    ),
)

# ---- tensor-scalar --------------------------------------------------------------------------


@dataclass(slots=True)
class Scalar:
    s: np.generic  # the scalar operand, in the tensor's dtype


def identity_backward(s: None, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (g,)


def add_scalar(x: Array, /, value) -> tuple[Array, None]:
    """`self + value`, the scalar cast to this dtype first."""
    return x + scalar_of(x, value), None


ADD_SCALAR = differentiable(
    "add_scalar",
    add_scalar,
    identity_backward,
    checks=(
        unary(
            "add_scalar",
            f"{{a}}.add_scalar({SCALAR})",
            f"{{a}} + {SCALAR}",
            fuzz=FuzzElementwise(mono(lambda v: v + SCALAR)),
        ),
    ),
)


def sub_scalar(x: Array, /, value) -> tuple[Array, None]:
    """`self - value`, the scalar cast to this dtype first."""
    return x - scalar_of(x, value), None


SUB_SCALAR = differentiable(
    "sub_scalar",
    sub_scalar,
    identity_backward,
    checks=(
        unary(
            "sub_scalar",
            f"{{a}}.sub_scalar({SCALAR})",
            f"{{a}} - {SCALAR}",
            fuzz=FuzzElementwise(mono(lambda v: v - SCALAR)),
        ),
    ),
)


def mul_scalar(x: Array, /, value) -> tuple[Array, Scalar]:
    """`self * value`, the scalar cast to this dtype first."""
    s = scalar_of(x, value)
    return x * s, Scalar(s)


def mul_scalar_backward(s: Scalar, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (g * s.s,)


MUL_SCALAR = differentiable(
    "mul_scalar",
    mul_scalar,
    mul_scalar_backward,
    checks=(
        unary(
            "mul_scalar",
            f"{{a}}.mul_scalar({SCALAR})",
            f"{{a}} * {SCALAR}",
            fuzz=FuzzElementwise(mono(lambda v: v * SCALAR)),
        ),
    ),
)


def div_scalar(x: Array, /, value) -> tuple[Array, Scalar]:
    """`self / value`, the scalar cast to this dtype first.

    PyTorch difference: the gradient of a float64 tensor carries a float32 rounding, since
    burn's backward multiplies by `1/s` computed in f32 (`1.0 / s.elem::<f32>()`); a
    formula-level difference in float64 runs (switch `ops.div_scalar_grad`,
    ``harness.engine.divergence``, computes `1/s` in the gradient's dtype).
    """
    s = scalar_of(x, value)
    return x / s, Scalar(s)


DIV_SCALAR_GRAD = divergence.register(
    "ops.div_scalar_grad",
    "harness.engine.ops.elementwise.div_scalar",
    "PyTorch's div-by-scalar gradient computes 1/s in the tensor's dtype, not in float32",
)


def div_scalar_backward(s: Scalar, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn computes 1/s in f32 (`1.0 / s.elem::<f32>()`) even for f64 tensors.
    if g.dtype != np.float32 and DIV_SCALAR_GRAD.on:
        return (g * (g.dtype.type(1.0) / g.dtype.type(s.s)),)
    inv = g.dtype.type(np.float32(1.0) / np.float32(s.s))
    return (g * inv,)


DIV_SCALAR = differentiable(
    "div_scalar",
    div_scalar,
    div_scalar_backward,
    checks=(
        unary(
            "div_scalar",
            f"{{a}}.div_scalar({SCALAR})",
            f"{{a}} / {SCALAR}",
            diverges=(
                Diverges(
                    "float64/*/*/vjp.a",
                    "burn's div_scalar backward computes 1/s in f32 even for f64 tensors, so the "
                    "float64 gradient carries a float32 rounding "
                    "(harness.engine.ops.elementwise.div_scalar_backward)",
                    facts.close(1e-6),
                ),
            ),
            fuzz=FuzzElementwise(mono(lambda v: v / SCALAR)),
        ),
    ),
)

# ---- powers ---------------------------------------------------------------------------------


@dataclass(slots=True)
class Power:
    x: Array
    p: np.generic  # the exponent, in the tensor's dtype


def powi_scalar(x: Array, /, exponent: int) -> tuple[Array, Power]:
    """`self ** exponent` for an integer exponent: burn's generic case
    (`float_powi_scalar_impl`, which reaches burn-autodiff's `float_powf_scalar_impl` node
    and its rule `g * p * x^(p-1)`).

    `Tensor.powi_scalar` (and `powf_scalar` with an integer-valued exponent) first takes
    burn-backend's default `float_powi_scalar` shortcuts, which burn-autodiff does not
    override (`crates/burn-backend/src/backend/ops/tensor.rs`, burn commit
    2c06be351006851d42fdb6df16b976f4a82d9747): exponent 0 is `ones` (a constant: no
    gradient), 1 the tensor itself, 2 `x * x`, -1 `recip(x)`, -2 `recip(x * x)`; only the
    other exponents come here. PyTorch differences: torch's `pow(x, 0)` has a zero
    gradient, burn's none; burn's `recip(x * x)` has a NaN gradient at +-inf (0 * inf in
    mul's rule), torch's is 0.
    """
    p = scalar_of(x, int(exponent))
    return x**p, Power(x, p)


def pow_scalar_backward(s: Power, g: Array, tracked: Tracked) -> tuple[Grad]:
    p = s.p
    return (g * (p * s.x ** (p - 1)),)


POWI_SCALAR = differentiable(
    "powi_scalar",
    powi_scalar,
    pow_scalar_backward,
    checks=(
        unary(
            "powi_scalar",
            "{a}.powi_scalar(3)",
            "torch.pow({a}, 3)",
            kinks=ZERO_KINKS,
            fuzz=FuzzElementwise(lambda x: (-(x.mag**3), x.mag**3)),
        ),
        unary(
            "powi_scalar[0]",
            "{a}.powi_scalar(0)",
            "torch.pow({a}, 0)",
            kinks=ZERO_KINKS,
            diverges=(
                Diverges(
                    "*/*/*/vjp.a",
                    "x^0: burn's float_powi_scalar returns ones, a constant, so the input has "
                    "no gradient; torch's is 0 (harness.engine.ops.elementwise.powi_scalar)",
                    facts.Condition.whole(
                        "the engine has no gradient and torch's is 0",
                        lambda t, e: e is None and t is not None and not np.any(t),
                    ),
                ),
            ),
        ),
        # burn's shortcuts (see powi_scalar): x * x, the tensor itself, recip, recip(x * x).
        unary("powi_scalar[2]", "{a}.powi_scalar(2)", "torch.pow({a}, 2)", kinks=ZERO_KINKS),
        unary("powi_scalar[1]", "{a}.powi_scalar(1)", "torch.pow({a}, 1)", kinks=ZERO_KINKS),
        unary(
            "powi_scalar[-1]",
            "{a}.powi_scalar(-1)",
            "torch.pow({a}, -1)",
            domain="nonzero",
        ),
        unary(
            "powi_scalar[-2]",
            "{a}.powi_scalar(-2)",
            "torch.pow({a}, -2)",
            domain="nonzero",
            diverges=(
                Diverges(
                    "*/*/specials/vjp.a",
                    "x^-2 at +-inf: burn's recip(x * x) sends recip's zero gradient through "
                    "mul's rule, 0 * inf = NaN; torch's pow backward gives 0 "
                    "(harness.engine.ops.elementwise.powi_scalar)",
                    facts.ENGINE_NONFINITE,
                ),
            ),
        ),
    ),
)


def powf_scalar(x: Array, /, exponent: float) -> tuple[Array, Power]:
    """`self ** exponent` for a float exponent (cast to this dtype first)."""
    p = scalar_of(x, exponent)
    return x**p, Power(x, p)


POWF_SCALAR = differentiable(
    "powf_scalar",
    powf_scalar,
    pow_scalar_backward,
    checks=(
        unary(
            "powf_scalar",
            "{a}.powf_scalar(2.5)",
            "torch.pow({a}, 2.5)",
            domain="positive",
            kinks=ZERO_KINKS,
            fuzz=FuzzElementwise(mono(lambda v: v**2.5), lambda x: x.lo >= 0.25),
        ),
        # An integer-valued float exponent takes powi_scalar's path (burn's `float_powf_scalar`
        # tests `try_as_integer`): 3.0 is the generic power, 2.0 is x * x.
        unary("powf_scalar[3.0]", "{a}.powf_scalar(3.0)", "torch.pow({a}, 3.0)"),
        unary("powf_scalar[2.0]", "{a}.powf_scalar(2.0)", "torch.pow({a}, 2.0)"),
    ),
)


def powf(a: Array, b: Array, /) -> tuple[Array, Operands]:
    """`self ** other` elementwise with broadcasting (flex's `float_powf`, Rust's `powf`).

    burn-autodiff's `float_powf` rule: `g * (x^(y-1) * y)` for self and `g * (x^y * ln(x))`
    for the exponent, both recomputing the powers. `powi(int tensor)` is this op with the
    exponents cast to floats (burn-backend's default `float_powi`).

    PyTorch difference: at a zero base the rule gives NaN (`inf * 0`, `0 * -inf`) where torch
    masks the gradient to 0.
    """
    return np.power(a, b), Operands(a, b)


def powf_backward(s: Operands, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    x, y = s.a, s.b
    pa, pb = tracked
    one = x.dtype.type(1)
    ga = unbroadcast(g * (np.power(x, y - one) * y), x.shape) if pa is not None else None
    gb = unbroadcast(g * (np.power(x, y) * np.log(x)), y.shape) if pb is not None else None
    return ga, gb


POWF = differentiable(
    "powf",
    powf,
    powf_backward,
    checks=(
        binary(
            "powf",
            "{a}.powf({b})",
            "torch.pow({a}, {b})",
            a_domain="positive",
            diverges=(
                Diverges(
                    "*/*/specials/vjp.*",
                    "powf's gradient at a zero or infinite base: burn's x^(y-1) * y and "
                    "x^y * ln(x) give inf * 0 or 0 * -inf = NaN; torch masks x == 0 to a zero "
                    "gradient (harness.engine.ops.elementwise.powf)",
                    facts.ENGINE_NONFINITE,
                ),
            ),
        ),
        Check(
            "powi",
            "{a}.powi({i})",
            "torch.pow({a}, {i})",
            (Input("a", FLOAT, "positive"), Input("i", INT)),
            menu(("3x2", [(3, 2), (3, 2)]), ("bcast", [(3, 2), (1, 2)])),
            diverges=(
                # The exponents are drawn per cell: float64's draws put 0 on the zeros.
                Diverges(
                    "float64/*/specials/vjp.a",
                    "powi with exponent 0 at a zero base: burn's powf rule 0^(0-1) * 0 is "
                    "inf * 0 = NaN; torch gives 0 (harness.engine.ops.elementwise.powf)",
                    facts.ENGINE_NONFINITE,
                ),
            ),
        ),
    ),
)
