"""The first 12 learning rates of every engine scheduler next to PyTorch's equivalent.

burn's ``scheduler.step()`` is called *before* the optimizer step and returns the LR to use now;
its first call returns the initial LR. PyTorch's ``scheduler.step()`` is called *after*
``optimizer.step()``; the LR a step uses is the optimizer's current one. Read that way
(``aligned``: the LR in the param group when ``optim.step()`` runs), each PyTorch scheduler gives
the engine's sequence: constant and Noam through ``LambdaLR``, linear, cosine, exponential, step
and sequential through their own classes, the composed product through a ``LambdaLR`` of the
two formulas of reference-engine.md section 7.

The common PyTorch loop ``optim.step(); sched.step(); lr = sched.get_last_lr()[0]`` reads the LR
of the *next* step: that sequence is the engine's shifted by one (``torch[k] == engine[k+1]``).

Past ``num_iters`` the cosine schedules still agree (``short_cosine``, 5 iterations over 12
calls): burn 0.22 no longer restarts (PR #5191, ``cosine.rs`` ``test_lr_change``) and follows the
cosine back up to the initial LR at call ``2 num_iters + 1``, as PyTorch's ``CosineAnnealingLR``.
"""

import math

import numpy as np
import torch
from torch.optim import lr_scheduler as torch_sched

from harness.case import agree, differ, predicate
from harness.engine import (
    ComposedLrSchedulerConfig,
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    ModuleLrScheduler,
    NoamLrSchedulerConfig,
    SequentialLrSchedulerConfig,
    StepLrSchedulerConfig,
)

N = 12
INITIAL, FINAL, MIN_LR = 0.1, 0.01, 0.001
LINEAR_ITERS, SHORT_COSINE_ITERS = 8, 5
COSINE_ITERS = N  # no restart within N + 1 calls (the naive PyTorch loop reads one ahead)
GAMMA, STEP_SIZE, STEP_GAMMA = 0.8, 3, 0.5
NOAM_FACTOR, NOAM_WARMUP, NOAM_MODEL_SIZE = 0.5, 4, 16
WARMUP_START, MILESTONE = 0.01, 4


def _noam(k):
    """reference-engine.md section 7, call k = 1, 2, ... (without the factor)."""
    return NOAM_MODEL_SIZE**-0.5 * min(k**-0.5, k * NOAM_WARMUP**-1.5)


def _linear(k):
    """From 1.0 at call 1 to FINAL at call LINEAR_ITERS + 1, then flat."""
    return 1.0 + (FINAL - 1.0) * min(k - 1, LINEAR_ITERS) / LINEAR_ITERS


def _cosine(k):
    return MIN_LR + (INITIAL - MIN_LR) * (1 + math.cos(math.pi * (k - 1) / COSINE_ITERS)) / 2


# ---- PyTorch side ---------------------------------------------------------------------------


def _torch_lrs(lr, make_scheduler):
    """(the LR each of N steps uses, what the naive loop reads after each step)."""
    param = torch.zeros(1, requires_grad=True)
    optim = torch.optim.SGD([param], lr=lr)
    sched = make_scheduler(optim)
    used, naive = [], []
    for _ in range(N):
        used.append(optim.param_groups[0]["lr"])
        optim.step()
        sched.step()
        naive.append(sched.get_last_lr()[0])
    return np.array(used), np.array(naive)


