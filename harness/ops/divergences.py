"""The one table of known engine-vs-PyTorch divergences in the op matrix.

A comparison in the matrix is keyed `op/dtype/shape/valueset/check`, for example
`relu/float32/3x2/specials/vjp.a` (checks: `shape`, `forward`, `forward[1]`, `vjp.<input>`).
A `Divergence` matches keys with a glob. A declared divergence must still diverge: in every
(op, dtype) matrix item where it matches at least one comparison, at least one of those
comparisons has to disagree, otherwise the item fails with "declared divergence vanished".
A declaration that matches no comparison of a full run is reported as unused.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class Divergence:
    """A glob over comparison keys and why the two sides legitimately differ there."""

    pattern: str
    reason: str

    def matches(self, key: str) -> bool:
        return fnmatch.fnmatchcase(key, self.pattern)


_RANK = (
    "burn has no 0-d tensors: full reductions return [1] where torch returns 0-d "
    "(harness.engine.tensor.Tensor.sum)"
)

_CLAMP_NAN = (
    "clamp at NaN: burn masks only x < min and x > max, so the gradient passes at NaN; torch "
    "keeps it only where min <= x <= max, so NaN gets 0 (harness.engine.rules.clamp_backward; "
    "its comment says 'as in PyTorch', which is true at the bounds but not at NaN)"
)

DIVERGENCES: tuple[Divergence, ...] = (
    Divergence("sum/*/*/*/shape", _RANK),
    Divergence("mean/*/*/*/shape", _RANK),
    Divergence("max/*/*/*/shape", _RANK),
    Divergence(
        "max/*/*/kinks/vjp.a",
        "full max() on ties: burn sends the whole gradient to the first maximum (max_dim "
        "indices); torch's max() without dim splits it evenly among the tied maxima",
    ),
    Divergence(
        "cast/*/*/*/vjp.a",
        "burn's autodiff float_cast returns a new untracked tensor: no gradient flows through "
        "a cast; torch's .to(dtype) is differentiable (harness.engine.tensor.Tensor.cast)",
    ),
    Divergence(
        "div_scalar/float64/*/*/vjp.a",
        "burn's div_scalar backward computes 1/s in f32 even for f64 tensors, so the float64 "
        "gradient carries a float32 rounding (harness.engine.rules.div_scalar_backward)",
    ),
    Divergence(
        "div/*/*/specials/vjp.b",
        "divisor gradient with a subnormal divisor: burn's -a/(b*b) underflows b*b to 0 "
        "(0/0 = NaN), torch's -(a/b)/b does not",
    ),
    Divergence(
        "powi_scalar[[]0]/*/*/kinks/vjp.a",
        "x^0 at x = 0: burn's rule p * x^(p-1) gives 0 * inf = NaN; torch special-cases "
        "exponent 0 to a zero gradient",
    ),
    Divergence(
        "powi_scalar[[]0]/*/*/specials/vjp.a",
        "x^0 at 0, -0.0 and NaN: burn's p * x^(p-1) gives NaN; torch gives a zero gradient",
    ),
    Divergence(
        "sqrt/*/*/kinks/vjp.a",
        "sqrt at -0.0: burn's x^-0.5 / 2 is +inf, torch's grad / (2 sqrt(x)) divides by -0.0 "
        "and gives -inf (the cotangent's sign decides which side of inf each lands on)",
    ),
    Divergence(
        "sqrt/*/*/specials/vjp.a",
        "sqrt at -0.0 (+inf vs -inf, see kinks) and at -inf: burn's (-inf)^-0.5 / 2 is 0, "
        "torch's grad / (2 sqrt(-inf)) is NaN",
    ),
    Divergence(
        "abs/*/*/specials/vjp.a",
        "abs at NaN: the engine's g * sign(x) gives NaN (numpy sign(NaN) = NaN); torch's abs "
        "backward gives 0 there",
    ),
    Divergence("clamp/*/*/specials/vjp.a", _CLAMP_NAN),
    Divergence("clamp_min/*/*/specials/vjp.a", _CLAMP_NAN),
    Divergence("clamp_max/*/*/specials/vjp.a", _CLAMP_NAN),
)


def declared(key: str, table: tuple[Divergence, ...] = DIVERGENCES) -> Divergence | None:
    """The first declaration matching `key`, or None."""
    for div in table:
        if div.matches(key):
            return div
    return None
