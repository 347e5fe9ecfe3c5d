"""Rendering diff data and case results: terminal text, JSON, Markdown, HTML, report files.

The package reads ``harness.diff`` data and ``harness.results`` reports and never runs
anything: ``cells`` (spellings every format shares), ``text``, ``json_doc`` (with the schema),
``markdown``, ``html`` (with ``histogram`` and ``html_parts``) and ``files`` (atomic writes of
the files a user names). Import from the module that renders what you need; the few names
below are re-exported for the op matrix and the fuzzer, whose reports list failing rows.
"""

from harness.report.cells import format_index, format_value, row_summary, table_cells

__all__ = ["format_index", "format_value", "row_summary", "table_cells"]
