"""Running one case: both sides under pinned threads and seeds, ``out/`` written, reruns
compared, checks evaluated, goldens compared; the result is a ``CaseReport``.

The runner returns results and never prints. ``report_for`` caches one report per case and
process, so the pytest items of one case (one per check, one golden per side) run the
experiment once; ``harness.session`` runs many cases (shards, worker processes, progress).
"""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import environment, golden, record
from harness.bounded import RefusedFile
from harness.case import GOLDEN_DIR, OUT_DIR, SIDES, Case
from harness.checks import evaluate
from harness.diff import Diff, diff_values
from harness.engine import divergence  # the package import registers every switch
from harness.mismatches import LIMIT
from harness.pinning import FLOAT64, THREADS, pinned, side_dtype
from harness.results import (
    CaseReport,
    CheckReport,
    Frame,
    GoldenReport,
    GoldenStatus,
    Localisation,
    SideError,
    agree_checks_hold,
)
from harness.tolerances import Tolerance

MAX_FRAMES = 8  # frames of a side's traceback kept: the case's first two, then the last ones

# ---------------------------------------------------------------------------------------------
# Running both sides


def run_side(
    case: Case, side: str, threads: int = THREADS, dtype: str | None = None
) -> dict[str, Any]:
    """Run one side under pinned threads and seeds; return its normalized values.

    ``dtype`` (``"float64"``): the rerun of a case with trajectory checks; the side receives
    its framework's dtype object (``torch.float64``; the engine's ``"float64"``).
    """
    with pinned(side, threads):
        fn = case.side_fn(side)
        return record.normalize(fn() if dtype is None else fn(dtype=side_dtype(side, dtype)))


