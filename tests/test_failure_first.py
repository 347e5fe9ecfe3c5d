"""Case runs at the command line: one line per passing case, failures first (with their first
mismatched elements and, for a raising side, a traceback), an honest headline, stale goldens
that fail, -v / -q, colour only on a terminal, --version and the console script."""

import json
import os
import shlex
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import compare
from harness.report.colour import paint, use_colour

CASE = '''"""Synthetic case {name}."""
import numpy as np
from harness.case import agree


def torch_side():
    return {{"x": np.array({torch}, np.float32)}}


def engine_side():
    return {{"x": np.array({engine}, np.float32)}}


CHECKS = [agree("x")]
'''
RAISING = '''"""A side that raises inside a helper."""
import numpy as np
from harness.case import agree


def helper(x):
    return x.reshape(3, 3)


def torch_side():
    return {"x": helper(np.zeros(4))}


def engine_side():
    return {"x": np.zeros(4)}


CHECKS = [agree("x")]
'''
# float32 steps: 2**-22 in [2, 4), so 2.0000002 is one step (0.238 of the 1e-6 tolerance);
# 9.3e-10 against 0.0 is ~8e8 steps but far within atol; 3.0 + 4023 steps is a real failure.
ALPHA = {"torch": [1.0, 2.0], "engine": [1.0, 2.0000002]}
BRAVO = {"torch": [0.0, 3.0], "engine": [9.3e-10, 3.0]}
CHARLIE = {"torch": [3.0, 0.5], "engine": [3.000959157943725586, 0.5]}  # 3 + 4023 * 2**-22


def write_cases(folder: Path, **cases) -> None:
    folder.mkdir(exist_ok=True)
    for name, sides in cases.items():
        text = RAISING if sides is None else CASE.format(name=name, **sides)
        (folder / f"{name}.py").write_text(text)


@pytest.fixture
def project(tmp_path):
    """Folders of a run; ``run(*argv)`` is compare.py over them, returning (code, out, err)."""
    folders = [f"--cases-dir={tmp_path / 'cases'}", f"--golden-dir={tmp_path / 'golden'}",
               f"--out={tmp_path / 'out'}"]  # fmt: skip

    class Project:
        root = tmp_path
        cases = tmp_path / "cases"
        golden = tmp_path / "golden"
        argv = folders

        @staticmethod
        def run(capsys, *argv):
            code = compare.main([*folders, *argv])
            out, err = capsys.readouterr()
            return code, out, err

    return Project


def passing_project(project, capsys):
    write_cases(project.cases, alpha=ALPHA, bravo=BRAVO)
    assert project.run(capsys)[0] == 1  # the first run writes the goldens
    return project


def test_a_passing_run_prints_one_line_per_case_and_an_honest_summary(project, capsys):
    code, out, _ = passing_project(project, capsys).run(capsys)
    assert code == 0
    assert out.splitlines() == [
        "ok   alpha: 1 check, 2 goldens",
        "ok   bravo: 1 check, 2 goldens",
        "== summary: 2 cases, 2 checks (2 hold, 0 documented divergences), 4 goldens (4 ok)",
        "worst agree: 0.238x tol at alpha::agree:x:torch~engine x[1] (2.0 vs 2.0000002)",
        "max agree ulp: 1 at alpha::agree:x:torch~engine x[1] (2.0 vs 2.0000002)"
        " (over 3 of 4 float elements; 1 within atol of 0 or subnormal left out)",
        "OK",
    ]


def test_verbose_prints_every_table_and_quiet_only_the_summary(project, capsys):
    passing_project(project, capsys)
    _, out, _ = project.run(capsys, "-v")
    assert "=== alpha: Synthetic case alpha." in out.splitlines()
    assert "x                        n=  2  max|diff|=2.38e-07  ulp=1" in out.splitlines()
    assert "[ok  ] golden:torch: identical: bit-identical" in out.splitlines()
    _, quiet, _ = project.run(capsys, "-q")
    assert quiet.splitlines()[0].startswith("== summary: 2 cases")
    with pytest.raises(SystemExit) as exc:
        project.run(capsys, "-q", "-v")
    assert exc.value.code == 2


