"""Cost of the op matrix and the fuzzer, to keep `make test` within budget.

Run: ``make bench ARGS=benchmarks/bench_ops.py``. Nothing is compared here, so there is no
target and nothing to interleave: these are plain pytest-benchmark timings.

`test_matrix_item` is one (op, dtype) item (all shapes x value sets, both sides, forward and
VJP); `test_full_matrix` is the whole registry once (what `python -m harness.opmatrix` computes);
`test_fuzz_program` is one fuzzed program checked on both sides (case text compiled and run).
"""

from __future__ import annotations

import torch

from harness.opmatrix import fuzz, matrix
from harness.opmatrix.fuzz import Leaf, Program, Step

torch.set_num_threads(1)

PROGRAM = Program(
    leaves=(Leaf((2, 3), (0.5, -1.0, 0.25, 1.5, -0.75, 2.0)), Leaf((3, 2), (1.0,) * 6)),
    steps=(Step("matmul", (0, 1)), Step("tanh", (2,)), Step("log_softmax", (3,), (("dim", 1),))),
    out_shape=(2, 2),
)


def test_matrix_item(benchmark):
    item = benchmark(matrix.run_item, "matmul", "float32")
    assert item.status == matrix.PASS


def test_full_matrix(benchmark):
    result = benchmark.pedantic(matrix.run_matrix, rounds=1, iterations=1)
    assert result.ok


def test_fuzz_program(benchmark):
    verdict = benchmark(fuzz.check_program, PROGRAM)
    assert verdict.ok
