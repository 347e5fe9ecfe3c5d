"""``compare.py`` as a user runs it, in a fresh process each time (start-up included).

Run: ``make bench ARGS=benchmarks/bench_compare.py``.

- File mode on two loose JSON files of 100,000 scalar keys each (about 1.3 MB, as another
  program might write them): the values agree within the default float32 tolerance, so the
  run must exit 0.
- Case mode over every case (what ``make compare`` runs; side files go to a temporary folder,
  goldens are only read): as ``make compare`` runs it (workers forked from compare.py, as
  many as the CPUs) and with ``--jobs 1`` (one process), interleaved with
  ``python -c "import torch, torch._dynamo"`` (the imports any case run with a ``torch.optim``
  optimizer pays before its first step), plain and through ``harness.startup`` (imports with
  the garbage collector frozen, no final collection at exit). Every case must pass, with the
  same summary either way.

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


def test_compare_all_cases(interleaved, tmp_path):
    out = str(tmp_path / "out")
    timings = interleaved(
        "make compare, all cases",
        {
            "compare.py": lambda: run("compare.py", "--out", out),
            "compare.py --jobs 1": lambda: run("compare.py", "--jobs", "1", "--out", out),
            "imports": lambda: run("-c", "import torch, torch._dynamo"),
            "imports via harness.startup": lambda: run("-c", STARTUP_IMPORTS),
        },
        also=[
            "make compare, all cases, --jobs 1",
            "import torch + torch._dynamo",
            "start-up: harness.startup, imports",
        ],
        min_rounds=3,  # the medians of three runs, as issue 13 asks
        warmup_rounds=1,
        max_rounds=5,
        note=f"{os.cpu_count()} CPUs",
    )
    for side, proc in timings.results.items():
        assert proc.returncode == 0, (side, proc.stdout[-2000:], proc.stderr[-2000:])
    summaries = {side: proc.stdout.splitlines()[-2:] for side, proc in timings.results.items()}
    assert summaries["compare.py"] == summaries["compare.py --jobs 1"]


def test_startup_one_case(interleaved, tmp_path):
    """One case with float64 reruns (``optimizer_trajectories``: its float32 and float64 halves
    run in two workers at once, or one after the other with ``--jobs 1``), one with a
    torch.optim optimizer (``train_step``, which imports torch._dynamo) and one without
    (``grad_location``, which never does)."""
    out = str(tmp_path / "out")
    case = "optimizer_trajectories"
    sides = {
        case: lambda: run("compare.py", "--case", case, "--out", out),
        f"{case} --jobs 1": lambda: run("compare.py", "--case", case, "--jobs", "1", "--out", out),
    }
    for name in ("train_step", "grad_location"):
        sides[name] = lambda name=name: run("compare.py", "--case", name, "--out", out)
    timings = interleaved(
        "one case: optimizer_trajectories --jobs 1 / split",
        sides,
        also=["one case: train_step", "one case: grad_location"],
        min_rounds=2,
        warmup_rounds=1,
        max_rounds=5,
    )
    for side, proc in timings.results.items():
        assert proc.returncode == 0, (side, proc.stdout[-2000:], proc.stderr[-2000:])
