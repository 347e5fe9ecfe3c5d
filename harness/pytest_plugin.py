"""The pytest plugin of the conformance harness (entry point ``pytest11``, so installing the
package is all a project needs).

- With a ``[tool.conformance]`` table in the project's ``pyproject.toml`` (``harness.project``),
  every case file of its ``cases`` folder is collected: one item per check, one golden item per
  side, and one item that fails while a golden folder has no case file (``--allow-stale``
  accepts them, ``--prune-stale`` deletes those that hold golden files only: ``harness.prune``).
- The fixture ``conformance``: ``conformance.check({"loss": loss, "grads": grads})`` compares
  the values with a golden beside the test (``<test dir>/<module>/<test>.json``, or under the
  configured ``fixture_golden``: ``Conformance.location``), written and failing on the first
  run; a mismatch writes ``<test>.obtained.json`` and fails with the command that accepts the
  new output. Two tests of a module whose names make one file name fail, naming both.
- Options: ``--update-golden`` (rewrite goldens, report what changed), ``--force`` (also for
  cases whose agree checks fail), ``--allow-stale``, ``--prune-stale``, ``--all-mismatches``
  (every mismatched element, as ``-v`` does).

Running and judging a case is ``harness.runner``, its report a ``harness.results.CaseReport``
rendered by ``harness.report.text``; this module only adapts them to pytest.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness import numerics
from harness.project import enter_numerics

# Before anything imports numpy or torch (the imports below do, and so do the tests): the
# profile's variables are read when those libraries load. pytest imports this plugin at
# start-up, before conftest files and test modules; xdist's workers inherit the variables.
_NUMERICS = enter_numerics(sys.argv[1:], Path.cwd())

import pytest

from harness import case as case_api
from harness import project as project_api
from harness.mismatches import LIMIT
from harness.report.text import render_check, render_golden
from harness.results import CaseReport, GoldenReport
from harness.runner import report_for

PROJECT = pytest.StashKey[project_api.Project]()
REPORTS = pytest.StashKey[dict]()  # one report per case and session (all its items read it)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance")
    group.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite the goldens (of cases and of the conformance fixture) from this run",
    )
    group.addoption(
        "--force",
        action="store_true",
        help="with --update-golden: also bless cases whose agree checks fail",
    )
    group.addoption(
        "--allow-stale",
        action="store_true",
        help="goldens of deleted cases do not fail the run (they are listed)",
    )
    group.addoption(
        "--prune-stale", action="store_true", help="delete the goldens of deleted cases"
    )
    group.addoption(
        "--numerics",
        metavar="PROFILE",
        help="portable (default: pinned code paths of this CPU's class) or native;"
        " [tool.conformance] numerics (harness.numerics)",
    )
    group.addoption(
        "--all-mismatches",
        action="store_true",
        help="list every mismatched element of a failing tensor (default: the first 5)",
    )


def pytest_configure(config: pytest.Config) -> None:
    try:
        config.stash[PROJECT] = _load_project(config)
    except project_api.ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[REPORTS] = {}
    _check_numerics(config)


def _check_numerics(config: pytest.Config) -> None:
    """A bad choice is a usage error; one that differs from what start-up put in force (a
    ``pytest.main(args)`` call in a live process) is a warning: nothing can change it now."""
    if isinstance(_NUMERICS, numerics.NumericsError):
        raise pytest.UsageError(str(_NUMERICS))
    asked = numerics.choose(config.getoption("numerics"), config.stash[PROJECT].numerics)
    try:
        wanted = numerics.resolve(asked)
    except numerics.NumericsError as exc:
        raise pytest.UsageError(str(exc)) from None
    if wanted != _NUMERICS.profile or _NUMERICS.problem:
        problem = _NUMERICS.problem or (
            f"numerics {asked!r} asked for after start-up, where {_NUMERICS.choice!r} was put"
            " in force: this session keeps the latter"
        )
        config.issue_config_time_warning(pytest.PytestConfigWarning(problem), stacklevel=2)


def pytest_report_header(config: pytest.Config) -> str:
    """The numerics in force, first thing in the session header (what decides the bits)."""
    return f"conformance numerics: {numerics.describe(numerics.in_force())}"


def _load_project(config: pytest.Config) -> project_api.Project:
    """The settings of the pyproject.toml pytest uses (or the one in its rootdir)."""
    inipath = config.inipath
    if inipath is not None and inipath.name == project_api.PYPROJECT:
        return project_api.read_project(inipath)
    candidate = config.rootpath / project_api.PYPROJECT
    if candidate.is_file():
        return project_api.read_project(candidate)
    return project_api.Project.defaults(config.rootpath)


def project_of(config: pytest.Config) -> project_api.Project:
    return config.stash[PROJECT]


def mismatch_limit(config: pytest.Config) -> int | None:
    """Mismatched elements listed per failing row: 5, or every one with -v / --all-mismatches."""
    verbose = config.getoption("verbose") > 0
    return None if verbose or config.getoption("all_mismatches") else LIMIT


def update_command(config: pytest.Config, target: str, *, force: bool = False) -> str:
    """The exact command that rewrites the goldens of ``target`` (a node id or a path)."""
    command = ["pytest", "--update-golden", *(["--force"] if force else []), target]
    text = shlex.join(command)
    invoked = Path(config.invocation_params.dir).resolve()
    if invoked != config.rootpath.resolve():  # node ids are relative to the rootdir
        text = f"cd {shlex.quote(str(config.rootpath))} && {text}"
    return text


# ---------------------------------------------------------------------------------------------
# Collecting the case files of [tool.conformance] cases


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    project = project_of(parent.config)
    if project.configured and path.resolve() == project.cases.resolve():
        return CasesDir.from_parent(parent, path=path)
    return None


class CasesDir(pytest.Directory):
    """The cases folder: one ``CaseFile`` per case file, then the stale-goldens item."""

    def collect(self):
        for path in case_api.case_paths(self.path):
            yield CaseFile.from_parent(self, path=path)
        yield StaleGoldens.from_parent(self, name="stale-goldens")


class CaseFile(pytest.File):
    def collect(self):
        project = project_of(self.config)
        case = project_api.with_tolerances(case_api.load_case(self.path), project.tolerances)
        for check in case.checks:
            yield CheckItem.from_parent(self, name=check.label, case=case, check=check)
        for side in case_api.SIDES:
            yield GoldenItem.from_parent(self, name=f"golden:{side}", case=case, side=side)


class ConformanceFailure(Exception):
    """Carries the rendered report; pytest shows it as the whole failure message."""


class _Item(pytest.Item):
    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)


class _CaseItem(_Item):
    def __init__(self, *, case: case_api.Case, **kwargs) -> None:
        super().__init__(**kwargs)
        self.case = case

    def report(self) -> CaseReport:
        """The case's report, computed once per process for all its items.

        A folder or file the run cannot write or read (a golden that is a folder, a golden
        folder that is a file) fails each item with the line the ``conformance`` command
        prints, not with a traceback.
        """
        config, project = self.config, project_of(self.config)
        try:
            return report_for(
                self.case,
                update=config.getoption("update_golden"),
                force=config.getoption("force"),
                golden_dir=project.golden,
                out_dir=project.out,
                threads=project.threads,
                limit=mismatch_limit(config),
                cache=config.stash[REPORTS],
            )
        except OSError as exc:
            where = exc.filename if exc.filename is not None else self.case.name
            raise ConformanceFailure(f"{where}: {exc.strerror or exc}") from None

    @property
    def verbose(self) -> bool:
        return self.config.getoption("verbose") > 0

    def reportinfo(self):
        return self.path, None, f"{self.case.name}::{self.name}"


class CheckItem(_CaseItem):
    def __init__(self, *, check: case_api.Check, **kwargs) -> None:
        super().__init__(**kwargs)
        self.check = check

    def runtest(self) -> None:
        report = self.report()
        result = report.check(self.check.label)
        if not result.ok:
            text = render_check(self.case.name, result, verbose=self.verbose, raised=report.raised)
            raise ConformanceFailure(text)


class GoldenItem(_CaseItem):
    def __init__(self, *, side: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.side = side

    def runtest(self) -> None:
        report = self.report()
        result = report.goldens[self.side]
        target = self.path.relative_to(self.config.rootpath).as_posix()
        command = update_command(self.config, target, force=not report.agrees_hold)
        text = render_golden(result, verbose=self.verbose, update=command)
        self.user_properties.append(("golden", text))  # listed by --update-golden's summary
        if not result.ok:
            raise ConformanceFailure(text)


class StaleGoldens(_Item):
    """Fails while a golden folder has no case file, unless allowed or pruned (only folders
    of golden files are pruned: ``harness.prune``)."""

    def runtest(self) -> None:
        from harness import prune

        project, config = project_of(self.config), self.config
        names = {p.stem for p in case_api.case_paths(project.cases)}
        finished = prune.finish_interrupted(project.golden, case_api.SIDES)
        if finished:
            self._note(f"pruned stale goldens of an interrupted prune: {self._list(finished)}")
        scan = prune.scan(project.golden, names, case_api.SIDES)
        stale, foreign = list(scan.stale), list(scan.foreign)
        if stale and config.getoption("prune_stale"):
            deleted, changed = prune.prune(
                project.golden, stale, case_api.SIDES, announce=self._announce
            )
            shown = self._list(stale)
            self._note(f"pruned stale goldens {shown}: {self._list(deleted)}")
            stale, foreign = [], [*foreign, *changed]
        if not (stale or foreign):
            return
        shown = ", ".join([self._rel(p) for p in stale] + [self._foreign(f) for f in foreign])
        if config.getoption("allow_stale"):
            self._note(f"stale goldens (allowed): {shown}")
            return
        cases = self._rel(project.cases)
        advice = "--prune-stale deletes them, " if stale else ""
        raise ConformanceFailure(
            f"stale goldens: {shown} (no case file in {cases}/); {advice}--allow-stale accepts them"
        )

    def _rel(self, path: Path) -> str:
        return _relative(path, self.config.rootpath)

    def _list(self, paths) -> str:
        return ", ".join(self._rel(p) for p in paths)

    def _foreign(self, folder) -> str:
        rooted = str(folder.path.parent)  # the problem names paths under the golden folder
        problem = folder.problem.replace(rooted, self._rel(folder.path.parent))
        return f"{self._rel(folder.path)} (not pruned: {problem})"

    def _note(self, text: str) -> None:
        self.user_properties.append(("stale", text))

    def _announce(self, planned: list[tuple[Path, list[Path]]]) -> None:
        """Before anything is deleted, on the terminal: what will be."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            folders = self._list(folder for folder, _ in planned)
            files = self._list(file for _, files in planned for file in files)
            reporter.write_line(f"deleting stale goldens {folders}: {files or '(empty)'}")

    def reportinfo(self):
        return self.path, None, "stale goldens"


