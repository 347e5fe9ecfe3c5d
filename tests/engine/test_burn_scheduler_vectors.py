"""burn-optim's learning-rate scheduler tests, transcribed from the `#[cfg(test)]` modules of
`crates/burn-optim/src/lr_scheduler/{cosine,linear,exponential,step,noam,sequential,
module_lr_scheduler}.rs` at burn commit 2c06be351006851d42fdb6df16b976f4a82d9747 (test name in
each docstring), at burn's tolerance (`LOOSE_EPSILON` 1e-10 of `base.rs` `test_utils`).
Sequences are re-derived with the `torch.optim.lr_scheduler` equivalent (the LR in the param
group when `optimizer.step()` runs, which is what burn's `step()` returns) or, where PyTorch has
none (Noam, sequential children with their own initial LRs), a float64 formula.
"""

from __future__ import annotations

import copy
import itertools
import math

import pytest
import torch
from torch.optim import lr_scheduler as torch_sched

from harness.engine import (
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    NoamLrSchedulerConfig,
    SequentialLrSchedulerConfig,
    StepLrSchedulerConfig,
)
from harness.engine.lr_scheduler.base import I32_MAX, STEP_OVERFLOW

LOOSE_EPSILON = 1e-10
INITIAL = "Initial learning rate must be greater than 0 and at most 1"
FINAL = "Final learning rate must be at least 0 and at most 1"
ITERS = "Number of iterations must be at least 1"
MIN_LR = "Minimum learning rate must be at least 0 and at most equal to the initial learning rate"
GAMMA = "Gamma must be greater than 0 and at most 1"


def check_lr_sequence(scheduler, expected_lrs):
    """`test_utils::check_lr_sequence`."""
    for i, expected in enumerate(expected_lrs):
        lr = scheduler.step()
        assert abs(lr - expected) < LOOSE_EPSILON, f"step {i}: {lr} != {expected}"


def compare_steps(a, b, num_steps):
    """`test_utils::compare_steps`."""
    for i in range(num_steps):
        lr_a, lr_b = a.step(), b.step()
        assert abs(lr_a - lr_b) < LOOSE_EPSILON, f"position {i}: {lr_a} != {lr_b}"


def check_save_load(make, save_at_step):
    """`test_utils::check_save_load`, plus the record loaded into a freshly built scheduler
    (burn reloads into the same one, which would pass without a record)."""
    scheduler = make()
    truth = copy.deepcopy(scheduler)
    for _ in range(save_at_step):
        truth.step()
        scheduler.step()
    record = scheduler.to_record()
    fresh = make().load_record(record)
    scheduler.load_record(record)
    twin = copy.deepcopy(truth)
    compare_steps(scheduler, truth, save_at_step)
    compare_steps(fresh, twin, save_at_step)


def torch_lrs(lr, make_scheduler, n):
    """The LR a torch optimizer uses at each of n steps under `make_scheduler`."""
    optim = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr)
    scheduler = make_scheduler(optim)
    used = []
    for _ in range(n):
        used.append(optim.param_groups[0]["lr"])
        optim.step()
        scheduler.step()
    return used


def assert_invalid(config, message):
    with pytest.raises(ValueError) as info:
        config.build()
    assert str(info.value) == message


# ---- cosine.rs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (CosineAnnealingLrSchedulerConfig(0.0, 10), INITIAL),
        (CosineAnnealingLrSchedulerConfig(1.5, 10), INITIAL),
        (CosineAnnealingLrSchedulerConfig(0.5, 10).with_min_lr(-0.1), MIN_LR),
        (CosineAnnealingLrSchedulerConfig(0.5, 10).with_min_lr(0.6), MIN_LR),
        (CosineAnnealingLrSchedulerConfig(0.5, 0), ITERS),
    ],
    ids=[
        "config_initial_lr_too_low",
        "config_initial_lr_too_high",
        "config_min_lr_too_low",
        "config_min_lr_too_high",
        "config_num_iters_too_low",
    ],
)
def test_cosine_config_errors(config, message):
    """cosine.rs `config_*` tests: burn's messages."""
    assert_invalid(config, message)


