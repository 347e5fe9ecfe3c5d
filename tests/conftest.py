"""Fixtures shared by the test modules of this folder."""

from pathlib import Path

import pytest


@pytest.fixture
def tree():
    """A folder's files as ``{relative path: bytes}``: two runs' outputs compare byte for byte."""

    def read(folder: Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*"))
            if p.is_file()
        }

    return read


@pytest.fixture(autouse=True)
def _engine_seeded():
    """Every test starts from the same engine generator state (inits, dropout masks,
    ParamIds): a test's draws do not depend on which tests ran before it in the process, so
    a pass or a failure repeats (pytest-randomly's rule, for the engine's own generator)."""
    from harness.engine import seed

    seed(0)
