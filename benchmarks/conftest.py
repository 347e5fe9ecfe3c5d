"""One BLAS thread for every benchmark, the ``interleaved`` fixture, the AVX2 column (each
benchmark run again in a child as on an AVX2 CPU, ``benchmarks/columns.py``), and the targets
table printed at the end of the run (``benchmarks/table.py``): every measured target with its
value, bound and ``met`` / ``missed`` in both columns. Missing a target never fails the run.
``--targets-json PATH`` writes what was measured (``benchmarks/runs.py`` reads several runs).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import columns
import pytest
import table
import targets
from interleave import Timings, run_interleaved
from threadpoolctl import threadpool_limits

# Before any benchmark module imports torch or starts a child process (numpy, and OpenBLAS
# with it, is loaded already: threadpoolctl limits it). The AVX2 children start as this
# process started, without these (columns.child_env).
THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
columns.STARTED_WITH.update({key: os.environ.get(key) for key in THREADS})
for key in THREADS:
    os.environ.setdefault(key, "1")

STARTED = pytest.StashKey[float]()  # when the session started (perf_counter)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Pin BLAS (and torch, once imported) to one thread for every side alike."""
    with threadpool_limits(limits=1):
        yield


@pytest.fixture
def interleaved(benchmark, request):
    """``interleaved(target, sides, **options) -> Timings``: time ``sides`` (name -> callable)
    in alternating rounds and record the medians under ``target`` and the targets in ``also``
    (ratios of other sides of the same rounds). ``min_rounds`` defaults to
    ``--benchmark-min-rounds`` (a slow benchmark may set a lower floor of its own); the time
    budget is ``--benchmark-max-time``: raise it for more rounds, up to ``max_rounds``."""
    config = request.config
    default_min_rounds = config.getoption("benchmark_min_rounds")
    max_time = float(config.getoption("benchmark_max_time"))  # given as a decimal string

    def run(target: str, sides, *, also=(), min_rounds=None, note: str = "", **options):
        benchmark.group = target
        timings: Timings = run_interleaved(
            benchmark,
            sides,
            max_time=max_time,
            min_rounds=default_min_rounds if min_rounds is None else min_rounds,
            **options,
        )
        if benchmark.enabled:
            for name in (target, *also):
                targets.record(name, timings.medians(), timings.rounds, note)
        return timings

    return run


def pytest_addoption(parser):
    columns.add_options(parser)


def pytest_sessionstart(session):
    targets.note_load("at start")
    session.config.stash[STARTED] = time.perf_counter()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """After a benchmark that recorded targets: the same test in an AVX2 child."""
    before = set(targets.MEASURED)
    result = yield
    if columns.parent_of_avx2(item.config):
        recorded = [name for name in targets.MEASURED if name not in before]
        columns.measure_avx2(item.nodeid, item.config, recorded)
    if set(targets.MEASURED) != before:  # so far: a run stopped early still leaves its rows
        write_json(item.config, {**targets.LOAD, "so far": os.getloadavg()})
    return result


def write_json(config, load) -> None:
    path = config.getoption("targets_json")
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(targets.as_json(targets.MEASURED, load), indent=1) + "\n")


@pytest.hookimpl(trylast=True)  # after pytest-benchmark's own tables
def pytest_terminal_summary(terminalreporter):
    config = terminalreporter.config
    targets.note_load("at end")
    if config.getoption("bench_column") == "avx2":
        columns.mark_child(targets.MEASURED, columns.cpu_note())
    write_json(config, targets.LOAD)  # even when empty: a child that measured nothing says so
    if not targets.MEASURED:
        return
    write = terminalreporter.write_line
    terminalreporter.section("performance targets (benchmarks/targets.py)")
    for line in table.summary_lines():
        write(line)
    cost = columns.cost_line(time.perf_counter() - config.stash[STARTED])
    if cost:
        write(cost)
