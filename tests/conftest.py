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
