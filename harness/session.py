"""Running cases end to end: run, check, compare with goldens; shared by compare.py and pytest.

``outcome_for`` caches one outcome per case and process, so the pytest items of one case (one
per check, one golden per side) run the experiment once.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import golden, report
from harness.case import (
    GOLDEN_DIR,
    OUT_DIR,
    SIDES,
    Agree,
    Case,
    CaseDefinitionError,
    CaseRun,
    Check,
    CheckResult,
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


_CACHE: dict[tuple[str, bool, bool], CaseOutcome] = {}


def outcome_for(
    case: Case,
    *,
    update: bool = False,
    force: bool = False,
    golden_dir: Path = GOLDEN_DIR,
    out_dir: Path = OUT_DIR,
) -> CaseOutcome:
    key = (str(case.path), update, force)
    if key not in _CACHE:
        _CACHE[key] = compute_outcome(case, update=update, force=force, golden_dir=golden_dir, out_dir=out_dir)
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
    goldens = {side: _golden_for(run, side, update, force, agrees_hold, golden_dir) for side in SIDES}
    return CaseOutcome(run, checks, goldens)


def _golden_for(run: CaseRun, side: str, update: bool, force: bool, agrees_hold: bool, golden_dir: Path) -> GoldenResult:
    name = run.case.name
    if run.error:
        return GoldenResult(name, side, "not_run", False, run.error)
    if side in run.nondeterministic:
        message = f"{side} side is non-deterministic: two runs in one process differ (not a conformance failure)"
        return GoldenResult(name, side, "nondeterministic", False, message, run.nondeterministic[side])
    text, values = run.texts[side], run.values[side]
    if not update:
        return golden.check_golden(run.case, side, text, values, golden_dir)
    if not agrees_hold and not force:
        message = f"refusing to bless {name}: its agree checks fail (fix them, or pass --force)"
        return GoldenResult(name, side, "refused", False, message)
    return golden.update_golden(run.case, side, text, values, golden_dir)


# ---------------------------------------------------------------------------------------------
# The command line: `python compare.py [--case NAME ...]`


def select_shard(cases: Sequence[Case], shard: str | None) -> list[Case]:
    """``K/N``: the K-th of N interleaved slices (1-based), stable across machines."""
    if not shard:
        return list(cases)
    k, n = parse_shard(shard)
    return [c for i, c in enumerate(cases) if i % n == k - 1]


def parse_shard(shard: str) -> tuple[int, int]:
    try:
        k, n = (int(part) for part in shard.split("/"))
    except ValueError:
        raise CaseDefinitionError(f"--shard {shard!r}: expected K/N, for example 1/4") from None
    if not 1 <= k <= n:
        raise CaseDefinitionError(f"--shard {shard!r}: K must be between 1 and N")
    return k, n


def _summarize(name: str, update: bool, force: bool) -> dict[str, Any]:
    """Worker entry: run one case by name; return picklable report data and text."""
    (case,) = discover([name])
    started = time.perf_counter()
    outcome = compute_outcome(case, update=update, force=force)
    data = report.case_data(outcome)
    data["seconds"] = time.perf_counter() - started
    data["text"] = report.render_case(outcome)
    return data


def main_run(case_names: Sequence[str], args: Any) -> int:
    """Run cases, print their reports and a verdict; write the requested report files."""
    try:
        cases = select_shard(discover(list(case_names)), getattr(args, "shard", None))
    except CaseDefinitionError as exc:
        print(f"compare.py: {exc}", file=sys.stderr)
        return EXIT_USAGE
    update, force = bool(getattr(args, "update_golden", False)), bool(getattr(args, "force", False))
    results = _run_all([c.name for c in cases], update, force, int(getattr(args, "jobs", 1) or 1))
    for data in results:
        print(data["text"])
    stale = golden.stale_goldens(GOLDEN_DIR, {p.stem for p in _all_case_paths()})
    summary = report.render_summary(results, stale)
    print(summary)
    report.write_requested(results, args)
    return EXIT_OK if all(d["ok"] for d in results) else EXIT_FAIL


def _all_case_paths() -> list[Path]:
    from harness.case import case_paths

    return case_paths()


def _run_all(names: list[str], update: bool, force: bool, jobs: int) -> list[dict[str, Any]]:
    progress = report.Progress(len(names), stream=sys.stderr)
    if jobs <= 1 or len(names) <= 1:
        results = []
        for name in names:
            results.append(_summarize(name, update, force))
            progress.advance(results[-1])
        return results
    by_name: dict[str, dict[str, Any]] = {}
    workers = min(jobs, len(names), os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_summarize, n, update, force): n for n in names}
        from concurrent.futures import as_completed

        for future in as_completed(futures):
            data = future.result()
            by_name[futures[future]] = data
            progress.advance(data)
    return [by_name[n] for n in names]
