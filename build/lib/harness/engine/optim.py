"""Gradients per ParamId, gradient clipping and the optimizers of burn-optim
(reference-engine.md sections 5 and 6).

An optimizer is built without params: `SgdConfig(...).init()` returns a `ModuleOptimizer` whose
`step(lr, module, grads)` walks the module's params in order and returns the **updated module**.
For each param with a gradient: clip (if configured), then the optimizer's own weight decay /
momentum, then the update, computed off the graph in the param's dtype with burn's op order and
burn's scalar types (f32 hyperparameters, f64 learning rate, both cast to the tensor dtype). The
new value is a fresh marked leaf with the **same ParamId**; state is stored per ParamId.

PyTorch differences, all deliberate (each is a case):
- binding: `torch.optim` holds parameter objects from construction; here gradients and state
  are found by ParamId at every step, so gradients of *another* module (new ParamIds) match
  nothing: the step is a silent no-op, as in PyTorch's "optimizer built on another model";
- out of place: `step` returns a new module and consumes the one passed in (using it again
  raises `MovedValueError`, the Python form of Rust's E0382); clones taken before the step keep
  the old values, where PyTorch aliases see the in-place update;
- `step` is not must-use: ignoring its result (e.g. passing `model.clone()`) loses the update,
  while a stateful optimizer's state has advanced;
- `grads` is taken by value in burn: the step removes the entries it uses from the
  GradientsParams passed in (PyTorch leaves `.grad` in place until `zero_grad()`);
- `lr` is a float per step (burn also accepts per-group rates; not implemented here);
- a param without gradient is skipped entirely: no decay, no state change, its step count does
  not advance (PyTorch also skips params whose `.grad` is None);
- defaults: epsilon 1e-5 everywhere (PyTorch 1e-8; AdaGrad 1e-10), AdamW weight decay 1e-4
  (PyTorch 1e-2), momentum dampening 0.1 (PyTorch 0), RMSProp momentum 0.9 (PyTorch 0);
- gradient-norm clipping is per parameter and runs inside the step (PyTorch's
  `clip_grad_norm_` uses one global norm over all params, eps 1e-6, before `step()`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np

from harness.engine.autodiff import Gradients
from harness.engine.errors import REQUIRES_AUTODIFF, AutodiffError
from harness.engine.lr_scheduler import powi
from harness.engine.module import Config, Module, Param, ParamId, consume_map, params_of
from harness.engine.tensor import Tensor

__all__ = [
    "AdaGrad",
    "AdaGradConfig",
    "AdaGradState",
    "Adam",
    "AdamConfig",
    "AdamW",
    "AdamWConfig",
    "AdaptiveMomentumState",
    "GradientClipping",
    "GradientClippingConfig",
    "GradientsAccumulator",
    "GradientsParams",
    "ModuleOptimizer",
    "MomentumConfig",
    "RmsProp",
    "RmsPropConfig",
    "RmsPropState",
    "Sgd",
    "SgdConfig",
    "SgdState",
    "WeightDecayConfig",
]


def _f32(x: float) -> np.float32:
    """burn stores most hyperparameters as f32: round once, as the config does."""
    return np.float32(x)


# ---- GradientsParams / GradientsAccumulator -----------------------------------------------


class GradientsParams:
    """Gradients keyed by ParamId (burn's `GradientsParams`), plain tensors.

    Build it with `GradientsParams.from_grads(grads, module)`, which takes each param's
    gradient out of `grads`. Entries are held as NumPy arrays and wrapped as plain tensors on
    the way out (`get`, `remove`): the optimizer reads the arrays at every step.

    PyTorch difference: PyTorch keeps gradients on the params (`p.grad`); burn detaches them
    from the graph into this container, and the optimizer looks them up by ParamId.
    """

    __slots__ = ("_grads",)

    def __init__(self) -> None:
        self._grads: dict[ParamId, np.ndarray] = {}

    @classmethod
    def new(cls) -> GradientsParams:
        """An empty container."""
        return cls()

    @classmethod
    def from_grads(cls, grads: Gradients, module: Module) -> GradientsParams:
        """Visit `module`'s params in order and move each one's gradient out of `grads`.

        Params without a gradient get no entry (no zero fill); gradients of other tensors are
        dropped. A `grads` from another module (other ParamIds / nodes) gives an empty
        container, silently.
        """
        return cls.from_module(grads, module)

    @classmethod
    def from_module(cls, grads: Gradients, module: Module) -> GradientsParams:
        """Same as `from_grads` (burn's variant taking `&mut Gradients`)."""
        out = cls()
        container = out._grads
        take = grads._grads.pop
        for param in params_of(module):
            # `param.grad_remove(grads)`, inlined: this runs for every param at every step.
            node = param._value._node
            if node is None:
                raise AutodiffError(REQUIRES_AUTODIFF)
            grad = take(node.id, None)
            if grad is not None:
                container[param.id] = grad
        return out

    def get(self, id: ParamId, ndim: int | None = None) -> Tensor | None:
        """The gradient of `id` (a copy-on-write handle: tensors are immutable), or None.

        burn's `get::<D>` is typed by rank; pass `ndim` to get the same check: a gradient of
        another rank raises `ValueError` instead of handing back a wrongly shaped tensor.
        """
        grad = self._grads.get(id)
        if grad is not None and ndim is not None:
            _check_rank("get", id, grad, ndim)
        return None if grad is None else Tensor._plain(grad)

    def remove(self, id: ParamId, ndim: int | None = None) -> Tensor | None:
        """Take the gradient of `id` out of the container (None when absent)."""
        grad = self._grads.get(id)
        if grad is not None and ndim is not None:
            _check_rank("remove", id, grad, ndim)
        grad = self._grads.pop(id, None)
        return None if grad is None else Tensor._plain(grad)

    def register(self, id: ParamId, value: Tensor) -> None:
        """Store `value` as the gradient of `id`, replacing any previous one."""
        self._grads[id] = value._data  # the inner (plain) values of an autodiff tensor too

    def len(self) -> int:
        """Number of gradients held (burn's `len()`)."""
        return len(self._grads)

    def is_empty(self) -> bool:
        """True when no gradient is held."""
        return not self._grads

    def ids(self) -> list[ParamId]:
        """The ParamIds held, in insertion order."""
        return list(self._grads)

    def __len__(self) -> int:
        return len(self._grads)

    def __contains__(self, id: ParamId) -> bool:
        return id in self._grads

    def __repr__(self) -> str:
        return f"GradientsParams({len(self._grads)} entries)"


def _check_rank(op: str, id: ParamId, grad: np.ndarray, ndim: int) -> None:
    if grad.ndim != ndim:
        raise ValueError(
            f"GradientsParams.{op}: the gradient of param {id.encode()} has rank {grad.ndim} "
            f"(shape {list(grad.shape)}), but rank {ndim} was requested"
        )


class GradientsAccumulator:
    """Sums GradientsParams per ParamId over several backward passes (burn's
    `GradientsAccumulator`). No division by the number of parts: scale the losses yourself.

    PyTorch difference: PyTorch accumulates implicitly into `.grad` until `zero_grad()`.
    """

    def __init__(self) -> None:
        self._grads = GradientsParams()

    def accumulate(self, module: Module, grads: GradientsParams) -> None:
        """Add `grads` (for `module`'s params) to the running sums: `sum + new`."""
        store = self._grads._grads
        for param in params_of(module):
            new = grads._grads.pop(param.id, None)
            old = store.pop(param.id, None)
            if new is None and old is None:
                continue
            if new is None:
                total = old
            elif old is None:
                total = new
            else:
                total = old + new
            store[param.id] = total

    def grads(self) -> GradientsParams:
        """The accumulated sums; the accumulator starts over empty."""
        out, self._grads = self._grads, GradientsParams()
        return out


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
    defaults to 0.9 (PyTorch has no default momentum, i.e. 0).
    """

    momentum: float = 0.9
    dampening: float = 0.1
    nesterov: bool = False


class GradientClipping:
    """Clips one parameter's gradient: by value (elementwise clamp to [-c, c]) or by norm
    (scale by `min(1, c / (||g|| + tiny))`, tiny = the dtype's smallest positive normal).

    PyTorch difference: norm clipping is **per parameter**; `torch.nn.utils.clip_grad_norm_`
    scales all gradients by one global norm (and adds eps 1e-6 instead of `tiny`).
    """

    __slots__ = ("kind", "threshold")

    def __init__(self, kind: str, threshold: float) -> None:
        self.kind = kind
        self.threshold = _f32(threshold)

    def clip_gradient(self, grad: Tensor) -> Tensor:
        """The clipped gradient, a new tensor on the same device."""
        return Tensor._wrap(self.clip_array(grad._data), grad.device)

    def clip_array(self, g: np.ndarray) -> np.ndarray:
        """Clip a NumPy gradient, in its dtype, with burn's op order."""
        dt = g.dtype.type
        c = dt(self.threshold)
        if self.kind == "value":
            # burn fills `g > c` with c, then (from the same original g) `g < -c` with -c.
            return np.where(g < -c, -c, np.where(g > c, c, g))
        norm = np.sqrt(np.add.reduce(np.square(g), axis=None))
        # burn writes `threshold / (norm + tiny)` as `(norm + tiny).recip() * threshold`.
        coef = (dt(1.0) / (norm + dt(np.finfo(g.dtype).tiny))) * c
        coef = np.minimum(coef, dt(1.0))
        return g * coef

    def __repr__(self) -> str:
        return f"GradientClipping.{self.kind}({self.threshold})"


@dataclasses.dataclass(frozen=True)
class GradientClippingConfig:
    """burn's enum `GradientClippingConfig::{Value(c), Norm(c)}`: build it with
    `GradientClippingConfig.value(c)` or `.norm(c)`; `.init()` gives a `GradientClipping`."""

    kind: str
    threshold: float

    @classmethod
    def value(cls, threshold: float) -> GradientClippingConfig:
        """Clamp each gradient element into [-threshold, threshold]."""
        return cls("value", threshold)

    @classmethod
    def norm(cls, threshold: float) -> GradientClippingConfig:
        """Scale each parameter's gradient so its L2 norm is at most `threshold`."""
        return cls("norm", threshold)

    Value = value
    Norm = norm

    def init(self) -> GradientClipping:
        return GradientClipping(self.kind, self.threshold)


# ---- the module optimizer -----------------------------------------------------------------


class ModuleOptimizer:
    """Applies a per-tensor optimizer to every param of a module (burn's `OptimizerAdaptor` /
    `ModuleOptimizer`). State lives in `records`, keyed by ParamId."""

    def __init__(self, optim, grad_clipping: GradientClipping | None = None) -> None:
        self.optim = optim
        self.grad_clipping = grad_clipping
        self.records: dict[ParamId, object] = {}

    def with_grad_clipping(self, clipping: GradientClipping) -> ModuleOptimizer:
        """Attach gradient clipping (burn's `with_grad_clipping`)."""
        self.grad_clipping = clipping
        return self

    def has_gradient_clipping(self) -> bool:
        """True when clipping is attached."""
        return self.grad_clipping is not None

    def step(self, lr: float, module: Module, grads: GradientsParams) -> Module:
        """One optimization step; returns the updated module and **consumes** `module`.

        Rebind the result: `model = optim.step(lr, model, grads)`. Any later use of the module
        passed in raises `MovedValueError`; pass `model.clone()` to keep the original.
        Params without a gradient in `grads` are returned unchanged. Like burn, which takes
        `grads` by value, the step takes the entries it uses out of `grads`.

        PyTorch differences: PyTorch's `optimizer.step()` updates the bound parameters in place;
        here the result is the update, so a discarded result (`optim.step(lr, model.clone(),
        grads)`) loses it silently, while a stateful optimizer's state has still advanced.
        Params are matched by ParamId at each step, not bound at construction.
        """
        if lr.__class__ is not float and not isinstance(lr, (int, float, np.floating)):
            raise TypeError(f"step: lr must be a float, got {type(lr).__name__}")
        if not isinstance(module, Module):
            raise TypeError(f"step: expected a Module, got {type(module).__name__}")
        # burn moves `grads` in: the entries used are taken out, so each gradient is freed as
        # soon as its param is updated.
        return consume_map(module, self._mapper(float(lr), grads._grads))

    def _mapper(self, lr: float, pending: dict) -> Callable[[Param], Param]:
        optim_step = self.optim.step
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
            value, state = optim_step(lr, tensor._data, grad, take_state(pid, None))
            if state is not None:
                records[pid] = state
            return Param(pid, tensor._updated(value))

        return update

    def to_record(self) -> dict[ParamId, object]:
        """The per-ParamId state (a shallow copy)."""
        return dict(self.records)

    def load_record(self, record: dict[ParamId, object]) -> ModuleOptimizer:
        """Replace the state."""
        self.records = dict(record)
        return self


def _sub_scaled(tensor: np.ndarray, delta: np.ndarray, lr: float) -> np.ndarray:
    """`tensor - delta * lr` (burn's `tensor - delta.mul_scalar(lr)`), with one allocation:
    `delta * (-lr) + tensor` rounds identically (negation is exact) and needs no temporary,
    which keeps the step's peak memory at one new array per param."""
    # 0.0 and -0.0 are one cache key but negate to different zeros: those are never cached.
    out = delta * (_negated(lr, tensor.dtype) if lr else tensor.dtype.type(-lr))
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


def _decay(tensor: np.ndarray, grad: np.ndarray, config: WeightDecayConfig | None):
    """burn's coupled weight decay: `tensor * penalty + grad`."""
    if config is None:
        return grad
    return tensor * tensor.dtype.type(_f32(config.penalty)) + grad


def _init(
    optim_cls: type, config: Config, clipping: GradientClippingConfig | None
) -> ModuleOptimizer:
    """A ModuleOptimizer around `optim_cls` built from the config fields of the same names
    (every field of the per-tensor optimizer is a field of its config)."""
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(optim_cls)}
    return ModuleOptimizer(optim_cls(**fields), None if clipping is None else clipping.init())


# ---- SGD ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SgdState:
    """Momentum velocity (None without momentum)."""

    velocity: np.ndarray | None


# Plain SGD's state, shared by every param (frozen, so no param can change another's).
_NO_MOMENTUM = SgdState(None)


@dataclasses.dataclass(frozen=True)
class Sgd:
    """`g += penalty * theta`; momentum (see MomentumConfig); `theta -= lr * g`.

    PyTorch differences: `MomentumConfig()` defaults to dampening 0.1 (PyTorch 0); PyTorch's
    first momentum step also sets `v = g` (no dampening on the first step), like burn.
    """

    weight_decay: WeightDecayConfig | None
    momentum: MomentumConfig | None

    def step(self, lr, tensor, grad, state):
        momentum = self.momentum
        if momentum is None and self.weight_decay is None:
            return _sub_scaled(tensor, grad, lr), _NO_MOMENTUM  # plain SGD: the hot path
        dt = tensor.dtype.type
        grad = _decay(tensor, grad, self.weight_decay)
        velocity = None
        if momentum is not None:
            mu = dt(_f32(momentum.momentum))
            previous = None if state is None else state.velocity
            if previous is None:
                velocity = grad
            else:
                velocity = grad * dt(1.0 - momentum.dampening) + previous * mu
            grad = velocity * mu + grad if momentum.nesterov else velocity
        return _sub_scaled(tensor, grad, lr), SgdState(velocity)


@dataclasses.dataclass(frozen=True)
class SgdConfig(Config):
    """burn's `SgdConfig`: optional `weight_decay`, `momentum`, `gradient_clipping`."""

    weight_decay: WeightDecayConfig | None = None
    momentum: MomentumConfig | None = None
    gradient_clipping: GradientClippingConfig | None = None

    def init(self) -> ModuleOptimizer:
        return _init(Sgd, self, self.gradient_clipping)


# ---- Adam / AdamW -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AdaptiveMomentumState:
    """Adam's state: step count `time`, moments `moment_1`, `moment_2` (and the AMSGrad max)."""

    time: int
    moment_1: np.ndarray
    moment_2: np.ndarray
    max_moment_2: np.ndarray | None = None


def _adaptive_momentum(grad, state, beta_1, beta_2, epsilon, amsgrad):
    """burn's `AdaptiveMomentum::transform`: the Adam direction `m_hat / (sqrt(v_hat) + eps)`.

    eps is added after the square root (as PyTorch). All scalars are f32, as burn's fields.
    """
    dt = grad.dtype.type
    b1 = _f32(beta_1)
    b2 = _f32(beta_2)
    factor_1 = dt(np.float32(1.0) - b1)
    factor_2 = dt(np.float32(1.0) - b2)
    square = np.square(grad)
    if state is None:
        moment_1 = grad * factor_1
        moment_2 = square * factor_2
        state = AdaptiveMomentumState(1, moment_1, moment_2, moment_2 if amsgrad else None)
    else:
        moment_1 = state.moment_1 * dt(b1) + grad * factor_1
        moment_2 = state.moment_2 * dt(b2) + square * factor_2
        max_moment_2 = None
        if amsgrad:
            previous = state.max_moment_2 if state.max_moment_2 is not None else moment_2
            max_moment_2 = np.maximum(previous, moment_2)
        state = AdaptiveMomentumState(state.time + 1, moment_1, moment_2, max_moment_2)
    t = state.time
    m_hat = state.moment_1 / dt(np.float32(1.0) - powi(b1, t))
    v = state.max_moment_2 if amsgrad else state.moment_2
    v_hat = v / dt(np.float32(1.0) - powi(b2, t))
    return m_hat / (np.sqrt(v_hat) + dt(_f32(epsilon))), state


@dataclasses.dataclass(frozen=True)
class Adam:
    """Adam with coupled L2 weight decay (`g += penalty * theta`) and optional AMSGrad.

    PyTorch difference: default epsilon is **1e-5** (PyTorch 1e-8). The update
    `theta -= lr * m_hat / (sqrt(v_hat) + eps)` is the same formula, with a different rounding
    order (PyTorch divides by `sqrt(v)/sqrt(bc2) + eps` and scales by `lr / bc1`).
    """

    beta_1: float
    beta_2: float
    epsilon: float
    amsgrad: bool
    weight_decay: WeightDecayConfig | None

    def step(self, lr, tensor, grad, state):
        grad = _decay(tensor, grad, self.weight_decay)
        delta, state = _adaptive_momentum(
            grad, state, self.beta_1, self.beta_2, self.epsilon, self.amsgrad
        )
        return _sub_scaled(tensor, delta, lr), state


@dataclasses.dataclass(frozen=True)
class AdamConfig(Config):
    """burn's `AdamConfig`: beta_1 0.9, beta_2 0.999, **epsilon 1e-5**, amsgrad false,
    optional coupled `weight_decay` and `grad_clipping`."""

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    amsgrad: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def init(self) -> ModuleOptimizer:
        return _init(Adam, self, self.grad_clipping)


@dataclasses.dataclass(frozen=True)
class AdamW:
    """AdamW: decoupled decay on the pre-update weight, `theta = theta * (1 - lr * wd)`, then
    `theta -= lr * m_hat / (sqrt(v_hat) + eps)`.

    PyTorch differences: default **weight_decay 1e-4** (PyTorch 1e-2) and **epsilon 1e-5**
    (PyTorch 1e-8). `cautious_weight_decay` (burn only) skips the decay where the weight's sign
    differs from the first moment's.
    """

    beta_1: float
    beta_2: float
    epsilon: float
    weight_decay: float
    cautious_weight_decay: bool

    def step(self, lr, tensor, grad, state):
        dt = tensor.dtype.type
        delta, state = _adaptive_momentum(
            grad, state, self.beta_1, self.beta_2, self.epsilon, False
        )
        # burn computes the rate in f64 from the f32 field, then casts `1 - rate` to the dtype.
        decay_rate = lr * float(_f32(self.weight_decay))
        if decay_rate == 0.0:
            decayed = tensor
        elif self.cautious_weight_decay:
            differ = (tensor >= 0) != (state.moment_1 >= 0)
            decayed = tensor - np.where(differ, dt(0.0), tensor * dt(decay_rate))
        else:
            decayed = tensor * dt(1.0 - decay_rate)
        return _sub_scaled(decayed, delta, lr), state


@dataclasses.dataclass(frozen=True)
class AdamWConfig(Config):
    """burn's `AdamWConfig`: beta_1 0.9, beta_2 0.999, **epsilon 1e-5**, **weight_decay 1e-4**,
    cautious_weight_decay false, optional `grad_clipping`."""

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float = 1e-4
    cautious_weight_decay: bool = False
    grad_clipping: GradientClippingConfig | None = None

    def init(self) -> ModuleOptimizer:
        return _init(AdamW, self, self.grad_clipping)


# ---- RMSProp ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RmsPropState:
    """Running `square_avg`, the centered `grad_avg` (None unless centered), momentum `buf`."""

    square_avg: np.ndarray
    grad_avg: np.ndarray | None
    buf: np.ndarray | None


@dataclasses.dataclass(frozen=True)
class RmsProp:
    """RMSProp: `sa = alpha*sa + (1-alpha)*g^2`; centered: `avg = sa - ga^2` with
    `ga = alpha*ga + (1-alpha)*g`; `g = g / (sqrt(avg) + eps)`; momentum `buf = mu*buf + g`.

    PyTorch differences: burn's default **momentum is 0.9** and **epsilon 1e-5** (PyTorch 0 and
    1e-8); with momentum the first buffer is `g / (sqrt(avg) + eps)` in both.
    """

    alpha: float
    momentum: float
    epsilon: float
    centered: bool
    weight_decay: WeightDecayConfig | None

    def step(self, lr, tensor, grad, state):
        dt = tensor.dtype.type
        alpha = _f32(self.alpha)
        keep = dt(alpha)
        rest = dt(np.float32(1.0) - alpha)
        grad = _decay(tensor, grad, self.weight_decay)
        square = np.square(grad) * rest
        square_avg = square if state is None else state.square_avg * keep + square
        grad_avg = None
        avg = square_avg
        if self.centered:
            term = grad * rest
            previous = None if state is None else state.grad_avg
            grad_avg = term if previous is None else previous * keep + term
            avg = square_avg - np.square(grad_avg)
        grad = grad / (np.sqrt(avg) + dt(_f32(self.epsilon)))
        buf = None
        momentum = _f32(self.momentum)
        if momentum > 0.0:
            previous = None if state is None else state.buf
            buf = grad if previous is None else previous * dt(momentum) + grad
            grad = buf
        return _sub_scaled(tensor, grad, lr), RmsPropState(square_avg, grad_avg, buf)


@dataclasses.dataclass(frozen=True)
class RmsPropConfig(Config):
    """burn's `RmsPropConfig`: alpha 0.99, **momentum 0.9**, **epsilon 1e-5**, centered false,
    optional `weight_decay`, `grad_clipping`."""

    alpha: float = 0.99
    momentum: float = 0.9
    epsilon: float = 1e-5
    centered: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def init(self) -> ModuleOptimizer:
        return _init(RmsProp, self, self.grad_clipping)


# ---- AdaGrad ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AdaGradState:
    """Step count and the running sum of squared gradients."""

    time: int
    sum: np.ndarray


@dataclasses.dataclass(frozen=True)
class AdaGrad:
    """AdaGrad: `sum += g^2`; `clr = lr / (1 + (t-1) * lr_decay)`;
    `theta -= g / (sqrt(sum) + eps) * clr`.

    PyTorch differences: default **epsilon 1e-5** (PyTorch 1e-10); no
    `initial_accumulator_value` (PyTorch's default 0 matches).
    """

    lr_decay: float
    epsilon: float
    weight_decay: WeightDecayConfig | None

    def step(self, lr, tensor, grad, state):
        dt = tensor.dtype.type
        grad = _decay(tensor, grad, self.weight_decay)
        square = np.square(grad)
        if state is None:
            state = AdaGradState(1, square)
        else:
            state = AdaGradState(state.time + 1, state.sum + square)
        new_lr = lr / (1.0 + (float(state.time) - 1.0) * self.lr_decay)
        delta = grad / (np.sqrt(state.sum) + dt(_f32(self.epsilon))) * dt(new_lr)
        return tensor - delta, state


@dataclasses.dataclass(frozen=True)
class AdaGradConfig(Config):
    """burn's `AdaGradConfig`: lr_decay 0, **epsilon 1e-5**, optional `weight_decay`,
    `grad_clipping`."""

    lr_decay: float = 0.0
    epsilon: float = 1e-5
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def init(self) -> ModuleOptimizer:
        return _init(AdaGrad, self, self.grad_clipping)
