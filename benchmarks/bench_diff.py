"""Comparison statistics: ``diff_arrays`` against NumPy's ULP check and memory bandwidth.

Run: `.venv/bin/python -m pytest benchmarks/bench_diff.py --benchmark-enable -q
-p no:cacheprovider`.

On two 1e7-element float32 arrays, in the same run: ``harness.diff.diff_arrays`` (max|diff|
with index, max rel, max ULP, mismatch counts, log2-ULP histogram), ``numpy.testing.
assert_array_max_ulp``, ``np.copyto`` (the bandwidth ceiling: read 40 MB, write 40 MB) and a
plain ``max(abs(a - b))``. ``test_summary`` prints the speed-up over NumPy's ULP check (target
>= 5x) and the fraction of copy bandwidth reached, for two error distributions: "ulp" (a few
ULP apart, as two implementations of one formula are) and "abs" (absolute noise of 1e-7, which
spreads ULP distances over 20+ log2 buckets near zero). ``test_memmap_5e7`` compares two
memory-mapped 5e7-element arrays in a fresh process and reports the peak extra memory.

Element-wise NumPy code is single-threaded; BLAS is pinned to one thread anyway.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness.diff import diff_arrays
from harness.tolerances import Tolerance

ROOT = Path(__file__).resolve().parents[1]
N = 10_000_000
N_BIG = 50_000_000
TOL = Tolerance(1e-6, reason="benchmark")
GROUP = "compare two 1e7 float32 arrays"


def make_pair(n: int, kind: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``ulp``: relative noise of ~1 float32 ULP; ``abs``: absolute noise of 1e-7."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n).astype(np.float32)
    if kind == "ulp":
        b = (a * (1 + rng.standard_normal(n) * 2.0**-24)).astype(np.float32)
    else:
        b = (a + rng.standard_normal(n).astype(np.float32) * 1e-7).astype(np.float32)
    return a, b


@pytest.fixture(scope="module")
def pair():
    return make_pair(N, "ulp")


def test_diff_arrays(benchmark, pair):
    benchmark.group = GROUP
    row = benchmark(diff_arrays, *pair, TOL)
    assert row.n == N and row.max_ulp is not None


def test_numpy_assert_array_max_ulp(benchmark, pair):
    benchmark.group = GROUP
    benchmark.pedantic(
        np.testing.assert_array_max_ulp, args=pair, kwargs={"maxulp": 2**31}, rounds=3
    )


def test_copyto(benchmark, pair):
    benchmark.group = GROUP
    out = np.empty_like(pair[0])
    benchmark(np.copyto, out, pair[0])


def test_max_abs_diff(benchmark, pair):
    benchmark.group = GROUP
    a, b = pair
    benchmark(lambda: float(np.max(np.abs(a - b))))


def best_of(fn, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def test_summary(capsys):
    """Ratios measured in one process, back to back, best of several rounds."""
    lines = ["", f"diff_arrays on {N:.0e} float32 pairs (best of 5; NumPy ULP check best of 2):"]
    speedups = {}
    for kind in ("ulp", "abs"):
        a, b = make_pair(N, kind)
        out = np.empty_like(a)
        ours = best_of(lambda a=a, b=b: diff_arrays(a, b, TOL), 5)
        numpy_ulp = best_of(lambda a=a, b=b: np.testing.assert_array_max_ulp(a, b, 2**31), 2)
        copy = best_of(lambda a=a, out=out: np.copyto(out, a), 5)
        plain = best_of(lambda a=a, b=b: np.max(np.abs(a - b)), 5)
        speedups[kind] = numpy_ulp / ours
        lines.append(
            f"  {kind:3}: diff_arrays {ours * 1e3:6.1f} ms | assert_array_max_ulp "
            f"{numpy_ulp * 1e3:6.1f} ms -> {numpy_ulp / ours:4.1f}x faster | copyto "
            f"{copy * 1e3:5.1f} ms: diff_arrays at {copy / ours:5.1%} of copy bandwidth, "
            f"NumPy ULP at {copy / numpy_ulp:5.1%}, max(abs(a-b)) at {copy / plain:5.1%}"
        )
    with capsys.disabled():
        print("\n".join(lines))
    assert min(speedups.values()) >= 5, speedups


_CHILD = """
import json, sys, threading, time, tracemalloc
import numpy as np
from harness.diff import diff_arrays
from harness.tolerances import Tolerance

def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])

a = np.load(sys.argv[1], mmap_mode="r")
b = np.load(sys.argv[2], mmap_mode="r")
base = status_kib("RssAnon")
peak = [base]
done = threading.Event()

def sample():
    while not done.is_set():
        peak[0] = max(peak[0], status_kib("RssAnon"))
        time.sleep(0.001)

sampler = threading.Thread(target=sample)
sampler.start()
tracemalloc.start()
start = time.perf_counter()
row = diff_arrays(a, b, Tolerance(1e-6))
seconds = time.perf_counter() - start
traced_peak = tracemalloc.get_traced_memory()[1]
done.set()
sampler.join()
print(json.dumps({
    "seconds": seconds, "n": row.n, "max_ulp": row.max_ulp,
    "traced_peak_mib": traced_peak / 2**20,
    "anon_peak_extra_mib": (peak[0] - base) / 1024,
    "vmhwm_mib": status_kib("VmHWM") / 1024,
}))
"""


def _write_npy(path: Path, source: np.ndarray) -> None:
    out = np.lib.format.open_memmap(path, "w+", np.float32, source.shape)
    out[:] = source
    out.flush()
    del out


def test_memmap_5e7(tmp_path, capsys):
    """Two memory-mapped 5e7-element float32 arrays (200 MB each), compared in a child."""
    a, b = make_pair(N_BIG, "ulp", seed=1)
    _write_npy(tmp_path / "a.npy", a)
    _write_npy(tmp_path / "b.npy", b)
    del a, b
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path / "a.npy"), str(tmp_path / "b.npy")],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    result = json.loads(proc.stdout)
    with capsys.disabled():
        print(
            f"\nmemmap 5e7 float32 pair (400 MB of input): {result['seconds']:.2f} s, "
            f"peak traced allocations {result['traced_peak_mib']:.1f} MiB, peak anonymous "
            f"RSS above start {result['anon_peak_extra_mib']:.1f} MiB, VmHWM "
            f"{result['vmhwm_mib']:.0f} MiB (includes the mapped file pages)"
        )
    assert result["n"] == N_BIG
    # a few chunk-sized buffers, nothing proportional to the 400 MB of input
    assert result["traced_peak_mib"] < 32
