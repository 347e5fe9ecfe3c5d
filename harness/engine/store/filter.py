"""`PathFilter`: which tensors to apply, by regex, exact path or predicate (OR of all).

Transliterates crates/burn-store/src/filter.rs (burn 2c06be351006851d42fdb6df16b976f4a82d9747).
A path matches when it equals one of the exact paths, when a regex is found anywhere in it
(Rust's `is_match`, Python's `re.search`), or when a predicate `fn(path, container_path)` is
true; `match_all()` matches everything and an empty filter matches nothing. The stores treat an
empty filter as "no filter" (everything applies), as burn's do.

Difference from burn: an invalid regex raises ValueError here; burn's `with_regex` drops it
silently (its TODO says so), which leaves a filter that may match nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

__all__ = ["PathFilter"]

Predicate = Callable[[str, str], bool]


@dataclass(frozen=True)
class PathFilter:
    """An immutable filter; each `with_*` returns a new one."""

    regex_patterns: tuple[re.Pattern, ...] = ()
    exact_paths: tuple[str, ...] = ()
    predicates: tuple[Predicate, ...] = ()
    match_all_paths: bool = False

    @classmethod
    def all(cls) -> PathFilter:
        """A filter matching every path."""
        return cls(match_all_paths=True)

    def with_regex(self, pattern: str) -> PathFilter:
        """Also match paths in which `pattern` is found."""
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"invalid filter regex {pattern!r}: {exc}") from None
        return replace(self, regex_patterns=(*self.regex_patterns, compiled))

    def with_regexes(self, patterns: Iterable[str]) -> PathFilter:
        """`with_regex` for each pattern."""
        out = self
        for pattern in patterns:
            out = out.with_regex(pattern)
        return out

    def with_full_path(self, path: str) -> PathFilter:
        """Also match this exact path."""
        return replace(self, exact_paths=(*self.exact_paths, path))

    def with_full_paths(self, paths: Iterable[str]) -> PathFilter:
        """`with_full_path` for each path."""
        return replace(self, exact_paths=(*self.exact_paths, *paths))

    def with_predicate(self, predicate: Predicate) -> PathFilter:
        """Also match when `predicate(path, container_path)` is true."""
        return replace(self, predicates=(*self.predicates, predicate))

    def with_predicates(self, predicates: Iterable[Predicate]) -> PathFilter:
        """`with_predicate` for each predicate."""
        out = self
        for predicate in predicates:
            out = out.with_predicate(predicate)
        return out

    def match_all(self) -> PathFilter:
        """A filter matching every path."""
        return PathFilter.all()

    def or_(self, other: PathFilter) -> PathFilter:
        """Paths matching either filter (burn's `or`)."""
        if self.match_all_paths or other.match_all_paths:
            return PathFilter.all()
        return PathFilter(
            (*self.regex_patterns, *other.regex_patterns),
            (*self.exact_paths, *other.exact_paths),
            (*self.predicates, *other.predicates),
        )

    def is_empty(self) -> bool:
        """True when nothing is configured (the filter matches nothing)."""
        return not (
            self.match_all_paths or self.regex_patterns or self.exact_paths or self.predicates
        )

    def matches(self, path: str, container_path: str = "") -> bool:
        """Whether `path` (dotted) within `container_path` (dotted container types) matches."""
        if self.match_all_paths:
            return True
        return (
            path in self.exact_paths
            or any(regex.search(path) for regex in self.regex_patterns)
            or any(predicate(path, container_path) for predicate in self.predicates)
        )

    def matches_with_container_path(
        self, path: Sequence[str], container_stack: Sequence[str]
    ) -> bool:
        """`matches` for a path stack and a container stack."""
        return self.matches(".".join(path), ".".join(container_stack))