def test_cosine_lr_change():
    """cosine.rs `test_lr_change`: 0.5, 0.3, 0.1, 0.3, 0.5 (no restart); PyTorch's
    CosineAnnealingLR gives the same."""
    expected = [0.5, (0.5 + 0.1) * 0.5, 0.1, (0.5 + 0.1) * 0.5, 0.5]
    check_lr_sequence(CosineAnnealingLrSchedulerConfig(0.5, 2).with_min_lr(0.1).build(), expected)
    torch_used = torch_lrs(0.5, lambda o: torch_sched.CosineAnnealingLR(o, 2, eta_min=0.1), 5)
    assert torch_used == pytest.approx(expected, abs=LOOSE_EPSILON)


def test_cosine_save_and_load():
    """cosine.rs `test_save_and_load`: 9 iterations, saved after 6."""
    check_save_load(lambda: CosineAnnealingLrSchedulerConfig(1.0, 9).build(), 9 // 3 * 2)


# ---- linear.rs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (LinearLrSchedulerConfig(0.0, 0.5, 100), INITIAL),
        (LinearLrSchedulerConfig(1.5, 0.5, 100), INITIAL),
        (LinearLrSchedulerConfig(0.5, -0.5, 100), FINAL),
        (LinearLrSchedulerConfig(0.5, 1.5, 100), FINAL),
        (LinearLrSchedulerConfig(0.9, 0.1, 0), ITERS),
    ],
    ids=[
        "config_initial_lr_too_low",
        "config_initial_lr_too_high",
        "config_final_lr_too_low",
        "config_final_lr_too_high",
        "config_num_iters_too_low",
    ],
)
def test_linear_config_errors(config, message):
    """linear.rs `config_*` tests."""
    assert_invalid(config, message)


@pytest.mark.parametrize(
    ("initial", "final", "num_iters", "expected"),
    [
        (0.9, 0.5, 4, [0.9, 0.8, 0.7, 0.6, 0.5, 0.5]),
        (0.01, 0.04, 3, [0.01, 0.02, 0.03, 0.04, 0.04]),
        (0.3, 0.3, 2, [0.3, 0.3, 0.3, 0.3]),
    ],
    ids=["test_lr_decreasing", "test_lr_increasing", "test_lr_unchanging"],
)
def test_linear_sequences(initial, final, num_iters, expected):
    """linear.rs `test_lr_decreasing` / `_increasing` / `_unchanging`, and module_lr_scheduler.rs
    `step_advances_linear_default_scheduler` (the first); PyTorch's LinearLR agrees."""
    check_lr_sequence(LinearLrSchedulerConfig(initial, final, num_iters).build(), expected)
    base = max(initial, final)  # LinearLR's factors are at most 1
    used = torch_lrs(
        base,
        lambda o: torch_sched.LinearLR(o, initial / base, final / base, total_iters=num_iters),
        len(expected),
    )
    assert used == pytest.approx(expected, abs=LOOSE_EPSILON)


def test_linear_save_and_load():
    """linear.rs `test_save_and_load`, and module_lr_scheduler.rs
    `save_load_preserves_default_scheduler_state` (1.0 -> 0.1 over 9, saved after 5)."""
    check_save_load(lambda: LinearLrSchedulerConfig(1.0, 0.01, 6).build(), 6 // 3 * 2)
    check_save_load(lambda: LinearLrSchedulerConfig(1.0, 0.1, 9).build(), 5)


# ---- exponential.rs -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (ExponentialLrSchedulerConfig(0.0, 0.5), INITIAL),
        (ExponentialLrSchedulerConfig(1.5, 0.5), INITIAL),
        (ExponentialLrSchedulerConfig(0.5, 0.0), GAMMA),
        (ExponentialLrSchedulerConfig(0.5, 1.5), GAMMA),
    ],
    ids=[
        "config_initial_lr_too_low",
        "config_initial_lr_too_high",
        "config_gamma_too_low",
        "config_gamma_too_high",
    ],
)
def test_exponential_config_errors(config, message):
    """exponential.rs `config_*` tests."""
    assert_invalid(config, message)


