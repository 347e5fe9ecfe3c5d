"""The golden workflow: committed ``golden/<case>/<side>.json`` against a fresh run.

- missing golden: written, and the run fails (a new golden is reviewed before it counts);
- identical bytes: pass;
- different bytes: values compared with the case's tolerance; bit-identity is required only
  when the environment fingerprint matches the golden's; on mismatch the fresh output is written
  beside the golden as ``<side>.obtained.json`` for review (pytest-regressions' convention);
- update: rewrite (atomically) and report what changed and by how much;
- a golden that is not a regular file (a FIFO, ``/dev/zero`` behind a symlink, a folder) or
  is over ``record.MAX_BYTES``: ``harness.bounded.RefusedFile``, nothing read, written or
  replaced.

Large tensors live in ``.npy`` sidecars beside each JSON file (``record.write_side``): the
golden JSON holds their sha256 and summary statistics, so its git diff stays readable and text
equality still means identical data. ``.obtained`` files carry their own sidecars, and removing
an ``.obtained`` file removes them too.

Keys the owner marks as bulky (``golden_summary`` globs: a case's ``GOLDEN_SUMMARY``) keep only
dtype, shape, sha256 and summary statistics in the golden, no data and no sidecar; how they
are compared is ``harness.golden_summary``'s. ``out/`` and ``.obtained`` files keep full data.
"""

from __future__ import annotations

import dataclasses
import errno
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import golden_summary, record
from harness.diff import Diff, diff_values
from harness.environment import fingerprint_change
from harness.mismatches import LIMIT, inspect_rows
from harness.results import GoldenReport, GoldenStatus
from harness.tolerances import Tolerance


def golden_path(golden_dir: Path, case: str, side: str) -> Path:
    return golden_dir / case / f"{side}.json"


def obtained_path(golden_dir: Path, case: str, side: str) -> Path:
    return golden_dir / case / f"{side}.obtained.json"


def check_golden(
    case: Any,
    side: str,
    fresh_text: str,
    fresh_values: Mapping[str, Any],
    golden_dir: Path,
    *,
    limit: int | None = LIMIT,
) -> GoldenReport:
    """Compare a fresh side output with its committed golden (never rewrites the golden).

    ``fresh_text`` is the fresh ``<side>.json`` text and ``fresh_values`` its decoded values;
    large tensors are sidecar references in the text, so equal texts mean equal data once
    the golden's sidecars are verified against their sha256. ``limit``: mismatched elements
    kept per failing row (None: all). A golden that is not a regular file within
    ``record.MAX_BYTES`` raises ``harness.bounded.RefusedFile`` (see ``_golden_bytes``).
    """
    name = case.name
    path, obtained = golden_path(golden_dir, name, side), obtained_path(golden_dir, name, side)
    summary = _summary_keys(case, fresh_values)
    golden_text = _golden_text(case, side, fresh_text, fresh_values, summary)
    if not path.exists():
        _write(path, name, side, fresh_values, fresh_text, summary)
        message = f"golden missing; wrote {path}"
        return GoldenReport(name, side, GoldenStatus.MISSING, False, message, path=path)
    data = _golden_bytes(path)
    try:
        golden = _read_golden(path, data, golden_text)
    except record.RecordError as exc:
        _write(obtained, name, side, fresh_values, fresh_text)
        message = f"{exc}; wrote {obtained}"
        return GoldenReport(
            name, side, GoldenStatus.UNREADABLE, False, message, path=path, env=_env_of(data)
        )
    if golden is None:
        remove_obtained(golden_dir, name, side)
        env = record.side_env(fresh_text)  # same text, same env
        return GoldenReport(
            name, side, GoldenStatus.IDENTICAL, True, "bit-identical", path=path, env=env
        )
    stand = golden_summary.stand_ins(golden.values, fresh_values)
    diff = _diff(case, side, stand)
    result = _judge(name, side, diff, golden.env, record.side_env(fresh_text), path)
    note = golden_summary.summary_note(stand, diff)
    if note:
        result = dataclasses.replace(result, message=f"{result.message}; {note}")
    if result.ok:
        remove_obtained(golden_dir, name, side)
    else:
        _write(obtained, name, side, fresh_values, fresh_text)
        details = _details(diff, stand.golden, stand.fresh, limit)
        message = f"{result.message}; wrote {obtained}"
        result = dataclasses.replace(result, message=message, details=details)
    return result


