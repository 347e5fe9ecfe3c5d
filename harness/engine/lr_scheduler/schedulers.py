"""burn-optim's schedulers, one section per burn file (`src/lr_scheduler/{linear,cosine,
exponential,step,noam,composed,sequential}.rs`, read at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747); the conventions are in the package docstring."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

from harness.engine.lr_scheduler.base import (
    FINAL_LR_RANGE,
    GAMMA_RANGE,
    I32_MAX,
    MILESTONE_COUNT,
    MILESTONE_ORDER,
    MIN_LR_RANGE,
    MODEL_SIZE_ZERO,
    NO_SCHEDULERS,
    STEP_OVERFLOW,
    STEP_SIZE_ZERO,
    USIZE_MAX,
    WARMUP_ZERO,
    LrScheduler,
    build_child,
    check_initial_lr,
    check_num_iters,
    children_record,
    load_children,
    powi,
)
from harness.engine.lr_scheduler.module_lr_scheduler import ModuleLrScheduler
from harness.engine.module import Config


def _init_in_module_lr_scheduler(self) -> ModuleLrScheduler:
    """burn 0.22's `XConfig::init()`: `build()`, wrapped in a `ModuleLrScheduler`."""
    return ModuleLrScheduler(self.build())


# ---- linear -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LinearLrSchedulerConfig(Config):
    """From `initial_lr` at the first call to `final_lr` at call `num_iters + 1`, then flat."""

    initial_lr: float
    final_lr: float
    num_iters: int

    def build(self) -> LinearLrScheduler:
        check_initial_lr(self.initial_lr)
        if self.final_lr < 0.0 or self.final_lr > 1.0:
            raise ValueError(FINAL_LR_RANGE)
        check_num_iters(self.num_iters)
        step_size = (self.final_lr - self.initial_lr) / float(self.num_iters)
        return LinearLrScheduler(self.final_lr, step_size, self.num_iters + 1)

    init = _init_in_module_lr_scheduler


@dataclass
class LinearLrScheduler(LrScheduler):
    """burn counts *remaining* iterations down and returns `final - step_size * remaining`."""

    final_lr: float
    step_size: float
    remaining_iters: int

    _state: ClassVar[dict[str, tuple[str, str]]] = {"remaining_iters": ("remaining_iters", "usize")}

    def step(self) -> float:
        if self.remaining_iters != 0:
            self.remaining_iters -= 1
        return self.final_lr - self.step_size * float(self.remaining_iters)


# ---- cosine annealing ---------------------------------------------------------------------


@dataclass(frozen=True)
class CosineAnnealingLrSchedulerConfig(Config):
    """`min + 0.5 (initial - min) (1 + cos(pi * i / num_iters))`, i = 0, 1, 2, ... without
    restarts: past `num_iters` the LR follows the cosine back up (`initial_lr` again at
    `i = 2 num_iters`), as PyTorch's `CosineAnnealingLR` does.

    burn 0.21 restarted (`i` modulo `num_iters + 1`); burn PR #5191 ("remove erroneous restart
    in CosineAnnealingLrScheduler", first in v0.22.0-pre.1) made the counter a plain
    `wrapping_add(1)`: `cosine.rs` `test_lr_change` expects 0.5, 0.3, 0.1, 0.3, 0.5 for
    (initial 0.5, min 0.1, n 2) at commit 2c06be351006851d42fdb6df16b976f4a82d9747.
    The only PyTorch difference is the first-call shift of every scheduler (module docstring).
    """

    initial_lr: float
    num_iters: int
    min_lr: float = 0.0

    def build(self) -> CosineAnnealingLrScheduler:
        check_initial_lr(self.initial_lr)
        if self.min_lr < 0.0 or self.min_lr > self.initial_lr:
            raise ValueError(MIN_LR_RANGE)
        check_num_iters(self.num_iters)
        return CosineAnnealingLrScheduler(self.min_lr, self.initial_lr, self.num_iters)

    init = _init_in_module_lr_scheduler


