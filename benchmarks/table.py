"""The targets table printed at the end of a benchmark run, and the table of several runs.

One line per target, its two columns side by side: the value measured natively and under the
AVX2 emulation (the target's ", AVX2" twin, ``benchmarks/columns.py``), each with its result
against the one bound they share, so a reader sees at a glance whether a verdict depends on
the CPU (``*`` marks the rows where it does). Below it, the medians (rounds) of every side
behind each value, one line per column, wrapped at ``WIDTH``; then the targets not run, the
counts and the machine's load. ``runs_lines`` prints the same verdict table over the medians
of N runs' values (``benchmarks/runs.py``), each run's values and each run's load.
"""

from __future__ import annotations

import statistics
import textwrap
from collections.abc import Mapping, Sequence

from targets import AVX2, LOAD, MEASURED, NATIVE, TARGETS, Measurement, Target

WIDTH = 100
COLUMNS = ("native", "AVX2")
DIFFERS = "*"  # after the AVX2 result: the two columns' verdicts differ
INDENT = "    "


def result(target: Target, m: Measurement | None) -> str:
    """``met``, ``missed``, ``info`` (a row without a bound), or ``-`` (not measured)."""
    if m is None:
        return "-"
    met = target.met(m.value)
    return "info" if met is None else ("met" if met else "missed")


def columns_of(target: Target, measured: Mapping[str, Measurement]) -> list[Measurement | None]:
    """The target's native and AVX2 measurements (None where a column was not measured)."""
    return [measured.get(target.name), measured.get(target.name + AVX2)]


def verdict_lines(measured: Mapping[str, Measurement]) -> list[str]:
    """The two header lines and one line per target with at least one column measured."""
    rows = []
    for target in NATIVE:
        cells = columns_of(target, measured)
        if cells == [None, None]:
            continue
        verdicts = [result(target, m) for m in cells]
        differs = "-" not in verdicts and verdicts[0] != verdicts[1]
        bound = "-" if target.bound is None else f"{target.direction} {fmt(target.bound, target)}"
        row = [target.name, bound]
        for m, verdict in zip(cells, verdicts, strict=True):
            row += ["-" if m is None else fmt(m.value, target), verdict]
        rows.append((*row[:-1], row[-1] + (DIFFERS if differs else "")))
    head = ("target", "bound", "measured", "result", "measured", "result")
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(6)]

    def line(cells: Sequence[str]) -> str:
        parts = [c.ljust(w) for c, w in zip(cells, widths, strict=True)]
        return f"{parts[0]}  {parts[1]}  {parts[2]} {parts[3]} | {parts[4]} {parts[5]}".rstrip()

    left = widths[0] + 2 + widths[1] + 2  # where the first "measured" starts
    over = " " * left + COLUMNS[0].ljust(widths[2] + 1 + widths[3]) + " | " + COLUMNS[1]
    return [over, line(head), *(line(r) for r in rows)]


def detail_lines(measured: Mapping[str, Measurement], common_note: str = "") -> list[str]:
    """Per measured target: the medians (rounds) behind each column, and its note (an AVX2
    note equal to ``common_note``, said once in the footer, is left out)."""
    lines: list[str] = []
    previous: list[Measurement | None] = [None, None]
    for target in NATIVE:
        cells = columns_of(target, measured)
        if cells == [None, None]:
            continue
        lines.append(target.name)
        for column, m, before in zip(COLUMNS, cells, previous, strict=True):
            if m is None:
                continue
            if before is not None and m.medians == before.medians:
                text = "(the rounds of the row above)"
            else:
                sides = ", ".join(f"{k} {quantity(v, target)}" for k, v in m.medians.items())
                notes = [n for n in m.note.split("; ") if n and n != common_note]
                text = f"{sides} ({m.rounds})" + "".join(f"; {n}" for n in notes)
            lines += wrap(f"{column:<7} {text}", INDENT, INDENT + " " * 8)
        previous = cells
    return lines


def wrap(text: str, first: str, rest: str) -> list[str]:
    return textwrap.wrap(
        text, WIDTH, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False
    )


def wrap_names(prefix: str, names: Sequence[str]) -> list[str]:
    """``prefix`` and the names joined by "; ", wrapped between names, not inside one."""
    lines = [prefix.rstrip()]
    for i, name in enumerate(names):
        item = name + (";" if i < len(names) - 1 else "")
        if len(lines[-1]) + 1 + len(item) > WIDTH and lines[-1].strip():
            lines.append(INDENT + item)
        else:
            lines[-1] += " " + item
    return lines