def side_error(case: Case, side: str, exc: BaseException, *, rerun: bool = False) -> SideError:
    """The exception a side raised as data: type, message, and the frames of the case code.

    The harness's own frames (this module's, above the side function) are dropped; a deep
    stack keeps the case's first two frames and the last ones, where the error was raised.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    start = next(
        (i for i, f in enumerate(frames) if Path(f.filename) == Path(case.path)),
        next((i for i, f in enumerate(frames) if Path(f.filename) != Path(__file__)), 0),
    )
    kept = [
        Frame(f.filename, f.lineno or 0, f.name, (f.line or "").strip()) for f in frames[start:]
    ]
    omitted = max(0, len(kept) - MAX_FRAMES)
    if omitted:
        kept = kept[:2] + kept[len(kept) - (MAX_FRAMES - 2) :]
    message = str(exc)
    return SideError(side, type(exc).__name__, message, tuple(kept), omitted, rerun)


@dataclass
class CaseRun:
    """Both sides' canonical texts and decoded values, plus determinism findings.

    ``texts[side]`` is the JSON text of ``out/<case>/<side>.json`` (sidecar references, not
    data, for large tensors); ``env`` is the environment block both sides were written with.
    ``values64[side]``: the float64 rerun of a case with trajectory checks, as decoded from
    ``out/<case>/<side>.float64.json`` (never a golden: goldens hold the float32 runs only).
    """

    case: Case
    texts: dict[str, str]
    values: dict[str, dict[str, Any]]
    nondeterministic: dict[str, Diff]
    error: str | None = None
    env: dict[str, Any] = field(default_factory=dict)
    raised: SideError | None = None
    values64: dict[str, dict[str, Any]] = field(default_factory=dict)
    explainer: Explainer | None = None  # the explained runs (cases with float64 reruns)


def run_case(
    case: Case,
    out_dir: Path = OUT_DIR,
    *,
    repeat: bool = True,
    sidecar_threshold: int = record.SIDECAR_THRESHOLD,
    threads: int = THREADS,
    float64: bool = True,
) -> CaseRun:
    """Run both sides (twice, to tell non-determinism from non-conformance), write ``out/``.

    Each side is written with ``record.write_side`` (atomic; tensors above the threshold go
    to ``.npy`` sidecars) before the second run, so a side that mutates shared state cannot
    change what the first run recorded. Values are compared as decoded from the written
    files, so a check sees exactly what the golden stores. ``float64=False`` leaves out the
    float64 reruns of a case that has them: the caller runs them (``float64_runs``, maybe in
    another process) and adds them with ``add_float64``.
    """
    with pinned("torch", threads):  # thread counts as the sides run with them
        env = environment.probe()
    run = CaseRun(case, {}, {}, {}, env=env)
    folder = out_dir / case.name
    for side in SIDES:
        try:
            first = run_side(case, side, threads)
        except Exception as exc:  # a case error is a finding to report, not a crash
            run.error = f"{side}_side raised {exc!r}"
            run.raised = side_error(case, side, exc)
            return run
        _write_out(run, side, first, folder, sidecar_threshold)
        try:
            again = run_side(case, side, threads) if repeat else None
        except Exception as exc:
            run.error = f"{side}_side raised {exc!r} on its second run"
            run.raised = side_error(case, side, exc, rerun=True)
            return run
        _compare_runs(run, side, again, folder, sidecar_threshold)
    if float64 and case.needs_float64:
        found = float64_runs(case, threads, repeat)
        add_float64(run, found, folder, sidecar_threshold, threads)
    return run


@dataclass
class Float64Runs:
    """The float64 reruns of a case's sides, as run, before anything is written (they pickle:
    a worker process can run them while another runs the float32 runs).

    ``runs``: ``(side, first, again)`` per side run, in ``SIDES`` order, ``first`` pickled as
    soon as it returned (so a rerun that mutates shared state cannot change it), ``again``
    None without ``repeat``. ``error`` / ``raised``: the side that raised (no later side
    ran); ``rerun_raised``: it was that side's rerun, so its first run is the last of ``runs``.
    """

    runs: list[tuple[str, bytes, dict[str, Any] | None]] = field(default_factory=list)
    error: str | None = None
    raised: SideError | None = None
    rerun_raised: bool = False
    explained: ExplainedRun | None = None  # every divergence switch on (None after an error)


def float64_runs(case: Case, threads: int = THREADS, repeat: bool = True) -> Float64Runs:
    """Run each side in float64, twice (once without ``repeat``), stopping at an error."""
    found = Float64Runs()
    for side in SIDES:
        first: bytes | None = None
        try:
            first = pickle.dumps(run_side(case, side, threads, FLOAT64))
            again = run_side(case, side, threads, FLOAT64) if repeat else None
        except Exception as exc:  # a case error is a finding to report, not a crash
            if first is not None:  # written all the same, as a first run always is
                found.runs.append((side, first, None))
                found.rerun_raised = True
            found.error = f"{side}_side(dtype={FLOAT64}) raised {exc!r}"
            found.raised = side_error(case, side, exc)
            return found
        found.runs.append((side, first, again))
    found.explained = explained_run(case, divergence.names(), threads)
    return found


def add_float64(
    run: CaseRun, found: Float64Runs, folder: Path, threshold: int, threads: int = THREADS
) -> None:
    """Write the float64 reruns to ``out/<case>/<side>.float64.json`` and add them to the run,
    checked for determinism like the float32 runs (a difference is recorded as
    ``<side>.float64`` in ``nondeterministic``); a side that raised ends the run with its
    error. Nothing is written after a float32 error: the reruns would not have run."""
    if run.error:
        return
    for i, (side, pickled, again) in enumerate(found.runs):
        stem = f"{side}.{FLOAT64}"
        path = folder / f"{stem}.json"
        try:  # a value that cannot be written is the side's error, as in the float32 runs
            text = _write(run, path, side, pickle.loads(pickled), threshold)
        except Exception as exc:
            run.error = f"{side}_side(dtype={FLOAT64}) raised {exc!r}"
            run.raised = side_error(run.case, side, exc)
            return
        if found.rerun_raised and i == len(found.runs) - 1:
            break  # this side's rerun raised: its first run is written, nothing more
        run.values64[side] = _decoded(path, text)
        if (
            again is not None
            and record.side_text(run.case.name, side, again, run.env, threshold, stem) != text
        ):
            run.nondeterministic[stem] = _run1_vs_run2(
                run, f"{side} {FLOAT64}", run.values64[side], again
            )
    if found.error:
        run.error, run.raised = found.error, found.raised
    elif found.explained is not None:
        _write_explained(run, found.explained, folder, threshold)
        run.explainer = Explainer(run.case, threads, {found.explained.switches: found.explained})


# ---------------------------------------------------------------------------------------------
# Explained runs: the engine side with divergence switches on


EXPLAINED = "explained"


@dataclass
class ExplainedRun:
    """The engine side rerun in float32 and float64 with the divergence switches ``switches``
    on (``harness.engine.divergence``): ``values`` by dtype name; ``consulted`` the switches
    whose code ran (the diverging paths the run took); ``error`` the exception it raised."""

    switches: tuple[str, ...]
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    consulted: tuple[str, ...] = ()
    error: str | None = None


def explained_run(case: Case, switches: tuple[str, ...], threads: int = THREADS) -> ExplainedRun:
    """Run the engine side with ``switches`` on, once per dtype (no repeat: the ordinary runs
    tell determinism); an exception is recorded, not raised."""
    found = ExplainedRun(tuple(sorted(switches)))
    consulted: set[str] = set()
    for dtype in ("float32", FLOAT64):
        try:
            with divergence.follow_pytorch(*found.switches) as used:
                found.values[dtype] = run_side(
                    case, "engine", threads, None if dtype == "float32" else dtype
                )
        except Exception as exc:  # a finding to report, not a crash
            found.error = f"engine_side(dtype={dtype}) raised {exc!r} with {found.switches} on"
            return found
        consulted |= used
    found.consulted = tuple(sorted(consulted))
    return found


@dataclass
class Explainer:
    """A case's explained runs: every switch on (run with the float64 reruns, maybe in a
    worker), and on demand other sets of switches (one alone), run in this process when a
    check asks and kept for the next."""

    case: Case
    threads: int
    runs: dict[tuple[str, ...], ExplainedRun]

    def run(self, switches: tuple[str, ...]) -> ExplainedRun:
        key = tuple(sorted(switches))
        if key not in self.runs:
            self.runs[key] = explained_run(self.case, key, self.threads)
        return self.runs[key]

    def all_on(self) -> ExplainedRun:
        return self.run(divergence.names())


def _write_explained(run: CaseRun, found: ExplainedRun, folder: Path, threshold: int) -> None:
    """``out/<case>/engine.explained.json`` and ``.float64.json``: for review, never goldens.
    Values that cannot be written leave the files out (the ordinary runs wrote the same)."""
    for dtype, values in found.values.items():
        suffix = "" if dtype == "float32" else f".{dtype}"
        path = folder / f"engine.{EXPLAINED}{suffix}.json"
        with contextlib.suppress(Exception):
            _write(run, path, "engine", values, threshold)


def _write_out(run: CaseRun, side: str, values: Mapping, folder: Path, threshold: int) -> None:
    """Write ``<side>.json`` (and sidecars); keep its text and the values decoded from it."""
    path = folder / f"{side}.json"
    run.texts[side] = _write(run, path, side, values, threshold)
    run.values[side] = _decoded(path, run.texts[side])


def _compare_runs(
    run: CaseRun, side: str, again: Mapping | None, folder: Path, threshold: int
) -> None:
    """Record a self-disagreement, keeping the second run as ``<side>.rerun.json`` for review."""
    rerun = folder / f"{side}.rerun.json"
    if (
        again is None
        or record.side_text(run.case.name, side, again, run.env, threshold) == run.texts[side]
    ):
        golden.remove_side_file(rerun)  # left by an earlier non-deterministic run
        return
    _write(run, rerun, side, again, threshold)
    run.nondeterministic[side] = _run1_vs_run2(
        run, side, run.values[side], record.read_side(rerun).values
    )


def _write(run: CaseRun, path: Path, side: str, values: Mapping, threshold: int) -> str:
    """``record.write_side`` of one side of the run's case; the JSON text written."""
    return record.write_side(
        path, run.case.name, side, values, run.env, sidecar_threshold=threshold
    )


