"""Compare two side files, or run the cases: a thin shell over harness.record/diff/report.

    python compare.py A.json B.json [--atol X] [--rtol X] [--ulps N] [--keys GLOB]
                      [--json FILE] [--markdown FILE] [--html FILE] [--dtype float32|float64]
    python compare.py [--case NAME ...]          run cases (harness.case / harness.session)
                      [--jobs N] [--shard K/N] [--update-golden [--force]]
                      [--out DIR] [--golden-dir DIR] [--cases-dir DIR]
                      [--json FILE] [--markdown FILE] [--html FILE]

Exit codes: 0 everything holds, 1 a check failed, 2 bad usage or unreadable / malformed input
(one line on stderr naming the file and what is wrong; never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
PROG = "compare.py"
# Options that mean something in one mode only: given in the other, they would be ignored
# silently (a loosened --atol that changes nothing), so they are a usage error instead.
FILE_ONLY = ("atol", "rtol", "ulps", "keys", "dtype")
CASES_ONLY = ("case", "update_golden", "force", "shard", "out", "golden_dir", "cases_dir")


class UsageError(Exception):
    """Bad input or usage: reported as one line on stderr, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Diff two side JSON files (A.json B.json), or run the cases (no files).",
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="two side files: A.json B.json")
    tol = parser.add_argument_group("tolerance (replaces the per-dtype defaults for every key)")
    tol.add_argument("--atol", type=_non_negative_float, help="absolute tolerance")
    tol.add_argument("--rtol", type=_non_negative_float, help="relative tolerance (times |B|)")
    tol.add_argument("--ulps", type=_non_negative_int, help="also agree within N ULP")
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
    cases = parser.add_argument_group("running cases (no FILE arguments)")
    cases.add_argument(
        "--case", action="extend", nargs="+", default=[], metavar="NAME", help="run these cases"
    )
    cases.add_argument("--update-golden", action="store_true", help="rewrite the goldens")
    cases.add_argument("--force", action="store_true", help="bless goldens even if checks fail")
    cases.add_argument(
        "--jobs", type=_positive_int, default=1, metavar="N", help="worker processes"
    )
    cases.add_argument("--shard", metavar="K/N", help="run the K-th of N slices of the cases")
    cases.add_argument("--out", metavar="DIR", help="write side files here (default out/)")
    cases.add_argument("--golden-dir", metavar="DIR", help="goldens folder (default golden/)")
    cases.add_argument("--cases-dir", metavar="DIR", help="case files folder (default cases/)")
    return parser


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # usage errors exit 2 through argparse
    if len(args.files) == 1:
        parser.error(f"expected two files to compare (A.json B.json), got one: {args.files[0]}")
    if len(args.files) > 2:
        parser.error(f"expected two files to compare, got {len(args.files)}")
    given = [n for n in (CASES_ONLY if args.files else FILE_ONLY) if _given(getattr(args, n))]
    if given:
        option = "--" + given[0].replace("_", "-")
        if args.files:
            parser.error(f"{option} runs cases; it cannot be combined with FILE arguments")
        parser.error(f"{option} applies to comparing two files (A.json B.json), not to cases")
    if not args.files:
        return run_cases_main(args)
    try:
        return compare_files(args)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _given(value: Any) -> bool:
    """The option was on the command line: not its default (None, False or []); 0 counts."""
    return value is not None and value is not False and value != []


# ---------------------------------------------------------------------------------------------
# File mode


def compare_files(args: argparse.Namespace) -> int:
    """Diff two side files, print the table, write the requested reports; 0 or 1."""
    from harness import report
    from harness.diff import diff_values

    path_a, path_b = (Path(p) for p in args.files)
    dtype = args.dtype or "float32"
    side_a, side_b = _read(path_a, dtype), _read(path_b, dtype)
    cli_tol = _cli_tolerance(args)
    diff = diff_values(
        side_a.values,
        side_b.values,
        tol_for=_tol_for(cli_tol),
        keys=args.keys,
        title=_title(side_a, side_b),
        labels=_labels(side_a, side_b, args.files),
        tol=cli_tol,
    )
    if args.keys and not diff.rows:
        patterns = " ".join(repr(k) for k in args.keys)
        raise UsageError(f"--keys {patterns} matches no key of {path_a} or {path_b}")
    # Warnings only once no usage error can follow: an exit-2 run prints exactly one line.
    _warn_read(side_a, side_b)
    _warn_env(side_a, side_b)
    print(report.render_text(diff))
    meta = {"files": [str(path_a), str(path_b)], "keys": args.keys}
    try:
        report.write_reports(
            args,
            json_doc=lambda: report.render_json(diff, meta=meta),
            markdown=lambda: report.render_markdown(diff),
            html=lambda: report.render_html(diff, meta=meta),
        )
    except OSError as exc:
        raise UsageError(f"{exc.filename}: cannot write ({exc.strerror or exc})") from None
    return EXIT_OK if diff.ok else EXIT_FAIL


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
    return side


def _warn_read(*sides: Any) -> None:
    from harness.record import one_line

    for side in sides:
        for warning in getattr(side, "warnings", ()):
            print(f"{PROG}: warning: {one_line(warning)}", file=sys.stderr)


def _cli_tolerance(args: argparse.Namespace) -> Any:
    from harness.tolerances import Tolerance

    if args.atol is None and args.rtol is None and args.ulps is None:
        return None
    return Tolerance(args.atol or 0.0, args.rtol or 0.0, args.ulps, reason="command line")


def _tol_for(cli_tol: Any) -> Any:
    from harness.tolerances import default_tolerance

    if cli_tol is not None:
        return lambda key, dtype: cli_tol
    return lambda key, dtype: default_tolerance(dtype)


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


def _warn_env(side_a: Any, side_b: Any) -> None:
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
        print(f"{PROG}: warning: environments differ: {'; '.join(changed)}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# Case mode: `python compare.py [--case NAME ...]`, delegated to the case runner.


def run_cases_main(args: argparse.Namespace) -> int:
    """Run the named cases (all when none) via ``main_run(case_names, args)``."""
    try:
        runner = _case_runner()
    except ImportError as exc:
        print(f"{PROG}: error: cannot run cases: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return runner(list(args.case), args)
    except OSError as exc:  # an unwritable --out / --json / --golden-dir: one line, no traceback
        where = exc.filename if exc.filename is not None else "output"
        print(f"{PROG}: error: {where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE


def _case_runner() -> Any:
    """``harness.session.main_run``, imported only when cases run (file mode stays light)."""
    from harness import session

    return session.main_run


if __name__ == "__main__":
    sys.exit(main())
