"""The medians of several benchmark runs: ``python benchmarks/runs.py RUN.json...``.

Each file is what one ``make bench`` run wrote with ``--targets-json`` (``make bench RUNS=3``
writes ``out/bench/run-1.json`` ... and calls this). Prints, per target and column (native,
AVX2), the median of the runs' values against the bound, each run's value, and each run's
machine load at start and end (``benchmarks/table.py``). The same files give the same text.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import table
import targets


def read_runs(paths: list[Path]) -> list[tuple[str, dict, dict]]:
    """(label, measured, load) per file, labelled by its name without ``.json``."""
    runs = []
    for path in paths:
        measured, load = targets.from_json(json.loads(path.read_text()))
        runs.append((path.stem, measured, load))
    return runs


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    for line in table.runs_lines(read_runs([Path(a) for a in argv])):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
