"""What every scheduler shares: burn's error strings, Rust's `powi`, the `LrScheduler` base,
the constant rate, and the children of composed schedulers (burn-optim
`src/lr_scheduler/{base,constant,composed}.rs`, read at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

# burn's error strings, to the letter (burn-optim/src/lr_scheduler/*.rs).
INITIAL_LR_RANGE = "Initial learning rate must be greater than 0 and at most 1"
FINAL_LR_RANGE = "Final learning rate must be at least 0 and at most 1"
NUM_ITERS_ZERO = "Number of iterations must be at least 1"
MIN_LR_RANGE = (
    "Minimum learning rate must be at least 0 and at most equal to the initial learning rate"
)
GAMMA_RANGE = "Gamma must be greater than 0 and at most 1"
STEP_SIZE_ZERO = "Step size must be greater than 0"
WARMUP_ZERO = "Number of steps before exponential decay starts must be greater than 0"
MODEL_SIZE_ZERO = "Model size must be greater than 0"
NO_SCHEDULERS = "At least one scheduler is required"
MILESTONE_COUNT = "The number of milestones must be one less than the number of schedulers"
MILESTONE_ORDER = "Milestones must be greater than zero and strictly increasing"
STEP_OVERFLOW = "`.step()` should be called no more than `i32::MAX + 1` times"

USIZE_MAX = 2**64 - 1
I32_MAX = 2**31 - 1


def powi(base, exp: int):
    """Rust's `powi` as LLVM compiles it (`__powidf2` for f64, `__powisf2` for f32):
    square-and-multiply in the type of `base` (a Python float or a NumPy float32), so the
    rounding matches burn's bit for bit (`**` calls libm `pow`, which can differ by an ULP)."""
    one = base.__class__(1.0)
    recip = exp < 0
    n = -exp if recip else exp
    result = one
    while True:
        if n & 1:
            result *= base
        n //= 2
        if n == 0:
            break
        base *= base
    return one / result if recip else result


def check_initial_lr(initial_lr: float) -> None:
    if initial_lr <= 0.0 or initial_lr > 1.0:
        raise ValueError(INITIAL_LR_RANGE)


def check_num_iters(num_iters: int) -> None:
    if num_iters == 0:
        raise ValueError(NUM_ITERS_ZERO)


class LrScheduler:
    """Base of every scheduler: `step()` advances and returns the LR to use now.

    `_state` maps burn's record keys to the attribute holding each and its Rust type in burn's
    state struct (`usize`, `i32`, `f64`: how a burnpack record types the scalar).
    """

    _state: ClassVar[dict[str, tuple[str, str]]] = {}

    def step(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_record(self) -> dict:
        """burn's `to_record()`: the scheduler's state scalars by burn's names."""
        return {key: getattr(self, attr) for key, (attr, _) in self._state.items()}

    def load_record(self, record: dict) -> LrScheduler:
        """burn's `load_record`: resume from `record` (keys absent from it are kept);
        returns this scheduler."""
        for key, (attr, _) in self._state.items():
            if key in record:
                setattr(self, attr, record[key])
        return self


@dataclass
class ConstantLr(LrScheduler):
    """A constant learning rate (burn's `ConstantLr`; a bare float child of a composed or
    sequential config works the same). No state."""

    lr: float

    def step(self) -> float:
        return self.lr


def build_child(owner: str, index: int, config) -> LrScheduler:
    """burn's `LrSchedulerConfig::build`: a float is a constant LR, a config is built."""
    if isinstance(config, (int, float)) and not isinstance(config, bool):
        return ConstantLr(float(config))
    build = getattr(config, "build", None)
    if build is None:
        raise TypeError(
            f"{owner}: scheduler {index} is a {type(config).__name__}, expected a float "
            "(a constant LR) or a scheduler config"
        )
    return build()


def children_record(schedulers: list[LrScheduler]) -> dict:
    """burn's `with_record(index, child)`: each child's keys under `"<index>."`."""
    return {
        f"{index}.{key}": value
        for index, child in enumerate(schedulers)
        for key, value in child.to_record().items()
    }


def load_children(schedulers: list[LrScheduler], record: dict) -> None:
    """burn's `record(index)`: each child reads the keys under its prefix."""
    for index, child in enumerate(schedulers):
        prefix = f"{index}."
        child.load_record({k[len(prefix) :]: v for k, v in record.items() if k.startswith(prefix)})
