"""The engine's primitives, each forward beside its backward rule and its facts (see `base`).

Importing this package registers every primitive, in the order of the modules below: that is
the order of `PRIMITIVES` and of the op matrix.
"""

# isort: off
# Registration order: elementwise first, conversions, then the vision primitives (ruff would
# sort the names).
from . import elementwise, unary, linalg, nn, reductions, shape, indexing, conversions  # noqa: F401

# Then burn's wider tensor API (issue 23): layout, math, ordering, selection, activations,
# and the interpolation of burn-nn's Interpolate modules (issue 28).
from . import activation, conv, pool, lattice, interpolate  # noqa: F401
from . import layout, trig, rounding, ordering, selection, activation_checks  # noqa: F401
from . import module_checks
from . import half_ops  # noqa: F401  (last: the half forwards of registered primitives)

# isort: on
from .arrays import unbroadcast
from .base import PRIMITIVES, Primitive, differentiable, rule_for, untracked
from .facts import Check

__all__ = [
    "PRIMITIVES",
    "Check",
    "Primitive",
    "checks",
    "composite_checks",
    "differentiable",
    "rule_for",
    "unbroadcast",
    "untracked",
]


def checks() -> tuple[Check, ...]:
    """Every registered check, in registration order."""
    return tuple(check for op in PRIMITIVES.values() for check in op.checks)


def composite_checks() -> tuple[Check, ...]:
    """The checks of functions burn composes from primitives (no rule of their own)."""
    return (
        activation.COMPOSITE_CHECKS
        + shape.COMPOSITE_CHECKS
        + layout.COMPOSITE_CHECKS
        + ordering.COMPOSITE_CHECKS
        + selection.COMPOSITE_CHECKS
        + activation_checks.COMPOSITE_CHECKS
        + conv.COMPOSITE_CHECKS
        + module_checks.COMPOSITE_CHECKS
    )
