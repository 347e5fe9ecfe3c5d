"""Optimizer groups: rules over ids and paths with a catch-all base, not disjoint lists.

burn's `ModuleOptimizer::with_group`, per-parameter rates from a `ModuleLearningRate`, and the
per-parameter optimization context (burn-optim `src/optim/module/module_optimizer.rs`,
`src/optim/module/record/mod.rs`, read at burn commit 2c06be351006851d42fdb6df16b976f4a82d9747).

`ModuleOptimizer.with_group(group, optim, grad_clipping=None)` adds a per-tensor optimizer
(`AdamConfig().build()`, ...) with its own clipping for the params `group` matches. burn's
rules, all kept:
- the optimizer's own optimizer and clipping are the first group, `ParamGroup.all()`: a param
  in no added group uses them; a param in several groups uses the **last** one added;
- the group is resolved once, when a param gets its state: from then on the param keeps the
  optimizer and the clipping it was resolved to (its *context*), whatever is added later
  (`with_grad_clipping` after the first step changes only the params without state yet);
- adding a group **clears the state** of every param it matches (by ParamId and by the path
  the state was recorded with), so those params restart under the new group at their next
  step; the others keep their state and their context;
- the rate is looked up at every step: `step(lr, ...)` takes a float or a
  `ModuleLearningRate` (a `ModuleLrScheduler.step()`), asked `lr_from_param(id, path)`;
- `to_record()` keeps the path of each state (`StateRecord.paths`, burn's
  `OptimizerRecord.paths`), and `load_record` routes each state to the group its id and path
  match now (a record without paths: id groups and the base only).

The optimizer without groups and with float rates keeps its fast path (base.py): paths are
then recorded only for the states created at a step, which is all that burn's retain and
record read. burn rewrites a state's path at each step; here it is the path of the step that
created the state: the two differ only if one ParamId moves to another field between steps.

PyTorch differences (the `param_groups` case):
- `torch.optim` groups are explicit lists of tensors: every tensor is in exactly one group; a
  tensor in two groups raises `ValueError: some parameters appear in more than one parameter
  group`, and a tensor in no group is never updated. Here groups are rules over ids and paths
  with a catch-all base: a param in two groups takes the later one, a param in none takes the
  base optimizer and is updated.
- A group carries a whole optimizer (its weight decay, momentum, betas) and its own clipping;
  PyTorch's group keys (`lr`, `weight_decay`, ...) override one optimizer's defaults and
  clipping is a separate call over any tensors. Rates come from the separate
  `ModuleLearningRate`, not from the optimizer group.
- `add_param_group` refuses tensors already present and keeps all state; `with_group` accepts
  any overlap and drops the state of what it matches.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

from harness.engine.lr_scheduler.module_lr_scheduler import ModuleLearningRate
from harness.engine.module import Module, Param, ParamId, consume_map
from harness.engine.module.param_group import ParamGroup
from harness.engine.optim.clipping import GradientClipping

__all__ = ["Grouping", "StateRecord"]


class StateRecord(dict):
    """`to_record()`: the per-ParamId states, plus `paths` (ParamId -> module path, burn's
    `OptimizerRecord.paths`), read by `load_record` to route each state to its group. A plain
    dict is a record without paths."""

    def __init__(self, states=(), paths=None) -> None:
        super().__init__(states)
        self.paths: dict[ParamId, str] = dict(paths or {})


class Grouping:
    """The groups added to one ModuleOptimizer, and each stateful param's context (the
    optimizer and clipping it was resolved to; its state stays in `ModuleOptimizer.records`)."""

    __slots__ = ("contexts", "groups")

    def __init__(self, contexts: dict) -> None:
        self.groups: list[tuple[ParamGroup, object, GradientClipping | None]] = []
        self.contexts: dict[ParamId, tuple[object, GradientClipping | None]] = contexts


def grouping(optimizer) -> Grouping:
    """The optimizer's Grouping, created on first use: the states it already holds keep the
    base optimizer and the clipping they were stepped with."""
    if optimizer.grouping is None:
        base = (optimizer.optim, optimizer.grad_clipping)
        optimizer.grouping = Grouping(dict.fromkeys(optimizer.records, base))
    return optimizer.grouping


def add_group(optimizer, group, optim, grad_clipping):
    """burn's `with_group`: append the group, clear the state of the params it matches."""
    if not isinstance(group, ParamGroup):
        raise TypeError(f"with_group: expected a ParamGroup, got {type(group).__name__}")
    if not callable(getattr(optim, "update", None)):
        raise TypeError(
            f"with_group: expected a per-tensor optimizer (e.g. AdamConfig().build()), got "
            f"{type(optim).__name__}"
        )
    if grad_clipping is not None and not isinstance(grad_clipping, GradientClipping):
        raise TypeError(
            "with_group: grad_clipping must be a GradientClipping or None, got "
            f"{type(grad_clipping).__name__}"
        )
    state = grouping(optimizer)
    state.groups.append((group, optim, grad_clipping))
    paths = optimizer.paths
    for pid in [pid for pid in optimizer.records if group.matches(pid, paths.get(pid))]:
        del optimizer.records[pid]
        del state.contexts[pid]
        paths.pop(pid, None)
    return optimizer


