"""Comparison statistics: ``harness.diff.diff_arrays`` against NumPy's ULP check.

Run: ``make bench ARGS=benchmarks/bench_diff.py``.

- 1e7 float32 pairs, two error distributions: "narrow" (relative noise of about one ULP, as
  two implementations of one formula give) and "wide" (absolute noise of 1e-7, which spreads
  ULP distances over 20+ log2 buckets near zero). ``diff_arrays`` (max|diff| with index, max
  rel, max ULP, mismatch counts, log2-ULP histogram) is interleaved with
  ``numpy.testing.assert_array_max_ulp`` and with ``np.copyto`` (the memory-bandwidth ceiling:
  read one array, write one), and both must find the same maximum ULP distance.
- 1e3-element pairs: the fixed cost of one call, NumPy's check alongside as context.
- Each of those three again in a child process that NumPy dispatches in as on an AVX2 CPU
  (``targets.AVX2_ENV``: no AVX-512 kernels, so no AVX-512 sorting), same interleaving; the
  targets table shows both (rows ending ", AVX2"), the child's note says AVX-512 was off.
  ``AVX2_ENV`` is the default ("portable", x86-64-v3) numerics profile's NumPy setting, and
  NumPy's is the only one of the profile's variables ``diff_arrays`` depends on (it calls no
  BLAS, torch or MKL), so the ", AVX2" rows are also the default profile's figures; the rows
  without the suffix are this machine's own dispatch (``make bench`` runs ``--numerics
  native``). On a CPU without AVX-512 the two are the same kernels.
- Two memory-mapped 5e7-element arrays compared in a fresh process: peak traced allocations
  (a few chunk-sized buffers, nothing proportional to the 400 MB of input), and the same
  statistics as ``diff_arrays`` on the arrays in memory.

Element-wise NumPy code is single-threaded; BLAS is pinned to one thread anyway.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import targets
from interleave import Standalone, run_interleaved

from harness.diff import diff_arrays
from harness.tolerances import Tolerance

ROOT = Path(__file__).resolve().parents[1]
N_BIG = 50_000_000
TOL = Tolerance(1e-6, reason="benchmark")
KINDS = {"wide": "abs", "narrow": "ulp"}
MIN_ROUNDS = "benchmark_min_rounds"


def make_pair(n: int, kind: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``ulp``: relative noise of ~1 float32 ULP; ``abs``: absolute noise of 1e-7."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n).astype(np.float32)
    if kind == "ulp":
        b = (a * (1 + rng.standard_normal(n) * 2.0**-24)).astype(np.float32)
    else:
        b = (a + rng.standard_normal(n).astype(np.float32) * 1e-7).astype(np.float32)
    return a, b


def numpy_max_ulp(a: np.ndarray, b: np.ndarray) -> int:
    """NumPy's check, which returns the ULP distance of every pair."""
    return int(np.max(np.testing.assert_array_max_ulp(a, b, maxulp=2**31)))


def speed_benchmark(name: str) -> tuple[str, dict, dict]:
    """(target, sides, interleaving options) of one speed benchmark: "wide" / "narrow" at 1e7
    elements, "1e3" for the fixed cost of a call. The same in this process and in the AVX2 child."""
    if name == "1e3":
        a, b = make_pair(1_000, "abs")
        sides = {
            "diff_arrays": lambda: diff_arrays(a, b, TOL),
            "assert_array_max_ulp": lambda: numpy_max_ulp(a, b),
        }
        return "diff 1e3: time per call", sides, {"inner": 100, "max_rounds": 200}
    a, b = make_pair(10_000_000, KINDS[name])
    out = np.empty_like(a)
    sides = {
        "diff_arrays": lambda: diff_arrays(a, b, TOL),
        "assert_array_max_ulp": lambda: numpy_max_ulp(a, b),
        "np.copyto": lambda: np.copyto(out, a),
    }
    return f"diff 1e7 {name}: speed-up", sides, {"max_rounds": 10, "warmup_rounds": 1}


