"""Writing the report files a user names (``--json``, ``--markdown``, ``--html``), atomically."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.record import atomic_write_text
from harness.report.html import render_cases_html
from harness.report.json_doc import cases_json
from harness.report.markdown import cases_markdown
from harness.results import CaseReport


def write_report(path: str | os.PathLike, text: str) -> None:
    """Atomically write a report file the user named (``--json``, ``--markdown``, ``--html``).

    Unlike side files its folder is not created: a mistyped path fails (FileNotFoundError
    naming ``path``) instead of growing a stray tree.
    """
    if not Path(path).parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    atomic_write_text(path, text)


def write_reports(
    args: Any,
    *,
    json_doc: Callable[[], dict],
    markdown: Callable[[], str],
    html: Callable[[], str],
) -> None:
    """Write the report files ``args`` asks for (``--json``, ``--markdown``, ``--html``).

    The one writer of both modes (two files, a case run); each renderer runs only when its
    file was asked for. Files are written atomically; their folder must exist (OSError).
    """
    requested = (
        (getattr(args, "json", None), lambda: strict_json(json_doc())),
        (getattr(args, "markdown", None), markdown),
        (getattr(args, "html", None), html),
    )
    for path, render in requested:
        if path:
            text = render()
            try:
                write_report(path, text)
            except OSError as exc:  # name the file the user gave, not a temporary one
                raise OSError(exc.errno, exc.strerror, str(path)) from exc


def strict_json(doc: dict) -> str:
    """The ``--json`` text: indented, RFC 8259 (no NaN literals), one trailing newline."""
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def write_case_reports(reports: Sequence[CaseReport], args: Any) -> None:
    """Write the report files a case run asked for."""
    write_reports(
        args,
        json_doc=lambda: cases_json(reports, timings=bool(getattr(args, "timings", False))),
        markdown=lambda: cases_markdown(reports),
        html=lambda: render_cases_html(reports),
    )
