"""Markdown (GitHub-flavoured: a pull-request comment or a book chapter): one table per Diff.

Text from input never becomes markup: non-printable characters are escaped as everywhere
(``harness.escape.one_line``), then ``_md`` backslash-escapes the characters that start
inline markup or raw HTML (``<``, ``&``, backticks, ``*``, a link's ``]``) and pipes, and
``_code`` puts keys and labels in code spans whose fence is longer than any backtick run
they hold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.diff import Diff, TensorDiff
from harness.escape import one_line
from harness.report.cells import header, precision_lines, table_cells, verdict
from harness.report.text import render_traceback
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
    return "| " + " | ".join([_code(key), *(_md(c) for c in cells)]) + " |"


# Inline markup and raw HTML start with one of these; "|" ends a table cell. A "]" is
# escaped where it would close a link, an image, a reference or a definition ("](", "][",
# "]:"), so indices such as [2, 1] stay readable. "_" is left alone: it only emphasises at
# word boundaries, and case names are full of it.
_MARKUP = re.compile(r"([\\`*<>&~|]|\](?=[(\[:]))")
_BACKTICKS = re.compile(r"`+")


def _md(text: str) -> str:
    """Plain text in a table cell or a line: escaped, never markup, never HTML."""
    return _MARKUP.sub(r"\\\1", one_line(text))


def _code(text: str) -> str:
    """A code span holding ``text`` as is (pipes escaped for the table), one line."""
    text = one_line(text).replace("|", "\\|")
    fence = "`" * (1 + max((len(run) for run in _BACKTICKS.findall(text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cases_markdown(reports: Sequence[CaseReport]) -> str:
    """Every case as a Markdown section: its checks, each with its table."""
    parts = []
    for r in reports:
        doc = r.doc.strip().splitlines()
        parts.append(f"## {_md(r.case)}: {'OK' if r.ok else 'FAIL'}")
        if doc:
            parts.append(_md(doc[0]))
        if r.raised is not None:
            parts.append(f"```\n{render_traceback(r.raised)}\n```")
        for c in r.checks:
            parts.append(f"- {_code(c.label)}: {'ok' if c.ok else 'FAIL'}: {_md(c.message)}")
            if c.trajectory is not None:
                parts.append(f"  {_code(trajectory_line(c.trajectory))}")
            parts += [f"  {_md(line)}" for line in precision_lines(c.precision, c.explanation)]
            if c.diff is not None:
                parts.append(render_markdown(c.diff).rstrip("\n"))
    return "\n\n".join(parts) + "\n"
