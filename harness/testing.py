"""Conformance checks for your own tests: ``assert_conforms`` (like ``torch.testing.
assert_close``, but every failing key in one error, with ULPs and the mismatched elements),
and the golden check behind the pytest fixture ``conformance``.

    from harness.testing import assert_conforms

    assert_conforms({"loss": loss, "grads": grads}, {"loss": ref_loss, "grads": ref_grads})

Values are what a case side returns (torch tensors, engine tensors, NumPy arrays, numbers,
bools, strings, nested mappings), normalized by ``harness.record.normalize`` and compared by
``harness.diff.diff_values`` with the per-dtype default tolerances
(``harness.tolerances.DEFAULTS``) unless ``atol`` / ``rtol`` / ``ulps`` are given; the message
is the table ``conformance A.json B.json`` prints, under a first line that names the key, the
element, both values and the distance. Nothing here imports pytest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import environment, golden, record
from harness.diff import Diff, diff_values
from harness.mismatches import LIMIT, inspect_rows
from harness.report.elements import failure_headline
from harness.report.text import render_golden, render_text
from harness.results import GoldenReport, GoldenStatus
from harness.tolerances import Tolerance, explicit_tolerance, resolve, tol_for_every_key

SINGLE_KEY = "value"  # the key of a single value (not a mapping) in reports


def assert_conforms(
    actual: Any,
    expected: Any,
    *,
    atol: float | None = None,
    rtol: float | None = None,
    ulps: int | None = None,
    keys: str | Sequence[str] | None = None,
    labels: tuple[str, str] = ("actual", "expected"),
    msg: str | None = None,
    limit: int | None = LIMIT,
) -> Diff:
    """Assert that ``actual`` conforms to ``expected``; return the comparison when it does.

    Both are mappings of names to values (nested mappings flatten to dotted keys) or single
    values. Every key is compared (only those matching the glob(s) ``keys``, when given);
    ``atol`` / ``rtol`` / ``ulps``, when any is given, replace the per-dtype defaults for
    every key (an element agrees when ``|a - b| <= atol + rtol * |b|`` or within ``ulps``;
    ``b`` is ``expected``). Raises one ``AssertionError`` listing every failing key, its
    first line naming the worst element (prefixed by ``msg``); ``limit`` mismatched elements
    are listed per failing key (None: all). ValueError when ``keys`` matches nothing.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function
    left, right = _normalized(actual, "actual"), _normalized(expected, "expected")
    tol = explicit_tolerance(atol, rtol, ulps, "assert_conforms")
    diff = diff_values(
        left,
        right,
        tol_for=tol_for_every_key(tol),
        keys=keys,
        labels=labels,
        tol=tol,
    )
    if keys is not None and not diff.rows:
        raise ValueError(f"keys {keys!r} match no key of {labels[0]} or {labels[1]}")
    if diff.ok:
        return diff
    details = inspect_rows(left, right, diff.failures, limit)
    first = failure_headline(diff, details)
    message = f"{msg}: {first}" if msg else first
    raise AssertionError(f"{message}\n{render_text(diff, details=details)}")


def _normalized(values: Any, which: str) -> dict[str, Any]:
    """Values as ``harness.record`` stores them; a single value under ``SINGLE_KEY``."""
    mapping = values if isinstance(values, Mapping) else {SINGLE_KEY: values}
    try:
        return record.normalize(mapping)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{which}: {exc}") from None


# ---------------------------------------------------------------------------------------------
# Goldens of test values (the pytest fixture ``conformance``)


@dataclass(frozen=True)
class GoldenTarget:
    """What ``harness.golden`` needs to know of a golden's owner: a name and its tolerances.

    A fixture golden is ``<folder>/<name>/<side>.json`` with ``name`` the test module and
    ``side`` the test (``harness.golden.golden_path``), so ``.obtained`` files, sidecars and
    updates work as for cases.
    """

    name: str
    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    tol: Tolerance | None = None  # replaces every key's tolerance when set
    golden_summary: tuple[str, ...] = ()  # key globs whose golden keeps a summary only

    def tol_for(self, key: str, dtype: str) -> Tolerance:
        return self.tol if self.tol is not None else resolve(key, dtype, self.tolerances)

    golden_tol_for = tol_for  # a fixture golden's tolerance is the same under other numerics


def check_values(
    values: Any,
    *,
    folder: Path,
    target: GoldenTarget,
    side: str,
    update: bool = False,
    limit: int | None = LIMIT,
) -> GoldenReport:
    """Compare values with their golden (``folder/target.name/side.json``), or rewrite it.

    A missing golden is written and fails; a mismatch writes ``<side>.obtained.json`` beside
    it; ``update`` rewrites the golden (atomically, sidecars included).
    """
    fresh = _normalized(values, "values")
    env = environment.probe()
    text = record.side_text(target.name, side, fresh, env)
    if update:
        return golden.update_golden(target, side, text, fresh, folder)
    return golden.check_golden(target, side, text, fresh, folder, limit=limit)


def golden_message(report: GoldenReport, update: str, *, verbose: bool = False) -> str:
    """The failure message of a golden check: its first line, its table (failing rows only
    unless ``verbose``), and last, the command that rewrites the golden from this run."""
    text = render_golden(report, verbose=verbose, update=update)
    if text.endswith(update):
        return text
    if report.status == GoldenStatus.MISSING:
        return f"{text}\nreview it and commit it; to rewrite it from a later run: {update}"
    return f"{text}\nto rewrite the golden from this run: {update}"


def file_stem(name: str) -> str:
    """A test name as a file name: ``test_x[a-1]`` -> ``test_x_a-1_``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)
