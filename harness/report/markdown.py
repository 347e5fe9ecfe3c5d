"""Markdown (GitHub-flavoured: a pull-request comment or a book chapter): one table per Diff."""

from __future__ import annotations

from collections.abc import Sequence

from harness.diff import Diff, TensorDiff
from harness.report.cells import header, table_cells, verdict
from harness.report.trajectory import trajectory_line
from harness.results import CaseReport

_MD_HEAD = (
    "| key | status | n | max\\|diff\\| | max rel | max ulp | worst at | {a} | {b} | details |\n"
    "|:--|:--|--:|--:|--:|--:|:--|--:|--:|:--|"
)


def render_markdown(diffs: Diff | Sequence[Diff]) -> str:
    """One section per Diff: a heading, a table with one row per key, the verdict."""
    diffs = [diffs] if isinstance(diffs, Diff) else list(diffs)
    return "\n\n".join(_markdown_section(d) for d in diffs) + "\n"


def _markdown_section(diff: Diff) -> str:
    la, lb = (_md(label) for label in diff.labels)
    lines = [f"### {_md(header(diff))}", "", _MD_HEAD.format(a=la, b=lb)]
    lines += [_markdown_row(row, diff.labels) for row in diff.rows]
    lines += ["", f"**{_md(verdict(diff))}**"]
    return "\n".join(lines)


def _markdown_row(row: TensorDiff, labels: tuple[str, str]) -> str:
    key, *cells = table_cells(row, labels)
    return "| " + " | ".join(_md(c) for c in [f"`{key}`", *cells]) + " |"


def _md(text: str) -> str:
    """Escape what would break a table cell: pipes and line breaks."""
    return text.replace("\\|", "|").replace("|", "\\|").replace("\n", " ")


def cases_markdown(reports: Sequence[CaseReport]) -> str:
    """Every case as a Markdown section: its checks, each with its table."""
    parts = []
    for r in reports:
        doc = r.doc.strip().splitlines()
        parts.append(f"## {_md(r.case)}: {'OK' if r.ok else 'FAIL'}")
        if doc:
            parts.append(_md(doc[0]))
        for c in r.checks:
            parts.append(f"- `{_md(c.label)}`: {'ok' if c.ok else 'FAIL'}: {_md(c.message)}")
            if c.trajectory is not None:
                parts.append(f"  `{_md(trajectory_line(c.trajectory))}`")
            if c.diff is not None:
                parts.append(render_markdown(c.diff).rstrip("\n"))
    return "\n\n".join(parts) + "\n"
