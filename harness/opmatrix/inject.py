"""Inject a bug into the engine for a while: flip the sign of one backward rule.

Ops read their primitive's `backward` when they build a graph node, so replacing it takes
effect at once; it is restored on exit. Used by the tests that show the matrix and the fuzzer
catch a wrong rule.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

import numpy as np

from harness.engine.ops import PRIMITIVES, rule_for


def negated(rule):
    """A rule returning the negated gradients of `rule` (None stays None)."""

    def flipped(saved, g, tracked):
        return tuple(None if x is None else np.negative(x) for x in rule(saved, g, tracked))

    flipped.__name__ = rule.__name__
    return flipped


@contextlib.contextmanager
def patched_rule(op: str, rule) -> Iterator[None]:
    """Use `rule` as the backward rule of `op` inside the block."""
    primitive = PRIMITIVES[op]
    saved = primitive.backward
    primitive.backward = rule
    try:
        yield
    finally:
        primitive.backward = saved


def differentiable_ops() -> list[str]:
    """The names of the primitives that have a backward rule, sorted."""
    return sorted(name for name, op in PRIMITIVES.items() if op.backward is not None)


def rule_name(op: str) -> str:
    """`op` if it has a backward rule (the type of the CLIs' `--inject-flip OP`)."""
    if op not in differentiable_ops():
        known = ", ".join(differentiable_ops())
        raise argparse.ArgumentTypeError(f"no backward rule named {op!r}; known: {known}")
    return op


@contextlib.contextmanager
def flipped_rule(op: str) -> Iterator[None]:
    """The backward rule of `op` with its sign flipped, inside the block."""
    with patched_rule(op, negated(rule_for(op))):
        yield
