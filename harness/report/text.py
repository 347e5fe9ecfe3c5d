"""Terminal text: the study-style table of a Diff, the first line of a failure, and the report
of a case run (failures first; every table with ``verbose``).

The text is an API (tests pin it to the letter), so change it deliberately:

    == torch vs engine (train_step)
    logits                   n= 12  max|diff|=1.49e-08  ulp=1
    grads.fc1.weight         n= 32  max|diff|=3.73e-09  ulp=2
    worst=1.19e-07 tol=1e-06 OK

A failing tensor row is followed by its first mismatched elements (``harness.mismatches``
data, when the caller has it) and by the worst element by ULP when that is not the worst by
absolute difference the row names:

    w                        n=  6  max|diff|=5.00e-01  ulp=2097152  FAIL at [1]: ...
        at [1]: torch=2.0 engine=2.5 |diff|=5.00e-01 2097152 ulp (5e+05x tol)
        at [3]: torch=4.0 engine=4.0004 |diff|=4.00e-04 839 ulp (400x tol)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.diff import Diff, TensorDiff
from harness.escape import lines as escape_lines
from harness.escape import one_line
from harness.mismatches import RowDetail
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
    precision_lines,
    ratio_text,
    structural_problem,
    verdict,
    words_for,
)
from harness.report.elements import detail_lines, failure_headline, left_out_text
from harness.report.localise import verdict_text
from harness.report.trajectory import trajectory_headline, trajectory_line
from harness.results import (
    CaseReport,
    CheckKind,
    CheckReport,
    GoldenReport,
    GoldenStatus,
    Headline,
    SideError,
    Spot,
    headline,
)

MIN_NAME_WIDTH = 24
ROWS_HINT = "-v shows every row"

# ---------------------------------------------------------------------------------------------
# One Diff


def render_text(
    diff: Diff,
    divergence: bool = False,
    *,
    words: Words | None = None,
    details: Sequence[RowDetail] = (),
    only_failing: bool = False,
) -> str:
    """The study-style table: header, one row per key, verdict line (no trailing newline).

    ``divergence``: the table of a ``differ`` check; rows say ``DIFF`` where they would say
    ``FAIL``, and the verdict reads as the documented outcome. ``words`` sets another reading
    (``UPDATE_WORDS`` for a rewritten golden). ``details``: the elements behind failing rows,
    listed under them. ``only_failing``: the rows within tolerance are counted, not listed.
    """
    words = words or (DIVERGENCE_WORDS if divergence else CHECK_WORDS)
    shown = [r for r in diff.rows if not (only_failing and r.ok)]
    width = max([MIN_NAME_WIDTH, *(len(one_line(row.key)) for row in shown)])
    by_key = {d.key: d for d in details}
    lines = [f"== {header(diff)}"]
    for row in shown:
        lines.append(_text_row(row, width, diff.labels, words.row))
        if not row.ok and row.key in by_key:
            lines += detail_lines(row, by_key[row.key], diff.labels)
    hidden = len(diff.rows) - len(shown)
    if hidden:
        lines.append(f"({hidden} {_rows(hidden)} within tolerance not shown; {ROWS_HINT})")
    lines.append(verdict(diff, words=words))
    # Every line escaped (labels, values, error types): nothing from input reaches the terminal raw.
    return "\n".join(one_line(line.rstrip()) for line in lines)


def _rows(count: int) -> str:
    return "row" if count == 1 else "rows"


def _text_row(row: TensorDiff, width: int, labels: tuple[str, str], word: str = "FAIL") -> str:
    name = f"{one_line(row.key):<{width}} "
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
# Checks, goldens and tracebacks


def render_check(
    case_name: str,
    check: CheckReport,
    *,
    verbose: bool = True,
    raised: SideError | None = None,
) -> str:
    """One check: the failure's first line (key, element, values, distance) when it failed
    with a table, its verdict line, its table (failing rows only unless ``verbose``) and,
    when a side raised, the traceback. pytest's failure message."""
    line = f"{case_name}: {check.label}: {'ok' if check.ok else 'FAIL'}: {check.message}"
    if check.documented_by:
        line += f" (documented: {check.documented_by})"
    lines = [line]
    if check.trajectory is not None:
        lines.append(one_line(trajectory_line(check.trajectory)))  # a label cannot break it
    lines += [one_line(line) for line in precision_lines(check.precision, check.explanation)]
    first = _check_headline(check)
    if raised is not None and not check.ok:
        first = raised_headline(raised)
    if first is not None and check.kind != CheckKind.DIFFER:
        lines.insert(0, first)
    table = _check_table(check, verbose)
    lines += [table] if table else []
    if raised is not None:
        lines.append(render_traceback(raised))
    return escape_lines("\n".join(lines))


