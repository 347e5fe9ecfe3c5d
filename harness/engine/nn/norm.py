"""Normalisation modules: BatchNorm (with burn's `RunningState`), GroupNorm, InstanceNorm,
RmsNorm, as burn-nn's crates/burn-nn/src/modules/norm/{batch,group,instance,rms}.rs and
burn-core's module/param/running.rs (burn commit 2c06be351006851d42fdb6df16b976f4a82d9747).

Each is a composite of engine primitives in burn's op order, so its gradient comes from the
primitives' rules. The learnable params are burn's `gamma` / `beta` (PyTorch's `weight` /
`bias`; the importer renames them, harness.engine.store.registry).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from harness.engine.errors import ShapeError
from harness.engine.kernels._common import fmt
from harness.engine.module import Config, Module, Param, ParamId
from harness.engine.module_ops import batch_norm
from harness.engine.tensor import Tensor

from .initializer import Initializer

__all__ = [
    "BatchNorm",
    "BatchNormConfig",
    "GroupNorm",
    "GroupNormConfig",
    "InstanceNorm",
    "InstanceNormConfig",
    "RmsNorm",
    "RmsNormConfig",
    "RunningState",
    "batch_norm",
]


class RunningState(Param):
    """burn's `RunningState<Tensor>`: a state updated during the forward pass, visited and
    mapped as a float param (same ParamId), so `params()`, `map()`, optimizers and the weight
    importer see it like any param; it never gets a gradient.

    burn's forward takes `&self` and writes the state through a shared `Mutex`; here
    `update()` writes into this object, the one place the engine mutates a module. As in burn,
    an update stays *pending* until the next `update()`, `value_sync()` or a move to the plain
    device (`valid()`): `val()` / `value()` (what `visit`, `map` and `params()` read) lag one
    update behind after a training forward, `value_sync()` does not.

    PyTorch difference: `running_mean` / `running_var` are buffers updated in place by every
    training forward and seen at once; burn's visited value lags by one update until synced.
    burn's clones share one state (an `Arc`); engine clones (`clone()`, `map()`) copy it, so a
    later update of one is not seen by the other.
    """

    __slots__ = ("_pending",)

    def __init__(self, id: ParamId, value: Tensor, pending: Tensor | None = None) -> None:
        super().__init__(id, value)
        self._pending = pending

    @classmethod
    def new(cls, value: Tensor) -> RunningState:
        """burn's `RunningState::new(value)`: a fresh ParamId."""
        return cls(ParamId.new(), value)

    def value(self) -> Tensor:
        """The current value, maybe one update behind (burn's `value()`)."""
        return self._value

    def value_sync(self) -> Tensor:
        """The value with a pending update applied (burn's `value_sync()`)."""
        self.sync()
        return self._value

    def sync(self) -> None:
        # burn averages the pending values of all threads (one here): sum / 1 is exact.
        if self._pending is not None:
            self._value = self._pending
            self._pending = None

    def update(self, value: Tensor) -> None:
        """Record a new value, applying the previous pending one first (burn's `update()`)."""
        self.sync()
        self._pending = value

    def with_value(self, param: Param) -> RunningState:
        """A state with `param`'s id and tensor and this one's pending update (what burn's
        `map` does: the mapped tensor is written into the state, the pending map untouched)."""
        return RunningState(param.id, param.val(), self._pending)

    def __repr__(self) -> str:
        return f"RunningState(id={self.id.encode()}, shape={list(self._value.shape)})"


def _map_running(state: Param, fn: Callable[[Param], Param]) -> Param:
    """`fn(state)`, kept a RunningState. burn's `valid()` syncs a state before it leaves the
    autodiff device, its `map` does not; the engine's `valid()` is a `map` to the plain
    device, so a map that moves the state there is redone on the synced state."""
    mapped = fn(state)
    if not isinstance(state, RunningState):
        return mapped
    moved_off = state._pending is not None and state._value.is_autodiff()
    if moved_off and not mapped.val().is_autodiff():
        state.sync()
        mapped = fn(state)
    return state.with_value(mapped)


