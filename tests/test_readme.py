"""The README's code and commands tell the truth.

Every output block is tagged with what produces it (``<!-- output: COMMAND -->`` or
``<!-- output: the python block above -->``) and compared with a fresh run, so no example
output in the README is made up or stale. After an intended change, regenerate them:

    .venv/bin/python tests/test_readme.py --write
"""

import contextlib
import functools
import io
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README_PATH = ROOT / "README.md"
README = README_PATH.read_text(encoding="utf-8")
OUTPUT = re.compile(r"<!-- output: (?P<what>.*?) -->\n```text\n(?P<text>.*?)```", re.DOTALL)
PYTHON = re.compile(r"```python\n(.*?)```", re.DOTALL)
ABOVE = "the python block above"
# A golden records the CPU vendor it was written on (MKL's code follows it), so on the other
# vendor's CPU a bit-identical golden reads `equal_values` (same values, other file text). The
# README shows the output on the goldens' own vendor; `as_on_golden_vendor` maps back to it.
SAME_FILE = ": identical: bit-identical"
SAME_VALUES = ": equal_values: values bit-identical (file text differs)"


def python_blocks(text: str = README) -> list[str]:
    return PYTHON.findall(text)


def produce(what: str, before: str) -> str:
    """What the command (run in the repository root) or the last python block prints.

    ``python compare.py ...`` runs in this process (torch is imported once, not per command),
    from the repository root, with stdout captured (not a terminal: no colour).
    """
    out = io.StringIO()
    if what == ABOVE:
        with contextlib.redirect_stdout(out):
            exec(compile(python_blocks(before)[-1], "README.md", "exec"), {})
        return out.getvalue()
    argv = shlex.split(what)
    if argv[:2] == ["python", "compare.py"]:
        import compare

        cwd = os.getcwd()
        try:
            os.chdir(ROOT)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                compare.main(argv[2:])
        finally:
            os.chdir(cwd)
        return out.getvalue()
    if argv[0] == "python":
        argv[0] = sys.executable
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, check=False)
    return proc.stdout


@functools.cache  # every output block asks; the goldens do not change during a run
def golden_vendors(golden_dir: Path = ROOT / "golden") -> frozenset[str]:
    """The CPU vendors the goldens were written on (their side files' `numerics` records)."""
    found = set()
    for path in golden_dir.glob("*/*.json"):
        match = re.search(r'"cpu_vendor": "([^"]*)"', path.read_text(encoding="utf-8"))
        if match:
            found.add(match[1])
    return frozenset(found)


def as_on_golden_vendor(fresh: str) -> str:
    """`fresh` as the goldens' vendor prints it: this machine's vendor differs only in the
    golden lines, whose values are still compared bit for bit (`equal_values`)."""
    from harness.numerics import in_force

    vendors = golden_vendors()
    if len(vendors) != 1 or in_force().get("cpu_vendor") in vendors:
        return fresh
    return fresh.replace(SAME_VALUES, SAME_FILE)


def outputs(text: str = README) -> list[tuple[re.Match, str]]:
    return [
        (m, as_on_golden_vendor(produce(m["what"], text[: m.start()])))
        for m in OUTPUT.finditer(text)
    ]


def test_readme_has_a_python_example():
    assert python_blocks()


def test_python_examples_run():
    for block in python_blocks():
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(block, "README.md", "exec"), {})


def test_every_example_output_is_what_its_command_prints():
    found = outputs()
    assert len(found) >= 4
    for match, fresh in found:
        assert match["text"] == fresh, (
            f"README output of {match['what']!r} is stale; regenerate it with "
            "`.venv/bin/python tests/test_readme.py --write`"
        )


def test_every_block_that_looks_like_output_is_tagged():
    """A ```text block without a tag would be an example output that nothing checks."""
    untagged = [
        m.start()
        for m in re.finditer(r"```text\n", README)
        if not README[: m.start()].rstrip().endswith("-->")
    ]
    assert untagged == []


def test_no_reference_to_files_outside_the_repository():
    assert not re.search(r"(?<![\w.])\.\./|/work/|/tmp/|~/|file://", README)
    for target in re.findall(r"\]\((?!https?://|#)([^)]+)\)", README):
        assert (ROOT / target).exists(), target


def test_the_two_commands_are_make_targets():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("compare", "test", "golden", "report", "bench", "ops", "fuzz", "lint"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE), target


def test_the_pytest_table_is_the_one_the_example_project_runs_with():
    """The README's `[tool.pytest.ini_options]` (`pythonpath = ["."]` lets cases import the
    project's model code) is what `examples/porting/pyproject.toml` has, which
    tests/test_example_project.py runs."""
    blocks = re.findall(r"```toml\n(.*?)```", README, flags=re.DOTALL)
    tables = [tomllib.loads(b) for b in blocks if "[tool.pytest.ini_options]" in b]
    assert len(tables) == 1
    shown = tables[0]["tool"]["pytest"]["ini_options"]
    example = ROOT / "examples" / "porting" / "pyproject.toml"
    used = tomllib.loads(example.read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert shown["pythonpath"] == ["."]
    assert {key: used.get(key) for key in shown} == shown


def write() -> None:
    """Rewrite every tagged output block of README.md with what its command prints now."""
    text = README
    for match, fresh in reversed(outputs(text)):
        start, end = match.span("text")
        text = text[:start] + fresh + text[end:]
    README_PATH.write_text(text, encoding="utf-8")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    sys.path.insert(0, str(ROOT))
    from harness.project import enter_numerics

    enter_numerics([], ROOT)  # before numpy loads: the numerics the pytest comparison runs under
    write()
