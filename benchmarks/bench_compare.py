"""``compare.py`` as a user runs it, in a fresh process each time (start-up included).

Run: ``make bench ARGS=benchmarks/bench_compare.py``.

- File mode on two loose JSON files of 100,000 scalar keys each (about 1.3 MB, as another
  program might write them): the values agree within the default float32 tolerance, so the
  run must exit 0.
- Case mode over every case (what ``make compare`` runs; side files go to a temporary folder,
  goldens are only read), interleaved with ``python -c "import torch, torch._dynamo"`` (the
  imports any case run with a ``torch.optim`` optimizer pays before its first step) and with
  both run through ``harness.startup`` (imports with the garbage collector frozen, no final
  collection at exit). Every case must pass, with the same summary either way.

The thread variables this folder's conftest sets are removed for these children, so they
start as ``make compare`` does from a shell.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
KEYS = 100_000


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900
    )


def loose_json(path: Path, values: np.ndarray) -> None:
    """Compact JSON, each float32 in its shortest round-trip form, as a float32 program writes."""
    items = ",".join(f'"k{i}":{v}' for i, v in enumerate(map(str, values)))
    path.write_text("{" + items + "}")


def test_compare_loose_json_100k_keys(interleaved, tmp_path):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(KEYS).astype(np.float32)
    b = (a + rng.uniform(-1e-7, 1e-7, KEYS).astype(np.float32)).astype(np.float32)
    files = tmp_path / "a.json", tmp_path / "b.json"
    loose_json(files[0], a)
    loose_json(files[1], b)
    timings = interleaved(
        "compare.py loose json 100k keys",
        {"compare.py": lambda: run("compare.py", *map(str, files))},
        min_rounds=1,  # one round is half a minute before the loose-JSON path was made linear
        warmup_rounds=1,
        max_rounds=5,
        note=f"{files[0].stat().st_size / 1e6:.1f} MB per file",
    )
    proc = timings.results["compare.py"]
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


STARTUP_IMPORTS = (
    "from harness import startup; startup.import_torch(dynamo=True); "
    "startup.skip_final_collection()"
)
# What compare.py does once its entry point makes the two harness.startup calls.
STARTUP_COMPARE = """
import sys
from harness import startup
startup.import_torch()
import compare
code = compare.main(sys.argv[1:])
startup.skip_final_collection()
sys.exit(code)
"""


def test_compare_all_cases(interleaved, tmp_path):
    out = str(tmp_path / "out")
    timings = interleaved(
        "make compare, all cases",
        {
            "compare.py": lambda: run("compare.py", "--out", out),
            "compare.py via harness.startup": lambda: run("-c", STARTUP_COMPARE, "--out", out),
            "imports": lambda: run("-c", "import torch, torch._dynamo"),
            "imports via harness.startup": lambda: run("-c", STARTUP_IMPORTS),
        },
        also=[
            "import torch + torch._dynamo",
            "start-up: harness.startup, all cases",
            "start-up: harness.startup, imports",
        ],
        min_rounds=2,
        warmup_rounds=1,
        max_rounds=5,
    )
    for side, proc in timings.results.items():
        assert proc.returncode == 0, (side, proc.stdout[-2000:], proc.stderr[-2000:])
    summaries = {side: proc.stdout.splitlines()[-2:] for side, proc in timings.results.items()}
    assert summaries["compare.py"] == summaries["compare.py via harness.startup"]


def test_startup_one_case(interleaved, tmp_path):
    """One case with a torch.optim optimizer (``train_step``, which imports torch._dynamo) and
    one without (``grad_location``, which never does), plain and through harness.startup."""
    out = str(tmp_path / "out")
    sides = {}
    for case in ("train_step", "grad_location"):
        args = ("--case", case, "--out", out)
        sides[f"{case}"] = lambda args=args: run("compare.py", *args)
        sides[f"{case} via harness.startup"] = lambda args=args: run("-c", STARTUP_COMPARE, *args)
    timings = interleaved(
        "start-up: harness.startup, train_step",
        sides,
        also=["start-up: harness.startup, grad_location"],
        min_rounds=2,
        warmup_rounds=1,
        max_rounds=5,
    )
    for side, proc in timings.results.items():
        assert proc.returncode == 0, (side, proc.stdout[-2000:], proc.stderr[-2000:])
