"""examples/porting: a project of its own (pyproject.toml with [tool.conformance], two cases,
an assert_conforms test, a conformance-fixture test, goldens) run by pytest in a virtual
environment where only this package, torch and pytest are installed (``make example-venv``).

``make test`` sets EXAMPLE_VENV; without it (a bare pytest run) the example is skipped, with
it a missing environment is a failure.
"""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "porting"
VENV = os.environ.get("EXAMPLE_VENV")

pytestmark = pytest.mark.skipif(not VENV, reason="EXAMPLE_VENV unset: `make test` runs this")


def venv_python() -> Path:
    python = ROOT / VENV / "bin" / "python"
    assert python.exists(), f"{python}: missing; `make example-venv` creates it"
    return python


def run(*argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "EXAMPLE"))}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [str(venv_python()), *argv],
        capture_output=True,
        text=True,
        cwd=EXAMPLE,
        env={**env, "NO_COLOR": "1"},
        check=False,
    )


def test_the_example_project_passes_in_its_own_environment():
    proc = run("-m", "pytest", "-v")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    passed = {line.split(" PASSED")[0] for line in proc.stdout.splitlines() if " PASSED" in line}
    assert passed == {
        "cases/adam_steps.py::agree:*:torch~engine",
        "cases/adam_steps.py::golden:torch",
        "cases/adam_steps.py::golden:engine",
        "cases/linear_mse.py::agree:*:torch~engine",
        "cases/linear_mse.py::golden:torch",
        "cases/linear_mse.py::golden:engine",
        "cases::stale-goldens",
        "tests/test_port.py::test_forward_conforms",
        "tests/test_port.py::test_a_wrong_port_is_caught_with_the_element_that_differs",
        "tests/test_training.py::test_sgd_trajectory",
    }


def test_only_the_package_is_there_not_this_repository():
    """The plugin comes from the package's entry point; the repo's own modules are absent."""
    probe = (
        "import importlib.metadata as m, importlib.util as u;"
        "print(sorted(e.value for e in m.entry_points(group='pytest11')));"
        "print([n for n in ('compare', 'conftest', 'benchmarks') if u.find_spec(n)])"
    )
    proc = run("-c", probe)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["['harness.pytest_plugin']", "[]"]


def test_the_console_script_runs_the_example_cases():
    script = venv_python().parent / "conformance"
    proc = subprocess.run(
        [str(script), "-q"], capture_output=True, text=True, cwd=EXAMPLE, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == (
        "== summary: 2 cases, 2 checks (2 hold, 0 documented divergences), 4 goldens (4 ok)"
    )
