"""Running both sides of an experiment under capture, in float32 and in float64, and judging
where they part (``harness.localise.verdict``).

The captured runs are runs of their own, beside the ones the case records: what a side
returns under capture is never written, so capture cannot change a side file or a golden.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from harness import record
from harness.case import Localise
from harness.localise.capture import Capture, engine_capture, torch_capture
from harness.localise.ops import localise_ops
from harness.localise.verdict import compare
from harness.pinning import FLOAT64, THREADS, pinned, side_dtype
from harness.results import Localisation

_CAPTURES = {"torch": torch_capture, "engine": engine_capture}


def capture_side(
    fn: Callable[..., Mapping[str, Any]],
    side: str,
    spec: Localise,
    dtype: str,
    threads: int = THREADS,
) -> tuple[dict[str, Any], Capture]:
    """Run ``fn(dtype=...)`` as the runner runs a side (pinned threads and seeds) under capture;
    its normalized values and what was captured."""
    with pinned(side, threads), _CAPTURES[side](spec) as capture:
        values = record.normalize(fn(dtype=side_dtype(side, dtype)))
    return values, capture


def localise_sides(
    torch_fn: Callable[..., Mapping[str, Any]],
    engine_fn: Callable[..., Mapping[str, Any]],
    spec: Localise,
    threads: int = THREADS,
    *,
    ops: bool = True,
) -> Localisation:
    """Both sides captured in float32 and in float64 (each side takes ``dtype=``), compared;
    with ``ops``, a first parting module output is looked into op by op (four more runs)."""
    runs = {
        (side, dtype): capture_side(fn, side, spec, dtype, threads)[1]
        for dtype in ("float32", FLOAT64)
        for side, fn in (("torch", torch_fn), ("engine", engine_fn))
    }
    found = compare(
        runs["torch", "float32"],
        runs["engine", "float32"],
        runs["torch", FLOAT64],
        runs["engine", FLOAT64],
    )
    first = found.first
    if not ops or first is None or first.phase != "forward":
        return found
    key = (first.step, first.phase, first.path, first.call)
    op = localise_ops(torch_fn, engine_fn, spec, key, first.engine_path, threads)
    return dataclasses.replace(found, op=op)
