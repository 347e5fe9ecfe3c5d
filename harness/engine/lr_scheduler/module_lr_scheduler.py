"""Learning rates per parameter group: burn's `ModuleLearningRate`, `ModuleLrScheduler` and
`ModuleLrSchedulerConfig` (burn-optim `src/lr_scheduler/module_lr_scheduler.rs`, read at burn
commit 2c06be351006851d42fdb6df16b976f4a82d9747).

A `ModuleLrScheduler` holds a base scheduler (group `ParamGroup.all()`) and one scheduler per
added group. `step()` steps **every** scheduler once, in the order the groups were added, and
returns a `ModuleLearningRate`: the rate of each group at this step. The optimizer asks it
`lr_from_param(id, path)` for every param it updates, and the **last** group that matches the
param wins (the base matches every param, so a param in no added group gets the base rate).
Each scheduler keeps burn's convention that its first `step()` returns its initial rate
(`harness.engine.lr_scheduler`).

Every scheduler config's `init()` returns its scheduler wrapped in a `ModuleLrScheduler`, as
burn 0.22's do (`build()` returns the bare one); `ModuleLrScheduler(scheduler)` wraps any
scheduler, and a float is a constant rate, as burn's `LearningRate` is a scheduler.

PyTorch differences (the `param_groups` case):
- PyTorch's schedulers are per optimizer: `LambdaLR(optim, [f0, f1])` scales each group's
  *initial* `lr` by its own factor, and every group is a list of tensors given up front. Here a
  group is a rule (`ParamGroup`) evaluated at every step, its schedule is any scheduler giving
  the rate itself, and rate groups are independent of the optimizer's groups
  (`ModuleOptimizer.with_group`): a param can take its rate from one and its optimizer from
  another.
- A param matched by two groups takes the later one's rate; PyTorch refuses a tensor in two
  groups (`ValueError: some parameters appear in more than one parameter group`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from harness.engine.lr_scheduler.base import (
    ConstantLr,
    LrScheduler,
    build_child,
    children_record,
    load_children,
)
from harness.engine.module import Config
from harness.engine.module.param_group import ParamGroup

__all__ = ["ModuleLearningRate", "ModuleLrScheduler", "ModuleLrSchedulerConfig"]

NO_GROUP_MATCHES = "Should match at least one parameter group."
"""burn's panic (`expect`) when no group matches a param (only an empty policy has none)."""
NO_LEARNING_RATE = "Should have at least one learning rate."
"""burn's panic of `base()` on an empty policy."""


class ModuleLearningRate:
    """The rate of each param group at one step: `ModuleLearningRate(lr)` is one rate for
    every param (burn's `From<LearningRate>`), `ModuleLearningRate()` is burn's empty
    `Default`, whose lookups panic (RuntimeError with burn's text)."""

    __slots__ = ("groups",)

    def __init__(self, lr: float | None = None) -> None:
        self.groups: list[tuple[ParamGroup, float]] = []
        if lr is not None:
            self.groups.append((ParamGroup.all(), _rate(lr)))

    @classmethod
    def _of(cls, groups: list[tuple[ParamGroup, float]]) -> ModuleLearningRate:
        policy = cls()
        policy.groups = groups
        return policy

    def lr_from_param(self, pid, path: str | None = None) -> float:
        """The rate of the last group matching `(pid, path)` (burn's `lr_from_param`)."""
        for group, lr in reversed(self.groups):
            if group.matches(pid, path):
                return lr
        raise RuntimeError(NO_GROUP_MATCHES)

    def base(self) -> float:
        """The first group's rate (the base scheduler's, matching every param)."""
        if not self.groups:
            raise RuntimeError(NO_LEARNING_RATE)
        return self.groups[0][1]

    def __repr__(self) -> str:
        return f"ModuleLearningRate({self.groups!r})"


def _rate(lr) -> float:
    if isinstance(lr, bool) or not isinstance(lr, (int, float)):
        raise TypeError(f"ModuleLearningRate: lr must be a float, got {type(lr).__name__}")
    return float(lr)


def _scheduler(owner: str, scheduler) -> LrScheduler:
    """burn's `Into<DynLrScheduler>`: a scheduler object, or a float (a constant rate)."""
    if isinstance(scheduler, LrScheduler):
        return scheduler
    if isinstance(scheduler, (int, float)) and not isinstance(scheduler, bool):
        return ConstantLr(float(scheduler))
    raise TypeError(
        f"{owner}: expected a scheduler or a float (a constant LR), got "
        f"{type(scheduler).__name__} (build a config with .build() first)"
    )


class ModuleLrScheduler:
    """A base scheduler for every param plus one scheduler per added `ParamGroup`."""

    # No state of its own: its groups' schedulers hold it (`to_record`, under their indices).
    _state: ClassVar[dict[str, tuple[str, str]]] = {}

    def __init__(self, scheduler) -> None:
        self.groups: list[tuple[ParamGroup, LrScheduler]] = [
            (ParamGroup.all(), _scheduler("ModuleLrScheduler", scheduler))
        ]

    def with_group(self, group: ParamGroup, scheduler) -> ModuleLrScheduler:
        """Add `scheduler` (an object or a float) for `group`; returns this scheduler."""
        if not isinstance(group, ParamGroup):
            raise TypeError(f"with_group: expected a ParamGroup, got {type(group).__name__}")
        self.groups.append((group, _scheduler("ModuleLrScheduler.with_group", scheduler)))
        return self

    def step(self) -> ModuleLearningRate:
        """Step every scheduler once (in group order); the rates of this step."""
        return ModuleLearningRate._of([(group, s.step()) for group, s in self.groups])

    def to_record(self) -> dict:
        """Each scheduler's record under `"<group index>."` (burn's `with_record`)."""
        return children_record([s for _, s in self.groups])

    def load_record(self, record: dict) -> ModuleLrScheduler:
        """Each scheduler reads the keys under its index; returns this scheduler."""
        load_children([s for _, s in self.groups], record)
        return self


@dataclass(frozen=True)
class ModuleLrSchedulerConfig(Config):
    """burn's `ModuleLrSchedulerConfig::new(base)`: `base` and each group's scheduler are
    scheduler configs or floats (constant rates); `init()` raises burn's ValueError of the
    first config that does not build."""

    base: object
    scheduler_groups: tuple = field(default=())

    def with_group(self, group: ParamGroup, scheduler) -> ModuleLrSchedulerConfig:
        """A copy with `(group, scheduler config)` appended (burn's `with_group`)."""
        if not isinstance(group, ParamGroup):
            raise TypeError(f"with_group: expected a ParamGroup, got {type(group).__name__}")
        return self.with_scheduler_groups((*self.scheduler_groups, (group, scheduler)))

    def init(self) -> ModuleLrScheduler:
        owner = "ModuleLrSchedulerConfig"
        policy = ModuleLrScheduler(build_child(owner, 0, self.base))
        for index, (group, config) in enumerate(self.scheduler_groups, start=1):
            policy.groups.append((group, build_child(owner, index, config)))
        return policy