# ---- BatchNorm -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BatchNormConfig(Config):
    """burn's `BatchNormConfig::new(num_features)`: epsilon 1e-5, momentum 0.1 (the same
    defaults and the same momentum convention as PyTorch's `BatchNorm*d`: new = (1 - m) * old
    + m * batch statistic)."""

    num_features: int
    epsilon: float = 1e-5
    momentum: float = 0.1

    def init(self, device) -> BatchNorm:
        n = self.num_features
        return BatchNorm(
            gamma=Initializer.Ones.init((n,), device),
            beta=Initializer.Zeros.init((n,), device),
            running_mean=RunningState.new(Tensor.zeros((n,), device)),
            running_var=RunningState.new(Tensor.ones((n,), device)),
            momentum=self.momentum,
            epsilon=self.epsilon,
        )


class BatchNorm(Module):
    """Batch normalisation over dim 1 of a `[batch, channels, ...]` input.

    Training vs inference is decided as burn decides it: by the input's device
    (`input.device().is_autodiff()`): on the autodiff device the batch statistics normalise
    and the running statistics are updated; on the plain device (a `valid()` module) the
    running statistics normalise. The output is `(x - mean) / sqrt(var + eps) * gamma + beta`
    (burn-backend's default `ModuleOps::batch_norm`, which flex and autodiff keep).

    Differences from PyTorch (`nn.BatchNorm2d`):
    - The mode is the device, not a `train()` / `eval()` flag: an autodiff input always
      trains (and updates the running statistics), a plain one never does.
    - The running variance is updated with the *biased* batch variance (divided by n, the one
      that normalises); PyTorch stores the unbiased one (divided by n - 1) while also
      normalising with the biased one. After one step from var = 1 with momentum m, burn
      stores 1 - m + m * var_n, PyTorch 1 - m + m * var_n * n / (n - 1).
    - The running statistics visited right after a training forward lag one update (see
      `RunningState`); PyTorch's buffers are current. `valid()` syncs them.
    - PyTorch's `num_batches_tracked` (and `momentum=None`, a cumulative average) has no
      burn counterpart; the importer reports that key unused.
    - Rank < 2 raises burn's panic text; PyTorch's message differs.
    - An empty batch (`[0, channels, ...]`) in training gives an empty output and zero
      gamma / beta gradients, as PyTorch, but writes NaN into both running statistics: burn's
      `forward_train` (batch.rs) has no empty-input branch, so its batch mean and variance are
      flex's `mean_dim` over an empty dim, 0 / 0 = NaN, and `(1 - m) * old + m * NaN` is NaN.
      PyTorch skips the update and leaves the running statistics unchanged (it still counts
      the batch in `num_batches_tracked`).
    """

    def __init__(
        self,
        gamma: Param,
        beta: Param,
        running_mean: Param,
        running_var: Param,
        momentum: float = 0.1,
        epsilon: float = 1e-5,
    ) -> None:
        self.gamma = gamma
        self.beta = beta
        self.running_mean = running_mean
        self.running_var = running_var
        self.momentum = momentum
        self.epsilon = epsilon

    def map(self, fn: Callable[[Param], Param]) -> BatchNorm:
        """burn's `map`: every param in order, the running statistics kept RunningStates."""
        return BatchNorm(
            fn(self.gamma),
            fn(self.beta),
            _map_running(self.running_mean, fn),
            _map_running(self.running_var, fn),
            self.momentum,
            self.epsilon,
        )

    def forward(self, x: Tensor) -> Tensor:
        self._check(x)
        if x.is_autodiff():
            return self._forward_train(x)
        mean = _state_value(self.running_mean)
        var = _state_value(self.running_var)
        return batch_norm(x, self.gamma.val(), self.beta.val(), mean, var, self.epsilon)

    def _check(self, x: Tensor) -> None:
        if x.ndim < 2:
            raise ShapeError(
                "BatchNorm can only be applied on tensors of rank >= 2 with the following "
                f"shape [batch_size, channels, ...], received {x.ndim}D tensor"
            )
        n = self.gamma.val().shape[0]
        if x.shape[1] != n:
            raise ShapeError(
                f"BatchNorm: expected an input of shape [batch_size, {n}, ...] ({n} features), "
                f"got shape {fmt(x.shape)}"
            )

    def _forward_train(self, x: Tensor) -> Tensor:
        dims = x.shape
        channels = dims[1]
        flat = int(np.prod(dims, dtype=np.int64)) // channels
        unsqueeze = [1] * len(dims)
        unsqueeze[1] = channels
        mean = x.swap_dims(0, 1).reshape([channels, flat]).mean_dim(1).reshape(unsqueeze)
        var = (
            (x - mean).powi_scalar(2).swap_dims(0, 1).reshape([channels, flat]).mean_dim(1)
        ).reshape(unsqueeze)
        m = self.momentum
        for state, stat in ((self.running_mean, mean), (self.running_var, var)):
            old = _state_sync(state)
            new = old.mul_scalar(1.0 - m).add(stat.detach().mul_scalar(m).reshape([channels]))
            _state_update(state, new.detach())
        return batch_norm(
            x,
            self.gamma.val(),
            self.beta.val(),
            mean.reshape([channels]),
            var.reshape([channels]),
            self.epsilon,
        )


