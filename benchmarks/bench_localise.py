"""The cost of module-level capture (harness.localise): one side of the transformer_train case
(20 Adam steps of a 2-layer TransformerEncoder; the first 2 captured, as its LOCALISE says)
run under capture against the same side uncaptured, interleaved in one process, per side.

Run: ``make bench ARGS=benchmarks/bench_localise.py``. Both runs of a side must return the
same values (capture never changes what a side computes).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from harness import record
from harness.case import localise
from harness.localise import engine_capture, torch_capture

CASE = Path(__file__).resolve().parent.parent / "cases" / "transformer_train.py"
SPEC = localise(steps=2)


def _case():
    spec = importlib.util.spec_from_file_location("bench_transformer_train", CASE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sides(fn, capture):
    def plain():
        return record.normalize(fn())

    def captured():
        with capture(SPEC):
            return record.normalize(fn())

    return {"captured": captured, "plain": plain}


def _same(results) -> None:
    first, second = results["captured"], results["plain"]
    for key in first:
        np.testing.assert_array_equal(np.asarray(first[key]), np.asarray(second[key]), key)


def test_capture_cost_torch(interleaved):
    case = _case()
    timings = interleaved(
        "localise capture / torch", _sides(case.torch_side, torch_capture), min_rounds=3
    )
    _same(timings.results)


def test_capture_cost_engine(interleaved):
    case = _case()
    timings = interleaved(
        "localise capture / engine", _sides(case.engine_side, engine_capture), min_rounds=3
    )
    _same(timings.results)
