"""Ops whose output never carries a gradient: comparisons, boolean not, dtype conversions and
constants shaped like a tensor. Each forward returns only its output (there is no rule to save
anything for); one that returns its input unchanged (a cast to the same dtype) gives back the
tensor itself."""

from __future__ import annotations

import numpy as np

from . import facts
from .arrays import FLOAT_DTYPES, bool_mask, float_dtype
from .base import Array, untracked
from .facts import BOOL, INT, UNARY, Check, Diverges, Input, binary, unary

_BOOLEAN = "boolean output"

# ---- comparisons: `other` is a tensor (broadcasting) or a scalar cast to the dtype ------------


def equal(a: Array, b, /) -> Array:
    """Elementwise `==`, a bool tensor."""
    return np.equal(a, b)


def equal_elem(a: Array, value, /) -> Array:
    """Elementwise `== value`, a bool tensor."""
    return np.equal(a, value)


def greater(a: Array, b, /) -> Array:
    """Elementwise `>`, a bool tensor."""
    return np.greater(a, b)


def greater_elem(a: Array, value, /) -> Array:
    """Elementwise `> value`, a bool tensor."""
    return np.greater(a, value)


def greater_equal_elem(a: Array, value, /) -> Array:
    """Elementwise `>= value`, a bool tensor."""
    return np.greater_equal(a, value)


def lower(a: Array, b, /) -> Array:
    """Elementwise `<`, a bool tensor."""
    return np.less(a, b)


def lower_elem(a: Array, value, /) -> Array:
    """Elementwise `< value`, a bool tensor."""
    return np.less(a, value)


def lower_equal_elem(a: Array, value, /) -> Array:
    """Elementwise `<= value`, a bool tensor."""
    return np.less_equal(a, value)


def _grid(name: str, engine: str, torch: str) -> Check:
    """Comparisons draw small integers, so that both sides see ties."""
    if "{b}" in engine:
        return binary(name, engine, torch, a_domain="grid", b_domain="grid")
    return unary(name, engine, torch, domain="grid")


EQUAL = untracked(
    "equal",
    equal,
    because=_BOOLEAN,
    checks=(_grid("equal", "{a}.equal({b})", "torch.eq({a}, {b})"),),
)
GREATER = untracked(
    "greater",
    greater,
    because=_BOOLEAN,
    checks=(_grid("greater", "{a}.greater({b})", "torch.gt({a}, {b})"),),
)
LOWER = untracked(
    "lower",
    lower,
    because=_BOOLEAN,
    checks=(_grid("lower", "{a}.lower({b})", "torch.lt({a}, {b})"),),
)
EQUAL_ELEM = untracked(
    "equal_elem",
    equal_elem,
    because=_BOOLEAN,
    checks=(_grid("equal_elem", "{a}.equal_elem(1.0)", "torch.eq({a}, 1.0)"),),
)
GREATER_ELEM = untracked(
    "greater_elem",
    greater_elem,
    because=_BOOLEAN,
    checks=(_grid("greater_elem", "{a}.greater_elem(0.0)", "torch.gt({a}, 0.0)"),),
)
GREATER_EQUAL_ELEM = untracked(
    "greater_equal_elem",
    greater_equal_elem,
    because=_BOOLEAN,
    checks=(_grid("greater_equal_elem", "{a}.greater_equal_elem(0.0)", "torch.ge({a}, 0.0)"),),
)
LOWER_ELEM = untracked(
    "lower_elem",
    lower_elem,
    because=_BOOLEAN,
    checks=(_grid("lower_elem", "{a}.lower_elem(0.0)", "torch.lt({a}, 0.0)"),),
)
LOWER_EQUAL_ELEM = untracked(
    "lower_equal_elem",
    lower_equal_elem,
    because=_BOOLEAN,
    checks=(_grid("lower_equal_elem", "{a}.lower_equal_elem(0.0)", "torch.le({a}, 0.0)"),),
)


def bool_not(x: Array, /) -> Array:
    """Logical not of a bool tensor."""
    return np.logical_not(bool_mask("bool_not", x))


BOOL_NOT = untracked(
    "bool_not",
    bool_not,
    because=_BOOLEAN,
    checks=(Check("bool_not", "{a}.bool_not()", "torch.logical_not({a})", (Input("a", BOOL),)),),
)

# ---- conversions ----------------------------------------------------------------------------


def to_int(x: Array, /) -> Array:
    """Convert to int64 (truncating floats), untracked."""
    return x.astype(np.int64)


TO_INT = untracked(
    "int",
    to_int,
    because="integer output",
    checks=(unary("int", "{a}.int()", "{a}.to(torch.int64)", specials=False),),
)


def to_float(x: Array, /, dtype="float32") -> Array:
    """Convert an int or bool tensor to a float tensor (burn's `.float()`), untracked."""
    if x.dtype in FLOAT_DTYPES:
        raise TypeError("float: tensor is already float; use cast(dtype)")
    return x.astype(float_dtype(dtype))


TO_FLOAT = untracked(
    "float",
    to_float,
    because="conversion of an integer or boolean tensor (never tracked)",
    checks=(
        Check("float", "{a}.float('{dtype}')", "{a}.to(torch.{dtype})", (Input("a", INT),), UNARY),
    ),
)


def cast(x: Array, /, dtype) -> Array:
    """Convert a float tensor to another float dtype.

    Like burn's autodiff `float_cast`, the result is a new untracked tensor: gradients do
    not flow through a cast (PyTorch's `.to(dtype)` is differentiable).
    """
    dt = float_dtype(dtype)
    return x if x.dtype == dt else x.astype(dt)


CAST = untracked(
    "cast",
    cast,
    because="burn's autodiff float_cast returns a new untracked tensor",
    checks=(
        unary(
            "cast",
            "{a}.cast('{other}')",
            "{a}.to(torch.{other})",
            diverges=(
                Diverges(
                    "*/*/*/vjp.a",
                    "burn's autodiff float_cast returns a new untracked tensor: no gradient "
                    "flows through a cast; torch's .to(dtype) is differentiable "
                    "(harness.engine.ops.conversions.cast)",
                    facts.NO_ENGINE_GRADIENT,
                ),
            ),
        ),
    ),
)

# ---- constants shaped like a tensor -----------------------------------------------------------


def zeros_like(x: Array, /) -> Array:
    """Zeros with this tensor's shape, dtype and device (untracked)."""
    return np.zeros_like(x)


def ones_like(x: Array, /) -> Array:
    """Ones with this tensor's shape, dtype and device (untracked)."""
    return np.ones_like(x)


def full_like(x: Array, /, value) -> Array:
    """`value` everywhere, with this tensor's shape, dtype and device (untracked)."""
    return np.full_like(x, value)


ZEROS_LIKE = untracked(
    "zeros_like",
    zeros_like,
    because="constant",
    checks=(unary("zeros_like", "{a}.zeros_like()", "torch.zeros_like({a})"),),
)
ONES_LIKE = untracked(
    "ones_like",
    ones_like,
    because="constant",
    checks=(unary("ones_like", "{a}.ones_like()", "torch.ones_like({a})"),),
)
FULL_LIKE = untracked(
    "full_like",
    full_like,
    because="constant",
    checks=(unary("full_like", "{a}.full_like(2.5)", "torch.full_like({a}, 2.5)"),),
)
