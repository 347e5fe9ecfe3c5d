"""harness.startup: torch imported with the garbage collector frozen, collector state restored."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from harness import startup

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import gc, sys
from harness import startup
torch = startup.import_torch()
print(gc.isenabled(), gc.get_freeze_count() > 10_000, "torch._dynamo" in sys.modules)
frozen = gc.get_freeze_count()
assert startup.import_torch() is torch and gc.get_freeze_count() == frozen  # no second freeze
print(float(torch.ones(3).sum()))
startup.skip_final_collection()
"""


def test_import_torch_in_a_fresh_process():
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    # the collector is back on, torch's objects are frozen, dynamo is left to the optimizer
    assert proc.stdout.split() == ["True", "True", "False", "3.0"]


@pytest.fixture
def unfrozen():
    """Undo the freeze afterwards: this test process keeps collecting its own garbage."""
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_state_is_restored_even_when_the_block_raises(unfrozen, enabled):
    (gc.enable if enabled else gc.disable)()
    with pytest.raises(ImportError), startup.imports_without_gc():
        assert not gc.isenabled()
        import harness.no_such_module  # noqa: F401
    assert gc.isenabled() is enabled
    assert gc.get_freeze_count() > 0


_FORK_PROBE = """
import sys
from harness import startup
before = startup.fork_is_safe()
torch = startup.import_torch()
imported = startup.fork_is_safe()
torch.set_num_threads(2)
torch.ones(1 << 22).add(1).sum()  # large enough to start torch's pool of threads
print(before, imported, startup.fork_is_safe())
startup.skip_final_collection()
"""


@pytest.mark.skipif(startup.os_threads() is None, reason="no /proc/self/task")
def test_fork_is_safe_until_a_thread_pool_starts():
    proc = subprocess.run(
        [sys.executable, "-c", _FORK_PROBE], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    # not before torch is imported here, then yes, then no once torch's pool runs
    assert proc.stdout.split() == ["False", "True", "False"]


def test_fork_is_never_safe_where_torch_was_imported_by_someone_else():
    """Who imported torch first may have started anything since: only import_torch knows."""
    probe = "import torch\nfrom harness import startup\nstartup.import_torch()\n"
    probe += "print(startup.fork_is_safe())"
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False"]
