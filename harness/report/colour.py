"""Colour for the terminal: verdict words in green / red / yellow, headings in bold.

Applied to finished plain text (the text stays the API; colour is only decoration), and only
when the stream is an interactive terminal and ``NO_COLOR`` is not set (https://no-color.org):
never in pipes, files or CI logs that are not a terminal.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

GREEN, RED, YELLOW, BOLD, RESET = "\x1b[32m", "\x1b[31;1m", "\x1b[33m", "\x1b[1m", "\x1b[0m"
_WORDS = re.compile(r"\b(FAIL|DIFF|CHANGED)\b|^(ok)\b|(\[ok  \])|^(OK)$", re.MULTILINE)
_HEADING = re.compile(r"^(===? .*)$", re.MULTILINE)


def use_colour(stream: Any, environ: Mapping[str, str] | None = None) -> bool:
    """True for an interactive terminal, unless ``NO_COLOR`` is set to anything non-empty."""
    environ = os.environ if environ is None else environ
    if environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def paint(text: str) -> str:
    """The text with its verdict words and headings coloured (ANSI escapes)."""
    text = _HEADING.sub(lambda m: f"{BOLD}{m.group(1)}{RESET}", text)
    return _WORDS.sub(_word, text)


def _word(match: re.Match) -> str:
    word = match.group(0)
    if word == "FAIL":
        return f"{RED}{word}{RESET}"
    if word in ("DIFF", "CHANGED"):
        return f"{YELLOW}{word}{RESET}"
    return f"{GREEN}{word}{RESET}"
