"""The one escaping rule for text that came from input (keys, names, values, messages, paths).

Every character that is not printable (``str.isprintable``: control characters such as ESC
and newline, lone surrogates, format characters such as the bidi overrides, separators other
than the space) is written as its Python escape, spelled as ``repr`` spells it: ``\\x1b``,
``\\n``, ``\\t``, ``\\ud800``, ``\\u202e``, ``\\U000e0001``. Everything else is kept as it
is, backslashes and printable non-ASCII letters included, so ordinary text reads unchanged and
escaping twice changes nothing.

The terminal table, error and warning lines, the Markdown report and the HTML page all apply
this rule (the two report formats then add their own syntax escaping on top), so a key shows
the same characters wherever it appears and nothing from a hostile file reaches a terminal
raw or fails to encode as UTF-8.
"""

from __future__ import annotations

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def one_line(text: str) -> str:
    """``text`` with every non-printable character escaped: one line, printable, valid UTF-8."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def lines(text: str) -> str:
    """Like ``one_line``, but line breaks (``\\n``) are kept: a block of text such as a table."""
    if text.isprintable():
        return text
    return "\n".join(one_line(line) for line in text.split("\n"))


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