def _check_headline(check: CheckReport) -> str | None:
    """A failed check's first line: the worst element of its table, or for a trajectory
    check (no table), where its float64 runs part."""
    if check.ok:
        return None
    if check.diff is not None:
        return failure_headline(check.diff, check.details)
    if check.trajectory is not None:
        return one_line(trajectory_headline(check.trajectory))
    return None


def _check_table(check: CheckReport, verbose: bool = True) -> str:
    """A check's table; a ``differ`` check's reads as the documented outcome."""
    if check.diff is None:
        return ""
    return render_text(
        check.diff,
        words=words_for(check.kind, check.trajectory is not None, bool(check.parts64)),
        details=check.details,
        only_failing=not verbose and not check.ok and check.kind != CheckKind.DIFFER,
    )


def render_golden(golden: GoldenReport, *, verbose: bool = True, update: str | None = None) -> str:
    """``golden case/side: status: message``, the table when values changed, and for a
    failure that a rewrite would accept, the command that accepts it (``update``)."""
    line = f"golden {golden.case}/{golden.side}: {golden.status}: {golden.message}"
    lines = [line]
    first = (
        None if golden.ok or golden.diff is None else failure_headline(golden.diff, golden.details)
    )
    if first is not None:
        lines.insert(0, first)
    table = _golden_table(golden, verbose)
    lines += [table] if table else []
    if update and golden.status in ACCEPTABLE:
        lines.append(f"to accept this output as the golden: {update}")
    return escape_lines("\n".join(lines))


# Golden failures that rewriting the golden resolves (a refused or non-deterministic one is not).
ACCEPTABLE = (GoldenStatus.MISMATCH, GoldenStatus.UNREADABLE)


def _golden_table(golden: GoldenReport, verbose: bool = True) -> str:
    """The table of a golden comparison worth showing (it failed, or an update changed it)."""
    updated = golden.status == GoldenStatus.UPDATED
    if golden.diff is None or (golden.ok and not updated):
        return ""
    return render_text(
        golden.diff,
        words=UPDATE_WORDS if updated else None,
        details=golden.details,
        only_failing=not verbose and not golden.ok and not golden.diff.ok,
    )


def raised_headline(raised: SideError) -> str:
    """``torch_side raised ValueError: bad shape (cases/x.py:12 in helper)``: one line."""
    text = f"{raised.side}_side raised {raised.type}"
    text += f": {raised.message.strip().splitlines()[0]}" if raised.message.strip() else ""
    if raised.frames:
        last = raised.frames[-1]
        text += f" ({shown_path(last.file)}:{last.line} in {last.function})"
    return text + (" on its second run" if raised.rerun else "")


def render_traceback(raised: SideError) -> str:
    """The exception a side raised, as Python prints a traceback (frames of the case code)."""
    run = " (second run)" if raised.rerun else ""
    lines = [f"Traceback of {raised.side}_side{run}, most recent call last:"]
    for i, frame in enumerate(raised.frames):
        if raised.omitted and i == 2:
            lines.append(f"  ... {raised.omitted} frames omitted ...")
        lines.append(f'  File "{shown_path(frame.file)}", line {frame.line}, in {frame.function}')
        if frame.code:
            lines.append(f"    {frame.code}")
    lines.append(f"{raised.type}: {raised.message}" if raised.message else raised.type)
    return "\n".join(lines)


