"""The README's code and commands tell the truth."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


def test_readme_has_a_python_example():
    assert python_blocks()


def test_python_examples_run():
    for block in python_blocks():
        exec(compile(block, "README.md", "exec"), {})


def test_the_two_commands_are_make_targets():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("compare", "test", "golden", "report", "bench", "ops", "fuzz", "lint"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE), target
