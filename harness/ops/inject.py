"""Inject a bug into the engine for a while: flip the sign of one backward rule.

The engine looks its rules up once, at import, into `harness.engine.tensor._R`; patching
`BACKWARD_RULES` alone would change nothing that ops use. So both tables are patched, and
restored on exit. Used by the tests that show the matrix and the fuzzer catch a wrong rule.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from harness.engine import rules
from harness.engine import tensor as tensor_module


def negated(rule):
    """A rule returning the negated gradients of `rule` (None stays None)."""

    def flipped(node, g):
        return tuple(None if x is None else np.negative(x) for x in rule(node, g))

    flipped.__name__ = rule.__name__
    return flipped


@contextlib.contextmanager
def patched_rule(op: str, rule) -> Iterator[None]:
    """Use `rule` as the backward rule of `op` inside the block (both lookup tables)."""
    tables = [rules.BACKWARD_RULES, tensor_module._R]
    saved = [t[op] for t in tables]
    try:
        for t in tables:
            t[op] = rule
        yield
    finally:
        for t, old in zip(tables, saved, strict=True):
            t[op] = old


@contextlib.contextmanager
def flipped_rule(op: str) -> Iterator[None]:
    """The backward rule of `op` with its sign flipped, inside the block."""
    with patched_rule(op, negated(rules.BACKWARD_RULES[op])):
        yield