def _state_value(state: Param) -> Tensor:
    return state.value() if isinstance(state, RunningState) else state.val()


def _state_sync(state: Param) -> Tensor:
    return state.value_sync() if isinstance(state, RunningState) else state.val()


def _state_update(state: Param, value: Tensor) -> None:
    if not isinstance(state, RunningState):
        raise TypeError(
            "BatchNorm: running statistics must be RunningState params to be updated, got "
            f"{type(state).__name__}"
        )
    state.update(value)


# ---- GroupNorm / InstanceNorm --------------------------------------------------------------


def _affine_params(n: int, affine: bool, device) -> tuple[Param | None, Param | None]:
    if not affine:
        return None, None
    return Initializer.Ones.init((n,), device), Initializer.Zeros.init((n,), device)


@dataclasses.dataclass(frozen=True)
class GroupNormConfig(Config):
    """burn's `GroupNormConfig::new(num_groups, num_channels)`: epsilon 1e-5, affine true;
    `init` panics unless num_groups divides num_channels (PyTorch raises too)."""

    num_groups: int
    num_channels: int
    epsilon: float = 1e-5
    affine: bool = True

    def init(self, device) -> GroupNorm:
        if self.num_groups <= 0 or self.num_channels % self.num_groups:
            raise ValueError("The number of channels must be divisible by the number of groups")
        gamma, beta = _affine_params(self.num_channels, self.affine, device)
        return GroupNorm(gamma, beta, self.num_groups, self.num_channels, self.epsilon)


class GroupNorm(Module):
    """Group normalisation of `[batch, channels, ...]`: statistics per sample and group of
    `channels / num_groups` channels (biased variance), then the per-channel affine.

    Differences from PyTorch (`nn.GroupNorm`): burn's rank check counts *elements*, not dims
    (`shape.num_elements() <= 2` panics with "input rank ... at least 3, but got <elements>"),
    so a rank-2 `[batch, channels]` input with more than 2 elements is normalised (as PyTorch
    does too) and a 2-element one is refused; the texts are burn's.
    """

    def __init__(self, gamma, beta, num_groups: int, num_channels: int, epsilon: float = 1e-5):
        self.gamma = gamma
        self.beta = beta
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.epsilon = epsilon

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            given = x.shape[1] if x.ndim >= 2 else fmt(x.shape)
            raise ShapeError(
                "The number of channels in the input tensor should be equal to the number of "
                f"channels in the GroupNorm module. Expected {self.num_channels}, got {given}"
            )
        return group_norm(x, self.gamma, self.beta, self.num_groups, self.epsilon)


