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


def stale_golden(pytester):
    """A project run once, then a golden folder `expected/gone` that no case writes."""
    project(pytester, alpha=ALPHA)
    run(pytester)
    stale = pytester.path / "expected" / "gone"
    stale.mkdir()
    (stale / "torch.json").write_text("{}")
    return stale


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
    stale = stale_golden(pytester)
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


def test_fixture_golden_under_tests_does_not_repeat_the_tests_folder(pytester):
    """Issue 27: ``tests/golden/tests/test_port/`` became ``tests/golden/test_port/``: the
    module's path from the folder holding fixture_golden."""
    project(pytester, config=CONFIG + 'fixture_golden = "tests/golden"\n')
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_port.py").write_text(FIXTURE_TEST.format(scale=1.0))
    run(pytester, "tests").assert_outcomes(failed=1)
    assert (pytester.path / "tests" / "golden" / "test_port" / "test_values.json").is_file()
    assert not (pytester.path / "tests" / "golden" / "tests").exists()
    run(pytester, "tests").assert_outcomes(passed=1)


def test_a_test_outside_the_folder_of_fixture_golden_is_told_so(pytester):
    project(pytester, config=CONFIG + 'fixture_golden = "tests/golden"\n')
    pytester.mkdir("tests")
    pytester.mkdir("unit")
    (pytester.path / "unit" / "test_fix.py").write_text(FIXTURE_TEST.format(scale=1.0))
    result = run(pytester, "unit")
    result.assert_outcomes(failed=1)
    module, tests = pytester.path / "unit" / "test_fix.py", pytester.path / "tests"
    assert errors(result)[-1] == (
        f"ValueError: conformance.check: {module} is outside {tests}, the folder holding "
        f"fixture_golden ({tests / 'golden'}): its golden has no place there; set "
        "fixture_golden in a folder above every test module using the fixture"
    )


def errors(result) -> list[str]:
    """The ``E`` lines of a run's failures, without their prefix."""
    return [line[1:].strip() for line in result.outlines if line.startswith("E  ")]


COLLIDING = """
import pytest


@pytest.mark.parametrize("name", ["a b", "a_b", "a/b", "c"])
def test_values(conformance, name):
    conformance.check({"name": name})
"""


@pytest.mark.parametrize("select", [(), ("-k", "a_b")])
def test_ids_that_make_one_golden_name_are_an_error_naming_both(pytester, select):
    project(pytester)
    pytester.makepyfile(test_ids=COLLIDING)
    result = run(pytester, "test_ids.py", *select)
    first, second = "test_ids.py::test_values[a b]", "test_ids.py::test_values[a_b]"
    assert (
        f"ValueError: conformance.check: {second} and {first} would share the golden "
        "test_values_a_b_.json (a file name keeps only A-Z a-z 0-9 _ . -, the rest become _); "
        "give one another id (pytest.param(..., id=...)) or pass basename="
    ) in errors(result)
    if not select:
        result.assert_outcomes(failed=4)  # three collide, c's golden is new
        assert sorted(p.name for p in (pytester.path / "test_ids").iterdir()) == [
            "test_values_c_.json"
        ]


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ('fixture_golden = "expected"\n', "tool.conformance.golden: overlaps "
         "tool.conformance.fixture_golden"),
        ('fixture_golden = "expected/fixture"\n', "tool.conformance.golden: overlaps "
         "tool.conformance.fixture_golden"),
        ('allow_outside_project = "yes"\n', "tool.conformance.allow_outside_project: must be "
         "true or false, got 'yes'"),
    ],
)  # fmt: skip
def test_overlapping_golden_folders_are_a_usage_error(pytester, extra, problem):
    project(pytester, config=CONFIG + extra, alpha=ALPHA)
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert problem in result.stderr.str() and len(result.stderr.lines) <= 2


def test_a_cases_folder_that_is_not_there_is_a_usage_error(pytester):
    project(pytester, config=CONFIG.replace('"mycases"', '"mycasse"'))
    pytester.makepyfile(test_other="def test_x():\n    pass\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert re.search(
        r"pyproject\.toml: tool\.conformance\.cases: no such folder: .*/mycasse$",
        result.stderr.str(),
    )


def test_a_golden_that_is_a_folder_fails_its_golden_item_in_one_line(pytester):
    """The golden is refused by the bounded reader: that item fails, the checks still run."""
    project(pytester, alpha=ALPHA)
    run(pytester)
    golden = pytester.path / "expected" / "alpha" / "torch.json"
    golden.unlink()
    golden.mkdir()
    result = run(pytester)
    result.assert_outcomes(passed=3, failed=1)
    assert "IsADirectoryError" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [f"*golden alpha/torch: refused: {golden}: is a directory, expected a JSON file"]
    )


