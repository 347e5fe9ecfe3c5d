"""Terminal text: the study-style table of a Diff, and the report of a case run.

The text is an API (tests pin it to the letter), so change it deliberately:

    == torch vs engine (train_step)
    logits                   n= 12  max|diff|=1.49e-08  ulp=1
    grads.fc1.weight         n= 32  max|diff|=3.73e-09  ulp=2
    worst=1.19e-07 tol=1e-06 OK
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.diff import Diff, TensorDiff
from harness.report.cells import (
    CHECK_WORDS,
    DIVERGENCE_WORDS,
    UPDATE_WORDS,
    Words,
    format_index,
    format_value,
    header,
    max_abs_text,
    mismatch_details,
    structural_problem,
    verdict,
)
from harness.report.trajectory import trajectory_line
from harness.results import CaseReport, CheckKind, CheckReport, GoldenReport, GoldenStatus

MIN_NAME_WIDTH = 24

# ---------------------------------------------------------------------------------------------
# One Diff


def render_text(diff: Diff, divergence: bool = False, *, words: Words | None = None) -> str:
    """The study-style table: header, one row per key, verdict line (no trailing newline).

    ``divergence``: the table of a ``differ`` check; rows say ``DIFF`` where they would say
    ``FAIL``, and the verdict reads as the documented outcome. ``words`` sets another reading
    (``UPDATE_WORDS`` for a rewritten golden).
    """
    words = words or (DIVERGENCE_WORDS if divergence else CHECK_WORDS)
    width = max([MIN_NAME_WIDTH, *(len(row.key) for row in diff.rows)])
    lines = [f"== {header(diff)}"]
    lines += [_text_row(row, width, diff.labels, words.row) for row in diff.rows]
    lines.append(verdict(diff, words=words))
    return "\n".join(line.rstrip() for line in lines)


def _text_row(row: TensorDiff, width: int, labels: tuple[str, str], word: str = "FAIL") -> str:
    name = f"{row.key:<{width}} "
    problem = structural_problem(row, labels)
    if problem is not None:
        return name + f"{word} " + problem
    if row.kind == "value":
        return name + _value_cells(row, labels, word)
    return name + _tensor_cells(row, labels, word)


def _tensor_cells(row: TensorDiff, labels: tuple[str, str], word: str = "FAIL") -> str:
    text = f"n={row.n:3d}  max|diff|={max_abs_text(row)}"
    if row.max_ulp is not None:
        text += f"  ulp={row.max_ulp}"
    if row.matched_nans:
        text += f"  nan={row.matched_nans}"
    if row.ok:
        return text
    la, lb = labels
    a = format_value(row.a_worst, row.dtype_a)
    b = format_value(row.b_worst, row.dtype_b)
    where = format_index(row.worst_index)
    return text + f"  {word} at {where}: {la}={a} {lb}={b} ({mismatch_details(row)})"


def _value_cells(row: TensorDiff, labels: tuple[str, str], word: str = "FAIL") -> str:
    la, lb = labels
    a = format_value(row.a_worst, row.dtype_a)
    b = format_value(row.b_worst, row.dtype_b)
    text = f"value  {la}={a} {lb}={b}"
    if row.ok:
        return text
    if row.max_abs is None:
        return text + f"  {word} (not equal)"
    detail = f"|diff|={max_abs_text(row)}"
    if row.worst_ulp is not None:
        detail += f", {row.worst_ulp} ulp"
    return text + f"  {word} ({detail})"


# ---------------------------------------------------------------------------------------------
# Case runs: every check with its table, then the goldens; the summary over all cases


def render_check(case_name: str, check: CheckReport) -> str:
    """One check's verdict line, then its table (pytest's failure message)."""
    line = f"{case_name}: {check.label}: {'ok' if check.ok else 'FAIL'}: {check.message}"
    if check.documented_by:
        line += f" (documented: {check.documented_by})"
    if check.trajectory is not None:
        line += f"\n{trajectory_line(check.trajectory)}"
    table = _check_table(check)
    return line + (f"\n{table}" if table else "")


def _check_table(check: CheckReport) -> str:
    """A check's table; a ``differ`` check's reads as the documented outcome."""
    if check.diff is None:
        return ""
    return render_text(check.diff, divergence=check.kind == CheckKind.DIFFER)


def render_golden(golden: GoldenReport) -> str:
    """``golden case/side: status: message``, plus the table when values changed."""
    line = f"golden {golden.case}/{golden.side}: {golden.status}: {golden.message}"
    show = _golden_table(golden)
    return line + (f"\n{show}" if show else "")


def _golden_table(golden: GoldenReport) -> str:
    """The table of a golden comparison worth showing (it failed, or an update changed it)."""
    updated = golden.status == GoldenStatus.UPDATED
    if golden.diff is None or (golden.ok and not updated):
        return ""
    return render_text(golden.diff, words=UPDATE_WORDS if updated else None)


def render_case(report: CaseReport) -> str:
    """The terminal report of one case: every check with its table, then the goldens."""
    doc = report.doc.strip().splitlines()
    lines = [f"=== {report.case}" + (f": {doc[0]}" if doc else "")]
    if report.error:
        lines.append(f"FAIL: {report.error}")
    for check in report.checks:
        extra = f" (documented: {check.documented_by})" if check.documented_by else ""
        lines.append(f"[{_mark(check.ok)}] {check.label}: {check.message}{extra}")
        if check.trajectory is not None:
            lines.append(f"       {trajectory_line(check.trajectory)}")
        table = _check_table(check)
        lines += [table] if table else []
    for golden in report.goldens.values():
        lines.append(
            f"[{_mark(golden.ok)}] golden:{golden.side}: {golden.status}: {golden.message}"
        )
        table = _golden_table(golden)
        lines += [table] if table else []
    lines.append(f"{report.case}: {'OK' if report.ok else 'FAIL'}")
    return "\n".join(lines)


def _mark(ok: bool) -> str:
    return "ok  " if ok else "FAIL"


def render_summary(reports: Sequence[CaseReport], stale: Sequence[Any] = ()) -> str:
    """Totals over every case, the failing items by name, stale goldens, the final verdict."""
    checks = [c for r in reports for c in r.checks]
    goldens = [g for r in reports for g in r.goldens.values()]
    documented = sum(1 for c in checks if c.kind == CheckKind.DIFFER and c.ok)
    failed = [f"{r.case}::{c.label}" for r in reports for c in r.checks if not c.ok]
    failed += [
        f"{r.case}::golden:{g.side}" for r in reports for g in r.goldens.values() if not g.ok
    ]
    failed += [f"{r.case}: {r.error}" for r in reports if r.error]
    ulps = [ulp for r in reports for ulp, _ in r.agree_ulps()]
    lines = [
        f"== summary: {len(reports)} cases, {len(checks)} checks "
        f"({sum(c.ok for c in checks)} hold, {documented} documented divergences), "
        f"{len(goldens)} goldens ({sum(g.ok for g in goldens)} ok); "
        f"worst agree ulp={max(ulps) if ulps else 'n/a'}"
    ]
    lines += [f"FAIL {name}" for name in failed]
    lines += [f"stale golden: {path} (no case file; delete it)" for path in stale]
    bad_cases = sum(1 for r in reports if not r.ok)
    lines.append("OK" if not bad_cases else f"FAIL ({bad_cases} of {len(reports)} cases)")
    return "\n".join(lines)