def group_norm(x: Tensor, gamma, beta, num_groups: int, epsilon: float) -> Tensor:
    """burn-nn's `group_norm`, in its op order (mean_dim, sub, square, mean_dim, add_scalar,
    sqrt, div, reshape, then mul / add with `[1, channels, 1, ...]` gamma / beta)."""
    shape = x.shape
    elements = int(np.prod(shape, dtype=np.int64))
    if elements <= 2:
        raise ShapeError(f"input rank for GroupNorm should be at least 3, but got {elements}")
    batch, channels = shape[0], shape[1]
    hidden = int(np.prod(shape[2:], dtype=np.int64)) * channels // num_groups
    grouped = x.reshape([batch, num_groups, hidden])
    centered = grouped - grouped.mean_dim(2)
    var = centered.powi_scalar(2).mean_dim(2)
    normalized = (centered / (var + epsilon).sqrt()).reshape(list(shape))
    if gamma is None:
        return normalized
    affine = [1] * len(shape)
    affine[1] = channels
    return normalized * gamma.val().reshape(affine) + beta.val().reshape(affine)


@dataclasses.dataclass(frozen=True)
class InstanceNormConfig(Config):
    """burn's `InstanceNormConfig::new(num_channels)`: epsilon 1e-5, affine true.

    PyTorch difference: `nn.InstanceNorm2d` defaults to `affine=False` (burn: true) and
    can track running statistics (burn cannot); burn's importer has no weight/bias rename
    for InstanceNorm (harness.engine.store.registry)."""

    num_channels: int
    epsilon: float = 1e-5
    affine: bool = True

    def init(self, device) -> InstanceNorm:
        gamma, beta = _affine_params(self.num_channels, self.affine, device)
        return InstanceNorm(gamma, beta, self.num_channels, self.epsilon)


class InstanceNorm(Module):
    """Instance normalisation: burn's `group_norm` with one group per channel."""

    def __init__(self, gamma, beta, num_channels: int, epsilon: float = 1e-5) -> None:
        self.gamma = gamma
        self.beta = beta
        self.num_channels = num_channels
        self.epsilon = epsilon

    def forward(self, x: Tensor) -> Tensor:
        return group_norm(x, self.gamma, self.beta, self.num_channels, self.epsilon)


# ---- RmsNorm -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RmsNormConfig(Config):
    """burn's `RmsNormConfig::new(d_model)`: epsilon 1e-5 (must be > 0), gamma ones.

    PyTorch difference: `nn.RMSNorm(d, eps=None)` defaults eps to the dtype's machine
    epsilon; pass `eps=1e-5` to compare."""

    d_model: int
    epsilon: float = 1e-5

    def init(self, device) -> RmsNorm:
        if not self.epsilon > 0.0:
            raise ValueError("epsilon must be positive.")
        return RmsNorm(Initializer.Ones.init((self.d_model,), device), self.epsilon)


class RmsNorm(Module):
    """`x / sqrt(mean(x^2, last dim) + eps) * gamma`.

    Not reproduced: burn computes the rms in float32 (`x.cast(F32)`) and casts it back, so a
    float64 RmsNorm has float32-rounded statistics in burn. The engine's `cast` is untracked
    (no gradient through it), which would drop the gradient through the rms, so the engine
    keeps the input's dtype; float32 inputs are unaffected. PyTorch computes in the input
    dtype, as the engine does.
    """

    def __init__(self, gamma: Param, epsilon: float = 1e-5) -> None:
        self.gamma = gamma
        self.epsilon = epsilon

    def forward(self, x: Tensor) -> Tensor:
        d = self.gamma.val().shape[0]
        if x.shape[-1:] != (d,):
            raise ShapeError(f"RmsNorm: expected an input of shape [..., {d}], got {fmt(x.shape)}")
        rms = (x.powi_scalar(2).mean_dim(x.ndim - 1) + self.epsilon).sqrt()
        return (x / rms) * self.gamma.val()
