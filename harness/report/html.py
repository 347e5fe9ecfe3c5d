"""The HTML report: one self-contained page (no network, no external files) over the results.

The page has a summary (counts, the worst agree element by tolerance ratio and by ULP away
from zero, the environment of both sides and of the goldens
with differences marked), the table of differences by design (one row per ``differ`` check),
what changed against the committed goldens, and one section per case with its docstring, its
tables and a log2-ULP histogram per tensor (``harness.report.histogram``). The output is
deterministic: the same results give byte-identical HTML (no times, no random ids, PNGs without
metadata chunks), so two reports can be diffed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from harness.diff import Diff, TensorDiff
from harness.mismatches import RowDetail
from harness.report.cells import (
    Words,
    format_index,
    format_value,
    header,
    precision_lines,
    ratio_text,
    table_cells,
    verdict,
    words_for,
)
from harness.report.histogram import has_matplotlib, histogram_html
from harness.report.html_parts import (
    CSS,
    badge,
    docstring_html,
    escape,
    escape_block,
    html_table,
    inline_code,
    slug,
)
from harness.report.localise import localise_html
from harness.report.text import render_text, render_traceback
from harness.report.trajectory import trajectory_html, trajectory_summary
from harness.results import (
    CaseReport,
    CheckKind,
    CheckReport,
    GoldenReport,
    GoldenStatus,
    Headline,
    Spot,
    headline,
)

# ---------------------------------------------------------------------------------------------
# A Diff as an HTML table: the terminal's columns, the worst element, a histogram per tensor


def diff_html(
    diff: Diff,
    divergence: bool = False,
    details: Sequence[RowDetail] = (),
    words: Words | None = None,
) -> str:
    """``divergence``: the table of a differ check, where differing rows are the expectation;
    ``details``: the elements behind failing rows, tabulated under the table; ``words``: how
    the verdict reads (a systematic differ's)."""
    la, lb = diff.labels
    head = ["key", "status", "n", "max|diff|", "max rel", "max ulp", "worst at", la, lb]
    head += ["details", "ULP histogram"]
    rows = [_row_cells(row, diff.labels, divergence) for row in diff.rows]
    table = html_table([escape(h) for h in head], rows, "diff")
    caption = f"{escape(header(diff))}: <b>{escape(verdict(diff, divergence, words=words))}</b>"
    terminal = escape_block(render_text(diff, divergence, words=words, details=details))
    return (
        f'<div class="difftable"><p class="verdict">{caption}</p>{table}'
        f"{_elements_html(diff, details)}"
        f"<details><summary>as in the terminal</summary><pre>{terminal}</pre></details></div>"
    )


def _elements_html(diff: Diff, details: Sequence[RowDetail]) -> str:
    """The first mismatched elements of each failing row: index, both values, distance."""
    failing = {row.key: row for row in diff.failures}
    rows = [
        [
            f"<code>{escape(d.key)}</code>",
            escape(format_index(e.index)),
            *(
                f"<code>{escape(format_value(v, failing[d.key].dtype_a))}</code>"
                for v in (e.a, e.b)
            ),
            escape("" if e.abs_diff is None else f"{e.abs_diff:.2e}"),
            "" if e.ulp is None else str(e.ulp),
            escape(ratio_text(e.ratio, failing[d.key].tol.is_exact)),
        ]
        for d in details
        if d.key in failing
        for e in d.first
    ]
    if not rows:
        return ""
    la, lb = diff.labels
    head = ["key", "at", la, lb, "|diff|", "ulp", "of tolerance"]
    return "<p>First mismatched elements:</p>" + html_table(
        [escape(h) for h in head], rows, "elements"
    )


def _row_cells(row: TensorDiff, labels: tuple[str, str], divergence: bool) -> list[str]:
    key, status, *numbers, a, b, details = (escape(c) for c in table_cells(row, labels))
    if divergence and not row.ok:  # as the terminal says: the documented outcome, not a failure
        status_cls, status = "documented", ("DIFF" if row.status == "fail" else status)
    else:
        status_cls = "ok" if row.ok else "fail"
    values = [f"<code>{v}</code>" if v else "" for v in (a, b)]
    status = f'<span class="{status_cls}">{status}</span>'
    return [
        f"<code>{key}</code>",
        status,
        *numbers,
        *values,
        details,
        histogram_html(row, status_cls),
    ]


# ---------------------------------------------------------------------------------------------
# The case-run page


def render_cases_html(reports: Sequence[CaseReport], *, title: str = "Conformance report") -> str:
    """The whole page for a case run."""
    sections = [
        _NAV,
        _summary_section(reports),
        _environment_section(reports),
        _divergences_section(reports),
        _golden_section(reports),
        '<section id="cases"><h2>Cases</h2>' + "".join(_case_section(r) for r in reports),
        "</section>",
    ]
    return _page(title, all(r.ok for r in reports), "".join(sections))


def render_html(
    diffs: Diff | Sequence[Diff],
    *,
    meta: Mapping | None = None,
    details: Sequence[Sequence[RowDetail]] | None = None,
) -> str:
    """A page for plain comparisons (file mode): the meta, then one table per Diff
    (``details[i]``: the elements behind the failing rows of ``diffs[i]``)."""
    diffs = [diffs] if isinstance(diffs, Diff) else list(diffs)
    details = (list(details or []) + [()] * len(diffs))[: len(diffs)]
    meta_rows = [
        (escape(k), f"<code>{escape(_env_text(v))}</code>") for k, v in (meta or {}).items()
    ]
    body = "<section><h2>Comparisons</h2>"
    body += html_table([], meta_rows, "meta") if meta_rows else ""
    tables = (diff_html(d, details=rows) for d, rows in zip(diffs, details, strict=True))
    body += "".join(tables) + "</section>"
    return _page("Conformance comparison", all(d.ok for d in diffs), body)


def _page(title: str, ok: bool, body: str) -> str:
    note = "" if has_matplotlib() else _NO_MATPLOTLIB
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{CSS}</style></head><body>"
        f"<h1>{escape(title)} {badge(ok)}</h1>{note}{body}</body></html>\n"
    )


