"""Rounding primitives and `sign`: piecewise constant, so burn-autodiff's nodes give a zero
gradient (`crates/burn-autodiff/src/ops/tensor.rs`: `float_round`, `float_floor`,
`float_ceil`, `float_trunc` return `float_zeros` of the input's shape; `float_sign` returns
`grad * 0`), burn commit 2c06be351006851d42fdb6df16b976f4a82d9747.

Forwards are flex's (`crates/burn-flex/src/ops/unary.rs`, `ops/float.rs` `float_sign`):
`round` rounds half to even (flex corrects Rust's half-away-from-zero `round`), as NumPy and
torch do; `sign` keeps NaN, maps both zeros to +0.0 and everything else to `copysign(1, x)`.

A sign-flipped copy of these rules is the same rule (-0 == 0), so the op matrix's injected-bug
test cannot see one; tests/test_ops_matrix.py says so for each.
"""

from __future__ import annotations

import numpy as np

from . import facts
from .base import Array, Grad, SavedShape, Tracked, differentiable
from .facts import Diverges, unary

_HALVES = (0.5, 1.5, 2.5, -0.5, -2.5, -0.0)


def zeros_backward(s: SavedShape, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn's `float_zeros(shape)`: +0.0 everywhere, whatever g holds (NaN included).
    return (np.zeros(s.shape, dtype=g.dtype),)


def _rounding(name: str, fn, doc: str, torch: str):
    def forward(x: Array, /) -> tuple[Array, SavedShape]:
        return fn(x), SavedShape(x.shape)

    forward.__name__ = name
    forward.__doc__ = doc
    return differentiable(
        name,
        forward,
        zeros_backward,
        checks=(unary(name, f"{{a}}.{name}()", torch, kinks=_HALVES),),
    )


ROUND = _rounding(
    "round", np.rint, "Round to the nearest integer, half to even (flex).", "torch.round({a})"
)
FLOOR = _rounding("floor", np.floor, "Round down.", "torch.floor({a})")
CEIL = _rounding("ceil", np.ceil, "Round up.", "torch.ceil({a})")
TRUNC = _rounding("trunc", np.trunc, "Round towards zero.", "torch.trunc({a})")


def sign(x: Array, /) -> tuple[Array, None]:
    """-1, 0 or 1 by the sign of each element; NaN stays NaN and -0.0 gives +0.0 (flex's
    `float_sign`; an int tensor stays int, burn's `int_sign`). PyTorch difference:
    torch.sign(NaN) is 0."""
    if x.dtype.kind in "iu":
        return np.sign(x), None
    one = np.copysign(x.dtype.type(1), x)
    return np.where(x == 0, x.dtype.type(0), np.where(np.isnan(x), x, one)), None


def sign_backward(s: None, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn's `grad * 0` (mul_scalar): -0.0 where g < 0, NaN where g is not finite.
    return (g * g.dtype.type(0),)


SIGN = differentiable(
    "sign",
    sign,
    sign_backward,
    checks=(
        unary(
            "sign",
            "{a}.sign()",
            "torch.sign({a})",
            kinks=(0.0, -0.0, 1.0, -1.0),
            diverges=(
                Diverges(
                    "*/*/specials/forward",
                    "sign(NaN): flex's float_sign keeps NaN, torch.sign gives 0 "
                    "(harness.engine.ops.rounding.sign)",
                    facts.TORCH_ZERO_ENGINE_NAN,
                ),
            ),
        ),
    ),
)
