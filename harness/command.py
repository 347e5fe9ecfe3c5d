"""The command-line program: ``conformance`` (console script) and ``python compare.py``.

    conformance A.json B.json [--atol X] [--rtol X] [--ulps N] [--keys GLOB]
                [--json FILE] [--markdown FILE] [--html FILE] [--dtype float32|float64]
    conformance [--case NAME ...]          run cases (harness.session / harness.runner)
                [--jobs N] [--shard K/N] [--update-golden [--force]]
                [--allow-stale | --prune-stale]
                [--out DIR] [--golden-dir DIR] [--cases-dir DIR]
                [--json FILE [--timings]] [--markdown FILE] [--html FILE] [--no-repeat]
    either mode: [-v | -q] [--all-mismatches] [--version]

Where cases and goldens live comes from ``[tool.conformance]`` of the nearest
``pyproject.toml`` (``harness.project``); the folder options override it.

Exit codes (``harness.cli.ExitCode``): 0 everything holds, 1 a check failed (or a golden is
stale), 2 bad usage or unreadable / malformed input (one line on stderr naming the file and
what is wrong; never a traceback).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness import startup
from harness.cli import (
    UsageError,
    error,
    exit_code,
    foreign_option,
    non_negative_float,
    non_negative_int,
    positive_int,
    warn,
)

DISTRIBUTION = "conformance-harness"
# Options that mean something in one mode only: given in the other, they would be ignored
# silently (a loosened --atol that changes nothing), so they are a usage error instead.
FILE_ONLY = ("atol", "rtol", "ulps", "keys", "dtype")
CASES_ONLY = (
    "case",
    "update_golden",
    "force",
    "shard",
    "out",
    "golden_dir",
    "cases_dir",
    "allow_stale",
    "prune_stale",
    "timings",
    "no_repeat",
    "jobs",
    "numerics",
)
PATH_OPTIONS = ("json", "markdown", "html", "out", "golden_dir", "cases_dir")


def version() -> str:
    """The installed package's version (``unknown`` when run from a tree never installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


