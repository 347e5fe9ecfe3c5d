"""A project's settings: the ``[tool.conformance]`` table of its ``pyproject.toml``.

    [tool.conformance]
    cases = "cases"              # folder of case files (default "cases")
    golden = "golden"            # goldens of the cases: <golden>/<case>/<side>.json
    out = "out"                  # fresh side files of each run
    fixture_golden = "tests/golden"  # goldens of the `conformance` fixture (default: beside
                                 # each test module, in a folder named after it)
    threads = 1                  # BLAS and torch threads while a case side runs (1 to 256)
    numerics = "portable"        # or "native": see harness.numerics (default "portable")
    allow_outside_project = false  # true: the paths above may leave the project folder

    [tool.conformance.tolerances]  # project-wide overrides, after each case's own TOLERANCES
    "grads.*" = { atol = 1e-5, reason = "accumulated over 8 steps" }

Paths are relative to the folder of the ``pyproject.toml`` and may not leave it (``..``, an
absolute path elsewhere, a symbolic link out) unless ``allow_outside_project = true``. The
golden folder is pruned of the folders of deleted cases (``harness.prune``), so it may not be
the project folder or hold it, may not hold the cases folder, and may not overlap ``out`` or
``fixture_golden``; an explicit ``cases`` folder must exist (a typo would collect no case and
pass). Without the table (or without a ``pyproject.toml``), every setting has its default,
relative to the folder searched from. The pytest plugin, the ``conformance`` command and
``compare.py`` read the settings here, so they agree on where everything is.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import numerics
from harness.bounded import RefusedFile, read_bounded
from harness.tolerances import Tolerance, check_overrides

PYPROJECT = "pyproject.toml"
MAX_CONFIG_BYTES = 1 << 20  # a pyproject.toml is a few KiB; a tolerance table of 10,000 rows fits
TABLE = "tool.conformance"
_PATHS = ("cases", "golden", "out", "fixture_golden")
_KEYS = (*_PATHS, "threads", "numerics", "tolerances", "allow_outside_project")
MAX_THREADS = 256  # far above any useful BLAS thread count; a bound the same on every machine
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
    numerics: str = "portable"  # harness.numerics.CHOICES, or a profile's name
    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    source: Path | None = None  # the pyproject.toml read; None: defaults only
    configured: bool = False  # it has a [tool.conformance] table
    given: frozenset[str] = frozenset()  # the keys its table sets

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
    settings: dict[str, Any] = {
        "source": pyproject,
        "configured": True,
        "given": frozenset(table),
    }
    outside = _flag(pyproject, "allow_outside_project", table.get("allow_outside_project", False))
    for key in _PATHS:
        if key in table:
            settings[key] = _path(pyproject, key, table[key], allow_outside=outside)
    if "threads" in table:
        settings["threads"] = _threads(pyproject, table["threads"])
    if "numerics" in table:
        settings["numerics"] = _numerics(pyproject, table["numerics"])
    if "tolerances" in table:
        settings["tolerances"] = _tolerances(pyproject, table["tolerances"])
    project = dataclasses.replace(base, **settings)
    _check_folders(pyproject, project)
    return project


def _flag(pyproject: Path, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(pyproject, key, f"must be true or false, got {value!r}")
    return value


def _path(pyproject: Path, key: str, value: Any, *, allow_outside: bool) -> Path:
    if not isinstance(value, str) or not value:
        raise ConfigError(pyproject, key, f"must be a folder name (a string), got {value!r}")
    root = pyproject.parent
    path = root / value
    if not allow_outside and not path.resolve().is_relative_to(root.resolve()):
        raise ConfigError(
            pyproject,
            key,
            f"{value!r} leaves the project folder {root}; "
            "set allow_outside_project = true to allow it",
        )
    return path


def _check_folders(pyproject: Path, project: Project) -> None:
    """The golden folder is pruned of folders no case is named after: it may hold nothing
    else of the project's, and an explicit cases folder must be there."""
    problem = golden_folder_problem(project.golden, project.root, project.cases)
    if problem:
        raise ConfigError(pyproject, "golden", problem)
    golden = project.golden.resolve()
    for key in ("fixture_golden", "out"):
        other = getattr(project, key)
        if other is not None and _overlap(golden, other.resolve()):
            raise ConfigError(
                pyproject,
                "golden",
                f"overlaps tool.conformance.{key} ({project.golden} and {other}); "
                "each needs a folder of its own",
            )
    if "cases" in project.given and not project.cases.is_dir():
        raise ConfigError(pyproject, "cases", f"no such folder: {project.cases}")


def golden_folder_problem(golden: Path, root: Path, cases: Path) -> str | None:
    """Why ``golden`` cannot be a golden folder of the project at ``root`` (None: it can).

    Pruning deletes its folders that no case is named after; were the project or its cases
    in it, they would be such folders (``harness.prune`` deletes golden files only, but the
    run would still report the project's folders as stale goldens).
    """
    root_r, golden_r = Path(root).resolve(), Path(golden).resolve()
    if root_r.is_relative_to(golden_r):
        what = "is" if golden_r == root_r else "holds"
        return (
            f"{what} the project folder {root}; goldens need a folder of their own "
            '(for example "golden")'
        )
    if Path(cases).resolve().is_relative_to(golden_r):
        return f"holds the cases folder {cases}"
    return None


def _overlap(a: Path, b: Path) -> bool:
    return a.is_relative_to(b) or b.is_relative_to(a)


def _threads(pyproject: Path, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_THREADS:
        raise ConfigError(
            pyproject, "threads", f"must be a whole number from 1 to {MAX_THREADS}, got {value!r}"
        )
    return value


def _numerics(pyproject: Path, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(pyproject, "numerics", f"must be a string, got {value!r}")
    try:
        numerics.resolve(value)
    except numerics.NumericsError:
        known = ", ".join((*numerics.CHOICES, *numerics.PROFILES))
        raise ConfigError(pyproject, "numerics", f"unknown {value!r} (known: {known})") from None
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


def enter_numerics(args: Sequence[str], start: Path) -> numerics.Entry | numerics.NumericsError:
    """``numerics.enter`` for a program that has not parsed its options yet (the pytest plugin
    at import, ``python -m harness.opmatrix``): the choice of ``--numerics`` in ``args``, else the
    nearest settings' ``numerics``. A bad choice is returned, for the program to report once it
    can; an unreadable settings file counts as the default here (the program that reads the
    settings for real reports it)."""
    try:
        configured = load_project(start).numerics
    except ConfigError:
        configured = numerics.DEFAULT
    choice = numerics.choose(numerics.choice_in(args), configured)
    try:
        return numerics.enter(choice)
    except numerics.NumericsError as exc:
        return exc
