"""The module optimizer, the per-tensor optimizer base, the shared configs and the in-place
update helpers (burn-optim `optim/module/module_optimizer.rs`, `optim/module/base.rs`,
`optim/decay.rs`, `optim/momentum.rs`; read at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747).

State buffers: each param's state (moments, velocity, sums) is held by the optimizer and
updated **in place** (`out=`) at every step, with one reusable work buffer (`scratch`) per
param; the only array a steady step allocates per param is the new param value (gradient
clipping and Muon's Newton-Schulz iteration build arrays of their own; first steps allocate the
state). That array is fresh, so a module cloned before the step keeps its old values. burn
moves the state in and out of `step` by value; here the state object passed to a bare
optimizer's `step` is consumed the same way (its buffers become the returned state's), and
`ModuleOptimizer.to_record()` hands out copies.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from harness.engine import divergence
from harness.engine.lr_scheduler.module_lr_scheduler import ModuleLearningRate
from harness.engine.module import Config, Module, Param, ParamId, consume_map
from harness.engine.optim import groups
from harness.engine.optim.clipping import GradientClipping, GradientClippingConfig
from harness.engine.tensor import Tensor

__all__ = [
    "ModuleOptimizer",
    "MomentumConfig",
    "OptimizerState",
    "TensorOptimizer",
    "WeightDecayConfig",
]


F32_HYPERPARAMETERS = divergence.register(
    "optim.f32_hyperparameters",
    "harness.engine.optim.base.f32",
    "PyTorch keeps an optimizer's hyperparameters as the Python floats given (f64)",
)


def f32(x: float) -> np.float32:
    """burn stores most hyperparameters as f32: round once, as the config does.

    PyTorch difference: PyTorch keeps the Python float it was given (f64) and does its scalar
    arithmetic (`1 - beta`, `beta ** t`) in f64, so 0.9 and float32(0.9) are different
    constants (a formula-level difference in float64 runs). Switch
    `optim.f32_hyperparameters` (``harness.engine.divergence``) keeps them as f64.
    """
    if F32_HYPERPARAMETERS.on:
        return np.float64(x)
    return np.float32(x)


ONE = np.float32(1.0)
"""The f32 `1.0` of burn's `1.0 - beta` (computed in f32, then cast to the tensor dtype)."""


# ---- configs shared by the optimizers -----------------------------------------------------


@dataclasses.dataclass(frozen=True)
class WeightDecayConfig(Config):
    """Coupled L2 weight decay: `grad + penalty * theta` (penalty stored as f32)."""

    penalty: float


@dataclasses.dataclass(frozen=True)
class MomentumConfig(Config):
    """burn's momentum: first step `v = g`, then `v = momentum * v + (1 - dampening) * g`;
    nesterov uses `g + momentum * v`.

    PyTorch difference: burn's default **dampening is 0.1** (PyTorch 0) and `momentum`
    defaults to 0.9 (PyTorch has no default momentum, i.e. 0). burn stores `momentum` as f32
    (PyTorch: f64), 2.6e-8 relative off for 0.9: 1.2e-7 on the A1 params after 20 float64
    steps, inside the default tolerance.
    """

    momentum: float = 0.9
    dampening: float = 0.1
    nesterov: bool = False


# ---- per-param state ----------------------------------------------------------------------


@dataclasses.dataclass
class OptimizerState:
    """Base of the per-param states: array fields updated in place by the optimizer, plus
    work buffers, which are not part of burn's state: `scratch`, one of the param's shape,
    and any other field a state declares with `work_buffer_field()`."""

    scratch: np.ndarray | None = dataclasses.field(
        default=None, repr=False, compare=False, kw_only=True
    )

    def copy(self):
        """A deep copy of the state (arrays copied, no work buffers): what a record holds."""
        fields = {}
        for f in dataclasses.fields(self):
            value = None if not f.compare else getattr(self, f.name)  # work buffers: dropped
            fields[f.name] = value.copy() if isinstance(value, np.ndarray) else value
        return dataclasses.replace(self, **fields)

    @staticmethod
    def work_buffer_field():
        """A work-buffer field (not compared, not shown, dropped by `copy`)."""
        return dataclasses.field(default=None, repr=False, compare=False, kw_only=True)

    def work_buffer(self, like: np.ndarray) -> np.ndarray:
        """`scratch`, created on first use (records and loaded states have none)."""
        if self.scratch is None:
            self.scratch = np.empty_like(like)
        return self.scratch


# ---- the per-tensor optimizer -------------------------------------------------------------