class _Version(argparse.Action):
    """``--version``, with the version looked up only when asked for (``importlib.metadata``
    is not free, and every run would pay for it while the parser is built)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"{parser.prog} {version()}")  # on stdout, as argparse's own version action
        parser.exit()


def build_parser(prog: str = "conformance") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Diff two side JSON files (A.json B.json), or run the cases (no files).",
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    parser.add_argument("files", nargs="*", metavar="FILE", help="two side files: A.json B.json")
    tol = parser.add_argument_group("tolerance (replaces the per-dtype defaults for every key)")
    tol.add_argument("--atol", type=non_negative_float, help="absolute tolerance")
    tol.add_argument("--rtol", type=non_negative_float, help="relative tolerance (times |B|)")
    tol.add_argument("--ulps", type=non_negative_int, help="also agree within N ULP")
    parser.add_argument(
        "--keys", action="append", metavar="GLOB", help="compare only matching keys (repeatable)"
    )
    parser.add_argument("--json", metavar="FILE", help="write the machine-readable report")
    parser.add_argument("--markdown", metavar="FILE", help="write the report as Markdown")
    parser.add_argument("--html", metavar="FILE", help="write the HTML report")
    parser.add_argument(
        "--dtype",
        choices=["float32", "float64"],
        help="dtype of numbers in loose JSON files (default float32)",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument(
        "-v", "--verbose", action="store_true", help="every table, every mismatched element"
    )
    output.add_argument("-q", "--quiet", action="store_true", help="failures and the verdict only")
    parser.add_argument(
        "--all-mismatches", action="store_true", help="list every mismatched element, not 5"
    )
    cases = parser.add_argument_group("running cases (no FILE arguments)")
    cases.add_argument(
        "--case", action="extend", nargs="+", default=[], metavar="NAME", help="run these cases"
    )
    cases.add_argument("--update-golden", action="store_true", help="rewrite the goldens")
    cases.add_argument("--force", action="store_true", help="bless goldens even if checks fail")
    # No default here: None tells "not given" from "--jobs 1", so file mode can refuse it.
    cases.add_argument(
        "--jobs", type=positive_int, metavar="N", help="worker processes (default: the CPUs)"
    )
    cases.add_argument("--shard", metavar="K/N", help="run the K-th of N slices of the cases")
    cases.add_argument("--out", metavar="DIR", help="write side files here (default out/)")
    cases.add_argument("--golden-dir", metavar="DIR", help="goldens folder (default golden/)")
    cases.add_argument("--cases-dir", metavar="DIR", help="case files folder (default cases/)")
    cases.add_argument(
        "--no-repeat",
        action="store_true",
        help="run each side once, not twice: faster, but a side that disagrees with itself"
        " goes unnoticed (else reported as nondeterministic)",
    )
    cases.add_argument(
        "--timings",
        action="store_true",
        help="put each case's wall time in the --json report (cases[].seconds; else null)",
    )
    cases.add_argument(
        "--numerics",
        metavar="PROFILE",
        help="portable (default: the pinned code paths of this CPU's class) or native"
        " ([tool.conformance] numerics; harness.numerics)",
    )
    stale = cases.add_mutually_exclusive_group()
    stale.add_argument(
        "--allow-stale", action="store_true", help="goldens of deleted cases do not fail the run"
    )
    stale.add_argument(
        "--prune-stale", action="store_true", help="delete the goldens of deleted cases"
    )
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    prog: str = "conformance",
    project: Path | None = None,
    program: bool = False,
) -> int:
    """The program; ``project`` is the ``pyproject.toml`` to read (default: the nearest one
    to the working folder).

    ``program``: this process is the program itself (``compare.py``, the ``conformance``
    script), with nothing else running in it. Case mode may then fork its worker processes
    from it, and ``--jobs`` defaults to the usable CPUs; called as a function (tests, other
    programs), ``--jobs`` defaults to 1 and workers come from a fork server.
    """
    parser = build_parser(prog)
    args = parser.parse_args(argv)  # usage errors exit 2 through argparse
    args.prog = prog
    args.program = program
    if len(args.files) == 1:
        parser.error(f"expected two files to compare (A.json B.json), got one: {args.files[0]}")
    if len(args.files) > 2:
        parser.error(f"expected two files to compare, got {len(args.files)}")
    if args.files:
        problem = foreign_option(
            args, CASES_ONLY, "runs cases; it cannot be combined with FILE arguments"
        )
    else:
        problem = foreign_option(
            args, FILE_ONLY, "applies to comparing two files (A.json B.json), not to cases"
        )
    if problem:
        parser.error(problem)
    empty = [f"--{d.replace('_', '-')}" for d in PATH_OPTIONS if getattr(args, d) == ""]
    if empty:  # Path("") is ".": an empty --out would write into the current folder
        parser.error(f"{empty[0]}: empty file or folder name ('')")
    if not args.files:
        args.jobs = args.jobs or (usable_cpus() if program else 1)
        return run_cases_main(args, project)
    try:
        return compare_files(args)
    except UsageError as exc:
        return error(prog, str(exc))


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def mismatch_limit(args: argparse.Namespace) -> int | None:
    """Mismatched elements listed per failing row: 5, or all with -v / --all-mismatches."""
    from harness.mismatches import LIMIT

    return None if args.verbose or args.all_mismatches else LIMIT


def emit(text: str) -> None:
    """Print to stdout, in colour on a terminal (``harness.report.colour`` decides)."""
    from harness.report.colour import paint, use_colour

    print(paint(text) if use_colour(sys.stdout) else text)


# ---------------------------------------------------------------------------------------------
# File mode


def compare_files(args: argparse.Namespace) -> int:
    """Diff two side files, print the table, write the requested reports; 0 or 1."""
    from harness.diff import diff_values
    from harness.mismatches import inspect_rows
    from harness.report import files, html, json_doc, markdown, text
    from harness.tolerances import explicit_tolerance, tol_for_every_key

    if "" in args.files:  # Path("") would be ".", reported as a directory
        raise UsageError("'': empty file name, expected a JSON file")
    path_a, path_b = (Path(p) for p in args.files)
    dtype = args.dtype or "float32"
    side_a, side_b = _read(path_a, dtype), _read(path_b, dtype)
    cli_tol = explicit_tolerance(args.atol, args.rtol, args.ulps, "command line")
    diff = diff_values(
        side_a.values,
        side_b.values,
        tol_for=tol_for_every_key(cli_tol),
        keys=args.keys,
        title=_title(side_a, side_b),
        labels=_labels(side_a, side_b, args.files),
        tol=cli_tol,
    )
    if args.keys and not diff.rows:
        patterns = " ".join(repr(k) for k in args.keys)
        raise UsageError(f"--keys {patterns} matches no key of {path_a} or {path_b}")
    # Warnings only once no usage error can follow: an exit-2 run prints exactly one line.
    _warn_read(args.prog, (path_a, side_a), (path_b, side_b))
    _warn_env(args.prog, side_a, side_b)
    limit = mismatch_limit(args)
    # The failure path only: a passing compare reads its data once.
    details = inspect_rows(side_a.values, side_b.values, diff.failures, limit)
    emit(text.render_text(diff, details=details, only_failing=args.quiet))
    meta = {"files": [str(path_a), str(path_b)], "keys": args.keys}
    try:
        files.write_reports(
            args,
            json_doc=lambda: json_doc.render_json(diff, meta=meta, details=[details]),
            markdown=lambda: markdown.render_markdown(diff),
            html=lambda: html.render_html(diff, meta=meta, details=[details]),
        )
    except OSError as exc:
        raise UsageError(f"{exc.filename}: cannot write ({exc.strerror or exc})") from None
    return exit_code(diff.ok)


def _read(path: Path, dtype: str) -> Any:
    from harness.record import RecordError, read_side

    try:
        side = read_side(path, default_dtype=dtype)
    except RecordError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # a codec gap: still one line
        raise UsageError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from None
    _refuse_summary_only(path, side.values)
    return side


def _refuse_summary_only(path: Path, values: dict) -> None:
    """A golden's summary-only entry has no elements: a file diff would report its type as a
    dtype. Its comparison (sha256, then statistics) is the golden check's alone."""
    from harness.record import SummaryOnly, one_line

    for key, value in values.items():
        if isinstance(value, SummaryOnly):
            raise UsageError(
                f"{path}: {one_line(key)}: a summary-only golden entry (GOLDEN_SUMMARY) holds no"
                " elements to compare; compare its .obtained or out/ file instead"
            )


