"""Interleaved timing: the implementations a benchmark compares take turns in one process.

One round calls every side once (``inner`` times each), in the given order on even rounds and
in reverse on odd ones (A B, B A, A B, ...), so a slow minute of a shared machine lands on all
sides alike and neither side always runs first, with a warm cache behind it. A target's ratio
is the ratio of the sides' medians over the same rounds.

The number of rounds follows pytest-benchmark's own options: as many as fit in
``--benchmark-max-time`` (estimated from the last warm-up round), at least
``--benchmark-min-rounds`` unless a benchmark lowers that floor for a slow subprocess, at most
``max_rounds``. The rounds run inside ``benchmark.pedantic``: pytest-benchmark's table shows
whole rounds (every side), its JSON also each side's median (``extra_info``).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Timings:
    """Seconds per call of each side, one sample per round, and each side's last result."""

    samples: dict[str, list[float]]
    results: dict[str, Any] = field(default_factory=dict)

    @property
    def rounds(self) -> int:
        return min(len(s) for s in self.samples.values())

    def medians(self) -> dict[str, float]:
        return {side: statistics.median(s) for side, s in self.samples.items()}


class Standalone:
    """What ``run_interleaved`` uses of pytest-benchmark's fixture, for a child process that
    times its sides outside pytest (e.g. under another CPU's NumPy dispatch)."""

    enabled = True

    def __init__(self) -> None:
        self.extra_info: dict[str, float] = {}

    def pedantic(self, fn: Callable[[], Any], rounds: int = 1, iterations: int = 1) -> None:
        for _ in range(rounds * iterations):
            fn()


def run_interleaved(
    benchmark: Any,
    sides: Mapping[str, Callable[[], Any]],
    *,
    max_time: float,
    min_rounds: int,
    max_rounds: int = 10_000,
    inner: int = 1,
    warmup_rounds: int = 2,
) -> Timings:
    """Time ``sides`` in alternating rounds; see the module docstring."""
    names = list(sides)
    timings = Timings({name: [] for name in names})

    def one_round() -> None:
        parity = len(timings.samples[names[0]]) % 2
        for name in reversed(names) if parity else names:
            fn = sides[name]
            start = time.perf_counter()
            for _ in range(inner):
                result = fn()
            timings.samples[name].append((time.perf_counter() - start) / inner)
            timings.results[name] = result

    if not benchmark.enabled:  # --benchmark-disable: one round as a smoke test
        benchmark.pedantic(one_round, rounds=1)
        return timings
    rounds = min_rounds
    if warmup_rounds:
        for _ in range(warmup_rounds):
            started = time.perf_counter()
            one_round()
        per_round = time.perf_counter() - started  # the last warm-up: first calls are slower
        for samples in timings.samples.values():
            samples.clear()
        rounds = max(min_rounds, min(max_rounds, math.ceil(max_time / per_round)))
    benchmark.pedantic(one_round, rounds=rounds, iterations=1)
    benchmark.extra_info.update({f"median {k}": v for k, v in timings.medians().items()})
    return timings
