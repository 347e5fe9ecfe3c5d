"""Running many cases in one invocation: which cases (names, shards), in how many worker
processes, with a progress line per finished case; the results come back in case order.

Workers come from a fork server by default (safe in any caller). A program that has run no
computation yet (``compare.py``: only imports, see ``harness.startup.fork_is_safe``) passes
``fork=True`` instead: its workers are forked from it and inherit its imports and loaded cases,
so none pays for ``import torch`` (or ``torch._dynamo``) again. Either way the longest-looking
cases start first (``longest_first``) and the reports come back in case order.

Like the runner it returns results and never prints on its own: ``Progress`` writes to the
stream its caller gives it (``compare.py`` passes stderr).
"""

from __future__ import annotations

import dataclasses
import gc
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import prune, record
from harness.case import (
    CASES_DIR,
    GOLDEN_DIR,
    OUT_DIR,
    SIDES,
    Case,
    CaseDefinitionError,
    case_paths,
    discover,
)
from harness.mismatches import LIMIT
from harness.project import with_tolerances
from harness.results import CaseReport
from harness.runner import (
    THREADS,
    CaseRun,
    Float64Runs,
    add_float64,
    check_case,
    float64_runs,
    judge_case,
    run_case,
)
from harness.tolerances import Tolerance


@dataclass(frozen=True)
class Dirs:
    """Where a run reads cases and writes ``out/`` and goldens (tests use temp folders)."""

    cases: Path = CASES_DIR
    golden: Path = GOLDEN_DIR
    out: Path = OUT_DIR

    @classmethod
    def from_args(cls, args: Any, base: Dirs | None = None) -> Dirs:
        """The folders the options name, the others from ``base`` (default: the defaults)."""
        given = {
            "cases": getattr(args, "cases_dir", None),
            "golden": getattr(args, "golden_dir", None),
            "out": getattr(args, "out", None),
        }
        named = {name: Path(value) for name, value in given.items() if value}
        return dataclasses.replace(base or cls(), **named)


@dataclass(frozen=True)
class Settings:
    """How each case runs, beyond its folders (passed to the worker processes as is).

    ``threads``: BLAS and torch threads while a side runs; ``tolerances``: the project's
    overrides, after each case's own; ``limit``: mismatched elements kept per failing row;
    ``repeat``: each side runs twice, and a side that disagrees with itself is reported
    ``nondeterministic`` (False: once, nothing to catch that with).
    """

    update: bool = False
    force: bool = False
    threads: int = THREADS
    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    limit: int | None = LIMIT
    repeat: bool = True


def select_cases(names: Sequence[str], dirs: Dirs, shard: str | None = None) -> list[Case]:
    """The named cases (all when none), then the shard's slice; CaseDefinitionError if bad."""
    return select_shard(discover(list(names), dirs.cases), shard)


def select_shard(cases: Sequence[Any], shard: str | None) -> list[Any]:
    """``K/N``: the K-th of N interleaved slices (1-based) of the cases in name order.

    Interleaving spreads neighbouring (often similarly slow) cases over the shards; the slice
    depends only on the sorted case names, so every machine of a CI matrix agrees on it.
    """
    if shard is None:
        return list(cases)
    k, n = parse_shard(shard)
    return [c for i, c in enumerate(cases) if i % n == k - 1]


def parse_shard(shard: str) -> tuple[int, int]:
    parts = shard.split("/")
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        raise CaseDefinitionError(
            f"--shard {shard!r}: expected K/N with whole numbers, for example 1/4"
        )
    k, n = int(parts[0]), int(parts[1])
    if not 1 <= k <= n:
        raise CaseDefinitionError(f"--shard {shard!r}: K must be between 1 and N (1 <= K <= N)")
    return k, n


def stale_goldens(dirs: Dirs = Dirs()) -> prune.Scan:
    """The golden folders no case file is named after (``harness.prune.scan``)."""
    return prune.scan(dirs.golden, {p.stem for p in case_paths(dirs.cases)}, SIDES)


