"""Process start-up and exit of a case run: importing torch without paying Python's cyclic
garbage collector for it, and whether the process may fork its workers.

``import torch`` and ``torch._dynamo`` create a great many long-lived objects (modules,
functions, classes). With the collector on, the import triggers collection after collection
that walks them again and again, and the interpreter's final collection at exit walks them
once more. Neither frees anything: module contents live as long as the process. ``gc.freeze()``
(documented since Python 3.7) moves every tracked object to a permanent generation that
later collections skip; nothing in torch is patched and no computation changes, only when
the collector runs.

``torch._dynamo`` cannot be avoided by a run that builds a ``torch.optim`` optimizer: it is
imported in ``Optimizer.__init__`` (``add_param_group`` is wrapped in
``torch._disable_dynamo``, whose first call imports ``torch._dynamo``), again in
``zero_grad`` and in ``step`` (``_use_grad_for_differentiable`` imports it and calls
``torch._dynamo.graph_break()``), with no switch before the import: ``TORCHDYNAMO_DISABLE``
and ``torch.compiler.disable`` are read by ``torch._dynamo`` itself (torch 2.13,
``torch/optim/optimizer.py``, ``torch/_compile.py``). Nothing short of patching torch skips
it, and ``sympy`` comes with it (``torch.fx.experimental.symbolic_shapes``). A run whose
cases build no optimizer never imports it, so ``import_torch`` leaves it to the first
optimizer unless told otherwise; ``compare.py`` imports it once before forking its workers
(``harness.command``), so that no worker imports it again.

Where the time of ``make compare`` goes, and what it costs now, is measured by ``make bench
ARGS=benchmarks/bench_compare.py`` (medians there, never figures here).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from types import ModuleType


@contextlib.contextmanager
def imports_without_gc() -> Iterator[None]:
    """Run the block with the collector off, then freeze what exists and restore the collector.

    Meant for imports only: anything the block leaves behind is never collected afterwards.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


# This process's OS threads just after import_torch imported torch (None: it did not).
_THREADS_AT_IMPORT: int | None = None


def import_torch(*, dynamo: bool = False) -> ModuleType:
    """``import torch`` under ``imports_without_gc``; a no-op once torch is imported (so nothing
    created since is frozen). ``dynamo=True`` imports ``torch._dynamo`` too (now, or later if
    torch is already there): worth it only when optimizers are certain to follow, since
    otherwise it is never imported."""
    global _THREADS_AT_IMPORT
    if "torch" in sys.modules and (not dynamo or "torch._dynamo" in sys.modules):
        return sys.modules["torch"]
    fresh = "torch" not in sys.modules
    with imports_without_gc():
        import torch

        if dynamo:
            import torch._dynamo  # what the first optimizer would import
    if fresh:
        _THREADS_AT_IMPORT = os_threads()
    return torch


def os_threads() -> int | None:
    """The number of this process's OS threads (``/proc/self/task``; None where unknown)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def fork_is_safe() -> bool:
    """Whether forking this process now cannot copy a running thread pool into the child.

    True when ``import_torch`` imported torch in this process and no OS thread has started
    since: then no torch / OpenMP pool is running (torch starts its pool at the first parallel
    operation, not at import), and the threads there were at that import are the main thread
    and OpenBLAS's pool from ``import numpy``, which stops itself around a fork (OpenBLAS
    registers ``blas_thread_shutdown_`` with ``pthread_atfork``). False on systems without
    ``/proc/self/task``. Only a program's own entry point may act on it: it cannot see what a
    host process (pytest and its worker threads) expects of its threads.
    """
    return _THREADS_AT_IMPORT is not None and os_threads() == _THREADS_AT_IMPORT


def skip_final_collection() -> None:
    """Freeze everything just before the interpreter exits: its final collection then skips
    the objects that are about to be freed by the process ending anyway. Finalizers of objects
    caught in reference cycles then do not run, so call it last, from a program's entry point,
    once every file is written and closed (never from a library function or a test)."""
    gc.freeze()
