"""Large tensors through the comparison: ``diff_arrays`` on two in-memory 5e7-element float32
arrays (time, and peak traced allocations against the size of the inputs), and what
``compare.py A.json B.json`` does with two sidecar files (read and verify both, then diff).

Run: ``make bench ARGS=benchmarks/bench_large.py``. The sidecar codec's own speed is in
``bench_codec.py``. Both paths must find the 0-3 ULP offsets that ``nearby`` was built with.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import targets

from harness import record
from harness.diff import diff_arrays, diff_values
from harness.tolerances import Tolerance

N = 50_000_000
TOL = Tolerance(1e-6, ulps=4, reason="benchmark: nearby is 3 ULP away")


@pytest.fixture(scope="module")
def values():
    return np.random.default_rng(7).standard_normal(N, dtype=np.float32)


@pytest.fixture(scope="module")
def nearby(values):
    """The same values 0-3 ULP larger in magnitude, as a second implementation might give.

    Steps only grow the magnitude bits: a negative step could turn +0.0 into a NaN pattern.
    """
    steps = np.random.default_rng(8).integers(0, 4, N, dtype=np.int32)
    return (values.view(np.int32) + steps).view(np.float32)


def test_diff_arrays_5e7(benchmark, values, nearby):
    benchmark.group = "diff 5e7: peak / inputs"

    def traced():
        tracemalloc.start()
        try:
            row = diff_arrays(values, nearby, TOL)
            return row, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    row, peak = traced()  # under tracemalloc: its bookkeeping would distort the timing
    assert row.n == N and row.max_ulp == 3 and row.ok
    benchmark.pedantic(diff_arrays, args=(values, nearby, TOL), rounds=3, warmup_rounds=1)
    targets.record(
        "diff 5e7: peak / inputs",
        {"diff_arrays peak": peak, "input bytes": values.nbytes + nearby.nbytes},
        rounds=1,
    )


def test_compare_sidecar_files(benchmark, tmp_path, values, nearby):
    paths = tmp_path / "a.json", tmp_path / "b.json"
    record.write_side(paths[0], "bench", "torch", {"x": values}, {})
    record.write_side(paths[1], "bench", "engine", {"x": nearby}, {})

    def compare_files():
        a, b = (record.read_side(p).values for p in paths)
        return diff_values(a, b, tol_for=lambda key, dtype: TOL)

    benchmark.group = "compare two 5e7 sidecar files"
    diff = benchmark.pedantic(compare_files, rounds=3, warmup_rounds=1)
    assert diff.ok and diff.rows[0].n == N and diff.rows[0].max_ulp == 3
