"""Module adapters: transform stored tensors on their way into a module.

Transliterates the load-side adapters of crates/burn-store/src/adapter.rs (burn
2c06be351006851d42fdb6df16b976f4a82d9747; tests `test_pytorch_to_burn_*`,
`test_chain_adapter_*`, `test_float_cast_*`). An adapter sees each snapshot with the path and
container stack of the param it is being loaded into, so it decides by the module type
(`snapshot.module_type()`), as burn's do.

Not here: `BurnToPyTorchAdapter` and `HalfPrecisionAdapter` (the engine saves no files and has
no half-precision tensors).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .registry import PYTORCH_TO_BURN_RULES, PyTorchRule
from .snapshot import FLOAT_DTYPES, TensorSnapshot

__all__ = [
    "ChainAdapter",
    "FloatCastAdapter",
    "IdentityAdapter",
    "ModuleAdapter",
    "PyTorchToBurnAdapter",
]


class ModuleAdapter:
    """Base of adapters (burn's `ModuleAdapter` trait); every method defaults to "no change".

    `prepare` is an engine extension (see `registry`): it may rewrite the whole snapshot
    mapping once, knowing the module instances of the target as `(path, container type)`.
    """

    def adapt(self, snapshot: TensorSnapshot) -> TensorSnapshot:
        """The snapshot to load, given one seen from its target param."""
        return snapshot

    def get_alternative_param_name(self, param_name: str, container_type: str) -> str | None:
        """Another stored name to try when `param_name` is absent (burn: `gamma` -> `weight`
        inside a norm)."""
        return None

    def prepare(
        self, snapshots: dict[str, TensorSnapshot], modules: Sequence[tuple[str, str]]
    ) -> dict[str, TensorSnapshot]:
        """The snapshot mapping to match params against (default: unchanged)."""
        return snapshots

    def chain(self, next_adapter: ModuleAdapter) -> ChainAdapter:
        """This adapter, then `next_adapter`."""
        return ChainAdapter(self, next_adapter)


class IdentityAdapter(ModuleAdapter):
    """Passes every tensor through unchanged."""


@dataclass(frozen=True)
class ChainAdapter(ModuleAdapter):
    """`first`, then `second`. An alternative name from `first` is offered to `second`,
    which may map it further; otherwise `second` is asked with the original name."""

    first: ModuleAdapter
    second: ModuleAdapter

    def adapt(self, snapshot: TensorSnapshot) -> TensorSnapshot:
        return self.second.adapt(self.first.adapt(snapshot))

    def get_alternative_param_name(self, param_name: str, container_type: str) -> str | None:
        name = self.first.get_alternative_param_name(param_name, container_type)
        if name is None:
            return self.second.get_alternative_param_name(param_name, container_type)
        return self.second.get_alternative_param_name(name, container_type) or name

    def prepare(self, snapshots, modules):
        return self.second.prepare(self.first.prepare(snapshots, modules), modules)


class PyTorchToBurnAdapter(ModuleAdapter):
    """PyTorch's layouts and names to burn's, by module type (rules in `registry`).

    `PyTorchToBurnAdapter()` reads the shared table `PYTORCH_TO_BURN_RULES` at each call (so
    rules registered later apply); `PyTorchToBurnAdapter(rules)` uses its own table.
    """

    def __init__(self, rules: Mapping[str, PyTorchRule] | None = None) -> None:
        self._rules = rules

    @property
    def rules(self) -> Mapping[str, PyTorchRule]:
        """The table in use."""
        return PYTORCH_TO_BURN_RULES if self._rules is None else self._rules

    def adapt(self, snapshot: TensorSnapshot) -> TensorSnapshot:
        module_type = snapshot.module_type()
        if module_type is None or not snapshot.path_stack:
            return snapshot  # no container information: burn leaves the tensor alone
        rule = self.rules.get(module_type)
        if rule is None:
            return snapshot
        name = snapshot.path_stack[-1]
        transform = rule.transforms.get(name)
        if transform is not None:
            return transform(snapshot)
        burn_name = rule.burn_name(name)
        if burn_name is not None:
            return snapshot.with_path((*snapshot.path_stack[:-1], burn_name))
        return snapshot

    def get_alternative_param_name(self, param_name: str, container_type: str) -> str | None:
        rule = self.rules.get(container_type)
        return None if rule is None else rule.pytorch_name(param_name)

    def prepare(self, snapshots, modules):
        for path, container_type in modules:
            rule = self.rules.get(container_type)
            if rule is not None and rule.unpack is not None:
                snapshots = dict(rule.unpack(path, dict(snapshots)))
        return snapshots


def _as_float(array: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":  # the bits are the top half of a float32: widening is exact
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array


@dataclass(frozen=True)
class FloatCastAdapter(ModuleAdapter):
    """Casts every float tensor (float16, bfloat16, float32, float64) to `target`; integer
    and bool tensors pass through. Build it with `FloatCastAdapter.to("float32")`; chained
    after `PyTorchToBurnAdapter` it loads half-precision checkpoints into engine modules."""

    target: str

    @classmethod
    def to(cls, target: str) -> FloatCastAdapter:
        """An adapter casting floats to `target` ("float16", "float32" or "float64")."""
        if target not in ("float16", "float32", "float64"):
            raise ValueError(f"FloatCastAdapter target must be a float dtype, got {target!r}")
        return cls(target)

    def adapt(self, snapshot: TensorSnapshot) -> TensorSnapshot:
        source = snapshot.dtype
        if source not in FLOAT_DTYPES or source == self.target:
            return snapshot
        return snapshot.map_data(
            lambda a: _as_float(a, source).astype(self.target), dtype=self.target
        )