def test_a_failure_comes_first_and_the_headline_is_not_decided_near_zero(project, capsys):
    """The issue's case: a 9.3e-10 difference at 0.0 (8e8 ULP) and a real 4023-ULP failure."""
    passing_project(project, capsys)
    write_cases(project.cases, charlie=CHARLIE)
    code, out, _ = project.run(capsys, "--case", "bravo", "charlie")
    lines = out.splitlines()
    assert code == 1
    assert lines[:7] == [
        "=== charlie: Synthetic case charlie.",
        "[FAIL] agree:x:torch~engine: values disagree",
        "== torch vs engine (charlie)",
        "x                        n=  2  max|diff|=9.59e-04  ulp=4023  FAIL at [0]: torch=3.0"
        " engine=3.0009592 (4023 ulp, 1 mismatched)",
        "    at [0]: torch=3.0 engine=3.0009592 |diff|=9.59e-04 4023 ulp (959x tol)",
        "worst=9.59e-04 tol=1e-06 FAIL (1 of 1 keys)",
        "[FAIL] golden:torch: missing: golden missing; wrote "
        f"{project.golden / 'charlie' / 'torch.json'}",
    ]
    summary = next(lines[i + 1 :] for i, line in enumerate(lines) if line.startswith("== summ"))
    assert (
        summary[0]
        == "worst agree: 959x tol at charlie::agree:x:torch~engine x[0] (3.0 vs 3.0009592)"
    )
    assert summary[1].startswith("max agree ulp: 4023 at charlie::agree:x:torch~engine x[0]")
    assert summary[1].endswith("; 1 within atol of 0 or subnormal left out)")
    assert lines[-1] == "FAIL (1 of 2 cases)"


def test_failing_rows_show_five_elements_and_the_worst_by_ulp(project, capsys):
    write_cases(
        project.cases,
        many={"torch": [0.0] * 8, "engine": [1.0] * 8},
        apart={"torch": [1000.01, 0.0101], "engine": [1000.0, 0.01]},
    )
    _, out, _ = project.run(capsys, "--case", "many", "apart")
    lines = out.splitlines()
    assert sum(line.startswith("    at [") for line in lines if "torch=0.0 engine=1.0" in line) == 5
    assert "    ... and 3 more mismatched (-v or --all-mismatches shows every one)" in lines
    # The largest |diff| is at [0] (1000.01, 61 ULP of 6.1e-5); the most ULP at [1] (0.01).
    worst_ulp = [line for line in lines if line.startswith("    worst ulp away from 0 at [1]: ")]
    assert len(worst_ulp) == 1 and worst_ulp[0].endswith("; over all 2")
    _, every, _ = project.run(capsys, "--case", "many", "--all-mismatches")
    assert sum(line.startswith("    at [") for line in every.splitlines()) == 8


def test_a_raising_side_prints_its_traceback_in_text_json_and_html(project, capsys, tmp_path):
    write_cases(project.cases, delta=None)
    report, page = tmp_path / "r.json", tmp_path / "r.html"
    code, out, _ = project.run(capsys, f"--json={report}", f"--html={page}")
    assert code == 1
    path = project.cases / "delta.py"
    source = RAISING.splitlines()
    call = source.index('    return {"x": helper(np.zeros(4))}') + 1
    raise_line = source.index("    return x.reshape(3, 3)") + 1
    traceback = [
        "Traceback of torch_side, most recent call last:",
        f'  File "{path}", line {call}, in torch_side',
        '    return {"x": helper(np.zeros(4))}',
        f'  File "{path}", line {raise_line}, in helper',
        "    return x.reshape(3, 3)",
        "ValueError: cannot reshape array of size 4 into shape (3,3)",
    ]
    lines = out.splitlines()
    start = lines.index(traceback[0])
    assert lines[start : start + len(traceback)] == traceback
    raised = json.loads(report.read_text())["cases"][0]["raised"]
    assert [(f["function"], f["line"]) for f in raised["frames"]] == [
        ("torch_side", call),
        ("helper", raise_line),
    ]
    assert "Traceback of torch_side, most recent call last:" in page.read_text()