def test_exponential_lr_change():
    """exponential.rs `test_lr_change`; PyTorch's ExponentialLR agrees."""
    expected = [0.8, 0.08, 0.008, 0.0008, 0.00008]
    check_lr_sequence(ExponentialLrSchedulerConfig(0.8, 0.1).build(), expected)
    used = torch_lrs(0.8, lambda o: torch_sched.ExponentialLR(o, 0.1), 5)
    assert used == pytest.approx(expected, abs=LOOSE_EPSILON)


def test_exponential_save_and_load():
    """exponential.rs `test_save_and_load`."""
    check_save_load(lambda: ExponentialLrSchedulerConfig(0.083, 0.3).build(), 7)


# ---- step.rs ------------------------------------------------------------------------------


def test_config_step_size_zero_and_nonzero():
    """step.rs `test_config_step_size_zero` / `test_config_step_size_nonzero`."""
    assert_invalid(StepLrSchedulerConfig(1.0, 0), "Step size must be greater than 0")
    assert StepLrSchedulerConfig(1.0, 1).build() is not None


def test_config_default_gamma():
    """step.rs `test_config_default_gamma`."""
    default = StepLrSchedulerConfig(0.4, 2).build()
    explicit = StepLrSchedulerConfig(0.4, 2).with_gamma(0.1).build()
    compare_steps(default, explicit, 3 * 2)


@pytest.mark.parametrize(
    ("initial", "step_size", "gamma", "expected"),
    [
        (0.5, 3, 0.1, [0.5, 0.5, 0.5, 0.05, 0.05, 0.05, 0.005, 0.005, 0.005]),
        (0.1, 2, 2.0, [0.1, 0.1, 0.2, 0.2, 0.4, 0.4]),
        (3.1, 1, 1.0, [3.1, 3.1, 3.1]),
    ],
    ids=["test_lr_decreasing", "test_lr_increasing", "test_lr_unchanging"],
)
def test_step_sequences(initial, step_size, gamma, expected):
    """step.rs `test_lr_decreasing` / `_increasing` / `_unchanging`; PyTorch's StepLR agrees
    (it accepts gamma > 1 and an LR > 1 too)."""
    check_lr_sequence(StepLrSchedulerConfig(initial, step_size).with_gamma(gamma).build(), expected)
    used = torch_lrs(initial, lambda o: torch_sched.StepLR(o, step_size, gamma), len(expected))
    assert used == pytest.approx(expected, abs=LOOSE_EPSILON)


def test_step_save_and_load():
    """step.rs `test_save_and_load`."""
    check_save_load(lambda: StepLrSchedulerConfig(0.007, 10).with_gamma(0.03).build(), 15)


def _after_i32_max_steps():
    scheduler = StepLrSchedulerConfig(0.1, 2).build()
    return scheduler.load_record({"iter_idx": I32_MAX - 1})


def test_number_of_calls_within_limit():
    """step.rs `test_number_of_calls_within_limit`: call i32::MAX + 1 is allowed."""
    _after_i32_max_steps().step()


def test_number_of_calls_over_limit():
    """step.rs `test_number_of_calls_over_limit`: burn panics with a message naming i32::MAX;
    the engine raises OverflowError with it."""
    scheduler = _after_i32_max_steps()
    scheduler.step()
    with pytest.raises(OverflowError, match=r"i32::MAX") as info:
        scheduler.step()
    assert str(info.value) == STEP_OVERFLOW


# ---- noam.rs ------------------------------------------------------------------------------