def shown_path(file: str) -> str:
    """A path relative to the working folder when it lies inside it (as pytest shows them)."""
    try:
        return str(Path(file).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return file


# ---------------------------------------------------------------------------------------------
# Case runs: one line per case, failures first, the summary over all cases


def render_case(report: CaseReport, *, verbose: bool = True, update: str | None = None) -> str:
    """The report of one case: with ``verbose`` every check and golden with its table; else
    only what failed (failing rows only) and goldens an update changed, so the failure is the
    first thing on screen."""
    doc = report.doc.strip().splitlines()
    lines = [f"=== {report.case}" + (f": {doc[0]}" if doc else "")]
    if report.error:
        lines.append(f"FAIL: {report.error}")
    if report.raised is not None:
        lines.append(render_traceback(report.raised))
    for check in report.checks:
        if not verbose and (check.ok or report.error):
            continue
        extra = f" (documented: {check.documented_by})" if check.documented_by else ""
        lines.append(f"[{_mark(check.ok)}] {check.label}: {check.message}{extra}")
        if check.trajectory is not None:
            lines.append(f"       {one_line(trajectory_line(check.trajectory))}")
        notes = precision_lines(check.precision, check.explanation)
        lines += [f"       {one_line(line)}" for line in notes]
        table = _check_table(check, verbose)
        lines += [table] if table else []
    lines += [f"       {line}" for line in localise_lines(report)]
    for golden in report.goldens.values():
        if not verbose and not _news(golden):
            continue
        lines.append(
            f"[{_mark(golden.ok)}] golden:{golden.side}: {golden.status}: {golden.message}"
        )
        table = _golden_table(golden, verbose)
        lines += [table] if table else []
        if update and golden.status in ACCEPTABLE:
            lines.append(f"to accept this output as the golden: {update}")
    lines.append(f"{report.case}: {'OK' if report.ok else 'FAIL'}")
    return escape_lines("\n".join(lines))


def _mark(ok: bool) -> str:
    return "ok  " if ok else "FAIL"


# Golden outcomes worth a line even when they hold: --update-golden reports what it changed.
CHANGES = (GoldenStatus.CREATED, GoldenStatus.UPDATED)


def _news(golden: GoldenReport) -> bool:
    return golden.status in CHANGES or not (golden.ok or golden.status == GoldenStatus.NOT_RUN)


def worth_reporting(report: CaseReport) -> bool:
    """A case whose report says more than its one line: it failed, or a golden changed."""
    return not report.ok or any(g.status in CHANGES for g in report.goldens.values())


def localise_lines(report: CaseReport) -> list[str]:
    """``localise: first parts at step 0, forward, `fc2` output: ...`` for a case with
    ``LOCALISE`` (none without)."""
    if report.localise_error:
        return [report.localise_error]
    if report.localisation is None:
        return []
    return [f"localise: {verdict_text(report.localisation)}"]


def render_case_line(report: CaseReport) -> str:
    """``ok   train_step: 6 checks, 2 goldens`` (or what failed): one line per case, and its
    localisation below it."""
    below = "".join(f"\n       {line}" for line in localise_lines(report))
    return _case_line(report) + below


def _case_line(report: CaseReport) -> str:
    checks, goldens = report.checks, list(report.goldens.values())
    bad_checks = sum(not c.ok for c in checks)
    bad_goldens = sum(not g.ok for g in goldens)
    if report.ok:
        return (
            f"ok   {report.case}: {_count(len(checks), 'check')}, {_count(len(goldens), 'golden')}"
        )
    parts = []
    if report.error:
        parts.append("a side raised")
    if bad_checks:
        parts.append(f"{bad_checks} of {len(checks)} checks fail")
    if bad_goldens:
        parts.append(f"{bad_goldens} of {len(goldens)} goldens fail")
    if report.nondeterministic:
        parts.append("non-deterministic: " + ", ".join(report.nondeterministic))
    return f"FAIL {report.case}: " + "; ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def render_summary(
    reports: Sequence[CaseReport],
    stale: Sequence[Any] = (),
    *,
    allow_stale: bool = False,
    pruned: Sequence[Any] = (),
    foreign: Sequence[Any] = (),
) -> str:
    """Totals, the headline of the agree checks, the failing items by name, stale goldens,
    the final verdict. Stale goldens fail the run unless ``allow_stale``; ``pruned``: the
    files ``--prune-stale`` deleted (their folders are no longer stale); ``foreign``: the
    ``harness.prune.Foreign`` folders no case is named after that hold something else than
    goldens (they fail as stale goldens do, but are never pruned)."""
    checks = [c for r in reports for c in r.checks]
    goldens = [g for r in reports for g in r.goldens.values()]
    documented = sum(1 for c in checks if c.kind == CheckKind.DIFFER and c.ok)
    failed = [f"{r.case}::{c.label}" for r in reports for c in r.checks if not c.ok]
    failed += [
        f"{r.case}::golden:{g.side}" for r in reports for g in r.goldens.values() if not g.ok
    ]
    failed += [f"{r.case}: {r.error}" for r in reports if r.error]
    lines = [
        f"== summary: {_count(len(reports), 'case')}, {_count(len(checks), 'check')} "
        f"({sum(c.ok for c in checks)} hold, {documented} documented divergences), "
        f"{_count(len(goldens), 'golden')} ({sum(g.ok for g in goldens)} ok)",
        *render_headline(headline(reports)),
    ]
    lines += [f"FAIL {name}" for name in failed]
    lines += [f"pruned stale golden file {path}" for path in pruned]
    for path in stale:
        if allow_stale:
            lines.append(f"stale golden: {path} (no case file; accepted by --allow-stale)")
        else:
            lines.append(
                f"FAIL stale golden: {path} (no case file; --prune-stale deletes it,"
                " --allow-stale accepts it)"
            )
    for folder in foreign:
        accepted = "accepted by --allow-stale" if allow_stale else "--allow-stale accepts it"
        lines.append(
            f"{'' if allow_stale else 'FAIL '}stale golden: {folder.path} (no case file; "
            f"not pruned: {folder.problem}; {accepted})"
        )
    bad_cases = sum(1 for r in reports if not r.ok)
    problems = [f"{bad_cases} of {len(reports)} cases"] if bad_cases else []
    if (stale or foreign) and not allow_stale:
        problems.append(_count(len(stale) + len(foreign), "stale golden"))
    lines.append("OK" if not problems else f"FAIL ({', '.join(problems)})")
    return escape_lines("\n".join(lines))


