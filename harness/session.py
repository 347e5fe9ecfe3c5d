"""Running cases end to end: run, check, compare with goldens; shared by compare.py and pytest.

``outcome_for`` caches one outcome per case and process, so the pytest items of one case (one
per check, one golden per side) run the experiment once.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import golden, report
from harness.case import (
    CASES_DIR,
    GOLDEN_DIR,
    OUT_DIR,
    SIDES,
    Agree,
    Case,
    CaseDefinitionError,
    CaseRun,
    Check,
    CheckResult,
    case_paths,
    discover,
    evaluate,
    run_case,
)
from harness.golden import GoldenResult

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


@dataclass
class CaseOutcome:
    run: CaseRun
    checks: list[CheckResult]
    goldens: dict[str, GoldenResult]

    @property
    def case(self) -> Case:
        return self.run.case

    @property
    def ok(self) -> bool:
        return (
            all(r.ok for r in self.checks)
            and all(g.ok for g in self.goldens.values())
            and not self.run.nondeterministic
        )

    def check_result(self, check: Check) -> CheckResult:
        for result in self.checks:
            if result.check is check:
                return result
        raise KeyError(check.label)


_CACHE: dict[tuple[str, bool, bool, Path, Path], CaseOutcome] = {}


def outcome_for(
    case: Case,
    *,
    update: bool = False,
    force: bool = False,
    golden_dir: Path = GOLDEN_DIR,
    out_dir: Path = OUT_DIR,
) -> CaseOutcome:
    key = (str(case.path), update, force, golden_dir, out_dir)
    if key not in _CACHE:
        _CACHE[key] = compute_outcome(
            case, update=update, force=force, golden_dir=golden_dir, out_dir=out_dir
        )
    return _CACHE[key]


def compute_outcome(
    case: Case,
    *,
    update: bool = False,
    force: bool = False,
    golden_dir: Path = GOLDEN_DIR,
    out_dir: Path = OUT_DIR,
) -> CaseOutcome:
    run = run_case(case, out_dir)
    checks = evaluate(run)
    agrees_hold = all(r.ok for r in checks if isinstance(r.check, Agree))
    goldens = {
        side: _golden_for(run, side, update, force, agrees_hold, golden_dir) for side in SIDES
    }
    return CaseOutcome(run, checks, goldens)


def _golden_for(
    run: CaseRun, side: str, update: bool, force: bool, agrees_hold: bool, golden_dir: Path
) -> GoldenResult:
    name = run.case.name
    if run.error:
        return GoldenResult(name, side, "not_run", False, run.error)
    if side in run.nondeterministic:
        message = (
            f"{side} side is non-deterministic: two runs in one process differ"
            " (not a conformance failure)"
        )
        return GoldenResult(
            name, side, "nondeterministic", False, message, run.nondeterministic[side]
        )
    text, values = run.texts[side], run.values[side]
    if not update:
        return golden.check_golden(run.case, side, text, values, golden_dir)
    if not agrees_hold and not force:
        message = f"refusing to bless {name}: its agree checks fail (fix them, or pass --force)"
        return GoldenResult(name, side, "refused", False, message)
    return golden.update_golden(run.case, side, text, values, golden_dir)


# ---------------------------------------------------------------------------------------------
# The command line: `python compare.py [--case NAME ...]`


@dataclass(frozen=True)
class Dirs:
    """Where a case run reads cases and writes ``out/`` and goldens (tests use temp folders)."""

    cases: Path = CASES_DIR
    golden: Path = GOLDEN_DIR
    out: Path = OUT_DIR

    @classmethod
    def from_args(cls, args: Any) -> Dirs:
        given = {
            "cases": getattr(args, "cases_dir", None),
            "golden": getattr(args, "golden_dir", None),
            "out": getattr(args, "out", None),
        }
        return cls(**{name: Path(value) for name, value in given.items() if value})


def select_shard(cases: Sequence[Case], shard: str | None) -> list[Case]:
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


def _summarize(name: str, update: bool, force: bool, dirs: Dirs = Dirs()) -> dict[str, Any]:
    """Worker entry: load one case by name (a Case holds functions: it is not picklable)."""
    (case,) = discover([name], dirs.cases)
    return _summarize_case(case, update, force, dirs)


def _summarize_case(case: Case, update: bool, force: bool, dirs: Dirs) -> dict[str, Any]:
    """Run one case; return picklable report data and its terminal text."""
    started = time.perf_counter()
    outcome = compute_outcome(
        case, update=update, force=force, golden_dir=dirs.golden, out_dir=dirs.out
    )
    data = report.case_data(outcome)
    data["seconds"] = time.perf_counter() - started
    data["text"] = report.render_case_data(data)
    return data


def main_run(case_names: Sequence[str], args: Any) -> int:
    """Run cases, print their reports and a verdict; write the requested report files."""
    dirs = Dirs.from_args(args)
    if not dirs.cases.is_dir():
        print(f"compare.py: error: {dirs.cases}: no such folder of case files", file=sys.stderr)
        return EXIT_USAGE
    try:
        cases = select_shard(discover(list(case_names), dirs.cases), getattr(args, "shard", None))
    except CaseDefinitionError as exc:
        print(f"compare.py: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    update, force = bool(getattr(args, "update_golden", False)), bool(getattr(args, "force", False))
    jobs = int(getattr(args, "jobs", 1) or 1)
    results = _run_all(cases, update, force, jobs, dirs)
    for data in results:
        print(data["text"])
    stale = golden.stale_goldens(dirs.golden, {p.stem for p in case_paths(dirs.cases)})
    summary = report.render_summary(results, stale)
    print(summary)
    report.write_requested(results, args)
    return EXIT_OK if all(d["ok"] for d in results) else EXIT_FAIL


def _worker_context() -> multiprocessing.context.BaseContext:
    """Workers forked from a clean server process, never from this one.

    Forking a process whose torch / OpenMP thread pools are running can deadlock the child
    (pytest, or a caller that ran cases first, may have started them). The fork server
    imports torch once, before any pool exists, so each worker still starts in milliseconds.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["harness.session", "torch"])
    return context


def _run_all(
    cases: list[Case], update: bool, force: bool, jobs: int, dirs: Dirs
) -> list[dict[str, Any]]:
    """Run the cases, in ``jobs`` worker processes when there is more than one.

    Workers never share a file: each case writes only ``out/<case>/`` and
    ``golden/<case>/``, every write is atomic (unique temporary file, then rename), and
    results come back in case order whatever order the workers finish in.
    """
    progress = report.Progress(len(cases), stream=sys.stderr)
    if jobs <= 1 or len(cases) <= 1:
        results = []
        for case in cases:  # already loaded: no second import of the case file
            results.append(_summarize_case(case, update, force, dirs))
            progress.advance(results[-1])
        return results
    names = [c.name for c in cases]
    by_name: dict[str, dict[str, Any]] = {}
    workers = min(jobs, len(names), os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=workers, mp_context=_worker_context()) as pool:
        futures = {pool.submit(_summarize, n, update, force, dirs): n for n in names}
        for future in as_completed(futures):
            data = future.result()
            by_name[futures[future]] = data
            progress.advance(data)
    return [by_name[n] for n in names]
