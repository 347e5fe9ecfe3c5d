"""Peak memory of a training step, measured in a fresh process per framework.

A benchmark file that uses this answers `python <file> --memory <framework> [args...]` by
printing one JSON line (its `measure_memory(framework, *args)`, through `main`: the arguments
name a size, for a file that sweeps one); `fresh_process` runs that and reads the line back,
so the import and setup of one framework never count against the other. In the child,
`measure` resets the peak after setup and takes the steps; in the benchmark, `run_fresh` runs
one child per framework and, once the caller has checked their parameters, `record` stores
the step peaks in the targets table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import targets


def proc_status(field: str) -> int:
    """A /proc/self/status field in KiB (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def reset_peak() -> int:
    """Reset VmHWM to the current RSS (/proc/self/clear_refs) and return that RSS."""
    Path("/proc/self/clear_refs").write_text("5")
    return proc_status("VmRSS")


def fresh_process(script: str, framework: str, *args: str) -> dict:
    """Run `script --memory framework *args` in a new interpreter; its last stdout line,
    decoded."""
    here = Path(__file__).resolve().parent
    proc = subprocess.run(
        [sys.executable, str(Path(script).resolve()), "--memory", framework, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join((str(here.parent), str(here)))},
        cwd=here.parent,
        timeout=600,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(step: Callable[[], object], steps: int) -> dict:
    """Reset the peak, take `steps` steps: the resident set before the first step and the
    high-water mark above it, in KiB (params, data and library code are in the baseline)."""
    baseline = reset_peak()
    for _ in range(steps):
        step()
    return {"baseline_kib": baseline, "step_peak_kib": proc_status("VmHWM") - baseline}


def run_fresh(
    benchmark, name: str, script: str, frameworks: Iterable[str], args: Sequence[str] = ()
) -> dict[str, dict]:
    """One fresh process per framework (given `args`), timed once under the benchmark group
    `name`."""
    benchmark.group = name
    return benchmark.pedantic(
        lambda: {fw: fresh_process(script, fw, *args) for fw in frameworks}, rounds=1
    )


def record(name: str, records: dict[str, dict]) -> None:
    """The step peaks (bytes) into the targets table, the baselines in its note."""
    baselines = ", ".join(f"{fw} {r['baseline_kib'] / 1024:.0f} MiB" for fw, r in records.items())
    targets.record(
        name,
        {fw: r["step_peak_kib"] * 1024 for fw, r in records.items()},
        rounds=1,
        note=f"baselines {baselines}",
    )


def main(script: str, measure_memory: Callable[..., dict], frameworks: Iterable[str]) -> None:
    """The child's entry point: `script --memory FRAMEWORK [ARGS...]` prints one JSON line."""
    if len(sys.argv) >= 3 and sys.argv[1] == "--memory":
        print(json.dumps(measure_memory(sys.argv[2], *sys.argv[3:])))
    else:
        sys.exit(f"usage: {Path(script).name} --memory {'|'.join(frameworks)} [args...]")