def run_cases(
    cases: Sequence[Case],
    *,
    update: bool = False,
    force: bool = False,
    jobs: int = 1,
    dirs: Dirs = Dirs(),
    on_done: Callable[[CaseReport], None] | None = None,
    threads: int = THREADS,
    tolerances: Mapping[str, Tolerance] | None = None,
    limit: int | None = LIMIT,
    fork: bool = False,
    repeat: bool = True,
) -> list[CaseReport]:
    """Run the cases, in ``jobs`` worker processes when there is more than one.

    ``on_done`` is called with each report as its case finishes (finish order). Workers never
    share a file: each case writes only ``out/<case>/`` and ``golden/<case>/``, every write is
    atomic (unique temporary file, then rename), and the reports come back in case order
    whatever order the workers finish in. ``threads``, ``tolerances``, ``limit`` and
    ``repeat``: see ``Settings``. ``fork``: fork the workers from this process (only when
    ``harness.startup.fork_is_safe()``), else start them from a fork server.
    """
    settings = Settings(update, force, threads, dict(tolerances or {}), limit, repeat)
    done = on_done or (lambda report: None)
    if not parallel(cases, jobs):
        reports = []
        for case in cases:  # already loaded: no second import of the case file
            reports.append(_check(case, settings, dirs))
            done(reports[-1])
        return reports
    by_name: dict[str, CaseReport] = {}
    parts = _Parts({c.name: c for c in cases}, settings, dirs)
    tasks = [(c.name, part) for c in longest_first(cases, dirs) for part in _parts_of(c)]
    workers = min(jobs, len(tasks), os.cpu_count() or 1)
    context = _forked(cases) if fork else _worker_context()
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = {pool.submit(_TASKS[p], n, settings, dirs): (n, p) for n, p in tasks}
            for future in as_completed(futures):
                name, part = futures[future]
                report = parts.add(name, part, future.result())
                if report is not None:
                    by_name[name] = report
                    done(report)
    finally:
        _INHERITED.clear()
    return [by_name[c.name] for c in cases]


def parallel(cases: Sequence[Case], jobs: int) -> bool:
    """Whether ``run_cases`` uses worker processes: more than one job and more than one task
    (a case, or the float32 and the float64 half of a case with float64 reruns)."""
    return jobs > 1 and (len(cases) > 1 or any(c.needs_float64 for c in cases))


def longest_first(cases: Sequence[Case], dirs: Dirs = Dirs()) -> list[Case]:
    """The order in which workers take the cases: the longest-looking first, so that a long
    case does not start last while the other workers sit idle (the reports keep case order).

    Nothing is timed: a case's goldens measure how much it records, and a case with float64
    reruns (``needs_float64``) runs each side four times instead of twice. A case without
    goldens yet counts as empty; ties keep name order.
    """

    def weight(case: Case) -> int:
        folder = dirs.golden / case.name
        size = sum(p.stat().st_size for p in folder.glob("*.json")) if folder.is_dir() else 0
        return size * (2 if case.needs_float64 else 1)

    return sorted(cases, key=weight, reverse=True)


# ---------------------------------------------------------------------------------------------
# Worker tasks. A case without float64 reruns is one task (``check_by_name``). A case with them
# is two, which two workers can run at once: its float32 runs (``run_by_name``: out/ written,
# the reruns compared) and its float64 reruns (``float64_by_name``: run, not yet written); the
# parent then writes the float64 files, evaluates the checks and judges the goldens
# (``_Parts``), as ``check_case`` does in one process. Both halves run with the seeds and
# threads pinned per side run, so where they run does not change a value.

WHOLE, FLOAT32, FLOAT64 = "whole", "float32", "float64"

# The cases of a forked run, by name: a forked worker inherits them (a Case holds functions).
_INHERITED: dict[str, Case] = {}


def check_by_name(name: str, settings: Settings = Settings(), dirs: Dirs = Dirs()) -> CaseReport:
    """Worker entry: load one case by name (a Case holds functions: it is not picklable)."""
    return _check(_case_named(name, dirs), settings, dirs)


def run_by_name(name: str, settings: Settings, dirs: Dirs) -> tuple[CaseRun, float]:
    """Worker entry: the float32 runs of a case (no float64 reruns) and when they started;
    the run comes back without its case (functions do not pickle)."""
    started = time.perf_counter()
    case = _case_named(name, dirs)
    run = run_case(case, dirs.out, threads=settings.threads, float64=False, repeat=settings.repeat)
    return dataclasses.replace(run, case=None), started


def float64_by_name(name: str, settings: Settings, dirs: Dirs) -> tuple[Float64Runs, float]:
    """Worker entry: the float64 reruns of a case and when they started."""
    started = time.perf_counter()
    return float64_runs(_case_named(name, dirs), settings.threads, settings.repeat), started