def _warn_read(prog: str, *sides: tuple[Path, Any]) -> None:
    for path, side in sides:
        for warning in getattr(side, "warnings", ()):
            warn(prog, f"{path}: {warning}")


def _title(side_a: Any, side_b: Any) -> str:
    cases = [c for c in (side_a.case, side_b.case) if c]
    if len(set(cases)) == 2:
        return f"{cases[0]} vs {cases[1]}"
    return cases[0] if cases else ""


def _labels(side_a: Any, side_b: Any, files: Sequence[str]) -> tuple[str, str]:
    """Side names from the format-1 headers, else file stems; paths if those coincide."""
    a = side_a.side or Path(files[0]).stem
    b = side_b.side or Path(files[1]).stem
    return (a, b) if a != b else (str(files[0]), str(files[1]))


def _warn_env(prog: str, side_a: Any, side_b: Any) -> None:
    """Differing environments are worth a line on stderr, never a failure."""
    env_a, env_b = side_a.env or {}, side_b.env or {}
    if not env_a or not env_b:
        return
    from harness.record import one_line

    changed = [
        one_line(f"{k} ({env_a.get(k)!s} vs {env_b.get(k)!s})")
        for k in sorted(set(env_a) | set(env_b))
        if env_a.get(k) != env_b.get(k)
    ]
    if changed:
        warn(prog, f"environments differ: {'; '.join(changed)}")


# ---------------------------------------------------------------------------------------------
# Case mode: `conformance [--case NAME ...]`, over harness.session and harness.runner


def console_main() -> None:
    """The ``conformance`` console script: ``main``, then exit without the final collection."""
    code = main(program=True)
    startup.skip_final_collection()
    sys.exit(code)


def _enter_numerics(args: argparse.Namespace) -> int | None:
    """Put the numerics profile in force before torch and the cases load (an exit code for
    an unknown choice; a warning when the process had imported numpy or torch already)."""
    from harness import numerics

    where = "--numerics" if args.numerics else f"{args.project.source}: numerics"
    try:
        entry = numerics.enter(numerics.choose(args.numerics, args.project.numerics), where=where)
    except numerics.NumericsError as exc:
        return error(args.prog, str(exc))
    if entry.problem:
        warn(args.prog, entry.problem)
    return None


def run_cases_main(args: argparse.Namespace, project: Path | None = None) -> int:
    """Run the named cases (all when none) via ``run_cases(case_names, args)``."""
    from harness.project import ConfigError, load_project, read_project

    try:
        args.project = read_project(project) if project else load_project(Path.cwd())
    except ConfigError as exc:
        return error(args.prog, str(exc))
    problem = _enter_numerics(args)
    if problem is not None:
        return problem
    root = str(args.project.root)
    if root not in sys.path:  # case files import the project's own modules, as under pytest
        sys.path.insert(0, root)
    try:
        startup.import_torch()  # before the case files, which import torch at their top
        run = _case_runner()
    except ImportError as exc:
        return error(args.prog, f"cannot run cases: {exc}")
    try:
        return run(list(args.case), args)
    except OSError as exc:  # an unwritable --out / --json / --golden-dir: one line, no traceback
        where = exc.filename if exc.filename is not None else "output"
        return error(args.prog, f"{where}: {exc.strerror or exc}")


def _case_runner() -> Callable[[list[str], argparse.Namespace], int]:
    """``run_cases`` once the case runner imports (file mode stays light without it)."""
    import harness.session  # noqa: F401  (an ImportError here is a one-line exit 2)

    return run_cases


