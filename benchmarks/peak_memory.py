"""Peak memory of a training step, measured in a fresh process per framework.

A benchmark file that uses this answers `python <file> --memory <framework>` by printing one
JSON line (its `measure_memory`); `fresh_process` runs that and reads the line back, so the
import and setup of one framework never count against the other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


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


def fresh_process(script: str, framework: str) -> dict:
    """Run `script --memory framework` in a new interpreter; its last stdout line, decoded."""
    here = Path(__file__).resolve().parent
    proc = subprocess.run(
        [sys.executable, str(Path(script).resolve()), "--memory", framework],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join((str(here.parent), str(here)))},
        cwd=here.parent,
        timeout=600,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])