_TASKS = {WHOLE: check_by_name, FLOAT32: run_by_name, FLOAT64: float64_by_name}


def _parts_of(case: Case) -> tuple[str, ...]:
    return (FLOAT32, FLOAT64) if case.needs_float64 else (WHOLE,)


def _case_named(name: str, dirs: Dirs) -> Case:
    """The case as a forked worker inherited it, else loaded from its file."""
    if name in _INHERITED:
        return _INHERITED[name]
    (case,) = discover([name], dirs.cases)
    return case


@dataclass
class _Parts:
    """The halves of split cases as they come back; a case's report once it is complete."""

    cases: Mapping[str, Case]
    settings: Settings
    dirs: Dirs
    halves: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, name: str, part: str, result: Any) -> CaseReport | None:
        if part == WHOLE:
            return result
        halves = self.halves.setdefault(name, {})
        halves[part] = result
        if len(halves) < 2:
            return None
        del self.halves[name]  # a case named twice on the command line pairs up twice
        (run, started32), (found, started64) = halves[FLOAT32], halves[FLOAT64]
        case = with_tolerances(self.cases[name], self.settings.tolerances)
        run = dataclasses.replace(run, case=case)
        add_float64(
            run, found, self.dirs.out / name, record.SIDECAR_THRESHOLD, self.settings.threads
        )
        return judge_case(
            run,
            update=self.settings.update,
            force=self.settings.force,
            golden_dir=self.dirs.golden,
            limit=self.settings.limit,
            started=min(started32, started64),
            threads=self.settings.threads,
        )


def _check(case: Case, settings: Settings, dirs: Dirs) -> CaseReport:
    return check_case(
        with_tolerances(case, settings.tolerances),
        update=settings.update,
        force=settings.force,
        golden_dir=dirs.golden,
        out_dir=dirs.out,
        threads=settings.threads,
        limit=settings.limit,
        repeat=settings.repeat,
    )


def _worker_context() -> multiprocessing.context.BaseContext:
    """Workers forked from a clean server process, never from this one.

    Forking a process whose torch / OpenMP thread pools are running can deadlock the child
    (pytest, or a caller that ran cases first, may have started them). The fork server
    imports torch once, before any pool exists, so each worker still starts in milliseconds.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["harness.session", "torch"])
    return context


def _forked(cases: Sequence[Case]) -> multiprocessing.context.BaseContext:
    """Workers forked from this process, with ``cases`` for them to inherit.

    A fork copies the process as it is: its imports (torch, ``torch._dynamo``, the engine),
    the loaded case files and the frozen garbage-collector generation, at no import cost.
    Safe only before any torch or OpenMP thread pool runs (see ``_worker_context``), so the
    caller checks ``harness.startup.fork_is_safe()`` first. ``gc.freeze()`` right before the
    fork, as the ``gc`` documentation advises for a process that forks without exec: the
    workers' collections then skip (and do not write to, so do not copy) the parent's objects.
    """
    _INHERITED.update((c.name, c) for c in cases)
    gc.freeze()
    return multiprocessing.get_context("fork")


class Progress:
    """One line per finished case on ``stream``: running count, case verdict, elapsed time.

    On an interactive terminal the line is redrawn in place (with a bar), so the progress
    does not push the report off the screen; in logs and pipes every line stays.
    """

    def __init__(self, total: int, stream: Any = None) -> None:
        self.total, self.done = total, 0
        self.stream = stream if stream is not None else sys.stderr
        self._clock = time.perf_counter
        self.started = self._clock()

    def advance(self, report: CaseReport) -> None:
        self.done += 1
        elapsed = self._clock() - self.started
        verdict = "ok" if report.ok else "FAIL"
        took = f" {report.seconds:.2f}s" if report.seconds is not None else ""
        width = len(str(self.total))
        line = (
            f"[{self.done:{width}d}/{self.total}] {report.case} {verdict}"
            f"{took} (elapsed {elapsed:.1f}s)"
        )
        if self._interactive():
            end = "\n" if self.done >= self.total else ""
            self.stream.write(f"\r\x1b[K{self._bar()}{line}{end}")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def _interactive(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())

    def _bar(self, width: int = 20) -> str:
        """``#####........... ``, drawn on an interactive terminal only."""
        filled = width * self.done // max(self.total, 1)
        return "#" * filled + "." * (width - filled) + " "