def render_headline(head: Headline) -> list[str]:
    """The worst agree check by tolerance ratio, then the ULP maximum away from zero."""
    if head.worst_ratio is None:
        return ["worst agree: n/a (no agree check compared numbers)"]
    lines = [f"worst agree: {_spot_text(head.worst_ratio, ratio=True)}"]
    if head.worst_ulp is not None:
        ulp = head.worst_ulp.element.ulp
        scope = f"over {head.elements - head.ulp_left_out} of {head.elements} float elements"
        if head.ulp_left_out:
            scope += f"; {left_out_text(head.ulp_left_out)}"
        lines.append(f"max agree ulp: {ulp} at {_spot_text(head.worst_ulp)} ({scope})")
    return lines


def _spot_text(spot: Spot, *, ratio: bool = False) -> str:
    """``train_step::agree:grads.* grads.w[0, 1] (0.5 vs 0.50000006)``, after the ratio."""
    e = spot.element
    where = f"{spot.case}::{spot.check} {spot.key}{format_index(e.index) if e.index else ''}"
    values = f"{format_value(e.a, spot.dtype)} vs {format_value(e.b, spot.dtype)}"
    if not ratio:
        return f"{where} ({values})"
    amount = ratio_text(e.ratio) if e.ratio else "0x tol (no element differs)"
    return f"{amount} at {where} ({values})"