_NAV = (
    '<nav><a href="#summary">Summary</a> · <a href="#environment">Environment</a> · '
    '<a href="#differences">Differences by design</a> · <a href="#goldens">Goldens</a> · '
    '<a href="#cases">Cases</a></nav>'
)
_NO_MATPLOTLIB = (
    '<p class="note">matplotlib is not installed, so the ULP histograms are drawn as plain HTML '
    "bars. Install the <code>report</code> extra for the images.</p>"
)


# -- summary


def _summary_section(reports: Sequence[CaseReport]) -> str:
    checks = [c for r in reports for c in r.checks]
    goldens = [g for r in reports for g in r.goldens.values()]
    ratio, ulp = _headline_cells(headline(reports))
    rows = [
        ("cases", _count_text(sum(r.ok for r in reports), len(reports), "ok")),
        ("checks", _count_text(sum(c.ok for c in checks), len(checks), "hold")),
    ]
    for kind in CheckKind:
        of_kind = [c for c in checks if c.kind == kind]
        count = _count_text(sum(c.ok for c in of_kind), len(of_kind), "hold")
        rows.append((f"&nbsp;&nbsp;{KIND_NOUNS[kind]}", count))
    statuses = sorted(Counter(g.status for g in goldens).items())
    by_status = ", ".join(f"{escape(s)} {n}" for s, n in statuses)
    count = _count_text(sum(g.ok for g in goldens), len(goldens), "ok")
    rows.append(("goldens", count + (f"; {by_status}" if by_status else "")))
    rows.append(("worst agree element (of its tolerance)", ratio))
    rows.append(("max ULP (agree checks, away from 0)", ulp))
    nondet = [f"{r.case}:{s}" for r in reports for s in r.nondeterministic]
    if nondet:
        rows.append(("non-deterministic sides", escape(", ".join(nondet))))
    summary = html_table([], rows, "summary")
    return f'<section id="summary"><h2>Summary</h2>{summary}{_case_index(reports)}</section>'


# The summary's name for the checks of each kind (every kind has one: a KeyError otherwise).
KIND_NOUNS = {
    CheckKind.AGREE: "agree",
    CheckKind.DIFFER: "documented divergence",
    CheckKind.EXPECT: "expect",
    CheckKind.TRAJECTORY: "trajectory",
}


