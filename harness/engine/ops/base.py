"""The registry of primitives: each forward beside its backward rule, registered once.

A primitive is a forward function on NumPy arrays and, when it is differentiable, the backward
rule that undoes it. The contract, in one line each:

- `forward(*inputs, /, *params) -> (out, saved)`: the positional-only parameters are the tensor
  inputs that get gradients; the others are parameters (dims, scalars, masks, indices). `saved`
  is a named record (a slotted dataclass), or None when the rule needs nothing.
- `rule(saved, g, tracked) -> tuple[Grad, ...]`: `g` is the gradient of the output; the result
  has one entry per input, the gradient (shaped like that input) or None. `tracked[i]` is None
  when input i is untracked, and the rule skips that work. Its return annotation states the
  arity (`tuple[Grad]`, `tuple[Grad, Grad]`, or `tuple[Grad, ...]` for a variadic input) and
  `differentiable()` checks it against the forward's inputs; the backward pass checks the
  length of what the rule returns (harness.engine.autodiff).

Rules never write into `g` or into saved arrays: several handles may share them. They may
return views (`reshape`, `swapaxes`, `broadcast_to`), which downstream rules only read.

A primitive also carries the `Check`s of the Tensor methods built on it (harness.engine.ops.
facts): the PyTorch counterpart, input domains, kinks and declared divergences that the op
matrix, the fuzzer and the divergence list read. Adding an op is one registration plus tests.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import MissingRuleError, RuleArityError
from . import half
from .facts import Check

Array = np.ndarray
Grad = np.ndarray | None
# Per input of an op output: its graph node, or None when that input is untracked.
Tracked = tuple


# Saved records several primitives share (the others define theirs beside the op).


@dataclass(slots=True)
class SavedInput:
    x: Array


@dataclass(slots=True)
class SavedOutput:
    out: Array


@dataclass(slots=True)
class SavedShape:
    shape: tuple[int, ...]  # the input's shape


class Primitive:
    """A registered primitive. `backward` is None for an op whose output is never tracked
    (`untracked` says why). The op plumbing reads `backward` at each call, so replacing it
    (harness.opmatrix.inject) changes every graph built afterwards, and no copy can disagree."""

    __slots__ = (
        *("backward", "checks", "forward", "inputs", "name", "params", "untracked"),
        *("half_forward", "half_rule"),
    )

    def __init__(self, name, forward, backward, inputs, params, untracked, checks) -> None:
        self.name = name
        self.forward = forward
        self.backward = backward
        # float16/bfloat16 (harness.engine.ops.half): the forward and rule that run on half
        # arrays; `forward` and `backward` dispatch to them (wrapped at registration).
        self.half_forward = None
        self.half_rule = None
        self.inputs: tuple[str, ...] = inputs  # "*name" for a variadic input (cat)
        self.params: tuple[str, ...] = params
        self.untracked: str = untracked
        self.checks: tuple[Check, ...] = checks

    @property
    def variadic(self) -> bool:
        return self.inputs[0].startswith("*")

    def __repr__(self) -> str:
        rule = self.backward.__name__ if self.backward is not None else f"none: {self.untracked}"
        return f"Primitive({self.name}({', '.join(self.inputs)}), rule={rule})"


PRIMITIVES: dict[str, Primitive] = {}
"""Every primitive by name, in registration order (the op matrix's order)."""


def differentiable(
    name: str, forward: Callable, rule: Callable, *, checks: tuple[Check, ...] = ()
) -> Primitive:
    """Register `forward` with its backward `rule`; raise RuleArityError unless the rule
    returns one gradient per input of the forward."""
    inputs, params = _signature(name, forward)
    arity = rule_arity(name, rule)
    variadic = inputs[0].startswith("*")
    if (arity is None) != variadic or (not variadic and arity != len(inputs)):
        returns = "a gradient per tensor" if arity is None else f"{arity} gradient(s)"
        raise RuleArityError(
            f"{name}: rule {rule.__name__} returns {returns}, but {forward.__name__} has "
            f"{len(inputs)} input(s) ({', '.join(inputs)})"
        )
    return _register(Primitive(name, forward, rule, inputs, params, "", _own(name, checks)))


def untracked(
    name: str, forward: Callable, *, because: str, checks: tuple[Check, ...] = ()
) -> Primitive:
    """Register an op whose output never carries a gradient, with the reason."""
    inputs, params = _signature(name, forward)
    return _register(Primitive(name, forward, None, inputs, params, because, _own(name, checks)))


def rule_arity(name: str, rule: Callable) -> int | None:
    """How many gradients `rule` returns, from its return annotation (None: one per tensor of
    a variadic input). A rule without `-> tuple[Grad, ...]` is refused: its arity is unknown."""
    hints = typing.get_type_hints(rule)
    returns = hints.get("return")
    if typing.get_origin(returns) is not tuple:
        raise RuleArityError(
            f"{name}: rule {rule.__name__} must be annotated -> tuple[Grad, ...] (its arity)"
        )
    args = typing.get_args(returns)
    return None if args[-1:] == (Ellipsis,) else len(args)


def rule_for(name: str) -> Callable:
    """The backward rule of `name`; MissingRuleError naming the op when it has none."""
    op = PRIMITIVES.get(name)
    if op is None or op.backward is None:
        raise MissingRuleError(f"no backward rule registered for op '{name}'")
    return op.backward


def _signature(name: str, forward: Callable) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(tensor inputs, parameters) of a forward: positional-only (or `*args`) vs the rest."""
    inputs, params = [], []
    for p in inspect.signature(forward).parameters.values():
        if p.kind is p.POSITIONAL_ONLY:
            inputs.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            inputs.append(f"*{p.name}")
        else:
            params.append(p.name)
    if not inputs:
        raise RuleArityError(f"{name}: forward {forward.__name__} has no tensor input (a, /)")
    return tuple(inputs), tuple(params)


def _own(name: str, checks: tuple[Check, ...]) -> tuple[Check, ...]:
    return tuple(check.of(name) for check in checks)


def _register(op: Primitive) -> Primitive:
    if op.name in PRIMITIVES:
        raise ValueError(f"primitive {op.name!r} is registered twice")
    if op.backward is not None and op.name not in half.NATIVE:
        half.dispatch(op)
    PRIMITIVES[op.name] = op
    return op
