"""pytest shell over the harness: each case file in cases/ becomes one item per check plus one
golden item per side. Running and judging a case is ``harness.runner``, its report a
``harness.results.CaseReport`` rendered by ``harness.report.text``; this file only adapts them
to pytest."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import case as case_api
from harness.report.text import render_check, render_golden
from harness.results import CaseReport
from harness.runner import report_for
from harness.session import stale_goldens


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance")
    group.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite golden/<case>/<side>.json from this run and report what changed",
    )
    group.addoption(
        "--force",
        action="store_true",
        help="with --update-golden: also bless cases whose agree checks fail",
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if (
        file_path.suffix == ".py"
        and file_path.parent == case_api.CASES_DIR
        and not file_path.name.startswith("_")
    ):
        return CaseFile.from_parent(parent, path=file_path)
    return None


class CaseFile(pytest.File):
    def collect(self):
        case = case_api.load_case(self.path)
        for check in case.checks:
            yield CheckItem.from_parent(self, name=check.label, case=case, check=check)
        for side in case_api.SIDES:
            yield GoldenItem.from_parent(self, name=f"golden:{side}", case=case, side=side)


class ConformanceFailure(Exception):
    """Carries the rendered report; pytest shows it as the whole failure message."""


class _CaseItem(pytest.Item):
    def __init__(self, *, case: case_api.Case, **kwargs) -> None:
        super().__init__(**kwargs)
        self.case = case

    def report(self) -> CaseReport:
        """The case's report, computed once per process for all its items."""
        config = self.config
        return report_for(
            self.case,
            update=config.getoption("update_golden"),
            force=config.getoption("force"),
        )

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"{self.case.name}::{self.name}"


class CheckItem(_CaseItem):
    def __init__(self, *, check: case_api.Check, **kwargs) -> None:
        super().__init__(**kwargs)
        self.check = check

    def runtest(self) -> None:
        result = self.report().check(self.check.label)
        if not result.ok:
            raise ConformanceFailure(render_check(self.case.name, result))


class GoldenItem(_CaseItem):
    def __init__(self, *, side: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.side = side

    def runtest(self) -> None:
        result = self.report().goldens[self.side]
        text = render_golden(result)
        self.user_properties.append(("golden", text))  # listed by --update-golden's summary
        if not result.ok:
            raise ConformanceFailure(text)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    stale = stale_goldens()
    if stale:
        terminalreporter.section("stale goldens")
        for path in stale:
            terminalreporter.write_line(f"{path}: no case file cases/{path.name}.py; delete it")
    if config.getoption("update_golden"):
        terminalreporter.section("golden updates")
        for rep in terminalreporter.stats.get("passed", []):
            for name, text in getattr(rep, "user_properties", []):
                if name == "golden":
                    terminalreporter.write_line(text)
