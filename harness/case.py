"""The case API: one experiment per file in ``cases/``, run on both sides and checked.

A case module holds a docstring (what the experiment shows), ``torch_side()`` and
``engine_side()`` (each returns an ordered mapping of named values), ``CHECKS`` (a list of
:func:`agree` / :func:`differ` / :func:`expect`), and optionally ``TOLERANCES`` (glob ->
:class:`~harness.tolerances.Tolerance` with a reason) overriding the per-dtype defaults.

This module is data and logic only: it never imports pytest and never formats text; the CLI
(``compare.py``) and the pytest plugin (``conftest.py``) are thin shells over it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib
import importlib.util
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness import record, sidecar
from harness.diff import Diff, diff_values
from harness.tolerances import Tolerance, check_overrides, resolve

SIDES = ("torch", "engine")
ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "cases"
GOLDEN_DIR = ROOT / "golden"
OUT_DIR = ROOT / "out"
SEED = 0
# Tensors with more elements go to .npy sidecars in out/ and golden/ alike (same text).
SIDECAR_THRESHOLD = record.SIDECAR_THRESHOLD


class CaseDefinitionError(Exception):
    """A case file is malformed (missing side function, bad check, unresolvable ``because``)."""


# ---------------------------------------------------------------------------------------------
# Checks


@dataclass(frozen=True)
class SideRef:
    """``"torch"``, ``"engine"``, or ``"torch:full."``: a side and a key prefix within it."""

    side: str
    prefix: str = ""

    @classmethod
    def parse(cls, spec: str) -> SideRef:
        side, _, prefix = spec.partition(":")
        if side not in SIDES:
            raise CaseDefinitionError(
                f"side {spec!r}: expected 'torch' or 'engine', optionally ':prefix'"
            )
        return cls(side, prefix)

    @property
    def label(self) -> str:
        return f"{self.side}:{self.prefix.rstrip('.')}" if self.prefix else self.side

    def select(self, values: Mapping[str, Any], pattern: str) -> dict[str, Any]:
        """The values whose key is ``prefix + k`` with ``k`` matching ``pattern``, keyed by k."""
        picked = {}
        for key, value in values.items():
            if key.startswith(self.prefix):
                short = key[len(self.prefix) :]
                if fnmatch.fnmatchcase(short, pattern):
                    picked[short] = value
        return picked


@dataclass(frozen=True)
class Relation:
    """What holds between the two sides of a documented divergence, per matched key.

    ``holds(left, right)`` receives decoded values (numpy arrays, scalars, CapturedError...).
    """

    text: str
    holds: Callable[[Any, Any], bool]


@dataclass(frozen=True)
class Agree:
    pattern: str
    left: SideRef
    right: SideRef
    tol: Tolerance | None = None
    note: str = ""
    kind: str = field(default="agree", init=False)

    @property
    def label(self) -> str:
        return f"agree:{self.pattern}:{self.left.label}~{self.right.label}"


@dataclass(frozen=True)
class Differ:
    pattern: str
    left: SideRef
    right: SideRef
    because: str
    relation: Relation
    tol: Tolerance | None = None
    kind: str = field(default="differ", init=False)

    @property
    def label(self) -> str:
        return f"differ:{self.pattern}:{self.left.label}~{self.right.label}"


@dataclass(frozen=True)
class Expect:
    pattern: str
    ref: SideRef
    relation: Relation
    kind: str = field(default="expect", init=False)

    @property
    def label(self) -> str:
        return f"expect:{self.pattern}:{self.ref.label}"


Check = Agree | Differ | Expect


def agree(
    pattern: str,
    left: str = "torch",
    right: str = "engine",
    *,
    tol: Tolerance | None = None,
    note: str = "",
) -> Agree:
    """The values matching ``pattern`` must agree within tolerance.

    ``left`` / ``right`` are ``"torch"``, ``"engine"`` or ``"side:prefix."`` so that two parts
    of one side can be compared ("full batch" vs "accumulated halves"). ``tol`` overrides the
    case's per-key tolerance; ``note`` is shown with the report (for example why same-side
    results are close but not bit-identical).
    """
    return Agree(pattern, SideRef.parse(left), SideRef.parse(right), tol, note)


def differ(
    pattern: str,
    *,
    because: str,
    relation: Relation,
    left: str = "torch",
    right: str = "engine",
    tol: Tolerance | None = None,
) -> Differ:
    """A documented divergence: passes only while the values differ and ``relation`` holds.

    ``because`` is the dotted path of the engine object whose docstring documents the
    divergence (``"harness.engine.tensor.Tensor.detach"``); it is resolved when the check runs.
    If the values come to agree, the check fails with "expected divergence vanished".
    """
    if not because:
        raise CaseDefinitionError(f"differ({pattern!r}): 'because' must name an engine docstring")
    return Differ(pattern, SideRef.parse(left), SideRef.parse(right), because, relation, tol)


def expect(pattern: str, side: str, relation: Relation | Any) -> Expect:
    """A one-sided fact fixed by the spec (``expect("h_grad", "engine", None)``).

    ``relation`` is a :class:`Relation` whose ``holds(value, None)`` must be true, or a plain
    expected value compared exactly.
    """
    if not isinstance(relation, Relation):
        relation = equals(relation)
    return Expect(pattern, SideRef.parse(side), relation)


# Relations used by several cases; a case may also build its own ``Relation``.


def equals(expected: Any) -> Relation:
    """The value equals ``expected`` exactly (arrays: same shape and bits up to +-0)."""

    def holds(value: Any, _other: Any) -> bool:
        if isinstance(value, np.ndarray):
            want = np.asarray(expected, dtype=value.dtype)
            return value.shape == want.shape and bool(np.array_equal(value, want, equal_nan=True))
        return type(value) is type(expected) and value == expected

    return Relation(f"== {expected!r}", holds)


def scaled(factor: float, *, rtol: float = 1e-6) -> Relation:
    """left == factor * right (elementwise, within rtol)."""

    def holds(left: Any, right: Any) -> bool:
        left, right = np.asarray(left, np.float64), np.asarray(right, np.float64)
        return left.shape == right.shape and bool(
            np.allclose(left, factor * right, rtol=rtol, atol=0)
        )

    return Relation(f"left = {factor:g} x right", holds)


def same_values_other_shape() -> Relation:
    """Same elements, different shapes (burn's ``[1]`` against PyTorch's 0-d)."""

    def holds(left: Any, right: Any) -> bool:
        left, right = np.asarray(left), np.asarray(right)
        return left.shape != right.shape and bool(np.array_equal(left.ravel(), right.ravel()))

    return Relation("same elements, different shape", holds)


def raises_vs_value(error_type: str | None = None) -> Relation:
    """The left side raised (optionally a given type) where the right side gave a value."""

    def holds(left: Any, right: Any) -> bool:
        if not isinstance(left, record.CapturedError) or isinstance(right, record.CapturedError):
            return False
        return error_type is None or left.type == error_type

    return Relation(f"left raises {error_type or 'an error'}, right gives a value", holds)


def raises_message(message: str, *, exact: bool = True) -> Relation:
    """One-sided (for :func:`expect`): a captured error whose message is ``message`` (or,
    with ``exact=False``, contains it). Spec-fixed texts are asserted to the letter."""

    def holds(value: Any, _other: Any) -> bool:
        if not isinstance(value, record.CapturedError):
            return False
        return value.message == message if exact else message in value.message

    how = "" if exact else "containing "
    return Relation(f"raises with a message {how}{message!r}", holds)


def flags(left: bool, right: bool, text: str) -> Relation:
    """Both sides are flags: the left one is ``left`` and the right one is ``right``."""
    return Relation(text, lambda a, b: a is left and b is right)


def predicate(text: str, fn: Callable[[Any, Any], bool]) -> Relation:
    """A relation from a two-argument predicate, with the text the report shows."""
    return Relation(text, fn)


# ---------------------------------------------------------------------------------------------
# Cases


@dataclass(frozen=True)
class Case:
    name: str
    doc: str
    path: Path
    torch_side: Callable[[], Mapping[str, Any]]
    engine_side: Callable[[], Mapping[str, Any]]
    checks: tuple[Check, ...]
    tolerances: Mapping[str, Tolerance]

    def side_fn(self, side: str) -> Callable[[], Mapping[str, Any]]:
        return self.torch_side if side == "torch" else self.engine_side

    def tol_for(self, key: str, dtype: str) -> Tolerance:
        return resolve(key, dtype, self.tolerances)


def load_case(path: Path) -> Case:
    """Import one case file and validate its shape."""
    name = path.stem
    spec = importlib.util.spec_from_file_location(f"cases.{name}", path)
    if spec is None or spec.loader is None:
        raise CaseDefinitionError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for attr in ("torch_side", "engine_side", "CHECKS"):
        if not hasattr(module, attr):
            raise CaseDefinitionError(f"{path}: {attr}: missing")
    if not (module.__doc__ or "").strip():
        raise CaseDefinitionError(f"{path}: docstring: missing (say what the case shows)")
    checks = tuple(module.CHECKS)
    if not checks:
        raise CaseDefinitionError(f"{path}: CHECKS: empty (a case must check something)")
    for check in checks:
        if not isinstance(check, Agree | Differ | Expect):
            raise CaseDefinitionError(f"{path}: CHECKS: {check!r} is not agree/differ/expect")
    labels = [c.label for c in checks]
    if len(set(labels)) != len(labels):
        raise CaseDefinitionError(f"{path}: CHECKS: duplicate check {labels}")
    tolerances = dict(getattr(module, "TOLERANCES", {}))
    try:  # here, once, rather than as a traceback from the first comparison that uses it
        check_overrides(tolerances)
    except ValueError as exc:
        raise CaseDefinitionError(f"{path}: TOLERANCES: {exc}") from None
    return Case(
        name=name,
        doc=module.__doc__.strip(),
        path=path,
        torch_side=module.torch_side,
        engine_side=module.engine_side,
        checks=checks,
        tolerances=tolerances,
    )


def case_paths(cases_dir: Path = CASES_DIR) -> list[Path]:
    """Case files in name order; files starting with ``_`` are helpers, not cases."""
    return sorted(p for p in cases_dir.glob("*.py") if not p.name.startswith("_"))


def discover(names: Sequence[str] = (), cases_dir: Path = CASES_DIR) -> list[Case]:
    """Load every case, or the named ones (an unknown name raises with the known names)."""
    paths = {p.stem: p for p in case_paths(cases_dir)}
    unknown = [n for n in names if n not in paths]
    if unknown:
        raise CaseDefinitionError(
            f"unknown case(s) {', '.join(unknown)}; known: {', '.join(paths)}"
        )
    return [load_case(paths[n]) for n in (names or paths)]


# ---------------------------------------------------------------------------------------------
# Running


def capture(fn: Callable[[], Any]) -> Any:
    """Run ``fn``; return its result, or the exception it raised as a ``CapturedError``."""
    try:
        return fn()
    except Exception as exc:  # a case records any error as a value
        return record.CapturedError.from_exception(exc)


@contextlib.contextmanager
def pinned(side: str) -> Iterator[None]:
    """One thread for BLAS and torch, and fixed seeds, so outputs do not depend on the machine."""
    from threadpoolctl import threadpool_limits

    random.seed(SEED)
    np.random.seed(SEED)
    if side == "torch":
        import torch

        torch.manual_seed(SEED)
        previous = torch.get_num_threads()
        torch.set_num_threads(1)
    else:
        from harness import engine

        engine.seed(SEED)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        if side == "torch":
            torch.set_num_threads(previous)


def run_side(case: Case, side: str) -> dict[str, Any]:
    """Run one side under pinned threads and seeds; return its normalized values."""
    with pinned(side):
        return record.normalize(case.side_fn(side)())


def side_text(
    case_name: str,
    side: str,
    values: Mapping[str, Any],
    env: Mapping[str, Any],
    sidecar_threshold: int = SIDECAR_THRESHOLD,
) -> str:
    """The JSON text ``record.write_side`` writes to ``<side>.json`` for normalized values.

    Sidecar references (sha256, summary, content-addressed name) are computed in memory, so
    two runs can be compared by text without writing the second one: equal texts mean equal
    data, because the sha256 of every sidecar is part of the text.
    """
    refs = {
        key: sidecar.sidecar_reference(side, key, value)
        for key, value in values.items()
        if isinstance(value, np.ndarray) and value.size > sidecar_threshold
    }
    return record.dumps_side(case_name, side, values, env, sidecars=refs)


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


@dataclass
class CaseRun:
    """Both sides' canonical texts and decoded values, plus determinism findings.

    ``texts[side]`` is the JSON text of ``out/<case>/<side>.json`` (sidecar references, not
    data, for large tensors); ``env`` is the environment block both sides were written with.
    """

    case: Case
    texts: dict[str, str]
    values: dict[str, dict[str, Any]]
    nondeterministic: dict[str, Diff]
    error: str | None = None
    env: dict[str, Any] = field(default_factory=dict)


def run_case(
    case: Case,
    out_dir: Path = OUT_DIR,
    *,
    repeat: bool = True,
    sidecar_threshold: int = SIDECAR_THRESHOLD,
) -> CaseRun:
    """Run both sides (twice, to tell non-determinism from non-conformance), write ``out/``.

    Each side is written with ``record.write_side`` (atomic; tensors above the threshold go
    to ``.npy`` sidecars) before the second run, so a side that mutates shared state cannot
    change what the first run recorded. Values are compared as decoded from the written
    files, so a check sees exactly what the golden stores.
    """
    with pinned("torch"):  # thread counts as the sides run with them: 1 on any machine
        env = record.environment()
    run = CaseRun(case, {}, {}, {}, env=env)
    folder = out_dir / case.name
    for side in SIDES:
        try:
            first = run_side(case, side)
        except Exception as exc:  # a case error is a finding to report, not a crash
            run.error = f"{side}_side raised {exc!r}"
            return run
        _write_out(run, side, first, folder, sidecar_threshold)
        try:
            again = run_side(case, side) if repeat else None
        except Exception as exc:
            run.error = f"{side}_side raised {exc!r} on its second run"
            return run
        _compare_runs(run, side, again, folder, sidecar_threshold)
    return run


def _write_out(run: CaseRun, side: str, values: Mapping, folder: Path, threshold: int) -> None:
    """Write ``<side>.json`` (and sidecars); keep its text and the values decoded from it."""
    path = folder / f"{side}.json"
    text = record.write_side(
        path, run.case.name, side, values, run.env, sidecar_threshold=threshold
    )
    run.texts[side] = text
    # Decoded from the text just written, so checks see what a golden stores. Sidecars are
    # loaded (and so re-hashed: read_side only skips the hash by not loading them at all);
    # that costs only for tensors above the sidecar threshold.
    run.values[side] = record.read_side(path, data=text.encode("ascii")).values


def _compare_runs(
    run: CaseRun, side: str, again: Mapping | None, folder: Path, threshold: int
) -> None:
    """Record a self-disagreement, keeping the second run as ``<side>.rerun.json`` for review."""
    rerun = folder / f"{side}.rerun.json"
    text = None if again is None else side_text(run.case.name, side, again, run.env, threshold)
    if text is None or text == run.texts[side]:
        remove_side_file(rerun)  # left by an earlier non-deterministic run
        return
    record.write_side(rerun, run.case.name, side, again, run.env, sidecar_threshold=threshold)
    run.nondeterministic[side] = diff_values(
        run.values[side],
        record.read_side(rerun).values,
        tol_for=lambda key, dtype: Tolerance.exact(),
        title=f"{run.case.name}: {side} run 1 vs run 2",
        labels=("run1", "run2"),
    )


# ---------------------------------------------------------------------------------------------
# Evaluating checks


@dataclass
class CheckResult:
    check: Check
    ok: bool
    diff: Diff | None
    message: str
    documented_by: str = ""


def evaluate(run: CaseRun) -> list[CheckResult]:
    """Every check of the case against the run's values."""
    return [evaluate_check(run, check) for check in run.case.checks]


