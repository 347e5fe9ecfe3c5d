"""LoRA, burn's `Lora` reparameterizer and `LoraAdapter` (`crates/burn-core/src/module/lora.rs`,
`module/param/lora.rs`, `Module::apply_lora` in `module/base.rs`, read at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747).

    model = apply_lora(LinearConfig(8, 8).init(device), Lora(rank=4, alpha=8.0))
    model.weight.adapter().b.val(); model.weight.base(); model.weight.val()

As burn's: every float param is frozen (`set_require_grad(False)`: no gradient, so
`GradientsParams` has no entry and the optimizer leaves it as it is); each 2-D param also gets
an adapter whose factors are ordinary trainable params with their own ParamIds, `a` of shape
`[d_in, rank]` drawn from N(0, init_std) (default `1 / rank`), `b` zeros `[rank, d_out]`, both
in the base's dtype, `scale = alpha / rank`; the effective weight is `base + (a @ b) * scale`,
recomputed at every read, so layer code (`Linear.forward`) is unchanged. `merge_lora` folds the
adapters into plain params (burn folds them in `valid()`).

Engine differences: the adapted weight is a `LoraWeight`, a small module (fields `base_param`,
`lora`) standing where the Param was, with burn's Param-side API (`val()`, `base()`,
`adapter()`, `id`) and burn's param paths (`weight` for the base, `weight.lora.a`,
`weight.lora.b`); `Module.valid()` does not fold the adapters (call `merge_lora`); no QLoRA, no
factor dtype other than the base's. `set_param_group(group)` restricts the adapters to the 2-D
params the group matches by id and path (`fc1.weight`, `blocks.0.bias`); as burn's, every float
param is frozen whatever the group.
The values of `a` come from the engine's generator, not burn's, so they differ from a burn run.

PyTorch has no built-in LoRA; the PEFT convention (`W x + B A x * alpha / r`, `A` Kaiming
uniform, `B` zeros) stores the factors transposed relative to these and draws `A` otherwise.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.engine.module.core import Module, Param, value_rng
from harness.engine.module.param_group import ParamGroup
from harness.engine.tensor import Tensor

__all__ = ["Lora", "LoraAdapter", "LoraWeight", "apply_lora", "merge_lora"]


@dataclasses.dataclass(frozen=True)
class Lora:
    """burn's `Lora::new(rank, alpha)`; `init_std` defaults to `1 / rank`."""

    rank: int
    alpha: float
    init_std: float | None = None
    param_group: ParamGroup = dataclasses.field(default_factory=ParamGroup.all)

    def set_param_group(self, group: ParamGroup) -> Lora:
        """burn's `set_param_group`: adapters only for the 2-D params `group` matches."""
        if not isinstance(group, ParamGroup):
            raise TypeError(f"set_param_group: expected a ParamGroup, got {type(group).__name__}")
        return dataclasses.replace(self, param_group=group)

    def apply(self, module: Module) -> Module:
        """`apply_lora(module, self)` (what `module.apply_lora(lora)` calls)."""
        return apply_lora(module, self)

    def adapter_for(self, base: Tensor) -> LoraAdapter:
        """A fresh adapter for a 2-D base (burn's `reparameterize`)."""
        d_in, d_out = base.shape
        std = self.init_std if self.init_std is not None else 1.0 / self.rank
        dtype = base._data.dtype
        a = value_rng().normal(0.0, std, (d_in, self.rank)).astype(dtype)
        b = np.zeros((self.rank, d_out), dtype=dtype)
        return LoraAdapter(
            Param.from_tensor(Tensor.from_numpy(a, base.device)),
            Param.from_tensor(Tensor.from_numpy(b, base.device)),
            self.alpha / self.rank,
        )


class LoraAdapter(Module):
    """`a` `[d_in, rank]`, `b` `[rank, d_out]` (trainable) and `scale` (alpha / rank)."""

    def __init__(self, a: Param, b: Param, scale: float) -> None:
        self.a = a
        self.b = b
        self.scale = scale

    def delta(self) -> Tensor:
        """`(a @ b) * scale` (burn's `a.val().matmul(b.val()).mul_scalar(scale)`)."""
        return self.a.val().matmul(self.b.val()).mul_scalar(self.scale)


class LoraWeight(Module):
    """A frozen base param with its adapter, read as `base + delta` wherever the param was."""

    def __init__(self, base_param: Param, lora: LoraAdapter) -> None:
        self.base_param = base_param
        self.lora = lora

    @property
    def id(self):
        """The base's ParamId (burn: the adapted param keeps its id)."""
        return self.base_param.id

    @property
    def _value(self) -> Tensor:
        # What layers read (`self.weight._value`): the composed weight, rebuilt at each read.
        return self.val()

    @property
    def shape(self):
        return self.base_param.val().shape

    def val(self) -> Tensor:
        """`base + delta` (burn's `LoraAdapter::materialize`, same dtype by construction)."""
        return self.base_param.val().add(self.lora.delta())

    def base(self) -> Tensor:
        """The frozen base tensor."""
        return self.base_param.val()

    def adapter(self) -> LoraAdapter:
        return self.lora

    def named_params(self, prefix: str = ""):
        # burn's paths: the base under the param's own path, the factors under `.lora`.
        yield prefix.removesuffix("."), self.base_param
        yield from self.lora.named_params(prefix + "lora.")

    def merged(self) -> Param:
        """A param with the base's id holding `base + delta`, folded: an untracked leaf on the
        base's device."""
        return Param(self.id, Tensor.from_numpy(self.val()._data, self.base_param.val().device))


def _frozen(param: Param) -> Param:
    # Of the param's own class: a BatchNorm's running statistics stay RunningState params,
    # which its forward requires (as the weight importer keeps them).
    return type(param).initialized(param.id, param.val().set_require_grad(False))


def apply_lora(module: Module, lora: Lora) -> Module:
    """burn's `module.apply_lora(lora)`: a new module, every float param frozen, every 2-D
    param adapted. `module` is left as it is (the params share their values)."""
    return _rebuild(module, lambda p, path: _adapt(p, path, lora))


def merge_lora(module: Module) -> Module:
    """A new module with every `LoraWeight` folded into a plain param (burn's `valid()`
    fold, on any device)."""
    return _rebuild(module, None, fold=True)


def _adapt(param: Param, path: str, lora: Lora):
    if param.val()._data.dtype.kind != "f":
        return param
    base = _frozen(param)
    if len(param.val().shape) != 2 or not lora.param_group.matches(param.id, path):
        return base
    return LoraWeight(base, lora.adapter_for(param.val()))


def _rebuild(value, adapt, fold: bool = False, path: str = ""):
    """`value` rebuilt with each Param passed through `adapt(param, path)`; `path` is the
    param's module path, spelled as `Module.named_params()` spells it."""
    if isinstance(value, LoraWeight):
        if fold:
            return value.merged()
        raise ValueError("apply_lora: nested reparameterizations are not supported (as burn)")
    if isinstance(value, Param):
        return adapt(value, path) if adapt is not None else value
    if isinstance(value, Module):
        new = object.__new__(type(value))
        for name, field in vars(value).items():
            new.__dict__[name] = _rebuild(field, adapt, fold, _join(path, name))
        return new
    if isinstance(value, (list, tuple)):
        items = enumerate(value)
        return type(value)(_rebuild(v, adapt, fold, _join(path, str(i))) for i, v in items)
    return value


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