class TensorOptimizer:
    """burn's `Optimizer` trait: one param at a time with its gradient and state.

    `step(lr, tensor, grad, state)` takes engine tensors (or NumPy arrays) and returns the
    new value with the new state, like burn's `(Tensor<D>, Option<State<D>>)`. The state
    passed in is consumed (burn moves it): its buffers are updated in place and returned.
    Subclasses implement `update` on NumPy arrays, which `ModuleOptimizer` calls directly.
    """

    def step(self, lr: float, tensor, grad, state=None):
        """One update of `tensor` by `grad`; returns `(new value, new state)`."""
        if isinstance(tensor, Tensor):
            value, state = self.update(float(lr), tensor._data, grad._data, state)
            return Tensor._wrap(value, tensor.device), state
        return self.update(float(lr), tensor, grad, state)

    def update(self, lr: float, tensor: np.ndarray, grad: np.ndarray, state):
        """The update on arrays: returns `(new array, new state)`; never writes to `tensor`
        or `grad` (both may be shared)."""
        raise NotImplementedError  # pragma: no cover - abstract


# ---- in-place arithmetic in burn's order --------------------------------------------------


def sub_scaled(tensor: np.ndarray, delta: np.ndarray, lr: float) -> np.ndarray:
    """`tensor - delta * lr` (burn's `tensor - delta.mul_scalar(lr)`) in one new array: the
    product allocates it (plain SGD's hot path, one call fewer than `sub_scaled_into`)."""
    # 0.0 and -0.0 are one cache key but negate to different zeros: those are never cached.
    out = delta * (_negated(lr, tensor.dtype) if lr else tensor.dtype.type(-lr))
    out += tensor
    return out


def sub_scaled_into(out: np.ndarray, tensor: np.ndarray, delta, lr: float) -> np.ndarray:
    """`out = tensor - delta * lr`, computed as `delta * (-lr) + tensor`: negation is exact
    and addition commutes, so it rounds identically and needs no temporary. `delta` may be
    `out` itself."""
    # 0.0 and -0.0 are one cache key but negate to different zeros: those are never cached.
    np.multiply(delta, _negated(lr, tensor.dtype) if lr else tensor.dtype.type(-lr), out=out)
    out += tensor
    return out


@functools.lru_cache(maxsize=32)
def _negated(lr: float, dtype: np.dtype) -> np.ndarray:
    """`-lr` cast to `dtype`, as a read-only 0-d array: NumPy multiplies by a 0-d array
    faster than by a scalar (~0.2 vs ~0.35 us on small arrays), with the same result, and
    the cache saves the cast at every param of every step."""
    scale = np.array(-lr, dtype=dtype)
    scale.flags.writeable = False
    return scale


def decay_into(out: np.ndarray, tensor: np.ndarray, grad: np.ndarray, config) -> np.ndarray:
    """burn's coupled weight decay `tensor * penalty + grad`, written to `out` (returned), or
    `grad` itself when `config` is None."""
    if config is None:
        return grad
    np.multiply(tensor, tensor.dtype.type(f32(config.penalty)), out=out)
    out += grad
    return out


def axpy_into(acc: np.ndarray, keep, x: np.ndarray, rest, scratch: np.ndarray) -> None:
    """`acc = acc * keep + x * rest` in place (burn's `acc.mul_scalar(keep).add(x.mul_scalar(
    rest))`: both products rounded, then one sum, which commutes)."""
    np.multiply(acc, keep, out=acc)
    np.multiply(x, rest, out=scratch)
    acc += scratch


# ---- the module optimizer -----------------------------------------------------------------


