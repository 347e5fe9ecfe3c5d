"""Evaluating a case's checks against the values its two sides recorded: one ``CheckReport``
per check, with the comparison table and, for a documented divergence, the docstring that
documents it and a one-line summary of each side's values."""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

import numpy as np

from harness import explain
from harness import trajectory as traj
from harness.case import Agree, Case, CaseDefinitionError, Check, Differ, Expect, Trajectory
from harness.diff import Diff, diff_values
from harness.engine import divergence
from harness.mismatches import LIMIT, RowDetail, inspect_rows
from harness.report.cells import value_summary
from harness.results import CheckReport
from harness.tolerances import Tolerance


class RecordedRun(Protocol):
    """What evaluation reads of a run (``harness.runner.CaseRun``): the case, each side's
    decoded values, and the error a side raised, if any."""

    case: Case
    values: Mapping[str, Mapping[str, Any]]
    error: str | None
    values64: Mapping[str, Mapping[str, Any]]  # the float64 reruns (trajectory checks)
    # ``explainer``: the explained runs (``harness.runner.Explainer``), None without float64
    # reruns; read with getattr, so a run recorded before them still evaluates.


class _Verdict(NamedTuple):
    ok: bool
    diff: Diff | None
    message: str
    documented_by: str = ""
    compared: tuple[Mapping, Mapping] = ({}, {})  # the values the check selected, by side
    trajectory: traj.TrajectoryReport | None = None
    precision: tuple[traj.KeyPrecision, ...] = ()
    explanation: str = ""  # the explained runs' word on keys whose float64 runs part


def evaluate(run: RecordedRun, *, limit: int | None = LIMIT) -> list[CheckReport]:
    """Every check of the case against the run's values.

    ``limit``: mismatched elements kept per failing row (None: all of them).
    """
    return [evaluate_check(run, check, limit=limit) for check in run.case.checks]


def evaluate_check(run: RecordedRun, check: Check, *, limit: int | None = LIMIT) -> CheckReport:
    verdict = _verdict(run, check)
    ok, diff, message, documented_by, compared, trajectory = verdict[:6]
    relation = getattr(check, "relation", None)
    differ = isinstance(check, Differ)
    relation_text = None if relation is None else relation.text
    if differ and check.systematic:
        relation_text = "; ".join(
            filter(None, [traj.systematic_text(check.systematic), relation_text])
        )
    return CheckReport(
        label=check.label,
        kind=check.kind,
        ok=ok,
        message=message,
        diff=diff,
        documented_by=documented_by,
        pattern=check.pattern,
        because=check.because if differ else None,
        relation=relation_text,
        samples=_samples(compared) if differ else None,
        details=_details(check, ok, diff, compared, limit),
        trajectory=trajectory,
        precision=verdict.precision,
        explanation=verdict.explanation,
    )


def _details(
    check: Check, ok: bool, diff: Diff | None, compared: tuple[Mapping, Mapping], limit
) -> tuple[RowDetail, ...]:
    """The elements behind the rows: every row of an agree check (the summary's headline
    reads them), the failing rows of a failing check of another kind (a differ check's rows
    differ by design)."""
    if diff is None or not (isinstance(check, Agree) or not ok):
        return ()
    left, right = compared
    rows = diff.rows if isinstance(check, Agree) else diff.failures
    return inspect_rows(left, right, rows, limit)