def _count_text(good: int, total: int, word: str) -> str:
    bad = total - good
    text = f"{total} ({good} {word}"
    text += f', <span class="fail">{bad} fail</span>)' if bad else ")"
    return text


def _headline_cells(head: Headline) -> tuple[str, str]:
    """The summary's two headline cells: worst tolerance ratio, max ULP away from zero."""

    def where(spot: Spot) -> str:
        index = format_index(spot.element.index) if spot.element.index else ""
        return f"<small>at <code>{escape(f'{spot.case}::{spot.key}{index}')}</code></small>"

    if head.worst_ratio is None:
        return "n/a", "n/a"
    ratio = escape(ratio_text(head.worst_ratio.element.ratio))
    ratio += f" {where(head.worst_ratio)}"
    if head.worst_ulp is None:
        return ratio, "n/a"
    left_out = f"; {head.ulp_left_out} near 0 left out" if head.ulp_left_out else ""
    ulp = f"{head.worst_ulp.element.ulp} {where(head.worst_ulp)}"
    return ratio, ulp + f" <small>(of {head.elements} elements{left_out})</small>"


def _case_index(reports: Sequence[CaseReport]) -> str:
    rows = []
    for r in reports:
        by_kind = Counter((c.kind, c.ok) for c in r.checks)
        worst = headline([r]).worst_ratio
        rows.append(
            [
                f'<a href="#case-{slug(r.case)}">{escape(r.case)}</a>',
                badge(r.ok),
                *(_kind_count(by_kind, kind) for kind in CheckKind),
                escape(", ".join(f"{g.side}: {g.status}" for g in r.goldens.values())),
                escape(ratio_text(worst.element.ratio)) if worst else "",
            ]
        )
    head = ["case", "verdict", *CheckKind, "goldens", "worst agree (of tolerance)"]
    return html_table(head, rows, "index")


def _kind_count(by_kind: Counter, kind: CheckKind) -> str:
    good, bad = by_kind[(kind, True)], by_kind[(kind, False)]
    if not good and not bad:
        return ""
    return f"{good}/{good + bad}" + (f' <span class="fail">({bad} fail)</span>' if bad else "")


# -- environment


def _environment_section(reports: Sequence[CaseReport]) -> str:
    """One row per env key: each side of this run and the goldens; differences marked."""
    columns = _env_columns(reports)
    keys = sorted({k for col in columns.values() for env, _ in col for k in env})
    body = "<p>No environment recorded.</p>"
    if keys:
        reference = {k: _distinct(columns["torch"], k) for k in keys}
        rows = [
            [
                f"<code>{escape(k)}</code>",
                *(_env_cell(col, k, reference[k]) for col in columns.values()),
            ]
            for k in keys
        ]
        head = ["key", "torch side (this run)", "engine side (this run)", "committed goldens"]
        body = _ENV_NOTE + html_table(head, rows, "env")
    if not columns["goldens"]:
        body += "<p>No committed goldens were read (none existed before this run).</p>"
    return f'<section id="environment"><h2>Environment</h2>{body}</section>'


_ENV_NOTE = (
    '<p class="hint">Highlighted cells differ from the torch side of this run. Environments '
    "are compared with a warning, never a failure; goldens must be bit-identical only when the "
    "fingerprint (versions, BLAS, threads) matches.</p>"
)


def _env_columns(reports: Sequence[CaseReport]) -> dict[str, list[tuple[dict, str]]]:
    """``(env, where)`` pairs per column; cases without a recorded env are left out."""
    columns = {side: [(r.env.get(side), r.case) for r in reports] for side in ("torch", "engine")}
    columns["goldens"] = [
        (g.env, f"{r.case}/{g.side}") for r in reports for g in r.goldens.values()
    ]
    return {name: [(env, where) for env, where in col if env] for name, col in columns.items()}


