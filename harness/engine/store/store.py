"""`PytorchStore` and `SafetensorsStore`: read a file, rename its keys, load it into a module.

Transliterates crates/burn-store/src/pytorch/store.rs and safetensors/store.rs (burn
2c06be351006851d42fdb6df16b976f4a82d9747; tests in pytorch/tests/store/mod.rs). A store is
built with burn's builder methods, each returning a new (immutable) store:

    store = (PytorchStore.from_file("model.pt")
             .with_top_level_key("state_dict")
             .with_key_remapping(r"^encoder\\.", "")
             .allow_partial(True))
    model, result = store.apply_to(model)

Loading reads the file, applies the key remapping (rules in order), then (if enabled) makes
numeric indices contiguous, then matches the module's params (filter and adapter applied per
param). Defaults are burn's: `validate(True)` (any apply error raises), `allow_partial(False)`
(any missing tensor raises); `PytorchStore` always uses `PyTorchToBurnAdapter` and maps
indices contiguously (PyTorch's `nn.Sequential` leaves gaps), `SafetensorsStore` uses the
adapter given to `with_from_adapter` (default: none) and keeps indices as stored.

Differences from burn: `apply_to` returns `(new module, ApplyResult)` instead of filling the
module in place; reader errors are raised as `PytorchError` (burn wraps them in
`PytorchStoreError::Reader`); two stored keys that remapping sends to one name raise (burn
keeps one of them); error messages are one line (burn prints its summary table), with the
`ApplyResult` on the exception's `result`. Saving is not supported (burn's PytorchStore cannot
save either); enum modules do not exist in the engine, so there is no `skip_enum_variants`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from harness.engine.module import Module

from .adapter import IdentityAdapter, ModuleAdapter, PyTorchToBurnAdapter
from .applier import apply
from .apply_result import ApplyResult
from .errors import PytorchStoreError, SafetensorsStoreError
from .filter import PathFilter, Predicate
from .keyremapper import KeyRemapper, map_indices_contiguous
from .reader import PytorchReader
from .safetensors_reader import read_safetensors, read_safetensors_file
from .snapshot import TensorSnapshot

__all__ = ["PytorchStore", "SafetensorsStore", "load_from"]

_SHOWN = 5  # keys named in an error message before "... and N more"
_NO_FILTER = PathFilter()
_NO_REMAPPING = KeyRemapper()
_IDENTITY = IdentityAdapter()


def _names(items: list[str], sep: str = ", ") -> str:
    more = len(items) - _SHOWN
    return sep.join(items[:_SHOWN]) + (f" ... and {more} more" if more > 0 else "")


@dataclass(frozen=True, kw_only=True)
class _Store:
    """The builder state and the load path both stores share."""

    filter_: PathFilter = _NO_FILTER
    remapper: KeyRemapper = _NO_REMAPPING
    validate_: bool = True
    allow_partial_: bool = False
    map_indices_contiguous_: bool = False

    _error = PytorchStoreError

    # -- builders (burn's names) --

    def filter(self, path_filter: PathFilter) -> _Store:
        """Apply only the tensors `path_filter` matches (an empty filter: all)."""
        return replace(self, filter_=path_filter)

    def with_regex(self, pattern: str) -> _Store:
        """Also apply the tensors whose module path `pattern` is found in."""
        return replace(self, filter_=self.filter_.with_regex(pattern))

    def with_regexes(self, patterns: Iterable[str]) -> _Store:
        return replace(self, filter_=self.filter_.with_regexes(patterns))

    def with_full_path(self, path: str) -> _Store:
        """Also apply the tensor at this exact module path."""
        return replace(self, filter_=self.filter_.with_full_path(path))

    def with_full_paths(self, paths: Iterable[str]) -> _Store:
        return replace(self, filter_=self.filter_.with_full_paths(paths))

    def with_predicate(self, predicate: Predicate) -> _Store:
        """Also apply the tensors for which `predicate(path, container_path)` is true."""
        return replace(self, filter_=self.filter_.with_predicate(predicate))

    def with_predicates(self, predicates: Iterable[Predicate]) -> _Store:
        return replace(self, filter_=self.filter_.with_predicates(predicates))

    def match_all(self) -> _Store:
        """Apply every tensor (no filtering)."""
        return replace(self, filter_=PathFilter.all())

    def remap(self, remapper: KeyRemapper) -> _Store:
        """Rename stored keys with `remapper` (replaces earlier rules)."""
        return replace(self, remapper=remapper)

    def with_key_remapping(self, from_pattern: str, to_pattern: str) -> _Store:
        """Add one renaming rule (regex, Rust-style replacement such as `$1`)."""
        return replace(self, remapper=self.remapper.add_pattern(from_pattern, to_pattern))

    def validate(self, flag: bool) -> _Store:
        """Raise when the apply has errors (default True)."""
        return replace(self, validate_=flag)

    def allow_partial(self, flag: bool) -> _Store:
        """Accept missing tensors and report them (default False: raise)."""
        return replace(self, allow_partial_=flag)

    def map_indices_contiguous(self, flag: bool) -> _Store:
        """Renumber numeric key segments to 0, 1, 2, ... before matching."""
        return replace(self, map_indices_contiguous_=flag)

    # -- reading --

    @property
    def label(self) -> str:
        """How errors name the source."""
        raise NotImplementedError

    def _read(self) -> dict[str, TensorSnapshot]:
        raise NotImplementedError

    def _adapter(self) -> ModuleAdapter:
        raise NotImplementedError

    def get_all_snapshots(self) -> dict[str, TensorSnapshot]:
        """Every stored tensor after remapping and index mapping, sorted by key (the filter
        is not applied: it decides per module param)."""
        snapshots = list(self._read().values())
        if not self.remapper.is_empty():
            snapshots, _ = self.remapper.remap(snapshots)
        if self.map_indices_contiguous_:
            snapshots, _ = map_indices_contiguous(snapshots)
        by_key: dict[str, TensorSnapshot] = {}
        for snapshot in snapshots:
            key = snapshot.full_path()
            if key in by_key:
                raise self._error(f"{self.label}: two stored tensors are renamed to '{key}'")
            by_key[key] = snapshot
        return dict(sorted(by_key.items(), key=lambda item: item[0]))

    def get_snapshot(self, name: str) -> TensorSnapshot | None:
        """One stored tensor by (remapped) key, or None."""
        return self.get_all_snapshots().get(name)

    def keys(self) -> list[str]:
        """The stored keys after remapping, sorted."""
        return list(self.get_all_snapshots())

    def apply_to(self, module: Module) -> tuple[Module, ApplyResult]:
        """Load the file into a copy of `module`: `(new module, result)`; `module` is left as
        it is. Raises when validating finds errors, or when tensors are missing and partial
        loads are not allowed."""
        path_filter = None if self.filter_.is_empty() else self.filter_
        new, result = apply(module, self.get_all_snapshots().values(), path_filter, self._adapter())
        if self.validate_ and result.errors:
            errors = _names([str(e) for e in result.errors], sep="; ")
            raise self._error(f"{self.label}: import errors: {errors}", result)
        if not self.allow_partial_ and result.missing:
            raise self._error(
                f"{self.label}: tensors the module needs are missing from the file: "
                f"{_names(result.missing_paths())} (use .allow_partial(True) to load the rest "
                "and get them in the ApplyResult)",
                result,
            )
        return new, result


@dataclass(frozen=True, kw_only=True)
class PytorchStore(_Store):
    """A `torch.save` checkpoint (zip or legacy format), loaded with `PyTorchToBurnAdapter`."""

    path: Path
    top_level_key: str | None = None
    map_indices_contiguous_: bool = True

    @classmethod
    def from_file(cls, path: str | Path) -> PytorchStore:
        """A store reading `path` (nothing is read until the store is used)."""
        return cls(path=Path(path))

    def with_top_level_key(self, key: str) -> PytorchStore:
        """Read the tensors of the dict stored under `key` (`"state_dict"`, `"model"`)."""
        return replace(self, top_level_key=key)

    @property
    def label(self) -> str:
        return str(self.path)

    def _read(self) -> dict[str, TensorSnapshot]:
        return PytorchReader(self.path, self.top_level_key).tensors()

    def _adapter(self) -> ModuleAdapter:
        return PyTorchToBurnAdapter()


@dataclass(frozen=True, kw_only=True)
class SafetensorsStore(_Store):
    """A `.safetensors` file (or buffer); `with_from_adapter(PyTorchToBurnAdapter())` for a
    file written from a PyTorch model."""

    path: Path | None = None
    data: bytes | None = None
    from_adapter: ModuleAdapter = _IDENTITY

    _error = SafetensorsStoreError

    @classmethod
    def from_file(cls, path: str | Path) -> SafetensorsStore:
        """A store reading `path` (nothing is read until the store is used)."""
        return cls(path=Path(path))

    @classmethod
    def from_bytes(cls, data: bytes) -> SafetensorsStore:
        """A store reading a safetensors buffer."""
        return cls(data=bytes(data))

    def with_from_adapter(self, adapter: ModuleAdapter) -> SafetensorsStore:
        """The adapter applied while loading."""
        return replace(self, from_adapter=adapter)

    @property
    def label(self) -> str:
        return "<safetensors bytes>" if self.path is None else str(self.path)

    def _read(self) -> dict[str, TensorSnapshot]:
        if self.path is None:
            return read_safetensors(self.data or b"", self.label)
        return read_safetensors_file(self.path)

    def _adapter(self) -> ModuleAdapter:
        return self.from_adapter


def load_from(module: Module, store: _Store) -> tuple[Module, ApplyResult]:
    """burn's `module.load_from(&mut store)`: `store.apply_to(module)`."""
    return store.apply_to(module)