def _verdict(run: RecordedRun, check: Check) -> _Verdict:
    sides = ({}, {}) if isinstance(check, Expect) else _selected(run.values, check)
    if run.error:
        return _Verdict(False, None, run.error, compared=sides)
    if isinstance(check, Expect):
        return _evaluate_expect(run, check)
    if isinstance(check, Trajectory):
        report = _trajectory(run, check, sides)
        if isinstance(report, str):
            return _Verdict(False, None, report)
        if report.half is not None:
            ok, message = traj.half_holds(report.half, check.expect)
        else:
            ok, message = traj.same_formula(report)
            if not ok:
                message = explain.trajectory_message(_explanation(run, check, report))
        message = f"{message} ({check.note})" if check.note else message
        return _Verdict(ok, None, message, trajectory=report)
    left, right = sides
    if not left and not right:
        return _Verdict(False, None, f"pattern {check.pattern!r} matched no value", compared=sides)
    diff = diff_values(
        left,
        right,
        tol_for=_tol_for(run.case, check.tol),
        title=run.case.name,
        labels=(check.left.label, check.right.label),
    )
    precision = _key_precisions(run, check, diff)
    parting = [p.key for p in precision if p.verdict == traj.Precision.FORMULA]
    note = _key_note(run, check, parting)
    if isinstance(check, Agree):
        message = "agree" if diff.ok else "values disagree"
        message = f"{message} ({check.note})" if check.note else message
        return _Verdict(
            diff.ok, diff, message, compared=sides, precision=precision, explanation=note
        )
    verdict = _evaluate_differ(check, diff, left, right, run, precision)
    return verdict._replace(compared=sides, precision=precision, explanation=note)


def _key_precisions(run: RecordedRun, check: Agree | Differ, diff: Diff):
    """The float64 verdict per key of a check of a case with float64 reruns (else none)."""
    if not run.values64 or (isinstance(check, Differ) and check.systematic):
        return ()
    left, right = _selected(run.values, check)
    left64, right64 = _selected(run.values64, check)
    within = {row.key: row.ok for row in diff.rows}
    return traj.key_precisions(left, right, left64, right64, within)