def evaluate_check(run: CaseRun, check: Check) -> CheckResult:
    if run.error:
        return CheckResult(check, False, None, run.error)
    if isinstance(check, Expect):
        return _evaluate_expect(run, check)
    left = check.left.select(run.values[check.left.side], check.pattern)
    right = check.right.select(run.values[check.right.side], check.pattern)
    if not left and not right:
        return CheckResult(check, False, None, f"pattern {check.pattern!r} matched no value")
    diff = diff_values(
        left,
        right,
        tol_for=_tol_for(run.case, check.tol),
        title=run.case.name,
        labels=(check.left.label, check.right.label),
    )
    if isinstance(check, Agree):
        message = "agree" if diff.ok else "values disagree"
        return CheckResult(
            check, diff.ok, diff, f"{message} ({check.note})" if check.note else message
        )
    return _evaluate_differ(check, diff, left, right)


def _tol_for(case: Case, tol: Tolerance | None) -> Callable[[str, str], Tolerance]:
    if tol is not None:
        return lambda key, dtype: tol
    return case.tol_for


def _evaluate_differ(check: Differ, diff: Diff, left: dict, right: dict) -> CheckResult:
    try:
        documented_by = resolve_because(check.because)
    except CaseDefinitionError as exc:
        return CheckResult(check, False, diff, str(exc))
    if set(left) != set(right):
        missing = sorted(set(left) ^ set(right))
        return CheckResult(check, False, diff, f"keys present on one side only: {missing}")
    if diff.ok:
        return CheckResult(check, False, diff, "expected divergence vanished", documented_by)
    broken = [k for k in left if not check.relation.holds(left[k], right[k])]
    if broken:
        message = f"values differ but the relation '{check.relation.text}' fails for {broken}"
        return CheckResult(check, False, diff, message, documented_by)
    return CheckResult(
        check, True, diff, f"differ as documented: {check.relation.text}", documented_by
    )


