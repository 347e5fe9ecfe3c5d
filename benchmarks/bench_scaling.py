"""How cost grows with work (issue 26): the engine against PyTorch eager at three sizes of the
same training step, the two sides interleaved in one process, and the peak memory of each side at
each size in a fresh process per framework.

- bench_sequence's transformer step (2-layer encoder, 4 heads, Adam, batch 16, sequence 32)
  at d_model 64, 256 and 512, d_ff twice d_model (bench_sequence's own ratio);
- bench_cnn's LeNet-style SGD step at batch 16, 64 and 256.

Run: ``make bench ARGS=benchmarks/bench_scaling.py``. The models, data and steps are those of
bench_sequence and bench_cnn, given a size; the sizes and bounds are in targets.py. After the
timed CNN rounds and after each memory child's steps, the two sides' parameters must agree
(the CNN's ``fc.bias``, the transformer's head). The timed transformer rounds are not checked:
float32 Adam drifts apart over many steps (measured: head weights 3.7e-4 apart after 100 steps
at d_model 64, at most 9e-7 after 3 steps at any width; mlp.AGREE allows 1e-5 + 1e-4 relative).
"""

from __future__ import annotations

import bench_cnn
import bench_sequence
import mlp
import numpy as np
import peak_memory
import pytest
import targets

FRAMEWORKS = ("engine", "torch")
MEMORY_STEPS = 3  # as bench_cnn and bench_train_step
# A cap on rounds for the small sizes; the time budget (--benchmark-max-time) decides first.
MAX_ROUNDS = 100


def _transformer(d_model: int) -> dict:
    return bench_sequence.transformer_sides(d_model, 2 * d_model)


def _agree(params: dict) -> None:
    # torch first: the tolerance is relative to torch's values
    mlp.assert_agree({fw: params[fw] for fw in ("torch", "engine")}, **mlp.AGREE)


@pytest.mark.parametrize("d_model", targets.TRANSFORMER_WIDTHS)
def test_transformer_step(interleaved, d_model):
    mlp.pin_threads()
    name = targets.sweep_name("transformer", d_model)
    sides = {fw: t[0] for fw, t in _transformer(d_model).items()}
    interleaved(name, sides, max_rounds=MAX_ROUNDS)


@pytest.mark.parametrize("batch", targets.CNN_BATCHES)
def test_cnn_step(interleaved, batch):
    mlp.pin_threads()
    trainers = bench_cnn.sides(batch)
    name = targets.sweep_name("cnn", batch)
    interleaved(name, {fw: t[0] for fw, t in trainers.items()}, max_rounds=MAX_ROUNDS)
    _agree({fw: t[1]() for fw, t in trainers.items()})


# ---- peak memory, one fresh process per framework and size --------------------------------


def measure_memory(framework: str, model: str, size: str) -> dict:
    """In a fresh process: imports and setup, reset the peak, a few steps; the peak above the
    resident set before the first step (as bench_cnn), and the parameters after them."""
    mlp.pin_threads()
    build = _transformer if model == "transformer" else bench_cnn.sides
    step, params = build(int(size))[framework]
    measured = peak_memory.measure(step, MEMORY_STEPS)
    return {**measured, "params": {k: v.tolist() for k, v in params().items()}}


SIZES = [("transformer", d) for d in targets.TRANSFORMER_WIDTHS] + [
    ("cnn", b) for b in targets.CNN_BATCHES
]


@pytest.mark.parametrize(("model", "size"), SIZES, ids=[f"{m}-{s}" for m, s in SIZES])
def test_peak_memory(benchmark, model, size):
    name = targets.sweep_name(model, size, memory=True)
    records = peak_memory.run_fresh(benchmark, name, __file__, FRAMEWORKS, (model, str(size)))
    _agree(
        {
            fw: {k: np.asarray(v, np.float32) for k, v in r["params"].items()}
            for fw, r in records.items()
        }
    )
    peak_memory.record(name, records)


if __name__ == "__main__":
    peak_memory.main(__file__, measure_memory, FRAMEWORKS)