def avx2_note(measured: Mapping[str, Measurement]) -> str:
    """What every AVX2 child said of its CPU (its note's first part), if they all said the same."""
    notes = {m.note.split("; ")[0] for name, m in measured.items() if name.endswith(AVX2)}
    return notes.pop() if len(notes) == 1 else ""


def load_text(load: Mapping[str, Sequence[float]]) -> str:
    return "; ".join(f"{k} {' '.join(f'{x:.2f}' for x in v)}" for k, v in load.items())


def summary_lines(
    measured: Mapping[str, Measurement] = MEASURED, load: Mapping[str, Sequence] = LOAD
) -> list[str]:
    """The table printed at the end of a run (see the module docstring)."""
    common = avx2_note(measured)
    lines = verdict_lines(measured)
    lines += ["", "medians (rounds) of each side, per column:", *detail_lines(measured, common)]
    missing = [t.name for t in NATIVE if columns_of(t, measured) == [None, None]]
    if missing:
        lines += wrap_names("not run in this session:", missing)
    if common:
        lines += wrap(f"AVX2 column, every child process: {common}", "", INDENT)
    lines += wrap(counts(measured) + (f" Load {load_text(load)}." if load else ""), "", "")
    return lines


def counts(measured: Mapping[str, Measurement]) -> str:
    """``N measured, M missed (native a, AVX2 b), D differ (*)``: the footer's sentence."""
    missed = [0, 0]
    differ = 0
    for target in NATIVE:
        verdicts = [result(target, m) for m in columns_of(target, measured)]
        for i, verdict in enumerate(verdicts):
            missed[i] += verdict == "missed"
        differ += "-" not in verdicts and verdicts[0] != verdicts[1]
    return (
        f"{len(measured)} measured, {sum(missed)} missed (native {missed[0]}, AVX2 {missed[1]}),"
        f" {differ} with a verdict that depends on the CPU ({DIFFERS}); a missed target never"
        " fails the run."
    )


def fmt(value: float, target: Target) -> str:
    """A target's value: a ratio when it has a denominator, else a quantity in its unit."""
    if target.denominator is not None:
        return f"{value:.3g}x"
    return quantity(value, target)


def quantity(value: float, target: Target) -> str:
    """One median in a readable unit: MiB for memory, else s / ms / us."""
    if target.unit == "B":
        return f"{value / 2**20:.1f} MiB"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.1f} us"


# ---- several runs ------------------------------------------------------------------------


def median_of_runs(runs: Sequence[Mapping[str, Measurement]]) -> dict[str, Measurement]:
    """Per target, the median of the values of the runs that measured it (its medians: the
    median of each side's medians; rounds: the runs' total)."""
    merged: dict[str, Measurement] = {}
    for name in (t.name for t in TARGETS if any(t.name in run for run in runs)):
        found = [run[name] for run in runs if name in run]
        sides = dict.fromkeys(side for m in found for side in m.medians)
        merged[name] = Measurement(
            statistics.median(m.value for m in found),
            {s: statistics.median(m.medians[s] for m in found if s in m.medians) for s in sides},
            sum(m.rounds for m in found),
            f"{len(found)} of {len(runs)} runs",
        )
    return merged


def runs_lines(runs: Sequence[tuple[str, Mapping[str, Measurement], Mapping]]) -> list[str]:
    """The verdict table over the medians of the runs' values, each run's values per target
    and column (in the order given), and each run's load. ``runs``: (label, measured, load)."""
    merged = median_of_runs([measured for _, measured, _ in runs])
    labels = ", ".join(label for label, _, _ in runs)
    lines = [f"median of {len(runs)} runs' values ({labels}):", *verdict_lines(merged), ""]
    lines.append(f"each run's value, per column ({labels}; - where a run did not measure it):")
    for target in NATIVE:
        if columns_of(target, merged) == [None, None]:
            continue
        per_column = []
        for column, name in zip(COLUMNS, (target.name, target.name + AVX2), strict=True):
            values = [m[name].value if name in m else None for _, m, _ in runs]
            text = " ".join("-" if v is None else fmt(v, target) for v in values)
            per_column.append(f"{column} {text}")
        lines += wrap(f"{target.name}: {' | '.join(per_column)}", "", INDENT)
    lines.append("load (1, 5 and 15 minute averages):")
    lines += [f"{INDENT}{label}: {load_text(load)}" for label, _, load in runs]
    return lines