def _evaluate_expect(run: CaseRun, check: Expect) -> CheckResult:
    picked = check.ref.select(run.values[check.ref.side], check.pattern)
    if not picked:
        return CheckResult(check, False, None, f"pattern {check.pattern!r} matched no value")
    broken = [k for k, v in picked.items() if not check.relation.holds(v, None)]
    if broken:
        shown = ", ".join(f"{k}={picked[k]!r}" for k in broken)
        return CheckResult(check, False, None, f"expected {check.relation.text}; got {shown}")
    return CheckResult(check, True, None, f"{len(picked)} value(s) {check.relation.text}")


def resolve_because(dotted: str) -> str:
    """Import the object a ``differ`` names; return its docstring's first line.

    A divergence is documented only if the engine code that diverges says so.
    """
    module_name, obj = dotted, None
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            obj = importlib.import_module(module_name)
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                raise CaseDefinitionError(
                    f"because={dotted!r}: {attr!r} not found in {module_name}"
                )
        break
    if obj is None:
        raise CaseDefinitionError(f"because={dotted!r}: no such module")
    doc = (getattr(obj, "__doc__", None) or "").strip()
    if "PyTorch" not in doc:
        raise CaseDefinitionError(
            f"because={dotted!r}: its docstring does not document a PyTorch difference"
        )
    return doc.splitlines()[0]