def test_a_golden_case_folder_that_is_a_file_is_named(pytester):
    project(pytester, alpha=ALPHA)
    (pytester.path / "expected").mkdir()
    (pytester.path / "expected" / "alpha").write_text("not a folder\n")
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=3)
    assert "File exists" not in result.stdout.str()
    result.stdout.fnmatch_lines([f"{pytester.path / 'expected' / 'alpha'}: is a file, not a "
                                 "folder"] * 3)  # fmt: skip


def test_a_stale_golden_that_is_a_link_is_reported_never_followed(pytester):
    project(pytester, alpha=ALPHA)
    run(pytester)
    target = pytester.path / "elsewhere"
    target.mkdir()
    (target / "torch.json").write_text("{}")
    (pytester.path / "expected" / "linked").symlink_to(target)
    for option in ((), ("--prune-stale",)):
        result = run(pytester, *option)
        result.assert_outcomes(passed=3, failed=1)
        result.stdout.fnmatch_lines(
            ["stale goldens: expected/linked (not pruned: is a symbolic link (never followed)) "
             "(no case file in mycases/); --allow-stale accepts them"]
        )  # fmt: skip
    assert (target / "torch.json").read_text() == "{}"
    assert (pytester.path / "expected" / "linked").is_symlink()


def test_prune_stale_leaves_a_folder_holding_other_files(pytester):
    stale = stale_golden(pytester)
    (stale / "notes.md").write_text("mine")
    result = run(pytester, "--prune-stale")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        ["stale goldens: expected/gone (not pruned: holds expected/gone/notes.md, which is not a "
         "golden file) (no case file in mycases/); --allow-stale accepts them"]
    )  # fmt: skip
    assert sorted(p.name for p in stale.iterdir()) == ["notes.md", "torch.json"]


BF16_FIXTURE_TEST = """
import torch


def test_weights(conformance):
    w = torch.tensor([1.0, -3.0, 256.0, 0.0], dtype=torch.bfloat16)
    conformance.check({{"w": w + torch.tensor([0.0, 0.0, {shift}, 0.0], dtype=torch.bfloat16)}})
"""


def test_the_fixture_keeps_torch_bfloat16_goldens(pytester):
    """conformance.check of a torch bfloat16 tensor: the golden names the dtype and its exact
    values, a rerun passes, and 1 ULP (2.0 at 256) is caught with its distance (the same
    environment's golden must be bit-identical)."""
    pytester.makepyfile(test_bf=BF16_FIXTURE_TEST.format(shift=0.0))
    golden = pytester.path / "test_bf" / "test_weights.json"
    run(pytester, "test_bf.py").assert_outcomes(failed=1)  # the golden is written
    assert '"w": {"dtype": "bfloat16", "shape": [4], "data": [1.0,-3.0,256.0,0.0]}' in (
        golden.read_text()
    )
    run(pytester, "test_bf.py").assert_outcomes(passed=1)
    pytester.makepyfile(test_bf=BF16_FIXTURE_TEST.format(shift=2.0))
    failed = run(pytester, "test_bf.py")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["E       w  * n=  4  max|diff|=2.00e+00  ulp=1"])


SUMMARY_FIXTURE_TEST = """
import numpy as np


def test_weights(conformance):
    w = np.linspace(-1, 1, 100_000, dtype=np.float32)
    w[7] = np.nextafter(w[7], np.float32(2)) if {shift} else w[7]
    conformance.check({{"loss": np.float32(0.5), "weights.w": w}}, summary=["weights.*"])
"""


def test_the_fixture_keeps_a_summary_of_keys_given_as_summary(pytester):
    """conformance.check(values, summary=[...]): the golden keeps the key's sha256 and
    statistics only, a rerun passes, and 1 ULP fails in the golden's own environment."""
    pytester.makepyfile(test_big=SUMMARY_FIXTURE_TEST.format(shift=False))
    golden = pytester.path / "test_big" / "test_weights.json"
    run(pytester, "test_big.py").assert_outcomes(failed=1)  # the golden is written
    assert sorted(p.name for p in golden.parent.iterdir()) == ["test_weights.json"]
    assert '"summary_only": true' in golden.read_text()
    run(pytester, "test_big.py").assert_outcomes(passed=1)
    pytester.makepyfile(test_big=SUMMARY_FIXTURE_TEST.format(shift=True))
    failed = run(pytester, "test_big.py")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*summary only (GOLDEN_SUMMARY) for weights.w: sha256 differs*"])
