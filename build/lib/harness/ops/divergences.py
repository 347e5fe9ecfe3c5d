"""The one table of known engine-vs-PyTorch divergences in the op matrix.

A comparison in the matrix is keyed `op/dtype/shape/valueset/check`, for example
`relu/float32/3x2/specials/vjp.a` (checks: `shape`, `forward`, `forward[1]`, `vjp.<input>`).
A `Divergence` matches keys with a glob. A declared divergence must still diverge: in every
(op, dtype) matrix item where it matches at least one comparison, at least one of those
comparisons has to disagree, otherwise the item fails with "declared divergence vanished".
A declaration that matches no comparison of a full run is reported as unused. A declaration
also states the `Relation` the values keep where they diverge (for example "the engine has no
gradient", or "differs only where torch is 0"): a divergence outside it fails, so that a
declared difference cannot hide a new bug at the same place.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# The relation a declaration keeps is the case API's `Relation` (text + `holds`): here
# `holds(torch_value, engine_value)`, either of which may be None (no gradient on that side).
# A declared divergence is not a blank cheque: if a later change breaks the engine further at
# the same place (a flipped sign inside a declared rounding difference), the relation fails
# and so does the item.
from harness.case import Relation
from harness.tolerances import default_tolerance


@dataclass(frozen=True)
class Divergence:
    """A glob over comparison keys, why the two sides legitimately differ there, and the
    relation their values keep (None: no values to relate, such as a shape check)."""

    pattern: str
    reason: str
    relation: Relation | None = None

    def matches(self, key: str) -> bool:
        return fnmatch.fnmatchcase(key, self.pattern)


def _differing(t: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Elements that disagree under the dtype's default tolerance (NaN matches NaN)."""
    atol = default_tolerance(t.dtype.name).atol
    with np.errstate(invalid="ignore"):
        agree = (t == e) | (np.abs(t - e) <= atol) | (np.isnan(t) & np.isnan(e))
    return ~agree


def only_where(text: str, pred: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Relation:
    """The values differ only at elements where `pred(torch, engine)` is true."""

    def holds(t, e) -> bool:
        if t is None or e is None or np.shape(t) != np.shape(e):
            return False
        t, e = np.asarray(t), np.asarray(e)
        d = _differing(t, e)
        return bool(np.all(pred(t[d], e[d])))

    return Relation(f"differs only where {text}", holds)


def _no_engine_gradient(t, e) -> bool:
    return t is not None and e is None


def _close(rtol: float) -> Relation:
    def holds(t, e) -> bool:
        return t is not None and e is not None and bool(np.allclose(t, e, rtol=rtol, atol=0))

    return Relation(f"equal within rtol {rtol:g}", holds)


def _same_total(t, e) -> bool:
    """The gradient mass is the same, only distributed differently (ties)."""
    return t is not None and e is not None and bool(np.isclose(np.sum(t), np.sum(e)))


NO_ENGINE_GRADIENT = Relation("the engine has no gradient", _no_engine_gradient)
SAME_TOTAL = Relation("same total, distributed differently", _same_total)
ENGINE_NONFINITE = only_where("the engine's value is NaN or infinite", lambda t, e: ~np.isfinite(e))
TORCH_ZERO = only_where("torch's value is 0", lambda t, e: t == 0)
NONFINITE_EITHER = only_where(
    "either value is NaN or infinite", lambda t, e: ~(np.isfinite(t) & np.isfinite(e))
)
TORCH_ZERO_ENGINE_NAN = only_where(
    "torch is 0 and the engine NaN", lambda t, e: (t == 0) & np.isnan(e)
)


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
        SAME_TOTAL,
    ),
    Divergence(
        "cast/*/*/*/vjp.a",
        "burn's autodiff float_cast returns a new untracked tensor: no gradient flows through "
        "a cast; torch's .to(dtype) is differentiable (harness.engine.tensor.Tensor.cast)",
        NO_ENGINE_GRADIENT,
    ),
    Divergence(
        "div_scalar/float64/*/*/vjp.a",
        "burn's div_scalar backward computes 1/s in f32 even for f64 tensors, so the float64 "
        "gradient carries a float32 rounding (harness.engine.rules.div_scalar_backward)",
        _close(1e-6),
    ),
    Divergence(
        "div/*/*/specials/vjp.b",
        "divisor gradient with a subnormal divisor: burn's -a/(b*b) underflows b*b to 0 "
        "(0/0 = NaN), torch's -(a/b)/b does not",
        ENGINE_NONFINITE,
    ),
    Divergence(
        "powi_scalar[[]0]/*/*/kinks/vjp.a",
        "x^0 at x = 0: burn's rule p * x^(p-1) gives 0 * inf = NaN; torch special-cases "
        "exponent 0 to a zero gradient",
        TORCH_ZERO_ENGINE_NAN,
    ),
    Divergence(
        "powi_scalar[[]0]/*/*/specials/vjp.a",
        "x^0 at 0, -0.0 and NaN: burn's p * x^(p-1) gives NaN; torch gives a zero gradient",
        TORCH_ZERO_ENGINE_NAN,
    ),
    Divergence(
        "sqrt/*/*/kinks/vjp.a",
        "sqrt at -0.0: burn's x^-0.5 / 2 is +inf, torch's grad / (2 sqrt(x)) divides by -0.0 "
        "and gives -inf (the cotangent's sign decides which side of inf each lands on)",
        only_where("both are infinite", lambda t, e: np.isinf(t) & np.isinf(e)),
    ),
    Divergence(
        "sqrt/*/*/specials/vjp.a",
        "sqrt at -0.0 (+inf vs -inf, see kinks) and at -inf: burn's (-inf)^-0.5 / 2 is 0, "
        "torch's grad / (2 sqrt(-inf)) is NaN",
        NONFINITE_EITHER,
    ),
    Divergence(
        "abs/*/*/specials/vjp.a",
        "abs at NaN: the engine's g * sign(x) gives NaN (numpy sign(NaN) = NaN); torch's abs "
        "backward gives 0 there",
        TORCH_ZERO_ENGINE_NAN,
    ),
    Divergence("clamp/*/*/specials/vjp.a", _CLAMP_NAN, TORCH_ZERO),
    Divergence("clamp_min/*/*/specials/vjp.a", _CLAMP_NAN, TORCH_ZERO),
    Divergence("clamp_max/*/*/specials/vjp.a", _CLAMP_NAN, TORCH_ZERO),
)


def declared(key: str, table: tuple[Divergence, ...] = DIVERGENCES) -> Divergence | None:
    """The first declaration matching `key`, or None."""
    for div in table:
        if div.matches(key):
            return div
    return None