def _summary_keys(case: Any, values: Mapping[str, Any]) -> tuple[str, ...]:
    """The keys of ``values`` the golden keeps as a summary only (none unless the case says)."""
    return golden_summary.summarised_keys(getattr(case, "golden_summary", ()), values)


def _golden_text(
    case: Any, side: str, fresh_text: str, values: Mapping[str, Any], summary: Sequence[str]
) -> str:
    """The text the golden of this run would have: the ``out/`` text unless keys are
    summarised (then equal texts still mean equal data: the sha256 is in both)."""
    if not summary:
        return fresh_text
    env = record.side_env(fresh_text)
    return record.side_text(case.name, side, values, env, summary_only=summary)


def _details(diff: Diff, golden: Mapping, fresh: Mapping, limit: int | None) -> tuple:
    """The elements behind the failing rows (a mismatch is rare: the second pass is cheap).

    Values within tolerance fail only for not being bit-identical in the golden's own
    environment: then the elements shown are those that differ at all.
    """
    if diff.ok:
        exact = Tolerance.exact("bit-identity in the golden's environment")
        rows = [dataclasses.replace(r, tol=exact) for r in diff.rows if not r.bit_identical]
    else:
        rows = list(diff.failures)
    return inspect_rows(golden, fresh, rows, limit)


def _golden_bytes(path: Path) -> bytes | bytearray:
    """The golden's bytes, read bounded; ``harness.bounded.RefusedFile`` (an OSError: the
    command line's exit 2) when it is not a regular text file within ``record.MAX_BYTES``.

    A golden that is a FIFO, a device, a folder or huge is not a reviewable failure: no
    ``.obtained`` file is written and the golden is never replaced, by ``update_golden`` either.
    """
    return record.json_bytes(path)


def _read_golden(path: Path, data: bytes, fresh_text: str) -> record.SideRecord | None:
    """None when the golden's bytes ``data`` equal ``fresh_text`` and its sidecars are intact.

    Otherwise the decoded golden (RecordError if it cannot be read). Text equality alone is
    not enough when sidecars are referenced: a sidecar file may have been edited or lost.
    """
    same = data == fresh_text.encode("utf-8")
    if same and b'"sidecar"' not in data:
        return None
    golden = record.read_side(path, data=data)  # verifies every sidecar's sha256
    return None if same else golden


def _env_of(data: bytes) -> dict | None:
    """The env of a golden that did not decode, if that much of it can be read."""
    try:
        return record.side_env(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):  # a hostile file: no env, the status says why
        return None


def _write(
    path: Path,
    case: str,
    side: str,
    values: Mapping[str, Any],
    fresh_text: str,
    summary: Sequence[str] = (),
) -> None:
    """Write a golden or ``.obtained`` file atomically, large tensors as sidecars beside it.

    For ``<side>.json`` the text is the fresh ``out/`` text byte for byte (same writer, same
    threshold) but for the ``summary`` keys, kept as summaries only; an ``.obtained`` file
    (no ``summary``: full data) gets its own sidecars, named after its own stem.
    """
    env = record.side_env(fresh_text)
    _check_folders(path)
    record.write_side(
        path,
        case,
        side,
        values,
        env,
        sidecar_threshold=record.SIDECAR_THRESHOLD,
        summary_only=summary,
    )


def _check_folders(path: Path) -> None:
    """NotADirectoryError naming the file where a golden's folder (or one above it) should be:
    creating the folders would fail with "File exists" about the golden, which does not."""
    for folder in (path.parent, *path.parent.parents):
        if folder.is_dir():
            return
        if os.path.lexists(folder):
            raise NotADirectoryError(errno.ENOTDIR, "is a file, not a folder", str(folder))


