"""How a side runs: one BLAS and torch thread by default and fixed seeds, so its outputs do
not depend on the machine; and the dtype object a side receives for a dtype name. Shared by
the runner (``harness.runner``) and the localisation's extra runs (``harness.localise``)."""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

SEED = 0
THREADS = 1  # BLAS and torch threads while a side runs: outputs independent of the machine


@contextlib.contextmanager
def pinned(side: str, threads: int = THREADS) -> Iterator[None]:
    """``threads`` threads for BLAS and torch (one by default), and fixed seeds, so outputs do
    not depend on the machine. torch's threads are pinned for either side: an engine side may
    call torch too (to build the weights it imports), and torch's default pool is every core."""
    from threadpoolctl import threadpool_limits

    random.seed(SEED)
    np.random.seed(SEED)
    torch = sys.modules.get("torch")
    if side == "torch":
        import torch

        torch.manual_seed(SEED)
    else:
        from harness import engine

        engine.seed(SEED)
    previous = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads):
            yield
    finally:
        if torch is not None:
            torch.set_num_threads(previous)


FLOAT64 = "float64"


def side_dtype(side: str, name: str) -> Any:
    """The dtype object a side receives for a dtype name."""
    if side == "torch":
        import torch

        return getattr(torch, name)
    return name