def _selected(
    values: Mapping[str, Mapping[str, Any]], check: Agree | Differ | Trajectory
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The values of each side that a two-sided check matches, read with ``.get``: a side that
    raised recorded no values, and a differ's report still shows what the other side gave."""
    return (
        check.left.select(values.get(check.left.side, {}), check.pattern),
        check.right.select(values.get(check.right.side, {}), check.pattern),
    )


def _tol_for(case: Case, tol: Tolerance | None) -> Callable[[str, str], Tolerance]:
    if tol is not None:
        return lambda key, dtype: tol
    return case.tol_for


def _evaluate_differ(
    check: Differ, diff: Diff, left: dict, right: dict, run: RecordedRun, precision=()
) -> _Verdict:
    try:
        documented_by = resolve_because(check.because)
    except CaseDefinitionError as exc:
        return _Verdict(False, diff, str(exc))
    if set(left) != set(right):
        missing = sorted(set(left) ^ set(right))
        return _Verdict(False, diff, f"keys present on one side only: {missing}")
    if check.systematic:
        return _evaluate_systematic(run, check, diff, (left, right), documented_by)
    parting = [p.key for p in precision if p.verdict == traj.Precision.FORMULA]
    if diff.ok and parting:  # not vanished: under the tolerance, and the float64 runs say so
        message = (
            f"values within tolerance, but the float64 runs part at {parting}: the divergence "
            "is under the tolerance (tighten tol, or for a trajectory use systematic=True)"
        )
        return _Verdict(False, diff, message, documented_by)
    if diff.ok:
        return _Verdict(False, diff, "expected divergence vanished", documented_by)
    broken = [k for k in left if not check.relation.holds(left[k], right[k])]
    if broken:
        message = f"values differ but the relation '{check.relation.text}' fails for {broken}"
        return _Verdict(False, diff, message, documented_by)
    return _Verdict(True, diff, f"differ as documented: {check.relation.text}", documented_by)


def _evaluate_systematic(
    run: RecordedRun, check: Differ, diff: Diff, sides: tuple[dict, dict], documented_by: str
) -> _Verdict:
    """A systematic differ: the trajectory's float64 verdict and growth, then the relation."""
    report = _trajectory(run, check, sides)
    if isinstance(report, str):
        return _Verdict(False, diff, report, documented_by)
    ok, message = traj.systematic_holds(report, check.systematic)
    if report.precision.verdict == traj.Precision.FORMULA:
        ok, message = _explained_systematic(run, check, report, ok, message)
    left, right = sides
    broken = [k for k in left if check.relation and not check.relation.holds(left[k], right[k])]
    if ok and broken:
        ok, message = False, f"the relation '{check.relation.text}' fails for {broken}"
    return _Verdict(ok, diff, message, documented_by, trajectory=report)


def _explained_systematic(
    run: RecordedRun, check: Differ, report: traj.TrajectoryReport, ok: bool, message: str
) -> tuple[bool, str]:
    """A systematic differ holds only while the explained runs agree to rounding: with the
    engine following PyTorch wherever it documents a difference, nothing else parts the runs.
    A ``because`` that registers no divergence switch (a default value, say) cannot be tested
    that way: the differ's own verdict stands, and says so."""
    if not switches_documented_at(check.because):
        note = f"not tested by an explained run: {check.because} registers no divergence switch"
        return ok, f"{message} ({note})"
    preferred = switches_documented_at(check.because)
    explanation = _explanation(run, check, report, preferred)
    verdict, text = explain.systematic_message(explanation, check.because)
    if verdict is False:
        return False, text
    return ok, f"{message}; {text}" if ok else message


def _explanation(
    run: RecordedRun,
    check: Trajectory | Differ,
    report: traj.TrajectoryReport,
    preferred: tuple[str, ...] = (),
) -> explain.Explanation:
    """What the explained runs say about a check's formula difference."""
    if "engine" not in (check.left.side, check.right.side):
        return explain.Explanation(
            explain.Cause.UNEXPLAINED, note="neither side is the engine's: no switch applies"
        )

    def select(explained):
        values = {**run.values, "engine": explained.values["float32"]}
        values64 = {**run.values64, "engine": explained.values["float64"]}
        return (*_selected(values, check), *_selected(values64, check))

    explainer = getattr(run, "explainer", None)
    gap64 = max(report.float64.max_abs, default=0.0)
    return explain.explain(explainer, select, gap64, preferred=preferred)


def _key_note(run: RecordedRun, check: Agree | Differ, parting: list[str]) -> str:
    """The explained runs' word on the keys of an agree or differ check whose float64 runs
    part: each key's values as one step, explained as a trajectory is."""
    if not parting or "engine" not in (check.left.side, check.right.side):
        return ""
    if isinstance(check, Differ) and not switches_documented_at(check.because):
        return f"float64: not tested by an explained run: {check.because} registers no switch"

    def as_step(values: Mapping) -> dict:
        return {k: np.asarray(values[k]).reshape(1, -1) for k in parting if k in values}

    def chosen(values: Mapping, values64: Mapping):
        left, right = _selected(values, check)
        left64, right64 = _selected(values64, check)
        return as_step(left), as_step(right), as_step(left64), as_step(right64)

    def select(explained):
        values = {**run.values, "engine": explained.values["float32"]}
        values64 = {**run.values64, "engine": explained.values["float64"]}
        return chosen(values, values64)

    _, _, left64, right64 = chosen(run.values, run.values64)
    gap64 = max((float(np.max(np.abs(left64[k] - right64[k]))) for k in left64), default=0.0)
    explainer = getattr(run, "explainer", None)
    return explain.key_note(explain.explain(explainer, select, gap64))


def switches_documented_at(dotted: str) -> tuple[str, ...]:
    """The divergence switches whose target is the object ``dotted`` names."""
    try:
        obj = _resolve(dotted)
    except CaseDefinitionError:
        return ()
    return tuple(s.name for s in divergence.switches() if _resolve_or_none(s.target) is obj)


def _resolve_or_none(dotted: str) -> Any:
    try:
        return _resolve(dotted)
    except CaseDefinitionError:
        return None


def _trajectory(
    run: RecordedRun, check: Trajectory | Differ, sides: tuple[dict, dict]
) -> traj.TrajectoryReport | str:
    """The step-by-step analysis of a check's values (``sides``, as selected) and their float64
    reruns, or why none."""
    left, right = sides
    left64, right64 = _selected(run.values64, check)
    if not left and not right:
        return f"pattern {check.pattern!r} matched no value"
    if not run.values64:
        return "no float64 reruns to compare (the run was made without them)"
    refs = getattr(check, "float32", None)  # a half pair's float32 reruns
    try:
        if refs is not None:
            reruns = tuple(ref.select(run.values.get(ref.side, {}), check.pattern) for ref in refs)
            return traj.analyse_half(
                sides,
                reruns,
                (left64, right64),
                tol_for=_tol_for(run.case, check.tol),
                labels=(check.left.label, check.right.label),
            )
        return traj.analyse(
            left,
            right,
            left64,
            right64,
            tol_for=_tol_for(run.case, check.tol),
            labels=(check.left.label, check.right.label),
        )
    except traj.TrajectoryError as exc:
        return f"not a trajectory: {exc}"


def _evaluate_expect(run: RecordedRun, check: Expect) -> _Verdict:
    picked = check.ref.select(run.values[check.ref.side], check.pattern)
    if not picked:
        return _Verdict(False, None, f"pattern {check.pattern!r} matched no value")
    broken = [k for k, v in picked.items() if not check.relation.holds(v, None)]
    if broken:
        shown = ", ".join(f"{k}={picked[k]!r}" for k in broken)
        return _Verdict(False, None, f"expected {check.relation.text}; got {shown}")
    return _Verdict(True, None, f"{len(picked)} value(s) {check.relation.text}")


def _samples(sides: tuple[Mapping, Mapping]) -> tuple[tuple[str, str, str], ...]:
    """``(key, left summary, right summary)`` per key the differ check matched (``sides``, as
    :func:`_selected` gives them, also when a side raised)."""
    left, right = sides
    keys = list(left) + [k for k in right if k not in left]
    absent = "(absent)"
    return tuple(
        (
            k,
            value_summary(left[k]) if k in left else absent,
            value_summary(right[k]) if k in right else absent,
        )
        for k in keys
    )


def resolve_because(dotted: str) -> str:
    """Import the object a ``differ`` names; return its docstring's first sentence.

    A divergence is documented only if the engine code that diverges says so: the object's
    docstring names PyTorch, or (a module's top-level class or function) the docstring of the
    module that defines it does, and that docstring is cited.
    """
    obj = _resolve(dotted)
    doc = (getattr(obj, "__doc__", None) or "").strip()
    top_level = "." not in getattr(obj, "__qualname__", ".")  # a module's own class or function
    if "PyTorch" not in doc and top_level:
        module = inspect.getmodule(obj)
        module_doc = (getattr(module, "__doc__", None) or "").strip()
        doc = module_doc if "PyTorch" in module_doc else doc
    if "PyTorch" not in doc:
        raise CaseDefinitionError(
            f"because={dotted!r}: its docstring does not document a PyTorch difference "
            f"(add a sentence naming PyTorch, e.g. 'PyTorch difference: ...', to the docstring "
            f"of {dotted} or of its module)"
        )
    return doc_sentence(doc)


def _resolve(dotted: str) -> Any:
    """The object a dotted path names (module, then attributes), or CaseDefinitionError."""
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
    return obj


DOC_SENTENCE_LIMIT = 200  # characters: two lines of a report, enough for any sentence cited


def doc_sentence(doc: str, limit: int = DOC_SENTENCE_LIMIT) -> str:
    """The sentence of a docstring that states what it documents: its first sentence, read
    across wrapped lines (up to the first ``". "`` of the first paragraph, or the paragraph's
    end), at most `limit` characters; a longer one is cut at a word boundary and ends in ``…``.

    A docstring's first line alone stops mid-sentence when the sentence wraps ("Adam with
    coupled L2 weight decay ... and optional AMSGrad, in").
    """
    paragraph = " ".join(doc.strip().split("\n\n", 1)[0].split())
    end = _SENTENCE_END.search(paragraph)
    sentence = paragraph if end is None else paragraph[: end.start() + 1]
    if len(sentence) <= limit:
        return sentence
    cut = sentence.rfind(" ", 0, limit)  # the ellipsis takes the place of the space
    return sentence[: cut if cut > 0 else limit - 1].rstrip(",;:") + "…"


_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)\. ")  # "e.g. " ends no sentence
