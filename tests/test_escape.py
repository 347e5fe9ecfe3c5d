"""One escaping rule (issue 11 item 7): ``harness.escape`` for the terminal table, error lines,
Markdown and HTML alike; input text never reaches any of them raw."""

import sys

import pytest

from harness import cli, record
from harness.diff import diff_values
from harness.escape import lines, one_line
from harness.report.html import render_html
from harness.report.markdown import render_markdown
from harness.report.text import render_text
from harness.tolerances import default_tolerance

HOSTILE = ["\x1b[2J", "a\nb", "\ud800", "\u202eevil", "t\tab", "\x00", "\x7f", "\U000e0001"]


def test_every_non_printable_code_point_is_escaped_as_repr_spells_it():
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        if not ch.isprintable():
            assert one_line(ch) == repr(ch)[1:-1], hex(code)


@pytest.mark.parametrize("text", [*HOSTILE, "é ü", "back\\slash", "plain", ""])
def test_escaping_is_printable_idempotent_and_keeps_printable_text(text):
    escaped = one_line(text)
    assert escaped.isprintable() and one_line(escaped) == escaped
    escaped.encode("utf-8")  # no surrogate left
    if text.isprintable():
        assert escaped == text  # é, backslashes and spaces stay as they are


def test_lines_keeps_line_breaks_only():
    assert lines("a\x1b\nb\td") == "a\\x1b\nb\\td"
    assert one_line("a\x1b\nb") == "a\\x1b\\nb"


def test_record_error_and_cli_lines_use_the_rule(capsys):
    assert record.one_line is one_line
    err = record.RecordError("f\x1b.json", "k\ud800", "bad \x07 thing")
    assert str(err) == "f\\x1b.json: k\\ud800: bad \\x07 thing"
    cli.error("prog", "a\x1b[2Jb\nc")
    cli.warn("prog", "\u202e")
    assert capsys.readouterr().err == "prog: error: a\\x1b[2Jb\\nc\nprog: warning: \\u202e\n"


def hostile_diff():
    a = {key: float(i) for i, key in enumerate(HOSTILE)} | {"s": "<b>x</b>\x1b", "m": "[x](u)"}
    b = dict(a) | {"\x1b[2J": 9.0, "s": "<img src=x onerror=alert(1)>"}
    tol = lambda key, dtype: default_tolerance(dtype)  # noqa: E731
    return diff_values(a, b, tol_for=tol, title="case\x1b]0;t\x07", labels=("a\ud800", "b\n"))


def test_the_terminal_table_is_escaped_and_aligned():
    text = render_text(hostile_diff())
    assert all(line.isprintable() for line in text.splitlines())
    assert text.splitlines()[0] == "== a\\ud800 vs b\\n (case\\x1b]0;t\\x07)"
    rows = text.splitlines()[1:-1]
    value_at = {row.index("value") for row in rows}
    assert len(value_at) == 1  # the escaped keys set the column width
    assert rows[0].startswith("\\x1b[2J ")


def test_markdown_holds_no_raw_html_or_markup_from_input():
    md = render_markdown(hostile_diff())
    assert all(line.isprintable() for line in md.splitlines())
    assert "<" not in md.replace("\\<", "")  # every < from input is backslash-escaped
    assert "\\[x\\](u)" not in md and "[x\\](u)" in md  # no link
    assert "| `\\x1b[2J` |" in md  # keys in code spans, escaped as in the terminal
    assert "### a\\\\ud800 vs b\\\\n (case\\\\x1b]0;t\\\\x07)" in md


def test_html_escapes_the_same_way_then_adds_entities():
    page = render_html(hostile_diff())
    assert "<code>\\x1b[2J</code>" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "<img src=x" not in page
    assert "\x1b" not in page and "\ud800" not in page
    assert "<pre>== a\\ud800 vs b\\n (case\\x1b]0;t\\x07)\n" in page  # the table keeps its lines


def test_reports_with_surrogates_are_written(tmp_path):
    """A lone surrogate once made the Markdown and HTML files fail to encode."""
    from harness.report.files import write_reports

    diff = hostile_diff()
    args = type("Args", (), {"json": tmp_path / "r.json", "markdown": tmp_path / "r.md",
                             "html": tmp_path / "r.html"})  # fmt: skip
    write_reports(
        args,
        json_doc=lambda: {"x": "\ud800"},
        markdown=lambda: render_markdown(diff),
        html=lambda: render_html(diff),
    )
    assert (tmp_path / "r.json").read_text() == '{\n  "x": "\\ud800"\n}\n'
    assert "\\ud800" in (tmp_path / "r.md").read_text(encoding="utf-8")
