"""`ApplyResult` and `ApplyError`: what loading tensors into a module did.

Transliterates crates/burn-store/src/apply_result.rs (burn
2c06be351006851d42fdb6df16b976f4a82d9747): the field names, their meaning and order, and the
error texts are burn's. Shapes print as `[3, 8]`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..kernels._common import fmt

__all__ = ["ApplyError", "ApplyResult"]


class ApplyError:
    """Base of the four error kinds, reachable as `ApplyError.ShapeMismatch` etc. (burn's enum
    variants). Each has `path`, the module path of the tensor."""

    path: str


@dataclass(frozen=True)
class ShapeMismatch(ApplyError):
    """The stored tensor (after the adapter) has another shape than the module's param;
    `expected` is the module's, `found` the file's."""

    path: str
    expected: tuple[int, ...]
    found: tuple[int, ...]

    def __str__(self) -> str:
        return (
            f"Shape mismatch for '{self.path}': expected {fmt(self.expected)}, "
            f"found {fmt(self.found)}"
        )


@dataclass(frozen=True)
class DTypeMismatch(ApplyError):
    """The stored tensor is of another kind than the param (int data for a float param).

    burn declares this variant but its applier never produces it (it loads whatever dtype the
    file has); the engine raises it where the engine has no tensor the data could become.
    """

    path: str
    expected: str
    found: str

    def __str__(self) -> str:
        return f"DType mismatch for '{self.path}': expected {self.expected}, found {self.found}"


@dataclass(frozen=True)
class AdapterError(ApplyError):
    """An adapter failed on this tensor."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"Adapter error for '{self.path}': {self.message}"


@dataclass(frozen=True)
class LoadError(ApplyError):
    """The tensor's data could not be produced or held."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"Load error for '{self.path}': {self.message}"


ApplyError.ShapeMismatch = ShapeMismatch
ApplyError.DTypeMismatch = DTypeMismatch
ApplyError.AdapterError = AdapterError
ApplyError.LoadError = LoadError


@dataclass(frozen=True)
class ApplyResult:
    """What an apply did, per module path (burn's `ApplyResult`).

    - `applied`: paths loaded, in the module's walking order.
    - `skipped`: paths that had a stored tensor but were excluded by the filter (sorted).
    - `missing`: `(path, container_stack)` of params the module has and the source lacks,
      sorted by path; the container stack is dotted (`Struct:Net.Struct:Linear`).
    - `unused`: stored tensor keys that no param was looked up under (sorted).
    - `errors`: `ApplyError`s in walking order; a param with an error keeps its old value.

    burn's accounting, kept as burn has it: a param found under its adapter's alternative name
    (a norm's `gamma` under PyTorch's `weight`) marks only its own path as visited, so the
    stored key it was read from (`norm.weight`) is also listed in `unused`, although its
    values were applied (crates/burn-store/src/applier.rs, `into_result`; its test
    `normalization_renaming_with_adapter` asserts only that nothing is missing). PyTorch's
    `load_state_dict(strict=False)` reports no such key among its `unexpected_keys`.

    The five fields are lists, as burn's are `Vec`s, so `result.missing == []` holds for a
    complete load; whatever sequence the constructor gets is copied into a new list. The
    dataclass is frozen (no field can be rebound), but the lists themselves are the caller's
    to keep or change, as a returned `Vec` is in Rust.
    """

    applied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    errors: list[ApplyError] = field(default_factory=list)

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, list(getattr(self, f.name)))

    def is_success(self) -> bool:
        """True when there is no error (missing tensors are not errors)."""
        return not self.errors

    def missing_paths(self) -> list[str]:
        """The paths of `missing`, without their container stacks."""
        return [path for path, _ in self.missing]

    def __str__(self) -> str:
        lines = [
            "Tensor Loading Summary",
            f"  Successfully applied: {len(self.applied)} tensors",
            f"  Skipped (filtered):   {len(self.skipped)} tensors",
            f"  Missing in source:    {len(self.missing)} tensors",
            f"  Unused in target:     {len(self.unused)} tensors",
            f"  Errors:               {len(self.errors)} errors",
        ]
        for title, items in (
            ("Missing tensors (requested by the module, not in the source)", self.missing_paths()),
            ("Unused tensors (in the source, not used by the module)", self.unused),
            ("Errors", [str(e) for e in self.errors]),
        ):
            if items:
                lines.append(f"  {title}:")
                lines += [f"    {item}" for item in items[:10]]
                if len(items) > 10:
                    lines.append(f"    ... and {len(items) - 10} more")
        return "\n".join(lines)
