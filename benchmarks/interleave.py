"""Interleaved timing: the implementations a benchmark compares take turns in one process.

One round calls every side once (``inner`` times each), so a slow minute of a shared machine
lands on all sides alike. The rounds' orders are a balanced Latin square (Williams' design,
``orders``): over a cycle every side runs first equally often and follows every other side
equally often, because the side before leaves its cache state behind. For two sides that is
A B, B A, ...; for more, a plain reversal is not enough: with engine, tape, torch, numpy the
tape always followed the engine or torch, and measured 4% slower than the engine in that order
and 13% faster in the order tape, engine, torch, numpy (medium MLP step, Intel Xeon VM). A
target's ratio is the ratio of the sides' medians over the same rounds.

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
    cycle = orders(names)

    def one_round() -> None:
        for name in cycle[len(timings.samples[names[0]]) % len(cycle)]:
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


def orders(names: list[str]) -> list[list[str]]:
    """Williams' balanced Latin square over ``names``: row i is ``0, 1, n-1, 2, n-2, ...``
    shifted by i (mod n); for an odd n the rows' reverses follow (2n rows), since n rows
    cannot balance who follows whom. In each cycle every ordered pair of sides is adjacent
    equally often."""
    n = len(names)
    base, low, high = [0], 1, n - 1
    while len(base) < n:
        base.append(low)
        low += 1
        if len(base) < n:
            base.append(high)
            high -= 1
    rows = [[names[(j + i) % n] for j in base] for i in range(n)]
    return rows if n % 2 == 0 or n == 1 else rows + [row[::-1] for row in rows]