def resolve(optimizer, pid, path: str | None):
    """`(optim, clipping)` of the last group matching `(pid, path)`, else the base's."""
    if optimizer.grouping is not None:
        for group, optim, clipping in reversed(optimizer.grouping.groups):
            if group.matches(pid, path):
                return optim, clipping
    return optimizer.optim, optimizer.grad_clipping


def has_clipping(optimizer) -> bool:
    """burn's `has_gradient_clipping`: any group clips."""
    if optimizer.grad_clipping is not None:
        return True
    groups = () if optimizer.grouping is None else optimizer.grouping.groups
    return any(clipping is not None for _, _, clipping in groups)


def loaded(optimizer) -> None:
    """After `load_record`: each state's context resolved from its id and recorded path."""
    if optimizer.grouping is not None:
        paths = optimizer.paths
        optimizer.grouping.contexts = {
            pid: resolve(optimizer, pid, paths.get(pid)) for pid in optimizer.records
        }


def record_paths(optimizer, module: Module) -> None:
    """The path of each state that has none yet (the fast path's states, after a step)."""
    records, paths = optimizer.records, optimizer.paths
    for path, param in module.named_params():
        if param.id in records and param.id not in paths:
            paths[param.id] = path


def rate(lr) -> float:
    """A step's float rate, or TypeError naming what was passed."""
    if lr.__class__ is not float and not isinstance(lr, (int, float, np.floating)):
        kind = type(lr).__name__
        raise TypeError(f"step: lr must be a float or a ModuleLearningRate, got {kind}")
    return float(lr)


def step(optimizer, lr, module: Module, grads) -> Module:
    """burn's `ModuleOptimizerMapper`: each param with a gradient, with its path, its context
    (or the group it resolves to) and its rate from the policy."""
    policy = lr if isinstance(lr, ModuleLearningRate) else ModuleLearningRate(rate(lr))
    if not isinstance(module, Module):
        raise TypeError(f"step: expected a Module, got {type(module).__name__}")
    return consume_map(module, _mapper(optimizer, policy, module, grads._grads))


def _mapper(optimizer, policy: ModuleLearningRate, module: Module, pending: dict) -> Callable:
    # The paths in visiting order, per id (a ParamId used twice has one path per use).
    queued: dict[ParamId, deque] = {}
    for path, param in module.named_params():
        queued.setdefault(param.id, deque()).append(path)
    records, paths = optimizer.records, optimizer.paths
    contexts = None if optimizer.grouping is None else optimizer.grouping.contexts
    base = (optimizer.optim, optimizer.grad_clipping)

    def update(param: Param) -> Param:
        pid = param.id
        grad = pending.pop(pid, None)
        if grad is None:
            return param
        uses = queued.get(pid)
        path = uses.popleft() if uses else None
        state = records.pop(pid, None)
        if state is not None:
            optim, clipping = base if contexts is None else contexts.pop(pid)
        else:
            optim, clipping = resolve(optimizer, pid, path)
        if clipping is not None:
            grad = clipping.clip_array(grad)
        tensor = param._value
        rate = policy.lr_from_param(pid, path)
        value, state = optim.update(rate, tensor._data, grad, state)
        if state is not None:
            records[pid] = state
            paths[pid] = path
            if contexts is not None:
                contexts[pid] = (optim, clipping)
        else:  # burn drops the whole context with the state
            paths.pop(pid, None)
        return Param(pid, tensor._updated(value))

    return update
