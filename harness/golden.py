"""The golden workflow: committed ``golden/<case>/<side>.json`` against a fresh run.

- missing golden: written, and the run fails (a new golden is reviewed before it counts);
- identical bytes: pass;
- different bytes: values compared with the case's tolerance; bit-identity is required only
  when the environment fingerprint matches the golden's; on mismatch the fresh output is written
  beside the golden as ``<side>.obtained.json`` for review (pytest-regressions' convention);
- update: rewrite (atomically) and report what changed and by how much.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import record
from harness.diff import Diff, diff_values

# The parts of the environment that decide the exact bits of a float computation.
FINGERPRINT_KEYS = ("torch", "numpy", "python", "machine", "blas", "threads")


@dataclass
class GoldenResult:
    case: str
    side: str
    status: str  # identical | equal_values | within_tol | missing | mismatch | unreadable | created | updated | unchanged
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
    return {k: v for k, v in env.items() if any(k.startswith(p) for p in FINGERPRINT_KEYS)}


def check_golden(
    case: Any,
    side: str,
    fresh_text: str,
    fresh_values: Mapping[str, Any],
    golden_dir: Path,
) -> GoldenResult:
    """Compare a fresh side output with its committed golden (never rewrites the golden)."""
    path = golden_path(golden_dir, case.name, side)
    obtained = obtained_path(golden_dir, case.name, side)
    if not path.exists():
        record.atomic_write_text(path, fresh_text)
        return GoldenResult(case.name, side, "missing", False, f"golden missing; wrote {path}", path=path)
    golden_text = path.read_text(encoding="utf-8", errors="replace")
    if golden_text == fresh_text:
        obtained.unlink(missing_ok=True)
        return GoldenResult(case.name, side, "identical", True, "bit-identical", path=path)
    try:
        golden = record.read_side(path)
    except record.RecordError as exc:
        record.atomic_write_text(obtained, fresh_text)
        return GoldenResult(case.name, side, "unreadable", False, str(exc), path=path)
    diff = _diff(case, side, golden.values, fresh_values)
    result = _judge(case.name, side, diff, golden.env, _env_of(fresh_text), path)
    if result.ok:
        obtained.unlink(missing_ok=True)
    else:
        record.atomic_write_text(obtained, fresh_text)
        result.message += f"; wrote {obtained}"
    return result


def _env_of(text: str) -> dict[str, Any]:
    import json

    return json.loads(text).get("env", {})


def _diff(case: Any, side: str, golden: Mapping, fresh: Mapping) -> Diff:
    return diff_values(
        golden,
        fresh,
        tol_for=case.tol_for,
        title=f"{case.name} ({side})",
        labels=("golden", "fresh"),
    )


def _judge(case: str, side: str, diff: Diff, golden_env: Mapping, fresh_env: Mapping, path: Path) -> GoldenResult:
    same_env = fingerprint(golden_env) == fingerprint(fresh_env)
    bit_identical = all(row.bit_identical for row in diff.rows)
    if not diff.ok:
        return GoldenResult(case, side, "mismatch", False, "values differ from the golden beyond tolerance", diff, path)
    if bit_identical:
        return GoldenResult(case, side, "equal_values", True, "values bit-identical (file text differs)", diff, path)
    if same_env:
        message = "not bit-identical although the environment fingerprint matches the golden's"
        return GoldenResult(case, side, "mismatch", False, message, diff, path)
    return GoldenResult(case, side, "within_tol", True, "within tolerance (environment differs)", diff, path)


def update_golden(case: Any, side: str, fresh_text: str, fresh_values: Mapping, golden_dir: Path) -> GoldenResult:
    """Rewrite one golden atomically; report whether and by how much it changed."""
    path = golden_path(golden_dir, case.name, side)
    obtained_path(golden_dir, case.name, side).unlink(missing_ok=True)
    if not path.exists():
        record.atomic_write_text(path, fresh_text)
        return GoldenResult(case.name, side, "created", True, f"created {path}", path=path)
    if path.read_text(encoding="utf-8", errors="replace") == fresh_text:
        return GoldenResult(case.name, side, "unchanged", True, "unchanged", path=path)
    diff = None
    try:
        diff = _diff(case, side, record.read_side(path).values, fresh_values)
    except record.RecordError:
        pass  # an unreadable old golden is simply replaced; the diff is then unknown
    record.atomic_write_text(path, fresh_text)
    return GoldenResult(case.name, side, "updated", True, f"updated {path}", diff, path)


def stale_goldens(golden_dir: Path, case_names: set[str]) -> list[Path]:
    """Golden folders whose case file no longer exists."""
    if not golden_dir.is_dir():
        return []
    return sorted(p for p in golden_dir.iterdir() if p.is_dir() and p.name not in case_names)
