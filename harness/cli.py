"""What every command-line program of the harness shares: exit codes, the one-line error and
warning, argparse value types, and the check that an option belongs to the mode in use.

Used by ``compare.py``; written so that the op matrix (``python -m harness.opmatrix``) and the
fuzzer (``python -m harness.opmatrix.fuzz``) can use the same pieces. Usage errors found by argparse
exit 2 through ``parser.error``; everything found later is ``error(prog, ...)``, one line on
stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from enum import IntEnum
from typing import Any

from harness.escape import one_line


class ExitCode(IntEnum):
    OK = 0  # everything holds
    FAIL = 1  # a check failed
    USAGE = 2  # bad usage, or unreadable / malformed input


def exit_code(ok: bool) -> ExitCode:
    return ExitCode.OK if ok else ExitCode.FAIL


class UsageError(Exception):
    """Bad input or usage found after parsing: reported as one line on stderr, exit code 2."""


def error(prog: str, message: str) -> ExitCode:
    """Print ``<prog>: error: <message>`` on stderr (escaped: one line); return exit code 2."""
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)
    return ExitCode.USAGE


def warn(prog: str, message: str) -> None:
    """Print ``<prog>: warning: <message>`` (escaped: one line); never changes the exit code."""
    print(f"{prog}: warning: {one_line(message)}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# argparse value types: a bad value exits 2 with argparse's one line naming the option


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


def names_of(known: Iterable[str], what: str) -> Callable[[str], list[str]]:
    """A type for a comma-separated list of names, each one of ``known`` (``--ops a,b``)."""
    known = list(known)

    def parse(text: str) -> list[str]:
        names = text.split(",")
        unknown = [n for n in names if n not in known]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"unknown {what}(s) {', '.join(unknown)}; known: {', '.join(known)}"
            )
        return names

    return parse


# ---------------------------------------------------------------------------------------------
# Modes: options that mean something in one mode only


def given(value: Any) -> bool:
    """The option was on the command line: not its default (None, False or []); 0 counts."""
    return value is not None and value is not False and value != []


def foreign_option(args: argparse.Namespace, dests: Sequence[str], reason: str) -> str | None:
    """``--option <reason>`` for the first of ``dests`` given on the command line, else None.

    An option of the other mode would be ignored silently (a loosened ``--atol`` that changes
    nothing), so the caller makes it a usage error: ``parser.error(problem)``.
    """
    for dest in dests:
        if given(getattr(args, dest)):
            return f"--{dest.replace('_', '-')} {reason}"
    return None
