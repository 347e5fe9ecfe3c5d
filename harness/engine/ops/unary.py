"""Unary math primitives (negation, reciprocal, exp, logarithms, roots, abs) and clamp."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import facts
from .arrays import scalar_of, zero_where
from .base import Array, Grad, SavedInput, SavedOutput, Tracked, differentiable
from .facts import (
    CLAMP_KINKS,
    SCALAR,
    ZERO_KINKS,
    Abs,
    Diverges,
    FuzzElementwise,
    mono,
    unary,
)

# ---- unary ----------------------------------------------------------------------------------


def neg(x: Array, /) -> tuple[Array, None]:
    """`-self`."""
    return np.negative(x), None


def neg_backward(s: None, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (np.negative(g),)


NEG = differentiable(
    "neg",
    neg,
    neg_backward,
    checks=(
        unary("neg", "{a}.neg()", "torch.neg({a})", fuzz=FuzzElementwise(lambda x: (-x.hi, -x.lo))),
        # `value - self` is neg() then add_scalar, as burn builds it.
        unary(
            "rsub_scalar",
            f"{{a}}.rsub_scalar({SCALAR})",
            f"{SCALAR} - {{a}}",
            fuzz=FuzzElementwise(lambda x: (SCALAR - x.hi, SCALAR - x.lo)),
        ),
    ),
)


def recip(x: Array, /) -> tuple[Array, SavedInput]:
    """Elementwise 1/x."""
    return np.reciprocal(x), SavedInput(x)


def recip_backward(s: SavedInput, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (g * np.negative(s.x**-2),)


def _away_from_zero(x: Abs) -> bool:
    return x.away_from_zero()


RECIP = differentiable(
    "recip",
    recip,
    recip_backward,
    checks=(
        unary(
            "recip",
            "{a}.recip()",
            "torch.reciprocal({a})",
            domain="nonzero",
            fuzz=FuzzElementwise(lambda x: (1 / x.hi, 1 / x.lo), _away_from_zero),
        ),
        # `value / self` is recip() then mul_scalar, as burn builds it.
        unary(
            "rdiv_scalar",
            f"{{a}}.rdiv_scalar({SCALAR})",
            f"{SCALAR} / {{a}}",
            domain="nonzero",
            fuzz=FuzzElementwise(lambda x: (SCALAR / x.hi, SCALAR / x.lo), _away_from_zero),
        ),
    ),
)


def exp(x: Array, /) -> tuple[Array, SavedOutput]:
    """Elementwise e**x."""
    out = np.exp(x)
    return out, SavedOutput(out)


def exp_backward(s: SavedOutput, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (g * s.out,)


EXP = differentiable(
    "exp",
    exp,
    exp_backward,
    checks=(
        unary(
            "exp",
            "{a}.exp()",
            "torch.exp({a})",
            fuzz=FuzzElementwise(mono(math.exp), lambda x: x.hi <= 2.5),
        ),
    ),
)


def log(x: Array, /) -> tuple[Array, SavedInput]:
    """Elementwise natural logarithm."""
    return np.log(x), SavedInput(x)


def log_backward(s: SavedInput, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (g * np.reciprocal(s.x),)


def _positive(x: Abs) -> bool:
    return x.lo >= 0.25


LOG = differentiable(
    "log",
    log,
    log_backward,
    checks=(
        unary(
            "log",
            "{a}.log()",
            "torch.log({a})",
            domain="positive",
            fuzz=FuzzElementwise(mono(math.log), _positive),
        ),
    ),
)


def log1p(x: Array, /) -> tuple[Array, SavedInput]:
    """Elementwise `log(1 + x)`, exact for small |x| (flex's `ln_1p`)."""
    return np.log1p(x), SavedInput(x)


def log1p_backward(s: SavedInput, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn-autodiff `float_log1p`: g * recip(x + 1), the 1 a scalar of the tensor's dtype.
    x = s.x
    return (g * np.reciprocal(x + x.dtype.type(1)),)


LOG1P = differentiable(
    "log1p",
    log1p,
    log1p_backward,
    checks=(
        unary(
            "log1p",
            "{a}.log1p()",
            "torch.log1p({a})",
            domain="positive",
            kinks=(0.0, -0.0, 1e-30, -1e-8, 3e-4, 1.0),
            fuzz=FuzzElementwise(mono(math.log1p), _positive),
        ),
    ),
)


def sqrt(x: Array, /) -> tuple[Array, SavedInput]:
    """Elementwise square root.

    PyTorch difference: at -0.0 the gradient is +inf (burn's `x^-0.5 / 2`) where torch's
    `grad / (2 sqrt(x))` gives -inf, and at -inf it is 0 where torch gives NaN.
    """
    return np.sqrt(x), SavedInput(x)


def sqrt_backward(s: SavedInput, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (g * (s.x**-0.5 / 2),)


SQRT = differentiable(
    "sqrt",
    sqrt,
    sqrt_backward,
    checks=(
        unary(
            "sqrt",
            "{a}.sqrt()",
            "torch.sqrt({a})",
            domain="positive",
            kinks=ZERO_KINKS,
            diverges=(
                Diverges(
                    "*/*/kinks/vjp.a",
                    "sqrt at -0.0: burn's x^-0.5 / 2 is +inf, torch's grad / (2 sqrt(x)) divides "
                    "by -0.0 and gives -inf (the cotangent's sign decides which side of inf "
                    "each lands on)",
                    facts.BOTH_INFINITE,
                ),
                Diverges(
                    "*/*/specials/vjp.a",
                    "sqrt at -0.0 (+inf vs -inf, see kinks) and at -inf: burn's (-inf)^-0.5 / 2 "
                    "is 0, torch's grad / (2 sqrt(-inf)) is NaN",
                    facts.NONFINITE_EITHER,
                ),
            ),
            fuzz=FuzzElementwise(mono(math.sqrt), _positive),
        ),
    ),
)


def absolute(x: Array, /) -> tuple[Array, SavedInput]:
    """Elementwise absolute value (subgradient 0 at 0).

    PyTorch difference: at NaN the gradient is NaN (`g * sign(x)`) where torch gives 0.
    """
    return np.abs(x), SavedInput(x)


def abs_backward(s: SavedInput, g: Array, tracked: Tracked) -> tuple[Grad]:
    # sign(0) = 0: the subgradient at the kink is 0, as in burn and PyTorch.
    return (g * np.sign(s.x),)


def _abs_bounds(x: Abs) -> tuple[float, float]:
    lo = 0.0 if x.lo <= 0 <= x.hi else min(abs(x.lo), abs(x.hi))
    return lo, x.mag


ABS = differentiable(
    "abs",
    absolute,
    abs_backward,
    checks=(
        unary(
            "abs",
            "{a}.abs()",
            "torch.abs({a})",
            kinks=ZERO_KINKS,
            diverges=(
                Diverges(
                    "*/*/specials/vjp.a",
                    "abs at NaN: the engine's g * sign(x) gives NaN (numpy sign(NaN) = NaN); "
                    "torch's abs backward gives 0 there",
                    facts.TORCH_ZERO_ENGINE_NAN,
                ),
            ),
            fuzz=FuzzElementwise(_abs_bounds),
        ),
    ),
)

# ---- clamp ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Clamped:
    clamped: Array  # bool: where a bound replaced the value (no gradient there)


def clamp(x: Array, /, min=None, max=None) -> tuple[Array, Clamped]:
    """Clamp into [min, max] (either bound may be None) on the autodiff device, as burn's
    autodiff backend does it: `clamp_min(clamp_max(x, max), min)`, each a `mask_fill` where
    `x > max`, then where `y < min`; the gradient is 0 where a bound replaced the value.

    burn-autodiff has no clamp op of its own: `float_clamp`, `float_clamp_min` and
    `float_clamp_max` are the defaults of `FloatTensorOps` (`crates/burn-backend/src/backend/
    ops/tensor.rs`, burn commit 2c06be351006851d42fdb6df16b976f4a82d9747), built on the
    tracked `mask_fill`; flex's own fused clamps run only on the plain device (`flex_clamp`).
    Consequences, each a PyTorch difference:

    - NaN stays NaN and its gradient passes (NaN compares false), where torch gives 0;
    - `min > max` gives `min` everywhere with gradient 0 (clamp_max then clamp_min), where
      torch gives `max` everywhere (its min(max(x, min), max)); flex's plain clamp raises.
    At the bounds themselves the gradient passes, as in PyTorch.
    """
    lo = None if min is None else scalar_of(x, min)
    hi = None if max is None else scalar_of(x, max)
    if lo is None and hi is None:
        raise ValueError("clamp: give min, max or both")
    if lo is None:
        clamped = np.greater(x, hi)
        return np.where(clamped, hi, x), Clamped(clamped)
    if hi is None:
        clamped = np.less(x, lo)
        return np.where(clamped, lo, x), Clamped(clamped)
    above = np.greater(x, hi)
    y = np.where(above, hi, x)
    below = np.less(y, lo)
    return np.where(below, lo, y), Clamped(above | below)


def clamp_backward(s: Clamped, g: Array, tracked: Tracked) -> tuple[Grad]:
    # The two mask_fill backwards: zero where either bound replaced the value.
    return (zero_where(s.clamped, g),)


def flex_clamp(x: Array, min=None, max=None) -> Array:
    """flex's fused clamps, run on the plain device (never tracked), as `float_clamp`,
    `float_clamp_min` and `float_clamp_max` in `crates/burn-flex/src/ops/float.rs` (burn
    commit 2c06be351006851d42fdb6df16b976f4a82d9747):

    - `clamp_min` is Rust's `x.max(min)` and `clamp_max` `x.min(max)`: NaN becomes the bound
      (Rust's max/min return the other operand). PyTorch difference: torch (and the autodiff
      device) keep NaN;
    - `clamp` is Rust's `x.clamp(min, max)`: NaN stays NaN, and `min > max` panics (here a
      ValueError with Rust's message). PyTorch difference: torch fills with `max`.
    """
    lo = None if min is None else scalar_of(x, min)
    hi = None if max is None else scalar_of(x, max)
    if lo is None and hi is None:
        raise ValueError("clamp: give min, max or both")
    if lo is None:
        return np.fmin(x, hi)
    if hi is None:
        return np.fmax(x, lo)
    if not lo <= hi:
        raise ValueError(f"clamp: min > max, or either was NaN. min = {lo}, max = {hi}")
    return np.clip(x, lo, hi)


_CLAMP_NAN = Diverges(
    "*/*/specials/vjp.a",
    "clamp at NaN: burn's autodiff clamp masks only x > max and x < min, so the gradient "
    "passes at NaN; torch keeps it only where min <= x <= max, so NaN gets 0 "
    "(harness.engine.ops.unary.clamp)",
    facts.TORCH_ZERO,
)
CLAMP = differentiable(
    "clamp",
    clamp,
    clamp_backward,
    checks=(
        unary(
            "clamp",
            "{a}.clamp(-0.5, 0.5)",
            "torch.clamp({a}, -0.5, 0.5)",
            kinks=CLAMP_KINKS,
            diverges=(_CLAMP_NAN,),
            fuzz=FuzzElementwise(mono(lambda v: min(max(v, -0.5), 0.5))),
        ),
        unary(
            "clamp[inverted]",
            "{a}.clamp(0.5, -0.5)",
            "torch.clamp({a}, 0.5, -0.5)",
            diverges=(
                Diverges(
                    "*/*/*/forward",
                    "clamp with min > max: burn's autodiff clamp is clamp_min(clamp_max(x, max), "
                    "min), so every value becomes min; torch's min(max(x, min), max) gives max "
                    "(harness.engine.ops.unary.clamp)",
                    facts.Condition.only_where(
                        "torch is max and the engine min", lambda t, e: (t == -0.5) & (e == 0.5)
                    ),
                ),
                _CLAMP_NAN,
            ),
        ),
        unary(
            "clamp_min",
            "{a}.clamp_min(-0.5)",
            "torch.clamp({a}, min=-0.5)",
            kinks=CLAMP_KINKS,
            diverges=(_CLAMP_NAN,),
        ),
        unary(
            "clamp_max",
            "{a}.clamp_max(0.5)",
            "torch.clamp({a}, max=0.5)",
            kinks=CLAMP_KINKS,
            diverges=(_CLAMP_NAN,),
        ),
    ),
)