def run_cases(case_names: list[str], args: argparse.Namespace) -> int:
    """Run cases; print failures first, one line per case and the summary; write reports."""
    from harness import session
    from harness.case import CaseDefinitionError
    from harness.project import golden_folder_problem
    from harness.report import files, text

    project = args.project
    dirs = session.Dirs.from_args(args, session.Dirs(project.cases, project.golden, project.out))
    if not dirs.cases.is_dir():
        return error(args.prog, f"{dirs.cases}: no such folder of case files")
    problem = golden_folder_problem(dirs.golden, project.root, dirs.cases)
    if problem:
        return error(args.prog, f"{dirs.golden}: golden folder {problem}")
    try:
        cases = session.select_cases(case_names, dirs, args.shard)
    except CaseDefinitionError as exc:
        return error(args.prog, str(exc))
    except Exception as exc:  # a case file that does not import: where, in one line
        return error(args.prog, _import_failure(exc, dirs.cases))
    fork = _fork_workers(args, session.parallel(cases, args.jobs))
    progress = session.Progress(len(cases), stream=sys.stderr)
    reports = session.run_cases(
        cases,
        update=args.update_golden,
        force=args.force,
        jobs=args.jobs,
        dirs=dirs,
        on_done=progress.advance,
        threads=project.threads,
        tolerances=project.tolerances,
        limit=mismatch_limit(args),
        fork=fork,
        repeat=not args.no_repeat,
    )
    failing = [r for r in reports if not r.ok]
    for report in reports if args.verbose else filter(text.worth_reporting, reports):
        emit(text.render_case(report, verbose=args.verbose, update=update_command(args, report)))
    if not args.verbose and not args.quiet:
        emit("\n".join(text.render_case_line(r) for r in reports))
    stale, foreign, pruned = _stale_goldens(dirs, args.prune_stale)
    emit(
        text.render_summary(
            reports, stale, allow_stale=args.allow_stale, pruned=pruned, foreign=foreign
        )
    )
    files.write_case_reports(reports, args)
    return exit_code(not failing and (not (stale or foreign) or args.allow_stale))


def _stale_goldens(dirs: Any, prune_them: bool) -> tuple[list, list, list]:
    """``(stale, foreign, pruned)``: the stale golden folders (none once pruned), those that
    hold something else (never pruned), and the files deleted (with a killed prune's)."""
    from harness import prune, session
    from harness.case import SIDES

    pruned = prune.finish_interrupted(dirs.golden, SIDES)
    scan = session.stale_goldens(dirs)
    if not (scan.stale and prune_them):
        return list(scan.stale), list(scan.foreign), pruned
    deleted, changed = prune.prune(dirs.golden, scan.stale, SIDES, announce=_announce_prune)
    return [], [*scan.foreign, *changed], pruned + deleted


def _announce_prune(planned: list[tuple[Path, list[Path]]]) -> None:
    """Before anything is deleted: what will be (a run killed midway has said it)."""
    emit("\n".join(_deleting(folder, files) for folder, files in planned))


def _deleting(folder: Path, files: list[Path]) -> str:
    names = ", ".join(path.name for path in files) if files else "(empty)"
    return f"deleting stale golden folder {folder}: {names}"


def _fork_workers(args: argparse.Namespace, parallel: bool) -> bool:
    """Whether this run forks its workers from this process (``session.run_cases(fork=)``).

    Only a program (``main(program=True)``) that has run nothing but imports so far
    (``startup.fork_is_safe``) does. It then imports ``torch._dynamo`` before forking, once
    for every worker: each ``torch.optim`` optimizer imports it (``harness.startup``), and a
    worker would otherwise pay for that import on its own.
    """
    if not parallel or not getattr(args, "program", False) or not startup.fork_is_safe():
        return False
    startup.import_torch(dynamo=True)
    return startup.fork_is_safe()


def _import_failure(exc: Exception, cases_dir: Path) -> str:
    """``cases/x.py:10: ModuleNotFoundError: No module named 'y'``: the case file's last frame."""
    import traceback

    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if Path(f.filename).resolve().parent == cases_dir.resolve()
    ]
    where = f"{frames[-1].filename}:{frames[-1].lineno}: " if frames else ""
    return f"{where}cannot load the case: {type(exc).__name__}: {exc}"


def update_command(args: argparse.Namespace, report: Any) -> str:
    """The command that rewrites this case's goldens from a run like this one (with
    ``--force`` when its agree checks fail: without it the rewrite is refused)."""
    program = ["python", args.prog] if args.prog.endswith(".py") else [args.prog]
    folders = [] if report.agrees_hold else ["--force"]
    for option in ("cases_dir", "golden_dir", "out"):
        value = getattr(args, option, None)
        if value:
            folders.append(f"--{option.replace('_', '-')}={value}")
    return shlex.join([*program, "--update-golden", "--case", report.case, *folders])


if __name__ == "__main__":
    sys.exit(main())
