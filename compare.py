"""Compare two side files, or run the cases: ``python compare.py`` is the ``conformance``
command (``harness.command``) reading this repository's ``pyproject.toml``.

    python compare.py A.json B.json [--atol X] [--rtol X] [--ulps N] [--keys GLOB] ...
    python compare.py [--case NAME ...] [--jobs N] [--update-golden [--force]] [-v | -q] ...

Exit codes: 0 everything holds, 1 a check failed, 2 bad usage or unreadable input.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from harness import command, startup

PYPROJECT = Path(__file__).resolve().parent / "pyproject.toml"


def main(argv: Sequence[str] | None = None, *, program: bool = False) -> int:
    """``program``: see ``harness.command.main`` (True only when run as a script)."""
    return command.main(argv, prog="compare.py", project=PYPROJECT, program=program)


if __name__ == "__main__":
    code = main(program=True)
    startup.skip_final_collection()  # the process ends here: its last collection frees nothing
    sys.exit(code)
