"""The learning-rate schedulers of burn-optim (reference-engine.md section 7; burn's
`crates/burn-optim/src/lr_scheduler/*.rs`, read at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747): `base` (the shared pieces), `schedulers` (one
section per burn file), `module_lr_scheduler` (rates per parameter group).

Each config is named as burn's type and takes burn's fields (snake_case, same order as burn's
`new(...)` plus the defaulted fields as keywords). `build()` and `init()` validate and raise
`ValueError` with burn's message where burn returns `Err(String)`. `build()` (burn's
`pub(crate)` one, used by burn's own tests) returns the scheduler, whose `step()` advances and
returns the learning rate to use *now* as a float; `init()` returns it inside a
`ModuleLrScheduler` (`harness.engine.module_lr_scheduler`), as burn 0.22's every `init()` does
(`cosine.rs` `init() -> Result<ModuleLrScheduler, String>`), whose `step()` returns the
`ModuleLearningRate` that `optim.step` takes (`.base()` is the float). Schedulers have
burn's `to_record()` / `load_record(record)` (a dict of burn's state scalars; composed and
sequential children under `"0."`, `"1."`, ...).

PyTorch divergence (documented, see the `lr_schedulers` case): burn's `step()` is called
*before* the optimizer step and its **first call returns the initial LR**; PyTorch's
`scheduler.step()` is called *after* `optimizer.step()` and the LR of step k is read from the
optimizer (`get_last_lr()` after k-1 calls). The two sequences agree only after that shift.

All arithmetic is float64, in the order burn writes it, so values are bit-identical to burn's.
"""

from harness.engine.lr_scheduler.base import ConstantLr, LrScheduler, powi
from harness.engine.lr_scheduler.module_lr_scheduler import (
    ModuleLearningRate,
    ModuleLrScheduler,
    ModuleLrSchedulerConfig,
)
from harness.engine.lr_scheduler.schedulers import (
    ComposedLrScheduler,
    ComposedLrSchedulerConfig,
    CosineAnnealingLrScheduler,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrScheduler,
    ExponentialLrSchedulerConfig,
    LinearLrScheduler,
    LinearLrSchedulerConfig,
    NoamLrScheduler,
    NoamLrSchedulerConfig,
    SchedulerReduction,
    SequentialLrScheduler,
    SequentialLrSchedulerConfig,
    StepLrScheduler,
    StepLrSchedulerConfig,
)

__all__ = [
    "ComposedLrScheduler",
    "ComposedLrSchedulerConfig",
    "ConstantLr",
    "CosineAnnealingLrScheduler",
    "CosineAnnealingLrSchedulerConfig",
    "ExponentialLrScheduler",
    "ExponentialLrSchedulerConfig",
    "LinearLrScheduler",
    "LinearLrSchedulerConfig",
    "LrScheduler",
    "ModuleLearningRate",
    "ModuleLrScheduler",
    "ModuleLrSchedulerConfig",
    "NoamLrScheduler",
    "NoamLrSchedulerConfig",
    "SchedulerReduction",
    "SequentialLrScheduler",
    "SequentialLrSchedulerConfig",
    "StepLrScheduler",
    "StepLrSchedulerConfig",
    "powi",
]
