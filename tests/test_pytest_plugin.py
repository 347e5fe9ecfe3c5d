"""harness.pytest_plugin in projects of its own (pytester): cases collected from
[tool.conformance], the conformance fixture's golden workflow, stale goldens, the first line
of a failure as JUnit records it, and one registration however the plugin is named."""

import re
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points

import pytest

# Imported here, before any in-process run: pytester restores sys.modules after each run, and
# a torch imported inside one run and imported again by the next crashes the process.
import torch  # noqa: F401

from tests.test_failure_first import ALPHA, CASE, CHARLIE, RAISING

pytest_plugins = ["pytester"]

CONFIG = '[tool.conformance]\ncases = "mycases"\ngolden = "expected"\n'
FIXTURE_TEST = """
import numpy as np

SCALE = {scale}


def test_values(conformance):
    conformance.check({{"loss": np.float32(0.5), "w": np.arange(4, dtype=np.float32) * SCALE}})
"""


def project(pytester, config=CONFIG, **cases):
    pytester.makefile(".toml", pyproject=config)
    folder = pytester.path / "mycases"
    folder.mkdir(exist_ok=True)
    for name, sides in cases.items():
        text = RAISING if sides is None else CASE.format(name=name, **sides)
        (folder / f"{name}.py").write_text(text)
    return pytester


QUIET = ("no:cacheprovider", "no:xdist", "no:benchmark", "no:hypothesispytest")


def run(pytester, *args):
    """An in-process pytest run without the plugins the inner project does not use."""
    return pytester.runpytest(*(arg for p in QUIET for arg in ("-p", p)), *args)


def test_case_files_of_tool_conformance_are_collected(pytester):
    project(pytester, alpha=ALPHA)
    first = run(pytester, "-v")
    first.assert_outcomes(passed=2, failed=2)  # the check and the stale item; goldens missing
    first.stdout.fnmatch_lines(["mycases/alpha.py::agree:x:torch~engine PASSED*",
                                "mycases/alpha.py::golden:torch FAILED*",
                                "mycases::stale-goldens PASSED*"])  # fmt: skip
    assert (pytester.path / "expected" / "alpha" / "torch.json").is_file()
    run(pytester).assert_outcomes(passed=4)


def test_without_the_table_no_case_is_collected(pytester):
    pytester.makefile(".toml", pyproject="[tool.other]\nx = 1\n")
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "alpha.py").write_text(CASE.format(name="alpha", **ALPHA))
    assert run(pytester).ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_the_junit_failure_message_starts_with_key_element_values_and_distance(pytester):
    project(pytester, charlie=CHARLIE)
    run(pytester)  # writes the goldens
    result = run(pytester, "--junitxml=junit.xml")
    result.assert_outcomes(passed=3, failed=1)
    cases = ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    (failure,) = [f for case in cases for f in case.iter("failure")]
    assert failure.get("message").splitlines()[0] == (
        "x[0]: torch=3.0 engine=3.0009592 |diff|=9.59e-04 4023 ulp (959x tol 1e-06); "
        "1 of 2 elements and 1 of 1 keys fail"
    )


def test_a_raising_side_fails_with_the_file_and_line_first(pytester):
    project(pytester, delta=None)
    result = run(pytester, "--junitxml=junit.xml")
    cases = ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    messages = [f.get("message") for case in cases for f in case.iter("failure")]
    line = RAISING.splitlines().index("    return x.reshape(3, 3)") + 1
    assert messages[0].splitlines()[0] == (
        "torch_side raised ValueError: cannot reshape array of size 4 into shape (3,3) "
        f"(mycases/delta.py:{line} in helper)"
    )
    result.stdout.fnmatch_lines([f'  File "mycases/delta.py", line {line}, in helper'])


