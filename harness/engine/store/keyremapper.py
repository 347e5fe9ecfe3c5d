"""`KeyRemapper` (rename stored tensors by regex) and `map_indices_contiguous`.

Transliterates crates/burn-store/src/keyremapper.rs (burn
2c06be351006851d42fdb6df16b976f4a82d9747), tests `test_key_remapper_*` and
`test_map_indices_contiguous_*`.

Patterns are Python `re` patterns, applied in order to each full path, each replacing all
matches (Rust's `Regex::replace_all`). Replacements use burn's (Rust regex) syntax: `$1`,
`${1}`, `$name`, `${name}`, `$$` for a dollar; a group that does not exist or did not take
part in the match becomes the empty string, as in Rust (`$1a` names the group "1a"). Rust's and
Python's pattern dialects agree on what key patterns use (anchors, classes, groups, `\\.`);
Python additionally has lookaround and backreferences.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .snapshot import TensorSnapshot

__all__ = ["KeyRemapper", "map_indices_contiguous"]

# `$$`, `${anything}` or `$name` (the longest run of word characters, as Rust reads it).
_REFERENCE = re.compile(r"\$(?:(\$)|\{([^}]+)\}|(\w+))", re.ASCII)
# Rust's `str::parse::<usize>()`: ASCII digits with an optional plus sign.
_INDEX = re.compile(r"\+?[0-9]+", re.ASCII)
_USIZE_LIMIT = 2**64


def expand(template: str, match: re.Match) -> str:
    """`template` with Rust-style group references filled from `match`."""

    def group(reference: re.Match) -> str:
        if reference.group(1):
            return "$"
        name = reference.group(2) or reference.group(3)
        key: int | str = int(name) if name.isascii() and name.isdigit() else name
        try:
            return match.group(key) or ""
        except (IndexError, re.error):
            return ""

    return _REFERENCE.sub(group, template)


@dataclass(frozen=True)
class KeyRemapper:
    """Ordered (pattern, replacement) rules applied to every stored tensor's path."""

    patterns: tuple[tuple[re.Pattern, str], ...] = ()

    def add_pattern(self, from_pattern: str, to_pattern: str) -> KeyRemapper:
        """A remapper with one more rule; an invalid regex raises ValueError (burn returns
        `Err(regex::Error)`)."""
        try:
            compiled = re.compile(from_pattern)
        except re.error as exc:
            raise ValueError(f"invalid key remapping regex {from_pattern!r}: {exc}") from None
        return KeyRemapper((*self.patterns, (compiled, to_pattern)))

    @classmethod
    def from_patterns(cls, patterns: Iterable[tuple[str, str]]) -> KeyRemapper:
        """A remapper from (pattern, replacement) pairs."""
        remapper = cls()
        for from_pattern, to_pattern in patterns:
            remapper = remapper.add_pattern(from_pattern, to_pattern)
        return remapper

    def is_empty(self) -> bool:
        """True when there is no rule."""
        return not self.patterns

    def remap_path(self, path: str) -> str:
        """One path through every rule, in order."""
        for pattern, replacement in self.patterns:
            path = pattern.sub(lambda m, r=replacement: expand(r, m), path)
        return path

    def remap(
        self, snapshots: Sequence[TensorSnapshot]
    ) -> tuple[list[TensorSnapshot], list[tuple[str, str]]]:
        """The renamed snapshots and the (new path, original path) of each."""
        out, names = [], []
        for snapshot in snapshots:
            original = snapshot.full_path()
            new = self.remap_path(original)
            out.append(snapshot if new == original else snapshot.with_path(new))
            names.append((new, original))
        return out, names


def _index(part: str) -> int | None:
    if _INDEX.fullmatch(part) is None:
        return None
    value = int(part)
    return value if value < _USIZE_LIMIT else None


def map_indices_contiguous(
    snapshots: Sequence[TensorSnapshot],
) -> tuple[list[TensorSnapshot], list[tuple[str, str]]]:
    """Renumber the numeric path segments at each position to 0, 1, 2, ... in order.

    PyTorch's `nn.Sequential(Linear, ReLU, Linear)` names its params `0.*` and `2.*`; a burn
    `Vec` of two Linears expects `0.*` and `1.*`. Indices are grouped by the path before them
    (with the original indices), so nested sequences are renumbered independently.
    """
    seen: dict[str, set[int]] = {}
    for snapshot in snapshots:
        parts = snapshot.full_path().split(".")
        for i, part in enumerate(parts):
            index = _index(part)
            if index is not None:
                seen.setdefault(_prefix(parts, i), set()).add(index)
    maps = {prefix: {old: new for new, old in enumerate(sorted(v))} for prefix, v in seen.items()}
    out, names = [], []
    for snapshot in snapshots:
        original = snapshot.full_path()
        parts = original.split(".")
        mapped = []
        for i, part in enumerate(parts):
            index = _index(part)
            new = None if index is None else maps[_prefix(parts, i)].get(index)
            mapped.append(part if new is None else str(new))
        new_path = ".".join(mapped)
        out.append(snapshot if new_path == original else snapshot.with_path(new_path))
        names.append((new_path, original))
    return out, names


def _prefix(parts: list[str], i: int) -> str:
    return ".".join(parts[:i]) + "." if i else ""