def torch_side():
    runs = {
        "constant": _torch_lrs(INITIAL, lambda o: torch_sched.LambdaLR(o, lambda e: 1.0)),
        "linear": _torch_lrs(
            INITIAL,
            lambda o: torch_sched.LinearLR(o, 1.0, FINAL / INITIAL, total_iters=LINEAR_ITERS),
        ),
        "cosine": _torch_lrs(
            INITIAL, lambda o: torch_sched.CosineAnnealingLR(o, COSINE_ITERS, eta_min=MIN_LR)
        ),
        "exponential": _torch_lrs(INITIAL, lambda o: torch_sched.ExponentialLR(o, GAMMA)),
        "step": _torch_lrs(INITIAL, lambda o: torch_sched.StepLR(o, STEP_SIZE, STEP_GAMMA)),
        "noam": _torch_lrs(NOAM_FACTOR, lambda o: torch_sched.LambdaLR(o, lambda e: _noam(e + 1))),
        "composed": _torch_lrs(
            1.0, lambda o: torch_sched.LambdaLR(o, lambda e: _linear(e + 1) * _cosine(e + 1))
        ),
        "sequential": _torch_lrs(
            INITIAL,
            lambda o: torch_sched.SequentialLR(
                o,
                [
                    torch_sched.LinearLR(o, WARMUP_START / INITIAL, 1.0, total_iters=MILESTONE),
                    torch_sched.ExponentialLR(o, GAMMA),
                ],
                milestones=[MILESTONE],
            ),
        ),
        "short_cosine": _torch_lrs(
            INITIAL, lambda o: torch_sched.CosineAnnealingLR(o, SHORT_COSINE_ITERS, eta_min=0.0)
        ),
    }
    return {
        "aligned": {name: used for name, (used, _) in runs.items()},
        "naive": {name: naive for name, (_, naive) in runs.items()},
    }


# ---- engine side ----------------------------------------------------------------------------


def _engine_lrs(scheduler):
    """burn's loop: `let lr = scheduler.step();` before each optimizer step. Every `init()` is
    burn 0.22's `ModuleLrScheduler`, whose `step()` is a `ModuleLearningRate`: without groups,
    its one rate is `base()`."""
    return np.array([scheduler.step().base() for _ in range(N)])


def engine_side():
    return {
        "aligned": {
            "constant": _engine_lrs(ModuleLrScheduler(ConstantLr(INITIAL))),
            "linear": _engine_lrs(LinearLrSchedulerConfig(INITIAL, FINAL, LINEAR_ITERS).init()),
            "cosine": _engine_lrs(
                CosineAnnealingLrSchedulerConfig(INITIAL, COSINE_ITERS, min_lr=MIN_LR).init()
            ),
            "exponential": _engine_lrs(ExponentialLrSchedulerConfig(INITIAL, GAMMA).init()),
            "step": _engine_lrs(StepLrSchedulerConfig(INITIAL, STEP_SIZE, STEP_GAMMA).init()),
            "noam": _engine_lrs(
                NoamLrSchedulerConfig(NOAM_FACTOR, NOAM_WARMUP, NOAM_MODEL_SIZE).init()
            ),
            "composed": _engine_lrs(
                ComposedLrSchedulerConfig()
                .linear(LinearLrSchedulerConfig(1.0, FINAL, LINEAR_ITERS))
                .cosine(CosineAnnealingLrSchedulerConfig(INITIAL, COSINE_ITERS, min_lr=MIN_LR))
                .init()
            ),
            "sequential": _engine_lrs(
                SequentialLrSchedulerConfig(
                    schedulers=[
                        LinearLrSchedulerConfig(WARMUP_START, INITIAL, MILESTONE),
                        ExponentialLrSchedulerConfig(INITIAL, GAMMA),
                    ],
                    milestones=[MILESTONE],
                ).init()
            ),
            "short_cosine": _engine_lrs(
                CosineAnnealingLrSchedulerConfig(INITIAL, SHORT_COSINE_ITERS).init()
            ),
        },
    }


# ---- checks ---------------------------------------------------------------------------------


def _shifted_by_one(torch_lrs, engine_lrs):
    t, e = np.asarray(torch_lrs), np.asarray(engine_lrs)
    return bool(np.allclose(t[:-1], e[1:], rtol=1e-12, atol=0))


_SHIFT = predicate(
    "torch[k] == engine[k+1]: the naive loop reads the next step's LR", _shifted_by_one
)
_SCHEDULERS = (
    "constant",
    "linear",
    "cosine",
    "exponential",
    "step",
    "noam",
    "composed",
    "sequential",
)
_SHIFTED = [name for name in _SCHEDULERS if name != "constant"]  # a constant LR cannot shift

CHECKS = [
    *[agree(f"aligned.{name}") for name in (*_SCHEDULERS, "short_cosine")],
    *[
        differ(
            name,
            left="torch:naive.",
            right="engine:aligned.",
            because="harness.engine.lr_scheduler",
            relation=_SHIFT,
        )
        for name in _SHIFTED
    ],
    agree("constant", "torch:naive.", "engine:aligned."),
]
