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

import reprlib

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


# ---------------------------------------------------------------------------------------------
# Bounded echoes: a value from input quoted in a message never makes the message long

MAX_ECHO = 200  # characters of one value from input in a message
_INT_BITS = 1 << 12  # ~1,233 digits: written well below Python's int-to-str limit (4,300)


class _Echo(reprlib.Repr):
    """``reprlib`` limits (a few levels, a few items each, long strings cut before quoting),
    with the containers dispatched by ``isinstance``: reprlib dispatches by type name, so an
    ``OrderedDict`` or a NamedTuple from an unpickler would get the builtin, unbounded repr."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxlist, self.maxtuple, self.maxdict = 3, 8, 8, 4
        self.maxset = self.maxfrozenset = self.maxdeque = self.maxarray = 8
        self.maxstring = self.maxother = self.maxlong = MAX_ECHO

    def repr1(self, x: object, level: int) -> str:
        if x is None or isinstance(x, bool):
            return repr(x)
        if isinstance(x, float):
            return repr(float(x))
        if isinstance(x, int):
            return self.repr_int(int(x), level)
        if isinstance(x, bytes):
            head = repr(x[: self.maxstring])
            return head if len(x) <= self.maxstring else f"{head}...({len(x)} bytes)"
        for kind, method in ((str, self.repr_str), (dict, self.repr_dict), (list, self.repr_list)):
            if isinstance(x, kind):
                return method(x, level)
        if isinstance(x, tuple):
            named = type(x).__name__ if getattr(x, "_fields", None) else ""  # a NamedTuple
            return named + self.repr_tuple(tuple(x), level)
        return f"<{type(x).__name__}>"  # no repr of an arbitrary object: it could be anything

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > _INT_BITS:
            return f"<{'-' if x < 0 else ''}integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_ECHO = _Echo()


def clip(text: str, limit: int = MAX_ECHO) -> str:
    """``text`` cut to at most ``limit`` characters (the cut marked by ``...``)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def preview(value: object, limit: int = MAX_ECHO) -> str:
    """``repr(value)`` for a message, at most ``limit`` characters, escaped to one line.

    Built by ``reprlib`` (a few levels, a few items each, long strings cut before they are
    quoted), so a deep or huge value from a hostile file costs little time and memory; an
    integer too long to write in full is named by its size instead (``str()`` of an integer
    of over 4,300 digits raises ValueError).
    """
    return one_line(clip(_ECHO.repr(value), limit))
