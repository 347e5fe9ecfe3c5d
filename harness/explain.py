"""Whether the documented divergences explain a formula difference.

The explained runs (``harness.runner.ExplainedRun``) rerun the engine side with divergence
switches on (``harness.engine.divergence``): the engine follows PyTorch wherever it differs
by design. They are compared with the other side exactly as the float64 verdict compares the
ordinary runs (``harness.trajectory.precision_verdict``): if the explained float64 runs agree
to rounding, the switches explain the gap; if they still part, something besides the
documented divergences parts the two sides (a bug, or a difference nobody documented).

Which switches explain it: every switch the all-on run consulted (its code ran); when one of
two alone explains it, that one (the runs with fewer switches are made on demand, once per
case). When the all-on run parts, a systematic differ's own switches (those documented where
its ``because`` points) are tried alone, then each consulted switch is left out in turn: a
side given burn's f32 constants, say, is parted by the f32-hyperparameter switch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple, Protocol

import numpy as np

from harness import trajectory as traj
from harness.engine import divergence

PARTIAL = 0.5
"""The switches explain part of an unexplained gap when the all-on run's float64 max|diff| is
under this fraction of the ordinary float64 runs' (a switch that changed nothing leaves the
gap as it was, to rounding)."""

FIRST_KEYS = 3  # keys named in an unexplained verdict


class Cause(StrEnum):
    EXPLAINED = "explained"  # with the switches on the float64 runs agree to rounding
    UNEXPLAINED = "unexplained"  # with every switch on they still part
    UNTESTED = "untested"  # no explained run applies (``note`` says why)


@dataclass(frozen=True)
class Explanation:
    """What the explained runs say about a formula difference.

    ``switches``: EXPLAINED, those that explain it; UNEXPLAINED, those that explain part of it
    (may be empty). ``keys``: UNEXPLAINED, the first keys whose explained float64 runs still
    part. ``gap64``: float64 max|diff| of the ordinary runs and of the closest explained run.
    """

    cause: Cause
    switches: tuple[divergence.Switch, ...] = ()
    keys: tuple[str, ...] = ()
    gap64: tuple[float, float] | None = None
    note: str = ""

    @property
    def targets(self) -> tuple[str, ...]:
        """Where the switches are documented (``because=`` values), each once."""
        return tuple(dict.fromkeys(s.target for s in self.switches))


class Runs(Protocol):
    """``harness.runner.Explainer``: the explained runs of a case, by set of switches."""

    def run(self, switches: tuple[str, ...]) -> Any: ...

    def all_on(self) -> Any: ...


Sides = tuple[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]]


def explain(
    runs: Runs | None,
    select: Callable[[Any], Sides | str],
    gap64: float,
    *,
    preferred: tuple[str, ...] = (),
) -> Explanation:
    """Explain a formula difference whose ordinary float64 runs part by ``gap64`` (max|diff|).

    ``select(explained_run)``: the check's four value sets (left, right, left float64, right
    float64) with the engine side's taken from that explained run, or why it cannot apply.
    ``preferred``: switches to try alone first when the all-on run parts (those documented
    where a differ's ``because`` points), before leaving each consulted switch out in turn.
    """
    if runs is None:
        return Explanation(Cause.UNTESTED, note="no explained run (made without float64 reruns)")
    all_on = runs.all_on()
    if all_on.error:
        return Explanation(Cause.UNTESTED, note=f"the explained run failed: {all_on.error}")

    def analysed(run) -> _Verdict | str:
        return _analysed(run, select)

    first = analysed(all_on)
    if isinstance(first, str):
        return Explanation(Cause.UNTESTED, note=first)
    consulted = all_on.consulted
    if _rounds(first):
        return Explanation(Cause.EXPLAINED, _switches(_narrowed(runs, consulted, analysed)))
    tried = [(consulted, all_on, first)]
    preferred = tuple(n for n in preferred if n in consulted)
    if preferred and preferred != consulted and _rounds(analysed(runs.run(preferred))):
        return Explanation(Cause.EXPLAINED, _switches(preferred))
    for left_out in consulted if len(consulted) > 1 else ():
        kept = tuple(n for n in consulted if n != left_out)
        report_kept = analysed(runs.run(kept))
        if _rounds(report_kept):
            return Explanation(Cause.EXPLAINED, _switches(_narrowed(runs, kept, analysed)))
        if not isinstance(report_kept, str):
            tried.append((kept, runs.run(kept), report_kept))
    return _unexplained(gap64, tried, select)


def _unexplained(ordinary64: float, tried, select) -> Explanation:
    """An unexplained difference: the first keys that still part with the switches on, and
    the set of switches that came closest, if it closes most of the float64 gap."""
    names, run, best = min(tried, key=lambda t: t[2].gap64)
    gap64 = (ordinary64, best.gap64)
    partial = names if gap64[1] < PARTIAL * gap64[0] else ()
    return Explanation(Cause.UNEXPLAINED, _switches(partial), parting_keys(*select(run)), gap64)


NARROWED = 2
"""Sets of switches up to this size are narrowed to one that explains the gap alone (one run
per switch); a larger set is named whole (the runs would cost more than the name gains)."""


def _narrowed(runs: Runs, names: tuple[str, ...], analysed) -> tuple[str, ...]:
    """The one switch of ``names`` that explains the gap alone, if one does; else all."""
    for name in names if 1 < len(names) <= NARROWED else ():
        if _rounds(analysed(runs.run((name,)))):
            return (name,)
    return names


class _Verdict(NamedTuple):
    """The float64 verdict of one explained run against the other side, and its float64 gap
    (only what explaining needs: no growth fit, no per-step tolerance pass)."""

    precision: traj.PrecisionVerdict
    gap64: float


def _analysed(run, select) -> _Verdict | str:
    if run.error:
        return f"the explained run failed: {run.error}"
    sides = select(run)
    if isinstance(sides, str):
        return sides
    left, right, left64, right64 = sides
    try:
        steps = traj.step_count({**left, **{f"{k} (right)": v for k, v in right.items()}})
        if set(left) != set(left64) or set(right) != set(right64) or set(left) != set(right):
            raise traj.TrajectoryError("the explained run has other keys")
        if traj.step_count(left64) != steps:
            raise traj.TrajectoryError("the float64 runs have another number of steps")
    except traj.TrajectoryError as exc:
        return f"the explained run is not a trajectory: {exc}"
    dtype32 = next(iter(left.values())).dtype.name
    dtype64 = next(iter(left64.values())).dtype.name
    precision = traj.precision_verdict(
        traj.eps_gaps(left, right, left64, steps, dtype32),
        traj.eps_gaps(left64, right64, left64, steps, dtype64),
    )
    gaps = (np.abs(left64[k].astype(np.float64) - right64[k]) for k in left64)
    gap64 = max((float(np.max(g[np.isfinite(g)], initial=0.0)) for g in gaps), default=0.0)
    return _Verdict(precision, gap64)


def _rounds(verdict: _Verdict | str) -> bool:
    return not isinstance(verdict, str) and verdict.precision.verdict == traj.Precision.ROUNDING


def _switches(names) -> tuple[divergence.Switch, ...]:
    return tuple(divergence.switch(n) for n in names)


def parting_keys(left, right, left64, right64, limit: int = FIRST_KEYS) -> tuple[str, ...]:
    """The first keys (in the check's order) whose float64 runs part, by the float64 verdict
    applied to each key alone."""
    found = []
    for key in left:
        one = ({key: left[key]}, {key: right[key]}, {key: left64[key]}, {key: right64[key]})
        steps = traj.step_count(one[0])
        verdict = traj.precision_verdict(
            traj.eps_gaps(one[0], one[1], one[2], steps, one[0][key].dtype.name),
            traj.eps_gaps(one[2], one[3], one[2], steps, one[2][key].dtype.name),
        )
        if verdict.verdict == traj.Precision.FORMULA:
            found.append(key)
            if len(found) == limit:
                break
    return tuple(found)


# ---------------------------------------------------------------------------------------------
# The sentences the checks print


UNEXPLAINED = "unexplained: a difference in one side's code; not a documented burn behaviour"


def _named(switches: tuple[divergence.Switch, ...]) -> str:
    return ", ".join(f"{s.name} ({s.doc}; documented at {s.target})" for s in switches)


def _because(explanation: Explanation) -> str:
    return " or ".join(f'because="{t}"' for t in explanation.targets)


def _remains(explanation: Explanation) -> str:
    if explanation.note:
        return explanation.note
    keys = ", ".join(explanation.keys) or "the keys together"
    text = f"with the divergence switches on, the float64 runs still part (first keys: {keys})"
    if explanation.switches:
        before, after = explanation.gap64 or (0.0, 0.0)
        text += (
            f"; {', '.join(s.name for s in explanation.switches)} explains part of it "
            f"(float64 max|diff| {before:.2g} -> {after:.2g})"
        )
    return text


def key_note(explanation: Explanation) -> str:
    """What the explained runs say about the keys of an agree or differ check whose float64
    runs part (one report line)."""
    if explanation.cause == Cause.EXPLAINED:
        return f"float64: explained by {_named(explanation.switches)}"
    if explanation.cause == Cause.UNEXPLAINED:
        return f"float64: {UNEXPLAINED} ({_remains(explanation)})"
    return f"float64: not tested by an explained run: {explanation.note}"


def trajectory_message(explanation: Explanation) -> str:
    """A failing trajectory check's message: its cause, and a ``differ`` only when the
    documented divergences explain it."""
    if explanation.cause == Cause.EXPLAINED:
        return (
            f"formula difference, explained by {_named(explanation.switches)}: with the "
            "engine following PyTorch there the float64 runs agree to rounding; declare it "
            f"with differ(..., {_because(explanation)}, systematic=True)"
        )
    if explanation.cause == Cause.UNEXPLAINED:
        return f"formula difference, {UNEXPLAINED} ({_remains(explanation)})"
    return f"formula difference: the float64 runs part too ({explanation.note})"


def systematic_message(explanation: Explanation, because: str) -> tuple[bool | None, str]:
    """What the explained runs add to a systematic differ whose float64 runs part: ``(False,
    why)`` when an unexplained difference remains, ``(None, note)`` when they cannot tell
    (the differ's own verdict stands)."""
    if explanation.cause == Cause.EXPLAINED:
        return None, f"the documented divergences explain it: {_named(explanation.switches)}"
    if explanation.cause == Cause.UNEXPLAINED:
        return False, (
            f"an unexplained formula difference remains besides {because}: "
            f"{_remains(explanation)}; {UNEXPLAINED}"
        )
    return None, f"not tested by an explained run: {explanation.note}"