@dataclass
class CosineAnnealingLrScheduler(LrScheduler):
    """burn starts `current_iter` at usize::MAX so the first (wrapping) increment gives 0; it
    then only counts up (no restart)."""

    min_lr: float
    max_lr: float
    num_iters: int
    current_iter: int = field(default=USIZE_MAX, init=False)

    def step(self) -> float:
        self.current_iter = (self.current_iter + 1) & USIZE_MAX  # `wrapping_add(1)`
        angle = float(self.current_iter) / float(self.num_iters) * math.pi
        return self.min_lr + 0.5 * (self.max_lr - self.min_lr) * (1.0 + math.cos(angle))

    _state: ClassVar[dict[str, tuple[str, str]]] = {"current_iter": ("current_iter", "usize")}


# ---- exponential --------------------------------------------------------------------------


@dataclass(frozen=True)
class ExponentialLrSchedulerConfig(Config):
    """`initial_lr * gamma^(k-1)`, computed as burn does: a running product that starts at
    `initial_lr / gamma` (so the first value can differ from `initial_lr` by an ULP)."""

    initial_lr: float
    gamma: float

    def build(self) -> ExponentialLrScheduler:
        check_initial_lr(self.initial_lr)
        if self.gamma <= 0.0 or self.gamma > 1.0:
            raise ValueError(GAMMA_RANGE)
        return ExponentialLrScheduler(self.initial_lr / self.gamma, self.gamma)

    init = _init_in_module_lr_scheduler


@dataclass
class ExponentialLrScheduler(LrScheduler):
    """Multiplies the previous LR by `gamma` at each call."""

    previous_lr: float
    gamma: float
    _state: ClassVar[dict[str, tuple[str, str]]] = {"previous_lr": ("previous_lr", "f64")}

    def step(self) -> float:
        self.previous_lr *= self.gamma
        return self.previous_lr


# ---- step ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepLrSchedulerConfig(Config):
    """`initial_lr * gamma^((k-1) // step_size)`. Like burn, odd `initial_lr` / `gamma` values
    are accepted (burn only logs a warning); only `step_size == 0` is an error."""

    initial_lr: float
    step_size: int
    gamma: float = 0.1

    def build(self) -> StepLrScheduler:
        if self.step_size == 0:
            raise ValueError(STEP_SIZE_ZERO)
        return StepLrScheduler(self.initial_lr, self.step_size, self.gamma)

    init = _init_in_module_lr_scheduler


