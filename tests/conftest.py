"""Fixtures shared by the test modules of this folder."""

import os
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


@pytest.fixture
def fdopen_reads(monkeypatch) -> list[int]:
    """The sizes asked of every `read` on a file `os.fdopen` opens from now on (how
    harness.bounded reads), in order: a test shows that a cap stops the reading."""
    asked: list[int] = []
    real_fdopen = os.fdopen

    def counting_fdopen(*args, **kwargs):
        f = real_fdopen(*args, **kwargs)
        real_read = f.read
        f.read = lambda n: asked.append(n) or real_read(n)
        return f

    monkeypatch.setattr(os, "fdopen", counting_fdopen)
    return asked


@pytest.fixture(autouse=True)
def _engine_seeded():
    """Every test starts from the same engine generator state (inits, dropout masks,
    ParamIds): a test's draws do not depend on which tests ran before it in the process, so
    a pass or a failure repeats (pytest-randomly's rule, for the engine's own generator)."""
    from harness.engine import seed

    seed(0)


@pytest.fixture(autouse=True)
def _pytester_writes_no_bytecode(request, monkeypatch):
    """`make` writes bytecode caches (Makefile); a pytester test rewrites its modules between
    runs, at times to the same size (`shift=0.0` -> `2.0`) within a second, and a cache keyed by
    the source's mtime in whole seconds and its size would then run the module as it was."""
    if "pytester" in request.fixturenames:
        monkeypatch.setattr("sys.dont_write_bytecode", True)