def remove_obtained(golden_dir: Path, case: str, side: str) -> None:
    """Delete ``<side>.obtained.json`` and its sidecars, never one the golden references."""
    obtained = obtained_path(golden_dir, case, side)
    if not obtained.is_file():
        return  # the usual case: nothing to remove, so the golden need not be read
    path = golden_path(golden_dir, case, side)
    keep: tuple[str, ...] = ()
    if path.is_file():
        try:
            keep = record.read_side(path, verify_sidecars=False).sidecars
        except record.RecordError:
            keep = ()
    remove_side_file(obtained, keep)


def remove_side_file(path: Path, keep: Sequence[str] = ()) -> None:
    """Delete a side file and the sidecars it references, except the names in ``keep``."""
    if not path.is_file():
        return
    try:
        names = record.read_side(path, verify_sidecars=False).sidecars
    except record.RecordError:
        names = ()  # unreadable: its sidecars cannot be known; the file still goes
    path.unlink(missing_ok=True)
    for name in set(names) - set(keep):
        (path.parent / name).unlink(missing_ok=True)


def _diff(case: Any, side: str, stand: golden_summary.StandIns) -> Diff:
    diff = diff_values(
        stand.golden,
        stand.fresh,
        tol_for=golden_summary.tol_for(stand, case.golden_tol_for),
        title=f"{case.name} ({side})",
        labels=("golden", "fresh"),
    )
    return golden_summary.mark(diff, stand)


def _judge(
    case: str, side: str, diff: Diff, golden_env: Mapping, fresh_env: Mapping, path: Path
) -> GoldenReport:
    env = dict(golden_env)
    change = fingerprint_change(golden_env, fresh_env)
    if not diff.ok:
        message = "values differ from the golden beyond tolerance"
        message += f" ({change})" if change else ""
        return GoldenReport(case, side, GoldenStatus.MISMATCH, False, message, diff, path, env)
    if diff.bit_identical:
        message = "values bit-identical (file text differs)"
        return GoldenReport(case, side, GoldenStatus.EQUAL_VALUES, True, message, diff, path, env)
    if not change:
        message = "not bit-identical although the environment fingerprint matches the golden's"
        return GoldenReport(case, side, GoldenStatus.MISMATCH, False, message, diff, path, env)
    message = f"{change}; compared within tolerance, not bit for bit"
    return GoldenReport(case, side, GoldenStatus.WITHIN_TOL, True, message, diff, path, env)


def update_golden(
    case: Any, side: str, fresh_text: str, fresh_values: Mapping, golden_dir: Path
) -> GoldenReport:
    """Rewrite one golden atomically (sidecars too); report whether and by how much it changed."""
    path = golden_path(golden_dir, case.name, side)
    remove_obtained(golden_dir, case.name, side)
    summary = _summary_keys(case, fresh_values)
    if not path.exists():
        _write(path, case.name, side, fresh_values, fresh_text, summary)
        return GoldenReport(
            case.name, side, GoldenStatus.CREATED, True, f"created {path}", path=path
        )
    diff = None
    try:
        golden_text = _golden_text(case, side, fresh_text, fresh_values, summary)
        golden = _read_golden(path, _golden_bytes(path), golden_text)
        if golden is None:
            env = record.side_env(fresh_text)
            return GoldenReport(
                case.name, side, GoldenStatus.UNCHANGED, True, "unchanged", path=path, env=env
            )
        diff = _diff(case, side, golden_summary.stand_ins(golden.values, fresh_values))
    except record.RecordError:
        pass  # an unreadable old golden (or a broken sidecar) is replaced; the diff is unknown
    _write(path, case.name, side, fresh_values, fresh_text, summary)
    return GoldenReport(case.name, side, GoldenStatus.UPDATED, True, f"updated {path}", diff, path)