def _relative(path: Path, root: Path) -> str:
    path = Path(path)  # a symbolic link is named, not its target
    try:
        return (path.parent.resolve() / path.name).relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------------
# The golden fixture


class Conformance:
    """The ``conformance`` fixture: goldens of a test's values (``check``)."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.request = request
        self.used: set[str] = set()

    def check(
        self,
        values: Any,
        *,
        basename: str | None = None,
        atol: float | None = None,
        rtol: float | None = None,
        ulps: int | None = None,
        summary: Sequence[str] = (),
    ) -> GoldenReport:
        """Compare ``values`` (a mapping, or one value) with this test's golden.

        ``basename`` names the golden (default: the test's name; needed to call ``check``
        twice in one test); ``atol`` / ``rtol`` / ``ulps`` replace the tolerance of every key;
        ``summary``: key globs of bulky tensors the golden keeps as dtype, shape, sha256 and
        summary statistics only (a case's ``GOLDEN_SUMMARY``; ``harness.golden_summary``).
        """
        __tracebackhide__ = True
        from harness.testing import GoldenTarget, check_values, file_stem
        from harness.tolerances import explicit_tolerance

        config, node = self.request.config, self.request.node
        side = file_stem(basename or node.name)
        if side in self.used:
            raise ValueError(f"conformance.check: golden {side!r} checked twice in one test")
        if basename is None:
            _refuse_shared_golden(config, node, side)
        self.used.add(side)
        folder, name = self.location()
        tol = explicit_tolerance(atol, rtol, ulps, "conformance.check(...)")
        patterns = case_api.golden_summary_of(summary, "conformance.check(summary=...)")
        target = GoldenTarget(name, project_of(config).tolerances, tol, patterns)
        update = config.getoption("update_golden")
        report = check_values(
            values,
            folder=folder,
            target=target,
            side=side,
            update=update,
            limit=mismatch_limit(config),
        )
        if update:
            node.user_properties.append(("golden", render_golden(report)))
        elif not report.ok:
            raise AssertionError(self.message(report))
        return report

    def location(self) -> tuple[Path, str]:
        """``(folder, name)``: the golden is ``folder / name / <test>.json``.

        By default the folder is the test module's and the name the module's (beside the
        test, as pytest-regressions does). Under ``fixture_golden`` the name is the module's
        path from the folder that holds ``fixture_golden``: with ``tests/golden``,
        ``tests/test_port.py`` has ``tests/golden/test_port/`` (its path from the rootdir,
        ``tests/golden/tests/test_port/``, would repeat ``tests``).
        """
        module = Path(self.request.node.path)
        configured = project_of(self.request.config).fixture_golden
        if configured is None:
            return module.parent, module.stem
        base = configured.parent
        try:
            relative = module.resolve().relative_to(base.resolve())
        except ValueError:  # outside: a path of its own there could collide with one inside
            raise ValueError(
                f"conformance.check: {module} is outside {base}, the folder holding "
                f"fixture_golden ({configured}): its golden has no place there; "
                "set fixture_golden in a folder above every test module using the fixture"
            ) from None
        return configured, relative.with_suffix("").as_posix()

    def message(self, report: GoldenReport) -> str:
        from harness.testing import golden_message

        command = update_command(self.request.config, self.request.node.nodeid)
        verbose = self.request.config.getoption("verbose") > 0
        return golden_message(report, command, verbose=verbose)


FIXTURE_STEMS = pytest.StashKey[dict]()  # (module, golden file stem) -> test node ids


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselect: every test of the module counts
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The default golden name of every test using the fixture, to find names that collide
    (``test_x[a b]``, ``test_x[a_b]`` and ``test_x[a/b]`` all make ``test_x_a_b_``)."""
    users = [i for i in items if "conformance" in getattr(i, "fixturenames", ())]
    if not users:
        return
    from harness.testing import file_stem

    stems: dict[tuple[Path, str], list[str]] = {}
    for item in users:
        stems.setdefault((Path(item.path), file_stem(item.name)), []).append(item.nodeid)
    config.stash[FIXTURE_STEMS] = stems


def _refuse_shared_golden(config: pytest.Config, node: pytest.Item, side: str) -> None:
    """ValueError naming both tests when another test of the module has the same golden."""
    ids = config.stash.get(FIXTURE_STEMS, {}).get((Path(node.path), side), [])
    others = [nodeid for nodeid in ids if nodeid != node.nodeid]
    if others:
        raise ValueError(
            f"conformance.check: {node.nodeid} and {others[0]} would share the golden "
            f"{side}.json (a file name keeps only A-Z a-z 0-9 _ . -, the rest become _); "
            "give one another id (pytest.param(..., id=...)) or pass basename="
        )


@pytest.fixture
def conformance(request: pytest.FixtureRequest) -> Conformance:
    """Goldens of this test's values: ``conformance.check({"loss": loss, "grads": grads})``."""
    return Conformance(request)


# ---------------------------------------------------------------------------------------------
# The terminal summary: golden updates and stale goldens


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    reports = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])]
    stale = [text for r in reports for name, text in r.user_properties if name == "stale"]
    if stale:
        terminalreporter.section("stale goldens")
        for text in stale:
            terminalreporter.write_line(text)
    if config.getoption("update_golden"):
        terminalreporter.section("golden updates")
        for rep in terminalreporter.stats.get("passed", []):
            for name, text in getattr(rep, "user_properties", []):
                if name == "golden":
                    terminalreporter.write_line(text)
