"""The golden workflow: committed ``golden/<case>/<side>.json`` against a fresh run.

- missing golden: written, and the run fails (a new golden is reviewed before it counts);
- identical bytes: pass;
- different bytes: values compared with the case's tolerance; bit-identity is required only
  when the environment fingerprint matches the golden's; on mismatch the fresh output is written
  beside the golden as ``<side>.obtained.json`` for review (pytest-regressions' convention);
- update: rewrite (atomically) and report what changed and by how much.

Large tensors live in ``.npy`` sidecars beside each JSON file (``record.write_side``): the
golden JSON holds their sha256 and summary statistics, so its git diff stays readable and text
equality still means identical data. ``.obtained`` files carry their own sidecars, and removing
an ``.obtained`` file removes them too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import record
from harness.case import SIDECAR_THRESHOLD, remove_side_file
from harness.diff import Diff, diff_values

# The parts of the environment that decide the exact bits of a float computation.
FINGERPRINT_KEYS = ("torch", "torch_threads", "numpy", "python", "platform", "blas")


@dataclass
class GoldenResult:
    case: str
    side: str
    # identical | equal_values | within_tol | missing | mismatch | unreadable (check);
    # created | updated | unchanged (update); refused | not_run | nondeterministic (session)
    status: str
    ok: bool
    message: str
    diff: Diff | None = None
    path: Path | None = None


def golden_path(golden_dir: Path, case: str, side: str) -> Path:
    return golden_dir / case / f"{side}.json"


def obtained_path(golden_dir: Path, case: str, side: str) -> Path:
    return golden_dir / case / f"{side}.obtained.json"


def fingerprint(env: Mapping[str, Any]) -> dict[str, Any]:
    """The environment keys whose change may legitimately change the last bits of a result."""
    return {k: env.get(k) for k in FINGERPRINT_KEYS}


def check_golden(
    case: Any,
    side: str,
    fresh_text: str,
    fresh_values: Mapping[str, Any],
    golden_dir: Path,
) -> GoldenResult:
    """Compare a fresh side output with its committed golden (never rewrites the golden).

    ``fresh_text`` is the fresh ``<side>.json`` text and ``fresh_values`` its decoded values;
    large tensors are sidecar references in the text, so equal texts mean equal data once
    the golden's sidecars are verified against their sha256.
    """
    path = golden_path(golden_dir, case.name, side)
    obtained = obtained_path(golden_dir, case.name, side)
    if not path.exists():
        _write(path, case.name, side, fresh_values, fresh_text)
        return GoldenResult(
            case.name, side, "missing", False, f"golden missing; wrote {path}", path=path
        )
    try:
        golden = _read_golden(path, fresh_text)
    except record.RecordError as exc:
        _write(obtained, case.name, side, fresh_values, fresh_text)
        return GoldenResult(
            case.name, side, "unreadable", False, f"{exc}; wrote {obtained}", path=path
        )
    if golden is None:
        remove_obtained(golden_dir, case.name, side)
        return GoldenResult(case.name, side, "identical", True, "bit-identical", path=path)
    diff = _diff(case, side, golden.values, fresh_values)
    result = _judge(case.name, side, diff, golden.env, _env_of(fresh_text), path)
    if result.ok:
        remove_obtained(golden_dir, case.name, side)
    else:
        _write(obtained, case.name, side, fresh_values, fresh_text)
        result.message += f"; wrote {obtained}"
    return result


def _read_golden(path: Path, fresh_text: str) -> record.SideRecord | None:
    """None when the golden's text equals ``fresh_text`` and its sidecars are intact.

    Otherwise the decoded golden (RecordError if it cannot be read). Text equality alone is
    not enough when sidecars are referenced: a sidecar file may have been edited or lost.
    """
    text = path.read_text(encoding="utf-8", errors="replace")
    if text == fresh_text and '"sidecar"' not in text:
        return None
    golden = record.read_side(path)  # verifies every sidecar's sha256
    return None if text == fresh_text else golden


def _write(path: Path, case: str, side: str, values: Mapping[str, Any], fresh_text: str) -> None:
    """Write a golden or ``.obtained`` file atomically, large tensors as sidecars beside it.

    For ``<side>.json`` the text is the fresh ``out/`` text byte for byte (same writer, same
    threshold); an ``.obtained`` file gets its own sidecars, named after its own stem.
    """
    env = _env_of(fresh_text)
    record.write_side(path, case, side, values, env, sidecar_threshold=SIDECAR_THRESHOLD)


def remove_obtained(golden_dir: Path, case: str, side: str) -> None:
    """Delete ``<side>.obtained.json`` and its sidecars, never one the golden references."""
    path = golden_path(golden_dir, case, side)
    keep: tuple[str, ...] = ()
    if path.is_file():
        try:
            keep = record.read_side(path, verify_sidecars=False).sidecars
        except record.RecordError:
            keep = ()
    remove_side_file(obtained_path(golden_dir, case, side), keep)


def _env_of(text: str) -> dict[str, Any]:
    return json.loads(text).get("env", {})


def _diff(case: Any, side: str, golden: Mapping, fresh: Mapping) -> Diff:
    return diff_values(
        golden,
        fresh,
        tol_for=case.tol_for,
        title=f"{case.name} ({side})",
        labels=("golden", "fresh"),
    )


def _judge(
    case: str, side: str, diff: Diff, golden_env: Mapping, fresh_env: Mapping, path: Path
) -> GoldenResult:
    same_env = fingerprint(golden_env) == fingerprint(fresh_env)
    bit_identical = all(row.bit_identical for row in diff.rows)
    if not diff.ok:
        return GoldenResult(
            case,
            side,
            "mismatch",
            False,
            "values differ from the golden beyond tolerance",
            diff,
            path,
        )
    if bit_identical:
        return GoldenResult(
            case, side, "equal_values", True, "values bit-identical (file text differs)", diff, path
        )
    if same_env:
        message = "not bit-identical although the environment fingerprint matches the golden's"
        return GoldenResult(case, side, "mismatch", False, message, diff, path)
    return GoldenResult(
        case, side, "within_tol", True, "within tolerance (environment differs)", diff, path
    )


def update_golden(
    case: Any, side: str, fresh_text: str, fresh_values: Mapping, golden_dir: Path
) -> GoldenResult:
    """Rewrite one golden atomically (sidecars too); report whether and by how much it changed."""
    path = golden_path(golden_dir, case.name, side)
    remove_obtained(golden_dir, case.name, side)
    if not path.exists():
        _write(path, case.name, side, fresh_values, fresh_text)
        return GoldenResult(case.name, side, "created", True, f"created {path}", path=path)
    diff = None
    try:
        golden = _read_golden(path, fresh_text)
        if golden is None:
            return GoldenResult(case.name, side, "unchanged", True, "unchanged", path=path)
        diff = _diff(case, side, golden.values, fresh_values)
    except record.RecordError:
        pass  # an unreadable old golden (or a broken sidecar) is replaced; the diff is unknown
    _write(path, case.name, side, fresh_values, fresh_text)
    return GoldenResult(case.name, side, "updated", True, f"updated {path}", diff, path)


def stale_goldens(golden_dir: Path, case_names: set[str]) -> list[Path]:
    """Golden folders whose case file no longer exists."""
    if not golden_dir.is_dir():
        return []
    return sorted(p for p in golden_dir.iterdir() if p.is_dir() and p.name not in case_names)