def check_speed_results(timings) -> None:
    """Both sides found the same largest ULP distance (each round's last call)."""
    row = timings.results["diff_arrays"]
    assert row.max_ulp == timings.results["assert_array_max_ulp"], (row.max_ulp, timings.results)


def run_speed(name: str, interleaved, benchmark, config) -> None:
    """Time ``name`` here, then the same interleaving in a child process under AVX2_ENV."""
    target, sides, options = speed_benchmark(name)
    check_speed_results(interleaved(target, sides, **options))
    if not benchmark.enabled:
        return
    budget = [str(config.getoption("benchmark_max_time")), str(config.getoption(MIN_ROUNDS))]
    proc = subprocess.run(
        [sys.executable, __file__, name, *budget],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, **targets.AVX2_ENV, "PYTHONPATH": str(ROOT)},
    )
    child = json.loads(proc.stdout)
    targets.record(target + targets.AVX2, child["medians"], child["rounds"], child["note"])


@pytest.mark.parametrize("spread", list(KINDS))
def test_diff_1e7(interleaved, benchmark, request, spread):
    run_speed(spread, interleaved, benchmark, request.config)


def test_diff_1e3(interleaved, benchmark, request):
    run_speed("1e3", interleaved, benchmark, request.config)


def _time_in_this_process(name: str, max_time: float, min_rounds: int) -> dict:
    """The child's side of ``run_speed``: its medians, rounds and the AVX-512 state it ran in."""
    from numpy._core._multiarray_umath import __cpu_features__

    _, sides, options = speed_benchmark(name)
    timings = run_interleaved(
        Standalone(), sides, max_time=max_time, min_rounds=min_rounds, **options
    )
    check_speed_results(timings)
    avx512 = [t for t in ("X86_V4", "AVX512_ICL", "AVX512_SPR") if __cpu_features__.get(t)]
    note = f"AVX-512 on: {' '.join(avx512)}" if avx512 else "AVX-512 off, as the default profile"
    return {"medians": timings.medians(), "rounds": timings.rounds, "note": note}


_CHILD = """
import json, sys, tracemalloc
import numpy as np
from harness.diff import diff_arrays
from harness.tolerances import Tolerance

a = np.load(sys.argv[1], mmap_mode="r")
b = np.load(sys.argv[2], mmap_mode="r")
tracemalloc.start()
row = diff_arrays(a, b, Tolerance(1e-6))
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"peak": peak, "n": row.n, "max_ulp": row.max_ulp, "max_abs": row.max_abs,
                  "mismatches": row.mismatches, "histogram": row.ulp_histogram}))
"""


def _write_npy(path: Path, source: np.ndarray) -> None:
    out = np.lib.format.open_memmap(path, "w+", np.float32, source.shape)
    out[:] = source
    out.flush()
    del out


def test_memmap_5e7(benchmark, tmp_path):
    """Two memory-mapped 5e7-element float32 arrays (200 MB each), compared in a child."""
    a, b = make_pair(N_BIG, "ulp", seed=1)
    _write_npy(tmp_path / "a.npy", a)
    _write_npy(tmp_path / "b.npy", b)
    in_memory = diff_arrays(a, b, TOL)
    del a, b

    def child():
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(tmp_path / "a.npy"), str(tmp_path / "b.npy")],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        return json.loads(proc.stdout)

    benchmark.group = "diff memmap 5e7: traced peak"
    result = benchmark.pedantic(child, rounds=1)
    assert result["n"] == N_BIG
    assert (result["max_ulp"], result["max_abs"], result["mismatches"]) == (
        in_memory.max_ulp,
        in_memory.max_abs,
        in_memory.mismatches,
    )
    assert tuple(result["histogram"]) == in_memory.ulp_histogram
    targets.record("diff memmap 5e7: traced peak", {"diff_arrays": result["peak"]}, rounds=1)


if __name__ == "__main__":  # the AVX2 child of run_speed: bench_diff.py NAME MAX_TIME MIN_ROUNDS
    name, max_time, min_rounds = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    print(json.dumps(_time_in_this_process(name, max_time, min_rounds)))
