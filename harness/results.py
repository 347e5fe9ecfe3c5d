"""The results of a case run as typed data: what every renderer, the CLI and pytest read.

A ``CaseReport`` is built once per case by the runner, from the case's run, its evaluated
checks and its golden comparisons. It holds no functions and no live values (only ``Diff``
data, strings and plain dicts), so it pickles: ``compare.py --jobs N`` sends it from the worker
processes back to the parent. Renderers (``harness.report``) only read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from harness.diff import Diff
from harness.mismatches import Element, RowDetail
from harness.trajectory import KeyPrecision, Precision, TrajectoryReport


class CheckKind(StrEnum):
    """The kinds of check a case declares: ``harness.case.agree`` / ``differ`` / ``expect``."""

    AGREE = "agree"  # the two sides agree within tolerance
    DIFFER = "differ"  # a documented divergence: the sides differ and a relation holds
    EXPECT = "expect"  # a one-sided fact fixed by the spec
    TRAJECTORY = "trajectory"  # step by step, with growth and the float64 verdict


class GoldenStatus(StrEnum):
    """What comparing (or rewriting) one side's golden found."""

    # Checking a golden (harness.golden.check_golden)
    IDENTICAL = "identical"  # same bytes as the committed golden
    EQUAL_VALUES = "equal_values"  # text differs, values bit-identical
    WITHIN_TOL = "within_tol"  # values within tolerance, environment fingerprint differs
    MISSING = "missing"  # no golden yet: written, and the run fails until it is reviewed
    MISMATCH = "mismatch"  # beyond tolerance, or not bit-identical in the same environment
    UNREADABLE = "unreadable"  # the committed golden does not decode
    # Rewriting a golden (harness.golden.update_golden, --update-golden)
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    # Decided by the runner, not by comparing values
    REFUSED = "refused"  # --update-golden without --force while an agree check fails, or
    # (pytest plugin) the golden is not a regular file within its size limit (harness.bounded)
    NOT_RUN = "not_run"  # a side raised: there is no output to compare
    NONDETERMINISTIC = "nondeterministic"  # two runs of one side in one process differ


@dataclass(frozen=True)
class CheckReport:
    """One evaluated check.

    ``diff`` is the comparison table (None for ``expect`` checks and checks that compared
    nothing); ``documented_by`` the first docstring line a ``differ`` check's ``because`` names.
    ``because`` and ``samples`` (``(key, left value, right value)`` one-line summaries per
    matched key) are set for differ checks only; ``relation`` is the relation's text of a differ
    or expect check. ``details`` holds the elements behind the rows of ``diff``
    (``harness.mismatches``): for every row of an agree check (the summary's headline reads
    them), for the rows of a failing check of another kind. ``trajectory`` is the step-by-step
    analysis of a trajectory check or a systematic differ (``harness.trajectory``).
    ``precision``: an agree or differ check of a case with float64 reruns, the float64 verdict
    of each key (rounding or formula; ``harness.trajectory.key_precisions``), and for keys
    whose float64 runs part, ``explanation``: whether the divergence switches explain them.
    """

    label: str
    kind: CheckKind
    ok: bool
    message: str
    diff: Diff | None = None
    documented_by: str = ""
    pattern: str | None = None
    because: str | None = None
    relation: str | None = None
    samples: tuple[tuple[str, str, str], ...] | None = None
    details: tuple[RowDetail, ...] = ()
    trajectory: TrajectoryReport | None = None
    precision: tuple[KeyPrecision, ...] = ()
    explanation: str = ""  # the explained runs' word on the keys of ``parts64`` (one line)

    @property
    def parts64(self) -> tuple[str, ...]:
        """The keys whose float64 runs part (a formula difference)."""
        return tuple(p.key for p in self.precision if p.verdict == "formula")


@dataclass(frozen=True)
class GoldenReport:
    """One side's golden: compared with this run's output, or rewritten from it.

    ``env`` is the committed golden's environment when one was compared (the HTML report's
    "committed goldens" column); None when there was none (missing, created), it was just
    overwritten (updated), or nothing was compared. ``details``: the elements behind the
    failing rows of ``diff``.
    """

    case: str
    side: str
    status: GoldenStatus
    ok: bool
    message: str
    diff: Diff | None = None
    path: Path | None = None
    env: dict | None = None
    details: tuple[RowDetail, ...] = ()


@dataclass(frozen=True)
class Frame:
    """One frame of a traceback: file, line number, function and the source line."""

    file: str
    line: int
    function: str
    code: str


@dataclass(frozen=True)
class SideError:
    """The exception a case side raised, with the last frames of the case code.

    ``frames`` run from the case file's outermost frame to where the exception was raised
    (the harness's own frames dropped); ``omitted`` counts frames left out in the middle of a
    deep stack; ``rerun`` is True when only the second run of the side raised.
    """

    side: str
    type: str
    message: str
    frames: tuple[Frame, ...]
    omitted: int = 0
    rerun: bool = False


def agree_checks_hold(checks: Iterable[CheckReport]) -> bool:
    """Every check of kind agree among ``checks`` holds (``CaseReport.agrees_hold``)."""
    return all(c.ok for c in checks if c.kind == CheckKind.AGREE)


# ---------------------------------------------------------------------------------------------
# Localisation: where inside a step the sides part (computed by harness.localise)

PHASES = ("input", "forward", "grad_output", "grad_input")
"""What is captured per module call: its first tensor argument, its output, the gradient into
that output, and the gradient it passes back to its input."""