def _decoded(path: Path, text: str) -> dict[str, Any]:
    """The values of the side file just written at ``path`` as ``text``, decoded from that
    text, so checks see what a golden stores. Its sidecars are memory-mapped, not hashed again:
    ``harness.sidecar`` remembers the hash it computed while writing them (``_OWN_FILES``;
    hashed again only if a file changed since or its file system's timestamps are coarse)."""
    return record.read_side(path, data=text.encode("ascii")).values


def _run1_vs_run2(run: CaseRun, name: str, first: Mapping, second: Mapping) -> Diff:
    """The exact comparison of two runs of one side in one process (a self-disagreement)."""
    return diff_values(
        first,
        second,
        tol_for=lambda key, dtype: Tolerance.exact(),
        title=f"{run.case.name}: {name} run 1 vs run 2",
        labels=("run1", "run2"),
    )


# ---------------------------------------------------------------------------------------------
# Judging a run: checks and goldens


def check_case(
    case: Case,
    *,
    update: bool = False,
    force: bool = False,
    golden_dir: Path = GOLDEN_DIR,
    out_dir: Path = OUT_DIR,
    threads: int = THREADS,
    limit: int | None = LIMIT,
    raise_refused: bool = True,
    repeat: bool = True,
) -> CaseReport:
    """Run the case, evaluate its checks, compare (or, with ``update``, rewrite) its goldens.

    ``force`` blesses goldens even while an agree check fails; without it, ``update``
    refuses such a case. ``threads``: BLAS and torch threads while a side runs; ``limit``:
    mismatched elements kept per failing row (None: all of them). ``raise_refused``: a golden
    that is not a regular file within its size limit raises ``harness.bounded.RefusedFile``
    (an OSError: the command line's one line and exit 2); False: it is a failing ``refused``
    golden report whose message is that line (the pytest plugin: only its golden item fails).
    ``repeat``: run each side twice to catch a side that disagrees with itself (False: once).
    """
    started = time.perf_counter()
    run = run_case(case, out_dir, threads=threads, repeat=repeat)
    return judge_case(run, update=update, force=force, golden_dir=golden_dir, limit=limit,
                      started=started, raise_refused=raise_refused, threads=threads)  # fmt: skip


