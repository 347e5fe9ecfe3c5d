"""Comparisons, boolean not, dtype conversions and constants shaped like a tensor. All but `cast`
never carry a gradient: each such forward returns only its output (there is no rule to save
anything for). `cast`, differentiable as in burn, returns its input unchanged for a cast to the
same dtype, and the Tensor method then gives back the tensor itself."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .arrays import FLOAT_DTYPES, bool_mask, float_dtype
from .base import Array, Grad, Tracked, differentiable, untracked
from .facts import BOOL, INT, UNARY, Check, Input, binary, unary
from .half import burn_round, is_half

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


def _comparison(forward, engine: str, torch: str):
    """A comparison op: untracked (its output is boolean), checked on the integer grid."""
    return untracked(
        forward.__name__,
        forward,
        because=_BOOLEAN,
        checks=(_grid(forward.__name__, engine, torch),),
    )


EQUAL = _comparison(equal, "{a}.equal({b})", "torch.eq({a}, {b})")
GREATER = _comparison(greater, "{a}.greater({b})", "torch.gt({a}, {b})")
LOWER = _comparison(lower, "{a}.lower({b})", "torch.lt({a}, {b})")
EQUAL_ELEM = _comparison(equal_elem, "{a}.equal_elem(1.0)", "torch.eq({a}, 1.0)")
GREATER_ELEM = _comparison(greater_elem, "{a}.greater_elem(0.0)", "torch.gt({a}, 0.0)")
GREATER_EQUAL_ELEM = _comparison(
    greater_equal_elem, "{a}.greater_equal_elem(0.0)", "torch.ge({a}, 0.0)"
)
LOWER_ELEM = _comparison(lower_elem, "{a}.lower_elem(0.0)", "torch.lt({a}, 0.0)")
LOWER_EQUAL_ELEM = _comparison(lower_equal_elem, "{a}.lower_equal_elem(0.0)", "torch.le({a}, 0.0)")


def greater_equal(a: Array, b, /) -> Array:
    """Elementwise `>=`, a bool tensor."""
    return np.greater_equal(a, b)


def lower_equal(a: Array, b, /) -> Array:
    """Elementwise `<=`, a bool tensor."""
    return np.less_equal(a, b)


def not_equal(a: Array, b, /) -> Array:
    """Elementwise `!=`, a bool tensor (true at NaN, as IEEE)."""
    return np.not_equal(a, b)


def not_equal_elem(a: Array, value, /) -> Array:
    """Elementwise `!= value`, a bool tensor."""
    return np.not_equal(a, value)


GREATER_EQUAL = _comparison(greater_equal, "{a}.greater_equal({b})", "torch.ge({a}, {b})")
LOWER_EQUAL = _comparison(lower_equal, "{a}.lower_equal({b})", "torch.le({a}, {b})")
NOT_EQUAL = _comparison(not_equal, "{a}.not_equal({b})", "torch.ne({a}, {b})")
NOT_EQUAL_ELEM = _comparison(not_equal_elem, "{a}.not_equal_elem(1.0)", "torch.ne({a}, 1.0)")


def is_nan(x: Array, /) -> Array:
    """Where the value is NaN, a bool tensor (flex's `float_is_nan`)."""
    return np.isnan(x)


def is_inf(x: Array, /) -> Array:
    """Where the value is +inf or -inf, a bool tensor (flex's `float_is_inf`)."""
    return np.isinf(x)


def is_finite(x: Array, /) -> Array:
    """Where the value is neither NaN nor infinite (burn's `is_finite`), a bool tensor."""
    return np.isfinite(x)


def _predicate(forward, torch: str):
    return untracked(
        forward.__name__,
        forward,
        because=_BOOLEAN,
        checks=(unary(forward.__name__, f"{{a}}.{forward.__name__}()", torch),),
    )


IS_NAN = _predicate(is_nan, "torch.isnan({a})")
IS_INF = _predicate(is_inf, "torch.isinf({a})")
IS_FINITE = _predicate(is_finite, "torch.isfinite({a})")


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


@dataclass(slots=True)
class Cast:
    dtype: np.dtype  # the input's dtype, which the gradient is cast back to


def cast(x: Array, /, dtype) -> tuple[Array, Cast]:
    """Convert a float tensor to another float dtype; the gradient is cast back.

    burn 0.22's autodiff `float_cast` (`crates/burn-autodiff/src/ops/tensor.rs`, commit
    2c06be351006851d42fdb6df16b976f4a82d9747) registers a backward step that casts the
    gradient to the input's dtype, as PyTorch's `.to(dtype)` does (its `ToCopyBackward`
    casts the incoming gradient back to the source dtype): same values on both sides. A cast
    to the tensor's own dtype returns the tensor itself (the same node), where burn adds a
    cast step whose backward is the identity: the gradients are the same.
    """
    dt = float_dtype(dtype)
    return (x if x.dtype == dt else convert(x, dt)), Cast(x.dtype)


def convert(x: Array, dtype: np.dtype) -> Array:
    """`x` in another float dtype as flex's `float_cast` (float.rs) converts it: through f64,
    exact except into a narrower format; into float16/bfloat16 from float32/float64 with the
    `half` crate's rounding (`harness.engine.ops.half.burn_round`, which states the PyTorch
    difference: 1 ULP on a value just above a rounding tie)."""
    if is_half(dtype) and not is_half(x.dtype):
        return burn_round(x, dtype)
    return x.astype(dtype)


def cast_backward(s: Cast, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn-autodiff's cast step casts the gradient back with the same `float_cast`.
    return (g if g.dtype == s.dtype else convert(g, s.dtype),)


CAST = differentiable(
    "cast",
    cast,
    cast_backward,
    checks=(unary("cast", "{a}.cast('{other}')", "{a}.to(torch.{other})"),),
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