WHAT = {
    "input": "input",
    "forward": "output",
    "grad_output": "output gradient",
    "grad_input": "input gradient",
}
DIRECTION = {"input": "forward", "forward": "forward"} | dict.fromkeys(
    ("grad_output", "grad_input"), "backward"
)


@dataclass(frozen=True)
class ModuleRow:
    """One captured value compared: where (step, phase, torch path, engine path, call), its
    shape and whether only a stride of it was kept, the float32 and float64 pairs' max|diff|,
    the float64 excess in bits over rounding, and the verdict."""

    step: int
    phase: str  # one of PHASES
    path: str
    engine_path: str
    call: int
    shape: tuple[int, ...]
    strided: bool
    max_abs32: float
    max_abs64: float
    excess_bits: float
    verdict: Precision

    @property
    def what(self) -> str:
        return WHAT[self.phase]

    @property
    def direction(self) -> str:
        return DIRECTION[self.phase]


@dataclass(frozen=True)
class Localisation:
    """The per-module table in model order, the first row that leaves rounding (None:
    rounding everywhere), the steps captured, and the torch values with no engine counterpart
    (path not found, or another shape), as ``"<path> <what>"``; ``op``: the first engine op
    of that module call no torch op explains (``harness.localise.ops``)."""

    rows: tuple[ModuleRow, ...]
    first: ModuleRow | None
    steps: int
    unmatched: tuple[str, ...]
    op: OpVerdict | None = None  # where inside ``first`` (a forward output), when looked for


@dataclass(frozen=True)
class OpVerdict:
    """The op the engine's formula parts at: its name, its index among the ``count`` engine
    ops the call recorded, its output's shape, and how many torch ops the call recorded."""

    name: str
    index: int
    count: int
    shape: tuple[int, ...]
    torch_ops: int


@dataclass(frozen=True)
class CaseReport:
    """Everything one case run found: its checks, its goldens (by side), determinism.

    ``error`` is the exception a side raised, in one line (every check then fails with it),
    and ``raised`` the same exception with its traceback; ``nondeterministic`` the sides whose
    two runs differed; ``env`` the environment block each side's output was written with;
    ``seconds`` the wall time of the run (None when not timed); ``localisation`` where inside
    a step the sides part (a case with ``LOCALISE``; never part of ``ok``).
    """

    case: str
    doc: str
    checks: tuple[CheckReport, ...]
    goldens: dict[str, GoldenReport]
    error: str | None = None
    nondeterministic: tuple[str, ...] = ()
    env: dict[str, dict] = field(default_factory=dict)
    seconds: float | None = None
    raised: SideError | None = None
    localisation: Localisation | None = None  # of a case with LOCALISE
    localise_error: str | None = None  # what stopped it (a side raised under capture)

    @property
    def ok(self) -> bool:
        return (
            all(c.ok for c in self.checks)
            and all(g.ok for g in self.goldens.values())
            and not self.nondeterministic
        )

    @property
    def agrees_hold(self) -> bool:
        """Every agree check holds: what a golden rewrite without ``--force`` requires."""
        return agree_checks_hold(self.checks)

    def check(self, label: str) -> CheckReport:
        """The check with this label (labels are unique within a case)."""
        for check in self.checks:
            if check.label == label:
                return check
        raise KeyError(label)

    def agree_ulps(self) -> list[tuple[int, str]]:
        """``(max_ulp, "case::key")`` of every row of the agree checks that has one."""
        return [
            (row.max_ulp, f"{self.case}::{row.key}")
            for c in self.checks
            if c.kind == CheckKind.AGREE and c.diff is not None
            for row in c.diff.rows
            if row.max_ulp is not None
        ]


@dataclass(frozen=True)
class Spot:
    """One element named by the summary: its case, check, row key and the element itself."""

    case: str
    check: str
    key: str
    dtype: str
    element: Element


@dataclass(frozen=True)
class Headline:
    """The worst of the agree checks, decided by the tolerance, not by values near zero.

    ``worst_ratio``: the element whose ``|a - b|`` is the largest fraction of its tolerance
    (1.0 = at the limit). ``worst_ulp``: the largest ULP distance among the elements away from
    zero; ``ulp_left_out`` counts the elements left out of it (both magnitudes within atol of
    zero or below the smallest normal number) of the ``elements`` float elements compared.
    """

    worst_ratio: Spot | None
    worst_ulp: Spot | None
    ulp_left_out: int
    elements: int


def headline(reports: Sequence[CaseReport]) -> Headline:
    """The headline over the agree checks of these reports (first of equals wins: stable)."""
    worst_ratio = worst_ulp = None
    left_out = elements = 0
    for report in reports:
        for check in report.checks:
            if check.kind != CheckKind.AGREE:
                continue
            for detail in check.details:
                left_out += detail.ulp_left_out
                if detail.dtype.startswith("float"):
                    elements += _row_size(check, detail.key)
                ratio, ulp = detail.worst_ratio, detail.worst_ulp
                if ratio is not None and (
                    worst_ratio is None or ratio.ratio > worst_ratio.element.ratio
                ):
                    worst_ratio = Spot(report.case, check.label, detail.key, detail.dtype, ratio)
                if ulp is not None and (worst_ulp is None or ulp.ulp > worst_ulp.element.ulp):
                    worst_ulp = Spot(report.case, check.label, detail.key, detail.dtype, ulp)
    return Headline(worst_ratio, worst_ulp, left_out, elements)


def _row_size(check: CheckReport, key: str) -> int:
    if check.diff is None:
        return 0
    return next((row.n for row in check.diff.rows if row.key == key), 0)