class ModuleOptimizer:
    """Applies a per-tensor optimizer to every param of a module (burn's `ModuleOptimizer`).
    State lives in `records`, keyed by ParamId, and is owned by the optimizer."""

    def __init__(self, optim, grad_clipping: GradientClipping | None = None) -> None:
        self.optim = optim
        self.grad_clipping = grad_clipping
        self.records: dict[ParamId, object] = {}
        # burn's per-param context beyond the state (harness.engine.optim.groups): the module
        # path of each state, and the groups of `with_group` (None: the base optimizer only).
        self.paths: dict[ParamId, str | None] = {}
        self.grouping = None

    def with_grad_clipping(self, clipping: GradientClipping) -> ModuleOptimizer:
        """Attach gradient clipping to the base group (burn's `with_grad_clipping`); params
        that already have state keep the clipping they had (see `groups`)."""
        if self.records:
            groups.grouping(self)
        self.grad_clipping = clipping
        return self

    def with_group(self, group, optim, grad_clipping=None) -> ModuleOptimizer:
        """Use the per-tensor `optim` (and `grad_clipping`) for the params `group` matches
        (burn's `with_group`: the last matching group wins; their state is cleared). See
        `harness.engine.optim.groups`."""
        return groups.add_group(self, group, optim, grad_clipping)

    def has_gradient_clipping(self) -> bool:
        """True when any group clips."""
        return groups.has_clipping(self)

    def step(self, lr: float, module: Module, grads) -> Module:
        """One optimization step; returns the updated module and **consumes** `module`.

        Rebind the result: `model = optim.step(lr, model, grads)`. Any later use of the module
        passed in raises `MovedValueError`; pass `model.clone()` to keep the original.
        Params without a gradient in `grads` are returned unchanged. Like burn, which takes
        `grads` by value, the step takes the entries it uses out of `grads`. `lr` is a float
        or a `ModuleLearningRate` (per-group rates, `ModuleLrScheduler.step()`).

        PyTorch differences: PyTorch's `optimizer.step()` updates the bound parameters in place;
        here the result is the update, so a discarded result (`optim.step(lr, model.clone(),
        grads)`) loses it silently, while a stateful optimizer's state has still advanced.
        Params are matched by ParamId at each step, not bound at construction.
        """
        if lr.__class__ is not float or self.grouping is not None:
            if self.grouping is not None or isinstance(lr, ModuleLearningRate):
                return groups.step(self, lr, module, grads)
            lr = groups.rate(lr)
        if not isinstance(module, Module):
            raise TypeError(f"step: expected a Module, got {type(module).__name__}")
        # burn moves `grads` in: the entries used are taken out, so each gradient is freed as
        # soon as its param is updated.
        new = consume_map(module, self._mapper(lr, grads._grads))
        if len(self.records) != len(self.paths):  # states created: record their paths
            groups.record_paths(self, new)
        return new

    def _mapper(self, lr: float, pending: dict) -> Callable[[Param], Param]:
        optim_update = self.optim.update
        clipping = self.grad_clipping
        records = self.records
        take_grad = pending.pop
        take_state = records.pop

        def update(param: Param) -> Param:
            pid = param.id
            grad = take_grad(pid, None)
            if grad is None:
                return param
            tensor = param._value
            if clipping is not None:
                grad = clipping.clip_array(grad)
            value, state = optim_update(lr, tensor._data, grad, take_state(pid, None))
            if state is not None:
                records[pid] = state
            return Param(pid, tensor._updated(value))

        return update

    def to_record(self) -> groups.StateRecord:
        """The per-ParamId state, copied: later steps update the optimizer's own buffers in
        place and leave a record taken before them as it was. `.paths` holds their paths."""
        paths = {pid: self.paths[pid] for pid in self.records if self.paths.get(pid)}
        return groups.StateRecord(((p, _copied(s)) for p, s in self.records.items()), paths)

    def load_record(self, record: dict[ParamId, object]) -> ModuleOptimizer:
        """Replace the state with a copy of `record` (which stays as it is); its `paths`
        (none for a plain dict) route each state to its group."""
        self.records = {pid: _copied(state) for pid, state in record.items()}
        paths = getattr(record, "paths", {})
        self.paths = {pid: paths[pid] for pid in self.records if pid in paths}
        groups.loaded(self)
        return self


def _copied(state):
    return state.copy() if isinstance(state, OptimizerState) else state


class OptimizerConfig(Config):
    """An optimizer's config (burn's `XConfig`): its fields include every field of the
    per-tensor optimizer `_optimizer`; `_clipping` names the field holding its gradient
    clipping (None: it has none)."""

    _optimizer: ClassVar[type]
    _clipping: ClassVar[str | None] = "grad_clipping"

    def build(self):
        """The bare per-tensor optimizer (burn's `build()`; no clipping)."""
        return build_optimizer(self._optimizer, self)

    def init(self) -> ModuleOptimizer:
        """A ModuleOptimizer around `build()`, with the config's clipping (burn's `init()`)."""
        clipping = None if self._clipping is None else getattr(self, self._clipping)
        return init_optimizer(self._optimizer, self, clipping)


def init_optimizer(
    optim_cls: type, config: Config, clipping: GradientClippingConfig | None
) -> ModuleOptimizer:
    """A ModuleOptimizer around `build_optimizer(optim_cls, config)`."""
    optim = build_optimizer(optim_cls, config)
    return ModuleOptimizer(optim, None if clipping is None else clipping.init())


def build_optimizer(optim_cls: type, config: Config):
    """`optim_cls` built from the config fields of the same names (every field of the
    per-tensor optimizer is a field of its config): burn's `XConfig::build()`."""
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(optim_cls)}
    return optim_cls(**fields)
