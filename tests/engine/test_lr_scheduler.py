"""LR schedulers (reference-engine.md section 7) against independent float64 formulas.

Expected values are written from the spec's formulas, not from running the schedulers: k is the
call number (1 = first call), and the first call returns the initial LR.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.engine import (
    ComposedLrSchedulerConfig,
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    NoamLrSchedulerConfig,
    SchedulerReduction,
    SequentialLrSchedulerConfig,
    StepLrSchedulerConfig,
)
from harness.engine.lr_scheduler import powi
from harness.engine.lr_scheduler.module_lr_scheduler import ModuleLearningRate, ModuleLrScheduler

N = 12


def run(scheduler, n: int = N) -> list[float]:
    """The first `n` rates of a built scheduler (`build()`: `step()` returns the float)."""
    return [scheduler.step() for _ in range(n)]


def linear_formula(initial, final, num_iters, k):
    done = min(k - 1, num_iters)
    return initial + (final - initial) * done / num_iters


def cosine_formula(initial, num_iters, min_lr, k):
    # burn 0.22 (PR #5191) does not restart: the spec formula for every call.
    return min_lr + (initial - min_lr) * (1 + math.cos(math.pi * (k - 1) / num_iters)) / 2


def noam_formula(factor, warmup, model_size, k):
    return factor * model_size**-0.5 * min(k**-0.5, k * warmup**-1.5)


def test_first_call_returns_initial_lr():
    for config in (
        LinearLrSchedulerConfig(0.5, 0.1, 4),
        CosineAnnealingLrSchedulerConfig(0.5, 4),
        ExponentialLrSchedulerConfig(0.5, 0.9),
        StepLrSchedulerConfig(0.5, 3),
    ):
        assert config.init().step().base() == pytest.approx(0.5, rel=1e-15)


def test_constant():
    assert run(ConstantLr(0.3), 3) == [0.3, 0.3, 0.3]


@pytest.mark.parametrize(("initial", "final", "num_iters"), [(0.9, 0.5, 4), (0.01, 0.04, 3)])
def test_linear_reaches_final_at_call_n_plus_1_then_constant(initial, final, num_iters):
    got = run(LinearLrSchedulerConfig(initial, final, num_iters).build())
    want = [linear_formula(initial, final, num_iters, k) for k in range(1, N + 1)]
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
    assert got[num_iters] == final
    assert set(got[num_iters:]) == {final}


def test_cosine_annealing_matches_formula_and_does_not_restart():
    initial, num_iters, min_lr = 0.5, 4, 0.1
    got = run(CosineAnnealingLrSchedulerConfig(initial, num_iters, min_lr=min_lr).build())
    want = [cosine_formula(initial, num_iters, min_lr, k) for k in range(1, N + 1)]
    assert got == pytest.approx(want, rel=1e-12)
    assert got[num_iters] == pytest.approx(min_lr)  # call n + 1 reaches the minimum
    # burn 0.21 restarted here (call n + 2 gave the initial LR); 0.22 follows the cosine up.
    assert got[num_iters + 1] == pytest.approx(cosine_formula(initial, num_iters, min_lr, 6))
    assert got[num_iters + 1] < initial
    assert got[2 * num_iters] == pytest.approx(initial)  # back at the top at call 2n + 1


def test_cosine_min_lr_defaults_to_zero():
    got = run(CosineAnnealingLrSchedulerConfig(1.0, 2).build(), 3)
    assert got == pytest.approx([1.0, 0.5, 0.0], abs=1e-15)


def test_exponential_matches_formula():
    got = run(ExponentialLrSchedulerConfig(0.8, 0.5).build())
    want = [0.8 * 0.5 ** (k - 1) for k in range(1, N + 1)]
    assert got == pytest.approx(want, rel=1e-14)


@pytest.mark.parametrize("gamma", [0.1, 0.5])
def test_step_matches_formula(gamma):
    got = run(StepLrSchedulerConfig(0.5, 3, gamma=gamma).build())
    want = [0.5 * gamma ** ((k - 1) // 3) for k in range(1, N + 1)]
    assert got == pytest.approx(want, rel=1e-14)


def test_step_gamma_defaults_to_0_1():
    assert StepLrSchedulerConfig(0.4, 2).gamma == 0.1
    assert run(StepLrSchedulerConfig(0.4, 2).build(), 4) == pytest.approx([0.4, 0.4, 0.04, 0.04])


def test_step_accepts_odd_values_like_burn():
    # burn only logs a warning for gamma outside (0, 1) or initial <= 0.
    assert run(StepLrSchedulerConfig(0.1, 2, gamma=2.0).build(), 6) == pytest.approx(
        [0.1, 0.1, 0.2, 0.2, 0.4, 0.4]
    )


def test_noam_matches_formula_with_defaults():
    config = NoamLrSchedulerConfig(2.0)
    assert (config.warmup_steps, config.model_size) == (4000, 512)
    got = run(config.build())
    want = [noam_formula(2.0, 4000, 512, k) for k in range(1, N + 1)]
    assert got == pytest.approx(want, rel=1e-14)


def test_noam_rises_during_warmup_then_decays():
    got = run(NoamLrSchedulerConfig(10.0, warmup_steps=4, model_size=16).build(), 8)
    want = [noam_formula(10.0, 4, 16, k) for k in range(1, 9)]
    assert got == pytest.approx(want, rel=1e-14)
    assert got[:4] == sorted(got[:4]) and got[3:] == sorted(got[3:], reverse=True)


@pytest.mark.parametrize(
    ("reduction", "combine"),
    [
        (SchedulerReduction.Prod, lambda a, b: a * b),
        (SchedulerReduction.Sum, lambda a, b: a + b),
        (SchedulerReduction.Avg, lambda a, b: (a + b) / 2),
    ],
)
def test_composed_steps_every_child(reduction, combine):
    config = (
        ComposedLrSchedulerConfig(reduction=reduction)
        .linear(LinearLrSchedulerConfig(0.9, 0.5, 4))
        .exponential(ExponentialLrSchedulerConfig(0.8, 0.5))
    )
    got = run(config.build())
    want = [combine(linear_formula(0.9, 0.5, 4, k), 0.8 * 0.5 ** (k - 1)) for k in range(1, N + 1)]
    assert got == pytest.approx(want, rel=1e-13)


def test_composed_defaults_to_product():
    assert ComposedLrSchedulerConfig().reduction is SchedulerReduction.Prod


def test_sequential_steps_only_the_active_child():
    config = SequentialLrSchedulerConfig(
        [
            LinearLrSchedulerConfig(0.1, 0.3, 2),
            ExponentialLrSchedulerConfig(0.5, 0.5),
            CosineAnnealingLrSchedulerConfig(0.8, 2),
        ],
        [2, 5],
    )
    # Each child starts from its own first value when it takes over.
    want = [0.1, 0.2, 0.5, 0.25, 0.125, 0.8, 0.4, 0.0]
    assert run(config.build(), 8) == pytest.approx(want, abs=1e-15)


def test_powi_is_square_and_multiply():
    assert powi(0.1, 0) == 1.0
    assert powi(0.1, 3) == (0.1 * 0.1) * 0.1
    assert powi(2.0, -2) == 0.25


def test_powi_rounds_in_float32_for_a_float32_base():
    # Adam's bias corrections use `f32::powi`: each product is rounded to f32, not to f64.
    beta = np.float32(0.999)
    b2 = beta * beta
    b8 = (b2 * b2) * (b2 * b2)
    got = powi(beta, 10)  # 10 = 0b1010: the result collects b^2 and b^8
    assert type(got) is np.float32
    assert got.tobytes() == (b2 * b8).tobytes()


# ---- validation: burn's messages, raised at init() ----------------------------------------

INITIAL = "Initial learning rate must be greater than 0 and at most 1"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (LinearLrSchedulerConfig(0.0, 0.5, 10), INITIAL),
        (LinearLrSchedulerConfig(1.5, 0.5, 10), INITIAL),
        (
            LinearLrSchedulerConfig(0.5, -0.5, 10),
            "Final learning rate must be at least 0 and at most 1",
        ),
        (
            LinearLrSchedulerConfig(0.5, 1.5, 10),
            "Final learning rate must be at least 0 and at most 1",
        ),
        (LinearLrSchedulerConfig(0.9, 0.1, 0), "Number of iterations must be at least 1"),
        (CosineAnnealingLrSchedulerConfig(0.0, 10), INITIAL),
        (CosineAnnealingLrSchedulerConfig(1.5, 10), INITIAL),
        (
            CosineAnnealingLrSchedulerConfig(0.5, 10, min_lr=0.6),
            "Minimum learning rate must be at least 0 and at most equal to the initial "
            "learning rate",
        ),
        (
            CosineAnnealingLrSchedulerConfig(0.5, 10, min_lr=-0.1),
            "Minimum learning rate must be at least 0 and at most equal to the initial "
            "learning rate",
        ),
        (CosineAnnealingLrSchedulerConfig(0.5, 0), "Number of iterations must be at least 1"),
        (ExponentialLrSchedulerConfig(0.0, 0.5), INITIAL),
        (ExponentialLrSchedulerConfig(0.5, 0.0), "Gamma must be greater than 0 and at most 1"),
        (ExponentialLrSchedulerConfig(0.5, 1.5), "Gamma must be greater than 0 and at most 1"),
        (StepLrSchedulerConfig(1.0, 0), "Step size must be greater than 0"),
        (
            NoamLrSchedulerConfig(0.1, warmup_steps=0),
            "Number of steps before exponential decay starts must be greater than 0",
        ),
        (NoamLrSchedulerConfig(0.1, model_size=0), "Model size must be greater than 0"),
        (SequentialLrSchedulerConfig([], []), "At least one scheduler is required"),
        (
            SequentialLrSchedulerConfig([ExponentialLrSchedulerConfig(0.5, 0.5)] * 2, []),
            "The number of milestones must be one less than the number of schedulers",
        ),
        (
            SequentialLrSchedulerConfig([ExponentialLrSchedulerConfig(0.5, 0.5)] * 3, [2, 2]),
            "Milestones must be greater than zero and strictly increasing",
        ),
        (
            SequentialLrSchedulerConfig([ExponentialLrSchedulerConfig(0.5, 0.5)] * 2, [0]),
            "Milestones must be greater than zero and strictly increasing",
        ),
        (
            SequentialLrSchedulerConfig([LinearLrSchedulerConfig(0.1, 0.2, 0)], []),
            "Number of iterations must be at least 1",
        ),
        (
            ComposedLrSchedulerConfig().linear(LinearLrSchedulerConfig(2.0, 0.2, 3)),
            INITIAL,
        ),
    ],
)
def test_invalid_config_raises_burns_message_at_init(config, message):
    with pytest.raises(ValueError) as info:
        config.init()
    assert str(info.value) == message


def test_config_builder_methods():
    config = CosineAnnealingLrSchedulerConfig(0.5, 10).with_min_lr(0.1)
    assert config.min_lr == 0.1
    with pytest.raises(AttributeError):
        config.with_nonexistent(1)


# ---- composed children (burn's `composed.rs` builders) -------------------------------------


def test_composed_takes_constant_step_and_composed_children():
    inner = ComposedLrSchedulerConfig(reduction=SchedulerReduction.Sum).constant(0.1).constant(0.2)
    config = (
        ComposedLrSchedulerConfig()
        .constant(0.5)
        .step(StepLrSchedulerConfig(0.4, 2, gamma=0.5))
        .composed(inner)
    )
    got = run(config.build(), 6)
    want = [0.5 * (0.4 * 0.5 ** ((k - 1) // 2)) * (0.1 + 0.2) for k in range(1, 7)]
    assert got == pytest.approx(want, rel=1e-14)


def test_a_bare_float_child_is_a_constant_rate():
    # burn's `LrSchedulerConfig::Constant(lr)`; this used to fail at init() (AttributeError).
    config = ComposedLrSchedulerConfig(schedulers=(0.5, LinearLrSchedulerConfig(0.9, 0.5, 4)))
    want = [0.5 * linear_formula(0.9, 0.5, 4, k) for k in range(1, N + 1)]
    assert run(config.build()) == pytest.approx(want, rel=1e-14)
    sequential = SequentialLrSchedulerConfig([0.3, ExponentialLrSchedulerConfig(0.5, 0.5)], [2])
    assert run(sequential.build(), 4) == pytest.approx([0.3, 0.3, 0.5, 0.25])


def test_a_child_that_is_neither_float_nor_config_is_named_in_the_error():
    with pytest.raises(TypeError) as info:
        ComposedLrSchedulerConfig(schedulers=(0.5, "0.1")).init()
    assert str(info.value) == (
        "ComposedLrSchedulerConfig: scheduler 1 is a str, expected a float (a constant LR) or "
        "a scheduler config"
    )


def test_custom_scheduler_joins_a_composed_one():
    composed = ComposedLrSchedulerConfig().constant(0.5).build()
    composed.with_custom_scheduler(ConstantLr(0.2))
    assert run(composed, 2) == pytest.approx([0.1, 0.1])


def test_records_resume_composed_children():
    def make():
        return (
            ComposedLrSchedulerConfig()
            .linear(LinearLrSchedulerConfig(0.9, 0.5, 4))
            .cosine(CosineAnnealingLrSchedulerConfig(0.5, 3))
            .build()
        )

    scheduler, truth = make(), make()
    run(scheduler, 3)
    run(truth, 3)
    record = scheduler.to_record()
    assert record == {"0.remaining_iters": 2, "1.current_iter": 2}
    assert run(make().load_record(record), 5) == run(truth, 5)


def test_init_is_build_inside_a_module_lr_scheduler():
    # burn 0.22: every scheduler config's `init() -> Result<ModuleLrScheduler, String>`
    # (cosine.rs, linear.rs, ..., commit 2c06be351006851d42fdb6df16b976f4a82d9747).
    config = CosineAnnealingLrSchedulerConfig(0.5, 4)
    scheduler = config.init()
    assert isinstance(scheduler, ModuleLrScheduler)
    rates = [scheduler.step() for _ in range(N)]
    assert all(isinstance(lr, ModuleLearningRate) for lr in rates)
    assert [lr.base() for lr in rates] == run(config.build())