def _env_text(value: Any) -> str:
    """Compact text for an env value; BLAS pools as ``openblas 0.3 Haswell pthreads x2``."""
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return "; ".join(_pool_text(v) for v in value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _pool_text(pool: Mapping) -> str:
    parts = [pool.get("internal_api"), pool.get("version"), pool.get("architecture")]
    parts += [pool.get("threading_layer"), f"threads={pool.get('num_threads')}"]
    return " ".join(str(p) for p in parts if p is not None)


def _distinct(column: Sequence[tuple[dict, str]], key: str) -> dict[str, list[str]]:
    """Each distinct text of ``key`` in a column, with where it was seen (first-seen order)."""
    seen: dict[str, list[str]] = {}
    for env, where in column:
        seen.setdefault(_env_text(env.get(key, "(absent)")), []).append(where)
    return seen


def _env_cell(column: Sequence[tuple[dict, str]], key: str, reference: dict[str, list[str]]) -> str:
    """Each distinct value, marked when the torch side of this run has not got it."""
    seen = _distinct(column, key)
    parts = []
    for value, where in seen.items():
        text = f"<code>{escape(value)}</code>"
        if len(seen) > 1:  # several values in one column: say where each came from
            text += f" <small>({escape(_places(where))})</small>"
        parts.append(text if value in reference else f'<span class="changed">{text}</span>')
    return "<br>".join(parts)


def _places(where: Sequence[str], named: int = 3) -> str:
    return ", ".join(where) if len(where) <= named else f"{len(where)} files"


# -- differences by design


def _divergences_section(reports: Sequence[CaseReport]) -> str:
    rows = [
        _divergence_row(r.case, c) for r in reports for c in r.checks if c.kind == CheckKind.DIFFER
    ]
    head = ["topic", "PyTorch (or first side)", "engine (or second side)", "relation", "reason"]
    head.append("status")
    intro = (
        "<p>Every <code>differ</code> check: a place where the engine follows burn rather than "
        "PyTorch, the relation that holds between the two, and the engine docstring that "
        "documents it. A row fails if the divergence vanishes or the relation breaks.</p>"
    )
    table = html_table(head, rows, "divergences") if rows else "<p>No differ checks.</p>"
    return f'<section id="differences"><h2>Differences by design</h2>{intro}{table}</section>'


def _divergence_row(case: str, check: CheckReport) -> list[str]:
    labels = check.diff.labels if check.diff is not None else ("torch", "engine")
    samples = check.samples or []
    if check.trajectory is not None:  # a systematic differ: its first key, then the verdicts
        samples = samples[:1]
    pattern = check.pattern or check.label
    name = escape(case).replace("_", "_<wbr>")  # break long case names between words
    topic = f'<a href="#case-{slug(case)}">{name}</a><br><code>{escape(pattern)}</code>'
    # The columns are PyTorch / engine even when a check lists the engine first.
    torch_i = 0 if labels[0].startswith("torch") or not labels[1].startswith("torch") else 1
    sides = [_side_cell(labels[i], samples, i + 1, pattern) for i in (torch_i, 1 - torch_i)]
    # <wbr> lets a long dotted path break at its dots, not inside a name.
    because = escape(check.because or "").replace(".", ".<wbr>")
    reason = f"<code>{because}</code>"
    if check.documented_by:
        reason += f"<br>{inline_code(check.documented_by)}"
    status = badge(check.ok, "holds", "FAIL")
    status += "" if check.ok else f"<br>{escape(check.message)}"
    relation = escape(check.relation or "")
    if check.trajectory is not None:
        relation += f"<br><small>{escape(trajectory_summary(check.trajectory))}</small>"
    return [topic, *sides, relation, reason, status]


def _side_cell(label: str, samples: Sequence[Sequence[str]], column: int, pattern: str) -> str:
    prefix = label.partition(":")[2]
    where = f"<small>{escape(label)}</small><br>" if prefix else ""
    if len(samples) == 1 and samples[0][0] == pattern:  # the topic already names the key
        return where + f"<code>{escape(samples[0][column])}</code>"
    lines = [f"<code>{escape(s[0])}</code> = <code>{escape(s[column])}</code>" for s in samples]
    return where + "<br>".join(lines)


# -- goldens


def _golden_section(reports: Sequence[CaseReport]) -> str:
    goldens = [(r.case, g) for r in reports for g in r.goldens.values()]
    # Byte-identical goldens are the usual case: name them in one line, tabulate the rest.
    same = [f"{case}/{g.side}" for case, g in goldens if g.status == GoldenStatus.IDENTICAL]
    others = [(case, g) for case, g in goldens if g.status != GoldenStatus.IDENTICAL]
    head = ["case", "side", "status", "message", "changed keys", "max|diff|", "max ulp"]
    parts = [_GOLDEN_INTRO]
    if not goldens:
        parts.append("<p>No goldens checked.</p>")
    if same:
        parts.append(
            f"<details><summary>{len(same)} of {len(goldens)} goldens are byte-identical to "
            f"this run's output</summary><p>{escape(', '.join(same))}</p></details>"
        )
    if others:
        parts.append(html_table(head, [_golden_row(case, g) for case, g in others], "goldens"))
    parts += [
        f'<h3 id="golden-{slug(case)}-{slug(g.side)}">{escape(case)}/{escape(g.side)}: '
        f"{escape(g.status)}</h3>{diff_html(g.diff, details=g.details)}"
        for case, g in others
        if g.diff is not None
    ]
    return f'<section id="goldens"><h2>Goldens</h2>{"".join(parts)}</section>'


_GOLDEN_INTRO = (
    "<p>This run's output against the committed "
    "<code>golden/&lt;case&gt;/&lt;side&gt;.json</code>: which values changed and by how much.</p>"
)


def _golden_row(case: str, g: GoldenReport) -> list[str]:
    diff = g.diff
    changed = [r for r in diff.rows if not r.bit_identical] if diff is not None else []
    abs_values = [r.max_abs for r in changed if r.max_abs is not None]
    ulp_values = [r.max_ulp for r in changed if r.max_ulp is not None]
    status = f'<span class="{"ok" if g.ok else "fail"}">{escape(g.status)}</span>'
    changed_text = ", ".join(r.key for r in changed) if diff is not None else ""
    changed_cell = f"<code>{escape(changed_text)}</code>" if changed_text else ""
    if diff is not None and not changed:
        changed_cell = "none"
    return [
        f'<a href="#case-{slug(case)}">{escape(case)}</a>',
        escape(g.side),
        status,
        escape(g.message),
        changed_cell,
        escape(f"{max(abs_values):.2e}") if abs_values else "",
        str(max(ulp_values)) if ulp_values else "",
    ]


# -- one case


def _case_section(report: CaseReport) -> str:
    name = report.case
    parts = [
        f'<section class="case" id="case-{slug(name)}">',
        f"<h3>{escape(name)} {badge(report.ok)}</h3>",
        f'<div class="doc">{docstring_html(report.doc)}</div>',
    ]
    if report.error:
        parts.append(f'<p class="fail">{escape(report.error)}</p>')
    if report.raised is not None:
        parts.append(f'<pre class="fail">{escape(render_traceback(report.raised))}</pre>')
    for side in report.nondeterministic:
        parts.append(
            f'<p class="fail">{escape(side)} side is non-deterministic: two runs differ</p>'
        )
    parts += [_check_html(c) for c in report.checks]
    parts.append(localise_html(report.localisation))
    parts.append(_case_goldens(name, list(report.goldens.values())))
    return "".join(parts) + "</section>"


def _check_html(check: CheckReport) -> str:
    mark = badge(check.ok, "ok", "FAIL")
    title = f"<h4>{mark} <code>{escape(check.label)}</code></h4>"
    message = escape(check.message)
    if check.documented_by:
        because = f"<code>{escape(check.because or '')}</code>"
        message += f"<br><small>documented by {because}: {inline_code(check.documented_by)}</small>"
    table = ""
    if check.trajectory is not None:
        table += trajectory_html(check.trajectory)
    lines = precision_lines(check.precision, check.explanation)
    if lines:
        table += f'<p class="precision">{"<br>".join(escape(line) for line in lines)}</p>'
    if check.diff is not None:
        words = words_for(check.kind, check.trajectory is not None, bool(check.parts64))
        table += diff_html(check.diff, check.kind == CheckKind.DIFFER, check.details, words)
    return f'<div class="check">{title}<p class="msg">{message}</p>{table}</div>'


def _case_goldens(case: str, goldens: Sequence[GoldenReport]) -> str:
    items = []
    for g in goldens:
        text = f"golden {escape(g.side)}: {escape(g.status)}: {escape(g.message)}"
        if g.diff is not None:
            text += f' (<a href="#golden-{slug(case)}-{slug(g.side)}">table</a>)'
        items.append(f'<li class="{"ok" if g.ok else "fail"}">{text}</li>')
    return f'<ul class="goldens">{"".join(items)}</ul>' if items else ""