@dataclass
class StepLrScheduler(LrScheduler):
    """Keeps burn's `iter_idx` (an i32 starting at -1) and its integer power (`f64::powi`);
    the call after `iter_idx` reached `i32::MAX` raises `OverflowError` (burn panics)."""

    init_lr: float
    step_size: int
    gamma: float
    iter_idx: int = field(default=-1, init=False)
    _state: ClassVar[dict[str, tuple[str, str]]] = {"iter_idx": ("iter_idx", "i32")}

    def step(self) -> float:
        if self.iter_idx >= I32_MAX:
            raise OverflowError(STEP_OVERFLOW)
        self.iter_idx += 1
        return self.init_lr * powi(self.gamma, self.iter_idx // self.step_size)


# ---- noam ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class NoamLrSchedulerConfig(Config):
    """`factor * model_size^-0.5 * min(k^-0.5, k * warmup_steps^-1.5)` ("Attention Is All You
    Need"); PyTorch has no built-in equivalent."""

    factor: float
    warmup_steps: int = 4000
    model_size: int = 512

    def build(self) -> NoamLrScheduler:
        if self.warmup_steps == 0:
            raise ValueError(WARMUP_ZERO)
        if self.model_size == 0:
            raise ValueError(MODEL_SIZE_ZERO)
        return NoamLrScheduler(float(self.warmup_steps), float(self.model_size), self.factor)

    init = _init_in_module_lr_scheduler


@dataclass
class NoamLrScheduler(LrScheduler):
    """Counts steps as a float, as burn does."""

    warmup_steps: float
    embedding_size: float
    factor: float
    step_count: float = field(default=0.0, init=False)
    _state: ClassVar[dict[str, tuple[str, str]]] = {"step": ("step_count", "f64")}

    def step(self) -> float:
        self.step_count += 1.0
        arg1 = self.step_count**-0.5
        arg2 = self.step_count * self.warmup_steps**-1.5
        return self.factor * self.embedding_size**-0.5 * min(arg1, arg2)


# ---- composed -----------------------------------------------------------------------------


class SchedulerReduction(Enum):
    """How `ComposedLrScheduler` combines its children's rates."""

    Avg = "avg"
    Sum = "sum"
    Prod = "prod"


@dataclass(frozen=True)
class ComposedLrSchedulerConfig(Config):
    """Combines children (product by default); every child is stepped at every call.

    Build it as burn does, `ComposedLrSchedulerConfig().linear(a).cosine(b).constant(0.5)`,
    or pass `schedulers=[...]` (configs, or floats for constant rates).
    """

    schedulers: tuple = field(default=())
    reduction: SchedulerReduction = SchedulerReduction.Prod

    def _push(self, config) -> ComposedLrSchedulerConfig:
        """A copy with `config` appended (burn's builder methods take and return the config)."""
        return self.with_schedulers((*self.schedulers, config))

    # burn has one builder per child type (`constant` takes the LR itself); Python needs no
    # dispatch, so all of them append.
    constant = linear = cosine = exponential = noam = step = composed = _push

    def build(self) -> ComposedLrScheduler:
        children = [
            build_child("ComposedLrSchedulerConfig", i, c) for i, c in enumerate(self.schedulers)
        ]
        return ComposedLrScheduler(children, self.reduction)

    init = _init_in_module_lr_scheduler


@dataclass
class ComposedLrScheduler(LrScheduler):
    """Folds the children's rates in order: `acc + lr / n`, `acc + lr` or `acc * lr`."""

    schedulers: list[LrScheduler]
    reduction: SchedulerReduction

    def with_custom_scheduler(self, scheduler: LrScheduler) -> ComposedLrScheduler:
        """Append a scheduler object (burn's `with_custom_scheduler`); returns self."""
        self.schedulers.append(scheduler)
        return self

    def step(self) -> float:
        reduction = self.reduction
        acc = 1.0 if reduction is SchedulerReduction.Prod else 0.0
        count = float(len(self.schedulers))
        for scheduler in self.schedulers:
            lr = scheduler.step()
            if reduction is SchedulerReduction.Avg:
                acc = acc + lr / count
            elif reduction is SchedulerReduction.Sum:
                acc = acc + lr
            else:
                acc = acc * lr
        return acc

    def to_record(self) -> dict:
        return children_record(self.schedulers)

    def load_record(self, record: dict) -> ComposedLrScheduler:
        load_children(self.schedulers, record)
        return self


# ---- sequential ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SequentialLrSchedulerConfig(Config):
    """Runs children one after another; `milestones[i]` is the number of completed calls at
    which child `i + 1` takes over. Only the active child is stepped, so each child starts
    from its own first value (PyTorch's `SequentialLR` behaves the same way). Children are
    configs, or floats for constant rates."""

    schedulers: Sequence
    milestones: Sequence[int]

    def build(self) -> SequentialLrScheduler:
        milestones = list(self.milestones)
        if not self.schedulers:
            raise ValueError(NO_SCHEDULERS)
        if len(milestones) + 1 != len(self.schedulers):
            raise ValueError(MILESTONE_COUNT)
        for index, milestone in enumerate(milestones):
            if milestone == 0 or (index > 0 and milestone <= milestones[index - 1]):
                raise ValueError(MILESTONE_ORDER)
        children = [
            build_child("SequentialLrSchedulerConfig", i, c) for i, c in enumerate(self.schedulers)
        ]
        return SequentialLrScheduler(children, milestones)

    init = _init_in_module_lr_scheduler


@dataclass
class SequentialLrScheduler(LrScheduler):
    """The active child is the number of milestones already reached."""

    schedulers: list[LrScheduler]
    milestones: list[int]
    step_count: int = field(default=0, init=False)
    _state: ClassVar[dict[str, tuple[str, str]]] = {"step": ("step_count", "usize")}

    def step(self) -> float:
        index = sum(1 for milestone in self.milestones if self.step_count >= milestone)
        lr = self.schedulers[index].step()
        self.step_count += 1
        return lr

    def to_record(self) -> dict:
        return {**super().to_record(), **children_record(self.schedulers)}

    def load_record(self, record: dict) -> SequentialLrScheduler:
        super().load_record(record)
        load_children(self.schedulers, record)
        return self
