"""A project's settings: the ``[tool.conformance]`` table of its ``pyproject.toml``.

    [tool.conformance]
    cases = "cases"              # folder of case files (default "cases")
    golden = "golden"            # goldens of the cases: <golden>/<case>/<side>.json
    out = "out"                  # fresh side files of each run
    fixture_golden = "tests/golden"  # goldens of the `conformance` fixture (default: beside
                                 # each test module, in a folder named after it)
    threads = 1                  # BLAS and torch threads while a case side runs

    [tool.conformance.tolerances]  # project-wide overrides, after each case's own TOLERANCES
    "grads.*" = { atol = 1e-5, reason = "accumulated over 8 steps" }

Paths are relative to the folder of the ``pyproject.toml``. Without the table (or without a
``pyproject.toml``), every setting has its default, relative to the folder searched from. The
pytest plugin, the ``conformance`` command and ``compare.py`` read the settings here, so they
agree on where everything is.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bounded import RefusedFile, read_bounded
from harness.tolerances import Tolerance, check_overrides

PYPROJECT = "pyproject.toml"
MAX_CONFIG_BYTES = 1 << 20  # a pyproject.toml is a few KiB; a tolerance table of 10,000 rows fits
TABLE = "tool.conformance"
_PATHS = ("cases", "golden", "out", "fixture_golden")
_KEYS = (*_PATHS, "threads", "tolerances")
_TOLERANCE_FIELDS = ("atol", "rtol", "ulps", "reason")


class ConfigError(Exception):
    """A bad ``[tool.conformance]`` setting; ``str()`` is one line naming file and key."""

    def __init__(self, path: Path, key: str, problem: str) -> None:
        super().__init__(f"{path}: {TABLE}.{key}: {problem}")


@dataclass(frozen=True)
class Project:
    """Where a project keeps its cases and goldens, and how its cases run."""

    root: Path
    cases: Path
    golden: Path
    out: Path
    fixture_golden: Path | None = None
    threads: int = 1
    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    source: Path | None = None  # the pyproject.toml read; None: defaults only
    configured: bool = False  # it has a [tool.conformance] table

    @classmethod
    def defaults(cls, root: Path) -> Project:
        root = Path(root)
        return cls(root=root, cases=root / "cases", golden=root / "golden", out=root / "out")


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` in ``start`` or a folder above it."""
    start = Path(start).resolve()
    for folder in (start, *start.parents):
        candidate = folder / PYPROJECT
        if candidate.is_file():
            return candidate
    return None


def load_project(start: Path) -> Project:
    """The settings of the project ``start`` lies in (the defaults when it has none)."""
    pyproject = find_pyproject(start)
    return read_project(pyproject) if pyproject else Project.defaults(Path(start).resolve())


def read_project(pyproject: Path) -> Project:
    """The settings of one ``pyproject.toml``; ConfigError for a bad value or unknown key."""
    pyproject = Path(pyproject)
    try:
        data = read_bounded(pyproject, MAX_CONFIG_BYTES, PYPROJECT, text=True)
        doc = tomllib.loads(data.decode("utf-8"))
    except RefusedFile as exc:
        raise ConfigError(pyproject, "*", exc.problem) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(pyproject, "*", f"cannot read ({exc})") from None
    table = doc.get("tool", {}).get("conformance")
    base = Project.defaults(pyproject.parent)
    if table is None:
        return dataclasses.replace(base, source=pyproject)
    if not isinstance(table, dict):
        raise ConfigError(pyproject, "*", "must be a table")
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        known = ", ".join(_KEYS)
        raise ConfigError(pyproject, unknown[0], f"unknown setting (known: {known})")
    settings: dict[str, Any] = {"source": pyproject, "configured": True}
    for key in _PATHS:
        if key in table:
            settings[key] = _path(pyproject, key, table[key])
    if "threads" in table:
        settings["threads"] = _threads(pyproject, table["threads"])
    if "tolerances" in table:
        settings["tolerances"] = _tolerances(pyproject, table["tolerances"])
    return dataclasses.replace(base, **settings)


def _path(pyproject: Path, key: str, value: Any) -> Path:
    if not isinstance(value, str) or not value:
        raise ConfigError(pyproject, key, f"must be a folder name (a string), got {value!r}")
    return pyproject.parent / value


def _threads(pyproject: Path, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(pyproject, "threads", f"must be a whole number >= 1, got {value!r}")
    return value


def _tolerances(pyproject: Path, table: Any) -> dict[str, Tolerance]:
    if not isinstance(table, dict):
        raise ConfigError(pyproject, "tolerances", "must be a table of glob = {atol, reason}")
    found = {}
    for pattern, spec in table.items():
        key = f"tolerances.{pattern!r}"
        if not isinstance(spec, dict):
            raise ConfigError(pyproject, key, "must be a table like { atol = 1e-5, reason = .. }")
        unknown = sorted(set(spec) - set(_TOLERANCE_FIELDS))
        if unknown:
            raise ConfigError(pyproject, key, f"unknown field {unknown[0]!r}")
        try:
            found[pattern] = Tolerance(
                spec.get("atol", 0.0),
                spec.get("rtol", 0.0),
                spec.get("ulps"),
                spec.get("reason", ""),
            )
            check_overrides({pattern: found[pattern]})
        except ValueError as exc:
            raise ConfigError(pyproject, key, str(exc)) from None
    return found


def with_tolerances(case: Any, tolerances: Mapping[str, Tolerance]) -> Any:
    """The case (a dataclass with ``tolerances``) with the project's overrides after its own.

    The case's globs come first, so a case that overrides a key keeps its own tolerance.
    """
    if not tolerances:
        return case
    merged = dict(case.tolerances)
    for pattern, tol in tolerances.items():
        merged.setdefault(pattern, tol)
    return dataclasses.replace(case, tolerances=merged)
