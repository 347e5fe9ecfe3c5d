"""The case API: what a case author writes in ``cases/<name>.py``, and how it is loaded.

A case module holds a docstring (what the experiment shows), ``torch_side()`` and
``engine_side()`` (each returns an ordered mapping of named values), ``CHECKS`` (a list of
:func:`agree` / :func:`differ` / :func:`expect` / :func:`trajectory`), and optionally
``TOLERANCES`` (glob -> :class:`~harness.tolerances.Tolerance` with a reason) overriding the
per-dtype defaults, and ``GOLDEN_TOLERANCES``: how far a golden written under other numerics
(another CPU's kernels) may be, where that exceeds ``TOLERANCES`` (a long training run whose
rounding another CPU amplifies further; state the cross-CPU measurement behind it). A case
with a trajectory check (or a systematic differ) is also run in float64: its sides take a
``dtype`` parameter (``torch_side(dtype=torch.float32)``, ``engine_side(dtype="float32")``),
which the float64 rerun sets to ``torch.float64`` / ``"float64"``. ``GOLDEN_SUMMARY``
(a list of key globs) marks bulky tensors whose goldens keep dtype, shape, sha256 and summary
statistics instead of data (``harness.golden_summary``).
:func:`capture` records an error as a value; the relations below say what holds between the
two sides of a documented divergence.

This module is the author's vocabulary only: running a case (threads, seeds, ``out/``, reruns)
is ``harness.runner``, evaluating its checks ``harness.checks``; it never imports pytest and
never formats text.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness import record
from harness.results import CheckKind
from harness.tolerances import Tolerance, check_overrides, resolve
from harness.trajectory import Growth, HalfCause

SIDES = ("torch", "engine")
ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "cases"
GOLDEN_DIR = ROOT / "golden"  # the default folders of a run (harness.runner.Dirs)
OUT_DIR = ROOT / "out"


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


class _TwoSided:
    """The label of a check between two sides: ``<kind>:<pattern>:<left>~<right>``."""

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.pattern}:{self.left.label}~{self.right.label}"


@dataclass(frozen=True)
class Agree(_TwoSided):
    pattern: str
    left: SideRef
    right: SideRef
    tol: Tolerance | None = None
    note: str = ""
    kind: CheckKind = field(default=CheckKind.AGREE, init=False)


@dataclass(frozen=True)
class Differ(_TwoSided):
    pattern: str
    left: SideRef
    right: SideRef
    because: str
    relation: Relation | None
    tol: Tolerance | None = None
    systematic: bool | Growth = False  # a trajectory whose float64 runs part (see differ())
    kind: CheckKind = field(default=CheckKind.DIFFER, init=False)


@dataclass(frozen=True)
class Expect:
    pattern: str
    ref: SideRef
    relation: Relation
    kind: CheckKind = field(default=CheckKind.EXPECT, init=False)

    @property
    def label(self) -> str:
        return f"expect:{self.pattern}:{self.ref.label}"


@dataclass(frozen=True)
class Trajectory(_TwoSided):
    pattern: str
    left: SideRef
    right: SideRef
    tol: Tolerance | None = None
    note: str = ""
    float32: tuple[SideRef, SideRef] | None = None  # a half pair's float32 reruns
    expect: HalfCause = HalfCause.ROUNDING  # a half pair's verdict that the check holds for
    kind: CheckKind = field(default=CheckKind.TRAJECTORY, init=False)


Check = Agree | Differ | Expect | Trajectory


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
    relation: Relation | None = None,
    left: str = "torch",
    right: str = "engine",
    tol: Tolerance | None = None,
    systematic: bool | str = False,
) -> Differ:
    """A documented divergence: passes only while the values differ and ``relation`` holds.

    ``because`` is the dotted path of the engine object whose docstring documents the
    divergence (``"harness.engine.tensor.Tensor.detach"``); it is resolved when the check runs.
    If the values come to agree, the check fails with "expected divergence vanished".

    ``systematic``: the values are trajectories (see :func:`trajectory`) that part by a formula
    difference. The check then holds only while the float64 reruns part too and, if a growth
    class is named (``"linear"``, ``"saturating"``, ...; ``True`` names none), while the gap
    grows that way, and while the explained run (the engine side with its divergence switches
    on, ``harness.engine.divergence``) agrees to rounding: otherwise something besides the
    documented divergences parts the runs. A fix that makes the gap rounding fails it with
    "expected divergence vanished". ``relation`` is optional then (when given it must hold as
    well).
    """
    if not because:
        raise CaseDefinitionError(f"differ({pattern!r}): 'because' must name an engine docstring")
    classes = [g for g in Growth if g != Growth.UNDETERMINED]
    if systematic not in (True, False) and systematic not in classes:
        raise CaseDefinitionError(
            f"differ({pattern!r}): systematic={systematic!r}: expected True, False or one of "
            f"{[str(g) for g in classes]}"
        )
    if relation is None and not systematic:
        raise CaseDefinitionError(f"differ({pattern!r}): 'relation' is required")
    growth = Growth(systematic) if isinstance(systematic, str) else systematic
    return Differ(
        pattern, SideRef.parse(left), SideRef.parse(right), because, relation, tol, growth
    )


def trajectory(
    pattern: str,
    left: str = "torch",
    right: str = "engine",
    *,
    tol: Tolerance | None = None,
    note: str = "",
    float32: tuple[str, str] | None = None,
    expect: str = "rounding",
) -> Trajectory:
    """The values matching ``pattern`` are trajectories (float tensors whose first axis is
    the step) that the two sides compute with the same formula.

    Compared step by step: max|diff|, max ULP and mismatches per step, the first step over
    the tolerance and the growth of the gap; the case is also run in float64 on both sides.
    The check holds while the float64 runs agree to float64 rounding (so the float32 gap,
    whatever its size, is rounding) and fails when they part too (a formula difference; the
    explained run, the engine side with its divergence switches on, tells whether a documented
    divergence explains it, to be declared with ``differ(..., systematic=True)``, or not).
    ``tol`` sets the per-step tolerance the report measures against (default: the case's);
    ``left`` / ``right`` as in :func:`agree`. The reference for "closer to exact" is the left
    side's float64 run.

    A pair in a half format (float16, bfloat16) names its float32 reruns: ``float32=(left,
    right)``, side references as ``left`` / ``right`` (a half case records them beside its
    half runs; its float64 rerun records each run under the half run's keys). The check then
    holds while the half verdict (``harness.trajectory.half``) is ``expect``: ``"rounding"``
    (the gap shrinks in float32 and both sides round alike), ``"accumulation"`` (one side
    keeps more of the computation in float32) or ``"formula"`` (the gap does not shrink).
    """
    causes = [c.value for c in HalfCause]
    if expect not in causes or (expect != "rounding" and float32 is None):
        raise CaseDefinitionError(
            f"trajectory({pattern!r}): expect={expect!r}: one of {causes}, and other than "
            "'rounding' only for a half pair (float32=...)"
        )
    refs = None if float32 is None else (SideRef.parse(float32[0]), SideRef.parse(float32[1]))
    return Trajectory(
        pattern, SideRef.parse(left), SideRef.parse(right), tol, note, refs, HalfCause(expect)
    )


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


def within(bound: float, why: str) -> Relation:
    """Same shape, every element within ``bound`` absolute (``why``: what the gap is)."""

    def holds(left: Any, right: Any) -> bool:
        left, right = np.asarray(left, np.float64), np.asarray(right, np.float64)
        return left.shape == right.shape and bool(np.abs(left - right).max() <= bound)

    return Relation(f"within {bound:g}: {why}", holds)


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
# Localising: where inside a step the sides part (run by harness.localise)


@dataclass(frozen=True)
class Localise:
    """A case's opt-in (``LOCALISE = localise(steps=2)``): which steps are captured, the size
    over which a tensor is kept as a stride of its elements, and path mappings beyond weight
    import's (``paths``: exact torch path -> engine path; ``remap``: ``(pattern, replacement)``
    pairs in burn-store's ``KeyRemapper`` syntax, applied to torch paths first)."""

    steps: int = 1
    cap: int = 65536
    paths: tuple[tuple[str, str], ...] = ()
    remap: tuple[tuple[str, str], ...] = ()


def localise(
    *,
    steps: int = 1,
    cap: int = 65536,
    paths: dict[str, str] | None = None,
    remap: tuple[tuple[str, str], ...] = (),
) -> Localise:
    """The ``LOCALISE`` of a case file (see :class:`Localise`): the sides run four more times
    under module capture (``harness.localise``), in float32 and float64."""
    if steps < 1 or cap < 1:
        raise ValueError(f"localise: steps and cap must be at least 1, got {steps} and {cap}")
    return Localise(steps, cap, tuple((paths or {}).items()), tuple(remap))


# ---------------------------------------------------------------------------------------------
# Cases


@dataclass(frozen=True)
class Case:
    name: str
    doc: str
    path: Path
    torch_side: Callable[..., Mapping[str, Any]]
    engine_side: Callable[..., Mapping[str, Any]]
    checks: tuple[Check, ...]
    tolerances: Mapping[str, Tolerance]
    golden_tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    localise: Localise | None = None  # where inside a step the sides part
    golden_summary: tuple[str, ...] = ()  # key globs whose goldens keep a summary only

    def side_fn(self, side: str) -> Callable[..., Mapping[str, Any]]:
        return self.torch_side if side == "torch" else self.engine_side

    @property
    def needs_float64(self) -> bool:
        """Trajectory checks and systematic differs compare the sides' float64 reruns."""
        return any(_needs_float64(check) for check in self.checks)

    def tol_for(self, key: str, dtype: str) -> Tolerance:
        return resolve(key, dtype, self.tolerances)

    def golden_tol_for(self, key: str, dtype: str) -> Tolerance:
        """A golden's tolerance under other numerics: ``GOLDEN_TOLERANCES``, else ``tol_for``."""
        merged = dict(self.golden_tolerances)
        for pattern, tol in self.tolerances.items():
            merged.setdefault(pattern, tol)
        return resolve(key, dtype, merged)


def load_case(path: Path) -> Case:
    """Import one case file and validate its shape."""
    name = path.stem
    spec = importlib.util.spec_from_file_location(f"cases.{name}", path)
    if spec is None or spec.loader is None:
        raise CaseDefinitionError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    # From its source, never from a bytecode cache: the cache is keyed by the source's mtime in
    # whole seconds and its size, so a case edited to the same size within a second of its last
    # run (a changed digit) would run as it was.
    exec(spec.loader.source_to_code(path.read_bytes(), str(path)), module.__dict__)
    for attr in ("torch_side", "engine_side", "CHECKS"):
        if not hasattr(module, attr):
            raise CaseDefinitionError(f"{path}: {attr}: missing")
    if not (module.__doc__ or "").strip():
        raise CaseDefinitionError(f"{path}: docstring: missing (say what the case shows)")
    checks = tuple(module.CHECKS)
    if not checks:
        raise CaseDefinitionError(f"{path}: CHECKS: empty (a case must check something)")
    for check in checks:
        if not isinstance(check, Agree | Differ | Expect | Trajectory):
            raise CaseDefinitionError(
                f"{path}: CHECKS: {check!r} is not agree/differ/expect/trajectory"
            )
    if any(_needs_float64(check) for check in checks):
        for attr in ("torch_side", "engine_side"):
            _check_dtype_parameter(path, attr, getattr(module, attr))
    labels = [c.label for c in checks]
    if len(set(labels)) != len(labels):
        raise CaseDefinitionError(f"{path}: CHECKS: duplicate check {labels}")
    localise = _localise_of(path, module)
    tolerances = dict(getattr(module, "TOLERANCES", {}))
    golden_tolerances = dict(getattr(module, "GOLDEN_TOLERANCES", {}))
    for attr, table in (("TOLERANCES", tolerances), ("GOLDEN_TOLERANCES", golden_tolerances)):
        try:  # here, once, rather than as a traceback from the first comparison that uses it
            check_overrides(table)
        except ValueError as exc:
            raise CaseDefinitionError(f"{path}: {attr}: {exc}") from None
    return Case(
        name=name,
        doc=module.__doc__.strip(),
        path=path,
        torch_side=module.torch_side,
        engine_side=module.engine_side,
        checks=checks,
        tolerances=tolerances,
        golden_tolerances=golden_tolerances,
        localise=localise,
        golden_summary=golden_summary_of(
            getattr(module, "GOLDEN_SUMMARY", ()), f"{path}: GOLDEN_SUMMARY"
        ),
    )


def golden_summary_of(patterns: Any, where: str) -> tuple[str, ...]:
    """``GOLDEN_SUMMARY`` (or the fixture's ``summary=``) as a tuple of non-empty globs;
    ``where`` starts the error's line."""
    if isinstance(patterns, str) or not isinstance(patterns, Sequence):
        raise CaseDefinitionError(f"{where}: expected a list of key globs, got {patterns!r}")
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern:
            raise CaseDefinitionError(f"{where}: {pattern!r} is not a non-empty key glob")
    return tuple(patterns)


def _localise_of(path: Path, module) -> Any:
    """The case's ``LOCALISE`` (``localise(...)``), or None; its sides then
    take ``dtype``: the localisation compares float32 and float64 runs."""
    found = getattr(module, "LOCALISE", None)
    if found is None:
        return None
    if not isinstance(found, Localise):
        raise CaseDefinitionError(
            f"{path}: LOCALISE: expected harness.case.localise(...), got {found!r}"
        )
    for attr in ("torch_side", "engine_side"):
        _check_dtype_parameter(path, attr, getattr(module, attr))
    return found


def _needs_float64(check: Check) -> bool:
    return isinstance(check, Trajectory) or (isinstance(check, Differ) and bool(check.systematic))


def _check_dtype_parameter(path: Path, attr: str, fn: Callable) -> None:
    """A side of a case with trajectory checks (or LOCALISE) takes ``dtype`` (with a float32
    default)."""
    parameter = inspect.signature(fn).parameters.get("dtype")
    if parameter is None or parameter.default is inspect.Parameter.empty:
        raise CaseDefinitionError(
            f"{path}: {attr}: needs a 'dtype' parameter with a float32 default "
            "(trajectory checks and LOCALISE rerun both sides in float64)"
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
# Recording an error as a value


def capture(fn: Callable[[], Any]) -> Any:
    """Run ``fn``; return its result, or the exception it raised as a ``CapturedError``."""
    try:
        return fn()
    except Exception as exc:  # a case records any error as a value
        return record.CapturedError.from_exception(exc)