def test_the_fixture_writes_compares_and_updates_its_golden(pytester):
    project(pytester)
    pytester.makepyfile(test_fix=FIXTURE_TEST.format(scale=1.0))
    golden = pytester.path / "test_fix" / "test_values.json"
    first = run(pytester, "test_fix.py")
    first.assert_outcomes(failed=1)
    first.stdout.fnmatch_lines([f"E       AssertionError: golden test_fix/test_values: missing: "
                                f"golden missing; wrote {golden}"])  # fmt: skip
    run(pytester, "test_fix.py").assert_outcomes(passed=1)
    pytester.makepyfile(test_fix=FIXTURE_TEST.format(scale=1.0001))
    changed = run(pytester, "test_fix.py")
    changed.assert_outcomes(failed=1)
    errors = [line[8:] for line in changed.outlines if line.startswith("E       ")]
    assert errors[0] == (
        "AssertionError: w[3]: golden=3.0 fresh=3.0003 |diff|=3.00e-04 1258 ulp "
        "(300x tol 1e-06); 3 of 4 elements and 1 of 2 keys fail"
    )
    assert errors[-1] == (
        "to accept this output as the golden: pytest --update-golden test_fix.py::test_values"
    )
    assert (golden.parent / "test_values.obtained.json").is_file()
    update = run(pytester, "test_fix.py", "--update-golden")
    update.assert_outcomes(passed=1)
    update.stdout.fnmatch_lines(["*golden updates*", "golden test_fix/test_values: updated: *"])
    assert not (golden.parent / "test_values.obtained.json").exists()
    run(pytester, "test_fix.py").assert_outcomes(passed=1)


def test_the_fixture_golden_folder_can_be_configured(pytester):
    project(pytester, config=CONFIG + 'fixture_golden = "goldens"\n')
    pytester.mkdir("unit")
    (pytester.path / "unit" / "test_fix.py").write_text(FIXTURE_TEST.format(scale=1.0))
    run(pytester, "unit").assert_outcomes(failed=1)
    assert (pytester.path / "goldens" / "unit" / "test_fix" / "test_values.json").is_file()


def test_stale_goldens_fail_unless_allowed_or_pruned(pytester):
    project(pytester, alpha=ALPHA)
    run(pytester)
    stale = pytester.path / "expected" / "gone"
    stale.mkdir()
    (stale / "torch.json").write_text("{}")
    result = run(pytester)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        ["stale goldens: expected/gone (no case file in mycases/); "
         "--prune-stale deletes them, --allow-stale accepts them"]
    )  # fmt: skip
    allowed = run(pytester, "--allow-stale")
    allowed.assert_outcomes(passed=4)
    allowed.stdout.fnmatch_lines(["*stale goldens*", "stale goldens (allowed): expected/gone"])
    pruned = run(pytester, "--prune-stale")
    pruned.assert_outcomes(passed=4)
    pruned.stdout.fnmatch_lines(["pruned stale goldens expected/gone: expected/gone/torch.json"])
    assert not stale.exists()


@pytest.mark.parametrize("threads", ["0", "100000000000"])
def test_a_bad_setting_is_a_usage_error_in_one_line(pytester, threads):
    project(pytester, config=CONFIG + f"threads = {threads}\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert re.search(
        r"pyproject\.toml: tool\.conformance\.threads: must be a whole number from 1 to 256, "
        f"got {threads}$",
        result.stderr.str(),
    )


def test_a_conftest_naming_the_plugin_does_not_register_it_twice(pytester):
    project(pytester, alpha=ALPHA)
    pytester.makeconftest('pytest_plugins = ["harness.pytest_plugin"]\n')
    result = run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # goldens missing: it ran
    assert "already registered" not in result.stderr.str()


def test_the_package_declares_the_plugin_and_the_console_script():
    plugins = {(e.name, e.value) for e in entry_points(group="pytest11")}
    assert ("harness.pytest_plugin", "harness.pytest_plugin") in plugins
    scripts = {(e.name, e.value) for e in entry_points(group="console_scripts")}
    assert ("conformance", "harness.command:console_main") in scripts
