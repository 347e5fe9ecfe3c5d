"""The AVX2 column of the targets table: every benchmark is measured again as on an AVX2 CPU.

Right after a benchmark records its targets, ``benchmarks/conftest.py`` runs the same test
(its node id) in a child pytest process whose environment holds ``targets.AVX2_ENV``, the AVX2
CPU that ``make emulated-cpus`` emulates (harness.numerics.EMULATED_CPUS["avx2"]): set before
the child imports numpy or torch, which read it once. The child has the parent's
``--benchmark-min-rounds`` and ``--benchmark-max-time``, interleaves its sides as the parent
does, and writes what it measured with ``--targets-json``; the parent records each target
under its ", AVX2" name, the child's note first saying what held there (numpy's AVX-512
kernels off, torch's CPU capability). The two columns of one target are thus measured one
right after the other, in one ``make bench`` run; each child pays a pytest start-up (a few
seconds, the end of the table says what the column cost). Memory benchmarks' fresh processes
and compare.py's runs inherit the environment. A child that fails (an assertion, a crash)
fails the parent's test.

A benchmark that measures its own AVX2 twin (bench_diff's speeds, issue 21) records both
names in the parent and is not run again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest
import targets

from harness import numerics

ROOT = Path(__file__).resolve().parents[1]
COLUMN_OPTION = "--bench-column"  # which column this process measures (add_options)
JSON_OPTION = "--targets-json"
TIMEOUT = 3600  # seconds for one child: the slowest test (every case, 4 rounds) takes minutes
TAIL = 3000  # characters of a failed child's output quoted in the parent's failure
CHILD_SECONDS: list[float] = []  # wall time of each child this process ran


def cost_line(run_seconds: float) -> str:
    """What the AVX2 column cost this run, for the end of the table ("" when no child ran)."""
    if not CHILD_SECONDS:
        return ""
    total = sum(CHILD_SECONDS)
    return (
        f"AVX2 column: {len(CHILD_SECONDS)} child processes, {total:.0f} s of this run's"
        f" {run_seconds:.0f} s ({total / run_seconds:.0%})."
    )


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("targets", "performance targets (benchmarks/targets.py)")
    group.addoption(
        COLUMN_OPTION,
        choices=("native", "avx2", "native-only"),
        default="native",
        help="the column this process measures; native also runs each benchmark again in an"
        " AVX2 child (benchmarks/columns.py), native-only does not (half the time)",
    )
    group.addoption(JSON_OPTION, default=None, help="write what was measured to this JSON file")


def parent_of_avx2(config: pytest.Config) -> bool:
    """Whether this run measures the native column with benchmarks on (so it runs children)."""
    session = getattr(config, "_benchmarksession", None)  # pytest-benchmark's
    enabled = session is not None and not session.disabled
    return enabled and config.getoption("bench_column") == "native"


def still_wanted(recorded: Iterable[str]) -> list[str]:
    """The native targets among ``recorded`` whose AVX2 twin was not recorded with them."""
    recorded = list(recorded)
    return [
        n for n in recorded if not n.endswith(targets.AVX2) and n + targets.AVX2 not in recorded
    ]


def child_command(nodeid: str, config: pytest.Config, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        nodeid,
        "-q",
        "-p",
        "no:xdist",
        "-p",
        "no:cacheprovider",
        "--benchmark-enable",
        "--numerics",
        "native",  # the emulation is what runs: a profile would pin other variables
        f"--benchmark-min-rounds={config.getoption('benchmark_min_rounds')}",
        f"--benchmark-max-time={config.getoption('benchmark_max_time')}",
        COLUMN_OPTION,
        "avx2",
        JSON_OPTION,
        str(out),
    ]


class ChildFailed(AssertionError):
    """The benchmark failed (or measured nothing) in its AVX2 child."""


# The thread variables as this process started, before conftest.py set them (set by then, or
# not, they decide how OpenBLAS starts: numpy is loaded before conftest.py is).
STARTED_WITH: dict[str, str | None] = {}


def child_env(
    now: Mapping[str, str], started_with: Mapping[str, str | None], cpu: Mapping[str, str]
) -> dict[str, str]:
    """The environment of a child: this process's as it started (``started_with`` restores
    what conftest.py changed since), then the emulated CPU's variables. So the two columns
    differ in the CPU alone: a child given OPENBLAS_NUM_THREADS=1 from its start would start
    OpenBLAS with one thread where the parent started it with several and limited it later."""
    env = dict(now)
    for key, value in started_with.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return {**env, **cpu}


def run_child(
    nodeid: str, config: pytest.Config, env: Mapping[str, str] = targets.AVX2_ENV
) -> dict[str, targets.Measurement]:
    """Run test ``nodeid`` in a child under ``env``; what it measured, by native name."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-avx2-") as tmp:
        out = Path(tmp) / "measured.json"
        proc = subprocess.run(
            child_command(nodeid, config, out),
            cwd=ROOT,
            env=child_env(os.environ, STARTED_WITH, env),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        CHILD_SECONDS.append(time.perf_counter() - started)
        if proc.returncode != 0 or not out.exists():
            output = (proc.stdout + proc.stderr)[-TAIL:]
            raise ChildFailed(f"{nodeid} as on an AVX2 CPU: exit {proc.returncode}\n{output}")
        measured, _ = targets.from_json(json.loads(out.read_text()))
    return measured


def record_avx2(nodeid: str, names: list[str], child: Mapping[str, targets.Measurement]) -> None:
    """The child's measurements of ``names`` into the AVX2 column."""
    absent = [n for n in names if n not in child]
    if absent:
        raise ChildFailed(f"{nodeid} as on an AVX2 CPU did not measure {absent}")
    for name in names:
        m = child[name]
        targets.record(name + targets.AVX2, m.medians, m.rounds, m.note)


def measure_avx2(nodeid: str, config: pytest.Config, recorded: Iterable[str]) -> None:
    """The AVX2 column of what test ``nodeid`` recorded natively (nothing if it has it)."""
    names = still_wanted(recorded)
    if names:
        record_avx2(nodeid, names, run_child(nodeid, config))


# ---- in the child ------------------------------------------------------------------------


def cpu_note(features: Mapping[str, bool] | None = None, capability: str | None = None) -> str:
    """``AVX-512 off, torch AVX2``: numpy's AVX-512 dispatch targets and torch's capability
    in this process (given: for a test; otherwise read, importing torch if need be)."""
    if features is None:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    if capability is None:
        import torch

        capability = str(torch.backends.cpu.get_cpu_capability())
    on = [t for t in numerics.AVX512 if features.get(t)]
    avx512 = f"AVX-512 on ({' '.join(on)})" if on else "AVX-512 off"
    return f"{avx512}, torch {capability}"


def mark_child(measured: dict[str, targets.Measurement], note: str) -> None:
    """Put the child's ``cpu_note`` first in the note of everything it measured."""
    for m in measured.values():
        m.note = f"{note}; {m.note}" if m.note else note