def test_stale_goldens_fail_unless_allowed_or_pruned(project, capsys):
    passing_project(project, capsys)
    (project.golden / "gone" / "torch.json").parent.mkdir()
    (project.golden / "gone" / "torch.json").write_text("{}")
    code, out, _ = project.run(capsys)
    assert code == 1
    assert out.splitlines()[-2:] == [
        f"FAIL stale golden: {project.golden / 'gone'} (no case file; --prune-stale deletes it,"
        " --allow-stale accepts it)",
        "FAIL (1 stale golden)",
    ]
    code, out, _ = project.run(capsys, "--allow-stale")
    assert code == 0 and out.splitlines()[-1] == "OK"
    code, out, _ = project.run(capsys, "--prune-stale")
    assert code == 0
    assert f"pruned stale golden file {project.golden / 'gone' / 'torch.json'}" in out
    assert not (project.golden / "gone").exists()
    with pytest.raises(SystemExit) as exc:
        project.run(capsys, "--allow-stale", "--prune-stale")
    assert exc.value.code == 2


def test_a_golden_mismatch_ends_with_the_command_that_accepts_it(project, capsys):
    passing_project(project, capsys)
    engine = project.golden / "alpha" / "engine.json"
    engine.write_text(engine.read_text().replace("2.000000238418579", "2.5"))
    code, out, _ = project.run(capsys)
    assert code == 1
    accept = [line for line in out.splitlines() if line.startswith("to accept this output")]
    command = shlex.join(["python", "compare.py", "--update-golden", "--case", "alpha",
                          *project.argv])  # fmt: skip
    assert accept == [f"to accept this output as the golden: {command}"]
    assert compare.main(shlex.split(command)[2:]) == 0  # what it says, minus `python compare.py`
    capsys.readouterr()
    assert project.run(capsys)[0] == 0


def test_colour_only_on_a_terminal_and_never_with_no_color():
    class Terminal:
        def isatty(self):
            return True

    assert use_colour(Terminal(), {}) is True
    assert use_colour(Terminal(), {"NO_COLOR": "1"}) is False
    assert use_colour(Terminal(), {"NO_COLOR": ""}) is True  # no-color.org: set and non-empty
    assert use_colour(object(), {}) is False
    assert paint("x FAIL at [1]") == "x \x1b[31;1mFAIL\x1b[0m at [1]"
    assert paint("ok   a: 1 check") == "\x1b[32mok\x1b[0m   a: 1 check"


def test_piped_output_has_no_colour(project, capsys):
    write_cases(project.cases, charlie=CHARLIE)
    _, out, _ = project.run(capsys)
    assert "\x1b[" not in out


def test_version_is_the_installed_package_version(capsys):
    with pytest.raises(SystemExit) as exc:
        compare.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"compare.py {version('conformance-harness')}\n"


def test_the_console_script_reads_tool_conformance_of_the_working_folder(tmp_path):
    script = Path(sys.executable).parent / "conformance"
    (tmp_path / "pyproject.toml").write_text(
        '[tool.conformance]\ncases = "checks"\ngolden = "expected"\n'
    )
    write_cases(tmp_path / "checks", alpha=ALPHA)
    env = {**os.environ, "NO_COLOR": "1"}
    run = [str(script), "-q"]
    first = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, env=env, check=False)
    assert first.returncode == 1 and "Traceback" not in first.stderr  # goldens were missing
    assert "[FAIL] golden:torch: missing: golden missing; wrote " in first.stdout
    assert sorted(p.name for p in (tmp_path / "expected" / "alpha").iterdir()) == [
        "engine.json",
        "torch.json",
    ]
    version_line = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert version_line.stdout == f"conformance {version('conformance-harness')}\n"
