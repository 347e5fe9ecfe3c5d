"""Small HTML pieces of the report page: escaping, badges, tables, docstrings, the style sheet."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from typing import Any

from harness.escape import lines, one_line


def escape(text: Any) -> str:
    """Text as HTML: non-printable characters escaped as everywhere (one line), then entities."""
    return html.escape(one_line(str(text)), quote=True)


def escape_block(text: str) -> str:
    """Like ``escape``, keeping line breaks (the terminal table inside a ``<pre>``)."""
    return html.escape(lines(text), quote=True)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x"


def badge(ok: bool, yes: str = "OK", no: str = "FAIL") -> str:
    return f'<span class="badge {"ok" if ok else "fail"}">{yes if ok else no}</span>'


def html_table(head: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table from already-escaped cell HTML; no header row when ``head`` is empty."""
    th = "".join(f"<th>{h}</th>" for h in head)
    thead = f"<thead><tr>{th}</tr></thead>" if head else ""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}>{thead}<tbody>{body}</tbody></table>"


def docstring_html(doc: str) -> str:
    """Paragraphs of a docstring, with its code spans as <code>."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", doc.strip()) if p.strip()]
    return "".join(_paragraph_html(p) for p in paragraphs)


def _paragraph_html(paragraph: str) -> str:
    """A paragraph; its ``- item`` lines (continued by the lines below them) become a list."""
    intro: list[str] = []
    items: list[str] = []
    for line in (line.strip() for line in paragraph.splitlines()):
        if line.startswith("- "):
            items.append(line[2:])
        elif items:
            items[-1] += " " + line
        else:
            intro.append(line)
    text = f"<p>{inline_code(' '.join(intro))}</p>" if intro else ""
    if items:
        text += "<ul>" + "".join(f"<li>{inline_code(item)}</li>" for item in items) + "</ul>"
    return text


_CODE_SPAN = re.compile(r"``(.+?)``|`([^`]+?)`", re.S)


def inline_code(text: str) -> str:
    """Escaped text whose ``reST`` and `Markdown` code spans (both used in docstrings) are code."""
    parts, end = [], 0
    for match in _CODE_SPAN.finditer(text):
        code = match.group(1) or match.group(2)
        parts += [escape(text[end : match.start()]), f"<code>{escape(code)}</code>"]
        end = match.end()
    return "".join([*parts, escape(text[end:])])


CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1400px;padding:0 24px 48px;color:#1d1d1f;background:#fff}
h1{font-size:24px;margin:20px 0 8px}h2{font-size:20px;border-bottom:2px solid #ddd;
padding-bottom:4px;margin-top:32px}h3{font-size:17px;margin:22px 0 6px}
h4{font-size:14px;margin:14px 0 2px;font-weight:600}
code,pre{font:12px/1.4 ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace}
pre{background:#f6f8fa;padding:8px;overflow-x:auto;border:1px solid #e1e4e8}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600}
table.diff td:nth-child(n+3):nth-child(-n+6){text-align:right;white-space:nowrap}
table.diff td:last-child{padding:1px;text-align:center}
table.divergences{width:100%;table-layout:fixed}table.divergences td{overflow-wrap:anywhere}
table.divergences th:nth-child(1){width:15%}table.divergences th:nth-child(2),
table.divergences th:nth-child(3){width:24%}table.divergences th:nth-child(4){width:14%}
table.divergences th:nth-child(5){width:17%}table.divergences th:nth-child(6){width:6%}
.difftable{overflow-x:auto}
table.env{width:100%;table-layout:fixed}table.env th:first-child{width:10%}
table.diff td code{overflow-wrap:anywhere}table.diff td:nth-child(8),
table.diff td:nth-child(9){max-width:320px}
.badge{display:inline-block;white-space:nowrap;padding:0 7px;border-radius:9px;font-size:12px;
font-weight:600;vertical-align:middle}.badge.ok{background:#2e7d32;color:#fff}
.badge.fail{background:#c62828;color:#fff}
.ok{color:#2e7d32}.fail{color:#c62828}.documented{color:#6a1b9a}li.ok,li.fail{color:inherit}
li.fail::marker{color:#c62828}
.changed{background:#fff3b0;padding:1px 3px;border-radius:3px}
.note{background:#fff3b0;padding:6px 10px;border:1px solid #e6c200}
.hint,small{color:#57606a}.doc{max-width:900px}.doc p{margin:6px 0}
.case{border-top:1px solid #eee;margin-top:18px}.msg{margin:2px 0 4px}
.verdict{margin:6px 0 2px;color:#57606a}details summary{cursor:pointer;color:#57606a;font-size:12px}
img.hist{display:block;margin:0 auto}nav{margin:0 0 8px;color:#57606a}
.cssbars{display:flex;align-items:flex-end;gap:2px;height:62px;padding:0 4px;
border-bottom:1px solid #333;width:max-content}.cssbars span{width:9px;background:#1565c0}
.cssbars span.b0{background:#2e7d32}.cssbars span.fail{background:#c62828}
.cssbars span.documented{background:#6a1b9a}
.trajectory{margin:4px 0 8px}img.trajectory{display:block;max-width:100%;height:auto}
.trajectory-line{margin:2px 0}
"""