def judge_case(
    run: CaseRun,
    *,
    update: bool = False,
    force: bool = False,
    golden_dir: Path = GOLDEN_DIR,
    limit: int | None = LIMIT,
    started: float,
    raise_refused: bool = True,
    threads: int = THREADS,
) -> CaseReport:
    """The second half of ``check_case``: evaluate the checks of a finished run, compare (or
    rewrite) its goldens, localise a case with ``LOCALISE`` (its sides run with ``threads``);
    the report's seconds run from ``started`` (``time.perf_counter``)."""
    checks = evaluate(run, limit=limit)
    judge = _Judge(update, force, agree_checks_hold(checks), golden_dir, limit, raise_refused)
    goldens = {side: judge.golden(run, side) for side in SIDES}
    localisation, problem = None, None
    if run.case.localise is not None and not run.error:
        localisation, problem = _localised(run.case, threads)
    report = _case_report(run, checks, goldens, time.perf_counter() - started)
    return dataclasses.replace(report, localisation=localisation, localise_error=problem)


def _localised(case: Case, threads: int) -> tuple[Localisation | None, str | None]:
    """The case's localisation (more runs of its sides, under capture; nothing is written), or
    the exception that stopped it, in one line."""
    from harness.localise import localise_sides

    try:
        return localise_sides(case.torch_side, case.engine_side, case.localise, threads), None
    except Exception as exc:  # a finding to report, as a side's error is
        return None, f"localise: {type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class _Judge:
    """How a run's goldens are judged: checked or rewritten, where, with how much detail."""

    update: bool
    force: bool
    agrees_hold: bool
    golden_dir: Path
    limit: int | None
    raise_refused: bool = True

    def golden(self, run: CaseRun, side: str) -> GoldenReport:
        try:
            return self.judged(run, side)
        except RefusedFile as exc:
            if self.raise_refused:
                raise
            status = GoldenStatus.REFUSED
            return GoldenReport(run.case.name, side, status, False, str(exc), path=Path(exc.path))

    def judged(self, run: CaseRun, side: str) -> GoldenReport:
        name = run.case.name
        if run.error:
            return GoldenReport(name, side, GoldenStatus.NOT_RUN, False, run.error)
        if side in run.nondeterministic:
            message = (
                f"{side} side is non-deterministic: two runs in one process differ"
                " (not a conformance failure)"
            )
            status = GoldenStatus.NONDETERMINISTIC
            return GoldenReport(name, side, status, False, message, run.nondeterministic[side])
        text, values = run.texts[side], run.values[side]
        if not self.update:
            return golden.check_golden(
                run.case, side, text, values, self.golden_dir, limit=self.limit
            )
        if not self.agrees_hold and not self.force:
            message = f"refusing to bless {name}: its agree checks fail (fix them, or pass --force)"
            return GoldenReport(name, side, GoldenStatus.REFUSED, False, message)
        return golden.update_golden(run.case, side, text, values, self.golden_dir)


def _case_report(
    run: CaseRun, checks: list[CheckReport], goldens: dict[str, GoldenReport], seconds: float
) -> CaseReport:
    return CaseReport(
        case=run.case.name,
        doc=run.case.doc,
        checks=tuple(checks),
        goldens=goldens,
        error=run.error,
        nondeterministic=tuple(sorted(run.nondeterministic)),
        env={side: dict(run.env) for side in run.texts},  # the sides written before any error
        seconds=seconds,
        raised=run.raised,
    )


_REPORTS: dict[tuple, CaseReport] = {}


def report_for(
    case: Case,
    *,
    update: bool = False,
    force: bool = False,
    golden_dir: Path = GOLDEN_DIR,
    out_dir: Path = OUT_DIR,
    threads: int = THREADS,
    limit: int | None = LIMIT,
    cache: dict | None = None,
) -> CaseReport:
    """``check_case``, once per case, options and folders in this process (or in ``cache``:
    the pytest plugin keeps one per session, so a second session in one process reruns)."""
    reports = _REPORTS if cache is None else cache
    options = (update, force, golden_dir, out_dir, threads, limit)
    key = (str(case.path), tuple(case.tolerances.items()), *options)
    if key not in reports:
        reports[key] = check_case(
            case,
            update=update,
            force=force,
            golden_dir=golden_dir,
            out_dir=out_dir,
            threads=threads,
            limit=limit,
            raise_refused=False,  # a golden item fails alone; the case's checks still count
        )
    return reports[key]