def test_noam_config_warmup_and_model_size():
    """noam.rs `test_config_warmup_steps_invalid` / `_valid`, `test_config_model_size_invalid`
    / `_valid`."""
    assert_invalid(
        NoamLrSchedulerConfig(0.1).with_warmup_steps(0),
        "Number of steps before exponential decay starts must be greater than 0",
    )
    assert NoamLrSchedulerConfig(0.1).with_warmup_steps(1).build() is not None
    assert_invalid(
        NoamLrSchedulerConfig(0.1).with_model_size(0), "Model size must be greater than 0"
    )
    assert NoamLrSchedulerConfig(0.1).with_model_size(1).build() is not None


def test_noam_function_increase_and_decrease():
    """noam.rs `test_function_increase_and_decrease`: rising for the 100 warmup steps, falling
    for the next 100; each value also the float64 formula of "Attention Is All You Need"."""
    scheduler = NoamLrSchedulerConfig(10.0).with_warmup_steps(100).build()
    lrs = [scheduler.step() for _ in range(200)]
    assert all(b > a for a, b in itertools.pairwise([0.0, *lrs[:100]]))
    assert all(b < a for a, b in itertools.pairwise(lrs[99:]))
    for k, lr in enumerate(lrs, start=1):
        want = 10.0 * 512**-0.5 * min(k**-0.5, k * 100**-1.5)
        assert abs(lr - want) < LOOSE_EPSILON


# ---- sequential.rs ------------------------------------------------------------------------


def _sequential(milestones):
    return SequentialLrSchedulerConfig(
        [
            LinearLrSchedulerConfig(0.1, 0.3, 2),
            ExponentialLrSchedulerConfig(0.5, 0.5),
            CosineAnnealingLrSchedulerConfig(0.8, 2),
        ],
        milestones,
    )


def test_switches_schedulers_at_milestones():
    """sequential.rs `switches_schedulers_at_milestones`; re-derived from the three children's
    float64 formulas, each from its own first value."""
    expected = [0.1, 0.2, 0.5, 0.25, 0.125, 0.8, 0.4, 0.0]
    check_lr_sequence(_sequential([2, 5]).build(), expected)
    children = [
        [0.1 + (0.3 - 0.1) * min(k, 2) / 2 for k in range(2)],
        [0.5 * 0.5**k for k in range(3)],
        [0.4 * (1 + math.cos(math.pi * k / 2)) for k in range(3)],
    ]
    assert [lr for child in children for lr in child] == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (SequentialLrSchedulerConfig([], []), "At least one scheduler is required"),
        (
            _sequential([2]),
            "The number of milestones must be one less than the number of schedulers",
        ),
        *[
            (_sequential(m), "Milestones must be greater than zero and strictly increasing")
            for m in ([0, 2], [2, 2], [3, 2])
        ],
        (SequentialLrSchedulerConfig([LinearLrSchedulerConfig(0.1, 0.2, 0)], []), ITERS),
    ],
    ids=[
        "rejects_empty_scheduler_list",
        "rejects_wrong_milestone_count",
        "rejects_zero_or_non_increasing_milestones[0,2]",
        "rejects_zero_or_non_increasing_milestones[2,2]",
        "rejects_zero_or_non_increasing_milestones[3,2]",
        "reports_invalid_child_config",
    ],
)
def test_sequential_config_errors(config, message):
    """sequential.rs `rejects_*` and `reports_invalid_child_config`."""
    assert_invalid(config, message)


@pytest.mark.parametrize("save_at", [1, 4, 6])
def test_sequential_saves_and_loads_before_and_after_transitions(save_at):
    """sequential.rs `saves_and_loads_before_and_after_transitions`."""
    check_save_load(lambda: _sequential([2, 5]).build(), save_at)


# ---- module_lr_scheduler.rs ---------------------------------------------------------------


def test_step_yields_constant_default_lr():
    """module_lr_scheduler.rs `step_yields_constant_default_lr`: burn's `ModuleLrScheduler::
    new(0.01_f64)`; here a constant child of a sequential scheduler (a bare float, as burn's
    `LrSchedulerConfig::Constant`)."""
    scheduler = SequentialLrSchedulerConfig([0.01], []).build()
    check_lr_sequence(scheduler, [0.01] * 3)
