"""Inject a bug into the engine for a while: flip the sign of one backward rule.

Ops read the one table `BACKWARD_RULES` at call time, so patching an entry takes effect at
once; it is restored on exit. Used by the tests that show the matrix and the fuzzer catch a
wrong rule.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

import numpy as np

from harness.engine import rules


def negated(rule):
    """A rule returning the negated gradients of `rule` (None stays None)."""

    def flipped(node, g):
        return tuple(None if x is None else np.negative(x) for x in rule(node, g))

    flipped.__name__ = rule.__name__
    return flipped


@contextlib.contextmanager
def patched_rule(op: str, rule) -> Iterator[None]:
    """Use `rule` as the backward rule of `op` inside the block."""
    saved = rules.BACKWARD_RULES[op]
    rules.BACKWARD_RULES[op] = rule
    try:
        yield
    finally:
        rules.BACKWARD_RULES[op] = saved


def rule_name(op: str) -> str:
    """`op` if it has a backward rule (the type of the CLIs' `--inject-flip OP`)."""
    if op not in rules.BACKWARD_RULES:
        known = ", ".join(sorted(rules.BACKWARD_RULES))
        raise argparse.ArgumentTypeError(f"no backward rule named {op!r}; known: {known}")
    return op


@contextlib.contextmanager
def flipped_rule(op: str) -> Iterator[None]:
    """The backward rule of `op` with its sign flipped, inside the block."""
    with patched_rule(op, negated(rules.BACKWARD_RULES[op])):
        yield
