"""The benchmark machinery itself: the interleaving order, the rounds budget, the targets table,
and the rule that a target is reported, never asserted (fast; runs with ``make bench``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import targets
from interleave import run_interleaved


class FakeBenchmark:
    """What ``run_interleaved`` uses of pytest-benchmark's fixture."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.extra_info: dict = {}
        self.rounds: int | None = None

    def pedantic(self, fn, rounds=1, iterations=1):
        self.rounds = rounds
        for _ in range(rounds):
            fn()


def logging_sides(log: list[str], names: str) -> dict:
    return {name: (lambda name=name: log.append(name) or name) for name in names}


def test_sides_alternate_order_every_round():
    log: list[str] = []
    bench = FakeBenchmark()
    timings = run_interleaved(
        bench, logging_sides(log, "ABC"), max_time=0.0, min_rounds=4, warmup_rounds=0
    )
    assert log == list("ABCCBAABCCBA")
    assert bench.rounds == timings.rounds == 4
    assert timings.results == {"A": "A", "B": "B", "C": "C"}
    assert set(bench.extra_info) == {"median A", "median B", "median C"}


def test_warmup_rounds_are_not_samples_and_the_budget_caps_rounds():
    log: list[str] = []
    timings = run_interleaved(
        FakeBenchmark(), logging_sides(log, "AB"), max_time=10.0, min_rounds=2, max_rounds=7
    )
    assert timings.rounds == 7  # the sides take no time: the cap decides
    assert len(log) == 2 * (7 + 2)  # plus two warm-up rounds


def test_disabled_benchmark_runs_one_round():
    log: list[str] = []
    run_interleaved(
        FakeBenchmark(enabled=False), logging_sides(log, "AB"), max_time=1.0, min_rounds=5
    )
    assert log == ["A", "B"]


def test_value_is_numerator_over_denominator_and_direction_decides():
    measured: dict = {}
    low = targets.record("sgd step tiny / numpy", {"engine": 3.0, "numpy": 1.0}, 9, into=measured)
    high = targets.record(
        "diff 1e7 wide: speed-up",
        {"assert_array_max_ulp": 50.0, "diff_arrays": 10.0},
        3,
        into=measured,
    )
    absolute = targets.record("diff 1e3: time per call", {"diff_arrays": 20e-6}, 5, into=measured)
    assert (low.value, high.value, absolute.value) == (3.0, 5.0, 20e-6)
    assert targets.BY_NAME["sgd step tiny / numpy"].met(low.value) is False  # 3 > 2
    assert targets.BY_NAME["diff 1e7 wide: speed-up"].met(high.value) is False  # 5 < 10
    assert targets.BY_NAME["diff 1e3: time per call"].met(absolute.value) is True


def test_summary_prints_met_missed_and_not_run():
    measured: dict = {}
    targets.record("sgd step tiny / numpy", {"engine": 3.0, "numpy": 1.0}, 9, into=measured)
    targets.record("json 1e6 / orjson", {"record write+read": 1.0, "orjson round trip": 1.0}, 2,
                   into=measured)  # fmt: skip
    lines = targets.summary_lines(measured, {"at end": (1.0, 2.0, 3.0)})
    by_name = {line.split("  ")[0]: line for line in lines}
    assert re.search(r"3x +<= 2x +missed", by_name["sgd step tiny / numpy"])
    assert re.search(r"1x +<= 3x +met", by_name["json 1e6 / orjson"])
    assert lines[-2].startswith("not run in this session: adam 20 steps / torch;")
    assert lines[-1].startswith("2 measured, 1 missed;") and lines[-1].endswith("1.00 2.00 3.00")


def test_unknown_target_is_an_error():
    with pytest.raises(KeyError):
        targets.record("no such target", {"engine": 1.0}, 1, into={})


def test_targets_are_complete_rows():
    assert len(targets.BY_NAME) == len(targets.TARGETS)
    for t in targets.TARGETS:
        assert t.measures and t.numerator and t.direction in ("<=", ">=")
        assert t.bound is None or t.bound > 0, t.name


def test_no_benchmark_asserts_a_target():
    """A missed target is reported in the table, never a failure (the CI hook's rule)."""
    pattern = re.compile(r"assert\s.*(ratio|speedup|speed_up|\.value\b|TARGETS|bound)")
    for path in sorted(Path(__file__).parent.glob("bench_*.py")):
        hits = [line for line in path.read_text().splitlines() if pattern.search(line)]
        assert not hits, (path.name, hits)
