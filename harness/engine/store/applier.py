"""`apply`: stored tensors into a module, returning a new module and an `ApplyResult`.

Transliterates crates/burn-store/src/applier.rs (burn 2c06be351006851d42fdb6df16b976f4a82d9747;
tests `normalization_renaming_with_adapter`, `applier_keeps_target_param_id_when_snapshot_has_
none`, `dtype_preservation_f64`). For each param, in the module's walking order:

1. its path is marked visited; the snapshot stored under the path is looked up, else (with an
   adapter and a module type) the one under the adapter's alternative name;
2. none found: the param keeps its value (and is `missing` unless filtered);
3. the adapter transforms the snapshot, seen from the param (path, container stack);
4. a filter that rejects the path: `skipped`; data that cannot be read: `LoadError`; another
   shape than the param's: `ShapeMismatch`. The param keeps its value in each case;
5. otherwise the param gets the data: same ParamId (PyTorch and safetensors files carry no
   id), same device, same require-grad flag (burn's `Param::transform_for_load`), and the
   file's float dtype (burn builds the tensor with the snapshot's dtype, so a float64 file
   gives float64 params in a float32 module).

The engine can hold float32, float64, int64 and bool. Stored integers become int64; float16 and
bfloat16 data is a `LoadError` (chain `FloatCastAdapter.to("float32")` to load it); float data
for an int or bool param (or the reverse) is a `DTypeMismatch`.

The module is walked through its public API: `params()` for paths, `map()` to build the new
module (the two walk in the same order, checked param by param), and attribute / index access
along each path for the container stack (`Struct:<class>` per module, `Vec` per list, `Tuple`
per tuple, as burn's derive names them). A module field that is neither a Param nor visible to
`params()` is not loaded.

PyTorch difference: `load_state_dict` copies into the existing parameters in place (casting to
their dtype) and reports `missing_keys` / `unexpected_keys` by PyTorch name; here the module
given is left untouched, a new one is returned, and paths are burn's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from harness.engine.module import Module, Param
from harness.engine.tensor import Tensor

from .adapter import ModuleAdapter
from .apply_result import (
    AdapterError,
    ApplyError,
    ApplyResult,
    DTypeMismatch,
    LoadError,
    ShapeMismatch,
)
from .errors import StoreError
from .filter import PathFilter
from .snapshot import TensorSnapshot
from .snapshot import module_type as snapshot_module_type

__all__ = ["Applier", "apply"]


class _Target(NamedTuple):
    path_stack: tuple[str, ...]
    container_stack: tuple[str, ...]
    param: Param


def apply(
    module: Module,
    snapshots: Iterable[TensorSnapshot],
    filter: PathFilter | None = None,
    adapter: ModuleAdapter | None = None,
) -> tuple[Module, ApplyResult]:
    """Load `snapshots` (keyed by their full paths) into a copy of `module` (burn's
    `ModuleSnapshot::apply`); `filter` None applies every tensor."""
    return Applier(snapshots, filter, adapter).apply(module)


class Applier:
    """One application: snapshots, filter and adapter, and the bookkeeping burn keeps."""

    def __init__(
        self,
        snapshots: Iterable[TensorSnapshot],
        filter: PathFilter | None = None,
        adapter: ModuleAdapter | None = None,
    ) -> None:
        self.snapshots = {snapshot.full_path(): snapshot for snapshot in snapshots}
        self.filter = filter
        self.adapter = adapter
        self.applied: list[str] = []
        self.skipped: set[str] = set()
        self.errors: list[ApplyError] = []
        self.visited: dict[str, str] = {}

    def apply(self, module: Module) -> tuple[Module, ApplyResult]:
        """The new module and the result."""
        targets = _targets(module)
        if self.adapter is not None:
            self.snapshots = self.adapter.prepare(dict(self.snapshots), _modules(targets))
        loaded = [self._load(target) for target in targets]
        pending = iter(zip(targets, loaded, strict=True))

        def replace(param: Param) -> Param:
            target, new = next(pending, (None, None))
            if target is None or param is not target.param:
                raise RuntimeError(
                    "module.map() and module.params() walk the params in different orders"
                )
            return new

        new_module = module.map(replace)
        return new_module, self.result()

    def result(self) -> ApplyResult:
        """burn's `into_result`: unused, missing and skipped sorted; applied and errors in
        walking order."""
        unused = sorted(
            p for p in self.snapshots if p not in self.visited and p not in self.skipped
        )
        settled = set(self.applied) | self.skipped | {e.path for e in self.errors}
        missing = sorted((p, c) for p, c in self.visited.items() if p not in settled)
        return ApplyResult(
            applied=self.applied,
            skipped=sorted(self.skipped),
            missing=missing,
            unused=unused,
            errors=self.errors,
        )

    def _load(self, target: _Target) -> Param:
        path_stack, container_stack, param = target
        path = ".".join(path_stack)
        self.visited[path] = ".".join(container_stack)
        snapshot = self._find(path_stack, container_stack)
        if snapshot is None:
            return param
        if self.adapter is not None:
            try:
                snapshot = self.adapter.adapt(snapshot.with_context(path_stack, container_stack))
            except (StoreError, ValueError, TypeError) as exc:
                self.errors.append(AdapterError(path, str(exc)))
                return param
        if self.filter is not None and not self.filter.matches_with_container_path(
            path_stack, container_stack
        ):
            self.skipped.add(path)
            return param
        try:
            data = snapshot.to_data()
        except (StoreError, ValueError, TypeError) as exc:
            self.errors.append(LoadError(path, f"Failed to load tensor data: {exc}"))
            return param
        target_value = param.val()
        if tuple(data.shape) != tuple(target_value.shape):
            self.errors.append(ShapeMismatch(path, tuple(target_value.shape), tuple(data.shape)))
            return param
        tensor = self._tensor(path, data, snapshot.dtype, target_value)
        if tensor is None:
            return param
        self.applied.append(path)
        return type(param).initialized(param.id, tensor)

    def _find(self, path_stack, container_stack) -> TensorSnapshot | None:
        snapshot = self.snapshots.get(".".join(path_stack))
        module_type = snapshot_module_type(container_stack)
        if snapshot is None and self.adapter is not None and module_type is not None:
            alternative = self.adapter.get_alternative_param_name(path_stack[-1], module_type)
            if alternative is not None:
                # Only the param's own path counts as visited (burn), not the name read.
                snapshot = self.snapshots.get(".".join((*path_stack[:-1], alternative)))
        return snapshot

    def _tensor(self, path: str, data: np.ndarray, dtype: str, target: Tensor) -> Tensor | None:
        want = _kind(target.dtype.name)
        if _kind(dtype) != want:
            self.errors.append(DTypeMismatch(path, target.dtype.name, dtype))
            return None
        if dtype in ("float16", "bfloat16"):
            self.errors.append(
                LoadError(
                    path,
                    f"{dtype} has no engine tensor (float32, float64); chain "
                    f"FloatCastAdapter.to('float32') after the adapter to convert it",
                )
            )
            return None
        if dtype == "uint64" and data.size and int(data.max()) > np.iinfo(np.int64).max:
            self.errors.append(LoadError(path, "uint64 values above the int64 range"))
            return None
        tensor = Tensor.from_numpy(data, target.device)
        return tensor.set_require_grad(target.is_require_grad())


def _kind(dtype: str) -> str:
    if dtype == "bool":
        return "bool"
    return "float" if dtype.startswith(("float", "bfloat")) else "int"


def _targets(module: Module) -> list[_Target]:
    out = []
    for path, param in module.params():
        segments = tuple(path.split("."))
        out.append(_Target(segments, _containers(module, segments), param))
    return out


def _containers(module: Module, segments: tuple[str, ...]) -> tuple[str, ...]:
    """The container type entered at each segment of a param's path."""
    stack, obj = [], module
    for segment in segments:
        if isinstance(obj, Module):
            stack.append(f"Struct:{type(obj).__name__}")
            obj = getattr(obj, segment)
        elif isinstance(obj, list | tuple):
            stack.append("Vec" if isinstance(obj, list) else "Tuple")
            obj = obj[int(segment)]
        else:
            raise TypeError(f"cannot walk into {type(obj).__name__} at '{segment}'")
    return tuple(stack)


def _modules(targets: list[_Target]) -> list[tuple[str, str]]:
    """Each module instance on the way to a param, `(path, Struct:<class>)`, in walking
    order, once: the module at `path_stack[:i]` is the container entered at segment i."""
    seen: dict[str, str] = {}
    for target in targets:
        for i, container in enumerate(target.container_stack):
            if container.startswith("Struct:"):
                seen.setdefault(".".join(target.path_stack[:i]), container)
    return list(seen.items())
