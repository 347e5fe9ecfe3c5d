"""burn's `ParamGroup`: a set of parameters named by ParamId or by module path (burn-core
`src/module/param/group.rs`, read at burn commit 2c06be351006851d42fdb6df16b976f4a82d9747).

A parameter's path is what burn's `ModuleMapper` builds from `enter_module` names: the field
names from the module passed to the optimizer down to the param, joined by dots, list items
by index (`layer_a.weight`, `blocks.0.fc.bias`; the top module's own name is not part of it),
the same spelling as `Module.named_params()`. A group matches `(id, path)`; `path` may be
None (a record without paths, a bare ParamId), and then only `all()` and id groups match.

Matching rules, each burn's:
- `from_path(s)`: the path equals one of the strings; `from_predicate(s)`: the path contains
  every string (AND; an empty list matches every path); `from_any_predicates`: any of them
  (OR); `from_regex(es)`: every pattern is found somewhere in the path (unanchored, Rust's
  `Regex::is_match`; AND), `from_any_regexes`: any of them;
- `fuse(other)`: either group's matches; the result has **no excludes** (burn builds it with
  `excludes: None`, so a fused group forgets the exclusions of both);
- `exclude(other)`: matches of self minus the matches of `other`'s own matcher (`other`'s
  excludes are ignored: `exclude_ignores_excludes_on_the_provided_group`).

PyTorch has no such object: a `torch.optim` param group is an explicit list of tensors, and a
tensor in two groups is an error (see `harness.engine.optim.groups`).

Regex difference: patterns are compiled by Python's `re`, not Rust's `regex` crate; the two
agree on the usual syntax (classes, anchors, repetition) but Python has look-around and
backreferences that Rust refuses, and the text of an invalid-pattern error after
`Invalid regex pattern: ` is Python's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from harness.engine.module.core import Module, ParamId, params_of

__all__ = ["ParamGroup", "ParamGroupError"]


class ParamGroupError(ValueError):
    """burn's `ParamGroupError::InvalidPatternError`: a pattern that does not compile."""


class _Matcher:
    """burn's `ParamGroupMatcher`: All, Explicit(ids), Path(kind, items) or Combined(any)."""

    __slots__ = ("items", "kind")

    def __init__(self, kind: str, items: tuple = ()) -> None:
        self.kind = kind
        self.items = items

    def matches(self, pid, path: str | None) -> bool:
        kind = self.kind
        if kind == "all":
            return True
        if kind == "explicit":
            return pid in self.items
        if kind == "combined":
            return any(m.matches(pid, path) for m in self.items)
        if path is None:  # a path matcher never matches a param without a path
            return False
        if kind == "exact":
            return any(p == path for p in self.items)
        if kind == "include":
            return all(p in path for p in self.items)
        return all(r.search(path) is not None for r in self.items)  # "regex"

    def fuse(self, other: _Matcher) -> _Matcher:
        """burn's `ParamGroupMatcher::fuse`: All absorbs, Combined lists are concatenated."""
        if self.kind == "all" or other.kind == "all":
            return _ALL
        left = self.items if self.kind == "combined" else (self,)
        right = other.items if other.kind == "combined" else (other,)
        return _Matcher("combined", (*left, *right))

    def __repr__(self) -> str:
        return f"{self.kind}{list(self.items)!r}" if self.kind != "all" else "all"


_ALL = _Matcher("all")


def _compile(pattern: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise ParamGroupError(f"Invalid regex pattern: {error}") from None


def _any_of(matchers: list[_Matcher]) -> _Matcher:
    """burn's fold of `from_any_*`: no matcher is `Include([])` (every path), one is itself."""
    if not matchers:
        return _Matcher("include", ())
    fused = matchers[-1]
    for matcher in matchers[:-1]:
        fused = fused.fuse(matcher)
    return fused


class ParamGroup:
    """A matcher plus optional excludes; `matches(id, path)` is burn's `matches`."""

    __slots__ = ("excludes", "matcher")

    def __init__(self, matcher: _Matcher, excludes: _Matcher | None = None) -> None:
        self.matcher = matcher
        self.excludes = excludes

    def matches(self, pid, path: str | None = None) -> bool:
        """True when `(pid, path)` is matched and not excluded."""
        if not self.matcher.matches(pid, path):
            return False
        return self.excludes is None or not self.excludes.matches(pid, path)

    # ---- constructors (burn's associated functions) ----

    @classmethod
    def all(cls) -> ParamGroup:
        """Every parameter, with or without a path."""
        return cls(_ALL)

    @classmethod
    def from_ids(cls, ids: Iterable[ParamId]) -> ParamGroup:
        """Exactly these ParamIds (paths are not looked at)."""
        return cls(_Matcher("explicit", frozenset(ParamId(int(i)) for i in ids)))

    @classmethod
    def ids_from_module(cls, module: Module) -> ParamGroup:
        """The ParamIds of every param of `module` (burn's `ids_from_module`)."""
        return cls.from_ids(p.id for p in params_of(module))

    @classmethod
    def from_path(cls, path: str) -> ParamGroup:
        return cls.from_paths([path])

    @classmethod
    def from_paths(cls, paths: Iterable[str]) -> ParamGroup:
        """Params whose path equals one of `paths`."""
        return cls(_Matcher("exact", tuple(_text(p) for p in paths)))

    @classmethod
    def from_predicate(cls, path: str) -> ParamGroup:
        return cls.from_predicates([path])

    @classmethod
    def from_predicates(cls, paths: Iterable[str]) -> ParamGroup:
        """Params whose path contains every string (AND)."""
        return cls(_Matcher("include", tuple(_text(p) for p in paths)))

    @classmethod
    def from_any_predicates(cls, paths: Iterable[str]) -> ParamGroup:
        """Params whose path contains any of the strings (OR)."""
        return cls(_any_of([_Matcher("include", (_text(p),)) for p in paths]))

    @classmethod
    def from_regex(cls, pattern: str) -> ParamGroup:
        return cls.from_regexes([pattern])

    @classmethod
    def from_regexes(cls, patterns: Iterable[str]) -> ParamGroup:
        """Params whose path matches every pattern (AND); ParamGroupError if one is invalid."""
        return cls(_Matcher("regex", tuple(_compile(_text(p)) for p in patterns)))

    @classmethod
    def from_any_regexes(cls, patterns: Iterable[str]) -> ParamGroup:
        """Params whose path matches any pattern (OR); ParamGroupError if one is invalid."""
        return cls(_any_of([_Matcher("regex", (_compile(_text(p)),)) for p in patterns]))

    # ---- combinators ----

    def fuse(self, other: ParamGroup) -> ParamGroup:
        """Either group's matches; the excludes of both are dropped (burn's `fuse`)."""
        return ParamGroup(self.matcher.fuse(other.matcher))

    def exclude(self, group: ParamGroup) -> ParamGroup:
        """This group without `group`'s matches (its own excludes are not looked at)."""
        excludes = group.matcher if self.excludes is None else self.excludes.fuse(group.matcher)
        return ParamGroup(self.matcher, excludes)

    def __repr__(self) -> str:
        excluded = "" if self.excludes is None else f", excludes={self.excludes!r}"
        return f"ParamGroup({self.matcher!r}{excluded})"


def _text(value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"ParamGroup: expected a str path or pattern, got {type(value).__name__}")
    return value
